"""A stand-in of LMCache's side of the ``native_plugin`` L2 adapter, for
driving l3cache's connector as LMCache's multiprocess server does.

It follows these upstream files of github.com/LMCache/LMCache, read on
2026-12-03 (the versions named by the commits the code index holds them
at; the adapter cites LMCache issue #3767, fixed 2026-06-21):

* ``lmcache/v1/distributed/l2_adapters/native_plugin_l2_adapter.py`` at
  68c638a6a8e86d9ec0867ff51fe445b4b3e75503: the config's four keys, the
  factory (import by module path, ``cls(**adapter_params)``, six required
  methods, a missing one closes the client and raises TypeError; a missing
  ``submit_batch_delete`` only warns).
* ``lmcache/v1/distributed/l2_adapters/native_connector_l2_adapter.py`` at
  0b43a45563fe5c25dc80ac9f8be16d3f20d86b22: the adapter: ``event_fd()``
  read once, submits under one lock, a demux thread polling the eventfd
  (500 ms) and routing ``(future_id, ok, error, result_bools)`` by the op
  it remembered: a STORE by ``ok`` alone (every key charged to usage, first
  store wins), a LOOKUP's list only when ``ok`` (a client-side lock count
  per found key), a LOAD's list even when not ``ok``, a DELETE subtracting
  the keys reported True; unknown future ids are warned about and skipped;
  ``close()`` stops the demux thread before it closes the client. Buffers
  are ctypes ``c_ubyte`` memoryviews of the logical length.
* ``lmcache/v1/distributed/api.py`` at
  000e8777a114b0f687cbdc8d06d075886de6895a: ``ObjectKey`` (chunk_hash,
  model_name, kv_rank, object_group_id, cache_salt) and its wire string
  ``model@{kv_rank:08x}@{group:x}@{hash hex}[@salt]``.

Checked again on 2026-12-05 against the newest versions the code index
holds (a snapshot of the repository itself was older than these files):
native_connector_l2_adapter.py at 4b7fb47 adds only an ``on_close``
callback, which the native_plugin factory does not pass; a newer api.py
(no commit given) renames IPC key classes and adds tiers, ``ObjectKey``
and the kv_rank packing unchanged; native_plugin_l2_adapter.py has no
newer version. Nothing here changed.

Written for these tests from what those files do; none of their code.
"""
import ctypes
import importlib
import logging
import select
import threading
from dataclasses import dataclass

log = logging.getLogger("lmcache_standin")

REQUIRED = ["event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
            "drain_completions", "close"]


@dataclass(frozen=True)
class ObjectKey:
    chunk_hash: bytes
    model_name: str
    kv_rank: int
    object_group_id: int = 0
    cache_salt: str = ""

    def wire(self):
        s = "%s@%08x@%x@%s" % (self.model_name, self.kv_rank, self.object_group_id, self.chunk_hash.hex())
        return s + ("@" + self.cache_salt if self.cache_salt else "")


def kv_rank(world_size, global_rank, local_world_size, local_rank):
    return world_size << 24 | global_rank << 16 | local_world_size << 8 | local_rank


def buffer_view(address, nbytes):
    """What an L1 TensorMemoryObj's byte_array is: a writable c_ubyte view."""
    return memoryview((ctypes.c_ubyte * nbytes).from_address(address))


def load_native_plugin(spec):
    """The factory: the client from its JSON config, checked."""
    for field in ("module_path", "class_name"):
        if not isinstance(spec.get(field), str) or not spec[field]:
            raise ValueError("%s must be a non-empty string" % field)
    params = spec.get("adapter_params", {})
    if not isinstance(params, dict):
        raise ValueError("adapter_params must be a dict")
    module = importlib.import_module(spec["module_path"])
    client = getattr(module, spec["class_name"])(**params)
    for name in REQUIRED:
        if not callable(getattr(client, name, None)):
            if callable(getattr(client, "close", None)):
                client.close()
            raise TypeError("%s.%s instance missing required method '%s'"
                            % (spec["module_path"], spec["class_name"], name))
    if not callable(getattr(client, "submit_batch_delete", None)):
        log.warning("no submit_batch_delete: L2 eviction delete will be a no-op")
    return NativeAdapter(client, float(spec.get("max_capacity_gb", 0)))


class NativeAdapter:
    """The L2 adapter over a native client (the parts the tests meet)."""

    def __init__(self, client, max_capacity_gb=0.0):
        self.client = client
        self.capacity = int(max_capacity_gb * (1 << 30))
        self.fd = int(client.event_fd())
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.pending = {}          # future id -> (op, task id, n, keys)
        self.store_sizes = {}      # future id -> (keys, sizes)
        self.stores, self.lookups, self.loads = {}, {}, {}
        self.locked = {}           # ObjectKey -> count
        self.key_sizes = {}        # ObjectKey -> bytes charged
        self.used = 0
        self.unknown = 0           # completions for unknown future ids
        self.next_task = 0
        self.delete_events = {}
        self.stop = threading.Event()
        self.demux = threading.Thread(target=self._demux_loop, daemon=True, name="l2-adapter-demux")
        self.demux.start()

    def _task(self):
        t = self.next_task
        self.next_task += 1
        return t

    def _submit(self, op, fn, keys, *args):
        wires = [k.wire() for k in keys]
        with self.lock:
            task = self._task()
            fid = int(fn(wires, *args))
            self.pending[fid] = (op, task, len(keys), list(keys))
            if op == "store":
                self.store_sizes[fid] = (list(keys), [len(v) for v in args[0]])
        return task

    def submit_store_task(self, keys, views):
        return self._submit("store", self.client.submit_batch_set, keys, views)

    def submit_lookup_and_lock_task(self, keys):
        return self._submit("lookup", self.client.submit_batch_exists, keys)

    def submit_load_task(self, keys, views):
        return self._submit("load", self.client.submit_batch_get, keys, views)

    def submit_unlock(self, keys):
        with self.lock:
            for k in keys:
                if self.locked.get(k, 0) <= 1:
                    self.locked.pop(k, None)
                else:
                    self.locked[k] -= 1

    def delete(self, keys):
        if not keys or not callable(getattr(self.client, "submit_batch_delete", None)):
            return
        done = threading.Event()
        with self.lock:
            task = self._submit_locked_delete(keys)
            self.delete_events[task] = done
        done.wait(30.0)

    def _submit_locked_delete(self, keys):
        task = self._task()
        fid = int(self.client.submit_batch_delete([k.wire() for k in keys]))
        self.pending[fid] = ("delete", task, len(keys), list(keys))
        return task

    def wait(self, table, task, timeout=30.0):
        """The result of `task` in `table` (stores, lookups or loads), once."""
        with self.cond:
            if not self.cond.wait_for(lambda: task in table, timeout):
                raise TimeoutError("no result for task %d" % task)
            return table.pop(task)

    def healthy(self):
        return self.demux.is_alive() and not self.stop.is_set()

    def close(self):
        self.stop.set()
        self.demux.join(timeout=5)
        self.client.close()

    def _demux_loop(self):
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while not self.stop.is_set():
            if not poller.poll(500):
                continue
            try:
                completions = self.client.drain_completions()
            except Exception:
                log.exception("drain_completions failed")
                continue
            events = []
            with self.cond:
                for fid, ok, _error, bools in completions:
                    entry = self.pending.pop(int(fid), None)
                    if entry is None:
                        self.unknown += 1
                        continue
                    events += self._route(int(fid), bool(ok), bools, *entry)
                self.cond.notify_all()
            for e in events:
                e.set()

    def _route(self, fid, ok, bools, op, task, n, keys):
        if op == "store":
            skeys, sizes = self.store_sizes.pop(fid)
            charged = 0
            if ok:
                for k, size in zip(skeys, sizes):
                    if k not in self.key_sizes:
                        self.key_sizes[k] = size
                        charged += size
            self.used += charged
            self.stores[task] = (ok, charged)
        elif op == "lookup":
            bits = [False] * n
            if ok and bools is not None:
                for i, found in enumerate(bools):
                    if found:
                        bits[i] = True
                        self.locked[keys[i]] = self.locked.get(keys[i], 0) + 1
            self.lookups[task] = bits
        elif op == "load":
            if bools is not None:
                bits = [bool(b) for b in bools]
            else:
                bits = [ok] * n
            assert len(bits) == n, "a load result of %d bits for %d keys" % (len(bits), n)
            self.loads[task] = bits
        elif op == "delete":
            for i, deleted in enumerate(bools or []):
                if deleted and keys[i] in self.key_sizes:
                    self.used -= self.key_sizes.pop(keys[i])
            return [self.delete_events.pop(task)] if task in self.delete_events else []
        return []
