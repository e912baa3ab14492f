"""SGLang's ``--hicache-host-memory-mode buffer_only`` write path, as a
storage backend meets it, following
python/sglang/srt/mem_cache/buffer_mode/pipeline.py (BufferModePipeline),
the newest stored text of sgl-project/sglang (the version with one write
intent per pool: _write_intents, _pool_order, finish_backup_ack,
finish_storage_write_ack; merged by #34798, sidecars by #37424): the Host
pool is a staging buffer, not a cache tier.

- A node's backup is one write intent per pool that is not believed
  stored (the storage existence beliefs), the KV first, then each other
  pool in name order; a derived sidecar rides its source pool's intent.
- Each intent is its own storage operation (cache_controller.write_storage
  then the backup thread's HybridCacheController._page_backup: the pool
  transfers by batch_set_v2, then the KV pages by batch_set_v1, 128 a
  call): a state's operation carries no KV pages (hash_value = []).
- At each operation's storage ack its staging slots, KV and every other
  pool's, are freed at once (_free_staging_now), and the keys it wrote
  are added to the beliefs whatever the backend answered.

Freed slots are reused by other work: here they are overwritten with
other bytes at the ack, so a backend that read them later would store
those. Written from what the file does; none of its code.
"""
import torch

from .hicache_storage import PoolHitPolicy, PoolName, PoolTransfer


class BufferModePipeline:
    def __init__(self, controller, group):
        self.controller, self.group = controller, group
        self.beliefs = {}  # pool name -> keys believed stored
        self.operations = []  # (pool, KV keys, pool transfers) of each storage operation, in order
        self._scribble = 1000

    def covered(self, pool, keys):
        return set(keys) <= self.beliefs.get(pool, set())

    def backup(self, hash_value, host_indices, states):
        """Back a node up: ``states`` are its TRAILING_PAGES transfers (a
        pool, its slots, its keys: the node's last pages)."""
        pool_keys = {PoolName.KV: list(hash_value)}
        by_pool = {}
        for t in states:
            pool_keys[t.name] = list(t.keys)
            by_pool[t.name] = t
        for pool in sorted(pool_keys, key=lambda p: (p != PoolName.KV, str(p))):
            keys = pool_keys[pool]
            if not keys or self.covered(pool, keys):
                continue
            if pool == PoolName.KV:
                self._operation(pool, list(hash_value), host_indices, None)
            else:
                t = by_pool[pool]
                transfer = PoolTransfer(name=t.name, host_indices=t.host_indices, keys=list(t.keys),
                                        hit_policy=PoolHitPolicy.TRAILING_PAGES)
                self._operation(pool, [], torch.empty((0,), dtype=torch.int64), [transfer])

    def _operation(self, pool, kv_keys, host_indices, transfers):
        self.operations.append((pool, list(kv_keys), [t.name for t in transfers or []]))
        self.controller.page_backup(kv_keys, host_indices, transfers)  # the backup thread
        # The storage ack: beliefs fed, staging freed (and reused).
        self.beliefs.setdefault(pool, set()).update(kv_keys or [k for t in transfers for k in t.keys])
        self._free(host_indices, transfers)

    def _free(self, host_indices, transfers):
        self._scribble += 1
        anchor = self.group.anchor_entry.host_pool
        if host_indices.numel():
            anchor.fill(sorted({int(i) // anchor.page_size for i in host_indices.tolist()}), seed=self._scribble)
        for t in transfers or []:
            pool = self.group.entry_map[t.name].host_pool
            pool.fill(sorted({int(i) // pool.page_size for i in t.host_indices.tolist()}), seed=self._scribble)
