"""The floor of the Python package: the shared library, the C types the
calls pass, and one signature table for every function the package calls
(the store, the executor, the asynchronous API, the removal feed). Every
other module of the package builds on this one; it imports none of them."""

import ctypes
import ctypes.util
import json
import os
from typing import Any, Dict, Sequence, Union

Config = Union[Dict[str, Any], str]  # a config dict, JSON text, or the path of a JSON file
Keys = Sequence[Union[str, bytes]]

STATUS = [
    "L3_OK", "L3_EINVAL", "L3_ELAYOUT", "L3_ECREDITS", "L3_EBUSY", "L3_EUNRETIRED", "L3_ENOMEM",
    "L3_EIO", "L3_ENOSPC", "L3_ECORRUPT", "L3_ECONFIG", "L3_ENOTFOUND", "L3_ECLOSED",
    "L3_EUNSUPPORTED", "L3_ETIMEDOUT", "L3_EPERM",
]


class L3Error(Exception):
    """An l3cache error: ``status`` is the code's name, ``args[0]`` the message."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class Range(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("size", ctypes.c_uint64)]


class Host(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class IoResult(ctypes.Structure):
    _fields_ = [
        ("success", ctypes.POINTER(ctypes.c_bool)), ("success_len", ctypes.c_size_t),
        ("object_failures", ctypes.POINTER(ctypes.c_bool)), ("object_failures_len", ctypes.c_size_t),
        ("retired", ctypes.c_bool),
    ]


class PutHints(ctypes.Structure):
    """l3_put_hints (store/l3_store.h): a pointer, a uint32_t and two bools."""
    _fields_ = [("groups", ctypes.POINTER(ctypes.c_uint64)), ("group_objects", ctypes.c_uint32),
                ("last_is_partial", ctypes.c_bool), ("whole", ctypes.c_bool)]


class StorageKey(ctypes.Structure):
    """l3_storage_key (executor/l3_executor.h)."""
    _fields_ = [("group", ctypes.c_uint32), ("content_hash", ctypes.c_char_p),
                ("page_offset", ctypes.c_int32)]


class Operation(ctypes.Structure):
    """l3_operation (executor/l3_executor.h)."""
    _fields_ = [
        ("kind", ctypes.c_int), ("op_id", ctypes.c_uint64),
        ("keys", ctypes.POINTER(StorageKey)), ("num_keys", ctypes.c_size_t),
        ("host_blocks", ctypes.POINTER(ctypes.c_int32)), ("num_host_blocks", ctypes.c_size_t),
    ]


class OpCompletion(ctypes.Structure):
    """l3_completion (executor/l3_executor.h)."""
    _fields_ = [
        ("op_id", ctypes.c_uint64), ("num_keys", ctypes.c_size_t),
        ("success", ctypes.POINTER(ctypes.c_bool)), ("object_failures", ctypes.POINTER(ctypes.c_bool)),
        ("retired", ctypes.c_bool),
    ]


class Pressure(ctypes.Structure):
    """l3_pressure (executor/l3_executor.h)."""
    _fields_ = [("queued_operations", ctypes.c_int64), ("queued_bytes", ctypes.c_int64),
                ("oldest_operation_us", ctypes.c_int64)]


class Poll(ctypes.Structure):
    """l3_poll (executor/l3_executor.h)."""
    _fields_ = [("now_us", ctypes.c_int64), ("completions", ctypes.POINTER(OpCompletion)),
                ("num_completions", ctypes.c_size_t), ("pressure", Pressure)]


class AsyncOptions(ctypes.Structure):
    """l3_async_options (async/l3_async.h)."""
    _fields_ = [("workers", ctypes.c_uint), ("max_pending", ctypes.c_size_t), ("lease_seconds", ctypes.c_double)]


class AsyncCompletion(ctypes.Structure):
    """l3_async_completion (async/l3_async.h)."""
    _fields_ = [("id", ctypes.c_uint64), ("kind", ctypes.c_int), ("ok", ctypes.c_bool),
                ("error", ctypes.c_char * 512), ("n", ctypes.c_size_t),
                ("results", ctypes.POINTER(ctypes.c_bool))]


class AsyncStats(ctypes.Structure):
    """l3_async_stats (async/l3_async.h)."""
    _fields_ = [("submitted", ctypes.c_uint64), ("completed", ctypes.c_uint64),
                ("rejected_full", ctypes.c_uint64), ("bounced_keys", ctypes.c_uint64),
                ("pending", ctypes.c_uint64)]


KEY_ID_BYTES = 16


class Removal(ctypes.Structure):
    """l3_removal (store/l3_slabstore.h)."""
    _fields_ = [("seq", ctypes.c_uint64), ("key_id", ctypes.c_uint8 * KEY_ID_BYTES),
                ("reason", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


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


_lib: Any = None


def load() -> Any:
    """The shared library, loaded once, every function given its signature."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    P, S, B = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_bool
    E = ctypes.POINTER(Error)
    keys_t = ctypes.POINTER(ctypes.c_char_p)
    sig = {
        "l3_open_store_json": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(P), E]),
        "l3_slabstore_store": (P, [P]),
        "l3_slabstore_free": (None, [P]),
        "l3_slabstore_stats_json": (P, [P]),
        "l3_store_batch_exists": (ctypes.c_int, [P, keys_t, S, ctypes.POINTER(B), E]),
        "l3_store_batch_get_into": (ctypes.c_int, [P, keys_t, S, Host, ctypes.POINTER(Range),
                                                   ctypes.POINTER(IoResult), E]),
        "l3_store_batch_put_from": (ctypes.c_int, [P, keys_t, S, Host, ctypes.POINTER(Range),
                                                   ctypes.POINTER(IoResult), E]),
        "l3_store_batch_get_into_v": (ctypes.c_int, [P, keys_t, S, Host, ctypes.POINTER(Range), S,
                                                     ctypes.POINTER(IoResult), E]),
        "l3_store_batch_put_from_v": (ctypes.c_int, [P, keys_t, S, Host, ctypes.POINTER(Range), S,
                                                     ctypes.POINTER(IoResult), E]),
        "l3_store_batch_put_hinted": (ctypes.c_int, [P, keys_t, S, Host, ctypes.POINTER(Range), S,
                                                     ctypes.POINTER(PutHints), ctypes.POINTER(IoResult), E]),
        "l3_store_batch_lease": (ctypes.c_int, [P, keys_t, S, ctypes.c_double, ctypes.POINTER(B), E]),
        "l3_store_remove_by_prefix": (B, [P, ctypes.c_char_p]),
        "l3_store_register_host": (ctypes.c_int, [P, Host, E]),
        "l3_store_register_hosts": (ctypes.c_int, [P, ctypes.POINTER(Host), S, E]),
        "l3_metrics_of": (P, [P, P]),
        "l3_free": (None, [P]),
        "l3_executor_start_json": (ctypes.c_int, [P, ctypes.POINTER(Host), S, ctypes.c_char_p,
                                                  ctypes.c_char_p, ctypes.POINTER(P), E]),
        "l3_executor_submit": (ctypes.c_int, [P, ctypes.POINTER(Operation), S, E]),
        "l3_executor_poll": (ctypes.c_int, [P, ctypes.POINTER(Poll), E]),
        "l3_poll_release": (None, [ctypes.POINTER(Poll)]),
        "l3_executor_snapshot_json": (P, [P]),
        "l3_executor_set_weight_version": (ctypes.c_int, [P, ctypes.c_char_p, E]),
        "l3_executor_delete_namespace": (B, [P]),
        "l3_executor_is_idle": (B, [P]),
        "l3_executor_key_prefix": (None, [P, ctypes.c_char_p]),
        "l3_executor_close": (ctypes.c_int, [P, ctypes.c_double, E]),
        "l3_executor_free": (None, [P]),
        "l3_pool_alloc": (P, [S, E]),
        "l3_pool_free": (None, [P, S]),
        # the asynchronous API (async/l3_async.h)
        "l3_async_open": (ctypes.c_int, [P, ctypes.POINTER(AsyncOptions), ctypes.POINTER(P), E]),
        "l3_async_event_fd": (ctypes.c_int, [P]),
        "l3_async_register_hosts": (ctypes.c_int, [P, ctypes.POINTER(Host), S, E]),
        "l3_async_submit": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_uint64, keys_t, S, ctypes.POINTER(P),
                                           ctypes.POINTER(S), E]),
        "l3_async_submit_hinted": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_uint64, keys_t, S, ctypes.POINTER(P),
                                                  ctypes.POINTER(S), ctypes.POINTER(PutHints), E]),
        "l3_async_drain": (S, [P, ctypes.POINTER(AsyncCompletion), S]),
        "l3_async_completion_release": (None, [ctypes.POINTER(AsyncCompletion)]),
        "l3_async_get_stats": (None, [P, ctypes.POINTER(AsyncStats)]),
        "l3_async_close": (None, [P]),
        "l3_async_free": (None, [P]),
        # the removal feed (store/l3_slabstore.h)
        "l3_key_id_bytes": (None, [ctypes.c_char_p, S, ctypes.POINTER(ctypes.c_uint8 * KEY_ID_BYTES)]),
        "l3_removal_reason_name": (ctypes.c_char_p, [ctypes.c_uint32]),
        "l3_slabstore_removal_start": (ctypes.c_uint64, [P, B]),
        "l3_slabstore_removals": (S, [P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(Removal), S,
                                      ctypes.POINTER(ctypes.c_uint64)]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


def check(status: int, err: Error) -> None:
    """Raise L3Error for a status other than L3_OK, with its message."""
    if status != 0:
        name = STATUS[status] if 0 <= status < len(STATUS) else str(status)
        raise L3Error(name, err.msg.decode("utf-8", "replace"))


def take_string(ptr: int) -> str:
    """The library's string at `ptr` as text; frees it."""
    lib = load()
    try:
        return (ctypes.cast(ptr, ctypes.c_char_p).value or b"").decode()
    finally:
        lib.l3_free(ptr)


def config_text(config: Config) -> str:
    """A config (a dict, JSON text or a path) as JSON text."""
    if isinstance(config, dict):
        return json.dumps(config)
    if isinstance(config, str) and not config.lstrip().startswith("{"):
        with open(config, "r", encoding="utf-8") as f:
            return f.read()
    return config


def host_array(regions: Sequence[Any]) -> Any:
    """An array of l3_host_buffer for [(ptr, nbytes), ...]."""
    regions = list(regions)
    arr = (Host * max(len(regions), 1))()
    for i, (ptr, nbytes) in enumerate(regions):
        arr[i] = Host(int(ptr) or None, int(nbytes))
    return arr


def put_hints(n: int, groups: Any, group_objects: Any, last_is_partial: Any, whole: Any = None) -> Any:
    """An l3_put_hints for a put of n keys, or None when no hint is given."""
    if groups is None and group_objects is None and last_is_partial is None and whole is None:
        return None
    hints = PutHints()
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


def encode_keys(keys: Keys) -> Any:
    """Keys as a C array of NUL-terminated strings (a NUL inside is refused)."""
    out = []
    for key in keys:
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if b"\0" in raw:
            raise ValueError("a key contains a NUL byte: %r" % (key,))
        out.append(raw)
    return (ctypes.c_char_p * len(out))(*out)
