"""Lookups of l3cache's vLLM tier that never hold the scheduler thread for
a large request, after vLLM's own tiers' contract (``AsyncLookupManager``
of vllm/v1/kv_offload/tiering/async_lookup.py): a lookup whose answer is
not known yet returns ``None`` (the tier answers ``RETRY``, and vLLM asks
again next step); the keys asked during a step go to the store as one
batch when the step ends, on l3cache's worker threads, while the model
runs; their answers are there for the next step's lookups.

The first ``sync_per_step`` new keys of a step are asked at once on the
scheduler thread (one index probe each, microseconds), so that a short
request is answered in the step it arrives; every key past that waits for
the batch. Both ways lease what they find (``lease_seconds``), so eviction
in any process keeps a found block until its load.

Answers are kept per key while a request that asked for it is alive
(``cleanup`` when it finishes), as upstream's are.
"""

import logging
from typing import Any, Dict, List, Optional, Set, Tuple

from . import L3Error

logger = logging.getLogger(__name__)

__all__ = ["Lookups", "LOOKUP_BATCH_BASE"]

LOOKUP_BATCH_BASE = 1 << 62  # batch ids of lookups: above any vLLM job id


class _State:
    __slots__ = ("found", "requests", "told")

    def __init__(self) -> None:
        self.found: Optional[bool] = None
        self.requests: Set[str] = set()  # requests that asked
        self.told: Set[str] = set()      # requests that had the answer


class Lookups:
    """The tier's lookups over an ``AsyncStore`` opened with a lease."""

    def __init__(self, io: Any, lease_seconds: float, sync_per_step: int) -> None:
        self._io = io
        self._lease = float(lease_seconds)
        self._sync_max = max(0, int(sync_per_step))
        self._sync_left = self._sync_max
        self._state: Dict[bytes, _State] = {}
        self._req_keys: Dict[str, Set[bytes]] = {}
        self._queued: List[Tuple[bytes, str]] = []      # (offload key, l3cache key), asked this step
        self._batches: Dict[int, List[bytes]] = {}      # batch id -> its offload keys, in flight
        self._next_batch = LOOKUP_BATCH_BASE
        self.sync_probes = 0   # keys asked on the scheduler thread
        self.batched = 0       # keys asked in batches

    def lookup(self, key: bytes, l3_key: str, req_id: str) -> Tuple[Optional[bool], bool]:
        """True (held, leased), False (not held), or None (asked; answer next
        step); and whether this request has the answer for the first time."""
        state = self._state.get(key)
        if state is None:
            state = self._state[key] = _State()
            if self._sync_left > 0:
                self._sync_left -= 1
                self.sync_probes += 1
                state.found = self._lease_now(l3_key)
            else:
                self._queued.append((key, l3_key))
        state.requests.add(req_id)
        self._req_keys.setdefault(req_id, set()).add(key)
        first = state.found is not None and req_id not in state.told
        if first:
            state.told.add(req_id)
        return state.found, first

    def _lease_now(self, l3_key: str) -> bool:
        try:
            return self._io.store.batch_lease([l3_key], self._lease)[0]
        except L3Error as e:
            logger.error("l3cache tier: lookup failed, reported a miss: %s", e)
            return False

    def flush(self) -> None:
        """The step ended: send the keys asked past the budget as one batch."""
        self._sync_left = self._sync_max
        if not self._queued:
            return
        batch_id = self._next_batch
        keys = [k for k, _ in self._queued]
        try:
            self._io.submit("exists", batch_id, [lk for _, lk in self._queued])
        except L3Error as e:  # queue full: the keys wait for the next step's flush
            logger.debug("l3cache tier: lookup batch of %d keys deferred: %s", len(keys), e)
            return
        self._next_batch += 1
        self._batches[batch_id] = keys
        self.batched += len(keys)
        self._queued = []

    def awaiting(self) -> bool:
        """Whether a lookup batch is in flight."""
        return bool(self._batches)

    def completed(self, batch_id: int, ok: bool, results: List[bool]) -> bool:
        """Take a finished batch's answers; False if it was no lookup batch."""
        keys = self._batches.pop(batch_id, None)
        if keys is None:
            return False
        for k, found in zip(keys, results if ok else [False] * len(keys)):
            state = self._state.get(k)
            if state is not None:
                state.found = bool(found)
        return True

    def set(self, key: bytes, found: bool) -> None:
        """A block known stored or removed since it was asked for."""
        state = self._state.get(key)
        if state is not None and state.found is not None:
            state.found = found

    def cleanup(self, req_id: str) -> None:
        """Forget the answers no live request asked for."""
        for k in self._req_keys.pop(req_id, ()):
            state = self._state.get(k)
            if state is None:
                continue
            state.requests.discard(req_id)
            state.told.discard(req_id)
            if not state.requests:
                del self._state[k]
