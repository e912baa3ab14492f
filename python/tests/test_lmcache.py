"""l3cache loaded by LMCache's native_plugin L2 adapter, driven through a
stand-in of LMCache's factory and adapter (lmcache_standin/, which names
the upstream files and commits it follows): keys as ObjectKey wire
strings, buffers as c_ubyte views over one aligned L1 arena, stores judged
by ok alone, lookups that lock, loads by their bits, and every worker's and
object group's object of a chunk stored as one page group."""
import os
import tempfile
import threading
import unittest

import numpy as np

import l3cache
from lmcache_standin import NativeConnectorL2Adapter, ObjectKey, buffer_view, kv_rank, load_native_plugin

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
OBJ = 256 * 1024
MODEL = "Qwen/Qwen3-8B"


def pattern(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def keys_of(n, first=0, group=0):
    return [ObjectKey((first + i).to_bytes(8, "big") + b"\x00\x01", MODEL, kv_rank(1, 0, 1, 0), group)
            for i in range(n)]


class LMCacheAdapterTest(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(TEST_DIR, "lmc-%d-%s.l3" % (os.getpid(), self._testMethodName))
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.config = {"store": {"path": self.path, "capacity": "64MiB", "slab_size": "4MiB"}}
        self.pool = l3cache.Pool(64 * OBJ)  # LMCache's L1 arena: aligned, one mapping
        self.host = self.pool.array

    def tearDown(self):
        self.pool.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    def spec(self, **params):
        return {"type": "native_plugin", "module_path": "l3cache.lmcache", "class_name": "L3CacheConnector",
                "adapter_params": dict({"config": self.config, "register_min_bytes": 1 << 20}, **params),
                "max_capacity_gb": 1}

    def views(self, first, n, size=OBJ):
        return [buffer_view(self.pool.address + (first + i) * OBJ, size) for i in range(n)]

    def fill(self, first, n, seed):
        for i in range(n):
            self.host[(first + i) * OBJ:(first + i + 1) * OBJ] = pattern(seed + i, OBJ)

    def test_the_factory_loads_the_connector_and_refuses_what_it_should(self):
        adapter = load_native_plugin(self.spec())
        self.assertTrue(callable(adapter.client.submit_batch_delete))
        self.assertTrue(adapter.healthy())
        adapter.close()
        with self.assertRaises(TypeError):
            load_native_plugin(self.spec(no_such_param=1))
        with self.assertRaises(ValueError):
            load_native_plugin(dict(self.spec(), module_path=""))

    def test_store_lookup_load_round_trip_zero_copy(self):
        adapter = load_native_plugin(self.spec())
        keys = keys_of(8)
        self.fill(0, 8, 10)
        ok, charged = adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(0, 8)))
        self.assertTrue(ok)
        self.assertEqual(charged, 8 * OBJ)
        bits = adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(keys + keys_of(1, 100)))
        self.assertEqual(bits, [True] * 8 + [False])
        self.assertEqual(adapter.locked[keys[0]], 1)
        bits = adapter.wait(adapter.loads, adapter.submit_load_task(keys, self.views(8, 8)))
        self.assertEqual(bits, [True] * 8)
        adapter.submit_unlock(keys)
        for i in range(8):
            np.testing.assert_array_equal(self.host[(8 + i) * OBJ:(9 + i) * OBJ], pattern(10 + i, OBJ))
        stats = adapter.client.stats()
        self.assertGreater(stats["store"]["io_fixed"], 0)
        self.assertEqual(stats["store"]["io_unfixed"], 0)
        self.assertEqual(stats["store"]["host_regions"], 1)
        # A second store of the same keys is charged nothing (first store wins).
        ok, charged = adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(0, 8)))
        self.assertEqual((ok, charged), (True, 0))
        self.assertEqual(adapter.unknown, 0)
        adapter.close()

    def test_a_store_with_a_key_that_fails_is_not_reported_stored(self):
        # An object larger than a slab cannot be stored: the batch is not
        # ok, LMCache charges only the key the per-key list says was stored
        # (mainline charges none of a batch that is not ok), and the next
        # lookup misses the other.
        adapter = load_native_plugin(self.spec())
        big = 5 * 1024 * 1024  # over the 4 MiB slab
        keys = keys_of(2)
        views = [buffer_view(self.pool.address, OBJ), buffer_view(self.pool.address + OBJ, big)]
        ok, charged = adapter.wait(adapter.stores, adapter.submit_store_task(keys, views))
        self.assertFalse(ok)
        held = OBJ if NativeConnectorL2Adapter.reserve else 0  # (the PR's text, or mainline's)
        self.assertEqual(charged, held)
        self.assertEqual(adapter.used, held)
        bits = adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(keys))
        self.assertEqual(bits, [True, False])
        adapter.close()

    def test_a_looked_up_key_survives_eviction_until_its_load(self):
        # LMCache looks up and locks, then loads; between the two, another
        # rank's stores fill the store. The lookup's lease keeps the key.
        adapter = load_native_plugin(self.spec(lease_seconds=30))
        keys = keys_of(4)
        self.fill(0, 4, 40)
        self.assertTrue(adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(0, 4)))[0])
        bits = adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(keys))
        self.assertEqual(bits, [True] * 4)
        with l3cache.Store(self.config) as other:  # another process's writes, same store
            other.register_host(self.pool.address, self.pool.nbytes)
            for i in range(40):
                names = ["other-%d-%d" % (i, j) for j in range(8)]
                other.batch_put_from(names, self.pool.address, [(8 + j) * OBJ for j in range(8)], [OBJ] * 8)
            self.assertGreater(other.stats()["evictions"], 0)
        bits = adapter.wait(adapter.loads, adapter.submit_load_task(keys, self.views(16, 4)))
        self.assertEqual(bits, [True] * 4)
        for i in range(4):
            np.testing.assert_array_equal(self.host[(16 + i) * OBJ:(17 + i) * OBJ], pattern(40 + i, OBJ))
        adapter.close()

    def test_every_worker_s_and_object_group_s_chunk_is_one_group(self):
        # Two workers of a world of two, each storing its objects of the same
        # chunks in two object groups: the store keeps one group per chunk
        # (the group id leaves the kv_rank and the object group out).
        workers = [load_native_plugin(self.spec()) for _ in range(2)]
        self.fill(0, 12, 50)
        for w, adapter in enumerate(workers):
            keys = [ObjectKey((i).to_bytes(8, "big"), MODEL, kv_rank(2, w, 2, w), g)
                    for i in range(6) for g in (0, 1)]
            ok, _ = adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(0, 12)))
            self.assertTrue(ok)
        stats = workers[0].client.stats()["store"]
        self.assertEqual(stats["objects"], 24)
        self.assertEqual(stats["groups_live"], 6)
        for adapter in workers:
            adapter.close()

    def test_delete_subtracts_usage_and_is_durable(self):
        adapter = load_native_plugin(self.spec())
        keys = keys_of(3)
        self.fill(0, 3, 7)
        adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(0, 3)))
        self.assertEqual(adapter.used, 3 * OBJ)
        adapter.delete(keys[:2])
        self.assertEqual(adapter.used, OBJ)
        adapter.close()
        adapter = load_native_plugin(self.spec())  # a restart: the deletion held, the rest is warm
        bits = adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(keys))
        self.assertEqual(bits, [False, False, True])
        self.assertEqual(adapter.wait(adapter.loads, adapter.submit_load_task(keys[2:], self.views(4, 1))), [True])
        np.testing.assert_array_equal(self.host[4 * OBJ:5 * OBJ], pattern(9, OBJ))
        adapter.close()


class L3CacheConnectorTest(unittest.TestCase):
    """The connector itself: transport behaviour the adapter relies on."""

    def setUp(self):
        self.path = os.path.join(TEST_DIR, "lmcc-%d-%s.l3" % (os.getpid(), self._testMethodName))
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.config = {"store": {"path": self.path, "capacity": "256MiB", "slab_size": "4MiB"}}

    def tearDown(self):
        if os.path.exists(self.path):
            os.unlink(self.path)

    def client(self, **params):
        from l3cache.lmcache import L3CacheConnector
        return L3CacheConnector(config=self.config, **params)

    def wait(self, client, fids, timeout_s=30.0):
        import select
        poller = select.poll()
        poller.register(client.event_fd(), select.POLLIN)
        done, waited = {}, 0.0
        while not set(fids) <= set(done):
            if not poller.poll(200):
                waited += 0.2
                if waited > timeout_s:
                    raise TimeoutError("no completion for %s" % sorted(set(fids) - set(done)))
                continue
            for fid, ok, error, results in client.drain_completions():
                assert fid not in done, "a second completion for %d" % fid
                done[fid] = (ok, error, results)
        return [done[f] for f in fids]

    def test_unaligned_bytearrays_are_byte_exact(self):
        c = self.client()
        src = bytearray(3 * 10000 + 1)
        src[1:] = bytes(pattern(5, 3 * 10000))
        views = [memoryview(src)[1 + i * 10000:1 + (i + 1) * 10000] for i in range(3)]
        keys = ["u@0@0@%d" % i for i in range(3)]
        [(ok, error, _)] = self.wait(c, [c.submit_batch_set(keys, views)])
        self.assertTrue(ok, error)
        dst = bytearray(3 * 10000 + 3)
        outs = [memoryview(dst)[3 + i * 10000:3 + (i + 1) * 10000] for i in range(3)]
        [(ok, error, results)] = self.wait(c, [c.submit_batch_get(keys, outs)])
        self.assertEqual((ok, results), (True, [True] * 3))
        self.assertEqual(bytes(dst[3:]), bytes(src[1:]))
        self.assertGreater(c.stats()["bounced_keys"], 0)
        [(ok, _, results)] = self.wait(c, [c.submit_batch_get(["u@0@0@0"], [memoryview(bytearray(9999))])])
        self.assertEqual(results, [False])  # another size than the object: that key fails alone
        c.close()

    def test_a_full_queue_refuses_with_a_completion_not_an_exception(self):
        c = self.client(workers=1, max_pending=1)
        bufs = [bytearray(pattern(i, OBJ).tobytes()) for i in range(32)]
        fids = [c.submit_batch_set(["q@%d" % i], [memoryview(bufs[i])]) for i in range(32)]
        results = self.wait(c, fids)
        refused = [e for ok, e, _ in results if not ok]
        self.assertTrue(refused, "a queue of one took 32 batches")
        self.assertTrue(all("queue is full" in e for e in refused), refused)
        self.assertTrue(any(ok for ok, _, _ in results))
        c.close()

    def test_a_failing_drain_loses_no_completion(self):
        c = self.client()
        bufs = [bytearray(pattern(i, 8192).tobytes()) for i in range(6)]
        fids = [c.submit_batch_set(["d@%d" % i], [memoryview(bufs[i])]) for i in range(6)]
        real = c._io.drain
        calls = []

        def flaky(*args):
            calls.append(1)
            if len(calls) == 1:
                raise OSError("a passing failure")
            return real(*args)

        c._io.drain = flaky
        results = self.wait(c, fids)
        self.assertEqual(len(results), 6)
        self.assertTrue(all(ok for ok, _, _ in results))
        self.assertGreaterEqual(len(calls), 2)
        c.close()

    def test_concurrent_submitters(self):
        c = self.client(workers=4, max_pending=1024)
        lock = threading.Lock()
        fids, keep = [], []

        def submitter(t):
            bufs = [bytearray(pattern(100 * t + i, 8192).tobytes()) for i in range(20)]
            mine = [c.submit_batch_set(["c%d@%d" % (t, i)], [memoryview(bufs[i])]) for i in range(20)]
            with lock:
                fids.extend(mine)
                keep.append(bufs)

        threads = [threading.Thread(target=submitter, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(len(set(fids)), 80)
        self.assertTrue(all(ok for ok, _, _ in self.wait(c, fids)))
        c.close()

    def test_close_retires_every_batch_in_flight(self):
        c = self.client(workers=2)
        bufs = [bytearray(pattern(i, OBJ).tobytes()) for i in range(16)]
        for i in range(16):
            c.submit_batch_set(["f@%d" % i], [memoryview(bufs[i])])
        c.close()  # returns once every batch ran
        c = self.client()
        [(ok, _, results)] = self.wait(c, [c.submit_batch_exists(["f@%d" % i for i in range(16)])])
        self.assertEqual(results, [True] * 16)
        c.close()


if __name__ == "__main__":
    unittest.main()
