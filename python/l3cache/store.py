"""The store from Python: a huge-page Host pool (:class:`Pool`) and the
slab disk store (:class:`Store`), whose batch calls speak the KV-store
protocol of engine storage backends, and the group id the adapters give
a page's objects."""

import ctypes
import hashlib
import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ._ffi import (Config, Error, Host, IoResult, Keys, L3Error, Range, check, config_text, encode_keys,
                   host_array, load, put_hints, take_string)
from .feed import RemovalFeed

if TYPE_CHECKING:
    import numpy

__all__ = ["Pool", "Store", "group_id"]


def group_id(page: Union[str, bytes]) -> int:
    """The group id of a page (``groups=`` of the puts): a 64-bit digest
    (BLAKE2b, 8 bytes, little-endian) of what names the page alike on every
    rank and in every pool, never 0 (0 is "no group"). The adapters pass it
    so that the store admits, keeps and evicts a page's objects together."""
    raw = page.encode("utf-8") if isinstance(page, str) else bytes(page)
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little") or 1


class Pool:
    """A Host pool from ``l3_pool_alloc``: zeroed, 2 MiB-aligned memory
    advised as transparent huge pages, so that an object's range is one
    device request rather than one per 254 pages. ``array`` is a numpy view
    of it (numpy is imported only when asked for). Close it only after
    every executor or store that registered it has closed."""

    def __init__(self, nbytes: int) -> None:
        lib = load()
        err = Error()
        self.nbytes = int(nbytes)
        self.address = lib.l3_pool_alloc(self.nbytes, ctypes.byref(err))
        if not self.address:
            raise L3Error("L3_ENOMEM", err.msg.decode("utf-8", "replace"))

    @property
    def array(self) -> "numpy.ndarray":
        import numpy as np
        if not self.address:
            raise ValueError("the pool is closed")
        buf = (ctypes.c_uint8 * self.nbytes).from_address(self.address)
        return np.ctypeslib.as_array(buf)

    def close(self) -> None:
        if self.address:
            load().l3_pool_free(self.address, self.nbytes)
            self.address = None

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Store:
    """The slab disk store, opened from an l3cache config (a dict, JSON text
    or a path to a JSON file). Thread-safe; use as a context manager."""

    def __init__(self, config: Config) -> None:
        lib = load()
        self._text = config_text(config)
        handle = ctypes.c_void_p()
        err = Error()
        check(lib.l3_open_store_json(self._text.encode(), ctypes.byref(handle), ctypes.byref(err)), err)
        self._handle = handle.value
        self._store = lib.l3_slabstore_store(self._handle)
        self._owned_by = None

    def _live(self):
        if self._handle is None:
            raise L3Error("L3_ECLOSED", "the store is closed")
        return self._store

    @property
    def config_json(self) -> str:
        """The config the store was opened with, as JSON text."""
        return self._text

    def handles(self) -> Tuple[int, int]:
        """The open store's native handles, ``(l3_slabstore *, l3_store *)``,
        for the layers built on it (the executor, the asynchronous API);
        raises L3Error once it is closed."""
        return self._slabstore(), self._live()

    def give_to(self, owner: Any) -> None:
        """Hand the store to `owner` (the executor), which closes it:
        ``close`` leaves it alone from then on."""
        self._owned_by = owner

    def closed_by_owner(self) -> None:
        """The owner closed the store (the handles are gone)."""
        self._handle = None

    def _slabstore(self) -> int:
        self._live()
        assert self._handle is not None
        return self._handle

    def batch_exists(self, keys: Keys) -> List[bool]:
        """Per key, whether the store holds it."""
        lib, store = load(), self._live()
        n = len(keys)
        flags = (ctypes.c_bool * max(n, 1))()
        err = Error()
        check(lib.l3_store_batch_exists(store, encode_keys(keys), n, flags, ctypes.byref(err)), err)
        return [bool(flags[i]) for i in range(n)]

    def _batch(self, fn, keys, host_ptr, offsets, sizes, host_len):
        store = self._live()
        n = len(keys)
        if len(offsets) != n or len(sizes) != n:
            raise ValueError("keys, offsets and sizes must have one length")
        ranges = (Range * max(n, 1))(*[Range(int(o), int(s)) for o, s in zip(offsets, sizes)])
        if host_len is None:
            host_len = max((int(o) + int(s) for o, s in zip(offsets, sizes)), default=0)
        success = (ctypes.c_bool * max(n, 1))()
        failures = (ctypes.c_bool * max(n, 1))()
        result = IoResult(success, 0, failures, 0, True)
        err = Error()
        check(fn(store, encode_keys(keys), n, Host(host_ptr, host_len), ranges, ctypes.byref(result),
                 ctypes.byref(err)), err)
        return ([bool(success[i]) for i in range(n)], [bool(failures[i]) for i in range(n)],
                bool(result.retired))

    def batch_get_into(self, keys: Keys, host_ptr: int, offsets: Sequence[int], sizes: Sequence[int],
                       host_len: Optional[int] = None) -> List[bool]:
        """Read each object into [host_ptr + offset, + size); per key, whether
        it arrived whole (a miss or a corrupt object is False)."""
        return self.batch_get_into_detailed(keys, host_ptr, offsets, sizes, host_len)["success"]

    def batch_get_into_detailed(self, keys: Keys, host_ptr: int, offsets: Sequence[int], sizes: Sequence[int],
                                host_len: Optional[int] = None) -> Dict[str, Any]:
        """As batch_get_into, with object_failures and retired."""
        s, f, r = self._batch(load().l3_store_batch_get_into, keys, host_ptr, offsets, sizes, host_len)
        return {"success": s, "object_failures": f, "retired": r}

    def batch_put_from(self, keys: Keys, host_ptr: int, offsets: Sequence[int], sizes: Sequence[int],
                       host_len: Optional[int] = None, *, groups: Optional[Sequence[int]] = None,
                       group_objects: Optional[int] = None, last_is_partial: Optional[bool] = None,
                       whole: Optional[bool] = None) -> List[bool]:
        """Store each range under its key, create-only; per key, success.

        Put hints (docs/admission.md), keys in chain order (a prefix's head
        first): ``groups``, one id per key (0: none; :func:`group_id`),
        names the page a key's object belongs to, so that every rank's
        shard and every pool's object of it are admitted, kept and evicted
        together; ``group_objects`` is how many objects a whole group has
        (ranks x pools; 0 unknown), so that the write budget charges a
        group once; ``last_is_partial`` says the last key is a prompt's
        partial last page; ``whole`` says the batch is of use only whole
        (its prefix needs its last page's state: a Mamba or SWA pool), so
        that admission writes all of it or none. Given any of them, the put
        is ``l3_store_batch_put_hinted``."""
        hints = put_hints(len(keys), groups, group_objects, last_is_partial, whole)
        if hints is None:
            return self._batch(load().l3_store_batch_put_from, keys, host_ptr, offsets, sizes, host_len)[0]
        if host_len is None:
            host_len = max((int(o) + int(s) for o, s in zip(offsets, sizes)), default=0)
        return self._put_hinted(keys, host_ptr, host_len, offsets, sizes, 1, hints)

    def _put_hinted(self, keys, host_ptr, host_len, offsets, sizes, per_key, hints):
        lib = load()

        def call(store, c_keys, n, host, ranges, k, result, err):
            return lib.l3_store_batch_put_hinted(store, c_keys, n, host, ranges, k, ctypes.byref(hints), result, err)

        return self._batch_v(call, keys, host_ptr, host_len, offsets, sizes, per_key)[0]

    def batch_lease(self, keys: Keys, seconds: float) -> List[bool]:
        """Per key, whether the store holds it; each found object is kept
        from eviction for `seconds` (a read lease, across processes)."""
        lib, store = load(), self._live()
        n = len(keys)
        flags = (ctypes.c_bool * max(n, 1))()
        err = Error()
        check(lib.l3_store_batch_lease(store, encode_keys(keys), n, float(seconds), flags,
                                       ctypes.byref(err)), err)
        return [bool(flags[i]) for i in range(n)]

    def _batch_v(self, fn, keys, host_ptr, host_len, offsets, sizes, per_key):
        store = self._live()
        n = len(keys)
        if len(offsets) != n * per_key or len(sizes) != n * per_key:
            raise ValueError("%d keys of %d ranges need %d offsets and sizes, not %d and %d"
                             % (n, per_key, n * per_key, len(offsets), len(sizes)))
        count = max(n * per_key, 1)
        ranges = (Range * count)()
        for i, (o, s) in enumerate(zip(offsets, sizes)):
            ranges[i].offset = int(o)
            ranges[i].size = int(s)
        success = (ctypes.c_bool * max(n, 1))()
        failures = (ctypes.c_bool * max(n, 1))()
        result = IoResult(success, 0, failures, 0, True)
        err = Error()
        check(fn(store, encode_keys(keys), n, Host(host_ptr, host_len), ranges, per_key,
                 ctypes.byref(result), ctypes.byref(err)), err)
        return [bool(success[i]) for i in range(n)], bool(result.retired)

    def batch_get_into_v(self, keys: Keys, host_ptr: int, host_len: int, offsets: Sequence[int],
                         sizes: Sequence[int], per_key: int) -> List[bool]:
        """Multi-range get: key i's object lands in its `per_key` ranges
        offsets[i * per_key + j], sizes[...] of [host_ptr, + host_len); per
        key, whether it arrived whole (the sizes must be the put's)."""
        return self._batch_v(load().l3_store_batch_get_into_v, keys, host_ptr, host_len, offsets, sizes,
                             per_key)[0]

    def batch_put_from_v(self, keys: Keys, host_ptr: int, host_len: int, offsets: Sequence[int],
                         sizes: Sequence[int], per_key: int, *, groups: Optional[Sequence[int]] = None,
                         group_objects: Optional[int] = None, last_is_partial: Optional[bool] = None,
                         whole: Optional[bool] = None) -> List[bool]:
        """Multi-range put: key i's object is the concatenation of its
        `per_key` ranges, one object with one header and one crc32c. The
        put hints ``groups``, ``group_objects``, ``last_is_partial`` and
        ``whole`` are batch_put_from's."""
        hints = put_hints(len(keys), groups, group_objects, last_is_partial, whole)
        if hints is not None:
            return self._put_hinted(keys, host_ptr, host_len, offsets, sizes, per_key, hints)
        return self._batch_v(load().l3_store_batch_put_from_v, keys, host_ptr, host_len, offsets, sizes,
                             per_key)[0]

    def register_host(self, host_ptr: int, host_len: int) -> None:
        """Register the Host pool for zero-copy fixed-buffer I/O (keep it
        alive until close or register_host(0, 0))."""
        err = Error()
        check(load().l3_store_register_host(self._live(), Host(host_ptr or None, host_len),
                                            ctypes.byref(err)), err)

    def register_hosts(self, regions: Sequence[Tuple[int, int]]) -> None:
        """Register several Host regions at once, ``[(ptr, nbytes), ...]``
        (K and V in two allocations, a pool per kind of state), replacing
        what was registered; ``[]`` clears them. A batch's ranges may lie in
        any of them. Keep them alive until close or the next call."""
        arr = host_array(regions)
        err = Error()
        check(load().l3_store_register_hosts(self._live(), arr, len(regions), ctypes.byref(err)), err)

    def remove_by_prefix(self, prefix: str) -> bool:
        """Delete every object whose key starts with prefix; False means
        nothing was removed."""
        return bool(load().l3_store_remove_by_prefix(self._live(), prefix.encode()))

    def removal_feed(self, start: str = "now") -> "RemovalFeed":
        """A reader of the store's removal feed (:class:`RemovalFeed`): every
        object that leaves the store, whichever process removed it, from
        the next removal on (``start="now"``) or from the oldest the feed
        still holds (``"oldest"``)."""
        return RemovalFeed(self._slabstore, start)

    def stats(self) -> Dict[str, Any]:
        """Store statistics (objects, bytes, evictions, checksum failures,
        I/O counts) as a dict."""
        self._live()
        return json.loads(take_string(load().l3_slabstore_stats_json(self._handle)))

    def metrics(self) -> str:
        """Store metrics as Prometheus text exposition."""
        self._live()
        return take_string(load().l3_metrics_of(None, self._handle))

    def close(self) -> None:
        """Write the checkpoint and release the store; idempotent."""
        if self._handle is not None and self._owned_by is None:
            load().l3_slabstore_free(self._handle)
        self._handle = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
