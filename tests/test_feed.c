/* The removal feed: its ring over memory (feed.c), and through the slab
 * store: every object that leaves is announced once, with its key's
 * identity and why, to every reader, whichever handle removed it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed.h"
#include "harness.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define OBJ 65536u

/* A feed of `slots` slots in memory. */
typedef struct mem_feed {
    l3_feed_head head;
    l3_feed_slot *slots;
    l3_feed f;
} mem_feed;

static void mem_feed_init(mem_feed *m, uint64_t slots)
{
    memset(&m->head, 0, sizeof m->head);
    m->slots = calloc(slots, sizeof(l3_feed_slot));
    assert_non_null(m->slots);
    l3_feed_format(&m->head, slots);
    m->f = (l3_feed){ .head = &m->head, .slots = m->slots };
}

/* The identity the tests announce as removal n (every field derived from n). */
static l3_key_id id_of(uint64_t n)
{
    return (l3_key_id){ .hash = n * 0x9e3779b97f4a7c15ull + 1, .len = (uint16_t)(n % 2048) };
}

static void check_item(const l3_feed_item *it, uint64_t n)
{
    l3_key_id want = id_of(n);
    assert_int_equal(it->seq, n);
    assert_int_equal(it->id.hash, want.hash);
    assert_int_equal(it->id.check, 0); /* (an identity is its hash and length) */
    assert_int_equal(it->id.len, want.len);
    assert_int_equal(it->reason, 1 + n % 6);
}

static void removals_are_read_in_order_and_a_reader_behind_is_told_how_many_it_missed(void **state)
{
    (void)state;
    mem_feed m;
    mem_feed_init(&m, 8);
    uint64_t now = l3_feed_start(&m.f, 0), missed = 0;
    assert_int_equal(now, 0);
    l3_feed_item out[16];
    for (uint64_t n = 0; n < 5; n++)
        l3_feed_announce(&m.f, id_of(n), (uint32_t)(1 + n % 6));
    assert_int_equal(l3_feed_read(&m.f, &now, out, 3, &missed), 3);
    assert_int_equal(l3_feed_read(&m.f, &now, out + 3, 16, &missed), 2);
    for (uint64_t n = 0; n < 5; n++)
        check_item(&out[n], n);
    assert_int_equal(missed, 0);
    assert_int_equal(l3_feed_read(&m.f, &now, out, 16, &missed), 0);
    /* 13 more: the ring of 8 holds 10..17, so this reader missed 5..9. */
    for (uint64_t n = 5; n < 18; n++)
        l3_feed_announce(&m.f, id_of(n), (uint32_t)(1 + n % 6));
    assert_int_equal(l3_feed_read(&m.f, &now, out, 16, &missed), 8);
    assert_int_equal(missed, 5);
    for (uint64_t k = 0; k < 8; k++)
        check_item(&out[k], 10 + k);
    /* A reader that starts at the oldest sees the ring; one that starts now, nothing yet. */
    uint64_t oldest = l3_feed_start(&m.f, 1), fresh = l3_feed_start(&m.f, 0);
    assert_int_equal(oldest, 10);
    assert_int_equal(fresh, 18);
    missed = 0;
    assert_int_equal(l3_feed_read(&m.f, &oldest, out, 16, &missed), 8);
    assert_int_equal(missed, 0);
    assert_int_equal(m.head.by_reason[1 + 17 % 6], 3); /* 5, 11, 17 */
    free(m.slots);
}

/* A writer laps a reader that reads as fast as it can: every removal is
 * either read whole (its fields all of one announcement) or counted
 * missed, never both and never torn. */
typedef struct race {
    mem_feed m;
    pthread_mutex_t mu;
    uint64_t total;
} race;

static void *writer(void *arg)
{
    race *r = arg;
    for (uint64_t n = 0; n < r->total; n++) {
        pthread_mutex_lock(&r->mu); /* (the store's lock: one writer at a time) */
        l3_feed_announce(&r->m.f, id_of(n), (uint32_t)(1 + n % 6));
        pthread_mutex_unlock(&r->mu);
    }
    return NULL;
}

static void a_lapped_reader_never_reads_a_torn_removal(void **state)
{
    (void)state;
    race r = { .total = 400000 };
    mem_feed_init(&r.m, 64);
    pthread_mutex_init(&r.mu, NULL);
    pthread_t t;
    uint64_t cursor = 0, missed = 0, read = 0, last = 0;
    assert_int_equal(pthread_create(&t, NULL, writer, &r), 0);
    l3_feed_item out[32];
    while (cursor < r.total) {
        size_t n = l3_feed_read(&r.m.f, &cursor, out, 32, &missed);
        for (size_t i = 0; i < n; i++) {
            check_item(&out[i], out[i].seq);
            assert_true(read == 0 || out[i].seq > last);
            last = out[i].seq;
            read++;
        }
    }
    pthread_join(t, NULL);
    assert_int_equal(read + missed, r.total);
    assert_true(read > 0);
    pthread_mutex_destroy(&r.mu);
    free(r.m.slots);
}

/* ---- through the store ---- */

static void key_of(char *out, size_t len, const char *ns, size_t i)
{
    snprintf(out, len, "%s_obj%zu|g0|o0|r0", ns, i);
}

static void put_n(l3_store *st, const char *ns, size_t first, size_t n)
{
    uint8_t *pool = aligned_pool(OBJ);
    fill_pattern(pool, OBJ, 7);
    for (size_t i = first; i < first + n; i++) {
        char key[64];
        key_of(key, sizeof key, ns, i);
        const char *k = key;
        l3_range r = { 0, OBJ };
        bool ok;
        put_keys(st, &k, 1, pool, OBJ, &r, &ok);
        assert_true(ok);
    }
    free(pool);
}

/* Which of ns_obj<0..n) the removals name (by identity), and by what reason. */
static size_t match(const l3_removal *rm, size_t got, const char *ns, size_t n, uint32_t reason, bool *hit)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char key[64];
        key_of(key, sizeof key, ns, i);
        uint8_t id[L3_KEY_ID_BYTES];
        l3_key_id_bytes(key, strlen(key), id);
        for (size_t k = 0; k < got; k++)
            if (memcmp(rm[k].key_id, id, sizeof id) == 0) {
                assert_int_equal(rm[k].reason, reason);
                assert_false(hit[i]); /* announced once */
                hit[i] = true;
                m++;
            }
    }
    return m;
}

static void every_evicted_object_is_announced_once_to_every_handle(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "feedev");
    l3_slab_options o = slab_count_options(path, 6, L3_ENGINE_AUTO);
    o.admission = L3_ADMISSION_ALL;
    l3_slabstore *s = open_test_store(&o), *t = open_test_store(&o);
    uint64_t cs = l3_slabstore_removal_start(s, false), ct = l3_slabstore_removal_start(t, false);
    enum { N = 300 };
    put_n(l3_slabstore_store(s), "ev", 0, N);
    l3_removal *rs = calloc(N, sizeof *rs), *rt = calloc(N, sizeof *rt);
    uint64_t ms = 0, mt = 0;
    size_t gs = l3_slabstore_removals(s, &cs, rs, N, &ms), gt = l3_slabstore_removals(t, &ct, rt, N, &mt);
    assert_int_equal(ms + mt, 0);
    l3_slab_stats st;
    l3_slabstore_stats(t, &st);
    /* Every object put is either still there or announced gone, never both. */
    bool *hit = calloc(N, sizeof *hit);
    assert_int_equal(match(rs, gs, "ev", N, L3_REMOVED_EVICTED, hit), gs);
    assert_true(gs > N / 2);
    assert_int_equal(gs + st.objects, N);
    assert_int_equal(st.removals_by_reason[L3_REMOVED_EVICTED], gs);
    assert_int_equal(st.removals, gs);
    for (size_t i = 0; i < N; i++) {
        char key[64];
        key_of(key, sizeof key, "ev", i);
        assert_int_equal(exists_key(l3_slabstore_store(t), key), !hit[i]);
    }
    /* The other handle read the same removals, in the same order. */
    assert_int_equal(gt, gs);
    for (size_t k = 0; k < gs; k++) {
        assert_int_equal(rt[k].seq, rs[k].seq);
        assert_int_equal(rt[k].seq, k);
        assert_memory_equal(rt[k].key_id, rs[k].key_id, L3_KEY_ID_BYTES);
    }
    assert_string_equal(l3_removal_reason_name(L3_REMOVED_EVICTED), "evicted");
    free(hit);
    free(rs);
    free(rt);
    l3_slabstore_free(t);
    l3_slabstore_free(s);
    unlink(path);
}

static void deletes_and_namespace_removals_are_announced_with_their_reason(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "feedrm");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    put_n(st, "aa", 0, 4);
    put_n(st, "bb", 0, 3);
    put_n(st, "cc", 0, 2);
    uint64_t c = l3_slabstore_removal_start(s, false), missed = 0;
    char key[64];
    key_of(key, sizeof key, "aa", 1);
    const char *k = key;
    bool deleted = false;
    l3_error err;
    assert_int_equal(l3_store_batch_delete(st, &k, 1, &deleted, &err), L3_OK);
    assert_true(deleted);
    l3_removal rm[16];
    bool hit[4] = { false };
    assert_int_equal(l3_slabstore_removals(s, &c, rm, 16, &missed), 1);
    assert_int_equal(match(rm, 1, "aa", 4, L3_REMOVED_DELETED, hit), 1);
    assert_true(hit[1]);
    /* A namespace removed: each of its objects, and nothing else. */
    assert_true(l3_store_remove_by_prefix(st, "bb"));
    memset(hit, 0, sizeof hit);
    assert_int_equal(l3_slabstore_removals(s, &c, rm, 16, &missed), 3);
    assert_int_equal(match(rm, 3, "bb", 3, L3_REMOVED_NAMESPACE, hit), 3);
    /* Everything removed at once (one epoch bump): what was left, each announced. */
    assert_true(l3_store_remove_by_prefix(st, ""));
    assert_int_equal(l3_slabstore_removals(s, &c, rm, 16, &missed), 5);
    memset(hit, 0, sizeof hit);
    assert_int_equal(match(rm, 5, "aa", 4, L3_REMOVED_NAMESPACE, hit), 3);
    memset(hit, 0, sizeof hit);
    assert_int_equal(match(rm, 5, "cc", 2, L3_REMOVED_NAMESPACE, hit), 2);
    assert_int_equal(missed, 0);
    /* A reader from the oldest sees all nine, in order. */
    uint64_t old = l3_slabstore_removal_start(s, true);
    assert_int_equal(l3_slabstore_removals(s, &old, rm, 16, &missed), 9);
    for (uint64_t i = 0; i < 9; i++)
        assert_int_equal(rm[i].seq, i);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.removals_by_reason[L3_REMOVED_DELETED], 1);
    assert_int_equal(stats.removals_by_reason[L3_REMOVED_NAMESPACE], 8);
    l3_slabstore_free(s);
    /* Closed: nothing to read, no crash. */
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(removals_are_read_in_order_and_a_reader_behind_is_told_how_many_it_missed),
        cmocka_unit_test(a_lapped_reader_never_reads_a_torn_removal),
        cmocka_unit_test(every_evicted_object_is_announced_once_to_every_handle),
        cmocka_unit_test(deletes_and_namespace_removals_are_announced_with_their_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
