"""The storage paths of SGLang's cache controllers, run on the caller's
thread, following:

* python/sglang/srt/managers/cache_controller.py at
  001067fffe33427bee0ed2f007fb7551a1d76b44 (HiCacheController): attach
  (the factory, then register_mem_pool_host; zero-copy v1 page functions
  for ``dynamic`` with ``interface_v1``; ``backup_skip`` on non-zero ranks
  of an MLA model), the hit query (batch_exists per 128 pages, stopping at
  the first short batch), the read (_page_transfer: 128 pages a batch,
  batch_get_v1 counted to its first failure, KV-derived sidecars by
  batch_get_v2 on the same slots, the batch's hit the minimum), the backup
  (batch_set_v1 per 128 pages, stopping at the first failed batch), detach
  (close) and, each scheduler step with metrics on, log_storage_metrics(
  backend.get_stats()). The kvcc branch's router hint is left out.
* python/sglang/srt/mem_cache/hybrid_cache/hybrid_cache_controller.py at
  00343773d3293d382f0b39101f36b656d30ad2f0 (HybridCacheController): every
  pool entry registered by register_mem_host_pool_v2 after attach; the hit
  query by batch_exists_v2 over all pages with the pool transfers (only
  kv_hit_pages read); the non-KV sidecars read after the KV pages are
  complete, their TRAILING keys re-aligned to the hit (_sync_trailing_keys)
  and derived sources resolved; the backup writing the sidecars first, in
  one batch_set_v2 of all pages (KV-derived ones on the op's slots), then
  the KV pages unless backup_skip; should_backup keeping only MAMBA on a
  backup_skip rank.
"""
from .backend_factory import StorageBackendFactory
from .hicache_storage import (STORAGE_BATCH_SIZE, HiCacheStorageConfig, HiCacheStorageExtraInfo, PoolHitPolicy,
                              PoolName, PoolTransfer, count_pool_hits)
from .metrics_collector import StorageMetricsCollector
from .pool_host import HostPoolGroup


class Controller:
    def __init__(self, mem_pool_host, model_name, extra_config, tp_rank=0, tp_size=1, is_mla_model=False,
                 enable_storage_metrics=False):
        self.mem_pool_host = mem_pool_host
        self.hybrid = isinstance(mem_pool_host, HostPoolGroup)
        self.storage_host_pool = mem_pool_host.anchor_entry.host_pool if self.hybrid else mem_pool_host
        self.page_size = self.storage_host_pool.page_size
        self.config = HiCacheStorageConfig(
            tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
            is_mla_model=is_mla_model, enable_storage_metrics=enable_storage_metrics,
            is_page_first_layout=self.storage_host_pool.layout == "page_first", model_name=model_name,
            extra_config=extra_config)
        self.backup_skip = is_mla_model and tp_rank != 0
        self.collector = StorageMetricsCollector()
        self.storage_backend = None

    # ---- attach / detach --------------------------------------------------

    def attach(self):
        backend = StorageBackendFactory.create_backend("dynamic", self.config, self.storage_host_pool)
        try:
            backend.register_mem_pool_host(self.storage_host_pool)
            self.zero_copy = bool(self.config.extra_config.get("interface_v1", 0))
            if self.hybrid:
                for entry in self.mem_pool_host.entries:
                    backend.register_mem_host_pool_v2(entry.host_pool, entry.name)
        except Exception:
            if hasattr(backend, "close"):
                backend.close()
            raise
        self.storage_backend = backend
        return backend

    def detach(self):
        if hasattr(self.storage_backend, "close"):
            self.storage_backend.close()
        self.storage_backend = None

    def check_hicache_events(self):
        """The scheduler's per-step metrics hand-off."""
        if self.config.enable_storage_metrics:
            self.collector.log_storage_metrics(self.storage_backend.get_stats())

    # ---- prefetch ----------------------------------------------------------

    def hit_query(self, hashes, pool_transfers=None):
        """The pages the storage can give; their tokens."""
        if self.hybrid:
            extra = HiCacheStorageExtraInfo(prefix_keys=None)
            if pool_transfers:
                pages = self.storage_backend.batch_exists_v2(hashes, pool_transfers, extra).kv_hit_pages
            else:
                pages = self.storage_backend.batch_exists(hashes, extra)
            return hashes[:pages], pages * self.page_size
        found = []
        for start in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[start:start + STORAGE_BATCH_SIZE]
            n = self.storage_backend.batch_exists(batch, HiCacheStorageExtraInfo(prefix_keys=None))
            found += batch[:n]
            if n < len(batch):
                break
        return found, len(found) * self.page_size

    def _page_get(self, keys, host_indices):
        if self.zero_copy:
            results = self.storage_backend.batch_get_v1(keys, host_indices, HiCacheStorageExtraInfo())
            n = 0
            while n < len(keys) and results[n]:
                n += 1
            return n
        pages = self.storage_backend.batch_get(keys, [self.storage_host_pool.get_dummy_flat_data_page()
                                                      for _ in keys])
        n = 0
        while n < len(keys) and pages[n] is not None:
            self.storage_host_pool.set_from_flat_data_page(int(host_indices[n * self.page_size]), pages[n])
            n += 1
        return n

    def page_transfer(self, hash_value, host_indices, pool_transfers=None):
        """Read the hit pages into host_indices, then the non-KV sidecars;
        the pages completed and the sidecars' hits."""
        kv_derived = [t for t in pool_transfers or [] if t.indices_from_pool == PoolName.KV]
        completed, ok = 0, True
        for i in range(0, len(hash_value), STORAGE_BATCH_SIZE):
            if not ok:
                continue
            batch = hash_value[i:i + STORAGE_BATCH_SIZE]
            slots = host_indices[i * self.page_size:(i + len(batch)) * self.page_size]
            hits = [self._page_get(batch, slots)]
            if kv_derived:
                res = self.storage_backend.batch_get_v2(
                    [PoolTransfer(name=t.name, host_indices=slots, keys=batch) for t in kv_derived])
                hits += list(count_pool_hits(res).values())
            if min(hits) != len(batch):
                ok = False
            completed += min(hits)
        pool_hits = {}
        if self.hybrid and pool_transfers is not None and completed == len(hash_value):
            nonkv = [t for t in pool_transfers if t.indices_from_pool != PoolName.KV]
            self._sync_trailing_keys(nonkv, hash_value, completed)
            self._resolve_nonkv_derived(pool_transfers)
            pool_hits = count_pool_hits(self.storage_backend.batch_get_v2(nonkv))
        return completed, pool_hits

    def _sync_trailing_keys(self, transfers, all_hashes, hit_pages):
        for t in transfers:
            if t.hit_policy != PoolHitPolicy.TRAILING_PAGES:
                continue
            n = len(t.keys) if t.keys else 1
            t.keys = all_hashes[max(0, hit_pages - n):hit_pages]
            if t.host_indices is None:
                continue
            entry = self.mem_pool_host.entry_map.get(t.name)
            needed = len(t.keys) * (entry.host_pool.page_size if entry else self.page_size)
            if t.host_indices.numel() > needed:
                t.host_indices = t.host_indices[:needed]

    @staticmethod
    def _resolve_nonkv_derived(transfers):
        for t in transfers:
            if t.indices_from_pool is None or t.indices_from_pool == PoolName.KV:
                continue
            source = next((s for s in transfers if s.indices_from_pool is None and s.name == t.indices_from_pool),
                          None)
            if source is None:
                raise AssertionError("Storage sidecar derived pool source missing")
            t.host_indices = source.host_indices
            if t.keys is None:
                t.keys = source.keys

    # ---- backup --------------------------------------------------------------

    def should_backup(self, t):
        return not self.backup_skip or t.name == PoolName.MAMBA

    def page_backup(self, hash_value, host_indices, pool_transfers=None):
        """Write a node's pages: sidecars first (hybrid), then the KV pages;
        the tokens completed and the sidecars' results."""
        results = {}
        backup = [t for t in pool_transfers or [] if self.should_backup(t)]
        if backup:
            for t in pool_transfers:
                if t.indices_from_pool == PoolName.KV:
                    t.host_indices = host_indices
                    if t.keys is None:
                        t.keys = hash_value
            self._resolve_nonkv_derived(pool_transfers)
            results = self.storage_backend.batch_set_v2(backup)
        if self.backup_skip:
            ok = bool(backup) and all(all(results.get(t.name, [])) and len(results.get(t.name, [])) ==
                                      len(t.keys or []) for t in backup)
            return (len(hash_value) * self.page_size if ok else 0), results
        completed = 0
        for i in range(0, len(hash_value), STORAGE_BATCH_SIZE):
            batch = hash_value[i:i + STORAGE_BATCH_SIZE]
            slots = host_indices[i * self.page_size:(i + len(batch)) * self.page_size]
            if self.zero_copy:
                ok = all(self.storage_backend.batch_set_v1(batch, slots, HiCacheStorageExtraInfo()))
            else:
                ok = self.storage_backend.batch_set(
                    batch, [self.storage_host_pool.get_data_page(int(slots[j * self.page_size]))
                            for j in range(len(batch))])
            if not ok:
                break
            completed += self.page_size * len(batch)
        return completed, results
