"""l3cache: a persistent NVMe KV-cache tier, from Python (ctypes, no build step).

Two levels, as inference engines use them:

* :class:`Store` speaks the KV-store protocol of engine storage backends:
  ``batch_exists(keys)``, ``batch_get_into(keys, host_ptr, offsets, sizes)``,
  ``batch_put_from(keys, host_ptr, offsets, sizes)``, ``remove_by_prefix``,
  ``close``.  ``host_ptr`` is the address of the Host KV pool (for a numpy
  array, ``arr.ctypes.data``); offsets and sizes are byte ranges in it.
* :class:`Executor` is the asynchronous executor: ``submit`` query/get/put/
  cancel operations keyed by (group, content hash, page offset) and Host
  block ids, ``poll`` completions and queue pressure, ``snapshot`` counters.

The shared library is found through ``$L3CACHE_LIB``, inside this package
(``pip install --no-build-isolation ./python`` puts it there), in the
checkout's ``build/``, or on the loader path (``libl3cache.so.0``).
"""

import ctypes
import ctypes.util
import hashlib
import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    import numpy

__all__ = ["L3Error", "Pool", "Store", "AsyncStore", "Completion", "Executor", "group_id", "library_path",
           "Removal", "RemovalFeed", "key_id"]

_STATUS = [
    "L3_OK", "L3_EINVAL", "L3_ELAYOUT", "L3_ECREDITS", "L3_EBUSY", "L3_EUNRETIRED", "L3_ENOMEM",
    "L3_EIO", "L3_ENOSPC", "L3_ECORRUPT", "L3_ECONFIG", "L3_ENOTFOUND", "L3_ECLOSED",
    "L3_EUNSUPPORTED", "L3_ETIMEDOUT", "L3_EPERM",
]


class L3Error(Exception):
    """An l3cache error: ``status`` is the code's name, ``args[0]`` the message."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class _Range(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("size", ctypes.c_uint64)]


class _Host(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _IoResult(ctypes.Structure):
    _fields_ = [
        ("success", ctypes.POINTER(ctypes.c_bool)), ("success_len", ctypes.c_size_t),
        ("object_failures", ctypes.POINTER(ctypes.c_bool)), ("object_failures_len", ctypes.c_size_t),
        ("retired", ctypes.c_bool),
    ]


class _PutHints(ctypes.Structure):
    """l3_put_hints (store/l3_store.h): a pointer, a uint32_t and two bools."""
    _fields_ = [("groups", ctypes.POINTER(ctypes.c_uint64)), ("group_objects", ctypes.c_uint32),
                ("last_is_partial", ctypes.c_bool), ("whole", ctypes.c_bool)]


class _StorageKey(ctypes.Structure):
    _fields_ = [("group", ctypes.c_uint32), ("content_hash", ctypes.c_char_p),
                ("page_offset", ctypes.c_int32)]


class _Operation(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int), ("op_id", ctypes.c_uint64),
        ("keys", ctypes.POINTER(_StorageKey)), ("num_keys", ctypes.c_size_t),
        ("host_blocks", ctypes.POINTER(ctypes.c_int32)), ("num_host_blocks", ctypes.c_size_t),
    ]


class _Completion(ctypes.Structure):
    _fields_ = [
        ("op_id", ctypes.c_uint64), ("num_keys", ctypes.c_size_t),
        ("success", ctypes.POINTER(ctypes.c_bool)), ("object_failures", ctypes.POINTER(ctypes.c_bool)),
        ("retired", ctypes.c_bool),
    ]


class _Pressure(ctypes.Structure):
    _fields_ = [("queued_operations", ctypes.c_int64), ("queued_bytes", ctypes.c_int64),
                ("oldest_operation_us", ctypes.c_int64)]


class _Poll(ctypes.Structure):
    _fields_ = [("now_us", ctypes.c_int64), ("completions", ctypes.POINTER(_Completion)),
                ("num_completions", ctypes.c_size_t), ("pressure", _Pressure)]


_KINDS = {"query": 0, "get": 1, "put": 2, "cancel": 3}

Config = Union[Dict[str, Any], str]  # a config dict, JSON text, or the path of a JSON file
Keys = Sequence[Union[str, bytes]]


def library_path() -> str:
    """Where the shared library is loaded from."""
    env = os.environ.get("L3CACHE_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "libl3cache.so"),
                      os.path.join(here, "..", "..", "build", "libl3cache.so")):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    found = ctypes.util.find_library("l3cache")
    return found or "libl3cache.so.0"


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    P, S, B = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_bool
    E = ctypes.POINTER(_Error)
    keys_t = ctypes.POINTER(ctypes.c_char_p)
    sig = {
        "l3_open_store_json": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(P), E]),
        "l3_slabstore_store": (P, [P]),
        "l3_slabstore_free": (None, [P]),
        "l3_slabstore_stats_json": (P, [P]),
        "l3_store_batch_exists": (ctypes.c_int, [P, keys_t, S, ctypes.POINTER(B), E]),
        "l3_store_batch_get_into": (ctypes.c_int, [P, keys_t, S, _Host, ctypes.POINTER(_Range),
                                                    ctypes.POINTER(_IoResult), E]),
        "l3_store_batch_put_from": (ctypes.c_int, [P, keys_t, S, _Host, ctypes.POINTER(_Range),
                                                    ctypes.POINTER(_IoResult), E]),
        "l3_store_batch_get_into_v": (ctypes.c_int, [P, keys_t, S, _Host, ctypes.POINTER(_Range), S,
                                                      ctypes.POINTER(_IoResult), E]),
        "l3_store_batch_put_from_v": (ctypes.c_int, [P, keys_t, S, _Host, ctypes.POINTER(_Range), S,
                                                      ctypes.POINTER(_IoResult), E]),
        "l3_store_batch_put_hinted": (ctypes.c_int, [P, keys_t, S, _Host, ctypes.POINTER(_Range), S,
                                                      ctypes.POINTER(_PutHints), ctypes.POINTER(_IoResult), E]),
        "l3_store_batch_lease": (ctypes.c_int, [P, keys_t, S, ctypes.c_double, ctypes.POINTER(B), E]),
        "l3_store_remove_by_prefix": (B, [P, ctypes.c_char_p]),
        "l3_store_register_host": (ctypes.c_int, [P, _Host, E]),
        "l3_store_register_hosts": (ctypes.c_int, [P, ctypes.POINTER(_Host), S, E]),
        "l3_metrics_of": (P, [P, P]),
        "l3_free": (None, [P]),
        "l3_executor_start_json": (ctypes.c_int, [P, ctypes.POINTER(_Host), S, ctypes.c_char_p,
                                                   ctypes.c_char_p, ctypes.POINTER(P), E]),
        "l3_executor_submit": (ctypes.c_int, [P, ctypes.POINTER(_Operation), S, E]),
        "l3_executor_poll": (ctypes.c_int, [P, ctypes.POINTER(_Poll), E]),
        "l3_poll_release": (None, [ctypes.POINTER(_Poll)]),
        "l3_executor_snapshot_json": (P, [P]),
        "l3_executor_set_weight_version": (ctypes.c_int, [P, ctypes.c_char_p, E]),
        "l3_executor_delete_namespace": (B, [P]),
        "l3_executor_is_idle": (B, [P]),
        "l3_executor_key_prefix": (None, [P, ctypes.c_char_p]),
        "l3_executor_close": (ctypes.c_int, [P, ctypes.c_double, E]),
        "l3_executor_free": (None, [P]),
        "l3_pool_alloc": (P, [S, E]),
        "l3_pool_free": (None, [P, S]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


def _check(status, err):
    if status != 0:
        name = _STATUS[status] if 0 <= status < len(_STATUS) else str(status)
        raise L3Error(name, err.msg.decode("utf-8", "replace"))


def _take_string(ptr):
    lib = _load()
    try:
        return ctypes.cast(ptr, ctypes.c_char_p).value.decode()
    finally:
        lib.l3_free(ptr)


def _config_text(config):
    if isinstance(config, dict):
        return json.dumps(config)
    if isinstance(config, str) and not config.lstrip().startswith("{"):
        with open(config, "r", encoding="utf-8") as f:
            return f.read()
    return config


def _host_array(regions):
    regions = list(regions)
    arr = (_Host * max(len(regions), 1))()
    for i, (ptr, nbytes) in enumerate(regions):
        arr[i] = _Host(int(ptr) or None, int(nbytes))
    return arr


def group_id(page: Union[str, bytes]) -> int:
    """The group id of a page (``groups=`` of the puts): a 64-bit digest
    (BLAKE2b, 8 bytes, little-endian) of what names the page alike on every
    rank and in every pool, never 0 (0 is "no group"). The adapters pass it
    so that the store admits, keeps and evicts a page's objects together."""
    raw = page.encode("utf-8") if isinstance(page, str) else bytes(page)
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little") or 1


def _put_hints(n, groups, group_objects, last_is_partial, whole=None):
    """An l3_put_hints for a put of n keys, or None when no hint is given."""
    if groups is None and group_objects is None and last_is_partial is None and whole is None:
        return None
    hints = _PutHints()
    if groups is not None:
        ids = [int(g) for g in groups]
        if len(ids) != n:
            raise ValueError("%d keys need %d group ids, not %d" % (n, n, len(ids)))
        if any(not 0 <= g < 1 << 64 for g in ids):
            raise ValueError("a group id is a 64-bit unsigned integer")
        hints.groups = (ctypes.c_uint64 * max(n, 1))(*ids)  # kept alive by the structure
    objects = int(group_objects or 0)
    if not 0 <= objects < 1 << 32:
        raise ValueError("group_objects must be 0 to 2^32 - 1, not %d" % objects)
    hints.group_objects = objects
    hints.last_is_partial = bool(last_is_partial)
    hints.whole = bool(whole)
    return hints


def _encode_keys(keys):
    out = []
    for key in keys:
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if b"\0" in raw:
            raise ValueError("a key contains a NUL byte: %r" % (key,))
        out.append(raw)
    return (ctypes.c_char_p * len(out))(*out)


class Pool:
    """A Host pool from ``l3_pool_alloc``: zeroed, 2 MiB-aligned memory
    advised as transparent huge pages, so that an object's range is one
    device request rather than one per 254 pages. ``array`` is a numpy view
    of it (numpy is imported only when asked for). Close it only after
    every executor or store that registered it has closed."""

    def __init__(self, nbytes: int) -> None:
        lib = _load()
        err = _Error()
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
            _load().l3_pool_free(self.address, self.nbytes)
            self.address = None

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Store:
    """The slab disk store, opened from an l3cache config (a dict, JSON text
    or a path to a JSON file). Thread-safe; use as a context manager."""

    def __init__(self, config: Config) -> None:
        lib = _load()
        self._text = _config_text(config)
        handle = ctypes.c_void_p()
        err = _Error()
        _check(lib.l3_open_store_json(self._text.encode(), ctypes.byref(handle), ctypes.byref(err)), err)
        self._handle = handle.value
        self._store = lib.l3_slabstore_store(self._handle)
        self._owned_by = None

    def _live(self):
        if self._handle is None:
            raise L3Error("L3_ECLOSED", "the store is closed")
        return self._store

    def batch_exists(self, keys: Keys) -> List[bool]:
        """Per key, whether the store holds it."""
        lib, store = _load(), self._live()
        n = len(keys)
        flags = (ctypes.c_bool * max(n, 1))()
        err = _Error()
        _check(lib.l3_store_batch_exists(store, _encode_keys(keys), n, flags, ctypes.byref(err)), err)
        return [bool(flags[i]) for i in range(n)]

    def _batch(self, fn, keys, host_ptr, offsets, sizes, host_len):
        store = self._live()
        n = len(keys)
        if len(offsets) != n or len(sizes) != n:
            raise ValueError("keys, offsets and sizes must have one length")
        ranges = (_Range * max(n, 1))(*[_Range(int(o), int(s)) for o, s in zip(offsets, sizes)])
        if host_len is None:
            host_len = max((int(o) + int(s) for o, s in zip(offsets, sizes)), default=0)
        success = (ctypes.c_bool * max(n, 1))()
        failures = (ctypes.c_bool * max(n, 1))()
        result = _IoResult(success, 0, failures, 0, True)
        err = _Error()
        _check(fn(store, _encode_keys(keys), n, _Host(host_ptr, host_len), ranges, ctypes.byref(result),
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
        s, f, r = self._batch(_load().l3_store_batch_get_into, keys, host_ptr, offsets, sizes, host_len)
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
        hints = _put_hints(len(keys), groups, group_objects, last_is_partial, whole)
        if hints is None:
            return self._batch(_load().l3_store_batch_put_from, keys, host_ptr, offsets, sizes, host_len)[0]
        if host_len is None:
            host_len = max((int(o) + int(s) for o, s in zip(offsets, sizes)), default=0)
        return self._put_hinted(keys, host_ptr, host_len, offsets, sizes, 1, hints)

    def _put_hinted(self, keys, host_ptr, host_len, offsets, sizes, per_key, hints):
        lib = _load()

        def call(store, c_keys, n, host, ranges, k, result, err):
            return lib.l3_store_batch_put_hinted(store, c_keys, n, host, ranges, k, ctypes.byref(hints), result, err)

        return self._batch_v(call, keys, host_ptr, host_len, offsets, sizes, per_key)[0]

    def batch_lease(self, keys: Keys, seconds: float) -> List[bool]:
        """Per key, whether the store holds it; each found object is kept
        from eviction for `seconds` (a read lease, across processes)."""
        lib, store = _load(), self._live()
        n = len(keys)
        flags = (ctypes.c_bool * max(n, 1))()
        err = _Error()
        _check(lib.l3_store_batch_lease(store, _encode_keys(keys), n, float(seconds), flags,
                                        ctypes.byref(err)), err)
        return [bool(flags[i]) for i in range(n)]

    def _batch_v(self, fn, keys, host_ptr, host_len, offsets, sizes, per_key):
        store = self._live()
        n = len(keys)
        if len(offsets) != n * per_key or len(sizes) != n * per_key:
            raise ValueError("%d keys of %d ranges need %d offsets and sizes, not %d and %d"
                             % (n, per_key, n * per_key, len(offsets), len(sizes)))
        count = max(n * per_key, 1)
        ranges = (_Range * count)()
        for i, (o, s) in enumerate(zip(offsets, sizes)):
            ranges[i].offset = int(o)
            ranges[i].size = int(s)
        success = (ctypes.c_bool * max(n, 1))()
        failures = (ctypes.c_bool * max(n, 1))()
        result = _IoResult(success, 0, failures, 0, True)
        err = _Error()
        _check(fn(store, _encode_keys(keys), n, _Host(host_ptr, host_len), ranges, per_key,
                  ctypes.byref(result), ctypes.byref(err)), err)
        return [bool(success[i]) for i in range(n)], bool(result.retired)

    def batch_get_into_v(self, keys: Keys, host_ptr: int, host_len: int, offsets: Sequence[int],
                         sizes: Sequence[int], per_key: int) -> List[bool]:
        """Multi-range get: key i's object lands in its `per_key` ranges
        offsets[i * per_key + j], sizes[...] of [host_ptr, + host_len); per
        key, whether it arrived whole (the sizes must be the put's)."""
        return self._batch_v(_load().l3_store_batch_get_into_v, keys, host_ptr, host_len, offsets, sizes,
                             per_key)[0]

    def batch_put_from_v(self, keys: Keys, host_ptr: int, host_len: int, offsets: Sequence[int],
                         sizes: Sequence[int], per_key: int, *, groups: Optional[Sequence[int]] = None,
                         group_objects: Optional[int] = None, last_is_partial: Optional[bool] = None,
                         whole: Optional[bool] = None) -> List[bool]:
        """Multi-range put: key i's object is the concatenation of its
        `per_key` ranges, one object with one header and one crc32c. The
        put hints ``groups``, ``group_objects``, ``last_is_partial`` and
        ``whole`` are batch_put_from's."""
        hints = _put_hints(len(keys), groups, group_objects, last_is_partial, whole)
        if hints is not None:
            return self._put_hinted(keys, host_ptr, host_len, offsets, sizes, per_key, hints)
        return self._batch_v(_load().l3_store_batch_put_from_v, keys, host_ptr, host_len, offsets, sizes,
                             per_key)[0]

    def register_host(self, host_ptr: int, host_len: int) -> None:
        """Register the Host pool for zero-copy fixed-buffer I/O (keep it
        alive until close or register_host(0, 0))."""
        err = _Error()
        _check(_load().l3_store_register_host(self._live(), _Host(host_ptr or None, host_len),
                                              ctypes.byref(err)), err)

    def register_hosts(self, regions: Sequence[Tuple[int, int]]) -> None:
        """Register several Host regions at once, ``[(ptr, nbytes), ...]``
        (K and V in two allocations, a pool per kind of state), replacing
        what was registered; ``[]`` clears them. A batch's ranges may lie in
        any of them. Keep them alive until close or the next call."""
        arr = _host_array(regions)
        err = _Error()
        _check(_load().l3_store_register_hosts(self._live(), arr, len(regions), ctypes.byref(err)), err)

    def remove_by_prefix(self, prefix: str) -> bool:
        """Delete every object whose key starts with prefix; False means
        nothing was removed."""
        return bool(_load().l3_store_remove_by_prefix(self._live(), prefix.encode()))

    def removal_feed(self, start: str = "now") -> "RemovalFeed":
        """A reader of the store's removal feed (:class:`RemovalFeed`): every
        object that leaves the store, whichever process removed it, from
        the next removal on (``start="now"``) or from the oldest the feed
        still holds (``"oldest"``)."""
        self._live()
        return RemovalFeed(self, self._handle, start)

    def stats(self) -> Dict[str, Any]:
        """Store statistics (objects, bytes, evictions, checksum failures,
        I/O counts) as a dict."""
        self._live()
        return json.loads(_take_string(_load().l3_slabstore_stats_json(self._handle)))

    def metrics(self) -> str:
        """Store metrics as Prometheus text exposition."""
        self._live()
        return _take_string(_load().l3_metrics_of(None, self._handle))

    def close(self) -> None:
        """Write the checkpoint and release the store; idempotent."""
        if self._handle is not None and self._owned_by is None:
            _load().l3_slabstore_free(self._handle)
        self._handle = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Executor:
    """The executor over a Store (which it takes over) and a Host pool laid
    out as `layout` (a dict: groups, lcm_block_bytes, num_lcm_blocks,
    owner_rank, tp_rank). `config` is the l3cache config (its executor and
    namespace sections apply); by default the store's. A layout whose
    groups name other regions (a group's "region": r) is given those
    regions' ``(ptr, nbytes)`` in `regions`, region 1 first."""

    def __init__(self, store: Store, host_ptr: int, host_len: int, layout: Dict[str, Any],
                 config: Optional[Config] = None, regions: Sequence[Tuple[int, int]] = ()) -> None:
        lib = _load()
        handle = ctypes.c_void_p()
        err = _Error()
        text = _config_text(config) if config is not None else store._text
        all_regions = [(host_ptr, host_len)] + list(regions)
        _check(lib.l3_executor_start_json(store._live(), _host_array(all_regions), len(all_regions),
                                          json.dumps(layout).encode(), text.encode(), ctypes.byref(handle),
                                          ctypes.byref(err)), err)
        self._handle = handle.value
        self._store = store
        store._owned_by = self
        self._keep = []

    def submit(self, operations: Sequence[Dict[str, Any]]) -> None:
        """Submit operations, in order: dicts with kind ("query", "get",
        "put", "cancel"), op_id, keys [(group, content_hash, page_offset)]
        and, for get/put, host_blocks."""
        lib = _load()
        ops = (_Operation * len(operations))()
        keep = []
        for i, op in enumerate(operations):
            keys = op.get("keys", [])
            karr = (_StorageKey * max(len(keys), 1))()
            for k, (group, content_hash, page_offset) in enumerate(keys):
                raw = content_hash.encode()
                if b"\0" in raw:
                    raise ValueError("a content hash contains a NUL byte")
                keep.append(raw)
                karr[k] = _StorageKey(group, raw, page_offset)
            blocks = op.get("host_blocks", [])
            barr = (ctypes.c_int32 * max(len(blocks), 1))(*blocks)
            keep += [karr, barr]
            ops[i] = _Operation(_KINDS[op["kind"]], op["op_id"], karr, len(keys), barr, len(blocks))
        err = _Error()
        _check(lib.l3_executor_submit(self._handle, ops, len(operations), ctypes.byref(err)), err)

    def poll(self) -> Dict[str, Any]:
        """Completions since the last poll and the queues' pressure."""
        lib = _load()
        p = _Poll()
        err = _Error()
        _check(lib.l3_executor_poll(self._handle, ctypes.byref(p), ctypes.byref(err)), err)
        try:
            completions = []
            for i in range(p.num_completions):
                c = p.completions[i]
                completions.append({
                    "op_id": c.op_id,
                    "success": [bool(c.success[k]) for k in range(c.num_keys)],
                    "object_failures": [bool(c.object_failures[k]) for k in range(c.num_keys)],
                    "retired": bool(c.retired),
                })
            return {"now_us": p.now_us, "completions": completions,
                    "pressure": {"queued_operations": p.pressure.queued_operations,
                                 "queued_bytes": p.pressure.queued_bytes,
                                 "oldest_operation_us": p.pressure.oldest_operation_us}}
        finally:
            lib.l3_poll_release(ctypes.byref(p))

    def snapshot(self) -> Dict[str, Any]:
        """The executor's counters (the reference snapshot's names)."""
        return json.loads(_take_string(_load().l3_executor_snapshot_json(self._handle)))

    def metrics(self) -> str:
        """Executor and store metrics as Prometheus text exposition."""
        return _take_string(_load().l3_metrics_of(self._handle, self._store._handle))

    def key_prefix(self) -> str:
        """The namespace prefix objects are named under now."""
        buf = ctypes.create_string_buffer(70)
        _load().l3_executor_key_prefix(self._handle, buf)
        return buf.value.decode()

    def is_idle(self) -> bool:
        """No operation is queued or running."""
        return bool(_load().l3_executor_is_idle(self._handle))

    def set_weight_version(self, weight_version: str) -> None:
        """Name new objects under another weight version (only while idle)."""
        err = _Error()
        _check(_load().l3_executor_set_weight_version(self._handle, weight_version.encode(),
                                                      ctypes.byref(err)), err)

    def delete_namespace(self) -> bool:
        """Delete the current namespace's objects (only while idle)."""
        return bool(_load().l3_executor_delete_namespace(self._handle))

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers and close the store. Raises L3Error
        (L3_EUNRETIRED) when native I/O is unproven: keep the Host pool
        alive for the rest of the process then."""
        if self._handle is None:
            return
        lib = _load()
        err = _Error()
        status = lib.l3_executor_close(self._handle, timeout, ctypes.byref(err))
        if status == 0:
            lib.l3_executor_free(self._handle)
            self._store._handle = None
        self._handle = None
        _check(status, err)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


from ._async import AsyncStore, Completion  # noqa: E402  (it builds on Store)
from .feed import Removal, RemovalFeed, key_id  # noqa: E402  (it builds on the library's loader)
