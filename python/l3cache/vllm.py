"""l3cache as a secondary tier of vLLM's own KV offloading connector
(``OffloadingConnector`` with ``TieringOffloadingSpec``), loaded by vLLM's
out-of-tree tier loader, with no LMCache server and no change to vLLM::

    vllm serve MODEL --kv-transfer-config '{"kv_connector": "OffloadingConnector",
      "kv_role": "kv_both", "kv_connector_extra_config": {
        "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 10737418240,
        "secondary_tiers": [{"type": "L3CacheTier", "module_path": "l3cache.vllm",
                             "l3cache_config": "/etc/l3cache.json"}]}}'

The CPU tier's rows (``primary_kv_view``: one page-aligned mapping of
``num_chunks`` rows) are registered once with the store as a Host region,
so every row moves by DMA between the mapping and the NVMe (io_uring fixed
buffers). Stores and loads run on l3cache's worker threads; vLLM's
scheduler thread only submits and, once a step, drains the completions.

Keys: vLLM's offload keys are bytes (a block hash and a 4-byte KV group
index); each becomes ``<namespace>_<hash hex>g<group>``. The namespace is
a digest of what makes two deployments' rows differ (model, KV dtype,
tokens per hash, blocks per chunk, each KV group's block size and layers,
the parallel layout, the row size), so two deployments never share a
block by accident and an identical one finds its blocks warm after a
restart. Every scheduler (DP replicas, restarts) opens the same store: one
shared index, no daemon. A store names each block's group (``group_id`` of
its hash under the deployment, without the rank and the KV group index),
so that every KV group's object of a block is admitted, kept and evicted
with the others.

A key found by ``lookup`` is leased (``lease_seconds``) so that eviction,
in any process, keeps it until its load. A load that fails anyway fails
its job (vLLM recomputes) and the key is reported a miss from then on.
Lookups never hold the scheduler thread for a large request: past
``sync_lookups_per_step`` new keys a step, a key is answered RETRY and
asked in one batch on l3cache's threads when the step ends
(``vllm_lookup``).

In a cluster: the tier's locality is LOCAL (a request whose
``load_tier_filter`` asks for local storage reads it); with vLLM's KV
events on, it emits ``BlockStored`` for every block it stored and
``BlockRemoved`` for every one of them that leaves the store, from the
store's removal feed (``vllm_events``); its metrics are in vLLM's
offloading metrics (``vllm_metrics``). The namespace folds in the
config's ``namespace.deployment_id`` (``keys.tenant_tag``), so two
deployments with different ids never share a block; vLLM folds a
request's ``cache_salt`` into its first block's hash, so two tenants
never share one.
"""

import logging
import threading
import time
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import AsyncStore, L3Error, group_id
from .keys import tenant_tag
from .vllm_events import TierEvents
from .vllm_naming import group_namespace, namespace
from .vllm_lookup import Lookups
from .vllm_metrics import TierMetrics, metric_definitions

logger = logging.getLogger(__name__)

__all__ = ["L3CacheTier"]

_NEEDS = "l3cache.vllm needs vLLM's chunk-based tiering API (vllm.v1.kv_offload.tiering.base with " \
         "TransferJob and JobResult, vllm.v1.kv_offload.base with LookupResult: vLLM 0.32 or newer)"

_kv_base: Any
_tier_base: Any
_Base: Any
try:
    import vllm  # noqa: F401
except ImportError:  # no vLLM here: the class still imports (for tools and tests)
    _kv_base = _tier_base = None
else:
    try:
        from vllm.v1.kv_offload import base as _kv_base  # type: ignore[no-redef]
        from vllm.v1.kv_offload.tiering import base as _tier_base  # type: ignore[no-redef]
    except ImportError as e:  # a vLLM without the tiering framework
        raise RuntimeError("%s: %s" % (_NEEDS, e)) from e

if _tier_base is not None:
    _missing = [n for n in ("SecondaryTierManager", "TransferJob", "JobResult") if not hasattr(_tier_base, n)]
    _missing += [n for n in ("LookupResult", "RequestOffloadingContext", "Medium") if not hasattr(_kv_base, n)]
    if _missing:
        raise RuntimeError("%s; the installed vLLM lacks %s (an older tier API, e.g. JobMetadata(block_ids))"
                           % (_NEEDS, ", ".join(_missing)))
    _Base = _tier_base.SecondaryTierManager
else:
    class _NoVllm:  # the same shape, so that the class can be imported without vLLM
        def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                     backpressure_detector: Any = None) -> None:
            raise RuntimeError(_NEEDS + "; vLLM is not installed")
    _Base = _NoVllm

_FAILED_KEEP = 1 << 16  # keys remembered as failed loads (reported misses)


def _view_address(view: memoryview) -> Tuple[int, int]:
    """The first byte's address and the length of a writable buffer."""
    import ctypes
    flat = view.cast("B") if view.ndim != 1 or view.format != "B" else view
    return ctypes.addressof(ctypes.c_char.from_buffer(flat)), flat.nbytes


class L3CacheTier(_Base):
    """vLLM's SecondaryTierManager over an l3cache store.

    Its entry in ``secondary_tiers`` takes: ``l3cache_config`` (an l3cache
    JSON config: a path, JSON text or a dict; required), ``workers`` (I/O
    threads, default 4), ``max_pending`` (jobs queued or running before a
    submit fails its job, default 1024), ``lease_seconds`` (default 30),
    ``enable_kv_events`` (emit KV events when vLLM has them on, default
    True), ``locality`` (LOCAL or REMOTE, default LOCAL),
    ``sync_lookups_per_step`` (new keys a step asked on the scheduler
    thread, default 64; the rest in a batch off it), ``events_per_step``
    (removals read from the feed a step, default 4096). The factory's own
    arguments (``tier_type`` or ``tier_name``, ``backpressure_detector``)
    are taken as vLLM passes them."""

    medium = getattr(_kv_base, "Medium", None) and _kv_base.Medium.STORAGE

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: Optional[str] = None,
                 l3cache_config: Union[str, dict, None] = None, workers: int = 4, max_pending: int = 1024,
                 lease_seconds: float = 30.0, backpressure_detector: Any = None, tier_name: Optional[str] = None,
                 enable_kv_events: bool = True, locality: Any = "LOCAL", sync_lookups_per_step: int = 64,
                 events_per_step: int = 4096) -> None:
        # the detector by keyword, and only when the framework gave one: open
        # work upstream (RFC #51240, PR #51576) moves back-pressure into an
        # admission policy, and a base without the parameter still takes this
        base_kw = {"backpressure_detector": backpressure_detector} if backpressure_detector is not None else {}
        super().__init__(offloading_spec, primary_kv_view, tier_type or tier_name or type(self).__name__, **base_kw)
        if l3cache_config is None:
            raise ValueError("L3CacheTier needs \"l3cache_config\" in its secondary_tiers entry (the path of "
                             "an l3cache JSON config, or the config itself)")
        self.locality = _locality(locality)
        shape, strides = primary_kv_view.shape or (0,), primary_kv_view.strides or (0,)
        self._rows, self._row_bytes = int(shape[0]), int(strides[0])
        self._base, length = _view_address(primary_kv_view)
        if length < self._rows * self._row_bytes:
            raise ValueError("L3CacheTier: the CPU tier's view is %d bytes for %d rows of %d"
                             % (length, self._rows, self._row_bytes))
        self._lease = float(lease_seconds)
        tenant = tenant_tag(l3cache_config)
        self._io: Any = AsyncStore(l3cache_config, workers=workers, max_pending=max_pending,
                                   lease_seconds=self._lease)
        self._io.register_hosts([(self._base, self._rows * self._row_bytes)])
        self._prefix = namespace(offloading_spec, self._row_bytes, tenant)
        self._group_ns = group_namespace(offloading_spec, tenant)
        # A block's objects: one per KV group. The tier runs on the scheduler
        # (OffloadingParallelConfig.rank is 0 there) and a row holds every
        # worker's shard, so no other rank stores the block. 1 means each
        # object is its own group, and the store keeps no group for it.
        self._group_objects = len(offloading_spec.config.groups)
        self._lock = threading.Lock()
        self._jobs: Dict[int, Tuple[bool, List[bytes]]] = {}  # job id -> (is a load, its keys)
        self._done: List[Any] = []                            # results not yet returned
        self._failed: "OrderedDict[bytes, None]" = OrderedDict()
        self._lookups = Lookups(self._io, self._lease, sync_lookups_per_step)
        self._drained = False  # completions drained by a lookup this step
        self._metrics = TierMetrics(self._io.store.stats)
        self._events: Optional[TierEvents] = None
        if enable_kv_events and _kv_events_on(offloading_spec):
            self._events = TierEvents(self._io.store, self._key, self._event, events_per_step=events_per_step)
        st = self._io.stats()["store"]
        logger.info("l3cache tier: %d rows of %d bytes, namespace %s, store %d objects, %.1f GiB, engine %s, "
                    "KV events %s", self._rows, self._row_bytes, self._prefix[:-1], st["objects"],
                    st["capacity_bytes"] / 2**30, st["engine"], "on" if self._events else "off")

    # ---- keys -------------------------------------------------------------

    def _key(self, key: bytes) -> str:
        key = bytes(key)
        return "%s%sg%d" % (self._prefix, key[:-4].hex(), int.from_bytes(key[-4:], "big"))

    def _group(self, key: bytes) -> int:
        """The group id of a key's block: its hash, not its KV group index."""
        return group_id(self._group_ns + bytes(key)[:-4].hex())

    def _event(self, keys: List[bytes], removed: bool) -> Any:
        # ownership: the secondary tier that owns the event (vLLM PR #52068);
        # removal_expected: this tier announces each block's removal (from the
        # store's removal feed), so the connector keeps a self-describing
        # payload until then, not only until the CPU tier lets go
        fields = {"keys": list(keys), "medium": self.medium, "removed": removed, "locality": self.locality,
                  "ownership": self.tier_type, "removal_expected": not removed}
        known = getattr(_kv_base.OffloadingEvent, "__dataclass_fields__", fields)
        return _kv_base.OffloadingEvent(**{k: v for k, v in fields.items() if k in known})

    # ---- the tier contract --------------------------------------------------

    def lookup(self, key: Any, req_context: Any) -> Any:
        """HIT when the store holds the key (leased until its load), MISS
        when not, RETRY while the answer is being asked off the thread."""
        key = bytes(key)
        if key in self._failed:
            return _kv_base.LookupResult.MISS
        if not self._drained and self._lookups.awaiting():
            self._drained = True
            self._collect()
        found, first = self._lookups.lookup(key, self._key(key), req_context.req_id)
        if found is None:
            return _kv_base.LookupResult.RETRY
        if first:
            self._metrics.lookup(found)
        return _kv_base.LookupResult.HIT if found else _kv_base.LookupResult.MISS

    def submit_store(self, job_metadata: Any) -> None:
        """Store each row under its key, on l3cache's threads."""
        self._submit(job_metadata, load=False)

    def submit_load(self, job_metadata: Any) -> None:
        """Read each key's object into its row, on l3cache's threads."""
        self._submit(job_metadata, load=True)

    def _submit(self, job: Any, load: bool) -> None:
        if hasattr(job, "materialize") and not job.is_materialized():
            job.materialize()
        keys = [bytes(k) for k in job.keys]
        rows = [int(c) for c in job.chunk_ids]
        with self._lock:
            self._jobs[job.job_id] = (load, keys)
        if not keys:
            self._finish(job.job_id, [])
            return
        hints: Dict[str, Any] = {} if load else {"groups": [self._group(k) for k in keys],
                                                 "group_objects": self._group_objects}
        if not load and self._events is not None:
            self._events.submitted(keys)
        try:
            self._io.submit("get" if load else "set", job.job_id, [self._key(k) for k in keys],
                            [self._base + r * self._row_bytes for r in rows], [self._row_bytes] * len(rows), **hints)
        except (L3Error, ValueError) as e:
            logger.error("l3cache tier: job %d not submitted, failed: %s", job.job_id, e)
            self._finish(job.job_id, [False] * len(keys))

    def get_finished_jobs(self) -> Iterable[Any]:
        """Every job finished since the last call, each exactly once."""
        self._collect()
        with self._lock:
            out, self._done = self._done, []
        return out

    def _collect(self) -> None:
        try:
            for c in self._io.drain():
                if not self._lookups.completed(c.id, c.ok, c.results):
                    self._finish(c.id, c.results if c.ok else [False] * len(c.results))
        except L3Error as e:
            logger.error("l3cache tier: draining completions: %s", e)

    def _finish(self, job_id: int, results: List[bool]) -> None:
        with self._lock:
            load, keys = self._jobs.pop(job_id)
            ok = all(results)
            good = [k for k, r in zip(keys, results) if r]
            if load:
                for k, r in zip(keys, results):
                    if not r:
                        self._failed[k] = None
                while len(self._failed) > _FAILED_KEEP:
                    self._failed.popitem(last=False)
            else:
                for k in good:
                    self._failed.pop(k, None)
                    self._lookups.set(k, True)
                if self._events is not None:
                    self._events.stored(good, keys)
            self._metrics.transferred(load, len(good) * self._row_bytes)
            fields: Dict[str, Any] = {"job_id": job_id, "success": ok, "transfer_bytes": len(good) * self._row_bytes}
            if load and not ok and good:
                fields["successful_keys"] = tuple(good)
            self._done.append(_job_result(fields))

    def take_events(self) -> Iterable[Any]:
        """The KV events since the last call (vLLM's OffloadingEvent: the
        blocks stored, the announced blocks that left the store); bounded
        work per call."""
        if self._events is None:
            return ()
        events = self._events.take()
        for e in events:
            if e.removed:
                for k in e.keys:
                    self._lookups.set(k, False)
        return events

    def on_new_request(self, req_context: Any) -> Any:
        return _kv_base.RequestOffloadingContext()

    def on_request_finished(self, req_context: Any) -> None:
        self._lookups.cleanup(req_context.req_id)

    def on_schedule_end(self, context: Any) -> None:
        """Send the step's deferred lookups as one batch."""
        self._lookups.flush()
        self._drained = False

    def has_pending_work(self) -> bool:
        with self._lock:
            return bool(self._jobs) or self._lookups.awaiting()

    def drain_jobs(self) -> None:
        """Block until every submitted job has finished; their results come
        out of the next get_finished_jobs."""
        while self.has_pending_work():
            self._collect()
            if self.has_pending_work():
                time.sleep(0.001)

    def shutdown(self) -> None:
        """Finish the jobs in flight, then close the store (a clean
        checkpoint: the next scheduler finds every block)."""
        if self._io is not None:
            self.drain_jobs()
            self._io.close()
            self._io = None

    @classmethod
    def build_metric_definitions(cls, extra_config: Dict[str, Any]) -> Dict[str, Any]:
        """The tier's Prometheus metrics (vllm_metrics.METRICS)."""
        return metric_definitions()

    def get_stats(self) -> Optional[Any]:
        """What the tier observed since the last call (vLLM's
        OffloadingConnectorStats), or None."""
        return self._metrics.take()

    # ---- beyond the contract ----------------------------------------------

    def store_stats(self) -> dict:
        """The l3cache store's counters (objects, hits, io_fixed, ...)."""
        return self._io.store.stats()

    def lookup_stats(self) -> Dict[str, int]:
        """Keys asked on the scheduler thread and in batches off it."""
        return {"sync_probes": self._lookups.sync_probes, "batched": self._lookups.batched}


def _locality(value: Any) -> Any:
    """vLLM's Locality for a name or a Locality (None: unknown)."""
    enum = getattr(_kv_base, "Locality", None)
    if value is None or enum is None:
        return None
    return value if isinstance(value, enum) else enum(str(value).upper())


def _kv_events_on(spec: Any) -> bool:
    """Whether vLLM publishes KV events (its kv_events_config, or the
    config's flag on an older vLLM)."""
    events = getattr(spec, "kv_events_config", None)
    if events is not None:
        return bool(events.enable_kv_cache_events)
    return bool(getattr(getattr(spec, "config", None), "enable_kv_cache_events", False))


def _job_result(fields: Dict[str, Any]) -> Any:
    """vLLM's JobResult with the fields the installed version has."""
    known = getattr(_tier_base.JobResult, "__dataclass_fields__", fields)
    return _tier_base.JobResult(**{k: v for k, v in fields.items() if k in known})
