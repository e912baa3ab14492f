"""Follows vllm/distributed/kv_transfer/kv_connector/v1/offloading/events.py at
030ea52effcb05071543c8c42b8f0145e94cee43 (OffloadingEventsTracker: its
constructor takes the spec's OffloadingKVEventsConfig; record_store and
record_lookup snapshot a chunk's payload while its request is alive;
take_events turns the manager's OffloadingEvents into the KV events a
router receives). Without self-describing events (the default), or for a
key with no snapshot, a stored event becomes one placeholder BlockStored
per key (the key's block hash, its group index, no tokens) and a removed
event one BlockRemoved per KV group with the keys' block hashes. With them
a snapshot keeps the chunk's per-block hashes and tokens, and its
residencies, (medium, ownership) pairs: the primary CPU tier's from
record_store, and a secondary tier's from a stored event that says
``removal_expected``. A removal fans out to the snapshot's hashes and
drops its residency; the snapshot goes with the last. Both events carry
the event's medium (as its name), locality and ownership.

Left out: sliding-window and SSM groups, partial recurrent tails, LoRA and
extra keys, and resolve_block_hashes for chunks whose hashes span several
blocks (here a hash is a block: tokens per hash == tokens per block)."""
from dataclasses import dataclass
from typing import Any, Optional

from .kv_base import Medium, get_offload_block_hash, get_offload_group_idx
from .kv_events import MEDIUM_CPU, MEDIUM_STORAGE, BlockRemoved, BlockStored

_MEDIUM_TO_EVENT_STR = {Medium.CPU: MEDIUM_CPU, Medium.STORAGE: MEDIUM_STORAGE}


@dataclass
class _OffloadEventMetadata:
    block_hashes: tuple
    parent_block_hash: Any
    token_ids: tuple
    block_size: int
    group_idx: int
    active_residencies: set


class OffloadingEventsTracker:
    def __init__(self, config):
        self.config = config
        self.self_describing_enabled = config.enable_kv_cache_events and config.self_describing_kv_events
        self._pending_event_metadata = {}

    def record_store(self, req, group_config, chunk_idx, offload_key):
        if not self.self_describing_enabled or group_config.sliding_window_size_in_chunks is not None:
            return
        meta = self._build_event_metadata(req, group_config, chunk_idx)
        existing = self._pending_event_metadata.get(offload_key)
        if existing:
            meta.active_residencies.update(existing.active_residencies)
        self._pending_event_metadata[offload_key] = meta

    def record_lookup(self, req, group_config, chunk_idx, offload_key):
        if not self.self_describing_enabled or group_config.sliding_window_size_in_chunks is not None:
            return
        if offload_key not in self._pending_event_metadata:
            self._pending_event_metadata[offload_key] = self._build_event_metadata(req, group_config, chunk_idx)

    def take_events(self, events):
        for event in events:
            if event.removed:
                yield from self._take_removed_event(event)
            else:
                yield from self._take_stored_event(event)

    def reset(self):
        self._pending_event_metadata.clear()

    def _build_event_metadata(self, req, group_config, chunk_idx):
        per_chunk = group_config.hashes_per_chunk
        tokens_per_hash = group_config.tokens_per_chunk // per_chunk
        assert tokens_per_hash == group_config.tokens_per_block  # (resolve_block_hashes left out)
        first = chunk_idx * per_chunk
        hashes = tuple(req.block_hashes[first:first + per_chunk])
        assert len(hashes) == per_chunk and all(h is not None for h in hashes)
        tok = chunk_idx * group_config.tokens_per_chunk
        return _OffloadEventMetadata(
            block_hashes=hashes, parent_block_hash=req.block_hashes[first - 1] if first else None,
            token_ids=tuple(req.all_token_ids[tok:tok + group_config.tokens_per_chunk]),
            block_size=group_config.tokens_per_block, group_idx=group_config.group_idx,
            active_residencies={(Medium.CPU, None)})

    @staticmethod
    def _locality(event) -> Optional[str]:
        return event.locality.value if event.locality is not None else None

    def _take_stored_event(self, event):
        locality = self._locality(event)
        for key in event.keys:
            meta = self._pending_event_metadata.get(key)
            if meta is None:
                yield BlockStored(block_hashes=[get_offload_block_hash(key)], parent_block_hash=None,
                                  token_ids=[], lora_id=None, block_size=0,
                                  medium=_MEDIUM_TO_EVENT_STR[event.medium], lora_name=None,
                                  group_idx=get_offload_group_idx(key), locality=locality,
                                  ownership=event.ownership)
                continue
            if event.removal_expected:
                meta.active_residencies.add((event.medium, event.ownership))
            yield BlockStored(block_hashes=list(meta.block_hashes), parent_block_hash=meta.parent_block_hash,
                              token_ids=list(meta.token_ids), block_size=meta.block_size, lora_id=None,
                              medium=_MEDIUM_TO_EVENT_STR[event.medium], lora_name=None,
                              group_idx=meta.group_idx, locality=locality, ownership=event.ownership)

    def _take_removed_event(self, event):
        locality = self._locality(event)
        by_group = {}
        for key in event.keys:
            meta = self._pending_event_metadata.get(key)
            if meta is not None:
                by_group.setdefault(meta.group_idx, []).extend(meta.block_hashes)
                meta.active_residencies.discard((event.medium, event.ownership))
                if not meta.active_residencies:
                    self._pending_event_metadata.pop(key)
            else:
                by_group.setdefault(get_offload_group_idx(key), []).append(get_offload_block_hash(key))
        for group_idx, hashes in by_group.items():
            yield BlockRemoved(block_hashes=hashes, medium=_MEDIUM_TO_EVENT_STR[event.medium],
                               group_idx=group_idx, locality=locality, ownership=event.ownership)
