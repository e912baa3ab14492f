"""The SGLang backend's storage metrics: pages and GB/s of the gets
(prefetch) and puts (backup) between two of SGLang's ``get_stats``
calls, as SGLang's StorageMetrics."""

import threading
import time
from typing import Any, Dict, List

_MAX_SAMPLES = 4096  # samples kept between two get_stats calls


def storage_metrics_class() -> Any:
    """SGLang's StorageMetrics (its collector asserts isinstance), from its
    newest module first; None without SGLang."""
    for module in ("sglang.srt.observability.metrics_collector", "sglang.srt.metrics.collector"):
        try:
            return getattr(__import__(module, fromlist=["StorageMetrics"]), "StorageMetrics")
        except (ImportError, AttributeError):
            continue
    return None


class Samples:
    """Per batch, its pages and GB/s, kept until taken (bounded)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self._lock = threading.Lock()
        self._samples: Dict[str, List[float]] = {"prefetch_pgs": [], "backup_pgs": [], "prefetch_bandwidth": [],
                                                 "backup_bandwidth": []}

    def note(self, kind: str, ok: List[bool], sizes: List[int], per_key: int, start: float) -> None:
        """A batch of `kind` ("prefetch" or "backup") begun at `start`
        (time.monotonic) ended with `ok` per key over ranges of `sizes`."""
        if not self.on:
            return
        seconds = max(time.monotonic() - start, 1e-9)
        nbytes = sum(s for i, s in enumerate(sizes) if ok[i // per_key])
        with self._lock:
            pages, bandwidth = self._samples[kind + "_pgs"], self._samples[kind + "_bandwidth"]
            if len(pages) < _MAX_SAMPLES:
                pages.append(sum(ok))
                bandwidth.append(nbytes / seconds / 1e9)

    def count(self) -> int:
        """Samples kept now."""
        with self._lock:
            return sum(len(v) for v in self._samples.values())

    def take(self) -> Any:
        """The samples since the last call as SGLang's StorageMetrics; None
        when metrics are off or SGLang is not there."""
        cls = storage_metrics_class() if self.on else None
        if cls is None:
            return None
        with self._lock:
            snap = {k: list(v) for k, v in self._samples.items()}
            for v in self._samples.values():
                v.clear()
        return cls(**snap)
