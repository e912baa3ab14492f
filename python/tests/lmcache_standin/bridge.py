"""LMCache's bridge from its L2 interface to a native client
(``NativeConnectorL2Adapter``, ``native_connector_l2_adapter.py``), at the
text of the capacity-reservation PR named in ``__init__``.

What it does, as upstream: ``event_fd()`` read once; each submit under one
lock, a STORE first reserving its bytes (refused at once, with a failed
result, when used + reserved + size would pass ``max_capacity_gb``); a
demux thread polling the eventfd (500 ms) and routing
``(future_id, ok, error, result_bools)`` by the op it remembered: a STORE
settles its reservation and charges each key its per-key flag says was
stored (first store wins: a key already charged adds 0), ``ok`` only when
every key was; a LOOKUP's list only when ``ok`` (a client-side lock count
per found key); a LOAD's list even when not ``ok`` (found keys touch the
eviction policy); a DELETE subtracts the keys reported True that it had
charged; unknown future ids are counted and skipped. ``delete()`` blocks
until its completion is routed (30 s). ``close()`` stops the demux thread,
closes the client, then gives back the reservations still held.

Beyond upstream, for the tests: each result is also kept in ``stores`` /
``lookups`` / ``loads`` by task id (a store's as ``(ok, bytes charged)``)
for ``wait()``; ``used`` is the accounting's total."""
import logging
import select
import threading

from .api import as_memory_obj, object_key_to_string
from .base import L2AdapterInterface

log = logging.getLogger("lmcache_standin")


class NativeConnectorL2Adapter(L2AdapterInterface):
    """The bridge over a native client."""

    #: Which text the bridge follows: PR #4838's (True: a store reserves its
    #: bytes first, and a completion charges the keys its per-key list says
    #: were stored) or mainline's, native_connector_l2_adapter.py at
    #: 0b43a45563fe5c25dc80ac9f8be16d3f20d86b22 (False: no reservation, so
    #: no store is refused; an ``ok`` completion charges every key of its
    #: batch, first store wins, and one not ``ok`` charges none). The tests
    #: run against both (test_lmcache_mainline).
    reserve = True

    def __init__(self, native_client, max_capacity_gb=0.0, type_name="", extra_status=None):
        super().__init__(max_capacity_bytes=int(max_capacity_gb * (1 << 30)))
        self._client = native_client
        self.client = native_client
        self._reserve = self.reserve  # (the text this bridge follows, fixed at its start)
        self._client_fd = int(native_client.event_fd())
        self._type_name = type_name or type(native_client).__name__
        self._has_delete = callable(getattr(native_client, "submit_batch_delete", None))
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._pending_ops = {}          # future id -> (op, task id, n, keys)
        self._pending_store_sizes = {}  # future id -> (keys, sizes, reserved bytes, buffer owners)
        self._pending_delete_events = {}
        self._key_sizes = {}            # ObjectKey -> bytes charged
        self.stores, self.lookups, self.loads = {}, {}, {}
        self.locked = {}                # ObjectKey -> lookup lock count
        self.unknown = 0
        self.refused = 0                # stores refused by the reservation
        self._next_task_id = 0
        self._stop = threading.Event()
        self._demux_thread = threading.Thread(target=self._demux_loop, daemon=True, name="l2-adapter-demux")
        self._demux_thread.start()

    @property
    def used(self):
        return self.get_usage().total_bytes_used

    def _get_next_task_id(self):
        task = self._next_task_id
        self._next_task_id += 1
        return task

    # -- store -------------------------------------------------------------

    def submit_store_task(self, keys, objects):
        objects = [as_memory_obj(o) for o in objects]
        wires = [object_key_to_string(k) for k in keys]
        views = [o.byte_array for o in objects]
        sizes = [o.get_size() for o in objects]
        reserved = sum(sizes) if self._reserve else 0
        with self._cond:
            task = self._get_next_task_id()
            if self._reserve and not self._try_reserve_store_bytes(reserved):
                self.refused += 1
                self.stores[task] = (False, 0)
                self._cond.notify_all()
                return task
            try:
                fid = int(self._client.submit_batch_set(wires, views))
            except Exception:
                self._release_store_reservation(reserved)
                raise
            self._pending_ops[fid] = ("store", task, len(keys), None)
            self._pending_store_sizes[fid] = (list(keys), sizes, reserved, objects)
        return task

    # -- lookup and lock, unlock -------------------------------------------

    def submit_lookup_and_lock_task(self, keys, group_layout_descs=None):
        wires = [object_key_to_string(k) for k in keys]
        with self._lock:
            task = self._get_next_task_id()
            fid = int(self._client.submit_batch_exists(wires))
            self._pending_ops[fid] = ("lookup", task, len(keys), list(keys))
        return task

    def submit_unlock(self, keys):
        with self._lock:
            for k in keys:
                if k not in self.locked:
                    continue
                if self.locked[k] <= 1:
                    del self.locked[k]
                else:
                    self.locked[k] -= 1

    # -- load ----------------------------------------------------------------

    def submit_load_task(self, keys, objects):
        wires = [object_key_to_string(k) for k in keys]
        views = [as_memory_obj(o).byte_array for o in objects]
        with self._lock:
            task = self._get_next_task_id()
            fid = int(self._client.submit_batch_get(wires, views))
            self._pending_ops[fid] = ("load", task, len(keys), list(keys))
        return task

    # -- eviction --------------------------------------------------------------

    def delete(self, keys):
        if not keys or not self._has_delete:
            return
        wires = [object_key_to_string(k) for k in keys]
        done = threading.Event()
        with self._lock:
            task = self._get_next_task_id()
            fid = int(self._client.submit_batch_delete(wires))
            self._pending_ops[fid] = ("delete", task, len(keys), list(keys))
            self._pending_delete_events[task] = done
        if not done.wait(30.0):
            with self._lock:
                self._pending_delete_events.pop(task, None)
            log.warning("delete() timed out after 30s for %d keys", len(keys))

    # -- the tests' side -------------------------------------------------------

    def wait(self, table, task, timeout=30.0):
        """The result of `task` in `table` (stores, lookups or loads), once."""
        with self._cond:
            if not self._cond.wait_for(lambda: task in table, timeout):
                raise TimeoutError("no result for task %d" % task)
            return table.pop(task)

    def healthy(self):
        return self._demux_thread.is_alive() and not self._stop.is_set()

    def close(self):
        self._stop.set()
        self._demux_thread.join(timeout=5)
        with self._lock:
            abandoned = list(self._pending_store_sizes.values())
            self._pending_store_sizes.clear()
            self._pending_ops.clear()
        self._client.close()
        held = sum(p[2] for p in abandoned)
        if held:
            self._release_store_reservation(held)

    # -- the demux thread --------------------------------------------------------

    def _demux_loop(self):
        poller = select.poll()
        poller.register(self._client_fd, select.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(500):
                continue
            try:
                completions = self._client.drain_completions()
            except Exception:
                log.exception("drain_completions failed")
                continue
            out = {"stored": ([], []), "accessed": [], "deleted": ([], []), "settled": 0, "events": []}
            with self._cond:
                for fid, ok, _error, bools in completions:
                    entry = self._pending_ops.pop(int(fid), None)
                    if entry is None:
                        self.unknown += 1
                        continue
                    self._route(int(fid), bool(ok), bools, entry, out)
                if out["settled"] or out["stored"][0]:
                    self._settle_store_reservation(out["settled"], *out["stored"])
                self._cond.notify_all()
            if out["stored"][0]:
                self._notify_keys_stored_observers(*out["stored"])
            if out["accessed"]:
                self._notify_keys_accessed(out["accessed"])
            if out["deleted"][0]:
                self._notify_keys_deleted(*out["deleted"])
            for e in out["events"]:
                e.set()

    def _route(self, fid, ok, bools, entry, out):
        op, task, n, keys = entry
        if op == "store":
            skeys, sizes, reserved, _owners = self._pending_store_sizes.pop(fid)
            out["settled"] += reserved
            per_key = self._reserve and bools is not None  # (mainline: the batch's ok for every key)
            flags = ([bool(b) for b in bools] + [False] * n)[:n] if per_key else [ok] * n
            charged = 0
            for k, size, stored in zip(skeys, sizes, flags):
                if not stored:
                    continue
                new = k not in self._key_sizes
                if new:
                    self._key_sizes[k] = size
                    charged += size
                out["stored"][0].append(k)
                out["stored"][1].append(size if new else 0)
            self.stores[task] = (ok and all(flags), charged)
        elif op == "lookup":
            bits = [False] * n
            if ok and bools is not None:
                for i, found in enumerate(bools):
                    if found:
                        bits[i] = True
                        self.locked[keys[i]] = self.locked.get(keys[i], 0) + 1
            self.lookups[task] = bits
        elif op == "load":
            bits = [bool(b) for b in bools] if bools is not None else [ok] * n
            assert len(bits) == n, "a load result of %d bits for %d keys" % (len(bits), n)
            out["accessed"] += [k for k, b in zip(keys, bits) if b]
            self.loads[task] = bits
        elif op == "delete":
            for i, deleted in enumerate(bools or []):
                if deleted and keys[i] in self._key_sizes:
                    out["deleted"][1].append(self._key_sizes.pop(keys[i]))
                    out["deleted"][0].append(keys[i])
            if task in self._pending_delete_events:
                out["events"].append(self._pending_delete_events.pop(task))
