"""Follows vllm/distributed/kv_transfer/kv_connector/v1/offloading/events.py at
896c8e6e20f055ba95f6147cd8c17f5e88ee9cb9 (OffloadingEventsTracker.take_events,
its placeholder payload: self-describing events off, the default): how
vLLM's offloading connector turns the manager's OffloadingEvents into the
KV events a router receives. A stored event becomes one BlockStored per
key (the key's block hash, its group index, no tokens, the event's medium
and locality); a removed event becomes one BlockRemoved per KV group with
the keys' block hashes. The medium is passed as its name (upstream passes
``event.medium``; BlockStored.medium is a str)."""
from .kv_base import get_offload_block_hash, get_offload_group_idx
from .kv_events import BlockRemoved, BlockStored


def _name(value):
    return getattr(value, "value", value)


class OffloadingEventsTracker:
    def take_events(self, events):
        for event in events:
            locality = _name(event.locality) if event.locality is not None else None
            if not event.removed:
                for key in event.keys:
                    yield BlockStored(block_hashes=[get_offload_block_hash(key)], parent_block_hash=None,
                                      token_ids=[], lora_id=None, block_size=0, medium=_name(event.medium),
                                      lora_name=None, group_idx=get_offload_group_idx(key), locality=locality)
                continue
            by_group = {}
            for key in event.keys:
                by_group.setdefault(get_offload_group_idx(key), []).append(get_offload_block_hash(key))
            for group_idx, hashes in by_group.items():
                yield BlockRemoved(block_hashes=hashes, medium=_name(event.medium), group_idx=group_idx,
                                   locality=locality)
