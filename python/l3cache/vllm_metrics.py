"""Metrics of l3cache's vLLM tier, in vLLM's offloading metrics
(``build_metric_definitions`` declares them when vLLM builds its
Prometheus metrics; ``get_stats`` returns what was observed since the
last call, as an ``OffloadingConnectorStats`` that the tiering manager
aggregates with its own):

=============================================  =======  ==============================================
name                                           type     what
=============================================  =======  ==============================================
vllm:kv_offload_l3cache_lookup_hits            counter  KV chunks this tier answered HIT (once a request)
vllm:kv_offload_l3cache_lookup_misses          counter  KV chunks this tier answered MISS (once a request)
vllm:kv_offload_l3cache_stored_bytes           counter  bytes this tier's store jobs wrote
vllm:kv_offload_l3cache_loaded_bytes           counter  bytes this tier's load jobs read
vllm:kv_offload_l3cache_usage_bytes            gauge    payload bytes the store holds (all processes)
vllm:kv_offload_l3cache_capacity_bytes         gauge    the store's capacity
vllm:kv_offload_l3cache_usage_perc             gauge    usage over the store's data area, 0..1
vllm:kv_offload_l3cache_evicted_objects        counter  objects the store evicted
vllm:kv_offload_l3cache_checksum_failures      counter  reads the store dropped after a failed check
=============================================  =======  ==============================================

The last five are the store's (``Store.stats()``), sampled at most once
every ``interval`` seconds; every scheduler on one store reports them.
"""

import time
from typing import Any, Callable, Dict, Optional

__all__ = ["TierMetrics", "METRICS"]

HITS = "vllm:kv_offload_l3cache_lookup_hits"
MISSES = "vllm:kv_offload_l3cache_lookup_misses"
STORED = "vllm:kv_offload_l3cache_stored_bytes"
LOADED = "vllm:kv_offload_l3cache_loaded_bytes"
USAGE = "vllm:kv_offload_l3cache_usage_bytes"
CAPACITY = "vllm:kv_offload_l3cache_capacity_bytes"
USAGE_PERC = "vllm:kv_offload_l3cache_usage_perc"
EVICTED = "vllm:kv_offload_l3cache_evicted_objects"
CHECKSUM = "vllm:kv_offload_l3cache_checksum_failures"

# name -> (counter or gauge, documentation)
METRICS: Dict[str, Any] = {
    HITS: ("counter", "KV chunks the l3cache tier found on lookup."),
    MISSES: ("counter", "KV chunks the l3cache tier did not hold on lookup."),
    STORED: ("counter", "Bytes the l3cache tier's store jobs wrote."),
    LOADED: ("counter", "Bytes the l3cache tier's load jobs read into the CPU tier."),
    USAGE: ("gauge", "Payload bytes the l3cache store holds (every process's)."),
    CAPACITY: ("gauge", "The l3cache store's capacity in bytes."),
    USAGE_PERC: ("gauge", "The l3cache store's payload over its data area, from 0 to 1."),
    EVICTED: ("counter", "Objects the l3cache store evicted."),
    CHECKSUM: ("counter", "Objects the l3cache store dropped after a failed checksum."),
}


def metric_definitions() -> Dict[str, Any]:
    """vLLM's metric metadata for METRICS ({} where vLLM lacks the classes)."""
    try:
        from vllm.v1.kv_offload.base import OffloadingCounterMetadata, OffloadingGaugeMetadata
    except ImportError:
        return {}
    kinds = {"counter": OffloadingCounterMetadata, "gauge": OffloadingGaugeMetadata}
    return {name: kinds[kind](documentation=doc) for name, (kind, doc) in METRICS.items()}


def _stats_class() -> Optional[type]:
    try:
        from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import OffloadingConnectorStats
    except ImportError:
        return None
    return OffloadingConnectorStats if hasattr(OffloadingConnectorStats, "increase_counter") else None


class TierMetrics:
    """What the tier observed since the last ``take``; ``store_stats`` is
    the store's stats dict (called at most once every ``interval`` s)."""

    def __init__(self, store_stats: Callable[[], Dict[str, Any]], interval: float = 1.0) -> None:
        self._store_stats = store_stats
        self._interval = float(interval)
        self._counts = {HITS: 0, MISSES: 0, STORED: 0, LOADED: 0}
        self._last_sample = float("-inf")
        self._base: Optional[Dict[str, int]] = None  # the store's counters when last reported

    def lookup(self, found: bool) -> None:
        self._counts[HITS if found else MISSES] += 1

    def transferred(self, load: bool, nbytes: int) -> None:
        self._counts[LOADED if load else STORED] += int(nbytes)

    def take(self) -> Optional[Any]:
        """An OffloadingConnectorStats of what changed, or None (nothing, or
        a vLLM without tier metrics)."""
        cls = _stats_class()
        if cls is None:
            return None
        stats = cls()
        for name, n in self._counts.items():
            if n:
                stats.increase_counter(name, n)
                self._counts[name] = 0
        now = time.monotonic()
        if now - self._last_sample >= self._interval:
            self._last_sample = now
            self._sample(stats)
        return None if stats.is_empty() else stats

    def _sample(self, stats: Any) -> None:
        st = self._store_stats()
        stats.set_gauge(USAGE, st.get("payload_bytes", 0))
        stats.set_gauge(CAPACITY, st.get("capacity_bytes", 0))
        data = st.get("data_bytes") or st.get("capacity_bytes") or 0
        stats.set_gauge(USAGE_PERC, st.get("payload_bytes", 0) / data if data else 0.0)
        now = {EVICTED: int(st.get("evicted_objects", 0)), CHECKSUM: int(st.get("checksum_failures", 0))}
        if self._base is None:
            self._base = dict.fromkeys(now, 0)
        for name, value in now.items():
            delta = value - self._base[name]
            if delta > 0:
                stats.increase_counter(name, delta)
            self._base[name] = value
