/* Concurrency stress: several threads submit and cancel while another
 * polls, for a bounded time, over a store whose calls take random time.
 * Every accepted operation completes exactly once, facts are well formed,
 * the counters add up and the executor closes cleanly. Run under TSan. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MAX_OPS 100000
#define SECONDS 1.5
#define BLOCKS 128 /* LCM blocks: each in-flight op holds its own, as a scheduler does */

static l3_host_layout stress_layout(void)
{
    l3_host_layout l = test_layout(1, 0, 0);
    l.num_lcm_blocks = BLOCKS;
    return l;
}

typedef struct shared {
    harness *h;
    pthread_mutex_t mu;
    uint64_t next_id;
    size_t inflight;
    unsigned char state[MAX_OPS]; /* 0 never, 1 submitted, 2 completed */
    int32_t held[MAX_OPS][3];     /* the blocks an op holds until it completes */
    size_t held_n[MAX_OPS];
    bool block_busy[BLOCKS + 1];
    atomic_bool stop;
    atomic_int bad;
    size_t submitted, completed, credit_refusals, cancels;
} shared;

static unsigned rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static l3_status slow_get(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                          const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    l3_memstore *m = ctx;
    usleep((unsigned)(rand() % 300));
    l3_store *s = l3_memstore_store(m);
    return s->ops->batch_get_into(s, keys, n, host, ranges, r, err);
}

static l3_status slow_put(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                          const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    l3_memstore *m = ctx;
    usleep((unsigned)(rand() % 300));
    l3_store *s = l3_memstore_store(m);
    return s->ops->batch_put_from(s, keys, n, host, ranges, r, err);
}

static void *submitter(void *arg)
{
    shared *sh = arg;
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    static const char *hashes[] = { "a", "b", "c", "d", "e", "f", "g", "h" };
    while (!atomic_load(&sh->stop)) {
        l3_storage_key keys[3];
        int32_t blocks[3];
        size_t n = 1 + rnd(&seed) % 3;
        l3_op_kind kinds[] = { L3_OP_QUERY, L3_OP_GET, L3_OP_PUT };
        pthread_mutex_lock(&sh->mu);
        size_t got = 0;
        for (int32_t b = 1 + (int32_t)(rnd(&seed) % BLOCKS), tries = 0; got < n && tries < BLOCKS;
             tries++, b = b % BLOCKS + 1)
            if (!sh->block_busy[b])
                blocks[got++] = b;
        for (size_t i = 0; i < n; i++)
            keys[i] = (l3_storage_key){ rnd(&seed) % 2, hashes[rnd(&seed) % 8], 0 };
        if (got == n && sh->next_id + 2 < MAX_OPS) {
            l3_operation ops[2];
            size_t nops = 0;
            uint64_t id = ++sh->next_id;
            ops[nops++] = (l3_operation){ .kind = kinds[rnd(&seed) % 3], .op_id = id, .keys = keys,
                                          .num_keys = n, .host_blocks = blocks, .num_host_blocks = n };
            if (rnd(&seed) % 4 == 0) /* cancel a recent one, maybe itself */
                ops[nops++] = cancel_op(id - rnd(&seed) % 4);
            l3_error err;
            l3_status st = l3_executor_submit(sh->h->executor, ops, nops, &err);
            if (st == L3_OK) {
                for (size_t i = 0; i < n; i++) {
                    sh->block_busy[blocks[i]] = true;
                    sh->held[id][i] = blocks[i];
                }
                sh->held_n[id] = n;
                sh->state[id] = 1;
                sh->inflight++;
                sh->submitted++;
                sh->cancels += nops - 1;
            } else if (st == L3_ECREDITS) {
                sh->credit_refusals++; /* the scheduler would have waited */
            } else {
                atomic_fetch_add(&sh->bad, 1);
            }
        }
        pthread_mutex_unlock(&sh->mu);
        usleep(rnd(&seed) % 100);
    }
    return NULL;
}

static void drain(shared *sh)
{
    l3_poll p;
    assert_int_equal(l3_executor_poll(sh->h->executor, &p, NULL), L3_OK);
    pthread_mutex_lock(&sh->mu);
    for (size_t i = 0; i < p.num_completions; i++) {
        l3_completion *c = &p.completions[i];
        if (c->op_id >= MAX_OPS || sh->state[c->op_id] != 1 || !c->retired) {
            atomic_fetch_add(&sh->bad, 1);
            continue;
        }
        for (size_t k = 0; k < c->num_keys; k++)
            if (c->success[k] && c->object_failures[k])
                atomic_fetch_add(&sh->bad, 1);
        sh->state[c->op_id] = 2;
        for (size_t k = 0; k < sh->held_n[c->op_id]; k++)
            sh->block_busy[sh->held[c->op_id][k]] = false; /* retired: the blocks are free */
        sh->inflight--;
        sh->completed++;
    }
    pthread_mutex_unlock(&sh->mu);
    l3_poll_release(&p);
}

static void *poller(void *arg)
{
    shared *sh = arg;
    while (!atomic_load(&sh->stop)) {
        drain(sh);
        usleep(50);
    }
    return NULL;
}

static void run_stress(harness *h)
{
    shared *sh = calloc(1, sizeof *sh);
    sh->h = h;
    pthread_mutex_init(&sh->mu, NULL);
    pthread_t subs[3], pol;
    for (int i = 0; i < 3; i++)
        pthread_create(&subs[i], NULL, submitter, sh);
    pthread_create(&pol, NULL, poller, sh);
    usleep((useconds_t)(SECONDS * 1e6));
    atomic_store(&sh->stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(subs[i], NULL);
    pthread_join(pol, NULL);
    double deadline = l3_monotonic_seconds() + 10;
    while (sh->inflight && l3_monotonic_seconds() < deadline) {
        drain(sh);
        usleep(1000);
    }
    assert_int_equal(sh->inflight, 0);
    assert_int_equal(atomic_load(&sh->bad), 0);
    assert_int_equal(sh->completed, sh->submitted);
    assert_true(sh->submitted > 100);
    l3_snapshot snap;
    l3_executor_snapshot(h->executor, &snap);
    double accepted = 0, completed = 0;
    for (int k = 0; k < 3; k++) {
        accepted += l3_snapshot_event(&snap.operations[k], "accepted");
        completed += l3_snapshot_event(&snap.operations[k], "completed");
        for (int p = 0; p < L3_NUM_PHASES; p++)
            assert_true(snap.operations[k].operations[p] == 0);
    }
    assert_true(accepted == (double)sh->submitted && completed == accepted);
    assert_true(l3_executor_is_idle(h->executor));
    fprintf(stderr, "stress: %zu operations, %zu cancels, %zu credit refusals\n", sh->submitted,
            sh->cancels, sh->credit_refusals);
    pthread_mutex_destroy(&sh->mu);
    free(sh);
    assert_int_equal(harness_close(h, 5), L3_OK);
}

static void many_submitters_cancellers_and_a_poller_over_a_slow_store(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    store->get = slow_get;
    store->put = slow_put;
    store->ctx = store->memory;
    l3_executor_config c = CONFIG;
    c.failure_threshold = 1000;
    harness *h = harness_start(store, c, stress_layout(), l3_monotonic_clock());
    run_stress(h);
    harness_free(h);
}

static void many_submitters_cancellers_and_a_poller_over_the_disk_store(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "stress-exec");
    l3_slab_options o = test_options(path, 16ull << 20, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    harness *h = harness_start_raw(l3_slabstore_store(s), CONFIG, stress_layout(),
                                   l3_monotonic_clock());
    run_stress(h);
    harness_free(h);
    unlink(path);
}

static void a_waiter_wakes_when_a_completion_is_queued(void **state)
{
    (void)state;
    harness *h = harness_new(test_store_new(NULL), CONFIG);
    /* Nothing queued: it times out, false. */
    double t0 = l3_monotonic_seconds();
    assert_false(l3_executor_wait(h->executor, 0.05));
    assert_true(l3_monotonic_seconds() - t0 >= 0.04);
    l3_storage_key k = key("w");
    l3_operation q = query(1, &k, 1);
    submit_ok(h, &q, 1);
    assert_true(l3_executor_wait(h->executor, 3.0));
    /* Still there until a poll takes it. */
    assert_true(l3_executor_wait(h->executor, 0.0));
    assert_int_equal(harness_wait(h, 1)[0].op_id, 1);
    assert_false(l3_executor_wait(h->executor, 0.0));
    harness_free(h);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_waiter_wakes_when_a_completion_is_queued),
        cmocka_unit_test(many_submitters_cancellers_and_a_poller_over_a_slow_store),
        cmocka_unit_test(many_submitters_cancellers_and_a_poller_over_the_disk_store),
    };
    return cmocka_run_group_tests_name("stress", tests, NULL, NULL);
}
