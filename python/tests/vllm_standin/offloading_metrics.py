"""Follows vllm/distributed/kv_transfer/kv_connector/v1/offloading/metrics.py as
the tiering code at 061245c7e1e7bb485a53ec8b7b75362faff2fcfb uses it (the
text of that newer file is not in the code index, whose copies are older:
d1db1e8c holds only record_transfer): OffloadingConnectorStats, a
container of observations by metric name and label values that the
tiering manager aggregates across its tiers (``increase_counter``,
``set_gauge``, ``observe_histogram``, ``is_empty``, ``aggregate``), as
vllm/v1/kv_offload/tiering/metrics.py (TieringMetricsTracker) calls it.
``value`` is the stand-in's own, for tests."""
from dataclasses import dataclass, field


@dataclass
class OffloadingConnectorStats:
    data: dict = field(default_factory=dict)  # name -> {labelvalues: value or [observations]}

    def increase_counter(self, name, value=1, labelvalues=()):
        series = self.data.setdefault(name, {})
        series[tuple(labelvalues)] = series.get(tuple(labelvalues), 0) + value

    def set_gauge(self, name, value, labelvalues=()):
        self.data.setdefault(name, {})[tuple(labelvalues)] = value

    def observe_histogram(self, name, value, labelvalues=()):
        self.data.setdefault(name, {}).setdefault(tuple(labelvalues), []).append(value)

    def is_empty(self):
        return not self.data

    def aggregate(self, other):
        for name, series in other.data.items():
            mine = self.data.setdefault(name, {})
            for labels, value in series.items():
                if isinstance(value, list):
                    mine.setdefault(labels, []).extend(value)
                elif labels in mine and not isinstance(value, float):
                    mine[labels] += value
                else:
                    mine[labels] = value
        return self

    def value(self, name, labelvalues=()):
        return self.data.get(name, {}).get(tuple(labelvalues))
