"""Follows vllm/distributed/kv_events.py at 0181ea3173e53eea8cf04a86891488e3dc89bb34
(the newest the code index holds) with the ``locality`` and ``ownership``
fields that the offloading connector's event translation (events.py at
030ea52effcb05071543c8c42b8f0145e94cee43) passes to both events, and the
media names it maps Medium to: the KV cache events a router receives,
BlockStored and BlockRemoved (msgspec structs upstream; dataclasses here,
with the same fields and defaults)."""
from dataclasses import dataclass
from typing import Any, Optional

MEDIUM_GPU = "GPU"
MEDIUM_CPU = "CPU"
MEDIUM_STORAGE = "STORAGE"


class KVCacheEvent:
    """Base class for all KV cache-related events."""


@dataclass
class BlockStored(KVCacheEvent):
    block_hashes: list
    parent_block_hash: Any
    token_ids: list
    block_size: int
    lora_id: Optional[int]
    medium: Optional[str]
    lora_name: Optional[str]
    extra_keys: Optional[list] = None
    group_idx: Optional[int] = None
    kv_cache_spec_kind: Optional[str] = None
    kv_cache_spec_sliding_window: Optional[int] = None
    locality: Optional[str] = None
    ownership: Optional[str] = None


@dataclass
class BlockRemoved(KVCacheEvent):
    block_hashes: list
    medium: Optional[str]
    group_idx: Optional[int] = None
    locality: Optional[str] = None
    ownership: Optional[str] = None


@dataclass
class AllBlocksCleared(KVCacheEvent):
    pass
