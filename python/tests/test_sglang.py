"""l3cache as SGLang HiCache's storage backend: loaded through the
factory's dynamic path (a stand-in of SGLang written from its contract,
sglang_standin.py), with real torch tensors as the Host pool; pages
round-trip byte-exact as one object each, through fixed buffers."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sglang_standin  # noqa: E402

sglang_standin.install()

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig  # noqa: E402
from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory  # noqa: E402
from sglang.srt.metrics.collector import StorageMetrics  # noqa: E402

import l3cache  # noqa: E402

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
MIB = 1 << 20


def store_config(path, capacity=64 * MIB, slab=MIB):
    return {"store": {"path": path, "capacity": capacity, "slab_size": slab}}


def storage_config(config_path, mla=False, tp_rank=0, tp_size=1, model="org/Model_7B", lease=10.0):
    extra = {"backend_name": "l3cache", "module_path": "l3cache.sglang",
             "class_name": "L3CacheHiCacheStorage", "interface_v1": 1,
             "l3cache_config": config_path, "lease_seconds": lease}
    return HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0,
                                attn_cp_size=1, is_mla_model=mla, enable_storage_metrics=True,
                                is_page_first_layout=True, model_name=model, extra_config=extra)


def make_backend(config_path, pool, **kw):
    """What SGLang's cache controller does: create through the factory,
    then hand it the Host pool."""
    backend = StorageBackendFactory.create_backend("dynamic", storage_config(config_path, **kw), pool)
    backend.register_mem_pool_host(pool)
    return backend


def fill_pages(pool, pages, seed):
    g = torch.Generator().manual_seed(seed)
    for p in pages:
        t = slice(p * pool.page_size, (p + 1) * pool.page_size)
        if isinstance(pool, sglang_standin.MHAPool):
            view = pool.kv_buffer[:, t]
        else:
            view = pool.kv_buffer[t]
        view.copy_(torch.randn(view.shape, generator=g).to(pool.dtype))


def indices(pool, pages):
    return torch.cat([torch.arange(p * pool.page_size, (p + 1) * pool.page_size) for p in pages])


def same_bytes(pool, a, b):
    return all(torch.equal(x, y) for x, y in zip(pool.page_bytes(a), pool.page_bytes(b)))


class SGLangBackendTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=TEST_DIR, prefix="sgl")
        self.store_path = os.path.join(self.dir, "hicache.l3")
        self.config_path = os.path.join(self.dir, "l3cache.json")
        with open(self.config_path, "w") as f:
            json.dump(store_config(self.store_path), f)
        self.backends = []

    def tearDown(self):
        for b in self.backends:
            b.close()
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)

    def backend(self, pool, **kw):
        b = make_backend(self.config_path, pool, **kw)
        self.backends.append(b)
        return b

    def test_the_factory_loads_a_subclass_of_the_real_interface(self):
        pool = sglang_standin.MHAPool()
        b = self.backend(pool)
        cls = type(b)
        self.assertEqual(cls.__module__, "l3cache.sglang")
        self.assertTrue(issubclass(cls, HiCacheStorage))
        self.assertIs(b.mem_pool_host, pool)

    def test_mha_pages_round_trip_as_one_object_each_through_fixed_buffers(self):
        pool = sglang_standin.MHAPool()
        b = self.backend(pool)
        keys = ["h%02d" % i for i in range(8)]
        fill_pages(pool, range(8), seed=1)
        self.assertEqual(b.batch_set_v1(keys, indices(pool, range(8))), [True] * 8)
        self.assertEqual(b.batch_exists(keys + ["missing", "h00"]), 8)
        self.assertEqual(b.batch_exists(["h00", "missing", "h01"]), 1)
        # Read them into other slots; K and V of each page come back exact.
        self.assertEqual(b.batch_get_v1(keys, indices(pool, range(16, 24))), [True] * 8)
        for i in range(8):
            self.assertTrue(same_bytes(pool, i, 16 + i), "page %d" % i)
        stats = b.store_stats()
        self.assertEqual(stats["objects"], 8)  # one per page: K and V together
        self.assertTrue(stats["host_fixed"])
        self.assertGreater(stats["io_fixed"], 0)
        self.assertEqual(stats["io_unfixed"], 0)
        self.assertEqual(stats["unaligned_ios"], 0)
        # Each answer has one bool per key; a missing page is False.
        self.assertEqual(b.batch_get_v1(["h00", "nope"], indices(pool, [30, 31])), [True, False])

    def test_mla_pages_round_trip_with_one_range(self):
        pool = sglang_standin.MLAPool()
        b = self.backend(pool, mla=True)
        keys = ["m%02d" % i for i in range(6)]
        fill_pages(pool, range(6), seed=2)
        self.assertEqual(b.batch_set_v1(keys, indices(pool, range(6))), [True] * 6)
        self.assertEqual(b.batch_get_v1(keys, indices(pool, range(10, 16))), [True] * 6)
        for i in range(6):
            self.assertTrue(same_bytes(pool, i, 10 + i))
        self.assertEqual(b.store_stats()["io_unfixed"], 0)

    def test_layer_first_is_refused_with_a_clear_message(self):
        pool = sglang_standin.MHAPool(layout="layer_first")
        with self.assertRaisesRegex(ValueError, "layer_first.*page_first_direct"):
            self.backend(pool)

    def test_models_ranks_and_layouts_never_share_a_page(self):
        pool = sglang_standin.MHAPool()
        a = self.backend(pool, model="org/A")
        fill_pages(pool, [0], seed=3)
        self.assertEqual(a.batch_set_v1(["k"], indices(pool, [0])), [True])
        other_model = self.backend(pool, model="org/B")
        other_rank = self.backend(pool, model="org/A", tp_rank=1, tp_size=2)
        other_layout = self.backend(sglang_standin.MHAPool(layout="page_first"), model="org/A")
        other_dtype = self.backend(sglang_standin.MHAPool(dtype=torch.float16), model="org/A")
        for b in (other_model, other_rank, other_layout, other_dtype):
            self.assertEqual(b.batch_exists(["k"]), 0)
        self.assertEqual(a.batch_exists(["k"]), 1)
        # clear() drops this namespace only.
        self.assertEqual(other_model.batch_set_v1(["k"], indices(pool, [0])), [True])
        a.clear()
        self.assertEqual(a.batch_exists(["k"]), 0)
        self.assertEqual(other_model.batch_exists(["k"]), 1)

    def test_the_copying_interface_works_too(self):
        pool = sglang_standin.MHAPool()
        b = self.backend(pool)
        fill_pages(pool, [2], seed=4)
        page = pool.get_data_page(2 * pool.page_size).contiguous()
        self.assertTrue(b.set("slow", page))
        self.assertTrue(b.exists("slow"))
        self.assertFalse(b.exists("absent"))
        out = b.get("slow", pool.get_dummy_flat_data_page())
        self.assertTrue(torch.equal(out.view(torch.uint8), page.view(torch.uint8)))
        got = b.batch_get(["slow", "absent"])
        self.assertTrue(torch.equal(got[0].view(torch.uint8), page.view(torch.uint8)))
        self.assertIsNone(got[1])
        self.assertTrue(b.batch_set(["s1", "s2"], [page, page]))
        # The slow path stores the same shape as the zero-copy one.
        self.assertEqual(b.batch_get_v1(["slow"], indices(pool, [9])), [True])
        self.assertTrue(same_bytes(pool, 2, 9))

    def test_three_threads_exist_get_and_set_at_once(self):
        pool = sglang_standin.MHAPool(pages=64)
        b = self.backend(pool)
        fill_pages(pool, range(16), seed=5)
        self.assertEqual(b.batch_set_v1(["t%d" % i for i in range(8)], indices(pool, range(8))), [True] * 8)
        errors = []

        def run(fn):
            try:
                for _ in range(30):
                    fn()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def exists():
            assert b.batch_exists(["t%d" % i for i in range(8)]) == 8

        def get():
            assert b.batch_get_v1(["t%d" % i for i in range(8)], indices(pool, range(32, 40))) == [True] * 8

        def put():
            assert b.batch_set_v1(["u%d" % i for i in range(8)], indices(pool, range(8, 16))) == [True] * 8

        threads = [threading.Thread(target=run, args=(f,)) for f in (exists, get, put)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i in range(8):
            self.assertTrue(same_bytes(pool, i, 32 + i))

    def test_two_ranks_as_two_processes_share_mla_pages(self):
        script = os.path.join(self.dir, "rank.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.abspath(__file__))] + sys.path))
        procs = [subprocess.Popen([sys.executable, script, self.config_path, str(rank), self.dir], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for rank in (0, 1)]
        for rank, p in enumerate(procs):
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
            self.assertIn("rank %d ok" % rank, out)
        self.assertIn("attached 2", out)  # rank 1 saw both ranks on the store at once

    def test_a_lease_keeps_a_page_through_eviction_pressure(self):
        with open(self.config_path, "w") as f:  # a store of a few slabs
            json.dump(store_config(self.store_path, capacity=24 * MIB, slab=MIB), f)
        pool = sglang_standin.MHAPool(pages=64)
        b = self.backend(pool, lease=60)
        fill_pages(pool, range(64), seed=6)
        self.assertEqual(b.batch_set_v1(["old0", "old1"], indices(pool, [0, 1])), [True, True])
        self.assertEqual(b.batch_exists(["old0", "old1"]), 2)  # leased until the get
        for wave in range(100):  # several times the store's size
            keys = ["new%d-%d" % (wave, i) for i in range(16)]
            b.batch_set_v1(keys, indices(pool, range(16, 32)))
        self.assertGreater(b.store_stats()["evictions"], 0)
        self.assertEqual(b.batch_exists(["new4-0"]), 0)  # in a later slab, unleased: evicted
        self.assertEqual(b.batch_get_v1(["old0", "old1"], indices(pool, [40, 41])), [True, True])
        self.assertTrue(same_bytes(pool, 0, 40) and same_bytes(pool, 1, 41))

    def test_a_restart_keeps_the_pages(self):
        pool = sglang_standin.MHAPool()
        b = make_backend(self.config_path, pool)
        fill_pages(pool, range(4), seed=7)
        self.assertEqual(b.batch_set_v1(["r%d" % i for i in range(4)], indices(pool, range(4))), [True] * 4)
        b.close()
        pool2 = sglang_standin.MHAPool()
        b2 = self.backend(pool2)
        self.assertEqual(b2.batch_exists(["r%d" % i for i in range(4)]), 4)
        self.assertEqual(b2.batch_get_v1(["r%d" % i for i in range(4)], indices(pool2, range(4))), [True] * 4)
        for i in range(4):
            self.assertTrue(all(torch.equal(x, y) for x, y in zip(pool.page_bytes(i), pool2.page_bytes(i))))
        self.assertTrue(b2.store_stats()["opened_from_checkpoint"])

    def test_stats_are_sglang_storage_metrics(self):
        pool = sglang_standin.MHAPool()
        b = self.backend(pool)
        fill_pages(pool, range(3), seed=8)
        b.batch_set_v1(["a", "b", "c"], indices(pool, range(3)))
        b.batch_get_v1(["a", "b"], indices(pool, range(3, 5)))
        m = b.get_stats()
        self.assertIsInstance(m, StorageMetrics)
        self.assertEqual(m.backup_pgs, [3])
        self.assertEqual(m.prefetch_pgs, [2])
        self.assertEqual(len(m.prefetch_bandwidth), 1)
        self.assertEqual(b.get_stats().backup_pgs, [])  # since the last call

    def test_a_missing_config_is_a_clear_error(self):
        cfg = storage_config(self.config_path)
        del cfg.extra_config["l3cache_config"]
        with self.assertRaisesRegex(ValueError, "l3cache_config"):
            StorageBackendFactory.create_backend("dynamic", cfg, None)


RANK_SCRIPT = r'''
import os
import sys
import time
import torch
import sglang_standin
sglang_standin.install()
from test_sglang import make_backend, fill_pages, indices
config, rank, sync = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def wait_for(name):
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(sync, name)):
        assert time.monotonic() < deadline, "timed out waiting for " + name
        time.sleep(0.02)


def mark(name):
    open(os.path.join(sync, name), "w").close()



pool = sglang_standin.MLAPool()
b = make_backend(config, pool, mla=True, tp_rank=rank, tp_size=2)
keys = ["shared%d" % i for i in range(4)]
fill_pages(pool, range(4), seed=99)  # both ranks hold the same MLA pages
if rank == 0:
    assert b.batch_set_v1(keys, indices(pool, range(4))) == [True] * 4
    mark("written")
    wait_for("read")  # stay attached while rank 1 reads
else:
    wait_for("written")
    print("attached %d" % b.store_stats()["attached_processes"])
    mark("read")
    assert b.batch_exists(keys) == 4, "rank 1 does not see rank 0's pages"
    assert b.batch_get_v1(keys, indices(pool, range(8, 12))) == [True] * 4
    for i in range(4):
        assert all(torch.equal(x, y) for x, y in zip(pool.page_bytes(i), pool.page_bytes(8 + i)))
b.close()
print("rank %d ok" % rank)
'''

if __name__ == "__main__":
    unittest.main()
