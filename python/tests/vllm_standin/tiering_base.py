"""Follows vllm/v1/kv_offload/tiering/base.py at 061245c7e1e7bb485a53ec8b7b75362faff2fcfb:
TransferJob (job id, keys, chunk_ids into the CPU tier's rows, promotion or
not, the request), LazyTransferJob (rows allocated by materialize()),
JobResult (success; for a promotion, the keys that loaded), and the
SecondaryTierManager ABC: a constructor taking (offloading_spec,
primary_kv_view, tier_type, backpressure_detector) that asserts the view
has strides and takes block_size_bytes = strides[0]; the hit source a
subclass reports (``cache_hit_source``: from its ``medium``, CPU a host
hit, STORAGE a disk hit, unless it sets its own; a medium outside those
fails at class creation); abstract lookup,
submit_store, submit_load, get_finished_jobs, on_new_request, drain_jobs;
the optional hooks with their defaults."""
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Collection, Optional

import numpy as np

from .cache_hit_source import CacheHitSource
from .kv_base import Medium, RequestOffloadingContext

JobId = int


@dataclass
class TransferJob:
    job_id: JobId
    _keys: Collection[bytes]
    _chunk_ids: np.ndarray
    is_promotion: bool
    req_context: Any
    submit_time: float = field(default_factory=time.monotonic)

    @property
    def keys(self):
        return self._keys

    @property
    def chunk_ids(self):
        return self._chunk_ids

    def is_materialized(self):
        return True


@dataclass
class LazyTransferJob(TransferJob):
    lazy_success: Optional[bool] = None
    _lazy_keys: Any = None
    _lazy_chunk_ids: Any = None
    primary_alloc_fn: Callable = field(kw_only=True)

    def is_materialized(self):
        return self._lazy_keys is not None and self._lazy_chunk_ids is not None

    @property
    def keys(self):
        assert self.is_materialized(), "Cannot access keys before materialization"
        return self._lazy_keys

    @property
    def chunk_ids(self):
        assert self.is_materialized(), "Cannot access chunk_ids before materialization"
        return self._lazy_chunk_ids

    def materialize(self):
        if self.is_materialized():
            return
        alloc = self.primary_alloc_fn(self._keys, self.req_context)
        if alloc is None:
            self._lazy_keys, self._lazy_chunk_ids, self.lazy_success = [], np.array([]), False
            return
        self.lazy_success = True
        self._lazy_keys, self._lazy_chunk_ids = alloc


@dataclass
class JobResult:
    job_id: JobId
    success: bool
    successful_keys: Optional[Collection[bytes]] = None
    transfer_time: Optional[float] = None
    transfer_bytes: Optional[int] = None


class SecondaryTierManager(ABC):
    medium: ClassVar[Optional[Medium]] = None
    cache_hit_source: ClassVar[CacheHitSource] = CacheHitSource.EXTERNAL_UNSPECIFIED

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "cache_hit_source" not in cls.__dict__ and cls.medium is not None:
            cls.cache_hit_source = {Medium.CPU: CacheHitSource.HOST, Medium.STORAGE: CacheHitSource.DISK}[cls.medium]

    def __init__(self, offloading_spec, primary_kv_view: memoryview, tier_type: str,
                 backpressure_detector=None) -> None:
        self._offloading_spec = offloading_spec
        self._primary_kv_view = primary_kv_view
        assert primary_kv_view.strides is not None, "primary_kv_view.strides cannot be None"
        self._block_size_bytes = primary_kv_view.strides[0]
        self.tier_type = tier_type
        self.locality = None
        self._bp_detector = backpressure_detector

    @property
    def block_size_bytes(self):
        return self._block_size_bytes

    @property
    def bp_detector(self):
        return self._bp_detector

    @abstractmethod
    def lookup(self, key, req_context):
        ...

    @abstractmethod
    def submit_store(self, job_metadata):
        ...

    @abstractmethod
    def submit_load(self, job_metadata):
        ...

    @abstractmethod
    def get_finished_jobs(self):
        ...

    @abstractmethod
    def on_new_request(self, req_context) -> RequestOffloadingContext:
        ...

    @abstractmethod
    def drain_jobs(self) -> None:
        ...

    def supports_lazy_promotion_allocation(self) -> bool:
        return False

    def has_pending_work(self) -> bool:
        return False

    def take_events(self):
        return ()

    def touch(self, keys, req_context) -> None:
        pass

    def on_request_finished(self, req_context) -> None:
        pass

    def serve_external_requests(self, parent) -> None:
        pass

    def on_schedule_end(self, context) -> None:
        pass

    def shutdown(self) -> None:
        pass

    @classmethod
    def build_metric_definitions(cls, extra_config):
        return {}

    def get_stats(self):
        return None
