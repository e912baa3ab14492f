"""l3cache as LMCache's L2 storage: a connector for the ``native_plugin``
L2 adapter (and so for vLLM through LMCache), with no change to LMCache.

    lmcache server --l1-size-gb 100 --eviction-policy LRU \\
      --l2-adapter '{"type": "native_plugin", "module_path": "l3cache.lmcache",
                     "class_name": "L3CacheConnector",
                     "adapter_params": {"config": "/etc/l3cache.json"},
                     "max_capacity_gb": 800}'

LMCache constructs ``L3CacheConnector(**adapter_params)`` and calls the six
methods of its native connector contract: ``event_fd``,
``submit_batch_get/set/exists/delete`` (each returns a future id at once),
``drain_completions`` (``[(future_id, ok, error, per_key_bools)]``, never
raising) and ``close``. The I/O runs on l3cache's worker threads (the
library's async API, ``l3_async.h``), without the GIL; the eventfd wakes
LMCache's demux thread.

Buffers: LMCache's L1 is one large allocation. The first time a buffer
comes from a mapping of at least ``register_min_bytes`` (by
/proc/self/maps), that whole mapping is registered with the store, so its
objects move by DMA as io_uring fixed buffers; other aligned buffers go by
O_DIRECT without registration, and misaligned ones through an aligned
copy (counted in ``stats()["bounced_keys"]``).
"""

import ctypes
import os
import threading

from . import L3Error, Store, _Error, _check, _encode_keys, _load

__all__ = ["L3CacheConnector"]

_GET, _SET, _EXISTS, _DELETE = 0, 1, 2, 3


class _AsyncOptions(ctypes.Structure):
    _fields_ = [("workers", ctypes.c_uint), ("max_pending", ctypes.c_size_t)]


class _AsyncCompletion(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint64), ("kind", ctypes.c_int), ("ok", ctypes.c_bool),
                ("error", ctypes.c_char * 512), ("n", ctypes.c_size_t),
                ("results", ctypes.POINTER(ctypes.c_bool))]


class _AsyncStats(ctypes.Structure):
    _fields_ = [("submitted", ctypes.c_uint64), ("completed", ctypes.c_uint64),
                ("rejected_full", ctypes.c_uint64), ("bounced_keys", ctypes.c_uint64),
                ("pending", ctypes.c_uint64)]


def _async_lib():
    lib = _load()
    if getattr(lib, "_l3_async_ready", False):
        return lib
    P, S, E = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(_Error)
    sig = {
        "l3_async_open": (ctypes.c_int, [P, ctypes.POINTER(_AsyncOptions), ctypes.POINTER(P), E]),
        "l3_async_event_fd": (ctypes.c_int, [P]),
        "l3_async_register": (ctypes.c_int, [P, P, S, E]),
        "l3_async_submit": (ctypes.c_int, [P, ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_char_p),
                                           S, ctypes.POINTER(P), ctypes.POINTER(S), E]),
        "l3_async_drain": (S, [P, ctypes.POINTER(_AsyncCompletion), S]),
        "l3_async_completion_release": (None, [ctypes.POINTER(_AsyncCompletion)]),
        "l3_async_get_stats": (None, [P, ctypes.POINTER(_AsyncStats)]),
        "l3_async_close": (None, [P]),
        "l3_async_free": (None, [P]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    lib._l3_async_ready = True
    return lib


def _address(view):
    """The address of a buffer's first byte (writable or not), and its length."""
    import numpy as np
    arr = np.frombuffer(view, dtype=np.uint8)
    return arr.ctypes.data, arr.nbytes


def _mapping_of(address):
    """The [start, end) of the mapping that holds `address` (/proc/self/maps)."""
    with open("/proc/self/maps", "r", encoding="ascii") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split(None, 1)[0].split("-"))
            if lo <= address < hi:
                return lo, hi
    return None


class L3CacheConnector:
    """An l3cache store behind LMCache's native connector contract.

    ``config``: the l3cache config (a path to a JSON file, JSON text or a
    dict). ``workers``: threads doing the I/O. ``max_pending``: batches
    queued or running before a submit is refused (its completion then says
    so). ``register_min_bytes``: the smallest mapping registered for
    fixed-buffer I/O (0: never register)."""

    def __init__(self, config=None, workers=4, max_pending=256, register_min_bytes=64 << 20, **params):
        if config is None:
            raise ValueError("L3CacheConnector needs config= (an l3cache JSON config path, text or dict)")
        if params:
            raise TypeError("unknown adapter_params: %s" % ", ".join(sorted(params)))
        lib = _async_lib()
        self._store = Store(config)
        handle = ctypes.c_void_p()
        err = _Error()
        opts = _AsyncOptions(int(workers), int(max_pending))
        _check(lib.l3_async_open(self._store._store, ctypes.byref(opts), ctypes.byref(handle), ctypes.byref(err)), err)
        self._async = handle.value
        self._lock = threading.Lock()
        self._next_id = 1
        self._held = {}            # future id -> the buffers it uses (kept alive)
        self._refused = []         # completions of batches the queue refused
        self._register_min = int(register_min_bytes)
        self._registered = None    # (start, end) of the registered mapping
        self._closed = False

    # -- the contract ---------------------------------------------------

    def event_fd(self):
        """The eventfd LMCache polls: readable while completions wait."""
        return _async_lib().l3_async_event_fd(self._live())

    def submit_batch_get(self, keys, memoryviews):
        """Read each key's object into its buffer (exactly its length)."""
        return self._submit(_GET, keys, memoryviews)

    def submit_batch_set(self, keys, memoryviews):
        """Store each buffer under its key (create-only: an existing key
        succeeds without rewrite)."""
        return self._submit(_SET, keys, memoryviews)

    def submit_batch_exists(self, keys):
        """Per key, whether the store holds it."""
        return self._submit(_EXISTS, keys, None)

    def submit_batch_delete(self, keys):
        """Delete each key (durably: it does not come back after a crash)."""
        return self._submit(_DELETE, keys, None)

    def drain_completions(self):
        """Every finished batch as ``(future_id, ok, error, per_key)``;
        never raises (an error is a completion's string)."""
        try:
            return self._drain()
        except Exception as e:  # the contract: errors travel in completions
            return [(0, False, "drain_completions: %s" % e, None)]

    def close(self):
        """Finish every queued and running batch, then close the store."""
        if self._closed:
            return
        self._closed = True
        lib = _async_lib()
        lib.l3_async_close(self._async)
        lib.l3_async_free(self._async)
        self._async = None
        self._store.close()
        self._held.clear()

    # -- beyond the contract ---------------------------------------------

    def stats(self):
        """The async API's counters and the store's (JSON) stats."""
        s = _AsyncStats()
        _async_lib().l3_async_get_stats(self._live(), ctypes.byref(s))
        out = {name: int(getattr(s, name)) for name, _ in _AsyncStats._fields_}
        out["store"] = self._store.stats()
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- internals ---------------------------------------------------------

    def _live(self):
        if self._closed:
            raise L3Error("L3_ECLOSED", "the connector is closed")
        return self._async

    def _maybe_register(self, address):
        """Register the mapping that holds `address` once, when it is big
        enough to be an engine's L1 pool."""
        if self._register_min <= 0 or self._registered is not None:
            return
        span = _mapping_of(address)
        if span is None or span[1] - span[0] < self._register_min:
            return
        err = _Error()
        status = _async_lib().l3_async_register(self._async, span[0], span[1] - span[0], ctypes.byref(err))
        self._registered = span if status == 0 else (0, 0)

    def _submit(self, kind, keys, views):
        keys = list(keys)
        n = len(keys)
        bufs = lens = None
        held = None
        if views is not None:
            views = list(views)
            if len(views) != n:
                raise ValueError("%d keys but %d buffers" % (n, len(views)))
            spans = [_address(v) for v in views]
            if spans:
                self._maybe_register(spans[0][0])
            bufs = (ctypes.c_void_p * max(n, 1))(*[a for a, _ in spans])
            lens = (ctypes.c_size_t * max(n, 1))(*[length for _, length in spans])
            held = views
        c_keys = _encode_keys(keys)
        err = _Error()
        with self._lock:
            fid = self._next_id
            self._next_id += 1
            self._held[fid] = (held, c_keys, bufs, lens)
            status = _async_lib().l3_async_submit(self._live(), kind, fid, c_keys, n, bufs, lens, ctypes.byref(err))
            if status != 0:
                del self._held[fid]
                self._refused.append((fid, False, err.msg.decode("utf-8", "replace"), None))
        if status != 0:
            os.write(self.event_fd(), (1).to_bytes(8, "little"))  # the refusal is a completion too
        return fid

    def _drain(self):
        lib = _async_lib()
        out = []
        batch = (_AsyncCompletion * 256)()
        got = 256
        while got == 256 and not self._closed:
            got = lib.l3_async_drain(self._async, batch, 256)  # resets the eventfd first
            for i in range(got):
                c = batch[i]
                results = [bool(c.results[k]) for k in range(c.n)] if c.results else None
                error = "" if c.ok else c.error.decode("utf-8", "replace")
                out.append((int(c.id), bool(c.ok), error, results))
                lib.l3_async_completion_release(ctypes.byref(c))
                with self._lock:
                    self._held.pop(int(c.id), None)
        # Refusals last: one made after the eventfd was reset wakes it again.
        with self._lock:
            out.extend(self._refused)
            self._refused.clear()
        return out
