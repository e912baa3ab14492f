"""LMCache's accounting and tenants over l3cache, driven through the
stand-in of LMCache's bridge at the text of its capacity-reservation PR
(lmcache_standin/, which names the upstream files and commits):

* through the ``plugin`` adapter, LMCache's usage is what the store holds
  however many times the store has evicted its capacity, and no store is
  refused for bytes the store no longer holds;
* through the ``native_plugin`` connector with LMCache's own eviction, a
  key the store evicted is subtracted when LMCache deletes it, instead of
  sticking at the head of LMCache's LRU while stores are refused;
* two cache salts, and two deployments sharing one store file, never read
  each other's chunks."""
import os
import tempfile
import time
import unittest

import numpy as np

import l3cache
from l3cache.lmcache import fold_tenant
from lmcache_standin import EvictionConfig, L2EvictionController, ObjectKey, buffer_view, install, kv_rank
from lmcache_standin import load_native_plugin, load_plugin

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
OBJ = 256 * 1024
BATCH = 8
MODEL = "Qwen/Qwen3-8B"
MIB = 1 << 20


def pattern(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def chunk_keys(first, n, salt=""):
    return [ObjectKey((first + i).to_bytes(8, "big"), MODEL, kv_rank(1, 0, 1, 0), 0, salt) for i in range(n)]


class Base(unittest.TestCase):
    def setUp(self):
        install()
        self.path = os.path.join(TEST_DIR, "lmcx-%d-%s.l3" % (os.getpid(), self._testMethodName))
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.config = {"store": {"path": self.path, "capacity": "16MiB", "slab_size": "1MiB",
                                 "expected_object_size": "256KiB"}}
        self.pool = l3cache.Pool(4 * BATCH * OBJ)
        self.host = self.pool.array
        for i in range(4 * BATCH):
            self.host[i * OBJ:(i + 1) * OBJ] = pattern(i, OBJ)

    def tearDown(self):
        self.pool.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    def views(self, slot, n=BATCH):
        return [buffer_view(self.pool.address + (slot + i) * OBJ, OBJ) for i in range(n)]

    def spec(self, kind, capacity_mib, config=None, **params):
        params = dict({"config": config or self.config, "register_min_bytes": 1 << 20}, **params)
        if kind == "plugin":
            return {"type": "plugin", "module_path": "l3cache.lmcache_plugin", "class_name": "L3CacheL2Adapter",
                    "adapter_params": dict(params, max_capacity_gb=capacity_mib / 1024)}
        return {"type": "native_plugin", "module_path": "l3cache.lmcache", "class_name": "L3CacheConnector",
                "adapter_params": params, "max_capacity_gb": capacity_mib / 1024}

    def held_bytes(self, keys, config=None):
        """What the store holds of `keys`, in bytes (asked of the store)."""
        from l3cache.keys import tenant_tag
        tag = tenant_tag(config or self.config)
        with l3cache.Store(config or self.config) as store:
            found = store.batch_exists([fold_tenant(k.wire(), tag) for k in keys])
        return sum(found) * OBJ


class AccountingTest(Base):
    def test_stores_in_flight_while_the_store_evicts_leave_usage_exact(self):
        # As LMCache submits them: 60 stores without waiting, into a 16 MiB
        # store, so stores complete while earlier (and their own) keys are
        # evicted, before the connector hears of their completion.
        adapter = load_plugin(self.spec("plugin", 0, reconcile_seconds=0.001))
        stored, tasks = [], []
        for b in range(60):
            keys = chunk_keys(b * BATCH, BATCH)
            tasks.append(adapter.submit_store_task(keys, self.views(b % 4 * BATCH)))
            stored += keys
        for t in tasks:
            adapter.wait(adapter.stores, t)
        for _ in range(20):
            adapter.reconcile()
            time.sleep(0.01)
        self.assertLessEqual(abs(adapter.used - self.held_bytes(stored)), OBJ)
        adapter.close()

    def test_usage_is_what_the_store_holds_through_ten_times_its_capacity(self):
        # LMCache's cap is the store's size, with no eviction block: only
        # l3cache evicts. 160 MiB go through the bridge into a 16 MiB store,
        # and every store is accepted; LMCache's usage stays what the store
        # holds (the bridge reserves against it before each store).
        adapter = load_plugin(self.spec("plugin", 16, reconcile_seconds=0))
        stored = []
        for b in range(160 * MIB // (BATCH * OBJ)):
            keys = chunk_keys(b * BATCH, BATCH)
            ok, _ = adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(b % 4 * BATCH)))
            self.assertTrue(ok, "store %d refused or failed (usage %d MiB)" % (b, adapter.used // MIB))
            stored += keys
            if b % 10 == 9:
                adapter.reconcile()
                self.assertLessEqual(abs(adapter.used - self.held_bytes(stored)), OBJ)
        adapter.reconcile()
        held = self.held_bytes(stored)
        self.assertLessEqual(abs(adapter.used - held), OBJ, "usage %d, the store holds %d" % (adapter.used, held))
        self.assertEqual(adapter.refused, 0)
        self.assertGreater(adapter.reconciled_keys, len(stored) * 8 // 10)
        self.assertGreater(adapter.connector.stats()["store"]["evictions"], 0)
        self.assertEqual(adapter.report_status()["reconciled_keys"], adapter.reconciled_keys)
        # What LMCache still counts it can read back, byte-exact.
        tag_free = [k.wire() for k in stored]
        with l3cache.Store(self.config) as store:
            found = store.batch_exists(tag_free)
        left = [k for k, there in zip(stored, found) if there][-4:]
        self.assertEqual(adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(left)), [True] * 4)
        self.assertEqual(adapter.wait(adapter.loads, adapter.submit_load_task(left, self.views(3 * BATCH, 4))),
                         [True] * 4)
        first = int.from_bytes(left[0].chunk_hash, "big") % (4 * BATCH)
        np.testing.assert_array_equal(self.host[3 * BATCH * OBJ:(3 * BATCH + 1) * OBJ], pattern(first, OBJ))
        adapter.close()

    def test_the_background_reconcile_follows_evictions_between_stores(self):
        adapter = load_plugin(self.spec("plugin", 16, reconcile_seconds=0.05))
        stored = []
        for b in range(40):
            keys = chunk_keys(b * BATCH, BATCH)
            self.assertTrue(adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(0)))[0])
            stored += keys
        deadline = 100
        while abs(adapter.used - self.held_bytes(stored)) > OBJ and deadline:  # no store, no reconcile call
            time.sleep(0.05)
            deadline -= 1
        self.assertLessEqual(abs(adapter.used - self.held_bytes(stored)), OBJ)
        adapter.close()

    def test_lmcache_s_own_eviction_subtracts_what_the_store_evicted(self):
        # The native_plugin route with an eviction block and a cap over what
        # the store holds: the store evicts first. LMCache's LRU then chooses
        # keys the store no longer holds; their DELETE answers True, so they
        # are subtracted and forgotten, and stores go on being accepted.
        adapter = load_native_plugin(self.spec("native_plugin", 24))
        controller = L2EvictionController(adapter, EvictionConfig("LRU", 0.8, 0.2))
        stored = []
        for b in range(160 * MIB // (BATCH * OBJ)):
            keys = chunk_keys(b * BATCH, BATCH)
            ok, _ = adapter.wait(adapter.stores, adapter.submit_store_task(keys, self.views(b % 4 * BATCH)))
            self.assertTrue(ok, "store %d refused (usage %d MiB)" % (b, adapter.used // MIB))
            stored += keys
            for _ in range(10):  # rounds until usage is under the watermark
                if not controller.check():
                    break
        self.assertEqual(adapter.refused, 0)
        self.assertLess(adapter.used, 24 * MIB * 0.8)
        self.assertGreater(adapter.client.stats()["store"]["evictions"], 0)
        # LMCache's LRU holds no key the store evicted long ago.
        tracked = controller.policy.tracked()
        self.assertLessEqual(len(tracked) * OBJ, adapter.used)
        adapter.close()

    def test_removed_keys_names_what_another_process_deleted(self):
        from l3cache.lmcache import L3CacheConnector
        c = L3CacheConnector(config=self.config, register_min_bytes=0)
        keys = [k.wire() for k in chunk_keys(0, 4)]
        bufs = [bytearray(pattern(i, 8192).tobytes()) for i in range(4)]
        fid = c.submit_batch_set(keys, [memoryview(b) for b in bufs])
        done = {}
        while fid not in done:
            done.update({f: r for f, *r in c.drain_completions()})
        other = l3cache.AsyncStore(self.config)
        other.submit("delete", 1, keys[1:3])
        while not other.drain():
            pass
        other.close()
        self.assertEqual(c.removed_keys(), keys[1:3])
        fid = c.submit_batch_delete(keys)
        done = {}
        while fid not in done:
            done.update({f: r for f, *r in c.drain_completions()})
        self.assertEqual(done[fid][2], [True] * 4)  # two deleted now, two gone before
        self.assertEqual(c.removed_keys(), [])
        c.close()

    def test_a_reader_that_missed_removals_asks_the_store(self):
        # The feed's ring overwrote removals before they were read: the
        # tracker asks the store which of its keys it still holds.
        from l3cache.lmcache_removals import RemovalTracker

        class Behind:
            def read(self, max_events=4096):
                return [], 3

        keys = [k.wire() for k in chunk_keys(0, 4)]
        with l3cache.Store(self.config) as store:
            store.batch_put_from(keys[:2], self.pool.address, [0, OBJ], [OBJ, OBJ])
            tracker = RemovalTracker(store, feed=Behind())
            tracker.stored([(k, k) for k in keys], tracker.submitted(keys), [True] * 4)
            self.assertEqual(tracker.removed(), keys[2:])
            counts = tracker.counts()
            self.assertEqual((counts["tracked_keys"], counts["removed_unanswered"]), (2, 2))
            self.assertGreaterEqual(counts["feed_resyncs"], 1)
            self.assertEqual(tracker.settle_delete([(k, k) for k in keys[1:]], [True, False, False]), [True] * 3)
            self.assertEqual(tracker.counts()["tracked_keys"], 1)


class TenantTest(Base):
    def test_two_cache_salts_never_read_each_other_s_chunks(self):
        adapter = load_native_plugin(self.spec("native_plugin", 16))
        alice, bob = chunk_keys(0, 4, "alice"), chunk_keys(0, 4, "bob")  # the same tokens
        self.assertTrue(adapter.wait(adapter.stores, adapter.submit_store_task(alice, self.views(0, 4)))[0])
        self.assertEqual(adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(bob)), [False] * 4)
        self.assertEqual(adapter.wait(adapter.loads, adapter.submit_load_task(bob, self.views(8, 4))), [False] * 4)
        self.assertEqual(adapter.wait(adapter.lookups, adapter.submit_lookup_and_lock_task(alice)), [True] * 4)
        adapter.close()

    def test_two_deployments_sharing_a_store_never_share_chunks(self):
        configs = [dict(self.config, namespace={"deployment_id": name}) for name in ("team-a", "team-b")]
        a, b = (load_native_plugin(self.spec("native_plugin", 16, config=c)) for c in configs)
        keys = chunk_keys(0, 4)  # the same keys, no salt
        self.assertTrue(a.wait(a.stores, a.submit_store_task(keys, self.views(0, 4)))[0])
        self.assertEqual(b.wait(b.lookups, b.submit_lookup_and_lock_task(keys)), [False] * 4)
        self.assertEqual(b.wait(b.loads, b.submit_load_task(keys, self.views(8, 4))), [False] * 4)
        self.assertTrue(b.wait(b.stores, b.submit_store_task(keys, self.views(4, 4)))[0])  # its own pages
        for adapter, src in ((a, 0), (b, 4)):
            self.assertEqual(adapter.wait(adapter.loads, adapter.submit_load_task(keys, self.views(16, 4))),
                             [True] * 4)
            for i in range(4):
                np.testing.assert_array_equal(self.host[(16 + i) * OBJ:(17 + i) * OBJ], pattern(src + i, OBJ))
        a.close()
        b.close()
        # The default deployment folds nothing: its keys are LMCache's.
        self.assertEqual(fold_tenant(keys[0].wire(), ""), keys[0].wire())
        with l3cache.Store(self.config) as store:
            self.assertEqual(store.batch_exists([k.wire() for k in keys]), [False] * 4)


if __name__ == "__main__":
    unittest.main()
