"""The Python binding with a numpy buffer as the Host pool: the store's
batch calls (with put hints too), a store over two files, a huge-page
pool, bad input, the executor."""
import mmap
import os
import tempfile
import time
import unittest

import numpy as np

import l3cache

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
PAGE = 65536


def pool(nbytes):
    """A page-aligned numpy Host pool (as a pinned engine pool is)."""
    mm = mmap.mmap(-1, nbytes)
    return mm, np.frombuffer(mm, dtype=np.uint8)


class StoreTest(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(TEST_DIR, "py-%d-%s.l3" % (os.getpid(), self._testMethodName))
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.config = {"store": {"path": self.path, "capacity": "64MiB", "slab_size": "4MiB"},
                       "namespace": {"deployment_id": "py"}}

    def tearDown(self):
        if os.path.exists(self.path):
            os.unlink(self.path)

    def test_put_reopen_get_byte_exact(self):
        mm, host = pool(16 * PAGE)
        rng = np.random.default_rng(7)
        host[: 8 * PAGE] = rng.integers(0, 256, 8 * PAGE, dtype=np.uint8)
        keys = ["py_page%d" % i for i in range(8)]
        offsets = [i * PAGE for i in range(8)]
        sizes = [PAGE - (i * 100 if i % 2 else 0) for i in range(8)]
        with l3cache.Store(self.config) as store:
            store.register_host(host.ctypes.data, host.nbytes)
            self.assertEqual(store.batch_put_from(keys, host.ctypes.data, offsets, sizes), [True] * 8)
            self.assertEqual(store.batch_exists(keys + ["py_absent"]), [True] * 8 + [False])
        with l3cache.Store(self.config) as store:
            self.assertTrue(store.stats()["opened_from_checkpoint"])
            back = [8 * PAGE + o for o in offsets]
            self.assertEqual(store.batch_get_into(keys, host.ctypes.data, back, sizes), [True] * 8)
            for i in range(8):
                np.testing.assert_array_equal(host[back[i]: back[i] + sizes[i]],
                                              host[offsets[i]: offsets[i] + sizes[i]])
            # A wrong size is an object failure, not wrong bytes.
            detail = store.batch_get_into_detailed(keys[:1], host.ctypes.data, [0], [PAGE - 1])
            self.assertEqual(detail, {"success": [False], "object_failures": [True], "retired": True})
            self.assertIn("l3cache_store_objects 8", store.metrics())
            self.assertTrue(store.remove_by_prefix("py_"))
            self.assertEqual(store.batch_exists(keys), [False] * 8)
        del host
        mm.close()

    def test_a_store_over_two_files_round_trips_and_names_both(self):
        paths = [self.path + ".dev%d" % d for d in range(2)]
        config = {"store": {"paths": paths, "capacity": "32MiB", "slab_size": "1MiB"},
                  "namespace": {"deployment_id": "py"}}
        n = 64  # 4 MiB: two 1 MiB stripes on each device
        mm, host = pool(2 * n * PAGE)
        host[: n * PAGE] = np.random.default_rng(11).integers(0, 256, n * PAGE, dtype=np.uint8)
        keys = ["py_two%d" % i for i in range(n)]
        offsets = [i * PAGE for i in range(n)]
        try:
            with l3cache.Store(config) as store:
                store.register_host(host.ctypes.data, host.nbytes)
                self.assertEqual(store.batch_put_from(keys, host.ctypes.data, offsets, [PAGE] * n), [True] * n)
                devices = store.stats()["devices"]
                self.assertEqual([d["path"] for d in devices], paths)
                self.assertTrue(all(d["state"] == "ok" and d["bytes_written"] > 0 for d in devices))
            with l3cache.Store(config) as store:
                back = [n * PAGE + o for o in offsets]
                self.assertEqual(store.batch_get_into(keys, host.ctypes.data, back, [PAGE] * n), [True] * n)
                np.testing.assert_array_equal(host[n * PAGE:], host[: n * PAGE])
        finally:
            for p in paths:
                if os.path.exists(p):
                    os.unlink(p)
        del host
        mm.close()

    def test_a_huge_page_pool_moves_pages_byte_exact(self):
        with l3cache.Pool(4 << 20) as p:
            self.assertEqual(p.address % (2 << 20), 0)
            host = p.array
            self.assertEqual(host.nbytes, 4 << 20)
            self.assertFalse(host.any())          # zeroed
            host[: 1 << 20] = np.arange(1 << 20, dtype=np.uint64).astype(np.uint8)
            with l3cache.Store(self.config) as store:
                store.register_host(p.address, p.nbytes)
                self.assertEqual(store.batch_put_from(["py_big"], p.address, [0], [1 << 20]), [True])
                self.assertEqual(store.batch_get_into(["py_big"], p.address, [2 << 20], [1 << 20]), [True])
                stats = store.stats()
            np.testing.assert_array_equal(host[2 << 20: 3 << 20], host[: 1 << 20])
            self.assertEqual(stats["unaligned_ios"], 0)
            del host
        self.assertIsNone(p.address)

    def test_put_hints_make_three_ranks_shards_of_a_page_one_group(self):
        # Three ranks' shards of four pages, put through each binding path
        # with one group id per page: one group per page, not per shard.
        pages = 4
        mm, host = pool(3 * pages * PAGE)
        host[:] = np.random.default_rng(5).integers(0, 256, host.nbytes, dtype=np.uint8)
        groups = [l3cache.group_id("page%d" % i) for i in range(pages)]
        self.assertEqual(len(set(groups)), pages)
        self.assertNotIn(0, groups)
        self.assertEqual(l3cache.group_id(b"page0"), groups[0])

        def rank(r):
            return ["py-r%d_p%d" % (r, i) for i in range(pages)], [(r * pages + i) * PAGE for i in range(pages)]

        with l3cache.Store(self.config) as store, l3cache.AsyncStore(self.config) as a:
            keys, offsets = rank(0)
            self.assertEqual(store.batch_put_from(keys, host.ctypes.data, offsets, [PAGE] * pages, groups=groups,
                                                  group_objects=3), [True] * pages)
            keys, offsets = rank(1)  # two ranges a page
            halves = [o + h for o in offsets for h in (0, PAGE // 2)]
            self.assertEqual(store.batch_put_from_v(keys, host.ctypes.data, host.nbytes, halves,
                                                    [PAGE // 2] * (2 * pages), 2, groups=groups, group_objects=3),
                             [True] * pages)
            keys, offsets = rank(2)
            a.submit("set", 1, keys, [host.ctypes.data + o for o in offsets], [PAGE] * pages, groups=groups,
                     group_objects=3)
            deadline, done = time.time() + 30, []
            while not done and time.time() < deadline:
                done = a.drain()
                time.sleep(0.001)
            self.assertEqual([(c.id, c.ok, c.results) for c in done], [(1, True, [True] * pages)])
            stats = store.stats()
            self.assertEqual(stats["objects"], 3 * pages)
            self.assertEqual(stats["groups_live"], pages)
            with self.assertRaises(ValueError):
                store.batch_put_from(["py_x"], host.ctypes.data, [0], [PAGE], groups=[1, 2])
            with self.assertRaises(l3cache.L3Error) as ctx:
                a.submit("exists", 2, ["py_x"], groups=[1])
            self.assertEqual(ctx.exception.status, "L3_EINVAL")
        del host
        mm.close()

    def test_a_batch_of_use_only_whole_is_admitted_whole_or_not_at_all(self):
        # A full store on rung 1 (two first-seen pages a batch): a plain
        # batch of four new pages keeps its first two; one put ``whole`` (a
        # Mamba model's: usable only with its last page's state) none, and
        # with those four seen and two new pages after them, all six.
        self.config["store"].update({"capacity": "8MiB", "slab_size": "1MiB", "admission": "rung:1"})
        mm, host = pool(16 * PAGE)
        offsets = [i * PAGE for i in range(16)]
        with l3cache.Store(self.config) as store:
            first = 0
            while store.stats()["evictions"] == 0 and first < 4096:
                store.batch_put_from(["py_fill%d" % (first + i) for i in range(16)], host.ctypes.data, offsets,
                                     [PAGE] * 16)
                first += 16
            self.assertGreater(store.stats()["evictions"], 0)

            base = host.ctypes.data

            def put(name, n, **hints):
                return store.batch_put_from(["py_%s%d" % (name, i) for i in range(n)], base,
                                            offsets[:n], [PAGE] * n, **hints)
            self.assertEqual(put("plain", 4, last_is_partial=False), [True, True, False, False])
            self.assertEqual(put("whole", 4, whole=True), [False] * 4)
            self.assertEqual(put("whole", 6, whole=True), [True] * 6)
        del host
        mm.close()

    def test_bad_input_raises_clear_errors(self):
        with self.assertRaises(l3cache.L3Error) as ctx:
            l3cache.Store({"store": {"path": self.path, "slab_size": "3MiB"}})
        self.assertEqual(ctx.exception.status, "L3_ECONFIG")
        self.assertIn("$.store.slab_size", str(ctx.exception))
        self.assertFalse(os.path.exists(self.path))
        mm, host = pool(4 * PAGE)
        with l3cache.Store(self.config) as store:
            with self.assertRaises(ValueError):
                store.batch_exists(["a\0b"])
            with self.assertRaises(l3cache.L3Error) as ctx:
                store.batch_put_from(["py_k"], host.ctypes.data, [3 * PAGE], [2 * PAGE], host.nbytes)
            self.assertIn("outside", str(ctx.exception))
            with self.assertRaises(l3cache.L3Error):
                store.batch_exists([""])
        del host
        mm.close()


class ExecutorTest(unittest.TestCase):
    def test_pages_round_trip_through_the_executor(self):
        path = os.path.join(TEST_DIR, "py-exec-%d.l3" % os.getpid())
        if os.path.exists(path):
            os.unlink(path)
        config = {"store": {"path": path, "capacity": "64MiB", "slab_size": "4MiB"},
                  "namespace": {"deployment_id": "py", "weight_version": "w1"}}
        layout = {"groups": [{"packing": 1, "block_bytes": PAGE, "shard_count": 1}],
                  "lcm_block_bytes": PAGE, "num_lcm_blocks": 16}
        mm, host = pool(16 * PAGE)
        host[:] = np.arange(16 * PAGE, dtype=np.uint64).astype(np.uint8)
        want = host[: 4 * PAGE].copy()
        store = l3cache.Store(config)
        ex = l3cache.Executor(store, host.ctypes.data, host.nbytes, layout)
        keys = [(0, "h%d" % i, 0) for i in range(4)]

        def wait(op_id):
            deadline = time.time() + 5
            while time.time() < deadline:
                for c in ex.poll()["completions"]:
                    if c["op_id"] == op_id:
                        return c
                time.sleep(0.001)
            self.fail("no completion for %d" % op_id)

        ex.submit([{"kind": "put", "op_id": 1, "keys": keys, "host_blocks": [1, 2, 3, 4]}])
        self.assertEqual(wait(1)["success"], [True] * 4)
        host[:] = 0
        ex.submit([{"kind": "query", "op_id": 2, "keys": keys + [(0, "absent", 0)]}])
        self.assertEqual(wait(2)["success"], [True] * 4 + [False])
        ex.submit([{"kind": "get", "op_id": 3, "keys": keys, "host_blocks": [1, 2, 3, 4]}])
        done = wait(3)
        self.assertEqual(done["success"], [True] * 4)
        self.assertTrue(done["retired"])
        np.testing.assert_array_equal(host[: 4 * PAGE], want)
        snap = ex.snapshot()
        get_row = [row for row in snap["operations"] if row["kind"] == "get"][0]
        self.assertEqual(get_row["success_bytes"], 4 * PAGE)
        self.assertEqual(snap["health_state"], "healthy")
        self.assertIn('l3cache_executor_events_total{kind="put",event="accepted"} 1', ex.metrics())
        self.assertTrue(ex.key_prefix().startswith("l3v1-"))
        with self.assertRaises(l3cache.L3Error) as ctx:
            ex.submit([{"kind": "get", "op_id": 4, "keys": keys[:1], "host_blocks": [0]}])
        self.assertEqual(ctx.exception.status, "L3_ELAYOUT")
        ex.close()
        # Reopened, the pages are still there.
        with l3cache.Store(config) as store:
            self.assertEqual(store.stats()["objects"], 4)
        os.unlink(path)
        del host
        mm.close()


if __name__ == "__main__":
    unittest.main()
