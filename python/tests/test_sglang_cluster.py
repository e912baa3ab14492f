"""l3cache's SGLang backend in a cluster, driven as SGLang's controllers
drive it (sglang_standin/): chained to SGLang's own ``file`` backend
(HiCacheFile) on a directory two nodes share, write-through and
write-back; SGLang's ``buffer_only`` host mode, where a backup's Host
slots are freed when its storage write is acknowledged; and tenants kept
apart by the deployment's tag."""
import json
import os
import shutil
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_sglang import MIB, TEST_DIR, extra_config, sglang_standin  # noqa: E402,F401  (installs the stand-in)

from sglang.srt.mem_cache.hicache_storage import PoolHitPolicy, PoolName, PoolTransfer  # noqa: E402
from sglang_standin import server_args  # noqa: E402
from sglang_standin.buffer_mode import BufferModePipeline  # noqa: E402
from sglang_standin.controller import Controller  # noqa: E402
from sglang_standin.pool_host import HostPoolGroup, MambaPoolHost, MHATokenToKVPoolHost, PoolEntry  # noqa: E402


class Node:
    """One node: its own l3cache store (its own file), SGLang's controller."""

    def __init__(self, test, name, capacity=64 * MIB, deployment=None, **extra):
        path = os.path.join(test.dir, name + ".json")
        config = {"store": {"path": os.path.join(test.dir, name + ".l3"), "capacity": capacity, "slab_size": MIB}}
        if deployment:
            config["namespace"] = {"deployment_id": deployment}
        with open(path, "w") as f:
            json.dump(config, f)
        self.pool = MHATokenToKVPoolHost(pages=64, page_size=16, layers=2, heads=2, dim=64)
        ec = dict(extra_config(path), **extra)
        self.controller = Controller(self.pool, "org/Model", ec)
        self.backend = self.controller.attach()
        test.addCleanup(self.controller.detach)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=TEST_DIR, prefix="sglc")
        self.shared = os.path.join(self.dir, "shared")  # the file backend's directory, shared by the nodes
        os.environ["SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR"] = self.shared
        self.addCleanup(os.environ.pop, "SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR", None)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def count_reads(self, node):
        """Count the pages node's next backend (HiCacheFile) reads."""
        counter = {"pages": 0}
        real = node.backend.next.get

        def get(key, target_location=None, target_sizes=None):
            counter["pages"] += 1
            return real(key, target_location, target_sizes)

        node.backend.next.get = get
        return counter


class ChainedBackendTest(Base):
    def test_node_b_finds_node_a_s_pages_through_the_file_backend_and_keeps_them(self):
        chain = {"next_backend": {"backend_name": "file"}, "chain_mode": "write_through"}
        a, b = Node(self, "a", **chain), Node(self, "b", **chain)
        self.assertEqual(type(a.backend.next).__name__, "HiCacheFile")
        keys = ["h%02d" % i for i in range(8)]
        a.pool.fill(range(8), seed=1)
        want = [a.pool.page_bytes(p) for p in range(8)]
        self.assertEqual(a.controller.page_backup(keys, a.pool.slots(range(8)))[0], 8 * a.pool.page_size)
        self.assertEqual(len([n for n in os.listdir(self.shared) if n.endswith(".bin")]), 8)  # written through
        self.assertEqual(a.backend.store_stats()["objects"], 8)
        reads = self.count_reads(b)
        # B's prefetch: l3cache misses, the file backend has them all.
        hit, tokens = b.controller.hit_query(keys + ["nowhere"])
        self.assertEqual((hit, tokens), (keys, 8 * b.pool.page_size))
        self.assertEqual(b.controller.page_transfer(hit, b.pool.slots(range(8)))[0], 8)
        self.assertTrue([b.pool.page_bytes(p) for p in range(8)] == want, "pages differ")
        self.assertEqual(reads["pages"], 8)
        self.assertEqual(b.backend.store_stats()["objects"], 8)  # kept in B's l3cache
        self.assertEqual(b.backend.chain_stats()["kept_pages"], 8)
        # The second read on B is l3cache's: no file read.
        b.pool.zero(range(8))
        self.assertEqual(b.controller.hit_query(keys)[0], keys)
        self.assertEqual(b.controller.page_transfer(keys, b.pool.slots(range(8, 16)))[0], 8)
        self.assertTrue([b.pool.page_bytes(p) for p in range(8, 16)] == want, "pages differ")
        self.assertEqual(reads["pages"], 8)
        self.assertEqual(b.backend.store_stats()["io_unfixed"], 0)

    def test_exists_counts_leading_pages_over_both_tiers(self):
        chain = {"next_backend": {"backend_name": "file"}}
        a, b = Node(self, "a", **chain), Node(self, "b", **chain)
        keys = ["e%d" % i for i in range(6)]
        a.pool.fill(range(6), seed=2)
        a.controller.page_backup(keys[2:4], a.pool.slots(range(2, 4)))  # pages 2-3 in the shared tier
        b.pool.fill(range(6), seed=2)
        self.assertEqual(b.backend.local.batch_set_v1(keys[:2], b.pool.slots(range(2))), [True] * 2)  # 0-1 local
        self.assertEqual(b.backend.batch_exists(keys), 4)  # 0-1 in l3cache, 2-3 in the file backend, 4 nowhere
        self.assertEqual(b.backend.batch_exists(keys[2:]), 2)
        self.assertEqual(b.backend.batch_exists(keys[4:]), 0)

    def test_write_back_copies_pages_from_l3cache_to_the_next_tier_later(self):
        chain = {"next_backend": {"backend_name": "file"}, "chain_mode": "write_back"}
        a = Node(self, "a", **chain)
        keys = ["w%02d" % i for i in range(8)]
        a.pool.fill(range(8), seed=3)
        want = [a.pool.page_bytes(p) for p in range(8)]
        a.backend._write_back.pause()
        self.assertEqual(a.controller.page_backup(keys, a.pool.slots(range(8)))[0], 8 * a.pool.page_size)
        self.assertEqual(os.listdir(self.shared), [])  # not yet: the backup call wrote l3cache only
        a.pool.fill(range(8), seed=4)  # SGLang reuses the Host slots: write-back reads l3cache, not them
        self.assertTrue(a.backend.flush(30))
        stats = a.backend.chain_stats()
        self.assertEqual((stats["write_back_written"], stats["write_back_lost"]), (8, 0))
        b = Node(self, "b", next_backend={"backend_name": "file"})
        self.assertEqual(b.controller.hit_query(keys)[0], keys)
        self.assertEqual(b.controller.page_transfer(keys, b.pool.slots(range(8)))[0], 8)
        self.assertTrue([b.pool.page_bytes(p) for p in range(8)] == want, "pages differ")

    def test_write_back_counts_the_pages_l3cache_evicted_before_it_copied_them(self):
        chain = {"next_backend": {"backend_name": "file"}, "chain_mode": "write_back"}
        a = Node(self, "a", capacity=16 * MIB, **chain)
        a.backend._write_back.pause()
        a.pool.fill(range(64), seed=5)
        written = 0
        for n in range(0, 4096, 32):  # more than the store holds: it evicts the first pages
            ok = a.backend.batch_set_v1(["f%04d" % (n + i) for i in range(32)], a.pool.slots(range(32)))
            written += sum(ok)
            if a.backend.store_stats()["evictions"] > 64:
                break
        self.assertTrue(a.backend.flush(60))
        stats = a.backend.chain_stats()
        self.assertGreater(stats["write_back_lost"], 0)
        self.assertGreater(stats["write_back_lost_by_feed"], 0)  # told by the feed, not found by a read
        self.assertEqual(stats["write_back_written"] + stats["write_back_lost"] + stats["write_back_dropped"]
                         + stats["write_back_failed"], written)
        self.assertEqual(len([n for n in os.listdir(self.shared) if n.endswith(".bin")]), stats["write_back_written"])


class BufferOnlyTest(Base):
    def group(self, kv):
        mamba = MambaPoolHost(slots=8, layers=2, temporal=(8, 128), conv=((1024,), (2048,)))
        return mamba, HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                                     PoolEntry(PoolName.MAMBA, mamba)])

    def setup_node(self, **extra):
        path = os.path.join(self.dir, "l3cache.json")
        with open(path, "w") as f:
            json.dump({"store": {"path": os.path.join(self.dir, "b.l3"), "capacity": 64 * MIB,
                                 "slab_size": MIB}}, f)
        kv = MHATokenToKVPoolHost(pages=32, page_size=16, layers=2, heads=2, dim=64)
        mamba, group = self.group(kv)
        c = Controller(group, "org/Hybrid", dict(extra_config(path), **extra))
        c.attach()
        self.addCleanup(c.detach)
        return kv, mamba, group, c

    def read_back(self, c, kv, keys):
        prefetch = [PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([7]), keys=["__placeholder__"],
                                 hit_policy=PoolHitPolicy.TRAILING_PAGES)]
        hit, _ = c.hit_query(keys, prefetch)
        if hit != keys:
            return None
        self.assertEqual(c.page_transfer(hit, kv.slots(range(20, 20 + len(keys))), prefetch)[0], len(keys))
        return prefetch

    def test_a_state_written_by_its_own_operation_is_stored_before_its_slot_is_freed(self):
        kv, mamba, group, c = self.setup_node()
        keys = ["s%d" % i for i in range(4)]
        kv.fill(range(4), seed=6)
        mamba.fill([2], seed=7)
        want_kv, want_state = [kv.page_bytes(p) for p in range(4)], mamba.page_bytes(2)
        state = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([2]), keys=keys[-1:],
                             hit_policy=PoolHitPolicy.TRAILING_PAGES)
        pipe = BufferModePipeline(c, group)
        pipe.backup(keys, kv.slots(range(4)), [state])
        self.assertEqual(pipe.operations, [(PoolName.KV, keys, []), (PoolName.MAMBA, [], [PoolName.MAMBA])])
        self.assertNotEqual(mamba.page_bytes(2), want_state)  # its slot freed and reused at the ack
        self.assertIsNotNone(self.read_back(c, kv, keys), "the node's state was never stored")
        self.assertTrue([kv.page_bytes(20 + p) for p in range(4)] == want_kv, "KV pages differ")
        self.assertTrue(mamba.page_bytes(7) == want_state, "the state read back is not the one backed up")

    def test_in_buffer_only_mode_a_state_is_never_held_past_its_call(self):
        # The KV is believed stored (SGLang feeds its beliefs whatever the
        # backend answered), so only the state's operation runs, its KV not
        # stored; its slot is freed and reused. A later node with the same
        # pages (the beliefs gone) writes them: a state held until then
        # would be read from the reused slot.
        for how in ("extra_config", "server_args"):
            with self.subTest(how=how):
                self.dir = tempfile.mkdtemp(dir=TEST_DIR, prefix="sglb")
                self.addCleanup(shutil.rmtree, self.dir, True)
                if how == "server_args":
                    server_args.set_global_server_args_for_scheduler(
                        server_args.ServerArgs(hicache_host_memory_mode="buffer_only"))
                    self.addCleanup(server_args.set_global_server_args_for_scheduler, None)
                    kv, mamba, group, c = self.setup_node()
                else:
                    kv, mamba, group, c = self.setup_node(host_memory_mode="buffer_only")
                keys = ["t%d" % i for i in range(3)]
                kv.fill(range(3), seed=8)
                mamba.fill([1], seed=9)
                want_state = mamba.page_bytes(1)
                state = PoolTransfer(PoolName.MAMBA, host_indices=torch.tensor([1]), keys=keys[-1:],
                                     hit_policy=PoolHitPolicy.TRAILING_PAGES)
                pipe = BufferModePipeline(c, group)
                pipe.beliefs[PoolName.KV] = set(keys)
                pipe.backup(keys, kv.slots(range(3)), [state])
                self.assertEqual(pipe.operations, [(PoolName.MAMBA, [], [PoolName.MAMBA])])
                pipe.beliefs.clear()
                pipe.backup(keys, kv.slots(range(3)), [])  # the KV, by a later node
                self.assertIsNotNone(self.read_back(c, kv, keys))
                self.assertTrue(mamba.page_bytes(7) == want_state, "the state was read from its freed slot")


class TenantTest(Base):
    def test_two_deployments_with_the_same_tokens_never_read_each_other_s_pages(self):
        # One store file shared by two deployments (their own deployment_id).
        shared = os.path.join(self.dir, "shared.l3")

        def node(deployment):
            path = os.path.join(self.dir, deployment + ".json")
            with open(path, "w") as f:
                json.dump({"store": {"path": shared, "capacity": 64 * MIB, "slab_size": MIB},
                           "namespace": {"deployment_id": deployment}}, f)
            pool = MHATokenToKVPoolHost(pages=16, page_size=16, layers=2, heads=2, dim=64)
            c = Controller(pool, "org/Model", extra_config(path))
            b = c.attach()
            self.addCleanup(c.detach)
            return pool, c, b

        pa, ca, ba = node("tenant-a")
        keys = ["k%d" % i for i in range(4)]
        pa.fill(range(4), seed=10)
        self.assertEqual(ca.page_backup(keys, pa.slots(range(4)))[0], 4 * pa.page_size)
        pb, cb, bb = node("tenant-b")
        self.assertEqual(cb.hit_query(keys)[0], [])
        self.assertEqual(bb.batch_get_v1(keys, pb.slots(range(4))), [False] * 4)
        self.assertEqual(ca.hit_query(keys)[0], keys)  # its own pages, still there

    def test_tenants_sharing_the_next_tier_never_read_each_other_s_pages(self):
        a = Node(self, "a", deployment="tenant-a", next_backend={"backend_name": "file"})
        b = Node(self, "b", deployment="tenant-b", next_backend={"backend_name": "file"})
        keys = ["n%d" % i for i in range(4)]
        a.pool.fill(range(4), seed=11)
        self.assertEqual(a.controller.page_backup(keys, a.pool.slots(range(4)))[0], 4 * a.pool.page_size)
        self.assertEqual(len(os.listdir(self.shared)), 4)
        self.assertEqual(b.controller.hit_query(keys)[0], [])
        c = Node(self, "c", deployment="tenant-a", next_backend={"backend_name": "file"})
        self.assertEqual(c.controller.hit_query(keys)[0], keys)  # the same tenant on another node: found


if __name__ == "__main__":
    unittest.main()
