"""l3cache as LMCache's L2 storage: a connector for the ``native_plugin``
L2 adapter (and so for vLLM through LMCache's multiprocess server), with no
change to LMCache.

    lmcache server --l1-size-gb 100 --eviction-policy LRU \\
      --l2-adapter '{"type": "native_plugin", "module_path": "l3cache.lmcache",
                     "class_name": "L3CacheConnector",
                     "adapter_params": {"config": "/etc/l3cache.json"},
                     "max_capacity_gb": 800}'

LMCache constructs ``L3CacheConnector(**adapter_params)`` and calls its
native connector contract: ``event_fd``, ``submit_batch_get/set/exists``
(and the optional ``submit_batch_delete``), each returning a future id at
once, ``drain_completions`` (``[(future_id, ok, error, per_key_bools)]``)
and ``close``. The I/O runs on l3cache's worker threads (the library's
async API) without the GIL; the eventfd wakes LMCache's demux thread.

What a completion means, as LMCache's adapter reads it:

* SET: ``ok`` is true only when every key was stored (LMCache charges a
  batch's bytes to its usage on ``ok`` alone); the per-key list says which.
* GET: ``ok`` says the batch ran; the list says which keys were read whole.
* EXISTS: the list says which keys are there; each found key is leased for
  ``lease_seconds``, so that eviction, in any process, keeps it until the
  GET that LMCache's lookup-and-lock is followed by.
* DELETE: the list says which keys the store no longer holds: deleted
  now (durably), or gone before (see Removals).

Removals: LMCache counts its L2 usage from these completions (a SET's
stored keys charged, a DELETE's deleted keys subtracted), and an object
the store evicts by its own policy is in neither. The connector reads the
store's removal feed against the keys it stored (``lmcache_removals``):
``removed_keys()`` lists its keys that left the store, and a DELETE of such
a key answers True (the store does not hold it), so that LMCache's own
eviction subtracts it and forgets it instead of choosing it again every
round. ``l3cache.lmcache_plugin.L3CacheL2Adapter`` (LMCache's ``plugin``
adapter type) goes further: it deletes them through LMCache's bridge as
soon as they leave, so LMCache's usage is what the store holds.

Tenants: LMCache's keys carry its per-request ``cache_salt``; the
deployment's tag (``namespace.deployment_id`` of the l3cache config,
:func:`l3cache.keys.tenant_tag`) is folded into every key the connector
names in the store (into the model field: the text before the first
``@``), so two deployments sharing one store file never share a chunk.
The default deployment folds nothing.

Page groups: a SET of LMCache keys (``model@kv_rank@object_group@chunk
hash[@salt]``) names each chunk's group, ``group_id`` of the key without
its worker (``kv_rank``) and object group fields, so that every worker's
and every object group's object of a chunk are admitted, kept and evicted
together; the group's objects are the world size that ``kv_rank``
carries. Keys of another shape go without a group.

Buffers: LMCache's L1 lives in large mappings. Each mapping of at least
``register_min_bytes`` that a buffer comes from is registered with the
store (up to 64), so its objects move by DMA as io_uring fixed buffers;
other aligned buffers go by O_DIRECT without registration, and misaligned
ones through an aligned copy (``stats()["bounced_keys"]``).
"""

import ctypes
import functools
import logging
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, cast

from . import AsyncStore, L3Error, group_id
from .keys import salted, tenant_tag
from .lmcache_removals import RemovalTracker

__all__ = ["L3CacheConnector", "fold_tenant"]

_MAX_REGIONS = 64

CompletionTuple = Tuple[int, bool, str, Optional[List[bool]]]


def _address(view: Any) -> Tuple[int, int]:
    """The address of a buffer's first byte (writable or not), and its length."""
    mv = memoryview(view).cast("B")
    if mv.nbytes == 0:
        return 0, 0
    if not mv.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(mv)), mv.nbytes
    import numpy as np  # a read-only view: numpy reads its address
    return np.frombuffer(mv, dtype=np.uint8).ctypes.data, mv.nbytes


def _mapping_of(address: int) -> Optional[Tuple[int, int]]:
    """The [start, end) of the mapping that holds `address` (/proc/self/maps)."""
    with open("/proc/self/maps", "r", encoding="ascii") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split(None, 1)[0].split("-"))
            if lo <= address < hi:
                return lo, hi
    return None


@functools.lru_cache(maxsize=16)
def _tenant_suffix(tag: str) -> str:
    """What :func:`l3cache.keys.salted` appends for ``tag`` (hashed once)."""
    return salted("", tag)


def fold_tenant(key: Union[str, bytes], tag: str) -> Union[str, bytes]:
    """``key`` as the store names it for the deployment ``tag``: the text
    before its first ``@`` (an LMCache key's model) salted with the tag
    (:func:`l3cache.keys.salted`); unchanged for no tag."""
    if not tag:
        return key
    text = key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key
    head, sep, rest = text.partition("@")
    folded = head + _tenant_suffix(tag) + sep + rest
    return folded.encode("utf-8", "surrogateescape") if isinstance(key, bytes) else folded


def _chunk_group(key: Union[str, bytes]) -> Tuple[int, int]:
    """An LMCache key's group id (the chunk under its model and salt, the
    fields that vary per worker and object group left out) and the world
    size in its kv_rank; (0, 0) for a key of another shape."""
    text = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
    fields = text.split("@")
    if len(fields) not in (4, 5) or not all(fields[1:4]):
        return 0, 0
    try:
        kv_rank = int(fields[1], 16)
        int(fields[2], 16)
        int(fields[3], 16)
    except ValueError:
        return 0, 0
    return group_id("lmc@" + "@".join([fields[0], fields[3]] + fields[4:])), kv_rank >> 24


def _set_hints(keys: Sequence[Union[str, bytes]]) -> Dict[str, Any]:
    """A SET batch's put hints (AsyncStore.submit): each chunk's group and
    the world size, when the batch's keys are LMCache's."""
    parsed = [_chunk_group(k) for k in keys]
    if not any(g for g, _ in parsed):
        return {}
    worlds = {w for g, w in parsed if g}
    return {"groups": [g for g, _ in parsed], "group_objects": worlds.pop() if len(worlds) == 1 else 0}


class L3CacheConnector:
    """An l3cache store behind LMCache's native connector contract.

    ``config``: the l3cache config (a path to a JSON file, JSON text or a
    dict). ``workers``: threads doing the I/O. ``max_pending``: batches
    queued or running before a submit is refused (its completion then says
    so). ``register_min_bytes``: the smallest mapping registered for
    fixed-buffer I/O (0: never register). ``lease_seconds``: how long an
    EXISTS keeps what it found from eviction (0: no lease)."""

    def __init__(self, config: Union[dict, str, None] = None, workers: int = 4, max_pending: int = 256,
                 register_min_bytes: int = 64 << 20, lease_seconds: float = 10.0, **params: Any) -> None:
        if config is None:
            raise ValueError("L3CacheConnector needs config= (an l3cache JSON config path, text or dict)")
        if params:
            raise TypeError("unknown adapter_params: %s" % ", ".join(sorted(params)))
        self._tenant = tenant_tag(config)
        self._io = AsyncStore(config, workers=workers, max_pending=max_pending, lease_seconds=lease_seconds)
        self._removals = RemovalTracker(self._io.store)
        self._lock = threading.Lock()
        self._next_id = 1
        # future id -> (kind, the buffers it uses, (caller's key, store key) of a set or delete)
        self._held: Dict[int, Tuple[str, Any, List[Tuple[Any, Any]], List[bytes]]] = {}
        self._ready: List[CompletionTuple] = []      # completions not yet returned
        self._register_min = int(register_min_bytes)
        self._regions: List[Tuple[int, int]] = []     # registered mappings (start, length)
        self._seen: List[Tuple[int, int]] = []        # mappings looked at (start, end)
        self._closed = False

    # -- the contract ---------------------------------------------------

    def event_fd(self) -> int:
        """The eventfd LMCache polls: readable while completions wait."""
        return self._io.event_fd()

    def submit_batch_get(self, keys: Sequence[Union[str, bytes]], memoryviews: Sequence[Any]) -> int:
        """Read each key's object into its buffer (exactly its length)."""
        return self._submit("get", keys, memoryviews)

    def submit_batch_set(self, keys: Sequence[Union[str, bytes]], memoryviews: Sequence[Any]) -> int:
        """Store each buffer under its key (create-only: an existing key
        succeeds without rewrite)."""
        return self._submit("set", keys, memoryviews)

    def submit_batch_exists(self, keys: Sequence[Union[str, bytes]]) -> int:
        """Per key, whether the store holds it (and a lease on what it holds)."""
        return self._submit("exists", keys, None)

    def submit_batch_delete(self, keys: Sequence[Union[str, bytes]]) -> int:
        """Delete each key (durably: it does not come back after a crash).
        Per key, True when the store no longer holds it: deleted now, or
        gone before (evicted, or deleted by another process)."""
        return self._submit("delete", keys, None)

    def drain_completions(self) -> List[CompletionTuple]:
        """Every finished batch as ``(future_id, ok, error, per_key)``, each
        exactly once. Never raises: a failure to drain is kept for the next
        call and what was drained is returned."""
        drained: List[CompletionTuple] = []
        if not self._closed:
            try:
                for c in self._io.drain():
                    drained.append(self._completion(c))
                self._removals.poll()
            except Exception as e:  # keep what was taken; the error goes to the log
                logging.getLogger(__name__).error("l3cache drain_completions: %s", e)
        with self._lock:
            out, self._ready = self._ready + drained, []
        return out

    def close(self) -> None:
        """Finish every queued and running batch, then close the store."""
        if self._closed:
            return
        self._closed = True
        self._io.close()
        self._held.clear()

    # -- beyond the contract ---------------------------------------------

    def removed_keys(self) -> List[Union[str, bytes]]:
        """The keys this connector stored that have left the store since
        (evicted, deleted by another process, dropped after a failed
        check), oldest first, until a DELETE of them is answered or they
        are stored again."""
        if self._closed:
            return []
        return cast(List[Union[str, bytes]], self._removals.removed())  # the keys LMCache gave

    def stats(self) -> dict:
        """The async API's counters and the store's stats (under "store"),
        and the removal tracker's counts."""
        out = self._io.stats()
        out.update(self._removals.counts())
        return out

    def __enter__(self) -> "L3CacheConnector":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals ---------------------------------------------------------

    def _completion(self, c: Any) -> CompletionTuple:
        with self._lock:
            kind, _, pairs, ids = self._held.pop(c.id, ("", None, [], []))
        ok, error, results = c.ok, c.error, list(c.results)
        if kind == "set":
            self._removals.stored(pairs, ids, results if ok else [False] * len(pairs))
        if kind == "set" and ok:
            if not all(results):
                ok = False
                error = "%d of %d keys not stored (too big for a slab, over the write budget, or the " \
                        "store is full)" % (results.count(False), len(results))
        elif kind == "delete" and ok:
            results = self._removals.settle_delete(pairs, results)
        return (c.id, ok, error, results)

    def _maybe_register(self, address: int) -> None:
        """Register the mapping that holds `address` once, when it is big
        enough to be part of an engine's L1 pool."""
        if self._register_min <= 0 or len(self._regions) >= _MAX_REGIONS:
            return
        if any(lo <= address < hi for lo, hi in self._seen):
            return
        span = _mapping_of(address)
        if span is None:
            return
        self._seen.append(span)
        if span[1] - span[0] < self._register_min:
            return
        regions = self._regions + [(span[0], span[1] - span[0])]
        try:
            self._io.register_hosts(regions)
            self._regions = regions
        except L3Error:
            pass  # unregistered buffers still move by O_DIRECT

    def _submit(self, kind: str, keys: Sequence[Union[str, bytes]], views: Optional[Sequence[Any]]) -> int:
        keys = list(keys)
        n = len(keys)
        store_keys = [fold_tenant(k, self._tenant) for k in keys] if self._tenant else keys
        pairs = list(zip(keys, store_keys)) if kind in ("set", "delete") else []
        addresses = lengths = None
        held = None
        if views is not None:
            views = list(views)
            if len(views) != n:
                raise ValueError("%d keys but %d buffers" % (n, len(views)))
            spans = [_address(v) for v in views]
            for a, _ in spans:
                if a:
                    self._maybe_register(a)
            addresses = [a for a, _ in spans]
            lengths = [length for _, length in spans]
            held = views
        ids = self._removals.submitted(store_keys) if kind == "set" else []
        with self._lock:
            fid = self._next_id
            self._next_id += 1
            self._held[fid] = (kind, held, pairs, ids)
        try:
            self._io.submit(kind, fid, store_keys, addresses, lengths,
                            **(_set_hints(store_keys) if kind == "set" else {}))
        except (L3Error, ValueError) as e:  # a refusal is a completion too
            self._removals.abandoned(ids)
            with self._lock:
                self._held.pop(fid, None)
                self._ready.append((fid, False, str(e), [False] * n))
            if not self._closed:
                self._io.wake()
        return fid
