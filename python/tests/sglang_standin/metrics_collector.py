"""Follows python/sglang/srt/observability/metrics_collector.py at
016d8605e45876180312e29d6988e1de06562472: StorageMetrics, and the
collector's log_storage_metrics, which returns on None and otherwise
asserts the value is an instance of this very class."""
from dataclasses import dataclass, field
from typing import Dict, List


@dataclass
class StorageMetrics:
    prefetch_pgs: List[int] = field(default_factory=list)
    backup_pgs: List[int] = field(default_factory=list)
    prefetch_bandwidth: List[float] = field(default_factory=list)
    backup_bandwidth: List[float] = field(default_factory=list)
    prefetch_stats: Dict[str, float] = field(default_factory=dict)


class StorageMetricsCollector:
    def __init__(self):
        self.observed = {"prefetch_pgs": [], "backup_pgs": [], "prefetch_bandwidth": [], "backup_bandwidth": []}

    def log_storage_metrics(self, storage_metrics=None):
        if storage_metrics is None:
            return
        assert isinstance(storage_metrics, StorageMetrics)
        for name, samples in self.observed.items():
            samples.extend(getattr(storage_metrics, name))
