"""l3cache as SGLang HiCache's L3 storage backend, loaded by SGLang's
``dynamic`` backend with no change to SGLang::

    --hicache-storage-backend dynamic
    --hicache-storage-backend-extra-config '{"backend_name": "l3cache",
        "module_path": "l3cache.sglang", "class_name": "L3CacheHiCacheStorage",
        "interface_v1": 1, "l3cache_config": "/etc/l3cache.json"}'

A page is ONE l3cache object even when its bytes are two ranges of the
Host pool (an MHA page's K and V): one header and one crc32c over both,
each range moved by fixed-buffer I/O straight from the registered pool.
``batch_exists`` leases the pages it finds (``lease_seconds``, default 10)
so that eviction keeps them until the ``batch_get_v1`` that follows.

Keys are namespaced as SGLang's own backends do (model; TP rank and size
unless MLA; PP; attention CP) plus dtype, layout and page size, so that two
models or layouts never share a page. Every call goes into C through ctypes,
which releases the GIL; the store is thread-safe and shared by the ranks'
processes.
"""

import hashlib
import logging
import re
import threading
import time

from . import L3Error, Store

logger = logging.getLogger(__name__)

try:  # SGLang present: subclass its real interface (the factory checks it).
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as _Base
except ImportError:  # pragma: no cover - exercised only without SGLang
    class _Base:  # the same methods, so that the class works standalone
        pass

__all__ = ["L3CacheHiCacheStorage"]

_SUPPORTED_LAYOUTS = ("page_first", "page_first_direct", "page_head")


def _clean(text):
    """Namespace-safe text: no '_' (it ends an l3cache namespace) or '/'."""
    return re.sub(r"[^A-Za-z0-9.+-]", "-", str(text))


class L3CacheHiCacheStorage(_Base):
    """SGLang's HiCacheStorage over an l3cache store: constructed by the
    factory as ``cls(storage_config, kwargs)``, then given the Host pool by
    ``register_mem_pool_host``."""

    def __init__(self, storage_config, kwargs=None):
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        config = extra.get("l3cache_config") or extra.get("l3cache")
        if not config:
            raise ValueError(
                "l3cache: the extra config needs \"l3cache_config\" (the path of an l3cache JSON "
                "config) or \"l3cache\" (the config itself)")
        self.lease_seconds = float(extra.get("lease_seconds", 10.0))
        self.storage_config = storage_config
        self._suffix = self._rank_suffix(storage_config)
        self._store = Store(config)
        self._lock = threading.Lock()
        self._pool = None
        self._prefix = None
        self._base = 0
        self._len = 0
        self._page_sizes = None
        self._metrics = {"prefetch_pgs": [], "backup_pgs": [], "prefetch_bandwidth": [],
                         "backup_bandwidth": []}
        self._metrics_lock = threading.Lock()
        st = self._store.stats()
        logger.info("l3cache: HiCache storage backend: %s, %d objects, %.1f GiB, engine %s, lease %.1f s",
                    config if isinstance(config, str) else "inline config", st["objects"],
                    st["capacity_bytes"] / 2**30, st["engine"], self.lease_seconds)

    # ---- naming -----------------------------------------------------------

    @staticmethod
    def _rank_suffix(cfg):
        parts = [_clean(cfg.model_name or "model")]
        if not cfg.is_mla_model:
            parts.append("tp%dof%d" % (cfg.tp_rank, cfg.tp_size))
        if getattr(cfg, "pp_size", 1) > 1:
            parts.append("pp%dof%d" % (cfg.pp_rank, cfg.pp_size))
        if getattr(cfg, "attn_cp_size", 1) > 1:
            parts.append("cp%dof%d" % (cfg.attn_cp_rank, cfg.attn_cp_size))
        return "-".join(parts)

    def _namespace(self, pool):
        dtype = str(getattr(pool, "dtype", "unknown")).replace("torch.", "")
        text = "sgl-%s-%s-%s-p%d" % (self._suffix, _clean(dtype), _clean(pool.layout), int(pool.page_size))
        if len(text) > 200:  # a namespace is at most 255 bytes: keep it short, still unique
            text = "sgl-" + hashlib.sha256(text.encode()).hexdigest()
        return text + "_"

    def _keys(self, keys):
        if self._prefix is None:
            raise L3Error("L3_EINVAL", "l3cache: register_mem_pool_host must come before any I/O")
        return [self._prefix + k for k in keys]

    # ---- the Host pool ----------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host):
        """Take SGLang's Host KV pool: refuse layer_first, register its whole
        kv_buffer with the store for fixed-buffer I/O, learn a page's ranges."""
        layout = getattr(mem_pool_host, "layout", None)
        if layout not in _SUPPORTED_LAYOUTS:
            raise ValueError(
                "l3cache: Host pool layout %r is not supported: a page must be contiguous per K/V "
                "range; start SGLang with --hicache-mem-layout page_first_direct (or page_first)"
                % (layout,))
        buf = mem_pool_host.kv_buffer
        base, length = int(buf.data_ptr()), int(buf.numel() * buf.element_size())
        import torch
        probe = torch.arange(mem_pool_host.page_size, dtype=torch.int64)
        ptrs, sizes = mem_pool_host.get_page_buffer_meta(probe)
        with self._lock:
            self._store.register_host(base, length)
            self._pool, self._base, self._len = mem_pool_host, base, length
            self._page_sizes = [int(x) for x in sizes]
            self._prefix = self._namespace(mem_pool_host)
        if hasattr(_Base, "register_mem_pool_host"):
            _Base.register_mem_pool_host(self, mem_pool_host)
        self.mem_pool_host = mem_pool_host
        logger.info("l3cache: registered the Host pool (%d bytes, layout %s, %d range(s) of %s bytes "
                    "per page), namespace %s", length, layout, len(sizes), sizes[0] if sizes else 0,
                    self._prefix[:-1])

    def _ranges(self, host_indices, n):
        ptrs, sizes = self._pool.get_page_buffer_meta(host_indices)
        if n == 0 or len(ptrs) % n or len(ptrs) != len(sizes):
            raise ValueError("l3cache: %d pages got %d pointers and %d sizes from the Host pool"
                             % (n, len(ptrs), len(sizes)))
        offsets = []
        for p, s in zip(ptrs, sizes):
            off = int(p) - self._base
            if off < 0 or off + int(s) > self._len:
                raise ValueError("l3cache: a page range lies outside the registered kv_buffer")
            offsets.append(off)
        return offsets, [int(s) for s in sizes], len(ptrs) // n

    # ---- the v1 zero-copy interface ---------------------------------------

    def batch_exists(self, keys, extra_info=None):
        """How many pages from the start are stored; those found are leased
        until the get that follows."""
        if not keys:
            return 0
        found = self._store.batch_lease(self._keys(keys), self.lease_seconds)
        return found.index(False) if False in found else len(found)

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        """Read each page into its Host slots; one bool per key."""
        if not keys:
            return []
        offsets, sizes, per_key = self._ranges(host_indices, len(keys))
        start = time.monotonic()
        ok = self._store.batch_get_into_v(self._keys(keys), self._base, self._len, offsets, sizes, per_key)
        self._note("prefetch", ok, sizes, per_key, start)
        return ok

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        """Store each page from its Host slots (create-only); one bool per key."""
        if not keys:
            return []
        offsets, sizes, per_key = self._ranges(host_indices, len(keys))
        start = time.monotonic()
        ok = self._store.batch_put_from_v(self._keys(keys), self._base, self._len, offsets, sizes, per_key)
        self._note("backup", ok, sizes, per_key, start)
        return ok

    def _note(self, kind, ok, sizes, per_key, start):
        pages = sum(ok)
        seconds = max(time.monotonic() - start, 1e-9)
        nbytes = sum(s for i, s in enumerate(sizes) if ok[i // per_key])
        with self._metrics_lock:
            self._metrics[kind + "_pgs"].append(pages)
            self._metrics[kind + "_bandwidth"].append(nbytes / seconds / 1e9)

    # ---- the abstract (copying) interface ---------------------------------

    def _page_split(self, nbytes):
        """The ranges of a flat page of `nbytes`: the pool's per-page range
        sizes, back to back."""
        sizes = self._page_sizes or [nbytes]
        if sum(sizes) != nbytes:
            sizes = [nbytes]
        offsets, at = [], 0
        for s in sizes:
            offsets.append(at)
            at += s
        return offsets, sizes

    def _tensor_io(self, fn, keys, tensors):
        ok = []
        for key, t in zip(keys, tensors):
            t = t.contiguous() if fn is self._store.batch_put_from_v else t
            nbytes = t.numel() * t.element_size()
            offsets, sizes = self._page_split(nbytes)
            ok += fn(self._keys([key]), t.data_ptr(), nbytes, offsets, sizes, len(sizes))
        return ok

    def get(self, key, target_location=None, target_sizes=None):
        out = self.batch_get([key], [target_location] if target_location is not None else None)
        return out[0]

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        if target_locations is None:
            target_locations = [self._pool.get_dummy_flat_data_page() for _ in keys]
        for t in target_locations:
            if not t.is_contiguous():
                raise ValueError("l3cache: a target location must be contiguous")
        ok = self._tensor_io(self._store.batch_get_into_v, keys, target_locations)
        return [t if hit else None for t, hit in zip(target_locations, ok)]

    def set(self, key, value=None, target_location=None, target_sizes=None):
        return self.batch_set([key], [value])

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        if values is None:
            return False
        return all(self._tensor_io(self._store.batch_put_from_v, keys, values))

    def exists(self, key):
        return self._store.batch_exists(self._keys([key]))[0]

    # ---- housekeeping -----------------------------------------------------

    def clear(self):
        """Delete this model's, rank's and layout's pages (others stay)."""
        if self._prefix is not None:
            self._store.remove_by_prefix(self._prefix)

    def close(self):
        """Unregister the pool, write the checkpoint, release the store."""
        with self._lock:
            if self._store is not None:
                try:
                    self._store.register_host(0, 0)
                finally:
                    self._store.close()
                self._store = None

    def get_stats(self):
        """Pages and GB/s of the gets (prefetch) and puts (backup) since the
        last call, as SGLang's StorageMetrics when SGLang is there."""
        with self._metrics_lock:
            snap = {k: list(v) for k, v in self._metrics.items()}
            for v in self._metrics.values():
                v.clear()
        try:
            from sglang.srt.metrics.collector import StorageMetrics
        except ImportError:
            return snap
        metrics = StorageMetrics()
        for k, v in snap.items():
            setattr(metrics, k, v)
        return metrics

    def metrics(self):
        """The store's metrics as Prometheus text exposition."""
        return self._store.metrics()

    def store_stats(self):
        """The l3cache store's own counters (objects, hits, evictions...)."""
        return self._store.stats()
