/* The asynchronous key-level API (l3_async.h) on the disk store: round
 * trips through the eventfd and drain, per-key results, durable deletes,
 * a full queue, concurrent submitters, close with work in flight, and set
 * batches with put hints (page groups). */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_async.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define OBJ 65536

typedef struct env {
    char path[512];
    l3_slabstore *store;
    l3_async *a;
} env;

static env *start(unsigned workers, size_t max_pending)
{
    env *v = calloc(1, sizeof *v);
    temp_store_path(v->path, sizeof v->path, "async");
    l3_slab_options o = test_options(v->path, 64 * MIB, L3_ENGINE_AUTO);
    assert_int_equal(l3_slabstore_open(&o, &v->store, NULL), L3_OK);
    l3_async_options ao = { workers, max_pending, 0 };
    assert_int_equal(l3_async_open(l3_slabstore_store(v->store), &ao, &v->a, NULL), L3_OK);
    return v;
}

static void stop(env *v, bool keep_file)
{
    l3_async_free(v->a);
    l3_slabstore_free(v->store);
    if (!keep_file)
        unlink(v->path);
    free(v);
}

/* Wait on the eventfd until completion `id` is drained; its ok and results. */
static bool wait_for(env *v, uint64_t id, bool *results, size_t n)
{
    struct pollfd p = { .fd = l3_async_event_fd(v->a), .events = POLLIN };
    for (int rounds = 0; rounds < 300; rounds++) {
        poll(&p, 1, 100);
        l3_async_completion c[8];
        size_t got = l3_async_drain(v->a, c, 8);
        bool found = false, ok = false;
        for (size_t i = 0; i < got; i++) {
            if (c[i].id == id) {
                found = true;
                ok = c[i].ok;
                assert_int_equal(c[i].n, n);
                memcpy(results, c[i].results, n);
            }
            l3_async_completion_release(&c[i]);
        }
        if (found)
            return ok;
    }
    fail_msg("no completion for %llu", (unsigned long long)id);
    return false;
}

static void round_trips_exists_and_durable_deletes(void **state)
{
    (void)state;
    env *v = start(2, 16);
    uint8_t *pool = aligned_pool(4 * OBJ);
    const char *keys[] = { "as_1", "as_2" };
    void *bufs[] = { pool, pool + OBJ + 100 }; /* the second misaligned */
    size_t lens[] = { OBJ, 5000 };
    fill_pattern(pool, OBJ, 1);
    fill_pattern(pool + OBJ + 100, 5000, 2);
    bool r[2];
    assert_int_equal(l3_async_submit(v->a, L3_ASYNC_SET, 1, keys, 2, bufs, lens, NULL), L3_OK);
    assert_true(wait_for(v, 1, r, 2) && r[0] && r[1]);
    void *outs[] = { pool + 2 * OBJ, pool + 3 * OBJ + 1 };
    assert_int_equal(l3_async_submit(v->a, L3_ASYNC_GET, 2, keys, 2, outs, lens, NULL), L3_OK);
    assert_true(wait_for(v, 2, r, 2) && r[0] && r[1]);
    assert_memory_equal(pool + 2 * OBJ, pool, OBJ);
    assert_memory_equal(pool + 3 * OBJ + 1, pool + OBJ + 100, 5000);
    const char *probe[] = { "as_1", "as_none" };
    assert_int_equal(l3_async_submit(v->a, L3_ASYNC_DELETE, 3, probe, 2, NULL, NULL, NULL), L3_OK);
    assert_true(wait_for(v, 3, r, 2) && r[0] && !r[1]);
    assert_int_equal(l3_async_submit(v->a, L3_ASYNC_EXISTS, 4, keys, 2, NULL, NULL, NULL), L3_OK);
    assert_true(wait_for(v, 4, r, 2) && !r[0] && r[1]);
    l3_async_stats st;
    l3_async_get_stats(v->a, &st);
    assert_int_equal(st.completed, 4);
    assert_true(st.bounced_keys >= 1);
    char path[512];
    snprintf(path, sizeof path, "%s", v->path);
    stop(v, true);
    /* The delete holds through a crash scan: a child opens the store and
     * exits without closing, so the next open rebuilds from the headers. */
    l3_slab_options o = test_options(path, 64 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    pid_t pid = fork();
    if (pid == 0)
        _exit(l3_slabstore_open(&o, &s, NULL) == L3_OK ? 0 : 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    assert_false(exists_key(l3_slabstore_store(s), "as_1"));
    assert_true(exists_key(l3_slabstore_store(s), "as_2"));
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_false(stats.opened_from_checkpoint);
    l3_slabstore_free(s);
    unlink(path);
    free(pool);
}

static void a_full_queue_is_refused_and_close_retires_everything(void **state)
{
    (void)state;
    env *v = start(1, 2);
    uint8_t *pool = aligned_pool(64 * OBJ);
    size_t accepted = 0, refused = 0;
    char names[64][16];
    for (int i = 0; i < 64; i++) {
        snprintf(names[i], sizeof names[i], "fq_%d", i);
        const char *k = names[i];
        void *b = pool + (size_t)i * OBJ;
        size_t len = OBJ;
        l3_error err;
        l3_status st = l3_async_submit(v->a, L3_ASYNC_SET, (uint64_t)i, &k, 1, &b, &len, &err);
        assert_true(st == L3_OK || st == L3_EBUSY);
        accepted += st == L3_OK;
        refused += st == L3_EBUSY;
    }
    assert_true(refused > 0 && accepted > 0);
    l3_async_close(v->a); /* runs every accepted batch before it returns */
    l3_async_stats st;
    l3_async_get_stats(v->a, &st);
    assert_int_equal(st.completed, accepted);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.rejected_full, refused);
    const char *k = "late";
    assert_int_equal(l3_async_submit(v->a, L3_ASYNC_EXISTS, 99, &k, 1, NULL, NULL, NULL), L3_ECLOSED);
    l3_async_completion c[64];
    assert_int_equal(l3_async_drain(v->a, c, 64), accepted); /* still drainable */
    for (size_t i = 0; i < accepted; i++) {
        assert_true(c[i].ok);
        l3_async_completion_release(&c[i]);
    }
    stop(v, false);
    free(pool);
}

typedef struct submitter {
    env *v;
    int t;
    uint8_t *pool;
} submitter;

static void *submit_many(void *arg)
{
    submitter *s = arg;
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "cs_%d_%d", s->t, i);
        const char *k = name;
        void *b = s->pool + (size_t)i * 4096;
        size_t len = 4096;
        while (l3_async_submit(s->v->a, L3_ASYNC_SET, (uint64_t)(s->t * 100 + i), &k, 1, &b, &len, NULL) == L3_EBUSY)
            usleep(1000);
    }
    return NULL;
}

static void concurrent_submitters_each_get_their_completions(void **state)
{
    (void)state;
    env *v = start(4, 8);
    submitter s[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (submitter){ v, i, aligned_pool(20 * 4096) };
        fill_pattern(s[i].pool, 20 * 4096, (uint32_t)i);
        pthread_create(&t[i], NULL, submit_many, &s[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    l3_async_close(v->a);
    bool seen[400] = { false };
    l3_async_completion c[16];
    for (size_t got; (got = l3_async_drain(v->a, c, 16));)
        for (size_t i = 0; i < got; i++) {
            assert_true(c[i].ok && c[i].results[0]);
            assert_false(seen[c[i].id]);
            seen[c[i].id] = true;
            l3_async_completion_release(&c[i]);
        }
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 20; k++)
            assert_true(seen[i * 100 + k]);
    for (int i = 0; i < 4; i++)
        free(s[i].pool);
    stop(v, false);
}

/* Submit rank `rank`'s set of its shards of pages 0-3 ("rank<r>_p<i>"),
 * each page's group id 11 + i, and wait for it. The caller's groups are
 * overwritten right after the submit: the batch must have copied them. */
static void set_rank_pages(env *v, int rank, uint8_t *pool)
{
    char names[4][16];
    const char *keys[4];
    void *bufs[4];
    size_t lens[4];
    uint64_t groups[4];
    for (int p = 0; p < 4; p++) {
        snprintf(names[p], sizeof names[p], "rank%d_p%d", rank, p);
        keys[p] = names[p];
        bufs[p] = pool + (size_t)(rank * 4 + p) * OBJ;
        lens[p] = OBJ;
        groups[p] = 11u + (uint64_t)p;
    }
    l3_put_hints hints = { .groups = groups, .group_objects = 2 };
    assert_int_equal(l3_async_submit_hinted(v->a, L3_ASYNC_SET, (uint64_t)rank, keys, 4, bufs, lens, &hints, NULL),
                     L3_OK);
    for (int p = 0; p < 4; p++)
        groups[p] = 100u + 10u * (uint64_t)rank + (uint64_t)p;
    bool r[4];
    assert_true(wait_for(v, (uint64_t)rank, r, 4));
    assert_true(r[0] && r[1] && r[2] && r[3]);
}

/* Two ranks' set batches name each page's shards with one group id: the
 * store holds one group per page (not per object, and not none). */
static void hinted_sets_make_every_rank_s_shard_of_a_page_one_group(void **state)
{
    (void)state;
    env *v = start(2, 16);
    uint8_t *pool = aligned_pool(8 * OBJ);
    fill_pattern(pool, 8 * OBJ, 3);
    set_rank_pages(v, 0, pool);
    set_rank_pages(v, 1, pool);
    l3_slab_stats st;
    l3_slabstore_stats(v->store, &st);
    assert_int_equal(st.objects, 8);
    assert_int_equal(st.groups_live, 4);
    /* Hints belong to set batches only. */
    const char *k = "rank0_p0";
    void *b = pool;
    size_t len = OBJ;
    l3_put_hints hints = { .group_objects = 2 };
    l3_error err;
    assert_int_equal(l3_async_submit_hinted(v->a, L3_ASYNC_GET, 9, &k, 1, &b, &len, &hints, &err), L3_EINVAL);
    stop(v, false);
    free(pool);
}

/* Put `n` 64 KiB objects named ns_obj<i> one at a time. */
static void fill_ns(l3_store *st, const char *ns, size_t n, uint8_t *pool)
{
    for (size_t i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s_obj%zu", ns, i);
        const char *p[1] = { key };
        l3_range r[1] = { { 0, OBJ } };
        bool ok[1];
        put_keys(st, p, 1, pool, OBJ, r, ok);
    }
}

/* With lease_seconds, an exists batch leases what it finds: the objects
 * survive eviction pressure that takes every slab not leased. */
static void an_exists_with_a_lease_keeps_what_it_found_through_eviction(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "async-lease");
    l3_slab_options o = slab_count_options(path, 4, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_store *st = l3_slabstore_store(s);
    l3_async_options bad = { 1, 4, -1 };
    l3_async *a;
    assert_int_equal(l3_async_open(st, &bad, &a, NULL), L3_EINVAL);
    l3_async_options ao = { 1, 4, 60 };
    assert_int_equal(l3_async_open(st, &ao, &a, NULL), L3_OK);
    env v = { .store = s, .a = a };
    uint8_t *pool = aligned_pool(OBJ);
    size_t per_slab = MIB / (OBJ + 4096);
    fill_ns(st, "old", per_slab, pool); /* the least recent slab */
    fill_ns(st, "mid", per_slab, pool);
    const char *keys[] = { "old_obj0", "old_obj1", "no_such_obj" };
    assert_int_equal(l3_async_submit(a, L3_ASYNC_EXISTS, 7, keys, 3, NULL, NULL, NULL), L3_OK);
    bool found[3];
    assert_true(wait_for(&v, 7, found, 3));
    assert_true(found[0] && found[1] && !found[2]);
    fill_ns(st, "new", 8 * per_slab, pool); /* twice the store's size */
    assert_true(exists_key(st, "old_obj0"));
    assert_true(exists_key(st, "old_obj1"));
    assert_false(exists_key(st, "mid_obj0")); /* not leased: its slab went */
    l3_async_free(a);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trips_exists_and_durable_deletes),
        cmocka_unit_test(a_full_queue_is_refused_and_close_retires_everything),
        cmocka_unit_test(concurrent_submitters_each_get_their_completions),
        cmocka_unit_test(an_exists_with_a_lease_keeps_what_it_found_through_eviction),
        cmocka_unit_test(hinted_sets_make_every_rank_s_shard_of_a_page_one_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
