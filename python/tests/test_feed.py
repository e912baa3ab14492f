"""The removal feed from Python: every object that leaves the store is
announced once, by its key's identity (``l3cache.key_id``) and why, to
every reader of every handle, in order."""
import mmap
import os
import tempfile
import unittest

import numpy as np

import l3cache

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
OBJ = 256 << 10


class RemovalFeedTest(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(TEST_DIR, "py-feed-%d-%s.l3" % (os.getpid(), self._testMethodName))
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.config = {"store": {"path": self.path, "capacity": "32MiB", "slab_size": "2MiB", "admission": "all"}}
        self.mm = mmap.mmap(-1, 8 * OBJ)
        self.host = np.frombuffer(self.mm, dtype=np.uint8)

    def tearDown(self):
        del self.host
        self.mm.close()
        if os.path.exists(self.path):
            os.unlink(self.path)

    def put(self, store, keys):
        for i in range(0, len(keys), 8):
            batch = keys[i:i + 8]
            ok = store.batch_put_from(batch, self.host.ctypes.data, [j * OBJ for j in range(len(batch))],
                                      [OBJ] * len(batch))
            self.assertEqual(ok, [True] * len(batch))

    def test_evictions_reach_every_handle_by_key_identity(self):
        keys = ["ns_block%d" % i for i in range(240)]
        ids = {l3cache.key_id(k): k for k in keys}
        self.assertEqual(len(ids), len(keys))
        self.assertEqual(len(next(iter(ids))), 16)
        with l3cache.Store(self.config) as a, l3cache.Store(self.config) as b:
            a.register_host(self.host.ctypes.data, self.host.nbytes)
            fa, fb = a.removal_feed(), b.removal_feed()
            self.put(a, keys)
            events, missed = fb.read()
            self.assertEqual(missed, 0)
            self.assertGreater(len(events), 100)
            self.assertEqual([e.seq for e in events], list(range(len(events))))
            self.assertTrue(all(e.reason == "evicted" for e in events))
            gone = [ids[e.key_id] for e in events]  # every one names a key that was put
            self.assertEqual(len(set(gone)), len(gone))
            still = b.batch_exists(keys)
            self.assertEqual(sorted(gone), sorted(k for k, there in zip(keys, still) if not there))
            # A reader reads in steps: the same removals, in the same order.
            first, _ = fa.read(max_events=10)
            rest, _ = fa.read()
            self.assertEqual(first + rest, events)
            self.assertEqual(fa.read(), ([], 0))
            self.assertEqual(a.stats()["removals_by_reason"]["evicted"], len(events))
            self.assertIn('l3cache_store_removals_total{reason="evicted"} %d' % len(events), a.metrics())

    def test_a_namespace_removal_is_announced_key_by_key(self):
        keys = ["aa_b%d" % i for i in range(3)] + ["bb_b%d" % i for i in range(2)]
        with l3cache.Store(self.config) as store:
            store.register_host(self.host.ctypes.data, self.host.nbytes)
            self.put(store, keys)
            feed = store.removal_feed()
            self.assertTrue(store.remove_by_prefix("aa"))
            events, missed = feed.read()
            self.assertEqual((missed, {e.reason for e in events}), (0, {"namespace"}))
            self.assertEqual(sorted(e.key_id for e in events), sorted(l3cache.key_id(k) for k in keys[:3]))
            oldest = store.removal_feed(start="oldest")
            self.assertEqual(oldest.read()[0], events)
            with self.assertRaises(ValueError):
                store.removal_feed(start="later")
        with self.assertRaises(l3cache.L3Error):
            feed.read()


if __name__ == "__main__":
    unittest.main()
