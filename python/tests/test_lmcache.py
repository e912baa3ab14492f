"""l3cache loaded by LMCache's native_plugin L2 adapter: a stand-in of its
loader and demux loop, written from LMCache's contract (import by module
path and class name, six required methods, construct with adapter_params;
poll the eventfd, then drain), with byte-checked round trips."""
import importlib
import os
import select
import tempfile
import threading
import unittest

import numpy as np

import l3cache

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
OBJ = 256 * 1024
REQUIRED = ["event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
            "drain_completions", "close"]


def load_native_plugin(config):
    """What LMCache's native_plugin factory does with its JSON config."""
    module = importlib.import_module(config["module_path"])
    cls = getattr(module, config["class_name"])
    client = cls(**config.get("adapter_params", {}))
    for name in REQUIRED:
        if not callable(getattr(client, name, None)):
            client.close()
            raise TypeError("missing required method %s" % name)
    return client


class Demux:
    """LMCache's demux thread, reduced: poll the eventfd, drain, file each
    completion by future id."""

    def __init__(self, client):
        self.client = client
        self.done = {}
        self.poller = select.poll()
        self.poller.register(client.event_fd(), select.POLLIN)

    def wait(self, fids, timeout_s=30.0):
        fids = set(fids)
        waited = 0
        while not fids <= set(self.done):
            if not self.poller.poll(200):
                waited += 0.2
                if waited > timeout_s:
                    raise TimeoutError("no completion for %s" % sorted(fids - set(self.done)))
                continue
            for fid, ok, error, results in self.client.drain_completions():
                assert fid not in self.done, "a second completion for %d" % fid
                self.done[fid] = (ok, error, results)
        return [self.done[f] for f in sorted(fids)]


def pattern(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


class LMCacheConnectorTest(unittest.TestCase):
    def setUp(self):
        self.path = os.path.join(TEST_DIR, "lmc-%d-%s.l3" % (os.getpid(), self._testMethodName))
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.config = {"store": {"path": self.path, "capacity": "256MiB", "slab_size": "4MiB"},
                       "namespace": {"deployment_id": "lmcache"}}

    def tearDown(self):
        if os.path.exists(self.path):
            os.unlink(self.path)

    def plugin(self, **params):
        spec = {"type": "native_plugin", "module_path": "l3cache.lmcache", "class_name": "L3CacheConnector",
                "adapter_params": dict({"config": self.config}, **params)}
        return load_native_plugin(spec)

    def test_the_loader_finds_the_contract_and_a_bad_param_is_refused(self):
        client = self.plugin()
        self.assertTrue(callable(client.submit_batch_delete))
        self.assertIsInstance(client.event_fd(), int)
        client.close()
        with self.assertRaises(TypeError):
            self.plugin(no_such_param=1)

    def test_round_trips_from_an_aligned_pool_go_as_fixed_buffers(self):
        client = self.plugin(register_min_bytes=1 << 20)
        demux = Demux(client)
        with l3cache.Pool(16 * OBJ) as pool:
            host = pool.array
            keys = ["m@0@0@%04x" % i for i in range(8)]
            for i in range(8):
                host[i * OBJ:(i + 1) * OBJ] = pattern(i, OBJ)
            views = [memoryview(host[i * OBJ:(i + 1) * OBJ]) for i in range(8)]
            [(ok, error, results)] = demux.wait([client.submit_batch_set(keys, views)])
            self.assertTrue(ok, error)
            self.assertEqual(results, [True] * 8)
            outs = [memoryview(host[(8 + i) * OBJ:(9 + i) * OBJ]) for i in range(8)]
            [(ok, error, results)] = demux.wait([client.submit_batch_get(keys, outs)])
            self.assertTrue(ok, error)
            self.assertEqual(results, [True] * 8)
            for i in range(8):
                np.testing.assert_array_equal(host[(8 + i) * OBJ:(9 + i) * OBJ], pattern(i, OBJ))
            stats = client.stats()
            self.assertGreater(stats["store"]["io_fixed"], 0)
            self.assertEqual(stats["store"]["io_unfixed"], 0)
            self.assertEqual(stats["bounced_keys"], 0)
            client.close()

    def test_round_trips_from_an_unaligned_bytearray_are_byte_exact(self):
        client = self.plugin()
        demux = Demux(client)
        src = bytearray(3 * 10000 + 1)
        src[1:] = bytes(pattern(5, 3 * 10000))
        views = [memoryview(src)[1 + i * 10000:1 + (i + 1) * 10000] for i in range(3)]
        keys = ["u@0@0@%d" % i for i in range(3)]
        [(ok, error, _)] = demux.wait([client.submit_batch_set(keys, views)])
        self.assertTrue(ok, error)
        dst = bytearray(3 * 10000 + 3)
        outs = [memoryview(dst)[3 + i * 10000:3 + (i + 1) * 10000] for i in range(3)]
        [(ok, error, results)] = demux.wait([client.submit_batch_get(keys, outs)])
        self.assertTrue(ok, error)
        self.assertEqual(results, [True] * 3)
        self.assertEqual(bytes(dst[3:]), bytes(src[1:]))
        self.assertGreater(client.stats()["bounced_keys"], 0)
        # A buffer of another size than the object: that key fails alone.
        short = bytearray(9999)
        [(ok, error, results)] = demux.wait([client.submit_batch_get(["u@0@0@0"], [memoryview(short)])])
        self.assertEqual(results, [False])
        client.close()

    def test_exists_and_delete(self):
        client = self.plugin()
        demux = Demux(client)
        buf = bytearray(pattern(1, 4096).tobytes())
        demux.wait([client.submit_batch_set(["e@1"], [memoryview(buf)])])
        [(ok, _, results)] = demux.wait([client.submit_batch_exists(["e@1", "e@2"])])
        self.assertEqual((ok, results), (True, [True, False]))
        [(ok, _, results)] = demux.wait([client.submit_batch_delete(["e@1", "e@2"])])
        self.assertEqual((ok, results), (True, [True, False]))
        [(ok, _, results)] = demux.wait([client.submit_batch_exists(["e@1", "e@2"])])
        self.assertEqual(results, [False, False])
        client.close()
        client = self.plugin()  # deleted durably: not back after a reopen
        demux = Demux(client)
        [(ok, _, results)] = demux.wait([client.submit_batch_exists(["e@1"])])
        self.assertEqual(results, [False])
        client.close()

    def test_a_full_queue_refuses_with_a_completion_not_an_exception(self):
        client = self.plugin(workers=1, max_pending=1)
        demux = Demux(client)
        bufs = [bytearray(pattern(i, OBJ).tobytes()) for i in range(32)]
        fids = [client.submit_batch_set(["q@%d" % i], [memoryview(bufs[i])]) for i in range(32)]
        results = demux.wait(fids)
        refused = [e for ok, e, _ in results if not ok]
        self.assertTrue(refused, "a queue of one took 32 batches")
        self.assertTrue(all("queue is full" in e for e in refused), refused)
        self.assertTrue(any(ok for ok, _, _ in results))
        self.assertGreater(client.stats()["rejected_full"], 0)
        client.close()

    def test_concurrent_submitters(self):
        client = self.plugin(workers=4, max_pending=1024)
        demux = Demux(client)
        lock = threading.Lock()
        fids = []

        def submitter(t):
            bufs = [bytearray(pattern(100 * t + i, 8192).tobytes()) for i in range(20)]
            mine = [client.submit_batch_set(["c%d@%d" % (t, i)], [memoryview(bufs[i])]) for i in range(20)]
            with lock:
                fids.extend(mine)
                keep.append(bufs)

        keep = []
        threads = [threading.Thread(target=submitter, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(len(set(fids)), 80)
        self.assertTrue(all(ok for ok, _, _ in demux.wait(fids)))
        outs = [bytearray(8192) for _ in range(80)]
        keys = ["c%d@%d" % (t, i) for t in range(4) for i in range(20)]
        [(ok, _, results)] = demux.wait([client.submit_batch_get(keys, [memoryview(o) for o in outs])])
        self.assertEqual(results, [True] * 80)
        for k, (t, i) in enumerate((t, i) for t in range(4) for i in range(20)):
            self.assertEqual(bytes(outs[k]), pattern(100 * t + i, 8192).tobytes())
        client.close()

    def test_close_retires_every_batch_in_flight(self):
        client = self.plugin(workers=2)
        bufs = [bytearray(pattern(i, OBJ).tobytes()) for i in range(16)]
        for i in range(16):
            client.submit_batch_set(["f@%d" % i], [memoryview(bufs[i])])
        client.close()  # returns once every batch ran
        client = self.plugin()
        demux = Demux(client)
        [(ok, _, results)] = demux.wait([client.submit_batch_exists(["f@%d" % i for i in range(16)])])
        self.assertEqual(results, [True] * 16)
        client.close()


if __name__ == "__main__":
    unittest.main()
