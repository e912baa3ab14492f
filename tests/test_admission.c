/* Admission, groups and the write budget through the real slab store
 * (docs/admission.md): first sightings refused by a full store and
 * admitted when seen again, a refusal refusing the rest of its batch, a
 * batch of use only whole written whole or not at all, a page's objects over two ranks admitted, kept and evicted whole, a lease
 * on one member holding the group, drive writes per day. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define OBJ 65536u
#define PER_SLAB 15u /* 64 KiB objects and their headers a 1 MiB slab holds */

typedef struct keyset {
    char text[256][48];
    const char *ptr[256];
    l3_range ranges[256];
    uint64_t groups[256];
} keyset;

/* Keys "<ns>_<first + i>", each a 64 KiB range of the pool; group ids
 * first + i + 1 (the page's number). */
static void make_keys(keyset *k, const char *ns, size_t first, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(k->text[i], sizeof k->text[i], "%s_%zu", ns, first + i);
        k->ptr[i] = k->text[i];
        k->ranges[i] = (l3_range){ (uint64_t)i * OBJ, OBJ };
        k->groups[i] = first + i + 1;
    }
}

static l3_slabstore *open_with(const char *name, uint32_t slabs, l3_admission mode, uint32_t rung, char *path)
{
    temp_store_path(path, 512, name);
    l3_slab_options o = slab_count_options(path, slabs, L3_ENGINE_AUTO);
    o.admission = mode;
    o.admission_rung = rung;
    return open_test_store(&o);
}

/* Put keys [first, first + n) of `ns`, with their groups when `grouped`;
 * how many were stored, their flags into ok (if given). */
static size_t put_range(l3_store *st, uint8_t *pool, const char *ns, size_t first, size_t n, bool grouped,
                        bool *ok_out)
{
    keyset *k = malloc(sizeof *k);
    make_keys(k, ns, first, n);
    bool ok[256], fail[256];
    l3_io_result res = { .success = ok, .object_failures = fail };
    l3_put_hints hints = { .groups = k->groups, .group_objects = 2 };
    l3_error err;
    assert_int_equal(l3_store_batch_put_hinted(st, k->ptr, n, (l3_host_buffer){ pool, 256 * OBJ }, k->ranges, 1,
                                               grouped ? &hints : NULL, &res, &err),
                     L3_OK);
    assert_true(res.retired);
    size_t stored = 0;
    for (size_t i = 0; i < n; i++) {
        assert_false(fail[i]); /* a declined put is a retired failure, not an object failure */
        stored += ok[i];
        if (ok_out)
            ok_out[i] = ok[i];
    }
    free(k);
    return stored;
}

/* Put "fill" keys a slab at a time until the store has evicted: the
 * keys stored. */
static size_t fill_until_full(l3_slabstore *s, uint8_t *pool)
{
    l3_slab_stats stats = { 0 };
    size_t stored = 0;
    for (size_t first = 0; stats.evictions == 0 && first < 40 * PER_SLAB; first += PER_SLAB) {
        stored += put_range(l3_slabstore_store(s), pool, "fill", first, PER_SLAB, false, NULL);
        l3_slabstore_stats(s, &stats);
    }
    assert_true(stats.evictions > 0);
    return stored;
}

static void exists_range(l3_store *st, const char *ns, size_t first, size_t n, bool *flags)
{
    keyset *k = malloc(sizeof *k);
    make_keys(k, ns, first, n);
    assert_int_equal(l3_store_batch_exists(st, k->ptr, n, flags, NULL), L3_OK);
    free(k);
}

static void a_full_store_writes_a_first_sighting_only_when_it_is_seen_again(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("admit", 4, L3_ADMISSION_RUNG, 0, path);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    /* While there is room every first sighting is written (into probation). */
    size_t stored = fill_until_full(s, pool);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stored >= 3 * PER_SLAB);
    assert_int_equal(stats.admitted_probation, stored);
    /* Full: a key never seen is declined (retired), once sighted it is written, into main. */
    uint64_t declined = stats.put_keys_not_admitted; /* (the batch that filled it may have met the full store) */
    assert_int_equal(put_range(st, pool, "new", 0, 1, false, NULL), 0);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.put_keys_not_admitted, declined + 1);
    assert_int_equal(put_range(st, pool, "new", 0, 1, false, NULL), 1);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.admitted_main, 1);
    assert_string_equal(stats.admission, "rung");
    assert_int_equal(stats.admission_rung, 0);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static void a_refused_key_refuses_the_rest_of_its_batch(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("depth", 4, L3_ADMISSION_RUNG, 1, path); /* two first sightings a batch */
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    fill_until_full(s, pool);
    /* A batch of six of which "seen_3" is stored already. */
    bool ok[6];
    assert_int_equal(put_range(st, pool, "seen", 3, 1, false, NULL), 1); /* (depth 2: written) */
    assert_int_equal(put_range(st, pool, "seen", 0, 6, false, ok), 3);
    assert_true(ok[0] && ok[1]);
    assert_false(ok[2]);
    assert_true(ok[3]); /* already stored: create-only success */
    assert_false(ok[4] || ok[5]); /* after a refusal nothing more, seen or not */
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* A hybrid model's put of pages [0, pages) of `ns`: each page's KV and
 * sidecar, then the last page's state, all of a page one group (`group` +
 * its number); `whole` says the batch is of use only whole. The keys
 * stored; their flags into ok. */
static size_t put_pools(l3_store *st, uint8_t *pool, const char *ns, uint64_t group, size_t pages, bool whole,
                        bool *ok)
{
    keyset *k = malloc(sizeof *k);
    size_t n = 0;
    for (size_t i = 0; i < pages; i++)
        for (int part = 0; part < 2 + (i + 1 == pages); part++, n++) {
            snprintf(k->text[n], sizeof k->text[n], "%s_%zu_%s", ns, i, (const char *[]){ "kv", "x", "s" }[part]);
            k->ptr[n] = k->text[n];
            k->ranges[n] = (l3_range){ (uint64_t)n * OBJ, OBJ };
            k->groups[n] = group + i;
        }
    bool fail[256];
    l3_io_result res = { .success = ok, .object_failures = fail };
    l3_put_hints hints = { .groups = k->groups, .group_objects = 3, .whole = whole };
    assert_int_equal(l3_store_batch_put_hinted(st, k->ptr, n, (l3_host_buffer){ pool, 256 * OBJ }, k->ranges, 1,
                                               &hints, &res, NULL),
                     L3_OK);
    size_t stored = 0;
    for (size_t i = 0; i < n; i++)
        stored += ok[i];
    free(k);
    return stored;
}

/* The rung's depth counts a batch's pages, not its objects; a batch of use
 * only whole (its prefix needs its last page's state) is written whole or
 * not at all: first seen past the depth it is declined whole, and once its
 * head is taken (seen) so are its first-seen pages past the depth. */
static void a_batch_of_use_only_whole_is_written_whole_or_not_at_all(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("whole", 8, L3_ADMISSION_RUNG, 1, path); /* two first-seen pages a batch */
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    fill_until_full(s, pool);
    bool ok[16];
    /* Not whole: the first two pages (two objects each), then nothing. */
    assert_int_equal(put_pools(st, pool, "cut", 1000, 4, false, ok), 4);
    assert_true(ok[0] && ok[1] && ok[2] && ok[3]);
    /* Whole, four pages first seen: none of its nine objects. */
    assert_int_equal(put_pools(st, pool, "hybrid", 2000, 4, true, ok), 0);
    /* Six pages, the first four seen: all thirteen, the seen ones into
     * main, pages 4 and 5 (first seen, past the depth) into probation. */
    l3_slab_stats before, after;
    l3_slabstore_stats(s, &before);
    assert_int_equal(put_pools(st, pool, "hybrid", 2000, 6, true, ok), 13);
    l3_slabstore_stats(s, &after);
    assert_int_equal(after.admitted_main - before.admitted_main, 8);
    assert_int_equal(after.admitted_probation - before.admitted_probation, 5);
    /* Whole within the depth: written at first sight. */
    assert_int_equal(put_pools(st, pool, "short", 3000, 2, true, ok), 5);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* Two ranks' shards of pages 0..n-1 in rounds, as an engine's TP group
 * stores them (rank 0's batch, then rank 1's); after each round, the pages
 * whose two shards disagree (one present, the other not). */
static size_t ranks_disagree(l3_store *st, uint8_t *pool, bool grouped, size_t pages, size_t per_round)
{
    size_t worst = 0;
    bool a[256], b[256];
    for (size_t first = 0; first + per_round <= pages; first += per_round) {
        put_range(st, pool, "rank0", first, per_round, grouped, NULL);
        put_range(st, pool, "rank1", first, per_round, grouped, NULL);
        for (size_t base = 0; base < first + per_round; base += 256) {
            size_t n = first + per_round - base < 256 ? first + per_round - base : 256;
            exists_range(st, "rank0", base, n, a);
            exists_range(st, "rank1", base, n, b);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += a[i] != b[i];
            worst = bad > worst ? bad : worst;
        }
    }
    return worst;
}

static void a_page_s_shards_over_two_ranks_stay_and_go_together(void **state)
{
    (void)state;
    char path[512];
    uint8_t *pool = aligned_pool(256 * OBJ);
    /* Without groups, a slab boundary falls between two shards of a page
     * now and then: one rank's shard is evicted, the other stays. */
    l3_slabstore *s = open_with("nogroups", 6, L3_ADMISSION_ALL, 0, path);
    size_t loose = ranks_disagree(l3_slabstore_store(s), pool, false, 240, 7);
    l3_slabstore_free(s);
    unlink(path);
    assert_true(loose > 0);
    /* With them, never. */
    s = open_with("groups", 6, L3_ADMISSION_ALL, 0, path);
    assert_int_equal(ranks_disagree(l3_slabstore_store(s), pool, true, 240, 7), 0);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.group_dropped > 0);
    assert_true(stats.groups_live > 0);
    /* Each object a group took with it is announced so (the removal feed). */
    assert_int_equal(stats.removals_by_reason[L3_REMOVED_GROUP], stats.group_dropped);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static void one_decision_binds_every_member_of_a_page(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("decide", 4, L3_ADMISSION_RUNG, 0, path); /* second sight */
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    fill_until_full(s, pool);
    /* Page 900: rank 0 comes first, refused at first sight; rank 1, at
     * first sight too, follows. (Pages of two objects: one follower.) */
    assert_int_equal(put_range(st, pool, "rank0", 900, 1, true, NULL), 0);
    assert_int_equal(put_range(st, pool, "rank1", 900, 1, true, NULL), 0);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.group_followed, 1);
    /* Page 901: rank 1's shard was sighted before (refused alone). A
     * refusal binds only members at first sight: a seen one is a later
     * request's (its page's own next put, when the followers counted never
     * all come) and decides afresh, here written on second sight, but
     * alone: rank 2, at first sight, still follows the refusal. */
    assert_int_equal(put_range(st, pool, "rank1", 901, 1, false, NULL), 0);
    assert_int_equal(put_range(st, pool, "rank0", 901, 1, true, NULL), 0);
    assert_int_equal(put_range(st, pool, "rank1", 901, 1, true, NULL), 1);
    assert_int_equal(put_range(st, pool, "rank2", 901, 1, true, NULL), 0);
    /* Page 902: rank 0's shard seen, written; rank 1 follows the admission. */
    assert_int_equal(put_range(st, pool, "rank0", 902, 1, false, NULL), 0);
    assert_int_equal(put_range(st, pool, "rank0", 902, 1, true, NULL), 1);
    assert_int_equal(put_range(st, pool, "rank1", 902, 1, true, NULL), 1);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.group_followed, 3);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static void a_lease_on_one_member_keeps_its_whole_page(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("glease", 6, L3_ADMISSION_ALL, 0, path);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    /* Page 0's shards in two slabs: rank 0's in the first, rank 1's in the second. */
    put_range(st, pool, "rank0", 0, PER_SLAB, true, NULL);
    put_range(st, pool, "rank1", 0, PER_SLAB, true, NULL);
    const char *r0[] = { "rank0_0" };
    bool flag[1];
    assert_int_equal(l3_store_batch_lease(st, r0, 1, 60, flag, NULL), L3_OK);
    assert_true(flag[0]);
    /* Three times the store's size: every slab but the leased one is reused. */
    for (size_t first = 1000; first < 1000 + 18 * PER_SLAB; first += PER_SLAB)
        put_range(st, pool, "other", first, PER_SLAB, false, NULL);
    bool a[1], b[1];
    exists_range(st, "rank0", 0, 1, a);
    exists_range(st, "rank1", 0, 1, b);
    assert_true(a[0] && b[0]); /* rank 1's shard kept (rewritten) for its leased sibling */
    exists_range(st, "rank1", 1, 1, b);
    assert_false(b[0]); /* its neighbours were not */
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* Get keys [first, first + n) of `ns` into the pool: how many were served. */
static size_t get_range(l3_store *st, uint8_t *pool, const char *ns, size_t first, size_t n)
{
    keyset *k = malloc(sizeof *k);
    make_keys(k, ns, first, n);
    bool ok[256], fail[256];
    l3_io_result res = { .success = ok, .object_failures = fail };
    assert_int_equal(l3_store_batch_get_into(st, k->ptr, n, (l3_host_buffer){ pool, 256 * OBJ }, k->ranges, &res,
                                             NULL),
                     L3_OK);
    size_t got = 0;
    for (size_t i = 0; i < n; i++)
        got += ok[i];
    free(k);
    return got;
}

/* A page's state written before its KV and never read (SGLang's trailing
 * state of a page that later became a prefix's middle): the KV's reads
 * keep the state too, so evicting the unread state does not take the read
 * KV with it. */
static void a_read_of_one_member_keeps_its_unread_siblings(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("gread", 6, L3_ADMISSION_ALL, 0, path);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    put_range(st, pool, "state", 0, PER_SLAB, true, NULL); /* the oldest slab */
    put_range(st, pool, "kv", 0, PER_SLAB, true, NULL);
    assert_int_equal(get_range(st, pool, "kv", 0, 1), 1); /* page 0's KV is read, its state is not */
    l3_slab_stats stats = { 0 };
    for (size_t first = 1000; stats.evictions < 2 && first < 1000 + 12 * PER_SLAB; first += PER_SLAB) {
        put_range(st, pool, "other", first, PER_SLAB, false, NULL);
        l3_slabstore_stats(s, &stats);
    }
    assert_true(stats.evictions >= 2); /* the state's slab and the KV's were reused */
    bool a[2], b[2];
    exists_range(st, "state", 0, 2, a);
    exists_range(st, "kv", 0, 2, b);
    assert_true(a[0] && b[0]); /* page 0 kept whole */
    assert_false(a[1] || b[1]); /* page 1, never read, went whole */
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* A batch whose pages have one object each (group_objects 1: one rank,
 * one pool) keeps no groups: the table stays free for real ones. */
static void groups_of_one_object_are_not_tracked(void **state)
{
    (void)state;
    char path[512];
    l3_slabstore *s = open_with("gone", 6, L3_ADMISSION_ALL, 0, path);
    uint8_t *pool = aligned_pool(256 * OBJ);
    keyset *k = malloc(sizeof *k);
    make_keys(k, "solo", 0, 8);
    bool ok[8], fail[8];
    l3_io_result res = { .success = ok, .object_failures = fail };
    l3_put_hints hints = { .groups = k->groups, .group_objects = 1 };
    assert_int_equal(l3_store_batch_put_hinted(l3_slabstore_store(s), k->ptr, 8, (l3_host_buffer){ pool, 256 * OBJ },
                                               k->ranges, 1, &hints, &res, NULL),
                     L3_OK);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, 8);
    assert_int_equal(stats.groups_live, 0);
    put_range(l3_slabstore_store(s), pool, "pair", 0, 8, true, NULL); /* group_objects 2 */
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.groups_live, 8);
    free(k);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* Whether a full store on rung 0 still remembers a key sighted before
 * 384 sightings of others (six generations of the 64-sighting floor when
 * a page is one object, three when a put said pages are groups of two). */
static bool remembers_after_384_sightings(bool pages_of_two)
{
    char path[512];
    l3_slabstore *s = open_with("pages", 4, L3_ADMISSION_RUNG, 0, path); /* 60 objects: the floor rules */
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    fill_until_full(s, pool);
    if (pages_of_two)
        put_range(st, pool, "ranks", 0, 1, true, NULL); /* group_objects 2 */
    assert_int_equal(put_range(st, pool, "x", 0, 1, false, NULL), 0); /* sighted, declined */
    bool flags[128];
    for (size_t first = 0; first < 384; first += 128)
        exists_range(st, "other", first, 128, flags);
    bool stored = put_range(st, pool, "x", 0, 1, false, NULL) == 1;
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
    return stored;
}

/* Generations (and epochs) count pages: every rank names its own shard,
 * so with pages of two objects the ghost remembers over twice the
 * sightings, the same stretch of pages as one rank's. */
static void the_ghost_remembers_pages_when_pages_are_groups(void **state)
{
    (void)state;
    assert_false(remembers_after_384_sightings(false));
    assert_true(remembers_after_384_sightings(true));
}

static void a_budget_in_drive_writes_per_day_declines_first_sightings_first(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "dwpd");
    l3_slab_options o = slab_count_options(path, 8, L3_ENGINE_AUTO);
    /* 8 MiB at 1000 drive writes a day: 97 KB/s, a bucket of 971 KB, 14 objects with their headers. */
    o.write_budget_dwpd = 1000;
    o.admission = L3_ADMISSION_RUNG; /* the object LRU's rung, with a ghost that knows first sightings */
    o.admission_rung = 6;
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    size_t first = put_range(st, pool, "a", 0, 20, false, NULL);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    /* Admitted at first sight only while the bucket is at least half full: 7 of 68 KiB. */
    assert_int_equal(first, 7);
    assert_int_equal(stats.put_keys_over_budget, 20 - 7); /* the eighth, and the rest of its batch */
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* A whole batch, once taken, passes the budget's gate as seen keys do:
 * written as far as the bucket holds (13.9 objects: 13, or 14 if it refills
 * by 4 KB meanwhile), not cut where a first sighting stops (7). */
static void a_whole_batch_spends_the_bucket_not_half_of_it(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "dwpdw");
    l3_slab_options o = slab_count_options(path, 8, L3_ENGINE_AUTO);
    o.write_budget_dwpd = 1000; /* as above */
    o.admission = L3_ADMISSION_RUNG;
    o.admission_rung = 6;
    l3_slabstore *s = open_test_store(&o);
    uint8_t *pool = aligned_pool(256 * OBJ);
    keyset *k = malloc(sizeof *k);
    make_keys(k, "w", 0, 20);
    bool ok[20], fail[20];
    l3_io_result res = { .success = ok, .object_failures = fail };
    l3_put_hints hints = { .whole = true };
    assert_int_equal(l3_store_batch_put_hinted(l3_slabstore_store(s), k->ptr, 20, (l3_host_buffer){ pool, 256 * OBJ },
                                               k->ranges, 1, &hints, &res, NULL),
                     L3_OK);
    size_t stored = 0;
    for (size_t i = 0; i < 20; i++)
        stored += ok[i];
    assert_in_range(stored, 13, 14);
    free(k);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* The budget's clock as the caller gives it (a replay's trace time): the
 * bucket refills as that clock moves, not as the wall clock does. */
static double trace_clock(void *arg) { return *(const double *)arg; }

static void a_budget_refills_by_the_caller_s_clock(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "bclock");
    l3_slab_options o = slab_count_options(path, 8, L3_ENGINE_AUTO);
    double now = 1; /* one second in */
    o.write_budget_dwpd = 1000; /* a bucket of 971 KB, as above */
    o.admission = L3_ADMISSION_RUNG;
    o.admission_rung = 6;
    o.budget_clock = (l3_clock){ trace_clock, &now };
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(256 * OBJ);
    assert_int_equal(put_range(st, pool, "a", 0, 20, false, NULL), 7);
    assert_int_equal(put_range(st, pool, "b", 0, 20, false, NULL), 0); /* the clock has not moved */
    now += 2; /* two seconds: 194 KB more, the bucket over half full again */
    size_t two = put_range(st, pool, "c", 0, 20, false, NULL);
    assert_true(two >= 1 && two <= 3);
    now += 100; /* long after: a full bucket again, not more */
    assert_int_equal(put_range(st, pool, "d", 0, 20, false, NULL), 7);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_full_store_writes_a_first_sighting_only_when_it_is_seen_again),
        cmocka_unit_test(a_refused_key_refuses_the_rest_of_its_batch),
        cmocka_unit_test(a_batch_of_use_only_whole_is_written_whole_or_not_at_all),
        cmocka_unit_test(a_page_s_shards_over_two_ranks_stay_and_go_together),
        cmocka_unit_test(one_decision_binds_every_member_of_a_page),
        cmocka_unit_test(a_lease_on_one_member_keeps_its_whole_page),
        cmocka_unit_test(a_read_of_one_member_keeps_its_unread_siblings),
        cmocka_unit_test(groups_of_one_object_are_not_tracked),
        cmocka_unit_test(the_ghost_remembers_pages_when_pages_are_groups),
        cmocka_unit_test(a_budget_in_drive_writes_per_day_declines_first_sightings_first),
        cmocka_unit_test(a_whole_batch_spends_the_bucket_not_half_of_it),
        cmocka_unit_test(a_budget_refills_by_the_caller_s_clock),
    };
    return cmocka_run_group_tests_name("admission", tests, NULL, NULL);
}
