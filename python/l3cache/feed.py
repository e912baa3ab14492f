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
from typing import Callable, Dict, List, NamedTuple, Tuple, Union

from ._ffi import KEY_ID_BYTES, load
from ._ffi import Removal as _CRemoval

__all__ = ["Removal", "RemovalFeed", "key_id"]


class Removal(NamedTuple):
    """One object that left the store: its place in the feed, its key's
    identity (:func:`key_id`) and why ("evicted", "deleted", "namespace",
    "corrupt", "lost" or "group")."""

    seq: int
    key_id: bytes
    reason: str


_REASONS: Dict[int, str] = {}


def _reason(code: int) -> str:
    if not _REASONS:
        lib = load()
        _REASONS.update({r: lib.l3_removal_reason_name(r).decode() for r in range(8)})
    return _REASONS.get(code, "unknown")


def key_id(key: Union[str, bytes]) -> bytes:
    """The identity of ``key`` as the store indexes it and the feed reports
    it (16 bytes: its 64-bit hash, crc32c and length)."""
    raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    out = (ctypes.c_uint8 * KEY_ID_BYTES)()
    load().l3_key_id_bytes(raw, len(raw), ctypes.byref(out))
    return bytes(out)


class RemovalFeed:
    """A reader of a store's removal feed (``Store.removal_feed``), with its
    own cursor. Not thread-safe: one reader per thread."""

    def __init__(self, slabstore: Callable[[], int], start: str = "now") -> None:
        if start not in ("now", "oldest"):
            raise ValueError("start is 'now' or 'oldest', not %r" % (start,))
        self._slabstore = slabstore  # the store's l3_slabstore *, or L3Error once it is closed
        self._cursor = ctypes.c_uint64(load().l3_slabstore_removal_start(slabstore(), start == "oldest"))
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
        handle = self._slabstore()
        lib = load()
        out = (_CRemoval * max_events)()
        missed = ctypes.c_uint64(0)
        n = lib.l3_slabstore_removals(handle, ctypes.byref(self._cursor), out, max_events,
                                      ctypes.byref(missed))
        self.missed += missed.value
        return [Removal(out[i].seq, bytes(out[i].key_id), _reason(out[i].reason))
                for i in range(n)], missed.value
