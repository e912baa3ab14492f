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
from typing import Callable, Dict, Iterable, List, NamedTuple, Set, Tuple, Union

from ._ffi import KEY_ID_BYTES, load
from ._ffi import Removal as _CRemoval

__all__ = ["InFlight", "Removal", "RemovalFeed", "key_id"]


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
    it (16 bytes: its 64-bit hash and length, opaque)."""
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


class InFlight:
    """Keys of puts in flight, by identity, and which of them a removal
    may have raced: a put completes in the store before its caller hears
    of it, so a removal read meanwhile (or a removal missed) may be of the
    new object. A reader tracking what the store holds marks keys pending
    at submit (``add``), tells this of every removal it reads (``removed``)
    and of every miss (``missed``), and at completion takes the keys back
    (``release``): a suspect key must be asked of the store. Not
    thread-safe: the caller's lock."""

    def __init__(self) -> None:
        self._pending: Dict[bytes, int] = {}  # key id -> puts in flight
        self._suspect: Set[bytes] = set()

    def add(self, ids: Iterable[bytes]) -> None:
        """Puts of these key ids are in flight."""
        for kid in ids:
            self._pending[kid] = self._pending.get(kid, 0) + 1

    def removed(self, kid: bytes) -> None:
        """A removal of `kid` was read: suspect if a put of it is in flight."""
        if kid in self._pending:
            self._suspect.add(kid)

    def missed(self) -> None:
        """Removals were missed: every key in flight is suspect."""
        self._suspect.update(self._pending)

    def release(self, ids: Iterable[bytes]) -> Set[bytes]:
        """Puts of these key ids completed (or were never submitted): which
        of them were suspect."""
        suspect = set()
        for kid in ids:
            if kid in self._suspect:
                suspect.add(kid)
            n = self._pending.get(kid, 0)
            if n > 1:
                self._pending[kid] = n - 1
            else:
                self._pending.pop(kid, None)
                self._suspect.discard(kid)
        return suspect
