"""l3cache as SGLang HiCache's storage backend, driven the way SGLang's
cache controllers drive it (sglang_standin/, whose modules name the
upstream files and commits they follow): attached through the factory's
dynamic path, dense pools through the v1 zero-copy calls, hybrid models'
pools (a DSA indexer sidecar, a Mamba state pool) through the v2 calls, K
and V in two allocations, metrics on and off, two ranks as two processes,
and every rank's and pool's object of a page stored as one page group.
Every page of every pool round-trips byte-exact, zero-copy."""
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

from sglang.srt.mem_cache.hicache_storage import (HiCacheStorage, HiCacheStorageConfig,  # noqa: E402
                                                  PoolHitPolicy, PoolName, PoolTransfer, PoolTransferResult)
from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory  # noqa: E402
from sglang.srt.observability.metrics_collector import StorageMetrics  # noqa: E402
from sglang_standin.controller import Controller  # noqa: E402
from sglang_standin.pool_host import (AsymmetricMHATokenToKVPoolHost, DSAIndexerPoolHost,  # noqa: E402
                                      HostPoolGroup, MambaPoolHost, MHATokenToKVPoolHost,
                                      MHATokenToKVPoolMXFP8Host, MLATokenToKVPoolHost, PoolEntry)

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
MIB = 1 << 20


def store_config(path, capacity=64 * MIB, slab=MIB):
    return {"store": {"path": path, "capacity": capacity, "slab_size": slab}}


def extra_config(config_path, lease=10.0):
    return {"backend_name": "l3cache", "module_path": "l3cache.sglang", "class_name": "L3CacheHiCacheStorage",
            "interface_v1": 1, "l3cache_config": config_path, "lease_seconds": lease}


def storage_config(config_path, mla=False, tp_rank=0, tp_size=1, model="org/Model_7B", lease=10.0, metrics=True):
    return HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0,
                                attn_cp_size=1, is_mla_model=mla, enable_storage_metrics=metrics,
                                is_page_first_layout=True, model_name=model,
                                extra_config=extra_config(config_path, lease))


def make_backend(config_path, pool, **kw):
    """What SGLang's cache controller does: create through the factory,
    then hand it the Host pool."""
    backend = StorageBackendFactory.create_backend("dynamic", storage_config(config_path, **kw), pool)
    backend.register_mem_pool_host(pool)
    return backend


def same_bytes(pool, a, b):
    return pool.page_bytes(a) == pool.page_bytes(b)


class Base(unittest.TestCase):
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

    def controller(self, pools, **kw):
        c = Controller(pools, "org/Hybrid", extra_config(self.config_path), **kw)
        self.backends.append(c.attach())
        return c


class DenseModelTest(Base):
    def test_the_factory_loads_a_subclass_of_the_real_interface(self):
        pool = MHATokenToKVPoolHost()
        b = self.backend(pool)
        self.assertEqual(type(b).__module__, "l3cache.sglang.backend")
        self.assertTrue(issubclass(type(b), HiCacheStorage))
        self.assertIs(b.mem_pool_host, pool)

    def test_mha_pages_round_trip_as_one_object_each_through_fixed_buffers(self):
        pool = MHATokenToKVPoolHost()
        c = Controller(pool, "org/Model", extra_config(self.config_path))
        b = c.attach()
        self.backends.append(b)
        keys = ["h%02d" % i for i in range(8)]
        pool.fill(range(8), seed=1)
        self.assertEqual(c.page_backup(keys, pool.slots(range(8)))[0], 8 * pool.page_size)
        self.assertEqual(c.hit_query(keys + ["missing", "h00"])[0], keys)
        self.assertEqual(b.batch_exists(["h00", "missing", "h01"]), 1)
        self.assertEqual(c.page_transfer(keys, pool.slots(range(16, 24)))[0], 8)
        for i in range(8):
            self.assertTrue(same_bytes(pool, i, 16 + i), "page %d" % i)
        stats = b.store_stats()
        self.assertEqual(stats["objects"], 8)  # one per page: K and V together
        self.assertTrue(stats["host_fixed"])
        self.assertGreater(stats["io_fixed"], 0)
        self.assertEqual(stats["io_unfixed"], 0)
        self.assertEqual(b.batch_get_v1(["h00", "nope"], pool.slots([30, 31])), [True, False])

    def test_mla_pages_round_trip_with_one_range(self):
        pool = MLATokenToKVPoolHost()
        b = self.backend(pool, mla=True)
        keys = ["m%02d" % i for i in range(6)]
        pool.fill(range(6), seed=2)
        self.assertEqual(b.batch_set_v1(keys, pool.slots(range(6))), [True] * 6)
        self.assertEqual(b.batch_get_v1(keys, pool.slots(range(10, 16))), [True] * 6)
        for i in range(6):
            self.assertTrue(same_bytes(pool, i, 10 + i))
        self.assertEqual(b.store_stats()["io_unfixed"], 0)

    def test_k_and_v_in_two_allocations_round_trip_zero_copy(self):
        # MiMo-V2's asymmetric pool: kv_buffer is a tuple (k_buffer, v_buffer).
        pool = AsymmetricMHATokenToKVPoolHost(dim=128, v_dim=64)
        self.assertIsInstance(pool.kv_buffer, tuple)
        b = self.backend(pool)
        keys = ["a%02d" % i for i in range(8)]
        pool.fill(range(8), seed=3)
        self.assertEqual(b.batch_set_v1(keys, pool.slots(range(8))), [True] * 8)
        pool.zero(range(8))
        self.assertEqual(b.batch_get_v1(keys, pool.slots(range(8))), [True] * 8)
        probe = AsymmetricMHATokenToKVPoolHost(dim=128, v_dim=64)
        probe.fill(range(8), seed=3)
        for i in range(8):
            self.assertEqual(pool.page_bytes(i), probe.page_bytes(i), "page %d" % i)
        stats = b.store_stats()
        self.assertEqual(stats["host_regions"], 2)
        self.assertEqual(stats["io_unfixed"], 0)
        self.assertEqual(stats["objects"], 8)

    def test_what_cannot_be_stored_is_refused_with_a_clear_message(self):
        with self.assertRaisesRegex(ValueError, "layer_first.*page_first_direct"):
            self.backend(MHATokenToKVPoolHost(layout="layer_first"))
        with self.assertRaisesRegex(ValueError, "no Host buffer.*MLA dummy"):
            self.backend(MLATokenToKVPoolHost(is_dummy=True), mla=True)
        with self.assertRaisesRegex(ValueError, "MXFP8"):
            self.backend(MHATokenToKVPoolMXFP8Host())
        dcp = MLATokenToKVPoolHost()
        dcp.dcp_size = 2
        with self.assertRaisesRegex(ValueError, "decode-context-parallel"):
            self.backend(dcp, mla=True)

    def test_models_ranks_and_layouts_never_share_a_page(self):
        pool = MHATokenToKVPoolHost()
        a = self.backend(pool, model="org/A")
        pool.fill([0], seed=3)
        self.assertEqual(a.batch_set_v1(["k"], pool.slots([0])), [True])
        others = [self.backend(pool, model="org/B"), self.backend(pool, model="org/A", tp_rank=1, tp_size=2),
                  self.backend(MHATokenToKVPoolHost(layout="page_first"), model="org/A"),
                  self.backend(MHATokenToKVPoolHost(dtype=torch.float16), model="org/A")]
        for b in others:
            self.assertEqual(b.batch_exists(["k"]), 0)
        self.assertEqual(a.batch_exists(["k"]), 1)
        self.assertEqual(others[0].batch_set_v1(["k"], pool.slots([0])), [True])
        a.clear()  # drops this namespace only
        self.assertEqual(a.batch_exists(["k"]), 0)
        self.assertEqual(others[0].batch_exists(["k"]), 1)

    def test_the_copying_interface_works_too(self):
        pool = MHATokenToKVPoolHost()
        extra = extra_config(self.config_path)
        extra["interface_v1"] = 0
        c = Controller(pool, "org/Model", extra)
        b = c.attach()
        self.backends.append(b)
        pool.fill([2, 3], seed=4)
        self.assertEqual(c.page_backup(["s2", "s3"], pool.slots([2, 3]))[0], 2 * pool.page_size)
        self.assertEqual(c.page_transfer(["s2", "s3"], pool.slots([9, 10]))[0], 2)
        self.assertTrue(same_bytes(pool, 2, 9) and same_bytes(pool, 3, 10))
        self.assertIsNone(b.batch_get(["absent"])[0])
        # The slow path stores the same shape as the zero-copy one.
        self.assertEqual(b.batch_get_v1(["s2"], pool.slots([11])), [True])
        self.assertTrue(same_bytes(pool, 2, 11))

    def test_three_threads_exist_get_and_set_at_once(self):
        pool = MHATokenToKVPoolHost(pages=64)
        b = self.backend(pool)
        pool.fill(range(16), seed=5)
        self.assertEqual(b.batch_set_v1(["t%d" % i for i in range(8)], pool.slots(range(8))), [True] * 8)
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
            assert b.batch_get_v1(["t%d" % i for i in range(8)], pool.slots(range(32, 40))) == [True] * 8

        def put():
            assert b.batch_set_v1(["u%d" % i for i in range(8)], pool.slots(range(8, 16))) == [True] * 8

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
        pool = MHATokenToKVPoolHost(pages=64)
        b = self.backend(pool, lease=60)
        pool.fill(range(64), seed=6)
        self.assertEqual(b.batch_set_v1(["old0", "old1"], pool.slots([0, 1])), [True, True])
        self.assertEqual(b.batch_exists(["old0", "old1"]), 2)  # leased until the get
        for wave in range(100):  # several times the store's size
            b.batch_set_v1(["new%d-%d" % (wave, i) for i in range(16)], pool.slots(range(16, 32)))
        self.assertGreater(b.store_stats()["evictions"], 0)
        self.assertEqual(b.batch_exists(["new4-0"]), 0)  # in a later slab, unleased: evicted
        self.assertEqual(b.batch_get_v1(["old0", "old1"], pool.slots([40, 41])), [True, True])
        self.assertTrue(same_bytes(pool, 0, 40) and same_bytes(pool, 1, 41))

    def test_a_restart_keeps_the_pages(self):
        pool = MHATokenToKVPoolHost()
        b = make_backend(self.config_path, pool)
        pool.fill(range(4), seed=7)
        self.assertEqual(b.batch_set_v1(["r%d" % i for i in range(4)], pool.slots(range(4))), [True] * 4)
        b.close()
        pool2 = MHATokenToKVPoolHost()
        b2 = self.backend(pool2)
        self.assertEqual(b2.batch_exists(["r%d" % i for i in range(4)]), 4)
        self.assertEqual(b2.batch_get_v1(["r%d" % i for i in range(4)], pool2.slots(range(4))), [True] * 4)
        for i in range(4):
            self.assertEqual(pool.page_bytes(i), pool2.page_bytes(i))
        self.assertTrue(b2.store_stats()["opened_from_checkpoint"])

    def test_every_rank_s_shard_of_a_page_is_one_group(self):
        # Two TP ranks store their shards of the same pages: the store keeps
        # one group per page (the group id leaves the rank out), not one
        # per shard, and not none.
        pool = MHATokenToKVPoolHost()
        ranks = [self.backend(pool, tp_rank=r, tp_size=2) for r in (0, 1)]
        keys = ["g%02d" % i for i in range(8)]
        pool.fill(range(8), seed=20)
        for b in ranks:
            self.assertEqual(b.batch_set_v1(keys, pool.slots(range(8))), [True] * 8)
        stats = ranks[0].store_stats()
        self.assertEqual(stats["objects"], 16)
        self.assertEqual(stats["groups_live"], 8)
        self.assertEqual(ranks[1]._group_objects(), 2)  # a page's shards: one per rank

    def test_a_missing_config_is_a_clear_error(self):
        cfg = storage_config(self.config_path)
        del cfg.extra_config["l3cache_config"]
        with self.assertRaisesRegex(ValueError, "l3cache_config"):
            StorageBackendFactory.create_backend("dynamic", cfg, None)


class MetricsTest(Base):
    def test_with_metrics_on_the_collector_takes_sglang_storage_metrics(self):
        pool = MHATokenToKVPoolHost()
        c = self.controller_dense(pool, metrics=True)
        pool.fill(range(3), seed=8)
        c.page_backup(["a", "b", "c"], pool.slots(range(3)))
        c.page_transfer(["a", "b"], pool.slots(range(3, 5)))
        m = c.storage_backend.get_stats()
        self.assertIsInstance(m, StorageMetrics)  # the class SGLang's collector asserts
        self.assertEqual(m.backup_pgs, [3])
        self.assertEqual(m.prefetch_pgs, [2])
        self.assertEqual(len(m.prefetch_bandwidth), 1)
        c.page_backup(["d"], pool.slots([6]))
        c.check_hicache_events()  # the scheduler loop's hand-off: no assertion
        self.assertEqual(c.collector.observed["backup_pgs"], [1])
        self.assertEqual(c.storage_backend.get_stats().backup_pgs, [])  # since the last call

    def test_with_metrics_off_nothing_accumulates(self):
        pool = MHATokenToKVPoolHost()
        c = self.controller_dense(pool, metrics=False)
        pool.fill([0], seed=9)
        b = c.storage_backend
        for i in range(10000):
            b.batch_set_v1(["m%d" % (i % 8)], pool.slots([i % 8]))
        for i in range(100):
            b.batch_get_v1(["m0"], pool.slots([9]))
        c.check_hicache_events()  # never calls get_stats with metrics off
        self.assertIsNone(b.get_stats())
        self.assertEqual(b._samples.count(), 0)

    def test_with_metrics_on_and_nobody_reading_the_samples_are_bounded(self):
        pool = MHATokenToKVPoolHost()
        c = self.controller_dense(pool, metrics=True)
        b = c.storage_backend
        for i in range(5000):
            b.batch_exists(["x"])
            b.batch_get_v1(["x"], pool.slots([1]))
        m = b.get_stats()
        self.assertLessEqual(len(m.prefetch_pgs), 4096)
        self.assertGreater(len(m.prefetch_pgs), 0)

    def controller_dense(self, pool, metrics):
        c = Controller(pool, "org/Model", extra_config(self.config_path), enable_storage_metrics=metrics)
        self.backends.append(c.attach())
        return c


class HybridModelTest(Base):
    def dsa_pools(self, pages=160):
        kv = MLATokenToKVPoolHost(pages=pages, page_size=16, layers=2, kv_dim=512)
        return kv, DSAIndexerPoolHost(kv, page_stride=4096, layers=2)

    def test_a_dsa_model_stores_and_loads_kv_and_indexer_pages_zero_copy(self):
        kv, idx = self.dsa_pools()
        group = HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                               PoolEntry(PoolName.INDEXER, idx)])
        c = self.controller(group, is_mla_model=True)
        hashes = ["d%03d" % i for i in range(130)]  # over one 128-page batch
        kv.fill(range(130), seed=10)
        idx.fill(range(130), seed=11)
        indexer = PoolTransfer(name=PoolName.INDEXER, indices_from_pool=PoolName.KV)
        done, results = c.page_backup(hashes, kv.slots(range(130)), [indexer])
        self.assertEqual(done, 130 * kv.page_size)
        self.assertEqual(results[PoolName.INDEXER], [True] * 130)
        # The prefetch: the hit query with the indexer's transfer, then the read.
        prefetch = [PoolTransfer(name=PoolName.INDEXER, indices_from_pool=PoolName.KV)]
        hit, tokens = c.hit_query(hashes + ["d999"], prefetch)
        self.assertEqual(hit, hashes)
        kv_want = [kv.page_bytes(p) for p in range(130)]
        idx_want = [idx.page_bytes(p) for p in range(130)]
        kv.zero(range(130))
        idx.zero(range(130))
        completed, _ = c.page_transfer(hit, kv.slots(range(130)), prefetch)
        self.assertEqual(completed, 130)
        for p in range(130):
            self.assertEqual(kv.page_bytes(p), kv_want[p], "kv page %d" % p)
            self.assertEqual(idx.page_bytes(p), idx_want[p], "indexer page %d" % p)
        stats = c.storage_backend.store_stats()
        self.assertEqual(stats["objects"], 260)  # a KV and an indexer object per page
        self.assertEqual(stats["io_unfixed"], 0)
        self.assertEqual(stats["host_regions"], 2)

    def test_a_missing_indexer_page_shortens_the_usable_prefix(self):
        kv, idx = self.dsa_pools(pages=16)
        b = self.backend(kv, mla=True)
        b.register_mem_host_pool_v2(kv, PoolName.KV)
        b.register_mem_host_pool_v2(idx, PoolName.INDEXER)
        kv.fill(range(6), seed=12)
        idx.fill(range(6), seed=13)
        keys = ["p%d" % i for i in range(6)]
        self.assertEqual(b.batch_set_v1(keys, kv.slots(range(6))), [True] * 6)
        # Only pages 0-3 of the indexer are stored.
        got = b.batch_set_v2([PoolTransfer(PoolName.INDEXER, host_indices=kv.slots(range(4)), keys=keys[:4])])
        self.assertEqual(got, {PoolName.INDEXER: [True] * 4})
        r = b.batch_exists_v2(keys, [PoolTransfer(PoolName.INDEXER, indices_from_pool=PoolName.KV)])
        self.assertIsInstance(r, PoolTransferResult)
        self.assertEqual(r.kv_hit_pages, 4)
        self.assertEqual(r.extra_pool_hit_pages, {"kv": 6, "indexer": 4})
        # A pool never registered, or indices that do not fit the keys: a failed
        # entry per key, never an exception on SGLang's storage thread.
        self.assertEqual(b.batch_get_v2([PoolTransfer("swa", host_indices=kv.slots([0]), keys=["p0"])]),
                         {"swa": [False]})
        self.assertEqual(b.batch_get_v2([PoolTransfer(PoolName.INDEXER, host_indices=kv.slots([0]),
                                                      keys=["p0", "p1"])]), {PoolName.INDEXER: [False, False]})
        self.assertEqual(b.batch_exists_v2(keys, [PoolTransfer("swa", keys=["x"])]).kv_hit_pages, 0)

    def mamba_group(self):
        kv = MHATokenToKVPoolHost(pages=32, page_size=16, layers=2, heads=2, dim=64)
        mamba = MambaPoolHost(slots=8, layers=2, temporal=(8, 128), conv=((1024,), (2048,)))
        group = HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                               PoolEntry(PoolName.MAMBA, mamba)])
        return kv, mamba, group

    def test_a_mamba_model_keeps_the_state_of_its_last_page(self):
        kv, mamba, group = self.mamba_group()
        c = self.controller(group)
        hashes = ["q%d" % i for i in range(5)]
        kv.fill(range(5), seed=14)
        mamba.fill([3], seed=15)
        # Two nodes backed up: pages 0-2 with the state after page 2 (slot 3),
        # pages 3-4 with no state.
        state = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([3]), keys=[hashes[2]],
                             hit_policy=PoolHitPolicy.TRAILING_PAGES)
        done, res = c.page_backup(hashes[:3], kv.slots(range(3)), [state])
        self.assertEqual((done, res[PoolName.MAMBA]), (3 * kv.page_size, [True]))
        self.assertEqual(c.page_backup(hashes[3:], kv.slots(range(3, 5)))[0], 2 * kv.page_size)
        want_state = mamba.page_bytes(3)
        want_kv = [kv.page_bytes(p) for p in range(3)]
        # Prefetch of all five pages: the KV holds 5, the state only page 2's,
        # so the usable prefix is 3 pages.
        prefetch = [PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([6]), keys=["__placeholder__"],
                                 hit_policy=PoolHitPolicy.TRAILING_PAGES)]
        hit, tokens = c.hit_query(hashes, prefetch)
        self.assertEqual((hit, tokens), (hashes[:3], 3 * kv.page_size))
        completed, pool_hits = c.page_transfer(hit, kv.slots(range(10, 13)), prefetch)
        self.assertEqual(completed, 3)
        self.assertEqual(pool_hits, {PoolName.MAMBA: 1})
        self.assertEqual(prefetch[0].keys, [hashes[2]])  # re-aligned to the hit
        self.assertEqual(mamba.page_bytes(6), want_state)
        for p in range(3):
            self.assertEqual(kv.page_bytes(10 + p), want_kv[p])
        self.assertEqual(c.storage_backend.store_stats()["io_unfixed"], 0)

    def test_a_model_with_a_trailing_state_puts_its_batches_whole(self):
        # Its prefix is usable only up to a page with its state: once a
        # backup names a TRAILING_PAGES pool, every put says so (``whole``),
        # so that admission writes a batch whole or not at all.
        kv, mamba, group = self.mamba_group()
        c = self.controller(group)
        kv.fill(range(3), seed=19)
        mamba.fill([3], seed=20)
        self.assertFalse(c.storage_backend._hints(["q0"])["whole"])
        state = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([3]), keys=["w2"],
                             hit_policy=PoolHitPolicy.TRAILING_PAGES)
        self.assertEqual(c.page_backup(["w0", "w1", "w2"], kv.slots(range(3)), [state])[0], 3 * kv.page_size)
        self.assertTrue(c.storage_backend._hints(["q0"])["whole"])

    def test_a_state_is_written_after_its_pages_and_never_without_them(self):
        # SGLang's backup puts a node's states (batch_set_v2: here a Mamba
        # state and a draft model's state on the same slots, both
        # TRAILING_PAGES) before its KV pages (batch_set_v1). On a full store
        # whose admission declines a first-seen batch deeper than two pages
        # (rung 1), the node's KV is declined: its states, useless alone,
        # must not be written either.
        with open(self.config_path, "w") as f:
            json.dump({"store": {"path": self.store_path, "capacity": 16 * MIB, "slab_size": MIB,
                                 "admission": "rung:1"}}, f)
        kv, mamba, _ = self.mamba_group()
        draft = MambaPoolHost(slots=8, layers=1, temporal=(8, 64), conv=((512,),))
        c = self.controller(HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                                           PoolEntry(PoolName.MAMBA, mamba), PoolEntry(PoolName.DRAFT_SWA, draft)]))
        b = c.storage_backend
        kv.fill(range(32), seed=23)
        for n in range(0, 4096, 32):  # fill the store until it evicts
            b.batch_set_v1(["fill%d" % (n + i) for i in range(32)], kv.slots(range(32)))
            if b.store_stats()["evictions"]:
                break
        self.assertGreater(b.store_stats()["evictions"], 0)
        mamba.fill([1], seed=24)
        draft.fill([1], seed=25)
        want = {PoolName.MAMBA: mamba.page_bytes(1), PoolName.DRAFT_SWA: draft.page_bytes(1)}
        hashes = ["n%d" % i for i in range(5)]

        def states(slot, keys):
            return [PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([slot]), keys=list(keys),
                                 hit_policy=PoolHitPolicy.TRAILING_PAGES),
                    PoolTransfer(PoolName.DRAFT_SWA, indices_from_pool=PoolName.MAMBA, keys=list(keys),
                                 hit_policy=PoolHitPolicy.TRAILING_PAGES)]

        def stored(name):
            return b._store.batch_exists(b._pools[name].keys([hashes[-1]]))[0]

        done, res = c.page_backup(hashes, kv.slots(range(5)), states(1, hashes[-1:]))
        self.assertEqual(done, 0)  # the KV declined at first sight
        self.assertEqual((res[PoolName.MAMBA], res[PoolName.DRAFT_SWA]), ([True], [True]))  # taken, then dropped
        self.assertEqual((stored("mamba"), stored("draft_swa")), (False, False))
        self.assertEqual(b.states_dropped, 2)
        # Seen again, the node is written, both states after its last page.
        self.assertEqual(c.page_backup(hashes, kv.slots(range(5)), states(1, hashes[-1:]))[0], 5 * kv.page_size)
        self.assertEqual((stored("mamba"), stored("draft_swa")), (True, True))
        prefetch = states(6, ["__placeholder__"])
        hit, _ = c.hit_query(hashes, prefetch)
        self.assertEqual(hit, hashes)
        self.assertEqual(c.page_transfer(hit, kv.slots(range(10, 15)), prefetch)[0], 5)
        self.assertEqual(mamba.page_bytes(6), want[PoolName.MAMBA])
        self.assertEqual(draft.page_bytes(6), want[PoolName.DRAFT_SWA])

    def test_a_state_waits_for_the_last_of_its_node_s_kv_calls(self):
        # A node of 130 pages goes by two KV calls (128 pages, then 2): its
        # state is written after the second, by the copying interface too.
        for zero_copy in (True, False):
            kv = MHATokenToKVPoolHost(pages=160, page_size=4, layers=1, heads=1, dim=32)
            mamba = MambaPoolHost(slots=4, layers=1, temporal=(4, 32), conv=((256,),))
            c = self.controller(HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                                               PoolEntry(PoolName.MAMBA, mamba)]))
            if not zero_copy:
                c.zero_copy = False
            b = c.storage_backend
            hashes = ["z%d-%d" % (zero_copy, i) for i in range(130)]
            kv.fill(range(130), seed=26)
            mamba.fill([2], seed=27)
            calls = []
            real = b._settle_pending

            def spy(keys, ok):
                calls.append((len(keys), b._states.held()))
                real(keys, ok)

            b._settle_pending = spy
            state = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([2]), keys=[hashes[-1]],
                                 hit_policy=PoolHitPolicy.TRAILING_PAGES)
            self.assertEqual(c.page_backup(hashes, kv.slots(range(130)), [state])[0], 130 * kv.page_size)
            self.assertEqual(calls, [(128, 1), (2, 1)])  # held through the first call, written after the second
            self.assertEqual(b._states.held(), 0)
            self.assertTrue(b._store.batch_exists(b._pools["mamba"].keys([hashes[-1]]))[0])
            self.assertEqual(b.states_dropped, 0)

    def test_an_mla_models_state_is_per_rank_while_its_kv_is_shared(self):
        # Kimi-style: MLA KV written by rank 0 only, the Mamba state by every rank.
        kv0 = MLATokenToKVPoolHost(pages=8, page_size=16, layers=2, kv_dim=512)
        m0, m1 = MambaPoolHost(slots=4), MambaPoolHost(slots=4)
        r0 = self.controller(HostPoolGroup([PoolEntry(PoolName.KV, kv0, is_primary_index_anchor=True),
                                            PoolEntry(PoolName.MAMBA, m0)]), is_mla_model=True, tp_rank=0,
                             tp_size=2)
        kv1 = MLATokenToKVPoolHost(pages=8, page_size=16, layers=2, kv_dim=512)
        r1 = self.controller(HostPoolGroup([PoolEntry(PoolName.KV, kv1, is_primary_index_anchor=True),
                                            PoolEntry(PoolName.MAMBA, m1)]), is_mla_model=True, tp_rank=1,
                             tp_size=2)
        kv0.fill(range(2), seed=16)
        m0.fill([0], seed=17)
        m1.fill([0], seed=18)  # each rank's own shard of the state
        for c, m in ((r0, m0), (r1, m1)):
            t = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([0]), keys=["k1"],
                             hit_policy=PoolHitPolicy.TRAILING_PAGES)
            c.page_backup(["k0", "k1"], kv0.slots(range(2)), [t])
        # Rank 1 wrote no KV (backup_skip) but finds rank 0's, and its own state.
        prefetch = [PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([2]), keys=["x"],
                                 hit_policy=PoolHitPolicy.TRAILING_PAGES)]
        self.assertEqual(r1.hit_query(["k0", "k1"], prefetch)[0], ["k0", "k1"])
        self.assertEqual(r1.page_transfer(["k0", "k1"], kv1.slots(range(2)), prefetch)[0], 2)
        self.assertEqual(m1.page_bytes(2), m1.page_bytes(0))
        self.assertNotEqual(m1.page_bytes(2), m0.page_bytes(0))
        self.assertEqual(kv1.page_bytes(0), kv0.page_bytes(0))

    def test_a_page_s_kv_and_every_rank_s_trailing_state_are_one_group(self):
        # MLA KV written by rank 0 only, a TRAILING_PAGES Mamba state by each
        # rank for the last page: page k1's KV and both ranks' states of it
        # are one group, k0's KV another.
        pools = [(MLATokenToKVPoolHost(pages=8, page_size=16, layers=2, kv_dim=512), MambaPoolHost(slots=4))
                 for _ in range(2)]
        ranks = [self.controller(HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                                                PoolEntry(PoolName.MAMBA, m)]), is_mla_model=True, tp_rank=r,
                                 tp_size=2) for r, (kv, m) in enumerate(pools)]
        pools[0][0].fill(range(2), seed=21)
        for c, (_, m) in zip(ranks, pools):
            m.fill([0], seed=22)
            t = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([0]), keys=["k1"],
                             hit_policy=PoolHitPolicy.TRAILING_PAGES)
            c.page_backup(["k0", "k1"], pools[0][0].slots(range(2)), [t])
        stats = ranks[0].storage_backend.store_stats()
        self.assertEqual(stats["objects"], 4)  # two KV pages, two ranks' states of k1
        self.assertEqual(stats["groups_live"], 2)
        self.assertEqual(ranks[0].storage_backend._group_objects(), 3)  # the KV once, a state per rank


RANK_SCRIPT = r'''
import os
import sys
import time
import sglang_standin
sglang_standin.install()
from sglang_standin.pool_host import MLATokenToKVPoolHost
from test_sglang import make_backend
config, rank, sync = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def wait_for(name):
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(sync, name)):
        assert time.monotonic() < deadline, "timed out waiting for " + name
        time.sleep(0.02)


def mark(name):
    open(os.path.join(sync, name), "w").close()


pool = MLATokenToKVPoolHost()
b = make_backend(config, pool, mla=True, tp_rank=rank, tp_size=2)
keys = ["shared%d" % i for i in range(4)]
pool.fill(range(4), seed=99)  # both ranks hold the same MLA pages
if rank == 0:
    assert b.batch_set_v1(keys, pool.slots(range(4))) == [True] * 4
    mark("written")
    wait_for("read")  # stay attached while rank 1 reads
else:
    wait_for("written")
    print("attached %d" % b.store_stats()["attached_processes"])
    mark("read")
    assert b.batch_exists(keys) == 4, "rank 1 does not see rank 0's pages"
    assert b.batch_get_v1(keys, pool.slots(range(8, 12))) == [True] * 4
    for i in range(4):
        assert pool.page_bytes(i) == pool.page_bytes(8 + i)
b.close()
print("rank %d ok" % rank)
'''

if __name__ == "__main__":
    unittest.main()
