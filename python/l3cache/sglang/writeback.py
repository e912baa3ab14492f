"""The chained SGLang backend's ``write_back`` mode: pages reach the next
backend after the backup call, copied from l3cache, not from the Host pool.

l3cache cannot write a page to the next tier when it evicts it: the
removal feed announces an eviction after the bytes are gone. Nor can a
copy wait on the Host pool: SGLang frees (buffer_only) or may reuse a
page's Host slots once its backup call is acknowledged. So a backup call
stores its pages in l3cache and queues them here; a background thread
reads each queued page back from l3cache into its own buffer and writes
it to the next backend by value, oldest first. What that guarantees:

- a page stored in l3cache reaches the next tier unless l3cache removes it
  before the thread gets to it; the feed tells the thread at once (and a
  read that misses tells it too), and the page counts in ``lost``;
- the queue is bounded (``write_back_queue`` pages); a page that finds it
  full is not queued and counts in ``dropped`` (it stays in l3cache only);
- a failed write to the next backend counts in ``failed``, not retried;
- ``flush(timeout)`` waits until every queued page was written or counted;
  ``close`` flushes (bounded) before it stops the thread.
"""

import collections
import logging
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from ..feed import key_id

logger = logging.getLogger(__name__)

__all__ = ["WriteBack"]

_BATCH = 32  # pages read and written per step


class WriteBack:
    """A bounded queue of pages to copy from l3cache to the next backend,
    drained by one background thread.

    ``read(keys) -> list`` reads pages from l3cache by value (a tensor or
    None per key); ``write(keys, tensors) -> bool`` writes them to the next
    backend; ``feed`` is a reader of the l3cache store's removal feed (or
    None); ``store_key(key)`` is the key l3cache stores a page under (the
    feed names that key's identity)."""

    def __init__(self, read: Callable[[List[str]], List[Any]], write: Callable[[List[str], List[Any]], bool],
                 feed: Any = None, capacity: int = 4096, store_key: Callable[[str], str] = str) -> None:
        self._read, self._write, self._feed, self._store_key = read, write, feed, store_key
        self.capacity = max(1, int(capacity))
        self._queue: "collections.OrderedDict[bytes, str]" = collections.OrderedDict()  # key_id -> key
        self._cv = threading.Condition()
        self._busy = 0  # pages taken off the queue, not yet counted
        self._paused = False
        self._stop = False
        self.counts: Dict[str, int] = {"queued": 0, "written": 0, "lost": 0, "dropped": 0, "failed": 0,
                                       "lost_by_feed": 0}  # of lost: known from the feed before a read
        self._thread = threading.Thread(target=self._run, name="l3cache-write-back", daemon=True)
        self._thread.start()

    def add(self, keys: List[str]) -> None:
        """Queue pages l3cache has just stored."""
        with self._cv:
            for key in keys:
                kid = key_id(self._store_key(key))
                if kid in self._queue:
                    continue
                if len(self._queue) >= self.capacity:
                    self.counts["dropped"] += 1
                    continue
                self._queue[kid] = key
                self.counts["queued"] += 1
            self._cv.notify_all()

    def pause(self) -> None:
        """Hold the thread after its current step (pages still queue)."""
        with self._cv:
            self._paused = True

    def resume(self) -> None:
        """Let the thread go on."""
        with self._cv:
            self._paused = False
            self._cv.notify_all()

    def pending(self) -> int:
        """Pages queued or being written."""
        with self._cv:
            return len(self._queue) + self._busy

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued page was written or counted; False if
        the timeout came first."""
        deadline = time.monotonic() + timeout
        with self._cv:
            self._paused = False
            self._cv.notify_all()
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(min(left, 0.05))
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Flush (at most ``timeout`` seconds), then stop the thread."""
        if not self.flush(timeout):
            logger.warning("l3cache: write-back closed with %d pages not written to the next backend",
                           self.pending())
        with self._cv:
            self._stop = True
            self._cv.notify_all()
        self._thread.join(timeout=5.0)

    # ---- the thread ---------------------------------------------------------

    def _note_removals(self) -> None:
        """Pages the store removed before they were copied: lost."""
        if self._feed is None:
            return
        try:
            events, _missed = self._feed.read()
        except Exception as e:  # a feed that fails is given up; reads still find lost pages
            logger.warning("l3cache: write-back stops reading the removal feed: %s", e)
            self._feed = None
            return
        with self._cv:
            for event in events:
                if self._queue.pop(event.key_id, None) is not None:
                    self.counts["lost"] += 1
                    self.counts["lost_by_feed"] += 1
            self._cv.notify_all()

    def _take(self) -> Optional[List[str]]:
        with self._cv:
            while not self._stop and (self._paused or not self._queue):
                self._cv.wait(0.05)
                if self._feed is not None and not self._paused:
                    break
            if self._stop:
                return None
            keys: List[str] = []
            while self._queue and len(keys) < _BATCH and not self._paused:
                keys.append(self._queue.popitem(last=False)[1])
            self._busy += len(keys)
            return keys

    def _step(self, keys: List[str]) -> None:
        counts = {"written": 0, "lost": 0, "failed": 0}
        try:
            pages = self._read(keys)
            found = [(k, p) for k, p in zip(keys, pages) if p is not None]
            counts["lost"] = len(keys) - len(found)
            if found:
                ok = self._write([k for k, _ in found], [p for _, p in found])
                counts["written" if ok else "failed"] += len(found)
        except Exception as e:
            logger.error("l3cache: write-back of %d pages failed: %s", len(keys), e)
            counts = {"written": 0, "lost": 0, "failed": len(keys)}
        with self._cv:
            for name, n in counts.items():
                self.counts[name] += n
            self._busy -= len(keys)
            self._cv.notify_all()

    def _run(self) -> None:
        while True:
            self._note_removals()
            keys = self._take()
            if keys is None:
                return
            if keys:
                self._step(keys)
