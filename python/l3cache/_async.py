"""The asynchronous key-level API (``l3_async.h``): batches of get / set /
exists / delete over (key, address, length), run on l3cache's worker
threads without the GIL, finished batches drained as completions while an
eventfd says some wait. The engine adapters (LMCache's connector, vLLM's
tier) are built on it."""

import ctypes
import os
import threading
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ._ffi import (AsyncCompletion, AsyncOptions, AsyncStats, Error, L3Error, check, encode_keys, host_array, load,
                   put_hints)
from .store import Store

__all__ = ["AsyncStore", "Completion"]

_KINDS = {"get": 0, "set": 1, "exists": 2, "delete": 3}
_NAMES = {v: k for k, v in _KINDS.items()}


class Completion(NamedTuple):
    """A finished batch: ``ok`` says the batch ran (``error`` says why not);
    ``results[i]`` says key i was read whole (get), stored (set), found
    (exists) or deleted (delete); all False when not ``ok``."""

    id: int
    kind: str
    ok: bool
    error: str
    results: List[bool]


class AsyncStore:
    """An l3cache store behind the asynchronous API.

    ``config``: an l3cache config (a dict, JSON text or a path). ``workers``:
    threads doing the I/O. ``max_pending``: batches queued or running
    before a submit is refused with ``L3Error("L3_EBUSY")``.
    ``lease_seconds``: an exists batch keeps what it finds from eviction
    (in any process) this long, for the get that follows (0: no lease).
    The buffers a batch names must stay valid until its completion is
    drained."""

    def __init__(self, config: Union[dict, str], workers: int = 4, max_pending: int = 256,
                 lease_seconds: float = 0.0) -> None:
        lib = load()
        self.store = Store(config)
        handle = ctypes.c_void_p()
        err = Error()
        opts = AsyncOptions(int(workers), int(max_pending), float(lease_seconds))
        try:
            check(lib.l3_async_open(self.store.handles()[1], ctypes.byref(opts), ctypes.byref(handle),
                                    ctypes.byref(err)), err)
        except L3Error:
            self.store.close()
            raise
        self._handle: Optional[int] = handle.value
        self._keep: dict = {}  # batch id -> the ctypes arrays it uses
        self._lock = threading.Lock()

    def _live(self) -> int:
        if self._handle is None:
            raise L3Error("L3_ECLOSED", "the async store is closed")
        return self._handle

    def event_fd(self) -> int:
        """The eventfd that is readable while completions wait."""
        return load().l3_async_event_fd(self._live())

    def register_hosts(self, regions: Sequence[Tuple[int, int]]) -> None:
        """Register Host regions ``[(address, nbytes), ...]`` for zero-copy
        fixed-buffer I/O, replacing what was registered (``[]`` clears);
        buffers in them move by DMA straight to the device."""
        err = Error()
        check(load().l3_async_register_hosts(self._live(), host_array(regions), len(regions),
                                             ctypes.byref(err)), err)

    def submit(self, kind: str, batch_id: int, keys: Sequence[Union[str, bytes]],
               addresses: Optional[Sequence[int]] = None, lengths: Optional[Sequence[int]] = None, *,
               groups: Optional[Sequence[int]] = None, group_objects: Optional[int] = None,
               last_is_partial: Optional[bool] = None, whole: Optional[bool] = None) -> None:
        """Queue a batch: ``kind`` is get, set, exists or delete; get and set
        name a buffer (address, length) per key. A set may carry put hints
        (``groups``, ``group_objects``, ``last_is_partial``, ``whole``: as
        ``Store.batch_put_from``'s; copied at once); given any of them the
        batch goes by ``l3_async_submit_hinted``. Raises L3Error: L3_EBUSY
        when ``max_pending`` batches are queued or running, L3_ECLOSED after
        close (nothing is queued then), L3_EINVAL for hints on another kind."""
        n = len(keys)
        c_keys = encode_keys(keys)
        hints = put_hints(n, groups, group_objects, last_is_partial, whole)
        bufs = lens = None
        if kind in ("get", "set"):
            if addresses is None or lengths is None or len(addresses) != n or len(lengths) != n:
                raise ValueError("a %s batch needs an address and a length per key" % kind)
            bufs = (ctypes.c_void_p * max(n, 1))(*[int(a) for a in addresses])
            lens = (ctypes.c_size_t * max(n, 1))(*[int(x) for x in lengths])
        err = Error()
        with self._lock:
            self._keep[int(batch_id)] = (c_keys, bufs, lens)
            status = self._submit(_KINDS[kind], int(batch_id), c_keys, n, bufs, lens, hints, err)
            if status != 0:
                del self._keep[int(batch_id)]
        check(status, err)

    def _submit(self, kind, batch_id, c_keys, n, bufs, lens, hints, err):
        lib = load()
        if hints is None:
            return lib.l3_async_submit(self._live(), kind, batch_id, c_keys, n, bufs, lens, ctypes.byref(err))
        return lib.l3_async_submit_hinted(self._live(), kind, batch_id, c_keys, n, bufs, lens, ctypes.byref(hints),
                                          ctypes.byref(err))

    def drain(self, max_completions: int = 256) -> List[Completion]:
        """Every finished batch so far, without blocking (resets the eventfd
        first, so a batch that finishes meanwhile wakes it again)."""
        lib = load()
        handle = self._live()
        out: List[Completion] = []
        batch = (AsyncCompletion * max_completions)()
        got = max_completions
        while got == max_completions:
            got = lib.l3_async_drain(handle, batch, max_completions)
            for i in range(got):
                c = batch[i]
                results = [bool(c.results[k]) for k in range(c.n)] if c.results else [False] * c.n
                error = "" if c.ok else c.error.decode("utf-8", "replace")
                out.append(Completion(int(c.id), _NAMES.get(c.kind, "?"), bool(c.ok), error, results))
                lib.l3_async_completion_release(ctypes.byref(c))
                with self._lock:
                    self._keep.pop(int(c.id), None)
        return out

    def wake(self) -> None:
        """Make the eventfd readable (for a completion made outside l3cache)."""
        os.write(self.event_fd(), (1).to_bytes(8, "little"))

    def stats(self) -> dict:
        """The async API's counters, and the store's stats under "store"."""
        s = AsyncStats()
        load().l3_async_get_stats(self._live(), ctypes.byref(s))
        out: Dict[str, Any] = {name: int(getattr(s, name)) for name, _ in AsyncStats._fields_}
        out["store"] = self.store.stats()
        return out

    def close(self) -> None:
        """Run every queued batch to its end, then close the store; idempotent.
        Undrained completions are released."""
        if self._handle is None:
            return
        lib = load()
        lib.l3_async_close(self._handle)
        lib.l3_async_free(self._handle)
        self._handle = None
        self._keep.clear()
        self.store.close()

    def __enter__(self) -> "AsyncStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
