"""l3cache as SGLang HiCache's L3 storage backend, loaded by SGLang's
``dynamic`` backend with no change to SGLang::

    --hicache-storage-backend dynamic
    --hicache-storage-backend-extra-config '{"backend_name": "l3cache",
        "module_path": "l3cache.sglang", "class_name": "L3CacheHiCacheStorage",
        "interface_v1": 1, "l3cache_config": "/etc/l3cache.json"}'

Dense models use the v1 zero-copy calls (``batch_exists``,
``batch_get_v1``, ``batch_set_v1``). Hybrid models (SGLang's
``HybridCacheController``: a DSA indexer pool, Mamba or SWA state pools,
DeepSeek-V4's compressed pools, draft pools) register each Host pool with
``register_mem_host_pool_v2`` and use ``batch_exists_v2`` /
``batch_get_v2`` / ``batch_set_v2``. Every pool's buffers are registered
with the store as Host regions, so every pool's pages move zero-copy.

A page of a pool is ONE l3cache object even when its bytes are several
ranges of the Host pool (an MHA page's K and V, in one allocation or two;
a Mamba slot's temporal and conv states): one header and one crc32c over
all of them. ``batch_exists`` and ``batch_exists_v2`` lease what they find
(``lease_seconds``, default 10) so that eviction, in any process, keeps it
until the get that follows.

Keys are namespaced as SGLang's own backends do (model; TP rank and size
unless the KV is rank-replicated (MLA); PP; attention CP) plus the pool,
dtype, layout and page size, so that two pools, models, ranks or layouts
never share an object. A put names each page's group (``group_id`` of the
page hash under the model and the parallel sizes, without the ranks and
the pool), so that every rank's shard and every pool's object of a page
(a TRAILING_PAGES state's too) are admitted, kept and evicted together.
A backup names its TRAILING_PAGES states (a Mamba or SWA pool's, a
draft model's: the state of the node's last page) in ``batch_set_v2``
before the node's KV pages go by ``batch_set_v1``. The states wait: they
are written right after the KV batch that ends with their page, when
every page of that batch was stored, and dropped when not (a declined or
failed KV batch: a prefix is usable only up to a page with its state, and
a Mamba state weighs as much as tens of KV pages). ``batch_set_v2``
reports them taken (True); SGLang reads that result only for its metrics,
except on an MLA model's ranks other than 0, which write no KV and whose
states are written at once. A state whose page's KV is stored already is
written at once too, and in SGLang's ``buffer_only`` host mode (the Host
pool a staging buffer: a write's slots are freed when its storage write
is acknowledged, and each pool of a node is its own write, the KV first)
no state is ever held (sglang_hostmode).
With ``next_backend`` in the extra config, the factory gets the chained
backend instead (sglang_chain: l3cache, then any backend SGLang's factory
builds). ``namespace.deployment_id`` of the l3cache config is folded into
every namespace (keys.tenant_tag).
No call on SGLang's storage threads raises: a failure is logged and
reported as a miss or a failed page (SGLang does not restart a storage
thread that an exception killed).
"""

import hashlib
import logging
import re
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import Store, group_id
from .keys import salted, tenant_tag
from .sglang_hostmode import holds_trailing_states

logger = logging.getLogger(__name__)

_Base: Any
try:  # SGLang present: subclass its real interface (the factory checks it).
    from sglang.srt.mem_cache import hicache_storage as _hs
    _Base = _hs.HiCacheStorage
except ImportError:  # pragma: no cover - exercised only without SGLang
    _hs = None

    class _NoSglang:  # the same methods, so that the class works standalone
        pass
    _Base = _NoSglang

StorageBase: Any = _Base  # SGLang's HiCacheStorage (the chained backend subclasses it too)

__all__ = ["L3CacheHiCacheStorage", "StorageBase"]

_SUPPORTED_LAYOUTS = ("page_first", "page_first_direct", "page_head")
_KV = "kv"
# Pools whose pages every TP rank writes even when the KV is replicated (an
# MLA model's Mamba state is TP-sharded): their keys carry the TP rank.
_RANK_SHARDED_IN_MLA = ("mamba",)
_MAX_SAMPLES = 4096  # metric samples kept between two get_stats calls


def _clean(text: Any) -> str:
    """Namespace-safe text: no '_' (it ends an l3cache namespace) or '/'."""
    return re.sub(r"[^A-Za-z0-9.+-]", "-", str(text))


def _pool_name(name: Any) -> str:
    """A pool's name as text: PoolName members and plain strings alike."""
    return str(getattr(name, "value", name))


def _trailing(transfer: Any) -> bool:
    """Whether a pool transfer is TRAILING_PAGES (only its last pages count)."""
    return _pool_name(getattr(transfer, "hit_policy", "all_pages")) == "trailing_pages"


def _storage_metrics_class():
    """SGLang's StorageMetrics (its collector asserts isinstance), from its
    newest module first; None without SGLang."""
    for module in ("sglang.srt.observability.metrics_collector", "sglang.srt.metrics.collector"):
        try:
            return getattr(__import__(module, fromlist=["StorageMetrics"]), "StorageMetrics")
        except (ImportError, AttributeError):
            continue
    return None


def _tensors_of(pool: Any) -> List[Any]:
    """The Host tensors a pool's pages live in: what it exposes for
    zero-copy registration, else its kv_buffer (a tensor, a tuple or a list)."""
    if hasattr(pool, "get_hybrid_pool_buffer"):
        found = pool.get_hybrid_pool_buffer()
    else:
        found = getattr(pool, "kv_buffer", None)
    if found is None:
        return []
    if not isinstance(found, (list, tuple)):
        found = [found]
    return [t for t in found if t is not None and t.numel() > 0]


def _merge(spans: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """[start, end) spans, sorted, overlapping or touching ones merged."""
    out: List[List[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


class _Pool:
    """One registered Host pool: its name, the SGLang object, its object
    key prefix and its page size (in host slots)."""

    def __init__(self, name: str, host: Any, prefix: str):
        self.name, self.host, self.prefix = name, host, prefix
        self.page_size = int(getattr(host, "page_size", 1) or 1)

    def keys(self, keys: Sequence[str]) -> List[str]:
        return [self.prefix + k for k in keys]


class L3CacheHiCacheStorage(_Base):
    """SGLang's HiCacheStorage over an l3cache store: constructed by the
    factory as ``cls(storage_config, kwargs)``, then given the Host pool by
    ``register_mem_pool_host`` (and, for hybrid models, every pool by
    ``register_mem_host_pool_v2``)."""

    def __new__(cls, storage_config: Any = None, kwargs: Optional[dict] = None) -> Any:
        """With ``next_backend`` in the extra config, the factory gets the
        chained backend (l3cache, then that backend: sglang_chain)."""
        if cls is L3CacheHiCacheStorage and "next_backend" in (getattr(storage_config, "extra_config", None) or {}):
            from .sglang_chain import ChainedHiCacheStorage
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
        self._metrics_on = bool(getattr(storage_config, "enable_storage_metrics", False))
        self._store: Any = Store(config)  # None after close
        self.tenant = tenant_tag(config)  # the deployment's tag, folded into every namespace
        self._hold_states = holds_trailing_states(extra)  # False in SGLang's buffer_only host mode
        self._group_ns = self._group_namespace()
        self._lock = threading.Lock()
        self._pools: Dict[str, _Pool] = {}
        self._anchor: Optional[_Pool] = None
        self._whole = False  # a TRAILING_PAGES pool was seen: a prefix is usable only with its last state
        self._pending: List[Tuple[_Pool, List[str], Any, int]] = []  # states waiting for their page's KV
        self._pending_lock = threading.Lock()
        self.states_dropped = 0  # states not written: their page's KV was not stored
        self._regions: List[Tuple[int, int]] = []  # registered [start, end)
        self._metrics: Dict[str, List[float]] = {"prefetch_pgs": [], "backup_pgs": [], "prefetch_bandwidth": [],
                                                 "backup_bandwidth": []}
        self._metrics_lock = threading.Lock()
        st = self._store.stats()
        logger.info("l3cache: HiCache storage backend: %s, %d objects, %.1f GiB, engine %s, lease %.1f s",
                    config if isinstance(config, str) else "inline config", st["objects"],
                    st["capacity_bytes"] / 2**30, st["engine"], self.lease_seconds)

    # ---- naming -----------------------------------------------------------

    def _per_rank(self, pool_name: str) -> bool:
        """Whether each TP rank stores its own object of a page of the pool
        (not an MLA model's replicated KV, which rank 0 alone writes)."""
        return not self.storage_config.is_mla_model or pool_name in _RANK_SHARDED_IN_MLA

    def _rank_suffix(self, pool_name: str) -> str:
        cfg = self.storage_config
        parts = [_clean(cfg.model_name or "model")]
        if self._per_rank(pool_name):
            parts.append("tp%dof%d" % (cfg.tp_rank, cfg.tp_size))
        if getattr(cfg, "pp_size", 1) > 1:
            parts.append("pp%dof%d" % (cfg.pp_rank, cfg.pp_size))
        if getattr(cfg, "attn_cp_size", 1) > 1:
            parts.append("cp%dof%d" % (cfg.attn_cp_rank, cfg.attn_cp_size))
        return "-".join(parts)

    def _namespace(self, pool: Any, pool_name: str) -> str:
        """The prefix of a pool's objects. The KV pool's is what the v1
        calls have always used, so v1 and v2 name a KV page alike."""
        dtype = str(getattr(pool, "dtype", "unknown")).replace("torch.", "")
        tag = "" if pool_name == _KV else "-" + _clean(pool_name)
        text = "sgl-%s%s-%s-%s-p%d" % (self._rank_suffix(pool_name), tag, _clean(dtype),
                                       _clean(getattr(pool, "layout", "none")), int(pool.page_size))
        text = salted(text, self.tenant)
        if len(text) > 200:  # a namespace is at most 255 bytes: keep it short, still unique
            text = "sgl-" + hashlib.sha256(text.encode()).hexdigest()
        return text + "_"

    # ---- page groups --------------------------------------------------------

    def _group_namespace(self) -> str:
        """What names a page alike on every rank and in every pool: the
        model and the parallel sizes, not the TP, PP or CP rank, the pool,
        its dtype or layout."""
        cfg = self.storage_config
        return salted("sgl-%s-tp%d-pp%d-cp%d" % (_clean(cfg.model_name or "model"), int(cfg.tp_size),
                                                 int(getattr(cfg, "pp_size", 1) or 1),
                                                 int(getattr(cfg, "attn_cp_size", 1) or 1)), self.tenant) + "_"

    def _group_objects(self) -> int:
        """The objects of a whole page: per registered pool, one per TP
        rank (one for an MLA model's replicated KV), times the PP and CP
        ranks. A TRAILING_PAGES pool counts though only some pages have its
        object (the write budget then charges a page a little more)."""
        cfg = self.storage_config
        with self._lock:
            names = list(self._pools)
        per_page = sum(int(cfg.tp_size) if self._per_rank(name) else 1 for name in names)
        return per_page * int(getattr(cfg, "pp_size", 1) or 1) * int(getattr(cfg, "attn_cp_size", 1) or 1)

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
        if any(_trailing(t) for t in transfers):
            self._whole = True

    # ---- Host pools ---------------------------------------------------------

    def _check_pool(self, pool: Any, pool_name: str) -> None:
        """Refuse, with a message that says why, what cannot be stored."""
        layout = getattr(pool, "layout", None)
        if layout not in _SUPPORTED_LAYOUTS:
            raise ValueError(
                "l3cache: Host pool %r has layout %r, which is not supported: a page must be contiguous "
                "per range; start SGLang with --hicache-mem-layout page_first_direct (or page_first)"
                % (pool_name, layout))
        if int(getattr(pool, "dcp_size", 1) or 1) > 1:
            raise ValueError("l3cache: Host pool %r is decode-context-parallel (dcp_size %d): SGLang's L3 "
                             "page paths are not DCP-aware; run HiCache with DCP on L1/L2 only"
                             % (pool_name, pool.dcp_size))
        if not _tensors_of(pool):
            raise ValueError(
                "l3cache: Host pool %r has no Host buffer (kv_buffer is None: an MLA dummy pool of a "
                "non-source rank, or a destroyed pool); this rank cannot read or write L3 pages"
                % pool_name)
        import torch
        try:
            pool.get_page_buffer_meta(torch.arange(int(pool.page_size), dtype=torch.int64))
        except NotImplementedError as e:  # MXFP8 pools: scales live outside the buffer
            raise ValueError("l3cache: Host pool %r does not expose its pages for L3 storage: %s"
                             % (pool_name, e)) from e

    def _register(self, pool: Any, pool_name: str) -> _Pool:
        """Check a pool, add its buffers to the store's Host regions, and
        keep it under its name."""
        self._check_pool(pool, pool_name)
        spans = [(int(t.data_ptr()), int(t.data_ptr()) + int(t.numel() * t.element_size()))
                 for t in _tensors_of(pool)]
        entry = _Pool(pool_name, pool, self._namespace(pool, pool_name))
        with self._lock:
            regions = _merge(self._regions + spans)
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
        self._anchor = self._register(mem_pool_host, _KV)
        self.mem_pool_host = mem_pool_host

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        """Take one of a hybrid model's Host pools under its PoolName."""
        name = _pool_name(host_pool_name)
        self._register(host_pool, name)
        if hasattr(_Base, "register_mem_host_pool_v2"):
            _Base.register_mem_host_pool_v2(self, host_pool, host_pool_name)

    def _span(self) -> Tuple[int, int]:
        """The span of every registered region: batches' host."""
        return self._regions[0][0], self._regions[-1][1] - self._regions[0][0]

    def _ranges(self, pool: _Pool, host_indices: Any, n: int) -> Tuple[List[int], List[int], int]:
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

    def _io(self, put: bool, pool: _Pool, keys: Sequence[str], host_indices: Any) -> List[bool]:
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
        self._note("backup" if put else "prefetch", ok, sizes, per_key, start)
        return ok

    # ---- the v1 zero-copy interface ---------------------------------------

    def _lease(self, pool: _Pool, keys: Sequence[str]) -> List[bool]:
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
        return self._guarded(lambda: self._io(False, self._need_anchor(), keys, host_indices), len(keys), "get")

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Store each KV page from its Host slots (create-only); one bool per key."""
        ok = self._guarded(lambda: self._io(True, self._need_anchor(), keys, host_indices), len(keys), "set")
        self._settle_pending(keys, ok)
        return ok

    def _need_anchor(self) -> _Pool:
        if self._anchor is None:
            raise ValueError("l3cache: register_mem_pool_host must come before any I/O")
        return self._anchor

    @staticmethod
    def _guarded(call: Any, n: int, what: str) -> List[bool]:
        try:
            return call()
        except Exception as e:
            logger.error("l3cache: batch %s of %d pages failed, reported as failed pages: %s", what, n, e)
            return [False] * n

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
        if _hs is not None and hasattr(_hs, "PoolTransferResult"):
            return _hs.PoolTransferResult(final, hits)
        return _Result(final, hits)

    def _exists_v2(self, keys: List[str], transfers: List[Any]) -> Tuple[int, Dict[str, int]]:
        found = self._lease(self._need_anchor(), keys)
        kv = found.index(False) if False in found else len(found)
        hits: Dict[str, int] = {_KV: kv} if kv else {}
        final = kv
        for t in transfers:
            if final == 0:
                break
            name = _pool_name(t.name)
            pool = self._pools.get(name)
            if pool is None:
                logger.error("l3cache: pool %r was never registered: no hit", name)
                return 0, {}
            have = self._store.batch_exists(pool.keys(keys[:kv]))
            if _trailing(t):
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
            self._drop_pending()  # a new backup: the last one's state never met its last page
        by_name = {_pool_name(t.name): t for t in transfers if getattr(t, "indices_from_pool", None) is None}
        for t in transfers:
            keys = list(t.keys or [])
            results[t.name] = self._guarded(lambda: self._transfer(put, t, keys, by_name), len(keys),
                                            "set_v2" if put else "get_v2")
        return results

    def _transfer(self, put: bool, t: Any, keys: List[str], by_name: Dict[str, Any]) -> List[bool]:
        name = _pool_name(t.name)
        pool = self._pools.get(name)
        if pool is None:
            raise ValueError("pool %r was never registered (register_mem_host_pool_v2)" % name)
        indices = t.host_indices
        source = getattr(t, "indices_from_pool", None)
        if indices is None and source is not None and _pool_name(source) in by_name:
            indices = by_name[_pool_name(source)].host_indices  # a sidecar takes its source's slots
        if indices is None or int(indices.numel()) != len(keys) * pool.page_size:
            raise ValueError("pool %r: %d keys need %d host indices, got %s" % (
                name, len(keys), len(keys) * pool.page_size, None if indices is None else int(indices.numel())))
        if (put and keys and _trailing(t) and self._writes_kv() and self._hold_states
                and not self._kv_stored(keys[-1])):
            self._ranges(pool, indices, len(keys))  # (its ranges checked now, as a put would)
            with self._pending_lock:
                self._pending.append((pool, keys, indices, threading.get_ident()))
            return [True] * len(keys)  # taken: written after its page's KV (_settle_pending)
        return self._io(put, pool, keys, indices)

    def _kv_stored(self, key: str) -> bool:
        """Whether the KV page a state ends with is stored already (then the
        state is written at once: nothing to wait for; SGLang's buffer_only
        pipeline writes a node's KV in an operation before its state's)."""
        return bool(self._store.batch_exists(self._need_anchor().keys([key]))[0])

    # ---- a trailing state waits for its page's KV ---------------------------

    def _writes_kv(self) -> bool:
        """Whether this rank's backups write the KV pages after their
        states (not an MLA model's rank other than 0: SGLang skips its KV
        backup, and reads the state's result)."""
        cfg = self.storage_config
        return not (cfg.is_mla_model and int(cfg.tp_rank) != 0)

    def _drop_pending(self) -> None:
        with self._pending_lock:
            self.states_dropped += sum(len(p[1]) for p in self._pending)
            self._pending = []

    def _settle_pending(self, keys: Sequence[str], ok: Sequence[bool]) -> None:
        """After a KV put: the waiting states whose page is the batch's last are
        written when the batch's pages were stored and dropped when not
        (the prefix is usable only up to a page with its state, so neither
        is of use without the other); a failed batch ends its backup
        (SGLang stops there), and the state with it. This follows SGLang's
        backup order (HybridCacheController._page_backup: the state's
        batch_set_v2 first, keyed by the node's last page, then the node's
        batch_set_v1 calls, one thread, the state's Host slot locked until
        the backup is acknowledged); the stand-in's controller checks it."""
        me = threading.get_ident()  # the backup thread's own states: a prefetch's puts settle none
        with self._pending_lock:
            last = keys[-1] if keys else None
            mine = [p for p in self._pending if p[3] == me]
            if not mine or last is None or (all(ok) and all(p[1][-1] != last for p in mine)):
                return
            self._pending = [p for p in self._pending if p[3] != me]
        for pool, state_keys, indices, _ in mine:  # (every pool's state of one node)
            if state_keys[-1] == last and all(ok):
                self._guarded(lambda: self._io(True, pool, state_keys, indices), len(state_keys), "set_v2")
            else:
                with self._pending_lock:
                    self.states_dropped += len(state_keys)

    # ---- the abstract (copying) interface ---------------------------------

    def _page_split(self, nbytes: int) -> Tuple[List[int], List[int]]:
        """The ranges of a flat KV page of `nbytes`: the pool's per-page
        range sizes, back to back."""
        import torch
        _, sizes = self._need_anchor().host.get_page_buffer_meta(
            torch.arange(self._need_anchor().page_size, dtype=torch.int64))
        sizes = [int(s) for s in sizes]
        if sum(sizes) != nbytes:
            sizes = [nbytes]
        offsets, at = [], 0
        for s in sizes:
            offsets.append(at)
            at += s
        return offsets, sizes

    def _tensor_io(self, put: bool, keys: Sequence[str], tensors: Sequence[Any]) -> List[bool]:
        ok: List[bool] = []
        for key, t in zip(keys, tensors):
            t = t.contiguous() if put else t
            nbytes = t.numel() * t.element_size()
            offsets, sizes = self._page_split(nbytes)
            args = (self._need_anchor().keys([key]), t.data_ptr(), nbytes, offsets, sizes, len(sizes))
            if put:
                ok += self._store.batch_put_from_v(*args, **self._hints([key]))
            else:
                ok += self._store.batch_get_into_v(*args)
        return ok

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        out = self.batch_get([key], [target_location] if target_location is not None else None)
        return out[0]

    def batch_get(self, keys: List[str], target_locations: Any = None, target_sizes: Any = None) -> List[Any]:
        if target_locations is None:
            target_locations = [self._need_anchor().host.get_dummy_flat_data_page() for _ in keys]
        for t in target_locations:
            if not t.is_contiguous():
                raise ValueError("l3cache: a target location must be contiguous")
        ok = self._guarded(lambda: self._tensor_io(False, keys, target_locations), len(keys), "get")
        return [t if hit else None for t, hit in zip(target_locations, ok)]

    def set(self, key: str, value: Any = None, target_location: Any = None, target_sizes: Any = None) -> bool:
        return self.batch_set([key], [value])

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        if values is None:
            return False
        ok = self._guarded(lambda: self._tensor_io(True, keys, values), len(keys), "set")
        self._settle_pending(keys, ok)
        return all(ok)

    def exists(self, key: str) -> bool:
        return self._store.batch_exists(self._need_anchor().keys([key]))[0]

    # ---- what a chained backend uses ----------------------------------------

    def keep(self, keys: List[str], host_indices: Any, pool_name: Any = _KV) -> List[bool]:
        """Store pages of a registered pool from their Host slots now
        (create-only; a state is never held): what a chained backend keeps
        of the pages it read from the next tier. A bool per key."""
        pool = self._pools.get(_pool_name(pool_name))
        if pool is None:
            return [False] * len(keys)
        return self._guarded(lambda: self._io(True, pool, keys, host_indices), len(keys), "keep")

    def store_key(self, key: str) -> str:
        """The key l3cache stores SGLang's KV page `key` under (its pool's
        namespace and the key): what the removal feed names by identity."""
        return self._need_anchor().prefix + key

    def removal_feed(self, start: str = "now") -> Any:
        """A reader of the store's removal feed (Store.removal_feed)."""
        return self._store.removal_feed(start)

    # ---- metrics and housekeeping ------------------------------------------

    def _note(self, kind: str, ok: List[bool], sizes: List[int], per_key: int, start: float) -> None:
        if not self._metrics_on:
            return
        seconds = max(time.monotonic() - start, 1e-9)
        nbytes = sum(s for i, s in enumerate(sizes) if ok[i // per_key])
        with self._metrics_lock:
            pages, bandwidth = self._metrics[kind + "_pgs"], self._metrics[kind + "_bandwidth"]
            if len(pages) < _MAX_SAMPLES:
                pages.append(sum(ok))
                bandwidth.append(nbytes / seconds / 1e9)

    def get_stats(self) -> Any:
        """Pages and GB/s of the gets (prefetch) and puts (backup) since the
        last call, as SGLang's StorageMetrics; None when metrics are off or
        SGLang is not there."""
        cls = _storage_metrics_class() if self._metrics_on else None
        if cls is None:
            return None
        with self._metrics_lock:
            snap = {k: list(v) for k, v in self._metrics.items()}
            for v in self._metrics.values():
                v.clear()
        return cls(**snap)

    def clear(self) -> None:
        """Delete the pages of every registered pool of this model, rank and
        layout (others stay)."""
        for pool in list(self._pools.values()):
            self._store.remove_by_prefix(pool.prefix)

    def close(self) -> None:
        """Unregister the pools, write the checkpoint, release the store."""
        self._drop_pending()
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


class _Result:
    """PoolTransferResult's fields, where SGLang is not importable."""

    def __init__(self, kv_hit_pages: int, extra_pool_hit_pages: Dict[str, int]):
        self.kv_hit_pages = kv_hit_pages
        self.extra_pool_hit_pages = extra_pool_hit_pages
