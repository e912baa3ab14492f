"""l3cache as a secondary tier of vLLM's offloading connector, loaded by
module path through a stand-in of vLLM's tiering framework (vllm_standin/,
whose modules name the upstream files and commits they follow) and driven
as vLLM's TieringOffloadingManager drives it: stores cascaded after a
GPU-to-CPU store, lookups that start promotions, batched loads at the end
of a step, completions polled once a step, reset_cache and shutdown; a
block's objects (KV groups, ranks) stored as one page group."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vllm_standin  # noqa: E402

vllm_standin.install()

from vllm.v1.kv_offload.base import LookupResult, ReqContext, ScheduleEndContext, make_offload_key  # noqa: E402
from vllm.v1.kv_offload.config import (OffloadingCacheConfig, OffloadingConfig,  # noqa: E402
                                       OffloadingGroupConfig, OffloadingModelConfig, OffloadingParallelConfig)
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec  # noqa: E402
from vllm.v1.metrics.cache_hit_source import CacheHitSource  # noqa: E402

import l3cache  # noqa: E402

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()
ROW = 64 * 1024  # a chunk's bytes: worker_kv_bytes_per_block x blocks_per_chunk


def offloading_config(extra, model="org/Model-8B", dtype="bfloat16", tokens_per_hash=16, tp_size=1, rank=0,
                      kv_groups=1, events=False, canonical_layout=False, kv_cache_layout=None):
    return OffloadingConfig(
        groups=tuple(OffloadingGroupConfig(16, ("layers.%d" % (2 * g), "layers.%d" % (2 * g + 1)), g)
                     for g in range(kv_groups)), worker_kv_bytes_per_block=ROW // 2,
        enable_kv_cache_events=events, extra_config=extra, engine_id="e0",
        model=OffloadingModelConfig(model, dtype), cache=OffloadingCacheConfig(tokens_per_hash, 2),
        parallel=OffloadingParallelConfig(rank, tp_size, tp_size, 1, 1, 1, 0, 1, None, False),
        canonical_layout=canonical_layout, kv_cache_layout=kv_cache_layout)


def tier_entry(store_path, capacity="64MiB", store=None, namespace=None, **kw):
    config = {"store": dict({"path": store_path, "capacity": capacity, "slab_size": "1MiB"}, **(store or {}))}
    if namespace:
        config["namespace"] = namespace
    return dict({"type": "L3CacheTier", "module_path": "l3cache.vllm", "l3cache_config": config}, **kw)


def key(i, group=0):
    """vLLM's offload key: a 32-byte hash (zero bytes included) and a group."""
    return make_offload_key(i.to_bytes(4, "big") + bytes(28), group)


def step(mgr):
    mgr.on_schedule_end(ScheduleEndContext([], []))


def settle(mgr, timeout=30.0):
    """Step until no job is in flight (as the engine keeps stepping while
    has_pending_work)."""
    deadline = time.monotonic() + timeout
    step(mgr)  # the step that submits the promotions its lookups started
    while mgr.has_pending_work():
        assert time.monotonic() < deadline, "jobs still in flight"
        step(mgr)
        time.sleep(0.002)
    step(mgr)


def pattern(i):
    return np.random.default_rng(i).integers(-128, 128, ROW, dtype=np.int8)


class Deployment:
    """A scheduler's manager over the CPU tier and the l3cache tier."""

    def __init__(self, store_path, cpu_rows=32, more_tiers=(), **kw):
        entry = tier_entry(store_path, **kw.pop("tier", {}))
        extra = {"spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": cpu_rows * ROW,
                 "secondary_tiers": [entry] + list(more_tiers)}
        self.spec = TieringOffloadingSpec(offloading_config(extra, **kw))
        self.mgr = self.spec.get_manager()
        self.tier = self.mgr.secondary_tiers[0]
        self.rows = np.asarray(self.mgr.primary_tier.view)
        self.n = 0

    def request(self, **kw):
        self.n += 1
        ctx = ReqContext("req-%d" % self.n, **kw)
        self.mgr.on_new_request(ctx)
        return ctx

    def store(self, keys, seeds):
        """A GPU-to-CPU store of `keys` (rows filled from `seeds`), then the
        cascade to the tier."""
        ctx = self.request()
        out = self.mgr.prepare_store(keys, ctx)
        assert out is not None, "the CPU tier is full"
        for k, row in zip(out.keys_to_store, out.store_spec.chunk_ids):
            self.rows[row] = pattern(seeds[keys.index(k)])
        self.mgr.complete_store(keys, ctx, True)
        self.mgr.on_request_finished(ctx)
        return ctx

    def load(self, keys):
        """Look the keys up until each is HIT in the CPU tier (or MISS); the
        lookups' results per key."""
        ctx = self.request()
        first = [self.mgr.lookup(k, ctx) for k in keys]
        settle(self.mgr)
        final = [self.mgr.lookup(k, ctx) for k in keys]
        self.mgr.on_request_finished(ctx)
        return first, final

    def row_of(self, k):
        return self.rows[self.mgr.primary_tier.row_of(k)]


class TierFixture(unittest.TestCase):
    """A directory with a store path, and the deployments a test made
    (shut down after it)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=TEST_DIR, prefix="vllm")
        self.store = os.path.join(self.dir, "kv.l3")
        self.deployments = []

    def tearDown(self):
        for d in self.deployments:
            try:
                d.mgr.shutdown()
            except Exception:  # noqa: BLE001 - already shut down
                pass
        shutil.rmtree(self.dir)

    def deployment(self, store=None, **kw):
        d = Deployment(store or self.store, **kw)
        self.deployments.append(d)
        return d


class VLLMTierTest(TierFixture):

    def test_the_tier_loads_by_module_path_and_refuses_what_it_does_not_know(self):
        d = self.deployment()
        self.assertEqual(type(d.tier).__module__, "l3cache.vllm")
        self.assertEqual(d.tier.tier_type, "L3CacheTier")
        with self.assertRaises(TypeError):
            self.deployment(tier={"no_such_option": 1})
        with self.assertRaisesRegex(ValueError, "l3cache_config"):
            self.deployment(tier={"l3cache_config": None})

    def test_stored_rows_come_back_from_the_tier_byte_exact_and_zero_copy(self):
        d = self.deployment()
        keys = [key(i) for i in range(16)]
        d.store(keys, list(range(16)))
        settle(d.mgr)
        self.assertEqual(d.tier.store_stats()["objects"], 16)
        d.mgr.primary_tier.forget(keys)  # gone from the CPU tier
        first, final = d.load(keys)
        self.assertEqual(first, [LookupResult.HIT_PENDING] * 16)  # promotions started
        self.assertEqual(final, [LookupResult.HIT] * 16)
        for i, k in enumerate(keys):
            np.testing.assert_array_equal(d.row_of(k), pattern(i))
        stats = d.tier.store_stats()
        self.assertGreater(stats["io_fixed"], 0)
        self.assertEqual(stats["io_unfixed"], 0)
        self.assertEqual(stats["host_regions"], 1)

    def test_a_hit_from_the_tier_is_reported_as_a_disk_hit(self):
        # vLLM labels a request's cache hits by the tier that promoted them
        # (its cache_hit_source, from the tier's medium): a disk hit, not a
        # host one, and not "unspecified".
        d = self.deployment()
        self.assertIs(type(d.tier).cache_hit_source, CacheHitSource.DISK)
        keys = [key(i) for i in range(2)]
        d.store(keys, [1, 2])
        settle(d.mgr)
        d.mgr.primary_tier.forget(keys[:1])  # one from the tier, one still in the CPU tier
        ctx = d.request()
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT_PENDING, LookupResult.HIT])
        settle(d.mgr)
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT] * 2)
        self.assertEqual([d.mgr.get_load_source(k, ctx) for k in keys], [CacheHitSource.DISK, CacheHitSource.HOST])
        d.mgr.on_request_finished(ctx)

    def test_several_jobs_in_flight_each_finish_once(self):
        d = self.deployment(cpu_rows=64)
        reported = []
        real = d.tier.get_finished_jobs

        def spy():
            out = list(real())
            reported.extend(r.job_id for r in out)
            return out

        d.tier.get_finished_jobs = spy
        for r in range(4):  # four requests' stores before any step
            d.store([key(100 * r + i) for i in range(8)], [100 * r + i for i in range(8)])
        self.assertTrue(d.tier.has_pending_work() or reported)
        settle(d.mgr)
        self.assertEqual(sorted(reported), list(range(len(reported))))
        self.assertEqual(len(reported), 4)
        self.assertEqual(d.tier.store_stats()["objects"], 32)

    def test_a_missing_key_misses_and_a_block_gone_before_its_load_fails_the_load(self):
        d = self.deployment()
        ctx = d.request()
        self.assertIs(d.mgr.lookup(key(999), ctx), LookupResult.MISS)
        keys = [key(i) for i in range(2)]
        d.store(keys, [1, 2])
        settle(d.mgr)
        d.mgr.primary_tier.forget(keys)
        ctx = d.request()
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT_PENDING] * 2)
        with l3cache.AsyncStore(tier_entry(self.store)["l3cache_config"]) as other:  # another process deletes one
            other.submit("delete", 1, [d.tier._key(keys[1])])
            while not other.drain():
                time.sleep(0.001)
        settle(d.mgr)
        # The failed key is a miss from now on (no endless re-promotion); the other loaded.
        self.assertIs(d.mgr.lookup(keys[0], ctx), LookupResult.HIT)
        self.assertIs(d.mgr.lookup(keys[1], ctx), LookupResult.MISS)
        step(d.mgr)
        self.assertIs(d.mgr.lookup(keys[1], ctx), LookupResult.MISS)
        np.testing.assert_array_equal(d.row_of(keys[0]), pattern(1))

    def test_reset_cache_drains_every_job(self):
        d = self.deployment(cpu_rows=64)
        d.store([key(i) for i in range(32)], list(range(32)))
        d.mgr.reset_cache()  # drain_jobs, poll, then vLLM asserts no job is left
        self.assertFalse(d.tier.has_pending_work())
        self.assertEqual(d.tier.store_stats()["objects"], 32)

    def test_a_restart_finds_the_blocks(self):
        d = self.deployment()
        keys = [key(i, group=i % 2) for i in range(6)]
        d.store(keys, list(range(6)))
        settle(d.mgr)
        d.mgr.shutdown()
        self.deployments.remove(d)
        again = self.deployment()
        self.assertTrue(again.tier.store_stats()["opened_from_checkpoint"])
        first, final = again.load(keys)
        self.assertEqual(final, [LookupResult.HIT] * 6)
        for i, k in enumerate(keys):
            np.testing.assert_array_equal(again.row_of(k), pattern(i))

    def test_other_deployments_never_share_a_block(self):
        d = self.deployment()
        d.store([key(1)], [1])
        settle(d.mgr)
        d.mgr.shutdown()
        self.deployments.remove(d)
        # (a KV cache layout, HND against NHD, or the canonical host layout:
        # the same rows in other bytes)
        for kw in ({"model": "org/Other"}, {"dtype": "float16"}, {"tokens_per_hash": 32}, {"tp_size": 2},
                   {"kv_cache_layout": "HND"}, {"canonical_layout": True}):
            other = self.deployment(**kw)
            ctx = other.request()
            self.assertIs(other.mgr.lookup(key(1), ctx), LookupResult.MISS, kw)
            other.mgr.shutdown()
            self.deployments.remove(other)
        same = self.deployment()
        self.assertIs(same.mgr.lookup(key(1), same.request()), LookupResult.HIT_PENDING)
        same.mgr.shutdown()
        self.deployments.remove(same)
        named = self.deployment(kv_cache_layout="NHD")  # (a vLLM that names its default layout)
        self.assertIs(named.mgr.lookup(key(1), named.request()), LookupResult.HIT_PENDING)

    def test_a_block_s_kv_groups_and_ranks_are_one_group(self):
        # Each block stored under its two KV groups' indices, by two tiers
        # of different ranks: four objects a block, one group (the group id
        # leaves the KV group index and the rank out).
        tiers = [self.deployment(tp_size=2, rank=r, kv_groups=2) for r in (0, 1)]
        keys = [key(i, group=g) for i in range(4) for g in (0, 1)]
        for d in tiers:
            d.store(keys, list(range(8)))
            settle(d.mgr)
        stats = tiers[0].tier.store_stats()
        self.assertEqual(stats["objects"], 16)
        self.assertEqual(stats["groups_live"], 4)

    def test_two_schedulers_as_two_processes_share_one_store(self):
        script = os.path.join(self.dir, "replica.py")
        with open(script, "w") as f:
            f.write(REPLICA_SCRIPT)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__))] + sys.path))
        procs = [subprocess.Popen([sys.executable, script, self.store, role, self.dir], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for role in ("writer", "reader")]
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
        self.assertIn("reader ok, attached 2", out)

    def test_an_older_vllm_is_refused_with_a_clear_message(self):
        code = ("import sys, vllm_standin\nvllm_standin.install()\n"
                "import vllm.v1.kv_offload.tiering.base as b\ndel b.TransferJob\n"
                "try:\n    import l3cache.vllm\nexcept RuntimeError as e:\n    print('refused:', e)\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.abspath(__file__))] + sys.path))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertIn("refused: l3cache.vllm needs vLLM's chunk-based tiering API", out.stdout, out.stderr)
        self.assertIn("TransferJob", out.stdout)


REPLICA_SCRIPT = r'''
import os
import sys
import time
import numpy as np
import vllm_standin
vllm_standin.install()
from test_vllm import Deployment, key, pattern, settle
from vllm.v1.kv_offload.base import LookupResult
store, role, sync = sys.argv[1], sys.argv[2], sys.argv[3]


def wait_for(name):
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(sync, name)):
        assert time.monotonic() < deadline, "timed out waiting for " + name
        time.sleep(0.02)


d = Deployment(store)
keys = [key(i) for i in range(8)]
if role == "writer":
    d.store(keys, list(range(8)))
    settle(d.mgr)
    open(os.path.join(sync, "written"), "w").close()
    wait_for("read")  # stay attached while the other replica reads
else:
    wait_for("written")
    attached = d.tier.store_stats()["attached_processes"]
    first, final = d.load(keys)
    assert final == [LookupResult.HIT] * 8, final
    for i, k in enumerate(keys):
        assert (d.row_of(k) == pattern(i)).all()
    open(os.path.join(sync, "read"), "w").close()
    print("reader ok, attached %d" % attached)
d.mgr.shutdown()
'''

if __name__ == "__main__":
    unittest.main()
