"""Follows vllm/v1/kv_offload/config.py as the code index's newest text of it
holds it (file id 70363527505, read 2026-12-05; the index gave no commit:
newer than 006f89ace7ca5b01ba9e0fe9633029d8c4206dea, which the stand-in
followed before, and the text tiering/spec.py at 0078e9d2 reads, with
``canonical_layout``): the frozen OffloadingConfig an OffloadingSpec is
built from (its groups with their KV cache group id, model, cache, the
parallel layout with the data-parallel size and local rank, engine id,
kv_connector_extra_config, the layout flags)."""
from dataclasses import dataclass
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class OffloadingGroupConfig:
    tokens_per_block: int
    layer_names: tuple
    group_id: int


@dataclass(frozen=True)
class OffloadingModelConfig:
    name: str
    dtype: str


@dataclass(frozen=True)
class OffloadingCacheConfig:
    tokens_per_hash: int
    blocks_per_chunk: int


@dataclass(frozen=True)
class OffloadingParallelConfig:
    rank: int
    world_size: int
    tp_size: int
    pp_size: int
    pcp_size: int
    dcp_size: int
    data_parallel_index: int
    data_parallel_size: int
    data_parallel_rank_local: Optional[int]
    is_parallelism_agnostic: bool


@dataclass(frozen=True)
class OffloadingConfig:
    groups: tuple
    worker_kv_bytes_per_block: int
    enable_kv_cache_events: bool
    extra_config: Mapping[str, Any]
    engine_id: str
    model: OffloadingModelConfig
    cache: OffloadingCacheConfig
    parallel: OffloadingParallelConfig
    replicated_layout: bool = False
    canonical_layout: bool = False
    kv_cache_layout: Optional[str] = None
    num_cpu_blocks: Optional[int] = None
