"""Follows vllm/v1/kv_offload/tiering/fs/manager.py at
061245c7e1e7bb485a53ec8b7b75362faff2fcfb (FileSystemTierManager, vLLM's own
file-system tier, registered as "fs"): a tier over ``root_dir`` that
several vLLM instances may share (a PVC, a shared file system).

* constructor: (offloading_spec, primary_kv_view, tier_type, root_dir,
  n_read_threads, n_write_threads, enable_kv_events, locality,
  backpressure_detector); medium STORAGE; events only when
  enable_kv_events and vLLM's kv_events_config both say so.
* lookup through an AsyncLookupManager (RETRY until the batch that the
  step's on_schedule_end posted has answered, then HIT or MISS).
* lazy promotion allocation: submit_load gets a LazyTransferJob and the
  load task materializes it (allocates primary rows) on a pool thread,
  then reads each block's file into its row; a failed load reports the
  keys read before the failure (successful_keys) and marks the rest a
  miss.
* store: each block's row written to ``<path>.tmp`` and renamed over its
  path; a stored job's keys become one OffloadingEvent(removed=False).

Simplified, not the upstream text: the file layout is
``root_dir/<digest of model, dtype and chunk geometry>/<hhh>/<hh>_g<group>/
<hash>.bin`` (upstream's FileMapper names the same parts), the I/O is
buffered (upstream probes O_DIRECT), and one thread pool of
n_read_threads + n_write_threads threads serves both queues."""
import hashlib
import json
import os
import queue
import threading
import time

import numpy as np

from .async_lookup import AsyncLookupManager
from .kv_base import Locality, LookupResult, Medium, OffloadingEvent, RequestOffloadingContext
from .tiering_base import JobResult, LazyTransferJob, SecondaryTierManager


class _FsLookups(AsyncLookupManager):
    def __init__(self, tier, tier_type):
        super().__init__(tier_type)
        self._tier = tier

    def batch_lookup(self, keys, req_context):
        return [os.path.exists(self._tier.file_name(k)) for k in keys]


class FileSystemTierManager(SecondaryTierManager):
    medium = Medium.STORAGE

    def __init__(self, offloading_spec, primary_kv_view, tier_type, root_dir, n_read_threads=16,
                 n_write_threads=16, enable_kv_events=False, locality=None, backpressure_detector=None):
        super().__init__(offloading_spec, primary_kv_view, tier_type, backpressure_detector)
        self.locality = Locality(locality) if locality is not None else None
        self.events = [] if enable_kv_events and offloading_spec.kv_events_config.enable_kv_cache_events else None
        cfg = offloading_spec.config
        run = {"model": cfg.model.name, "dtype": cfg.model.dtype, "tokens_per_hash": cfg.cache.tokens_per_hash,
               "blocks_per_chunk": cfg.cache.blocks_per_chunk}
        self._root = os.path.join(root_dir, hashlib.sha256(json.dumps(run, sort_keys=True).encode()).hexdigest()[:16])
        os.makedirs(self._root, exist_ok=True)
        self._rows = np.asarray(primary_kv_view).view(np.uint8)
        self._store_keys, self._load_keys, self._load_progress = {}, {}, {}
        self._tasks, self._finished = queue.Queue(), queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, daemon=True)
                         for _ in range(max(1, min(4, n_read_threads + n_write_threads)))]
        for t in self._threads:
            t.start()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._lookup_manager = _FsLookups(self, tier_type)

    def file_name(self, key):
        h = bytes(key)[:-4].hex()
        return os.path.join(self._root, h[:3], "%s_g%d" % (h[3:5], int.from_bytes(bytes(key)[-4:], "big")),
                            h + ".bin")

    def supports_lazy_promotion_allocation(self):
        return True

    def on_new_request(self, req_context):
        return RequestOffloadingContext()

    def lookup(self, key, req_context):
        result = self._lookup_manager.lookup(key, req_context)
        if result is None:
            return LookupResult.RETRY
        return LookupResult.HIT if result else LookupResult.MISS

    def _enqueue(self, job_id, task):
        with self._lock:
            self._in_flight += 1
        self._tasks.put((job_id, task))

    def _run(self):
        while True:
            item = self._tasks.get()
            if item is None:
                return
            job_id, task = item
            start, ok = time.monotonic(), True
            try:
                task()
            except OSError:
                ok = False
            self._finished.put((job_id, ok, time.monotonic() - start))
            with self._lock:
                self._in_flight -= 1

    def submit_store(self, job_metadata):
        keys, rows = list(job_metadata.keys), [int(c) for c in job_metadata.chunk_ids]
        if self.events is not None:
            self._store_keys[job_metadata.job_id] = keys

        def store():
            for k, r in zip(keys, rows):
                path = self.file_name(k)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path + ".tmp", "wb") as f:
                    f.write(self._rows[r].tobytes())
                os.replace(path + ".tmp", path)

        self._enqueue(job_metadata.job_id, store)

    def submit_load(self, job_metadata):
        assert isinstance(job_metadata, LazyTransferJob)
        assert not job_metadata.is_materialized(), "FS tier should allocate CPU cache lazily"
        job_id = job_metadata.job_id

        def load():
            job_metadata.materialize()
            keys = list(job_metadata.keys)
            self._load_keys[job_id] = keys
            for n, (k, r) in enumerate(zip(keys, job_metadata.chunk_ids)):
                try:
                    with open(self.file_name(k), "rb") as f:
                        f.readinto(memoryview(self._rows[int(r)]))
                except OSError:
                    self._load_progress[job_id] = n
                    raise

        self._enqueue(job_id, load)

    def get_finished_jobs(self):
        results = []
        while True:
            try:
                job_id, success, transfer_time = self._finished.get_nowait()
            except queue.Empty:
                return results
            if self.events is not None:
                keys = self._store_keys.pop(job_id, None)
                if success and keys:
                    self.events.append(OffloadingEvent(keys=keys, medium=self.medium, removed=False,
                                                       locality=self.locality))
            load_keys = self._load_keys.pop(job_id, None)
            done = self._load_progress.pop(job_id, 0)
            if load_keys is not None and not success:
                self._lookup_manager.mark_miss(load_keys[done:])
                results.append(JobResult(job_id, False, tuple(load_keys[:done]) or None, transfer_time))
                continue
            results.append(JobResult(job_id, success, None, transfer_time))

    def take_events(self):
        if self.events is not None:
            yield from self.events
            self.events.clear()

    def drain_jobs(self):
        while True:
            with self._lock:
                if not self._in_flight:
                    return
            time.sleep(0.001)

    def on_request_finished(self, req_context):
        self._lookup_manager.cleanup(req_context.req_id)

    def on_schedule_end(self, context):
        self._lookup_manager.flush()

    def shutdown(self):
        self._lookup_manager.shutdown()
        self.drain_jobs()
        for _ in self._threads:
            self._tasks.put(None)
        for t in self._threads:
            t.join()
