"""The SGLang backend: SGLang's HiCacheStorage over an l3cache store
(the package's docstring says what it does and how SGLang loads it)."""

import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import Store, group_id
from ..keys import tenant_tag
from .common import KV, Base, Pool, Result, guarded, hs, logger, trailing
from .common import pool_name as name_of
from .hostmode import holds_trailing_states
from .metrics import Samples
from .naming import Naming
from .pending import PendingStates
from .pools import check_pool, merge, spans_of
from .values import ByValue

__all__ = ["L3CacheHiCacheStorage"]


class L3CacheHiCacheStorage(ByValue, Base):
    """SGLang's HiCacheStorage over an l3cache store: constructed by the
    factory as ``cls(storage_config, kwargs)``, then given the Host pool by
    ``register_mem_pool_host`` (and, for hybrid models, every pool by
    ``register_mem_host_pool_v2``)."""

    def __new__(cls, storage_config: Any = None, kwargs: Optional[dict] = None) -> Any:
        """With ``next_backend`` in the extra config, the factory gets the
        chained backend (l3cache, then that backend: chain)."""
        if cls is L3CacheHiCacheStorage and "next_backend" in (getattr(storage_config, "extra_config", None) or {}):
            from .chain import ChainedHiCacheStorage
            return ChainedHiCacheStorage(storage_config, kwargs)
        return super().__new__(cls)

    def __init__(self, storage_config: Any, kwargs: Optional[dict] = None) -> None:
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        config = extra.get("l3cache_config") or extra.get("l3cache")
        if not config:
            raise ValueError(
                "l3cache: the extra config needs \"l3cache_config\" (the path of an l3cache JSON "
                "config) or \"l3cache\" (the config itself)")
        self.lease_seconds = float(extra.get("lease_seconds", 10.0))
        self.storage_config = storage_config
        self._store: Any = Store(config)  # None after close
        self.tenant = tenant_tag(config)  # the deployment's tag, folded into every namespace
        self._hold_states = holds_trailing_states(extra)  # False in SGLang's buffer_only host mode
        self._naming = Naming(storage_config, self.tenant)
        self._group_ns = self._naming.group_namespace()
        self._lock = threading.Lock()
        self._pools: Dict[str, Pool] = {}
        self._anchor: Optional[Pool] = None
        self._whole = False  # a TRAILING_PAGES pool was seen: a prefix is usable only with its last state
        self._states = PendingStates()  # TRAILING_PAGES states waiting for their page's KV
        self._regions: List[Tuple[int, int]] = []  # registered [start, end)
        self._samples = Samples(bool(getattr(storage_config, "enable_storage_metrics", False)))
        st = self._store.stats()
        logger.info("l3cache: HiCache storage backend: %s, %d objects, %.1f GiB, engine %s, lease %.1f s",
                    config if isinstance(config, str) else "inline config", st["objects"],
                    st["capacity_bytes"] / 2**30, st["engine"], self.lease_seconds)

    # ---- page groups --------------------------------------------------------

    def _group_objects(self) -> int:
        """The objects of a whole page (Naming.group_objects)."""
        with self._lock:
            names = list(self._pools)
        return self._naming.group_objects(names)

    def _hints(self, keys: Sequence[str]) -> Dict[str, Any]:
        """A put's hints (Store.batch_put_from_v): each page's group id,
        the same from every rank and pool, the objects of a page, and
        whether a batch is of use only whole (a model with a TRAILING_PAGES
        pool: its prefix is usable only up to a page with its state, so
        admission writes a batch whole or not at all)."""
        return {"groups": [group_id(self._group_ns + k) for k in keys], "group_objects": self._group_objects(),
                "whole": self._whole}

    def _note_policies(self, transfers: Sequence[Any]) -> None:
        """Learn from a v2 call's transfers whether a pool is TRAILING_PAGES
        (the backup names its policy before the KV pages are written)."""
        if any(trailing(t) for t in transfers):
            self._whole = True

    # ---- Host pools ---------------------------------------------------------

    def _register(self, pool: Any, pool_name: str) -> Pool:
        """Check a pool, add its buffers to the store's Host regions, and
        keep it under its name."""
        check_pool(pool, pool_name)
        spans = spans_of(pool)
        entry = Pool(pool_name, pool, self._naming.namespace(pool, pool_name))
        with self._lock:
            regions = merge(self._regions + spans)
            if regions != self._regions:
                self._store.register_hosts([(lo, hi - lo) for lo, hi in regions])
                self._regions = regions
            self._pools[pool_name] = entry
        logger.info("l3cache: registered Host pool %r (%d buffer(s), %d bytes, layout %s), namespace %s",
                    pool_name, len(spans), sum(hi - lo for lo, hi in spans), pool.layout, entry.prefix[:-1])
        return entry

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Take SGLang's Host KV pool (the anchor of a hybrid model's pools):
        refuse what cannot be stored, register its buffers for fixed-buffer
        I/O (one allocation, or K and V in two)."""
        self._anchor = self._register(mem_pool_host, KV)
        self.mem_pool_host = mem_pool_host

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        """Take one of a hybrid model's Host pools under its PoolName."""
        name = name_of(host_pool_name)
        self._register(host_pool, name)
        if hasattr(Base, "register_mem_host_pool_v2"):
            Base.register_mem_host_pool_v2(self, host_pool, host_pool_name)

    def _span(self) -> Tuple[int, int]:
        """The span of every registered region: batches' host."""
        return self._regions[0][0], self._regions[-1][1] - self._regions[0][0]

    def _ranges(self, pool: Pool, host_indices: Any, n: int) -> Tuple[List[int], List[int], int]:
        """Each page's ranges (offsets into the span, sizes) and ranges per page."""
        ptrs, sizes = pool.host.get_page_buffer_meta(host_indices)
        if n == 0 or len(ptrs) % n or len(ptrs) != len(sizes):
            raise ValueError("l3cache: %d pages of pool %r got %d pointers and %d sizes"
                             % (n, pool.name, len(ptrs), len(sizes)))
        base, length = self._span()
        offsets = [int(p) - base for p in ptrs]
        for off, s in zip(offsets, sizes):
            if off < 0 or off + int(s) > length:
                raise ValueError("l3cache: a page range of pool %r lies outside its registered buffers"
                                 % pool.name)
        return offsets, [int(s) for s in sizes], len(ptrs) // n

    def _io(self, put: bool, pool: Pool, keys: Sequence[str], host_indices: Any) -> List[bool]:
        if not keys:
            return []
        offsets, sizes, per_key = self._ranges(pool, host_indices, len(keys))
        base, length = self._span()
        start = time.monotonic()
        if put:
            ok = self._store.batch_put_from_v(pool.keys(keys), base, length, offsets, sizes, per_key,
                                              **self._hints(keys))
        else:
            ok = self._store.batch_get_into_v(pool.keys(keys), base, length, offsets, sizes, per_key)
        self._samples.note("backup" if put else "prefetch", ok, sizes, per_key, start)
        return ok

    # ---- the v1 zero-copy interface ---------------------------------------

    def _lease(self, pool: Pool, keys: Sequence[str]) -> List[bool]:
        return self._store.batch_lease(pool.keys(keys), self.lease_seconds) if keys else []

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many KV pages from the start are stored; those found are
        leased until the get that follows."""
        try:
            found = self._lease(self._need_anchor(), keys)
            return found.index(False) if False in found else len(found)
        except Exception as e:
            logger.error("l3cache: batch_exists failed, reported as a miss: %s", e)
            return 0

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Read each KV page into its Host slots; one bool per key."""
        return guarded(lambda: self._io(False, self._need_anchor(), keys, host_indices), len(keys), "get")

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Store each KV page from its Host slots (create-only); one bool per key."""
        ok = guarded(lambda: self._io(True, self._need_anchor(), keys, host_indices), len(keys), "set")
        self._settle_pending(keys, ok)
        return ok

    def _need_anchor(self) -> Pool:
        if self._anchor is None:
            raise ValueError("l3cache: register_mem_pool_host must come before any I/O")
        return self._anchor

    # ---- the v2 (hybrid pools) interface ------------------------------------

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[List[Any]] = None,
                        extra_info: Any = None) -> Any:
        """The usable prefix over the KV pool and every pool transfer: an
        ALL_PAGES pool must hold every page of the KV prefix, a
        TRAILING_PAGES pool its last len(transfer.keys) pages (their values
        do not matter). What the prefix needs is leased."""
        try:
            self._note_policies(pool_transfers or [])
            final, hits = self._exists_v2(keys, pool_transfers or [])
        except Exception as e:
            logger.error("l3cache: batch_exists_v2 failed, reported as a miss: %s", e)
            final, hits = 0, {}
        if hs is not None and hasattr(hs, "PoolTransferResult"):
            return hs.PoolTransferResult(final, hits)
        return Result(final, hits)

    def _exists_v2(self, keys: List[str], transfers: List[Any]) -> Tuple[int, Dict[str, int]]:
        found = self._lease(self._need_anchor(), keys)
        kv = found.index(False) if False in found else len(found)
        hits: Dict[str, int] = {KV: kv} if kv else {}
        final = kv
        for t in transfers:
            if final == 0:
                break
            name = name_of(t.name)
            pool = self._pools.get(name)
            if pool is None:
                logger.error("l3cache: pool %r was never registered: no hit", name)
                return 0, {}
            have = self._store.batch_exists(pool.keys(keys[:kv]))
            if trailing(t):
                window = max(1, len(t.keys) if t.keys else 1)
                boundary = next((p for p in range(kv, 0, -1) if all(have[max(0, p - window):p])), 0)
                lease = keys[max(0, boundary - window):boundary]
            else:
                boundary = have.index(False) if False in have else kv
                lease = keys[:boundary]
            self._lease(pool, lease)
            if boundary:
                hits[name] = boundary
            final = min(final, boundary)
        return final, hits

    def batch_get_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        """Read each transfer's pages into its pool; per pool, a bool per key."""
        return self._v2(False, transfers)

    def batch_set_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        """Store each transfer's pages from its pool; per pool, a bool per key."""
        return self._v2(True, transfers)

    def _v2(self, put: bool, transfers: List[Any]) -> Dict[Any, List[bool]]:
        results: Dict[Any, List[bool]] = {}
        self._note_policies(transfers)
        if put:
            self._states.drop_all()  # a new backup: the last one's state never met its last page
        by_name = {name_of(t.name): t for t in transfers if getattr(t, "indices_from_pool", None) is None}
        for t in transfers:
            keys = list(t.keys or [])
            results[t.name] = guarded(lambda: self._transfer(put, t, keys, by_name), len(keys),
                                      "set_v2" if put else "get_v2")
        return results

    def _transfer(self, put: bool, t: Any, keys: List[str], by_name: Dict[str, Any]) -> List[bool]:
        name = name_of(t.name)
        pool = self._pools.get(name)
        if pool is None:
            raise ValueError("pool %r was never registered (register_mem_host_pool_v2)" % name)
        indices = t.host_indices
        source = getattr(t, "indices_from_pool", None)
        if indices is None and source is not None and name_of(source) in by_name:
            indices = by_name[name_of(source)].host_indices  # a sidecar takes its source's slots
        if indices is None or int(indices.numel()) != len(keys) * pool.page_size:
            raise ValueError("pool %r: %d keys need %d host indices, got %s" % (
                name, len(keys), len(keys) * pool.page_size, None if indices is None else int(indices.numel())))
        if (put and keys and trailing(t) and self._naming.writes_kv() and self._hold_states
                and not self._kv_stored(keys[-1])):
            self._ranges(pool, indices, len(keys))  # (its ranges checked now, as a put would)
            self._states.hold(pool, keys, indices)
            return [True] * len(keys)  # taken: written after its page's KV (_settle_pending)
        return self._io(put, pool, keys, indices)

    def _kv_stored(self, key: str) -> bool:
        """Whether the KV page a state ends with is stored already (then the
        state is written at once: nothing to wait for; SGLang's buffer_only
        pipeline writes a node's KV in an operation before its state's)."""
        return bool(self._store.batch_exists(self._need_anchor().keys([key]))[0])

    # ---- a trailing state waits for its page's KV ---------------------------

    def _settle_pending(self, keys: Sequence[str], ok: Sequence[bool]) -> None:
        """After a KV put: this thread's held states whose page is the
        batch's last are written or dropped (pending.PendingStates)."""
        self._states.settle(keys, ok, lambda pool, state_keys, indices: guarded(
            lambda: self._io(True, pool, state_keys, indices), len(state_keys), "set_v2"))

    @property
    def states_dropped(self) -> int:
        """States not written: their page's KV was not stored."""
        return self._states.dropped

    # ---- what a chained backend uses ----------------------------------------

    def keep(self, keys: List[str], host_indices: Any, pool_name: Any = KV) -> List[bool]:
        """Store pages of a registered pool from their Host slots now
        (create-only; a state is never held): what a chained backend keeps
        of the pages it read from the next tier. A bool per key."""
        pool = self._pools.get(name_of(pool_name))
        if pool is None:
            return [False] * len(keys)
        return guarded(lambda: self._io(True, pool, keys, host_indices), len(keys), "keep")

    def store_key(self, key: str) -> str:
        """The key l3cache stores SGLang's KV page `key` under (its pool's
        namespace and the key): what the removal feed names by identity."""
        return self._need_anchor().prefix + key

    def removal_feed(self, start: str = "now") -> Any:
        """A reader of the store's removal feed (Store.removal_feed)."""
        return self._store.removal_feed(start)

    # ---- metrics and housekeeping ------------------------------------------

    def get_stats(self) -> Any:
        """Pages and GB/s of the gets (prefetch) and puts (backup) since the
        last call, as SGLang's StorageMetrics; None when metrics are off or
        SGLang is not there."""
        return self._samples.take()

    def clear(self) -> None:
        """Delete the pages of every registered pool of this model, rank and
        layout (others stay)."""
        for pool in list(self._pools.values()):
            self._store.remove_by_prefix(pool.prefix)

    def close(self) -> None:
        """Unregister the pools, write the checkpoint, release the store."""
        self._states.drop_all()
        with self._lock:
            if self._store is not None:
                try:
                    self._store.register_hosts([])
                finally:
                    self._store.close()
                self._store = None

    def metrics(self) -> str:
        """The store's metrics as Prometheus text exposition."""
        return self._store.metrics()

    def store_stats(self) -> dict:
        """The l3cache store's own counters (objects, hits, evictions...)."""
        return self._store.stats()
