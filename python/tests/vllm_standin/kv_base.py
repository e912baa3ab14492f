"""Follows vllm/v1/kv_offload/base.py at 0105e232b7fa4e1b59ec87531f167c0443a5095d
(read again 2026-12-06: the newest text the code index holds): offload
keys (a block hash and a 4-byte big-endian KV group index), Medium,
Locality, TierMatcher and TierFilter (a matcher's None matches anything,
and so does a tier's None medium or locality), ReqContext, LookupResult
(MISS, HIT, HIT_PENDING, RETRY; compared with `is`),
RequestOffloadingContext, ScheduleEndContext, PrepareStoreOutput,
OffloadingEvent (keys, medium, removed, locality, ownership,
removal_expected), the metric metadata (counter, gauge, histogram),
OffloadingKVEventsConfig and the OffloadingSpec base (its attributes from
an OffloadingConfig, ``kv_events_config`` among them)."""
import enum
from dataclasses import dataclass
from typing import Any, Collection, NamedTuple, Optional


def make_offload_key(block_hash: bytes, group_idx: int) -> bytes:
    return block_hash + group_idx.to_bytes(4, "big", signed=False)


def get_offload_block_hash(key: bytes) -> bytes:
    return key[:-4]


def get_offload_group_idx(key: bytes) -> int:
    return int.from_bytes(key[-4:], "big", signed=False)


class Medium(enum.Enum):
    CPU = "CPU"
    STORAGE = "STORAGE"


class Locality(enum.Enum):
    LOCAL = "LOCAL"
    REMOTE = "REMOTE"


class TierMatcher(NamedTuple):
    medium: Optional[Medium] = None
    locality: Optional[Locality] = None

    def matches(self, medium, locality) -> bool:
        return ((self.medium is None or medium is None or self.medium == medium)
                and (self.locality is None or locality is None or self.locality == locality))


@dataclass(frozen=True)
class TierFilter:
    matchers: tuple = ()

    def allows(self, medium, locality) -> bool:
        return self is TierFilter.ALL or any(m.matches(medium, locality) for m in self.matchers)


TierFilter.ALL = TierFilter(matchers=(TierMatcher(),))


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: Optional[dict] = None
    load_tier_filter: TierFilter = TierFilter.ALL


class LookupResult(enum.Enum):
    MISS = enum.auto()
    HIT = enum.auto()
    HIT_PENDING = enum.auto()
    RETRY = enum.auto()


class OffloadPolicy(enum.Enum):
    CHUNK_LEVEL = "chunk_level"
    REQUEST_LEVEL = "request_level"


@dataclass
class RequestOffloadingContext:
    policy: OffloadPolicy = OffloadPolicy.CHUNK_LEVEL


class ScheduleEndContext(NamedTuple):
    new_req_ids: Collection[str]
    preempted_req_ids: Collection[str]


@dataclass
class PrepareStoreOutput:
    keys_to_store: list
    store_spec: Any
    evicted_keys: list


@dataclass
class OffloadingEvent:
    keys: list
    medium: Medium
    removed: bool
    locality: Optional[Locality] = None
    ownership: Optional[str] = None
    removal_expected: bool = False


@dataclass(frozen=True)
class OffloadingMetricMetadata:
    documentation: str
    labelnames: tuple = ()


@dataclass(frozen=True)
class OffloadingCounterMetadata(OffloadingMetricMetadata):
    pass


@dataclass(frozen=True)
class OffloadingGaugeMetadata(OffloadingMetricMetadata):
    pass


@dataclass(frozen=True)
class OffloadingHistogramMetadata(OffloadingMetricMetadata):
    buckets: Optional[tuple] = None


@dataclass(frozen=True)
class OffloadingKVEventsConfig:
    enable_kv_cache_events: bool
    self_describing_kv_events: bool


class OffloadingSpec:
    def __init__(self, config):
        self.config = config
        self.extra_config = config.extra_config
        self.replicated_layout = False
        self.tokens_per_block = tuple(g.tokens_per_block for g in config.groups)
        self.tokens_per_hash = config.cache.tokens_per_hash
        self.blocks_per_chunk = config.cache.blocks_per_chunk
        self.kv_events_config = OffloadingKVEventsConfig(
            enable_kv_cache_events=config.enable_kv_cache_events,
            self_describing_kv_events=bool(self.extra_config.get("self_describing_kv_events", False)))

    @classmethod
    def build_metric_definitions(cls, extra_config):
        return {}
