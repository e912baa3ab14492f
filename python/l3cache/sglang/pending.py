"""A backup's TRAILING_PAGES states wait for their page's KV.

A backup names its TRAILING_PAGES states (a Mamba or SWA pool's, a draft
model's: the state of the node's last page) in ``batch_set_v2`` before
the node's KV pages go by ``batch_set_v1``. A state is written right
after the KV batch that ends with its page, when every page of that batch
was stored, and dropped when not (a declined or failed KV batch: a prefix
is usable only up to a page with its state, and a Mamba state weighs as
much as tens of KV pages). This follows SGLang's backup order
(HybridCacheController._page_backup: the state's batch_set_v2 first, keyed
by the node's last page, then the node's batch_set_v1 calls, one thread,
the state's Host slot locked until the backup is acknowledged); the
stand-in's controller checks it. Each thread's states are its own: a
prefetch's puts settle none.
"""

import threading
from typing import Any, Callable, List, Sequence, Tuple

from .common import Pool

Write = Callable[[Pool, List[str], Any], Any]  # write(pool, state keys, host indices)


class PendingStates:
    """The states held until their page's KV is stored, per thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: List[Tuple[Pool, List[str], Any, int]] = []
        self.dropped = 0  # states not written: their page's KV was not stored

    def hold(self, pool: Pool, keys: List[str], indices: Any) -> None:
        """Hold a state (its pool, keys and Host slots) for this thread."""
        with self._lock:
            self._held.append((pool, keys, indices, threading.get_ident()))

    def held(self) -> int:
        """States held now, every thread's."""
        with self._lock:
            return len(self._held)

    def drop_all(self) -> None:
        """A new backup, or close: what is held never met its last page."""
        with self._lock:
            self.dropped += sum(len(p[1]) for p in self._held)
            self._held = []

    def settle(self, keys: Sequence[str], ok: Sequence[bool], write: Write) -> None:
        """After this thread's KV put of `keys` (`ok` per key): the held
        states whose page is the batch's last are written (`write`) when
        the batch's pages were stored and dropped when not; a failed batch
        ends its backup (SGLang stops there), and the state with it."""
        me = threading.get_ident()
        with self._lock:
            last = keys[-1] if keys else None
            mine = [p for p in self._held if p[3] == me]
            if not mine or last is None or (all(ok) and all(p[1][-1] != last for p in mine)):
                return
            self._held = [p for p in self._held if p[3] != me]
        for pool, state_keys, indices, _ in mine:  # (every pool's state of one node)
            if state_keys[-1] == last and all(ok):
                write(pool, state_keys, indices)
            else:
                with self._lock:
                    self.dropped += len(state_keys)
