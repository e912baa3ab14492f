"""The removal feed: every object that leaves the store (evicted, deleted,
removed with its namespace, dropped after a failed check or read, or with
its page's group), announced in order to every process that reads it.

The feed is a bounded ring in the store's shared mapping: each reader
keeps its own cursor, and one that falls a ring behind is told how many
removals it missed (``missed``), never silently. The store keeps no key
strings in memory, only their identity: a removal names its key by
:func:`key_id`, so a reader that wants names keeps ``key_id(key) -> name``
for the keys it cares about.
"""

import ctypes
from typing import List, NamedTuple, Tuple, Union

from . import L3Error, _load

__all__ = ["Removal", "RemovalFeed", "key_id"]

KEY_ID_BYTES = 16


class _Removal(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint64), ("key_id", ctypes.c_uint8 * KEY_ID_BYTES),
                ("reason", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


class Removal(NamedTuple):
    """One object that left the store: its place in the feed, its key's
    identity (:func:`key_id`) and why ("evicted", "deleted", "namespace",
    "corrupt", "lost" or "group")."""

    seq: int
    key_id: bytes
    reason: str


def _feed_lib():
    lib = _load()
    if getattr(lib, "_l3_feed_ready", False):
        return lib
    P, S = ctypes.c_void_p, ctypes.c_size_t
    u64p = ctypes.POINTER(ctypes.c_uint64)
    sig = {
        "l3_key_id_bytes": (None, [ctypes.c_char_p, S, ctypes.POINTER(ctypes.c_uint8 * KEY_ID_BYTES)]),
        "l3_removal_reason_name": (ctypes.c_char_p, [ctypes.c_uint32]),
        "l3_slabstore_removal_start": (ctypes.c_uint64, [P, ctypes.c_bool]),
        "l3_slabstore_removals": (S, [P, u64p, ctypes.POINTER(_Removal), S, u64p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    lib._l3_feed_reasons = {r: lib.l3_removal_reason_name(r).decode() for r in range(8)}
    lib._l3_feed_ready = True
    return lib


def key_id(key: Union[str, bytes]) -> bytes:
    """The identity of ``key`` as the store indexes it and the feed reports
    it (16 bytes: its 64-bit hash, crc32c and length)."""
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    out = (ctypes.c_uint8 * KEY_ID_BYTES)()
    _feed_lib().l3_key_id_bytes(raw, len(raw), ctypes.byref(out))
    return bytes(out)


class RemovalFeed:
    """A reader of a store's removal feed (``Store.removal_feed``), with its
    own cursor. Not thread-safe: one reader per thread."""

    def __init__(self, store: "object", handle: int, start: str = "now") -> None:
        if start not in ("now", "oldest"):
            raise ValueError("start is 'now' or 'oldest', not %r" % (start,))
        self._store = store  # kept alive with the reader
        self._handle = handle
        self._cursor = ctypes.c_uint64(_feed_lib().l3_slabstore_removal_start(handle, start == "oldest"))
        self.missed = 0

    @property
    def cursor(self) -> int:
        """The next removal this reader reads."""
        return self._cursor.value

    def read(self, max_events: int = 4096) -> Tuple[List[Removal], int]:
        """The removals since the last read, in order (at most
        ``max_events``), and how many were overwritten before this reader
        read them (0 unless it fell a ring behind)."""
        if max_events <= 0:
            raise ValueError("max_events must be positive")
        live = getattr(self._store, "_handle", None)
        if live is None:
            raise L3Error("L3_ECLOSED", "the store is closed")
        lib = _feed_lib()
        out = (_Removal * max_events)()
        missed = ctypes.c_uint64(0)
        n = lib.l3_slabstore_removals(self._handle, ctypes.byref(self._cursor), out, max_events,
                                      ctypes.byref(missed))
        self.missed += missed.value
        names = lib._l3_feed_reasons
        return [Removal(out[i].seq, bytes(out[i].key_id), names.get(out[i].reason, "unknown"))
                for i in range(n)], missed.value
