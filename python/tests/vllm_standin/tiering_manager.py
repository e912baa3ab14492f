"""Follows vllm/v1/kv_offload/tiering/manager.py at
061245c7e1e7bb485a53ec8b7b75362faff2fcfb (TieringOffloadingManager) and the
CPU primary tier it drives:

* lookup: poll finished jobs at most once a step; the primary's HIT or
  HIT_PENDING wins; else ask each tier in order: a tier's HIT starts a
  promotion (a primary row allocated now, the load deferred) and answers
  HIT_PENDING (MISS when the primary is full); RETRY goes on to the next.
  A promotion records the tier's ``cache_hit_source`` for the request's
  key (get_load_source reports it; a key whose load failed loses it).
* on_schedule_end: the catch-all poll, serve_external_requests, the gate
  reset, then one batched submit_load per (tier, request), then each
  tier's on_schedule_end.
* prepare_store / complete_store: after a GPU-to-CPU store succeeds, each
  tier gets its own store job over the same rows, pinned (prepare_read)
  until the job is reported.
* finished jobs: each must be known and reported by its own tier
  (assertions); a store unpins its rows; a promotion makes its rows
  readable for the keys that loaded and frees the rest.
* reset_cache: drain_jobs on every tier, an unconditional poll, then
  ``assert not self._jobs``; shutdown: every tier, then the primary.
* back-pressure: a cascade to a tier whose detector says not to store is
  skipped; a finished store updates the detector.
* lazy promotion allocation: with a tier that allocates its promotions'
  rows on its own threads, the primary is behind a lock (_LockedPrimaryTier).
* take_events: the primary's events, then each tier's; get_stats: each
  tier's stats aggregated (the manager's own tracker is left out).

The primary here keeps (row, ref count) per key: -1 a write in flight, 0
ready, >0 pinned; it evicts the least recently used ready row."""
import functools
import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from .kv_base import LookupResult, OffloadPolicy, PrepareStoreOutput, RequestOffloadingContext
from .cache_hit_source import CacheHitSource
from .tiering_base import LazyTransferJob, TransferJob


class CPULoadStoreSpec:
    def __init__(self, chunk_ids):
        self.chunk_ids = np.array(chunk_ids, dtype=np.int32)


class PrimaryTier:
    def __init__(self, view: memoryview):
        self.view = view
        self.entries = OrderedDict()   # key -> [row, ref_cnt]
        self.free = list(range(view.shape[0] - 1, -1, -1))

    def lookup(self, key, ctx):
        e = self.entries.get(key)
        if e is None:
            return LookupResult.MISS
        return LookupResult.HIT_PENDING if e[1] < 0 else LookupResult.HIT

    def _alloc(self):
        if self.free:
            return self.free.pop()
        for key, (row, ref) in self.entries.items():
            if ref == 0:
                del self.entries[key]
                return row
        return None

    def prepare_store(self, keys, ctx):
        new = [k for k in keys if k not in self.entries]
        rows = []
        for k in new:
            row = self._alloc()
            if row is None:
                for j, r in zip(new, rows):
                    del self.entries[j]
                    self.free.append(r)
                return None
            self.entries[k] = [row, -1]
            rows.append(row)
        return PrepareStoreOutput(new, CPULoadStoreSpec(rows), [])

    safe_prepare_write = prepare_write = prepare_store

    def complete_store(self, keys, ctx, success=True):
        for k in keys:
            e = self.entries.get(k)
            if e is None or e[1] != -1:
                continue
            if success:
                e[1] = 0
            else:
                del self.entries[k]
                self.free.append(e[0])

    complete_write = complete_store

    def prepare_read(self, keys, ctx):
        rows = []
        for k in keys:
            e = self.entries[k]
            e[1] += 1
            self.entries.move_to_end(k)
            rows.append(e[0])
        return CPULoadStoreSpec(rows)

    def complete_read(self, keys, ctx):
        for k in keys:
            self.entries[k][1] -= 1

    def forget(self, keys):
        """Drop ready keys (tests: as if evicted from the CPU tier)."""
        for k in keys:
            row, ref = self.entries[k]
            assert ref == 0
            del self.entries[k]
            self.free.append(row)

    def row_of(self, key):
        return self.entries[key][0]

    def reset_cache(self):
        for k in [k for k, (_, ref) in self.entries.items() if ref == 0]:
            self.forget([k])

    def take_events(self):
        return ()

    def shutdown(self):
        self.view = None


class _LockedPrimaryTier:
    """Every call into the primary under one lock (upstream's, for tiers
    whose threads allocate promotion rows)."""

    def __init__(self, primary):
        self._primary = primary
        self._lock = threading.Lock()

    def __getattr__(self, name):
        attr = getattr(self._primary, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def locked(*args, **kwargs):
            with self._lock:
                return attr(*args, **kwargs)

        return locked


class JobMetadata(NamedTuple):
    transfer_job: TransferJob
    tier_idx: int


class TieringOffloadingManager:
    def __init__(self, primary_tier, secondary_tiers):
        self.secondary_tiers = list(secondary_tiers)
        lazy = any(t.supports_lazy_promotion_allocation() for t in self.secondary_tiers)
        self.primary_tier = _LockedPrimaryTier(primary_tier) if lazy else primary_tier
        self._promotion_failed = set()
        self._jobs = {}
        self._next_id = 0
        self._processed_this_step = False
        self._pending_loads = {}       # tier idx -> {req id: [ctx, keys, rows]}
        self._promoting = set()
        self._load_sources = {}  # req_id -> {key: the tier's CacheHitSource}
        self._pending_stores = {}      # req id -> count
        self._finished = set()

    def _job_id(self):
        self._next_id += 1
        return self._next_id - 1

    def _register(self, job, tier_idx):
        self._jobs[job.job_id] = JobMetadata(job, tier_idx)

    def _maybe_process(self):
        if not self._processed_this_step:
            self._processed_this_step = True
            self._process_finished_jobs()

    def _process_finished_jobs(self):
        for i, tier in enumerate(self.secondary_tiers):
            for r in tier.get_finished_jobs():
                jm = self._jobs.pop(r.job_id, None)
                assert jm is not None, "Finished job_id %s from tier #%d not in _jobs" % (r.job_id, i)
                assert jm.tier_idx == i, "Finished job_id %s reported by the wrong tier" % r.job_id
                if jm.transfer_job.is_promotion:
                    self._complete_promotion(jm.transfer_job, r, jm.tier_idx)
                else:
                    self.primary_tier.complete_read(jm.transfer_job.keys, jm.transfer_job.req_context)
                    if r.success and tier.bp_detector is not None:
                        tier.bp_detector.update(jm.transfer_job.submit_time, r.transfer_bytes or 0)

    def _complete_promotion(self, job, r, tier_idx):
        self._promoting.difference_update(job._keys)
        if isinstance(job, LazyTransferJob) and not job.lazy_success:
            self._promotion_failed.add(job.req_context.req_id)
            self._forget_sources(job, tier_idx, job._keys)
            return
        if r.success:
            good, bad = list(job.keys), []
        elif r.successful_keys:
            assert set(job.keys) >= set(r.successful_keys), "reported unknown successful keys"
            good = list(r.successful_keys)
            bad = [k for k in job.keys if k not in set(good)]
        else:
            good, bad = [], list(job.keys)
        self._forget_sources(job, tier_idx, bad)
        if good:
            self.primary_tier.complete_write(good, job.req_context, True)
        if bad:
            self.primary_tier.complete_write(bad, job.req_context, False)

    def _forget_sources(self, job, tier_idx, keys):
        """Keys whose load failed are no hit of that tier."""
        sources = self._load_sources.get(job.req_context.req_id, {})
        for k in keys:
            if sources.get(k) == self.secondary_tiers[tier_idx].cache_hit_source:
                del sources[k]

    # ---- lookups and promotions ------------------------------------------

    def lookup(self, key, ctx):
        self._maybe_process()
        primary = self.primary_tier.lookup(key, ctx)
        if primary is LookupResult.HIT or primary is LookupResult.HIT_PENDING:
            return primary
        any_retry = False
        for i, tier in enumerate(self.secondary_tiers):
            if not ctx.load_tier_filter.allows(tier.medium, tier.locality):
                continue
            result = tier.lookup(key, ctx)
            if result is LookupResult.HIT:
                return LookupResult.HIT_PENDING if self._promote(i, key, ctx) else LookupResult.MISS
            any_retry = any_retry or result is LookupResult.RETRY
        return LookupResult.RETRY if any_retry else LookupResult.MISS

    def get_load_source(self, key, ctx):
        """Where a hit of the request came from: the tier that promoted it,
        else the CPU tier (a host hit)."""
        return self._load_sources.get(ctx.req_id, {}).get(key, CacheHitSource.HOST)

    def _promote(self, i, key, ctx):
        if ctx.req_id in self._promotion_failed:
            return False
        if key in self._promoting:
            return True
        self._load_sources.setdefault(ctx.req_id, {})[key] = self.secondary_tiers[i].cache_hit_source
        lazy = self.secondary_tiers[i].supports_lazy_promotion_allocation()
        keys, rows = [key], []
        if not lazy:
            out = self.primary_tier.safe_prepare_write([key], ctx)
            if out is None:
                return False
            keys, rows = out.keys_to_store, list(out.store_spec.chunk_ids)
        entry = self._pending_loads.setdefault(i, {}).setdefault(ctx.req_id, [ctx, [], []])
        entry[1] += keys
        entry[2] += rows
        self._promoting.update(keys)
        return True

    def _flush_promotions(self):
        for i, by_req in self._pending_loads.items():
            tier = self.secondary_tiers[i]
            for ctx, keys, rows in by_req.values():
                if tier.supports_lazy_promotion_allocation():
                    job = LazyTransferJob(self._job_id(), keys, np.array([]), True, ctx,
                                          primary_alloc_fn=self._lazy_alloc)
                else:
                    job = TransferJob(self._job_id(), keys, np.array(rows, dtype=np.int32), True, ctx)
                self._register(job, i)
                tier.submit_load(job)
        self._pending_loads.clear()

    def _lazy_alloc(self, keys, ctx):
        out = self.primary_tier.safe_prepare_write(keys, ctx)
        return None if out is None else (out.keys_to_store, out.store_spec.chunk_ids)

    # ---- stores -----------------------------------------------------------

    def prepare_store(self, keys, ctx):
        self._maybe_process()
        out = self.primary_tier.prepare_store(keys, ctx)
        if out is not None and out.keys_to_store:
            self._pending_stores[ctx.req_id] = self._pending_stores.get(ctx.req_id, 0) + 1
        return out

    def complete_store(self, keys, ctx, success=True):
        keys = list(keys)
        self.primary_tier.complete_store(keys, ctx, success)
        if success:
            for i, tier in enumerate(self.secondary_tiers):
                if tier.bp_detector is not None and not tier.bp_detector.should_store(len(keys)):
                    continue
                tier.submit_store(self.create_store_job(keys, ctx, i))
        assert self._pending_stores.get(ctx.req_id, 0) > 0
        self._pending_stores[ctx.req_id] -= 1
        self._maybe_finalize(ctx)

    def create_store_job(self, keys, ctx, tier_idx=0):
        spec = self.primary_tier.prepare_read(keys, ctx)
        job = TransferJob(self._job_id(), keys, spec.chunk_ids, False, ctx)
        self._register(job, tier_idx)
        return job

    # ---- requests and steps -----------------------------------------------

    def on_new_request(self, ctx):
        policies = [t.on_new_request(ctx).policy for t in self.secondary_tiers]
        level = OffloadPolicy.REQUEST_LEVEL if OffloadPolicy.REQUEST_LEVEL in policies else OffloadPolicy.CHUNK_LEVEL
        return RequestOffloadingContext(level)

    def on_request_finished(self, ctx):
        self._finished.add(ctx.req_id)
        self._maybe_finalize(ctx)

    def _maybe_finalize(self, ctx):
        if ctx.req_id in self._finished and not self._pending_stores.get(ctx.req_id, 0):
            for tier in self.secondary_tiers:
                tier.on_request_finished(ctx)
            self._finished.discard(ctx.req_id)
            self._pending_stores.pop(ctx.req_id, None)
            self._load_sources.pop(ctx.req_id, None)
            self._promotion_failed.discard(ctx.req_id)

    def on_schedule_end(self, context):
        self._maybe_process()
        for tier in self.secondary_tiers:
            tier.serve_external_requests(None)
        self._processed_this_step = False
        self._flush_promotions()
        for tier in self.secondary_tiers:
            tier.on_schedule_end(context)

    def take_events(self):
        yield from self.primary_tier.take_events()
        for tier in self.secondary_tiers:
            yield from tier.take_events()

    def get_stats(self):
        stats = None
        for tier in self.secondary_tiers:
            tier_stats = tier.get_stats()
            if tier_stats is None or tier_stats.is_empty():
                continue
            stats = tier_stats if stats is None else stats.aggregate(tier_stats)
        return stats

    def has_pending_work(self):
        return bool(self._jobs) or any(t.has_pending_work() for t in self.secondary_tiers)

    def reset_cache(self):
        for tier in self.secondary_tiers:
            tier.drain_jobs()
        self._process_finished_jobs()
        assert not self._jobs
        self._load_sources.clear()
        self.primary_tier.reset_cache()
        self._processed_this_step = False
        for tier in self.secondary_tiers:
            if tier.bp_detector is not None:
                tier.bp_detector.reset()

    def shutdown(self):
        error = None
        for tier in self.secondary_tiers:
            try:
                tier.shutdown()
            except Exception as e:  # noqa: BLE001 - kept, re-raised below
                error = e
        if error is not None:
            raise error
        self.primary_tier.shutdown()
