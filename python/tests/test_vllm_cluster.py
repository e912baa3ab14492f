"""l3cache's vLLM tier in a cluster (issue 45), through the stand-in of vLLM's
tiering framework (vllm_standin/): the tier's locality (LOCAL, so a
request that asks for local storage reads it), KV events in the form
vLLM's own tiers emit them (BlockStored when a store job succeeds,
BlockRemoved from the store's removal feed, reconciled when the feed was
overrun), tier metrics, the factory's newer keyword arguments, lookups
that never hold the scheduler thread for a large request, l3cache in
front of vLLM's own file-system tier on a shared directory, and tenants
(vLLM's cache_salt, l3cache's deployment_id)."""
import os
import sys
import tempfile
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_vllm import ROW, TierFixture, key, pattern, settle, step, tier_entry  # noqa: E402

from vllm.distributed.kv_events import BlockRemoved, BlockStored  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.offloading.events import OffloadingEventsTracker  # noqa: E402
from vllm.v1.core import kv_cache_utils  # noqa: E402
from vllm.v1.kv_offload.base import (Locality, LookupResult, Medium, OffloadingEvent,  # noqa: E402
                                     OffloadingKVEventsConfig, TierFilter, TierMatcher, make_offload_key)
from vllm.v1.kv_offload.tiering.backpressure import BackpressureDetector  # noqa: E402
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory  # noqa: E402
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec  # noqa: E402
from vllm.v1.metrics.cache_hit_source import CacheHitSource  # noqa: E402

import l3cache  # noqa: E402
from l3cache import vllm_metrics  # noqa: E402

TEST_DIR = os.environ.get("L3_TEST_DIR") or tempfile.gettempdir()


class ClusterTest(TierFixture):
    def close(self, d):
        d.mgr.shutdown()
        self.deployments.remove(d)

    def router(self, d, tracker=None):
        """The KV events a router receives from this node since the last call
        (vLLM's connector turns the manager's OffloadingEvents into them;
        its tracker, placeholder payloads unless one is given)."""
        tracker = tracker or OffloadingEventsTracker(OffloadingKVEventsConfig(True, False))
        return list(tracker.take_events(d.mgr.take_events()))

    def store_in_steps(self, d, n, first=0, per=8, take=True):
        """Store keys first..first+n in jobs of `per`; the router's events
        taken after each step when `take`."""
        events = []
        for start in range(first, first + n, per):
            ks = [key(i) for i in range(start, min(start + per, first + n))]
            d.store(ks, list(range(start, start + len(ks))))
            settle(d.mgr)
            if take:
                events += self.router(d)
        return events


def view(events):
    """A router's view from BlockStored / BlockRemoved: the block hashes it
    believes the node holds."""
    held = set()
    for e in events:
        if isinstance(e, BlockStored):
            held.update(e.block_hashes)
        else:
            held.difference_update(e.block_hashes)
    return held


def hash_of(k):
    return bytes(k)[:-4]


class LocalityTest(ClusterTest):
    def test_the_tier_is_local_storage_and_a_request_filtered_to_local_storage_reads_it(self):
        d = self.deployment()
        self.assertIs(d.tier.locality, Locality.LOCAL)
        self.assertIs(d.tier.medium, Medium.STORAGE)
        keys = [key(i) for i in range(4)]
        d.store(keys, list(range(4)))
        settle(d.mgr)
        d.mgr.primary_tier.forget(keys)
        remote_only = TierFilter((TierMatcher(locality=Locality.REMOTE),))
        ctx = d.request(load_tier_filter=remote_only)
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.MISS] * 4)  # not asked
        local = TierFilter((TierMatcher(medium=Medium.STORAGE, locality=Locality.LOCAL),))
        ctx = d.request(load_tier_filter=local)
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT_PENDING] * 4)
        settle(d.mgr)
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT] * 4)

    def test_locality_is_configurable(self):
        d = self.deployment(tier={"locality": "REMOTE"})
        self.assertIs(d.tier.locality, Locality.REMOTE)


class KVEventsTest(ClusterTest):
    def test_stored_blocks_are_announced_as_vllm_s_own_tiers_announce_them(self):
        d = self.deployment(events=True)
        keys = [key(i, group=i % 2) for i in range(8)]
        d.store(keys, list(range(8)))
        settle(d.mgr)
        raw = list(d.tier.take_events())
        self.assertEqual(len(raw), 1)
        self.assertEqual((raw[0].keys, raw[0].medium, raw[0].removed, raw[0].locality, raw[0].ownership),
                         (keys, Medium.STORAGE, False, Locality.LOCAL, "L3CacheTier"))
        d.store([key(8)], [8])
        settle(d.mgr)
        events = self.router(d)
        self.assertEqual(len(events), 1)
        e = events[0]
        self.assertIsInstance(e, BlockStored)
        self.assertEqual((e.block_hashes, e.medium, e.locality, e.group_idx),
                         ([hash_of(key(8))], "STORAGE", "LOCAL", 0))
        self.assertEqual(self.router(d), [])  # each event once

    def test_no_events_when_the_engine_has_them_off_or_the_tier_opts_out(self):
        for kw in ({"events": False}, {"events": True, "tier": {"enable_kv_events": False}}):
            d = self.deployment(**kw)
            d.store([key(1)], [1])
            settle(d.mgr)
            self.assertEqual(list(d.mgr.take_events()), [], kw)
            self.close(d)

    def test_a_block_deleted_by_another_process_is_announced_removed(self):
        d = self.deployment(events=True)
        keys = [key(i) for i in range(4)]
        d.store(keys, list(range(4)))
        settle(d.mgr)
        self.router(d)
        with l3cache.AsyncStore(tier_entry(self.store)["l3cache_config"]) as other:
            other.submit("delete", 1, [d.tier._key(keys[1]), d.tier._key(keys[3]), "not-announced"])
            while not other.drain():
                time.sleep(0.001)
        events = self.router(d)
        self.assertEqual(len(events), 1)
        e = events[0]
        self.assertIsInstance(e, BlockRemoved)
        self.assertEqual((sorted(e.block_hashes), e.medium, e.locality),
                         (sorted([hash_of(keys[1]), hash_of(keys[3])]), "STORAGE", "LOCAL"))
        self.assertEqual(self.router(d), [])

    def test_with_self_describing_events_l3cache_s_removal_names_the_chunk_s_blocks(self):
        # The connector keeps a chunk's payload until its last residency
        # goes: the CPU tier's, and a secondary tier's whose stored event
        # says it will announce the removal (removal_expected). Without it,
        # the CPU tier's eviction dropped the payload, and l3cache's later
        # removal named only the key's hash, not the blocks it announced.
        d = self.deployment(events=True)
        tracker = OffloadingEventsTracker(OffloadingKVEventsConfig(True, True))
        blocks = [b"block-a" + bytes(25), b"block-b" + bytes(25)]
        k = make_offload_key(blocks[1], 0)  # a chunk's key: its last block's hash
        req = type("Request", (), {"block_hashes": blocks, "all_token_ids": list(range(32)), "lora_request": None})
        chunk = type("GroupOffloadConfig", (), {"hashes_per_chunk": 2, "tokens_per_chunk": 32, "tokens_per_block": 16,
                                                "sliding_window_size_in_chunks": None, "group_idx": 0})
        tracker.record_store(req, chunk, 0, k)  # the scheduler, as its store job is built
        cpu = list(tracker.take_events([OffloadingEvent(keys=[k], medium=Medium.CPU, removed=False)]))
        d.store([k], [0])
        settle(d.mgr)
        stored = self.router(d, tracker)
        self.assertEqual([(e.block_hashes, e.medium, e.ownership, e.token_ids) for e in cpu + stored],
                         [(blocks, "CPU", None, list(range(32))), (blocks, "STORAGE", "L3CacheTier", list(range(32)))])
        gone = list(tracker.take_events([OffloadingEvent(keys=[k], medium=Medium.CPU, removed=True)]))
        self.assertEqual([(e.block_hashes, e.medium) for e in gone], [(blocks, "CPU")])
        with l3cache.AsyncStore(tier_entry(self.store)["l3cache_config"]) as other:
            other.submit("delete", 1, [d.tier._key(k)])
            while not other.drain():
                time.sleep(0.001)
        removed = self.router(d, tracker)
        self.assertEqual([(e.block_hashes, e.medium, e.ownership) for e in removed],
                         [(blocks, "STORAGE", "L3CacheTier")])
        self.assertNotIn(k, tracker._pending_event_metadata)  # the last residency went

    def test_a_removal_older_than_the_block_s_new_store_does_not_unannounce_it(self):
        # Deleted by another process, then stored again by this tier, before
        # the tier reads the feed: the delete is in the feed, the block is in
        # the store, and the router must end up believing it is.
        d = self.deployment(events=True)
        keys = [key(i) for i in range(2)]
        d.store(keys, [0, 1])
        settle(d.mgr)
        events = self.router(d)
        with l3cache.AsyncStore(tier_entry(self.store)["l3cache_config"]) as other:
            other.submit("delete", 1, [d.tier._key(keys[0])])
            while not other.drain():
                time.sleep(0.001)
        d.mgr.primary_tier.forget(keys[:1])
        d.store(keys[:1], [0])
        settle(d.mgr)
        events += self.router(d)
        self.assert_view_is_the_store(d, events, 2)
        self.assertEqual(view(events), {hash_of(k) for k in keys})

    def assert_view_is_the_store(self, d, events, n):
        held = d.tier._io.store.batch_exists([d.tier._key(key(i)) for i in range(n)])
        self.assertEqual(view(events), {hash_of(key(i)) for i in range(n) if held[i]})

    def test_evicted_blocks_are_announced_removed_so_the_router_sees_what_the_store_holds(self):
        # 16 MiB: about 220 blocks of 64 KiB; 400 stored, so early ones are evicted.
        d = self.deployment(events=True, tier={"capacity": "16MiB"})
        events = self.store_in_steps(d, 400)
        removed = sum(len(e.block_hashes) for e in events if isinstance(e, BlockRemoved))
        self.assertGreater(removed, 100)
        self.assert_view_is_the_store(d, events, 400)

    def test_a_block_stored_again_while_its_old_removal_is_unread_stays_announced(self):
        # The tier reads 2 removals a step, so it lags the evictions of 300
        # stores. The blocks evicted last are stored again: their removals
        # are still unread, older than the new stores, and are read only
        # after several more steps. The router must end up believing the
        # store holds them.
        d = self.deployment(events=True, tier={"capacity": "16MiB", "events_per_step": 2})
        events = self.store_in_steps(d, 300)
        held = d.tier._io.store.batch_exists([d.tier._key(key(i)) for i in range(300)])
        again = [i for i in range(300) if not held[i]][-4:]
        self.assertEqual(len(again), 4)
        ks = [key(i) for i in again]
        d.mgr.primary_tier.forget([k for k in ks if k in d.mgr.primary_tier.entries])
        d.store(ks, again)
        settle(d.mgr)
        self.assertEqual(d.tier._io.store.batch_exists([d.tier._key(k) for k in ks]), [True] * 4)
        for _ in range(300):  # (600 removals at the most: the feed read whole)
            events += self.router(d)
        self.assertEqual(d.tier._events._feed.read(), ([], 0))
        self.assert_view_is_the_store(d, events, 300)

    def test_a_block_evicted_before_its_job_is_collected_is_never_announced_held(self):
        # One job of 400 blocks into a 16 MiB store evicts its own first
        # blocks while it runs; the router's events are taken (as vLLM takes
        # them after each forward pass) while the job is in flight and
        # before it is collected.
        d = self.deployment(cpu_rows=400, events=True, tier={"capacity": "16MiB"})
        keys = [key(i) for i in range(400)]
        ctx = d.request()
        out = d.mgr.prepare_store(keys, ctx)
        for k, row in zip(out.keys_to_store, out.store_spec.chunk_ids):
            d.rows[row] = pattern(keys.index(k))
        d.mgr.complete_store(keys, ctx, True)
        d.mgr.on_request_finished(ctx)
        step(d.mgr)  # submitted
        events, deadline = [], time.time() + 30
        while d.tier._io.store.stats()["removals"] < 100 and time.time() < deadline:
            events += self.router(d)
            time.sleep(0.001)
        events += self.router(d)  # the removals read while the job is not collected
        self.assertGreater(d.tier._io.store.stats()["removals"], 100)
        settle(d.mgr)
        for _ in range(3):
            events += self.router(d)
        self.assert_view_is_the_store(d, events, 400)

    def test_each_call_reads_a_bounded_number_of_removals(self):
        d = self.deployment(events=True, tier={"capacity": "16MiB", "events_per_step": 8})
        events = self.store_in_steps(d, 300, take=False)
        calls = 0
        while True:
            batch = self.router(d)
            calls += 1
            gone = sum(len(e.block_hashes) for e in batch if isinstance(e, BlockRemoved))
            self.assertLessEqual(gone, 8)
            events += batch
            if not gone and calls > 1:
                break
        self.assertGreater(calls, 8)
        self.assert_view_is_the_store(d, events, 300)

    def test_a_tier_that_fell_behind_the_feed_reconciles_with_the_store(self):
        # The tier reads the feed as a reader a ring behind does: the
        # removals of some 100 stores are overwritten before it reads them,
        # and it is only told how many it missed (the ring's own count is
        # tested in C, tests/test_feed.c). It then checks which announced
        # blocks remain.
        d = self.deployment(events=True, tier={"capacity": "16MiB"})
        events = self.store_in_steps(d, 200)
        lossy = LossyFeed(d.tier._events._feed)
        d.tier._events._feed = lossy
        events += self.store_in_steps(d, 100, first=200, take=False)
        events += self.router(d)
        lossy.dropping = False
        self.assertGreater(lossy.dropped, 0)
        self.assertGreater(d.tier._events.missed, 0)
        self.assertGreater(d.tier._events.reconciled, 0)
        for _ in range(3):
            events += self.router(d)
        self.assert_view_is_the_store(d, events, 300)


class LossyFeed:
    """A removal feed read a ring behind: while ``dropping``, every removal
    is overwritten before it is read, and the reader is told how many."""

    def __init__(self, feed):
        self.feed = feed
        self.dropping = True
        self.dropped = 0
        self.missed = 0

    def read(self, max_events=4096):
        removals, missed = self.feed.read(max_events=max_events)
        if not self.dropping:
            return removals, missed
        self.dropped += len(removals)
        self.missed += len(removals) + missed
        return [], len(removals) + missed


class MetricsTest(ClusterTest):
    def test_the_tier_s_metrics_are_declared_and_reported(self):
        extra = {"secondary_tiers": [tier_entry(self.store)]}
        definitions = TieringOffloadingSpec.build_metric_definitions(extra)
        for name in vllm_metrics.METRICS:
            self.assertIn(name, definitions)
        d = self.deployment(tier={"capacity": "16MiB"})
        keys = [key(i) for i in range(16)]
        d.store(keys, list(range(16)))
        settle(d.mgr)
        d.mgr.primary_tier.forget(keys[:4])
        ctx = d.request()
        [d.mgr.lookup(k, ctx) for k in keys[:4] + [key(999)]]
        settle(d.mgr)
        stats = d.mgr.get_stats()
        self.assertEqual(stats.value(vllm_metrics.STORED), 16 * ROW)
        self.assertEqual(stats.value(vllm_metrics.LOADED), 4 * ROW)
        self.assertEqual(stats.value(vllm_metrics.HITS), 4)
        self.assertEqual(stats.value(vllm_metrics.MISSES), 1)
        self.assertEqual(stats.value(vllm_metrics.CAPACITY), 16 << 20)
        self.assertEqual(stats.value(vllm_metrics.USAGE), 16 * ROW)
        self.assertGreater(stats.value(vllm_metrics.USAGE_PERC), 0)
        again = d.mgr.get_stats()  # reset: counters report what is new
        self.assertIsNone(again.value(vllm_metrics.STORED) if again else None)
        self.store_in_steps(d, 300, first=16)
        d.tier._metrics._interval = 0
        stats = d.mgr.get_stats()
        self.assertGreater(stats.value(vllm_metrics.EVICTED), 50)


class FactoryTest(ClusterTest):
    def test_the_factory_s_newer_arguments_are_taken(self):
        # Out of tree (module_path): this factory passes tier_name=, and a
        # backpressure block becomes the tier's detector.
        d = self.deployment(tier={"backpressure": {"backpressure_cls": "ema", "high_water_s": 2.0}})
        self.assertEqual(d.tier.tier_type, "L3CacheTier")
        self.assertIsInstance(d.tier.bp_detector, BackpressureDetector)
        self.close(d)
        # Registered by name: tier_type=.
        SecondaryTierFactory.register_tier("l3cache-test", "l3cache.vllm", "L3CacheTier")
        try:
            d = self.deployment(tier={"type": "l3cache-test"})
            self.assertEqual(d.tier.tier_type, "l3cache-test")
            self.assertIsNone(d.tier.bp_detector)
            d.store([key(1)], [1])
            settle(d.mgr)
            self.assertEqual(d.tier.store_stats()["objects"], 1)
        finally:
            del SecondaryTierFactory._registry["l3cache-test"]


class LookupTest(ClusterTest):
    def test_a_large_request_s_lookups_never_hold_the_scheduler_thread(self):
        n = 300
        d = self.deployment(cpu_rows=n + 8)
        keys = [key(i) for i in range(n)]
        self.store_in_steps(d, n, take=False)
        d.mgr.primary_tier.forget(keys)
        probes = []
        real = d.tier._io.store.batch_lease

        def spy(ks, seconds):
            probes.append(len(ks))
            return real(ks, seconds)

        d.tier._io.store.batch_lease = spy
        ctx = d.request()
        first = [d.mgr.lookup(k, ctx) for k in keys]
        self.assertLessEqual(len(probes), 64)  # keys asked on the scheduler thread this step
        self.assertEqual(first[:len(probes)], [LookupResult.HIT_PENDING] * len(probes))
        self.assertEqual(set(first[len(probes):]), {LookupResult.RETRY})
        deadline = time.monotonic() + 30
        while True:
            step(d.mgr)
            results = [d.mgr.lookup(k, ctx) for k in keys]
            if LookupResult.RETRY not in results:
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.005)
        self.assertLessEqual(len(probes), 64)
        self.assertEqual(d.tier.lookup_stats()["batched"], n - len(probes))
        settle(d.mgr)
        self.assertEqual([d.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT] * n)
        for i in (0, 100, n - 1):
            np.testing.assert_array_equal(d.row_of(keys[i]), pattern(i))


class TwoTierTest(ClusterTest):
    def test_a_miss_in_l3cache_is_served_by_vllm_s_fs_tier_on_a_shared_directory(self):
        shared = os.path.join(self.dir, "shared-fs")
        fs = {"type": "fs", "root_dir": shared, "n_read_threads": 2, "n_write_threads": 2}
        node_a = self.deployment(store=os.path.join(self.dir, "a.l3"), more_tiers=[fs])
        node_b = self.deployment(store=os.path.join(self.dir, "b.l3"), more_tiers=[fs])
        keys = [key(i) for i in range(8)]
        node_a.store(keys, list(range(8)))
        settle(node_a.mgr)
        node_a.mgr.secondary_tiers[1].drain_jobs()
        ctx = node_b.request()
        self.assertEqual([node_b.mgr.lookup(k, ctx) for k in keys], [LookupResult.RETRY] * 8)  # fs asks off-thread
        deadline = time.monotonic() + 30
        while True:
            step(node_b.mgr)
            results = [node_b.mgr.lookup(k, ctx) for k in keys]
            if LookupResult.RETRY not in results:
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.005)
        self.assertEqual(results, [LookupResult.HIT_PENDING] * 8)  # promoted from the fs tier
        settle(node_b.mgr)
        self.assertEqual([node_b.mgr.lookup(k, ctx) for k in keys], [LookupResult.HIT] * 8)
        for i, k in enumerate(keys):
            np.testing.assert_array_equal(node_b.row_of(k), pattern(i))
            self.assertIs(node_b.mgr.get_load_source(k, ctx), CacheHitSource.DISK)
        self.assertEqual(node_b.tier.store_stats()["objects"], 0)  # l3cache missed: node B never had them
        stats = node_b.mgr.get_stats()
        self.assertEqual(stats.value(vllm_metrics.MISSES), 8)


class TenantTest(ClusterTest):
    def chunk_keys(self, tokens, salt):
        """vLLM's offload keys of a request: each chunk (2 blocks of 16
        tokens) keyed by its last block's hash."""
        hashes = kv_cache_utils.request_block_hashes(tokens, 16, cache_salt=salt)
        return [make_offload_key(h, 0) for h in hashes[1::2]]

    def test_two_tenants_with_the_same_tokens_never_read_each_other_s_blocks(self):
        kv_cache_utils.init_none_hash()
        tokens = list(range(1000, 1128))  # 8 blocks, 4 chunks
        d = self.deployment()
        alice, bob = self.chunk_keys(tokens, "alice"), self.chunk_keys(tokens, "bob")
        self.assertFalse(set(alice) & set(bob))
        d.store(alice, [1, 2, 3, 4])
        settle(d.mgr)
        d.mgr.primary_tier.forget(alice)
        ctx = d.request()
        self.assertEqual([d.mgr.lookup(k, ctx) for k in bob], [LookupResult.MISS] * 4)
        self.assertEqual([d.mgr.lookup(k, ctx) for k in self.chunk_keys(tokens, None)], [LookupResult.MISS] * 4)
        again = self.chunk_keys(tokens, "alice")
        self.assertEqual([d.mgr.lookup(k, ctx) for k in again], [LookupResult.HIT_PENDING] * 4)
        settle(d.mgr)
        for k, seed in zip(again, [1, 2, 3, 4]):
            np.testing.assert_array_equal(d.row_of(k), pattern(seed))

    def test_deployments_with_different_ids_never_share_a_block(self):
        blue = self.deployment(tier={"namespace": {"deployment_id": "blue"}})
        blue.store([key(1)], [1])
        settle(blue.mgr)
        self.close(blue)
        green = self.deployment(tier={"namespace": {"deployment_id": "green"}})
        self.assertIs(green.mgr.lookup(key(1), green.request()), LookupResult.MISS)
        self.close(green)
        plain = self.deployment()
        self.assertIs(plain.mgr.lookup(key(1), plain.request()), LookupResult.MISS)
        self.close(plain)
        blue = self.deployment(tier={"namespace": {"deployment_id": "blue"}})
        self.assertIs(blue.mgr.lookup(key(1), blue.request()), LookupResult.HIT_PENDING)


if __name__ == "__main__":
    unittest.main()
