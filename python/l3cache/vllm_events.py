"""KV events of l3cache's vLLM tier: ``BlockStored`` for every block a
store job wrote, ``BlockRemoved`` for every announced block that left the
store, as vLLM's own file-system and object tiers emit them (an
``OffloadingEvent`` per batch of offload keys, with the tier's medium and
locality, which vLLM's offloading connector turns into ``BlockStored`` /
``BlockRemoved`` for the router).

Removals come from the store's removal feed (``Store.removal_feed``), which
announces every object that leaves the store, whoever removed it (this
scheduler, another process on the same store, eviction). The tracker keeps
``key_id(l3 key) -> offload key`` for the blocks it announced stored; a
removal of one of them is announced and forgotten, a removal of anything
else is ignored. A reader that fell behind the feed's ring (``missed`` >
0) cannot tell which removals it lost, so it reconciles: it asks the store
which announced blocks still exist, a bounded batch per call, and
announces the rest removed.

A store job races the feed: its blocks may be evicted after the store
published them and before the tier collects the job. So a store job's
blocks are pending from its submit to its collection; a removal of a
pending block read meanwhile (or any missed removal) makes it suspect, and
a suspect block is announced only if the store still holds it then.

Every call does bounded work (the scheduler thread calls ``take`` once a
step): at most ``events_per_step`` removals read from the feed, and at
most ``reconcile_batch`` announced blocks checked while a reconcile runs.
"""

import logging
from collections import deque
from typing import Any, Callable, Deque, Dict, Iterable, List, Optional

from . import L3Error
from .feed import InFlight, RemovalFeed, key_id

logger = logging.getLogger(__name__)

__all__ = ["TierEvents"]

EventFactory = Callable[[List[bytes], bool], Any]


class TierEvents:
    """Stored and removed events of one tier over one store.

    ``store``: the tier's ``l3cache.Store``; ``l3_key``: an offload key's
    l3cache key; ``make_event(keys, removed)``: the engine's event for a
    batch of offload keys (vLLM's ``OffloadingEvent`` with the tier's
    medium and locality)."""

    def __init__(self, store: Any, l3_key: Callable[[bytes], str], make_event: EventFactory,
                 events_per_step: int = 4096, reconcile_batch: int = 1024) -> None:
        self._store = store
        self._l3_key = l3_key
        self._make = make_event
        self._per_step = max(1, int(events_per_step))
        self._reconcile_batch = max(1, int(reconcile_batch))
        self._feed: Optional[RemovalFeed] = None
        if hasattr(store, "removal_feed"):
            self._feed = store.removal_feed(start="now")
        else:
            logger.warning("l3cache tier: this l3cache has no removal feed; BlockStored events are emitted, "
                           "but no BlockRemoved: a router will not learn of blocks the store evicts")
        self._announced: Dict[bytes, bytes] = {}  # key_id(l3 key) -> offload key, announced stored
        self._fresh: Dict[bytes, bytes] = {}      # of them, announced since the feed was last read whole
        self._out: List[Any] = []                 # events not yet taken
        self._reconcile: Deque[bytes] = deque()   # key ids still to check after a miss
        self._in_flight = InFlight()              # key ids of store jobs in flight, and those a removal raced
        self.missed = 0                           # removals the feed overwrote before they were read
        self.reconciled = 0                       # blocks a reconcile found gone

    @property
    def announced(self) -> int:
        """Blocks announced stored and not (yet) announced removed."""
        return len(self._announced)

    def submitted(self, keys: Iterable[bytes]) -> None:
        """A store job of `keys` is about to be submitted: pending until its
        ``stored`` call."""
        if self._feed is None:
            return
        self._in_flight.add(key_id(self._l3_key(k)) for k in keys)

    def stored(self, keys: Iterable[bytes], job_keys: Optional[Iterable[bytes]] = None) -> None:
        """Announce the blocks a store job wrote (`keys`; `job_keys`: all the
        job's, as ``submitted`` named them): those a removal raced are
        announced only if the store still holds them."""
        keys = list(keys)
        if self._feed is not None:
            job = keys if job_keys is None else list(job_keys)
            job_ids = [key_id(self._l3_key(k)) for k in job]  # each key's identity, once
            ids = dict(zip(job, job_ids))
            suspect = self._in_flight.release(job_ids)
            doubt = [k for k in keys if ids[k] in suspect]
            if doubt:
                held = self._store.batch_exists([self._l3_key(k) for k in doubt])
                lost = {k for k, there in zip(doubt, held) if not there}
                keys = [k for k in keys if k not in lost]
            for k in keys:
                self._announced[ids[k]] = k
                self._fresh[ids[k]] = k
        if keys:
            self._out.append(self._make(keys, False))

    def take(self) -> List[Any]:
        """The events since the last call, in order; reads the feed (bounded)."""
        if self._feed is not None:
            try:
                self._read_feed()
            except L3Error as e:
                logger.error("l3cache tier: reading the removal feed: %s", e)
        out, self._out = self._out, []
        return out

    # ---- the feed -----------------------------------------------------------

    def _read_feed(self) -> None:
        assert self._feed is not None
        removals, missed = self._feed.read(max_events=self._per_step)
        fresh = self._fresh
        if len(removals) < self._per_step:
            # Caught up: a block announced from now on is newer than every
            # removal read so far. (Not caught up, a removal still unread may
            # predate a block announced since: it stays fresh.)
            self._fresh = {}
        gone: List[bytes] = []
        check: Dict[bytes, bytes] = {}
        for r in removals:
            self._in_flight.removed(r.key_id)
            k = self._announced.get(r.key_id)
            if k is None:
                continue
            if r.key_id in fresh:
                # Announced since the last read: this removal may be older
                # than the put that brought the block back. The store decides.
                check[r.key_id] = k
            else:
                del self._announced[r.key_id]
                gone.append(k)
        if check:
            gone += self._gone(check)
        if missed:
            self._in_flight.missed()
            self.missed += missed
            logger.warning("l3cache tier: %d removals left the feed unread; checking the %d announced blocks",
                           missed, len(self._announced))
            self._reconcile = deque(self._announced)
        if self._reconcile:
            batch: Dict[bytes, bytes] = {}
            while self._reconcile and len(batch) < self._reconcile_batch:
                kid = self._reconcile.popleft()
                if kid in self._announced:
                    batch[kid] = self._announced[kid]
            lost = self._gone(batch)
            self.reconciled += len(lost)
            gone += lost
        if gone:
            self._out.append(self._make(gone, True))

    def _gone(self, blocks: Dict[bytes, bytes]) -> List[bytes]:
        """Of announced blocks (key id -> offload key), those the store no
        longer holds, forgotten."""
        if not blocks:
            return []
        ids = list(blocks)
        held = self._store.batch_exists([self._l3_key(blocks[i]) for i in ids])
        gone = []
        for kid, there in zip(ids, held):
            if not there:
                gone.append(self._announced.pop(kid))
        return gone
