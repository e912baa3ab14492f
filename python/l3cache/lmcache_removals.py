"""Which of the LMCache connector's keys have left the store, whoever
removed them: the store's removal feed, read against the keys the
connector stored.

LMCache keeps its L2 usage from the connector's completions: a SET's
stored keys are charged, a DELETE's deleted keys subtracted. An object
the store evicts by its own policy (or another process deletes, or a
failed check drops) is in neither, so LMCache would go on counting it.
The tracker keeps ``key_id(store key) -> the caller's key`` for every key
the connector stored, reads the feed, and holds the caller's keys that
left until a DELETE of them is answered (True: they are gone) or they are
stored again. A reader that fell a ring behind (``missed``) asks the store
which of its keys it still holds instead.

A SET in flight races the feed: its keys may be evicted (or an older copy
of them removed) after the store published them and before the connector
hears of the completion. So the keys of a SET are pending from its submit
to its completion; a removal of a pending key read meanwhile (or any
missed removal) makes the key suspect, and a suspect key is tracked only
if the store still holds it when the SET completes, gone otherwise. Every
removal up to the completion is read before its keys are tracked, so a
removal read later is newer than the key's store.
"""

import threading
from typing import Dict, Hashable, List, Optional, Sequence, Tuple, Union

from . import Store
from .feed import InFlight, RemovalFeed, key_id

StoreKey = Union[str, bytes]  # a key as the store names it

__all__ = ["RemovalTracker"]

_READ = 256      # removals read at a time (the feed's ring holds tens of thousands)
_EXISTS = 4096   # keys asked at a time when resyncing
_GONE_KEEP = 1 << 20  # keys gone and unanswered kept at most (the oldest forgotten: LMCache never asked)


class RemovalTracker:
    """The caller's keys that left ``store`` since they were stored.

    Thread-safe. Its memory is one entry per key the connector stored
    that the store still holds, and one per key that left and that no
    DELETE has answered yet. ``feed``: the reader to use (by default one
    of ``store``'s, from now on)."""

    def __init__(self, store: Store, feed: Optional[RemovalFeed] = None) -> None:
        self._store = store
        self._feed = feed if feed is not None else store.removal_feed("now")
        self._lock = threading.Lock()
        self._tracked: Dict[bytes, Tuple[Hashable, StoreKey]] = {}  # key id -> (caller's key, store key)
        self._gone: Dict[Hashable, None] = {}  # caller's keys that left, oldest first
        self._in_flight = InFlight()           # key ids of SETs in flight, and those a removal raced
        self.resyncs = 0

    def submitted(self, store_keys: Sequence[StoreKey]) -> List[bytes]:
        """A SET of `store_keys` is about to be submitted: they are pending
        until ``stored`` (or ``abandoned``). Returns their key ids."""
        ids = [key_id(k) for k in store_keys]
        with self._lock:
            self._in_flight.add(ids)
        return ids

    def abandoned(self, ids: Sequence[bytes]) -> None:
        """A SET that was never submitted: its keys are no longer pending."""
        with self._lock:
            self._in_flight.release(ids)

    def stored(self, pairs: Sequence[Tuple[Hashable, StoreKey]], ids: Sequence[bytes],
               results: Sequence[bool]) -> None:
        """A SET of ``(caller's key, store key)`` pairs (their key ids from
        ``submitted``) completed with `results`: the stored keys are tracked
        from now on (and no longer gone, if they had left before), unless a
        removal raced the SET and the store no longer holds them."""
        with self._lock:
            self._poll_locked()
            suspect = self._in_flight.release(ids)
            doubt = [i for i, (kid, ok) in enumerate(zip(ids, results)) if ok and kid in suspect]
            held = dict(zip(doubt, self._store.batch_exists([pairs[i][1] for i in doubt]))) if doubt else {}
            for i, ((caller, store_key), kid, ok) in enumerate(zip(pairs, ids, results)):
                if not ok:
                    continue
                if held.get(i, True):
                    self._tracked[kid] = (caller, store_key)
                    self._gone.pop(caller, None)
                else:
                    self._gone[caller] = None

    def poll(self) -> None:
        """Read the feed: the tracked keys that left become gone."""
        with self._lock:
            self._poll_locked()

    def removed(self) -> List[Hashable]:
        """The caller's keys that left the store and that no DELETE has
        answered yet, oldest first."""
        with self._lock:
            self._poll_locked()
            return list(self._gone)

    def settle_delete(self, pairs: Sequence[Tuple[Hashable, StoreKey]], deleted: Sequence[bool]) -> List[bool]:
        """A DELETE's answer per key: deleted now, or gone before (either
        way the store does not hold it). Its keys are no longer tracked."""
        with self._lock:
            self._poll_locked()
            out = []
            for (caller, store_key), now in zip(pairs, deleted):
                was_gone = caller in self._gone
                self._gone.pop(caller, None)
                self._tracked.pop(key_id(store_key), None)
                out.append(bool(now) or was_gone)
            return out

    def counts(self) -> Dict[str, int]:
        """How many keys are tracked, how many are gone and unanswered, and
        how often the tracker resynced after missing removals."""
        with self._lock:
            return {"tracked_keys": len(self._tracked), "removed_unanswered": len(self._gone),
                    "feed_resyncs": self.resyncs}

    def _poll_locked(self) -> None:
        missed = 0
        while True:
            events, m = self._feed.read(_READ)
            missed += m
            for removal in events:
                self._in_flight.removed(removal.key_id)
                entry = self._tracked.pop(removal.key_id, None)
                if entry is not None:
                    self._gone[entry[0]] = None
            if len(events) < _READ:
                break
        if missed:
            self._in_flight.missed()
            self._resync_locked()
        while len(self._gone) > _GONE_KEEP:
            del self._gone[next(iter(self._gone))]

    def _resync_locked(self) -> None:
        """Removals were missed: ask the store which tracked keys it holds."""
        self.resyncs += 1
        items = list(self._tracked.items())
        for at in range(0, len(items), _EXISTS):
            part = items[at:at + _EXISTS]
            found = self._store.batch_exists([store_key for _, (_, store_key) in part])
            for (kid, (caller, _)), there in zip(part, found):
                if not there:
                    del self._tracked[kid]
                    self._gone[caller] = None
