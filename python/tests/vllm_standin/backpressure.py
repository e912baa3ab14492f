"""Follows vllm/v1/kv_offload/tiering/backpressure.py as the tiering manager
at 061245c7e1e7bb485a53ec8b7b75362faff2fcfb calls it (vLLM PR #50045,
merged): a BackpressureDetector per secondary tier, built by the factory
from the tier entry's ``backpressure`` block; the manager asks
``should_store(num_blocks)`` before each cascade, feeds
``update(submit_time, num_bytes)`` on each finished store and calls
``reset()`` on reset_cache. The EMA of store latency with high/low water
marks of the index's 0a036df1 text; ``backpressure_cls`` names it."""
import time


class BackpressureDetector:
    def __init__(self, alpha=0.3, high_water_s=1.0, low_water_s=0.5, warmup_completions=3):
        if not 0 < alpha <= 1:
            raise ValueError("alpha must be in (0, 1], got %r" % alpha)
        if low_water_s > high_water_s:
            raise ValueError("low_water_s must be <= high_water_s")
        self._alpha, self._high, self._low, self._warmup = alpha, high_water_s, low_water_s, warmup_completions
        self.reset()

    def reset(self):
        self._ema, self._under, self._completions = 0.0, False, 0

    def update(self, submit_time, num_bytes=0):
        elapsed = time.monotonic() - submit_time
        self._ema = self._alpha * elapsed + (1 - self._alpha) * self._ema
        self._completions += 1
        if self._completions < self._warmup:
            return
        if self._ema > self._high:
            self._under = True
        elif self._ema < self._low:
            self._under = False

    def is_under_pressure(self):
        return self._under

    def should_store(self, num_blocks):
        return not self._under

    @property
    def stats(self):
        return {"store_latency_ema": self._ema}


DETECTORS = {"ema": BackpressureDetector, "EMABackpressureDetector": BackpressureDetector}


def build_detector(config):
    """The detector a tier entry's ``backpressure`` block names (None: none)."""
    if config is None:
        return None
    config = dict(config)
    name = config.pop("backpressure_cls", None)
    if name not in DETECTORS:
        raise ValueError("backpressure needs 'backpressure_cls', one of %s" % sorted(DETECTORS))
    return DETECTORS[name](**config)
