"""l3cache in front of another SGLang storage backend: the node's NVMe
first, then a shared tier (Mooncake Store, 3FS, NIXL, a shared
filesystem), built by SGLang's own StorageBackendFactory::

    --hicache-storage-backend dynamic
    --hicache-storage-backend-extra-config '{"backend_name": "l3cache",
        "module_path": "l3cache.sglang", "class_name": "L3CacheHiCacheStorage",
        "interface_v1": 1, "l3cache_config": "/etc/l3cache.json",
        "next_backend": {"backend_name": "file"}, "chain_mode": "write_through"}'

``next_backend`` names the next backend as SGLang's factory knows it
(``file``, ``mooncake``, ``hf3fs``, ``nixl``...; or a dynamic backend's
own ``module_path`` and ``class_name``), with that backend's own extra
config beside the name; it is built with this rank's storage config when
SGLang hands over the Host pool, as SGLang builds a backend, and given the
same pools.

- Exists: l3cache answers first, the next backend for the pages after the
  first l3cache miss: the count of leading pages found in either.
- Reads: what l3cache misses is read from the next backend into the same
  Host slots and then stored in l3cache (kept: the next read is local).
- Writes: ``write_through`` (default) stores in both within the backup
  call; ``write_back`` stores in l3cache and copies the pages to the next
  backend later, from l3cache (writeback says what that
  guarantees). A hybrid model's other pools are written through.
- Keys in the next backend are SGLang's, with the deployment's tenant tag
  folded in (keys.salted) when the l3cache config sets one.
- ``clear`` clears l3cache's pages only: the next tier is shared.
"""

import copy
import dataclasses
import logging
import threading
from typing import Any, Dict, List, Optional

from ..keys import salted, tenant_tag
from .backend import L3CacheHiCacheStorage
from .common import Base as StorageBase
from .writeback import WriteBack

logger = logging.getLogger(__name__)

__all__ = ["ChainedHiCacheStorage"]

MODES = ("write_through", "write_back")
# Backends SGLang's controller drives through the zero-copy v1 calls (the rest by value).
_ZERO_COPY = ("hf3fs", "mooncake", "eic", "nixl", "simm", "mori", "flat_memory")


def _factory():
    from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory
    return StorageBackendFactory


def _with_extra(storage_config: Any, extra: dict) -> Any:
    """A copy of SGLang's storage config with another extra config."""
    out = copy.copy(storage_config)
    out.extra_config = extra
    return out


def _aligned_like(template: Any, align: int = 4096) -> Any:
    """A zeroed tensor of the template's dtype and length, starting on a
    page boundary."""
    import torch
    nbytes = template.numel() * template.element_size()
    raw = torch.zeros(nbytes + align, dtype=torch.uint8)
    skip = (-raw.data_ptr()) % align
    return raw[skip:skip + nbytes].view(template.dtype)


class ChainedHiCacheStorage(StorageBase):
    """l3cache, then the next backend: what ``L3CacheHiCacheStorage``
    becomes when its extra config names a ``next_backend``."""

    def __init__(self, storage_config: Any, kwargs: Optional[dict] = None) -> None:
        extra = dict(storage_config.extra_config or {})
        self._spec = dict(extra.pop("next_backend") or {})
        self.mode = str(extra.pop("chain_mode", "write_through"))
        if self.mode not in MODES:
            raise ValueError("l3cache: chain_mode is one of %s, not %r" % (", ".join(MODES), self.mode))
        if not self._spec.get("backend_name") and not self._spec.get("module_path"):
            raise ValueError("l3cache: next_backend needs \"backend_name\" (a backend SGLang's factory builds)")
        self._queue_pages = int(extra.pop("write_back_queue", 4096))
        self.storage_config = storage_config
        self.local = L3CacheHiCacheStorage(_with_extra(storage_config, extra), kwargs)
        self._tag = tenant_tag(extra.get("l3cache_config") or extra.get("l3cache"))
        self.next: Any = None
        self._zero_copy = False
        self._pools: Dict[str, Any] = {}
        self._write_back: Optional[WriteBack] = None
        self._lock = threading.Lock()
        self.counts = {"next_exists_pages": 0, "next_read_pages": 0, "next_hit_pages": 0, "kept_pages": 0,
                       "next_written_pages": 0}

    def __getattr__(self, name: str) -> Any:  # store_stats, metrics, states_dropped...: l3cache's
        if name == "local":
            raise AttributeError(name)
        return getattr(self.local, name)

    def _count(self, name: str, n: int) -> None:
        with self._lock:
            self.counts[name] += n

    # ---- building the next backend ------------------------------------------

    def _build_next(self, mem_pool_host: Any) -> None:
        spec = dict(self._spec)
        if spec.get("module_path") and spec.get("class_name"):  # a dynamic backend: its fields stay in its config
            spec.setdefault("backend_name", spec["class_name"])
            name, extra, self._zero_copy = "dynamic", spec, bool(spec.get("interface_v1", 0))
        else:
            name = spec.pop("backend_name")
            extra, self._zero_copy = spec, name in _ZERO_COPY
        self.next = _factory().create_backend(name, _with_extra(self.storage_config, extra), mem_pool_host)
        self.next.register_mem_pool_host(mem_pool_host)
        logger.info("l3cache: chained to SGLang storage backend %r (%s), %s", name, type(self.next).__name__,
                    self.mode)

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Take the Host KV pool, build the next backend, start write-back."""
        self.local.register_mem_pool_host(mem_pool_host)
        self.mem_pool_host = mem_pool_host
        self._pools["kv"] = mem_pool_host
        try:
            self._build_next(mem_pool_host)
        except Exception:
            self.local.close()
            raise
        if self.mode == "write_back":
            try:
                feed = self.local.removal_feed("now")
            except Exception as e:  # a library without the feed: reads still find lost pages
                logger.warning("l3cache: no removal feed (%s); write-back finds evicted pages when it reads", e)
                feed = None
            self._write_back = WriteBack(self._read_local, self._write_next_values, feed, self._queue_pages,
                                         store_key=self.local.store_key)

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        """Take one of a hybrid model's pools, in both tiers."""
        self.local.register_mem_host_pool_v2(host_pool, host_pool_name)
        self._pools[str(getattr(host_pool_name, "value", host_pool_name))] = host_pool
        if hasattr(StorageBase, "register_mem_host_pool_v2"):
            StorageBase.register_mem_host_pool_v2(self, host_pool, host_pool_name)
        if self.next is not None and hasattr(self.next, "register_mem_host_pool_v2"):
            self.next.register_mem_host_pool_v2(host_pool, host_pool_name)

    # ---- moving pages through the next backend -------------------------------

    def _nkeys(self, keys: List[str]) -> List[str]:
        return [salted(k, self._tag) for k in keys] if self._tag else list(keys)

    def _page_slots(self, host_indices: Any, i: int) -> Any:
        ps = int(self.mem_pool_host.page_size)
        return host_indices[i * ps:(i + 1) * ps]

    def _next_read(self, keys: List[str], slots: List[Any]) -> List[bool]:
        """Read KV pages from the next backend into their Host slots."""
        import torch
        self._count("next_read_pages", len(keys))
        host = self.mem_pool_host
        try:
            if self._zero_copy:
                ok = [bool(x) for x in self.next.batch_get_v1(self._nkeys(keys), torch.cat(slots))]
            else:
                pages = self.next.batch_get(self._nkeys(keys), [host.get_dummy_flat_data_page() for _ in keys])
                ok = []
                for page, idx in zip(pages or [None] * len(keys), slots):
                    if page is not None:
                        host.set_from_flat_data_page(int(idx[0]), page)
                    ok.append(page is not None)
        except Exception as e:
            logger.error("l3cache: reading %d pages from the next backend failed: %s", len(keys), e)
            ok = [False] * len(keys)
        self._count("next_hit_pages", sum(ok))
        return ok

    def _next_write(self, keys: List[str], host_indices: Any) -> List[bool]:
        """Write KV pages to the next backend from their Host slots."""
        try:
            if self._zero_copy:
                ok = [bool(x) for x in self.next.batch_set_v1(self._nkeys(keys), host_indices)]
            else:
                host = self.mem_pool_host
                values = [host.get_data_page(int(self._page_slots(host_indices, i)[0]), flat=True)
                          for i in range(len(keys))]
                ok = [bool(self.next.batch_set(self._nkeys(keys), values))] * len(keys)
        except Exception as e:
            logger.error("l3cache: writing %d pages to the next backend failed: %s", len(keys), e)
            ok = [False] * len(keys)
        self._count("next_written_pages", sum(ok))
        return ok

    def _read_local(self, keys: List[str]) -> List[Any]:
        """Write-back's reads: pages from l3cache into buffers of its own
        (page-aligned, so that the store reads them with O_DIRECT)."""
        return self.local.batch_get(keys, [_aligned_like(self.mem_pool_host.get_dummy_flat_data_page())
                                           for _ in keys])

    def _write_next_values(self, keys: List[str], values: List[Any]) -> bool:
        ok = bool(self.next.batch_set(self._nkeys(keys), values))
        self._count("next_written_pages", len(keys) if ok else 0)
        return ok

    # ---- the v1 zero-copy interface ---------------------------------------------

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """Leading pages found: in l3cache, then in the next backend."""
        n = self.local.batch_exists(keys, extra_info)
        if n >= len(keys) or self.next is None:
            return n
        try:
            more = int(self.next.batch_exists(self._nkeys(keys[n:]), extra_info) or 0)
        except Exception as e:
            logger.error("l3cache: the next backend's exists failed, reported as a miss: %s", e)
            more = 0
        self._count("next_exists_pages", more)
        return n + more

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Read each page from l3cache, else from the next backend (then
        keep it in l3cache); a bool per key."""
        ok = list(self.local.batch_get_v1(keys, host_indices, extra_info))
        missing = [i for i, hit in enumerate(ok) if not hit]
        if not missing or self.next is None:
            return ok
        slots = [self._page_slots(host_indices, i) for i in missing]
        got = self._next_read([keys[i] for i in missing], slots)
        import torch
        landed = [(keys[i], s) for i, s, hit in zip(missing, slots, got) if hit]
        if landed:
            kept = self.local.keep([k for k, _ in landed], torch.cat([s for _, s in landed]))
            self._count("kept_pages", sum(kept))
        for i, hit in zip(missing, got):
            ok[i] = hit
        return ok

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Store each page in l3cache and (write_through) the next backend,
        or queue it for the next backend (write_back); a page is stored
        when either tier has it."""
        ok = list(self.local.batch_set_v1(keys, host_indices, extra_info))
        if self.next is None:
            return ok
        if self._write_back is not None:
            self._write_back.add([k for k, hit in zip(keys, ok) if hit])
            return ok
        nxt = self._next_write(keys, host_indices)
        return [a or b for a, b in zip(ok, nxt)]

    # ---- the v2 (hybrid pools) interface -------------------------------------------

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[List[Any]] = None,
                        extra_info: Any = None) -> Any:
        """l3cache's usable prefix, or the next backend's where longer."""
        result = self.local.batch_exists_v2(keys, pool_transfers, extra_info)
        if result.kv_hit_pages >= len(keys) or self.next is None:
            return result
        try:
            other = self.next.batch_exists_v2(self._nkeys(keys), pool_transfers, extra_info)
        except Exception as e:  # NotImplementedError: a backend without v2
            logger.debug("l3cache: the next backend's exists_v2: %s", e)
            return result
        return other if other.kv_hit_pages > result.kv_hit_pages else result

    def batch_get_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        """Each pool's pages from l3cache, else from the next backend (kept)."""
        results = self.local.batch_get_v2(transfers, extra_info)
        if self.next is None:
            return results
        for t in transfers:
            ok = list(results.get(t.name, []))
            pool = self._pools.get(str(getattr(t.name, "value", t.name)))
            missing = [i for i, hit in enumerate(ok) if not hit]
            if not missing or pool is None or t.host_indices is None:
                continue
            ps = int(getattr(pool, "page_size", 1) or 1)
            import torch
            slots = torch.cat([t.host_indices[i * ps:(i + 1) * ps] for i in missing])
            keys = [t.keys[i] for i in missing]
            try:
                got = self.next.batch_get_v2([dataclasses.replace(t, keys=self._nkeys(keys), host_indices=slots)])
                got = list(next(iter(got.values()), [False] * len(keys)))
            except Exception as e:
                logger.debug("l3cache: the next backend's get_v2: %s", e)
                continue
            landed = [j for j, hit in enumerate(got) if hit]
            if landed:
                kept = self.local.keep([keys[j] for j in landed],
                                       torch.cat([slots[j * ps:(j + 1) * ps] for j in landed]), t.name)
                self._count("kept_pages", sum(kept))
            for j, i in enumerate(missing):
                ok[i] = bool(got[j])
            results[t.name] = ok
        return results

    def batch_set_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        """Each pool's pages in l3cache and in the next backend (written
        through in both modes)."""
        results = self.local.batch_set_v2(transfers, extra_info)
        if self.next is None:
            return results
        try:
            nxt = self.next.batch_set_v2([dataclasses.replace(t, keys=self._nkeys(list(t.keys or [])))
                                          for t in transfers], extra_info)
        except Exception as e:
            logger.debug("l3cache: the next backend's set_v2: %s", e)
            return results
        for t in transfers:
            mine, theirs = results.get(t.name, []), nxt.get(t.name, [])
            if len(mine) == len(theirs):
                results[t.name] = [bool(a or b) for a, b in zip(mine, theirs)]
        return results

    # ---- the abstract (copying) interface --------------------------------------

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        return self.batch_get([key], [target_location] if target_location is not None else None)[0]

    def batch_get(self, keys: List[str], target_locations: Any = None, target_sizes: Any = None) -> List[Any]:
        if target_locations is None:
            target_locations = [self.mem_pool_host.get_dummy_flat_data_page() for _ in keys]
        out = list(self.local.batch_get(keys, target_locations))
        missing = [i for i, page in enumerate(out) if page is None]
        if missing and self.next is not None:
            got = self.next.batch_get(self._nkeys([keys[i] for i in missing]),
                                      [target_locations[i] for i in missing]) or [None] * len(missing)
            for i, page in zip(missing, got):
                out[i] = page
            found = [(keys[i], page) for i, page in zip(missing, got) if page is not None]
            if found:
                self.local.batch_set([k for k, _ in found], [p for _, p in found])
                self._count("kept_pages", len(found))
        return out

    def set(self, key: str, value: Any = None, target_location: Any = None, target_sizes: Any = None) -> bool:
        return self.batch_set([key], [value])

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        ok = self.local.batch_set(keys, values)
        if self.next is None or values is None:
            return ok
        if self._write_back is not None:
            if ok:
                self._write_back.add(list(keys))
            return ok
        return self._write_next_values(list(keys), list(values)) or ok

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    # ---- housekeeping ------------------------------------------------------------

    def chain_stats(self) -> Dict[str, int]:
        """Pages asked of, read from, kept from and written to the next
        backend, and write-back's counts (queued, written, lost, dropped,
        failed)."""
        with self._lock:
            out = dict(self.counts)
        if self._write_back is not None:
            out.update({"write_back_" + k: v for k, v in self._write_back.counts.items()})
            out["write_back_pending"] = self._write_back.pending()
        return out

    def flush(self, timeout: float = 30.0) -> bool:
        """Write-back: wait until the queued pages were written or counted."""
        return self._write_back.flush(timeout) if self._write_back is not None else True

    def get_stats(self) -> Any:
        return self.local.get_stats()

    def clear(self) -> None:
        """Clear l3cache's pages of this backend's pools (the next tier is
        shared: left as it is)."""
        self.local.clear()

    def close(self) -> None:
        """Flush write-back, close the next backend, then l3cache."""
        if self._write_back is not None:
            self._write_back.close()
            self._write_back = None
        if self.next is not None and hasattr(self.next, "close"):
            try:
                self.next.close()
            except Exception as e:
                logger.warning("l3cache: closing the next backend: %s", e)
        self.local.close()
