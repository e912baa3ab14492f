/* The read-first gate (store/slab/gate.h): over its state in memory, the
 * rule (one put wave at a time beside gets, any number without them), its
 * longest wait and a dead process's counts; through the store, a put wave
 * that waits while a get is in flight (issue 48: gets under a put stream). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "harness.h"
#include "gate.h"
#include "slab.h"
#include "slabstore.h"
#include "store_util.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void nap_ms(int ms) { usleep((useconds_t)ms * 1000u); }

/* A writer on a thread: enters the gate as process slot `me`. */
typedef struct writer {
    l3_gate *g;
    int me;
    atomic_bool entered;
    bool open;
    pthread_t t;
} writer;

static void *writer_main(void *arg)
{
    writer *w = arg;
    w->open = l3_gate_write_begin(w->g, w->me);
    atomic_store(&w->entered, true);
    return NULL;
}

static void writer_start(writer *w, l3_gate *g, int me)
{
    *w = (writer){ .g = g, .me = me };
    assert_int_equal(pthread_create(&w->t, NULL, writer_main, w), 0);
}

static void writer_join(writer *w) { assert_int_equal(pthread_join(w->t, NULL), 0); }

static void without_gets_every_wave_passes(void **state)
{
    (void)state;
    l3_gate *g = calloc(1, sizeof *g);
    for (int i = 0; i < 3; i++)
        assert_true(l3_gate_write_begin(g, 0));
    assert_int_equal(atomic_load(&g->writes), 3);
    assert_int_equal(atomic_load(&g->waits), 0);
    for (int i = 0; i < 3; i++)
        l3_gate_write_end(g, 0);
    assert_int_equal(atomic_load(&g->writes), 0);
    free(g);
}

static void beside_a_get_one_wave_writes_at_a_time(void **state)
{
    (void)state;
    l3_gate *g = calloc(1, sizeof *g);
    l3_gate_read_begin(g, 1);
    assert_true(l3_gate_write_begin(g, 0)); /* the first passes */
    writer b;
    writer_start(&b, g, 2);
    nap_ms(30);
    assert_false(atomic_load(&b.entered)); /* the second waits for the first */
    assert_int_equal(atomic_load(&g->waiters), 1);
    l3_gate_write_end(g, 0);
    writer_join(&b);
    assert_true(b.open);
    assert_int_equal(atomic_load(&g->writes), 1);
    assert_int_equal(atomic_load(&g->waits), 1);
    assert_int_equal(atomic_load(&g->forced), 0);
    l3_gate_write_end(g, 2);
    l3_gate_read_end(g, 1);
    free(g);
}

/* The try that never sleeps (a driver's): false while the gate is closed,
 * counting the wave's wait once; true once the wave ahead leaves (open);
 * true, forced, once its deadline has passed. */
static void a_try_at_the_gate_comes_back_until_it_opens_or_its_wait_runs_out(void **state)
{
    (void)state;
    l3_gate *g = calloc(1, sizeof *g);
    l3_gate_read_begin(g, 1);
    assert_true(l3_gate_write_begin(g, 0));
    uint64_t until = 0;
    bool open = true;
    assert_false(l3_gate_write_try(g, 2, &until, &open));
    assert_true(until > 0);
    assert_false(l3_gate_write_try(g, 2, &until, &open));
    assert_int_equal(atomic_load(&g->waits), 1); /* one wave: one wait */
    assert_int_equal(atomic_load(&g->writes), 1);
    l3_gate_write_end(g, 0);
    assert_true(l3_gate_write_try(g, 2, &until, &open));
    assert_true(open);
    assert_int_equal(atomic_load(&g->writes), 1);
    uint64_t late = 0;
    assert_false(l3_gate_write_try(g, 3, &late, &open)); /* wave 2 writes beside the get */
    late = 1; /* its deadline long past */
    assert_true(l3_gate_write_try(g, 3, &late, &open));
    assert_false(open);
    assert_int_equal(atomic_load(&g->forced), 1);
    assert_int_equal(atomic_load(&g->writes), 2);
    assert_int_equal(atomic_load(&g->proc_writes[3]), 1);
    l3_gate_write_end(g, 2);
    l3_gate_write_end(g, 3);
    l3_gate_read_end(g, 1);
    free(g);
}

static void the_last_get_ending_opens_the_gate(void **state)
{
    (void)state;
    l3_gate *g = calloc(1, sizeof *g);
    l3_gate_read_begin(g, 1);
    l3_gate_read_begin(g, 1);
    assert_true(l3_gate_write_begin(g, 0));
    writer b;
    writer_start(&b, g, 2);
    nap_ms(20);
    l3_gate_read_end(g, 1);
    nap_ms(20);
    assert_false(atomic_load(&b.entered)); /* one get still in flight */
    l3_gate_read_end(g, 1);
    writer_join(&b); /* the first wave still writing: no get, so it passes */
    assert_true(b.open);
    assert_int_equal(atomic_load(&g->writes), 2);
    l3_gate_write_end(g, 0);
    l3_gate_write_end(g, 2);
    free(g);
}

static void beside_a_get_a_wave_submits_a_few_requests_at_a_time(void **state)
{
    (void)state;
    l3_gate *g = calloc(1, sizeof *g);
    assert_int_equal(l3_gate_write_step(g, 16), 16); /* no get: the whole wave at once */
    l3_gate_read_begin(g, 3);
    assert_int_equal(l3_gate_write_step(g, 16), L3_GATE_REQUESTS_UNDER_READS);
    assert_int_equal(l3_gate_write_step(g, 1), 1);
    l3_gate_read_end(g, 3);
    assert_int_equal(l3_gate_write_step(g, 14), 14); /* the rest at once when the gets have ended */
    free(g);
}

/* A dead process's get and wave hold the gate: a wave waits the longest
 * wait, then goes on, saying so; once the dead process's counts are given
 * back the gate is open at once. */
static void a_dead_process_holds_the_gate_no_longer_than_the_longest_wait(void **state)
{
    (void)state;
    l3_gate *g = calloc(1, sizeof *g);
    l3_gate_read_begin(g, 7);
    assert_true(l3_gate_write_begin(g, 7)); /* then slot 7 dies */
    double t0 = now_s();
    assert_false(l3_gate_write_begin(g, 0));
    assert_true(now_s() - t0 >= L3_GATE_WAIT_MS / 1000.0 * 0.99);
    assert_int_equal(atomic_load(&g->forced), 1);
    assert_int_equal(atomic_load(&g->writes), 2);
    l3_gate_release_proc(g, 7);
    assert_int_equal(atomic_load(&g->reads), 0);
    assert_int_equal(atomic_load(&g->writes), 1); /* slot 0's own */
    assert_true(l3_gate_write_begin(g, 0));
    assert_int_equal(atomic_load(&g->waits), 1);
    l3_gate_write_end(g, 0);
    l3_gate_write_end(g, 0);
    free(g);
}

/* ---- through the store ---- */

#define OBJ (64u * 1024u)
#define WAVE 4u

/* A store of 64 MiB admitting everything, on the engine the test's state
 * names, at a fresh path (into path[512]); waves of `batch_keys` keys
 * (0: the tests' default). */
static l3_slabstore *gate_store(void **state, const char *name, char *path, unsigned batch_keys)
{
    temp_store_path(path, 512, name);
    l3_slab_options o = test_options(path, 64ull << 20, *(l3_engine_kind *)*state);
    o.admission = L3_ADMISSION_ALL;
    if (batch_keys)
        o.batch_keys = batch_keys;
    return open_test_store(&o);
}

typedef struct batch {
    l3_slabstore *s;
    const char *keys[WAVE];
    char names[WAVE][32];
    uint8_t *pool;
    bool ok[WAVE], failed[WAVE];
    bool get;
    pthread_t t;
} batch;

static void *batch_main(void *arg)
{
    batch *b = arg;
    l3_range ranges[WAVE];
    for (size_t i = 0; i < WAVE; i++)
        ranges[i] = (l3_range){ i * OBJ, OBJ };
    if (b->get)
        assert_int_equal(get_keys(l3_slabstore_store(b->s), b->keys, WAVE, b->pool, WAVE * OBJ, ranges, b->ok,
                                  b->failed),
                         L3_OK);
    else
        put_keys(l3_slabstore_store(b->s), b->keys, WAVE, b->pool, WAVE * OBJ, ranges, b->ok);
    return NULL;
}

static void batch_start(batch *b, l3_slabstore *s, const char *prefix, bool get)
{
    *b = (batch){ .s = s, .pool = aligned_pool(WAVE * OBJ), .get = get };
    for (size_t i = 0; i < WAVE; i++) {
        snprintf(b->names[i], sizeof b->names[i], "%s-%zu", prefix, i);
        b->keys[i] = b->names[i];
        if (!get)
            fill_pattern(b->pool + i * OBJ, OBJ, (uint32_t)(i + 1) * 977u + (uint32_t)prefix[0]);
    }
    assert_int_equal(pthread_create(&b->t, NULL, batch_main, b), 0);
}

static void batch_join(batch *b)
{
    assert_int_equal(pthread_join(b->t, NULL), 0);
    for (size_t i = 0; i < WAVE; i++)
        assert_true(b->ok[i]);
}

static void wait_for(_Atomic uint32_t *count, uint32_t want)
{
    for (int i = 0; i < 5000 && atomic_load(count) < want; i++)
        nap_ms(1);
    assert_true(atomic_load(count) >= want);
}

/* A get whose read the device holds back 300 ms is in flight; a put wave
 * whose first write is held back too is writing; a second put wave waits
 * at the gate until one of them ends or its longest wait (100 ms) has
 * passed, and then writes. (Held back 60 ms, the get could end before the
 * second wave reached the gate under a loaded TSan run.) Every key is
 * served with its bytes. (Without the gate both waves write at once.) */
static void a_put_wave_waits_while_a_get_is_in_flight(void **state)
{
    char path[512];
    l3_slabstore *s = gate_store(state, "gate", path, 0);
    batch a, b, c, first;
    batch_start(&first, s, "held", false);
    batch_join(&first);
    l3_gate *g = &s->sh->gate;
    l3_slabstore_set_fault(s, &(l3_io_fault){ .kind = L3_FAULT_DELAY, .count = 2, .shift = 300000 });
    batch_start(&c, s, "held", true); /* its first read: the first fault */
    wait_for(&g->reads, 1);
    nap_ms(5);
    batch_start(&a, s, "a", false); /* its first write: the second */
    wait_for(&g->writes, 1);
    batch_start(&b, s, "b", false);
    batch_join(&a);
    batch_join(&b);
    batch_join(&c);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    l3_slabstore_set_fault(s, NULL);
    assert_true(st.gate_waits >= 1);
    assert_int_equal(st.io_faults, 2);
    for (size_t i = 0; i < WAVE; i++)
        assert_true(memcmp(c.pool + i * OBJ, first.pool + i * OBJ, OBJ) == 0);
    batch check;
    batch_start(&check, s, "b", true);
    batch_join(&check);
    for (size_t i = 0; i < WAVE; i++)
        assert_true(memcmp(check.pool + i * OBJ, b.pool + i * OBJ, OBJ) == 0);
    assert_int_equal(atomic_load(&g->reads), 0);
    assert_int_equal(atomic_load(&g->writes), 0);
    l3_slabstore_free(s);
    unlink(path);
    free(first.pool), free(a.pool), free(b.pool), free(c.pool), free(check.pool);
}

/* A put of two waves polled as a driver polls it, beside a get in flight
 * (counted by hand) and a wave of another process holding the gate: its
 * first wave waits out the longest wait and goes on, forced; its second,
 * finding the gate held again, waits its own time rather than going on at
 * once on its first wave's deadline (a job that kept that deadline forced
 * every later wave beside gets). */
static void each_wave_of_a_driven_put_waits_its_own_time(void **state)
{
    char path[512];
    l3_slabstore *s = gate_store(state, "gate-waves", path, WAVE);
    l3_store *st = l3_slabstore_store(s);
    l3_gate *g = &s->sh->gate;
    enum { N = 2 * WAVE };
    uint8_t *pool = aligned_pool(N * OBJ);
    char names[N][32];
    const char *keys[N];
    l3_range ranges[N];
    bool ok[N], failed[N];
    for (size_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "wave-%zu", i);
        keys[i] = names[i];
        ranges[i] = (l3_range){ i * OBJ, OBJ };
        fill_pattern(pool + i * OBJ, OBJ, (uint32_t)i + 70);
    }
    l3_gate_read_begin(g, 5);
    assert_true(l3_gate_write_begin(g, 6)); /* another process's wave */
    l3_io_result res = { .success = ok, .object_failures = failed };
    l3_store_put_job *job;
    l3_error err;
    assert_int_equal(st->ops->put_begin(st, keys, N, (l3_host_buffer){ pool, N * OBJ }, ranges, &res, -1, &job, &err),
                     L3_OK);
    double wake;
    assert_false(st->ops->put_poll(job, &wake)); /* the first wave at the gate */
    nap_ms(L3_GATE_WAIT_MS + 20);
    for (int i = 0; i < 2000 && atomic_load(&g->forced) == 0; i++) {
        assert_false(st->ops->put_poll(job, &wake));
        nap_ms(1);
    }
    assert_int_equal(atomic_load(&g->forced), 1); /* the first wave went on */
    for (int i = 0; i < 5000 && atomic_load(&g->waits) < 2; i++) { /* its writes reaped, the second wave tries */
        assert_false(st->ops->put_poll(job, &wake));
        nap_ms(1);
    }
    assert_int_equal(atomic_load(&g->waits), 2);
    assert_int_equal(atomic_load(&g->forced), 1); /* the second waits */
    assert_int_equal(atomic_load(&g->writes), 1);
    l3_gate_write_end(g, 6);
    bool done = false;
    for (int i = 0; i < 5000 && !done; i++) {
        done = st->ops->put_poll(job, &wake);
        if (!done)
            nap_ms(1);
    }
    assert_true(done);
    assert_int_equal(st->ops->put_end(job, &err), L3_OK);
    for (size_t i = 0; i < N; i++)
        assert_true(ok[i]);
    assert_int_equal(atomic_load(&g->forced), 1);
    assert_int_equal(atomic_load(&g->waits), 2);
    l3_gate_read_end(g, 5);
    l3_slabstore_free(s);
    unlink(path);
    free(pool);
}

/* A driven put of HELD keys, one wave, taken into the gate (its first
 * window sent) with no get in flight. */
enum { HELD = L3_GATE_REQUESTS_ALONE + 16 };
typedef struct held_put {
    char path[512];
    l3_slabstore *s;
    l3_store *st;
    l3_gate *g;
    uint8_t *pool;
    char names[HELD][32];
    const char *keys[HELD];
    l3_range ranges[HELD];
    bool ok[HELD], failed[HELD];
    l3_io_result res;
    l3_store_put_job *job;
} held_put;

static held_put *held_put_start(void **state, const char *name)
{
    held_put *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->s = gate_store(state, name, h->path, HELD);
    h->st = l3_slabstore_store(h->s);
    h->g = &h->s->sh->gate;
    h->pool = aligned_pool(HELD * OBJ);
    for (size_t i = 0; i < HELD; i++) {
        snprintf(h->names[i], sizeof h->names[i], "%s-%zu", name, i);
        h->keys[i] = h->names[i];
        h->ranges[i] = (l3_range){ i * OBJ, OBJ };
        fill_pattern(h->pool + i * OBJ, OBJ, (uint32_t)i + 90);
    }
    h->res = (l3_io_result){ .success = h->ok, .object_failures = h->failed };
    l3_error err;
    assert_int_equal(h->st->ops->put_begin(h->st, h->keys, HELD, (l3_host_buffer){ h->pool, HELD * OBJ }, h->ranges,
                                           &h->res, -1, &h->job, &err),
                     L3_OK);
    double wake;
    for (int i = 0; i < 1000 && atomic_load(&h->g->writes) == 0; i++)
        assert_false(h->st->ops->put_poll(h->job, &wake));
    assert_int_equal(atomic_load(&h->g->writes), 1);
    return h;
}

/* Every key of the ended put written; the store closed. */
static void held_put_finish(held_put *h)
{
    for (size_t i = 0; i < HELD; i++)
        assert_true(h->ok[i]);
    l3_slabstore_free(h->s);
    unlink(h->path);
    free(h->pool);
    free(h);
}

/* A driven wave that went in with no get in flight keeps the gate's
 * window of its writes in flight (L3_GATE_REQUESTS_ALONE among the waves
 * in the gate); a get that begins finds those ahead of it, and the wave
 * sends none more while the get is in flight (L3_GATE_WAIT_MS at most):
 * here it is not done 30 ms into the get, polled every 0.1 ms, though
 * its writes alone take a few ms, and ends once the get has. */
static void a_driven_wave_holds_its_writes_while_a_get_is_in_flight(void **state)
{
    held_put *h = held_put_start(state, "hold");
    double wake;
    l3_gate_read_begin(h->g, 5); /* another process's get */
    for (double t0 = l3_monotonic_seconds(); l3_monotonic_seconds() - t0 < 0.03;) {
        assert_false(h->st->ops->put_poll(h->job, &wake));
        usleep(100);
    }
    l3_gate_read_end(h->g, 5);
    bool done = false;
    for (int i = 0; i < 5000 && !done; i++) {
        done = h->st->ops->put_poll(h->job, &wake);
        if (!done)
            nap_ms(1);
    }
    assert_true(done);
    l3_error err;
    assert_int_equal(h->st->ops->put_end(h->job, &err), L3_OK);
    assert_int_equal(atomic_load(&h->g->forced), 0);
    held_put_finish(h);
}

/* A driven put held beside a get and then ended by a wait (put_end, as a
 * caller that gives up polling does) writes the rest and ends: the wait
 * takes the hold off. (A wait on a held batch sent nothing: libaio looped
 * for ever, io_uring slept to the I/O timeout and failed the store.) */
static void a_held_put_ended_by_a_wait_writes_the_rest(void **state)
{
    held_put *h = held_put_start(state, "held");
    double wake;
    l3_gate_read_begin(h->g, 5);
    for (int i = 0; i < 20; i++) {
        assert_false(h->st->ops->put_poll(h->job, &wake)); /* held */
        usleep(100);
    }
    double t0 = l3_monotonic_seconds();
    l3_error err;
    assert_int_equal(h->st->ops->put_end(h->job, &err), L3_OK);
    assert_true(l3_monotonic_seconds() - t0 < 5.0);
    l3_gate_read_end(h->g, 5);
    held_put_finish(h);
}

/* A put whose sequence lease cannot be written (the superblock's write
 * fails) fails, and leaves the gate as it found it: no wave of it entered,
 * so none leaves. (A job that closed the wave it never opened took a
 * write the gate had never counted, and its counts wrapped.) */
static void a_put_whose_lease_fails_leaves_the_gate_as_it_was(void **state)
{
    char path[512];
    l3_slabstore *s = gate_store(state, "gate-lease", path, 0);
    l3_gate *g = &s->sh->gate;
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(OBJ);
    const char *keys[1] = { "lease" };
    l3_range range = { 0, OBJ };
    bool ok = true, failed = false;
    l3_io_result res = { .success = &ok, .object_failures = &failed };
    l3_error err;
    atomic_store(&s->sh->seq, s->sh->sb.next_seq); /* the lease used up: the next put must write one */
    l3_slabstore_set_fault(s, &(l3_io_fault){ .kind = L3_FAULT_EIO, .ops = 3 });
    assert_int_not_equal(st->ops->batch_put_from(st, keys, 1, (l3_host_buffer){ pool, OBJ }, &range, &res, &err),
                         L3_OK);
    l3_slabstore_set_fault(s, NULL);
    assert_false(ok);
    assert_int_equal(atomic_load(&g->writes), 0);
    assert_int_equal(atomic_load(&g->proc_writes[s->shm.me]), 0);
    l3_slabstore_free(s);
    unlink(path);
    free(pool);
}

int main(void)
{
    static l3_engine_kind uring = L3_ENGINE_IO_URING, aio = L3_ENGINE_LIBAIO;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(without_gets_every_wave_passes),
        cmocka_unit_test(beside_a_get_one_wave_writes_at_a_time),
        cmocka_unit_test(a_try_at_the_gate_comes_back_until_it_opens_or_its_wait_runs_out),
        cmocka_unit_test(the_last_get_ending_opens_the_gate),
        cmocka_unit_test(beside_a_get_a_wave_submits_a_few_requests_at_a_time),
        cmocka_unit_test(a_dead_process_holds_the_gate_no_longer_than_the_longest_wait),
        cmocka_unit_test_prestate(a_put_wave_waits_while_a_get_is_in_flight, &uring),
        cmocka_unit_test_prestate(a_put_wave_waits_while_a_get_is_in_flight, &aio),
        cmocka_unit_test_prestate(each_wave_of_a_driven_put_waits_its_own_time, &uring),
        cmocka_unit_test_prestate(each_wave_of_a_driven_put_waits_its_own_time, &aio),
        cmocka_unit_test_prestate(a_driven_wave_holds_its_writes_while_a_get_is_in_flight, &uring),
        cmocka_unit_test_prestate(a_driven_wave_holds_its_writes_while_a_get_is_in_flight, &aio),
        cmocka_unit_test_prestate(a_held_put_ended_by_a_wait_writes_the_rest, &uring),
        cmocka_unit_test_prestate(a_held_put_ended_by_a_wait_writes_the_rest, &aio),
        cmocka_unit_test_prestate(a_put_whose_lease_fails_leaves_the_gate_as_it_was, &uring),
        cmocka_unit_test_prestate(a_put_whose_lease_fails_leaves_the_gate_as_it_was, &aio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
