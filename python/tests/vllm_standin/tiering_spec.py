"""Follows vllm/v1/kv_offload/tiering/spec.py at 0078e9d2b020be709d7d756877106fd1015ea4f4
(TieringOffloadingSpec) over the CPU spec's geometry (vllm/v1/kv_offload/
cpu/spec.py, the index's newest text, file id 67068413905, and
cpu/shared_offload_region.py at 00a78d3c1202c15afa9cf95822059a350431ec7c):
a row is worker_kv_bytes_per_block x copies x blocks_per_chunk rounded up
to the page size; num_chunks = cpu_bytes_to_use // row; the primary view
is a writable int8 memoryview of shape (num_chunks, row) over one
page-aligned mapping; build_metric_definitions adds each tier class's
(``tier_cls.build_metric_definitions(tier_config)``, the class resolved by
the factory), as spec.py's newest text in the index (file id 57366424488)
does; get_manager builds each ``secondary_tiers`` entry
through the factory in order, and on any failure shuts down the tiers
already built (newest first) before re-raising."""
import mmap

import numpy as np

from .kv_base import OffloadingSpec
from .tiering_factory import SecondaryTierFactory
from .tiering_manager import PrimaryTier, TieringOffloadingManager


def round_up(n, m):
    return (n + m - 1) // m * m


class TieringOffloadingSpec(OffloadingSpec):
    def __init__(self, config, local_world_size=1):
        super().__init__(config)
        extra = self.extra_config
        copies = 1 if self.replicated_layout else local_world_size
        raw = config.worker_kv_bytes_per_block * copies * self.blocks_per_chunk
        self.cpu_page_size_per_worker = raw // copies
        self.kv_bytes_per_chunk = round_up(raw, mmap.PAGESIZE)
        if not extra.get("cpu_bytes_to_use"):
            raise Exception("cpu_bytes_to_use must be set")
        self.num_chunks = int(extra["cpu_bytes_to_use"]) // self.kv_bytes_per_chunk
        self.secondary_tier_configs = extra.get("secondary_tiers", [])
        if not isinstance(self.secondary_tier_configs, list):
            raise ValueError("secondary_tiers must be a list of tier configurations")

    @classmethod
    def build_metric_definitions(cls, extra_config):
        metrics = dict(super().build_metric_definitions(extra_config))
        tiers = extra_config.get("secondary_tiers", [])
        if not isinstance(tiers, list):
            raise ValueError("secondary_tiers must be a list of tier configurations")
        for tier_config in tiers:
            metrics.update(SecondaryTierFactory.get_tier_class(tier_config).build_metric_definitions(tier_config))
        return metrics

    def primary_view(self):
        self._region = mmap.mmap(-1, self.num_chunks * self.kv_bytes_per_chunk)
        array = np.frombuffer(self._region, dtype=np.int8).reshape(self.num_chunks, self.kv_bytes_per_chunk)
        return memoryview(array)

    def get_manager(self):
        primary = PrimaryTier(self.primary_view())
        tiers = []
        try:
            for entry in self.secondary_tier_configs:
                tiers.append(SecondaryTierFactory.create_secondary_tier(entry, primary.view, self))
        except Exception:
            for tier in reversed(tiers):
                try:
                    tier.shutdown()
                except Exception:  # noqa: BLE001 - logged upstream, the first error wins
                    pass
            primary.shutdown()
            raise
        return TieringOffloadingManager(primary, tiers)
