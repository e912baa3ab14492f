/* Fault injection through the executor on the disk store: EIO, short
 * transfers, -EAGAIN and stalls past io_timeout, with each engine; and the
 * engine's batch reported request by request under a slow device. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine.h"
#include "entries.h"
#include "harness.h"
#include "l3_slabstore.h"
#include "slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define PAGE 65536
#define PAGES 32

typedef struct env {
    char path[512];
    l3_slabstore *store;
    fake_clock *clock;
    harness *h;
    l3_engine_kind kind;
} env;

static l3_host_layout pages_layout(void) { return page_layout(PAGE, PAGES); }

static env *start(l3_engine_kind kind, double io_timeout)
{
    env *v = calloc(1, sizeof *v);
    v->kind = kind;
    temp_store_path(v->path, sizeof v->path, "faults");
    l3_slab_options o = test_options(v->path, 32 * MIB, kind);
    o.io_timeout = io_timeout;
    l3_error err;
    if (l3_slabstore_open(&o, &v->store, &err) != L3_OK)
        fail_msg("open: %s", err.msg);
    v->clock = fake_clock_new(1.0);
    l3_executor_config c = CONFIG;
    c.recovery_interval = 10.0;
    v->h = harness_start_raw(l3_slabstore_store(v->store), c, pages_layout(), fake_clock_of(v->clock));
    return v;
}

static void stop(env *v)
{
    bool leaked = false;
    if (v->h) {
        leaked = harness_close(v->h, 2.0) != L3_OK;
        harness_free(v->h); /* frees the store too, unless leaked */
    }
    if (!leaked)
        unlink(v->path);
    else
        keep_alive(v);
    if (!leaked)
        free(v);
}

static uint64_t next_id = 1;

/* One op over pages [first, first+n) at blocks [1, n]; returns its completion. */
static l3_completion *op(env *v, l3_op_kind kind, int first, int n)
{
    static char hashes[PAGES * 8][16];
    l3_storage_key keys[PAGES];
    int32_t blocks[PAGES];
    for (int i = 0; i < n; i++) {
        snprintf(hashes[first + i], sizeof hashes[0], "p%d", first + i);
        keys[i] = (l3_storage_key){ 0, hashes[first + i], 0 };
        blocks[i] = i + 1;
        if (kind == L3_OP_PUT)
            fill_pattern(v->h->pool + (size_t)i * PAGE, PAGE, (uint32_t)(first + i));
    }
    l3_operation o = { .kind = kind, .op_id = next_id++, .keys = keys, .num_keys = (size_t)n,
                       .host_blocks = blocks, .num_host_blocks = (size_t)n };
    submit_ok(v->h, &o, 1);
    return harness_wait(v->h, 1);
}

/* Every successful key of a get holds exactly its page's bytes. */
static int check_pages(env *v, l3_completion *c, int first)
{
    uint8_t *want = aligned_pool(PAGE);
    int hits = 0;
    for (size_t i = 0; i < c->num_keys; i++) {
        if (!c->success[i])
            continue;
        fill_pattern(want, PAGE, (uint32_t)(first + (int)i));
        assert_memory_equal(v->h->pool + i * PAGE, want, PAGE);
        hits++;
    }
    free(want);
    return hits;
}

static const char *health(env *v)
{
    l3_snapshot s;
    l3_executor_snapshot(v->h->executor, &s);
    return s.health_state;
}

/* A media error: EIO on one object's read fails that key alone, as an
 * object failure (the object is dropped); the others are served and the
 * breaker stays closed. */
static void eio_on_one_objects_read_is_that_keys_object_failure(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    l3_completion *c = op(v, L3_OP_PUT, 0, 4);
    for (int i = 0; i < 4; i++)
        assert_true(c->success[i]);
    uint64_t cursor = l3_slabstore_removal_start(v->store, false), missed = 0;
    l3_io_fault f = { .kind = L3_FAULT_EIO, .ops = 1, .count = 1 };
    l3_slabstore_set_fault(v->store, &f);
    c = op(v, L3_OP_GET, 0, 4);
    assert_true(c->retired);
    int failed = 0;
    for (int i = 0; i < 4; i++) {
        assert_true(c->success[i] != c->object_failures[i]);
        failed += c->object_failures[i];
    }
    assert_int_equal(failed, 1);
    assert_int_equal(check_pages(v, c, 0), 3);
    assert_string_equal(health(v), "healthy");
    l3_slab_stats st;
    l3_slabstore_stats(v->store, &st);
    assert_int_equal(st.io_faults, 1);
    assert_int_equal(st.objects, 3); /* the unreadable one is gone */
    /* ... and the removal feed says so, with why. */
    l3_removal rm[4];
    assert_int_equal(l3_slabstore_removals(v->store, &cursor, rm, 4, &missed), 1);
    assert_int_equal(rm[0].reason, L3_REMOVED_LOST);
    assert_int_equal(st.removals_by_reason[L3_REMOVED_LOST], 1);
    stop(v);
}

/* A device that fails every read fails the batch (a backend failure, no
 * object failure, nothing dropped); the breaker opens and, after its
 * interval, one probe closes it. */
static void a_device_failing_every_read_opens_the_breaker_and_one_probe_closes_it(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    l3_completion *c = op(v, L3_OP_PUT, 0, 4);
    for (int i = 0; i < 4; i++)
        assert_true(c->success[i]);
    l3_io_fault f = { .kind = L3_FAULT_EIO, .ops = 1 };
    l3_slabstore_set_fault(v->store, &f);
    c = op(v, L3_OP_GET, 0, 4);
    assert_true(c->retired);
    for (int i = 0; i < 4; i++) {
        assert_false(c->success[i]);
        assert_false(c->object_failures[i]); /* the device failed, not the object */
    }
    assert_string_equal(health(v), "open");
    /* Open: refused without calling the store. */
    c = op(v, L3_OP_GET, 0, 4);
    assert_false(c->success[0]);
    assert_false(c->object_failures[0]);
    l3_slab_stats st;
    l3_slabstore_stats(v->store, &st);
    uint64_t gets = st.gets;
    l3_slabstore_set_fault(v->store, NULL);
    /* After the interval, one probe: it succeeds and closes the breaker. */
    fake_clock_set(v->clock, 12.0);
    c = op(v, L3_OP_GET, 0, 4);
    assert_int_equal(check_pages(v, c, 0), 4);
    assert_string_equal(health(v), "healthy");
    l3_slabstore_stats(v->store, &st);
    assert_int_equal(st.gets, gets + 1);
    /* The objects were never dropped: an I/O error is not corruption. */
    assert_int_equal(st.objects, 4);
    stop(v);
}

static void eio_on_put_publishes_nothing_and_a_later_put_succeeds(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    l3_io_fault f = { .kind = L3_FAULT_EIO, .ops = 2, .after = 1, .count = 1 };
    l3_slabstore_set_fault(v->store, &f);
    l3_completion *c = op(v, L3_OP_PUT, 0, 4);
    assert_true(c->retired);
    for (int i = 0; i < 4; i++)
        assert_false(c->success[i] || c->object_failures[i]);
    l3_slab_stats st;
    l3_slabstore_stats(v->store, &st);
    /* Keys whose writes completed are kept; the failed one is not visible. */
    assert_true(st.objects == 3);
    l3_slabstore_set_fault(v->store, NULL);
    fake_clock_set(v->clock, 12.0);
    c = op(v, L3_OP_PUT, 0, 4);
    for (int i = 0; i < 4; i++)
        assert_true(c->success[i]);
    c = op(v, L3_OP_GET, 0, 4);
    assert_int_equal(check_pages(v, c, 0), 4);
    stop(v);
}

static void short_transfers_and_eagain_are_resubmitted_transparently(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    l3_io_fault f = { .kind = L3_FAULT_SHORT };
    l3_slabstore_set_fault(v->store, &f);
    l3_completion *c = op(v, L3_OP_PUT, 0, 8);
    for (int i = 0; i < 8; i++)
        assert_true(c->success[i]);
    memset(v->h->pool, 0, v->h->pool_len);
    c = op(v, L3_OP_GET, 0, 8);
    assert_int_equal(check_pages(v, c, 0), 8);
    f.kind = L3_FAULT_EAGAIN;
    l3_slabstore_set_fault(v->store, &f);
    c = op(v, L3_OP_PUT, 8, 8);
    for (int i = 0; i < 8; i++)
        assert_true(c->success[i]);
    memset(v->h->pool, 0, v->h->pool_len);
    c = op(v, L3_OP_GET, 8, 8);
    assert_int_equal(check_pages(v, c, 8), 8);
    l3_slab_stats st;
    l3_slabstore_stats(v->store, &st);
    assert_true(st.io_short_retries >= 8);
    assert_true(st.io_eagain_retries >= 8);
    assert_string_equal(health(v), "healthy");
    stop(v);
}

static void a_stall_is_unretired_and_the_executor_turns_unsafe(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 0.3);
    l3_completion *c = op(v, L3_OP_PUT, 0, 2);
    assert_true(c->success[0] && c->success[1]);
    l3_io_fault f = { .kind = L3_FAULT_STALL, .ops = 1, .count = 1 };
    l3_slabstore_set_fault(v->store, &f);
    c = op(v, L3_OP_GET, 0, 2);
    assert_false(c->retired); /* a read may still land in the pool */
    assert_false(c->success[0] || c->success[1]);
    assert_false(c->object_failures[0] || c->object_failures[1]);
    l3_snapshot snap;
    l3_executor_snapshot(v->h->executor, &snap);
    assert_true(snap.unsafe_io);
    assert_false(l3_executor_is_idle(v->h->executor));
    /* No new I/O starts. */
    c = op(v, L3_OP_GET, 0, 2);
    assert_true(c->retired);
    assert_false(c->success[0]);
    /* The store itself refuses I/O too. */
    l3_store *st = l3_slabstore_store(v->store);
    const char *key = "anything_k";
    bool flag;
    l3_error err;
    uint8_t *buf = aligned_pool(4096);
    l3_io_result r = { .success = &flag, .object_failures = &flag };
    assert_int_equal(st->ops->batch_get_into(st, &key, 1, (l3_host_buffer){ buf, 4096 },
                                             &(l3_range){ 0, 4096 }, &r, &err),
                     L3_ECLOSED);
    l3_slab_stats stats;
    l3_slabstore_stats(v->store, &stats);
    assert_true(stats.broken);
    assert_int_equal(stats.io_timeouts, 1);
    /* Close refuses, and the pool stays registered with the kept rings. */
    assert_int_equal(harness_close(v->h, 1.0), L3_EUNRETIRED);
    assert_true(v->h->leaked);
    assert_true(stats.host_fixed || v->kind == L3_ENGINE_LIBAIO);
    keep_alive(buf);
    stop(v);
}

static void random_faults(void **state, bool payload_alone)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    if (payload_alone)
        v->store->max_request = 1; /* every get reads its payload alone, checked by the index's crc */
    const l3_fault_kind kinds[] = { L3_FAULT_EIO, L3_FAULT_SHORT, L3_FAULT_EAGAIN };
    int served = 0;
    for (int round = 0; round < 24; round++) {
        l3_io_fault f = { .kind = kinds[round % 3], .permille = 150, .seed = 1000 + (uint64_t)round };
        l3_slabstore_set_fault(v->store, &f);
        fake_clock_set(v->clock, 100.0 * (round + 1)); /* past any open interval */
        int first = (round * 5) % (PAGES * 4);
        op(v, L3_OP_PUT, first, 8);
        memset(v->h->pool, 0xcc, v->h->pool_len);
        l3_completion *c = op(v, L3_OP_GET, first, 8);
        served += check_pages(v, c, first);
    }
    assert_true(served > 0);
    stop(v);
}

static void random_faults_never_serve_wrong_bytes(void **state) { random_faults(state, false); }

static void random_faults_never_serve_wrong_bytes_read_without_headers(void **state) { random_faults(state, true); }

/* A device that acknowledges writes it did not make: torn (half landed)
 * or misdirected (landed elsewhere). Every put "succeeds"; a get must
 * never serve their bytes, nor let them damage what it serves; and so
 * when it reads payloads without their headers. */
static void lying_writes(void **state, bool payload_alone)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    if (payload_alone)
        v->store->max_request = 1;
    l3_completion *c = op(v, L3_OP_PUT, 0, 8);
    for (int i = 0; i < 8; i++)
        assert_true(c->success[i]);
    l3_io_fault torn = { .kind = L3_FAULT_TORN, .ops = 2 };
    l3_slabstore_set_fault(v->store, &torn);
    c = op(v, L3_OP_PUT, 8, 8);
    l3_slab_stats st;
    l3_slabstore_stats(v->store, &st);
    assert_true(st.io_faults >= 8); /* every payload (headers are too small to tear) */
    l3_io_fault away = { .kind = L3_FAULT_MISDIRECT, .ops = 2, .shift = 9 * (PAGE + 4096) };
    l3_slabstore_set_fault(v->store, &away);
    c = op(v, L3_OP_PUT, 16, 8);
    l3_slabstore_stats(v->store, &st);
    assert_true(st.io_faults >= 16);
    l3_slabstore_set_fault(v->store, NULL);
    int served = 0;
    for (int first = 0; first < 24; first += 8) {
        c = op(v, L3_OP_GET, first, 8);
        assert_true(c->retired);
        int hits = check_pages(v, c, first); /* every hit holds exactly its bytes */
        if (first >= 8)
            assert_int_equal(hits, 0); /* nothing the device lied about is served */
        served += hits;
    }
    assert_true(served > 0); /* (what the misdirected writes hit is not served either) */
    stop(v);
}

static void torn_and_misdirected_writes_are_never_served(void **state) { lying_writes(state, false); }

static void torn_and_misdirected_writes_are_never_served_read_without_headers(void **state)
{
    lying_writes(state, true);
}

/* A wait for completions that fails with I/O still in flight: the batch
 * is unretired (a read may still land in the pool), never retired. */
static void a_failed_wait_with_io_in_flight_is_unretired(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 5);
    l3_completion *c = op(v, L3_OP_PUT, 0, 4);
    assert_true(c->success[0]);
    l3_io_fault f = { .kind = L3_FAULT_WAIT_ERROR, .count = 1 };
    l3_slabstore_set_fault(v->store, &f);
    c = op(v, L3_OP_GET, 0, 4);
    assert_false(c->retired);
    for (int i = 0; i < 4; i++)
        assert_false(c->success[i] || c->object_failures[i]);
    l3_slab_stats stats;
    l3_slabstore_stats(v->store, &stats);
    assert_true(stats.broken);
    assert_int_equal(harness_close(v->h, 1.0), L3_EUNRETIRED);
    stop(v);
}

/* The engine's batch in three calls (l3_io_start, l3_io_wait_some,
 * l3_io_finish): every request is reported exactly once, over several
 * calls, a zero-length one too; and one that a slow device holds back
 * (L3_FAULT_DELAY, 50 ms) is reported last, alone, after the others were
 * reported while it waited (it had not finished when they were). */
static void the_engine_reports_each_request_once_as_it_finishes(void **state)
{
    l3_engine_kind kind = *(l3_engine_kind *)*state;
    enum { N = 16, BLOCK = 4096, MAX = 3 };
    char path[512];
    temp_store_path(path, sizeof path, "engine");
    int fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, N * BLOCK), 0);
    l3_io_options o = { .kind = kind, .contexts = 1, .depth = 64, .alignment = BLOCK };
    l3_io_engine *e;
    l3_error err;
    assert_int_equal(l3_io_engine_open(&o, &fd, 1, &e, &err), L3_OK);
    assert_int_equal(l3_io_engine_kind(e), kind);
    uint8_t *buf = aligned_pool(N * BLOCK);
    l3_io_req reqs[N + 1];
    for (size_t i = 0; i < N; i++) {
        fill_pattern(buf + i * BLOCK, BLOCK, (uint32_t)i);
        reqs[i] = (l3_io_req){ .write = true, .offset = i * BLOCK, .buf = buf + i * BLOCK, .len = BLOCK };
    }
    l3_io_ctx *ctx = l3_io_acquire(e);
    bool retired = false;
    assert_int_equal(l3_io_run(e, ctx, reqs, N, 10, &retired, &err), L3_OK);
    assert_true(retired);
    memset(buf, 0, N * BLOCK);
    for (size_t i = 0; i < N; i++)
        reqs[i].write = false;
    reqs[N] = (l3_io_req){ .offset = 0, .buf = buf, .len = 0 }; /* nothing to move: reported all the same */
    /* Reads go in index order: the last one waits 50 ms before its submission. */
    l3_io_engine_set_fault(e, &(l3_io_fault){ .kind = L3_FAULT_DELAY, .ops = 1, .after = N - 1, .count = 1,
                                              .shift = 50000 });
    assert_int_equal(l3_io_start(e, ctx, reqs, N + 1, 10, &retired, &err), L3_OK);
    int seen[N + 1] = { 0 };
    size_t order[N + 1], reported = 0, calls = 0, last_call = 0, got;
    for (;;) {
        size_t done[MAX];
        assert_int_equal(l3_io_wait_some(e, ctx, done, MAX, &got, &retired, &err), L3_OK);
        if (got == 0)
            break;
        assert_true(got <= MAX);
        calls++;
        last_call = got;
        for (size_t d = 0; d < got; d++) {
            assert_true(done[d] <= N);
            seen[done[d]]++;
            assert_true(reported < N + 1);
            order[reported++] = done[d];
            if (done[d] != N - 1)
                assert_int_equal(reqs[N - 1].res, 0); /* reported while the held-back read had not finished */
        }
    }
    for (size_t i = 0; i <= N; i++)
        assert_int_equal(seen[i], 1); /* each exactly once */
    assert_int_equal(reported, N + 1);
    assert_true(calls >= (N + 1 + MAX - 1) / MAX);
    assert_int_equal(order[N], N - 1); /* the held-back read finished last */
    assert_int_equal(last_call, 1);    /* alone: the others were reported while it waited */
    /* Ended: wait_some and finish say how, and report nothing more. */
    assert_int_equal(l3_io_wait_some(e, ctx, order, 1, &got, &retired, &err), L3_OK);
    assert_int_equal(got, 0);
    assert_int_equal(l3_io_finish(e, ctx, &retired, &err), L3_OK);
    assert_true(retired);
    assert_int_equal(l3_io_engine_faults(e), 1);
    uint8_t *want = aligned_pool(BLOCK);
    for (size_t i = 0; i < N; i++) {
        assert_int_equal(reqs[i].res, BLOCK);
        fill_pattern(want, BLOCK, (uint32_t)i);
        assert_memory_equal(buf + i * BLOCK, want, BLOCK);
    }
    assert_int_equal(reqs[N].res, 0);
    /* A batch started and finished without a look at its requests. */
    l3_io_engine_set_fault(e, NULL);
    assert_int_equal(l3_io_start(e, ctx, reqs, N, 10, &retired, &err), L3_OK);
    assert_int_equal(l3_io_finish(e, ctx, &retired, &err), L3_OK);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(reqs[i].res, BLOCK);
    l3_io_release(e, ctx);
    l3_io_engine_close(e);
    close(fd);
    unlink(path);
    free(want);
    free(buf);
}

/* Check as the data lands (issue 32): in a get batch whose fifth key's
 * reads a slow device holds back 50 ms (5 ms was once too short for the
 * ASan build on a busy machine to judge any key before it), the keys before it are judged
 * (header, crc32c, index) while it waits; every key is served with its
 * bytes, but the one whose payload write was torn (the first in device
 * order, so among those judged early) is still a miss. */
static void a_get_judges_each_key_as_its_reads_land(void **state)
{
    env *v = start(*(l3_engine_kind *)*state, 10);
    l3_slabstore_set_fault(v->store, &(l3_io_fault){ .kind = L3_FAULT_TORN, .ops = 2 });
    l3_completion *c = op(v, L3_OP_PUT, 0, 1); /* page 0: its payload lands half, "successfully" */
    assert_true(c->success[0]);
    l3_slabstore_set_fault(v->store, NULL);
    c = op(v, L3_OP_PUT, 1, 7);
    for (int i = 0; i < 7; i++)
        assert_true(c->success[i]);
    l3_slab_stats before, after;
    l3_slabstore_stats(v->store, &before);
    memset(v->h->pool, 0xcc, v->h->pool_len);
    /* A header and a payload read per key, in device order (the order of
     * the puts): the ninth read is the fifth key's header. */
    l3_slabstore_set_fault(v->store, &(l3_io_fault){ .kind = L3_FAULT_DELAY, .ops = 1, .after = 8, .count = 1,
                                                     .shift = 50000 });
    c = op(v, L3_OP_GET, 0, 8);
    assert_true(c->retired);
    assert_false(c->success[0]); /* torn: a miss, never its bytes */
    assert_true(c->object_failures[0]);
    for (int i = 1; i < 8; i++)
        assert_true(c->success[i]);
    assert_int_equal(check_pages(v, c, 0), 7);
    l3_slabstore_stats(v->store, &after);
    assert_int_equal(after.io_faults, 1); /* the delay was applied */
    assert_int_equal(after.checksum_failures, before.checksum_failures + 1);
    assert_int_equal(after.get_hits, before.get_hits + 7);
    assert_true(after.get_keys_checked_early > before.get_keys_checked_early);
    assert_true(after.get_keys_checked_early - before.get_keys_checked_early <= 7); /* the last key is not early */
    l3_slabstore_set_fault(v->store, NULL);
    stop(v);
}

int main(void)
{
    quiet_logs();
    static l3_engine_kind uring = L3_ENGINE_IO_URING, aio = L3_ENGINE_LIBAIO;
#define ALL(k)                                                                                     \
    {                                                                                              \
        cmocka_unit_test_prestate(eio_on_one_objects_read_is_that_keys_object_failure, k), \
        cmocka_unit_test_prestate(eio_on_put_publishes_nothing_and_a_later_put_succeeds, k),       \
        cmocka_unit_test_prestate(short_transfers_and_eagain_are_resubmitted_transparently, k),    \
        cmocka_unit_test_prestate(a_stall_is_unretired_and_the_executor_turns_unsafe, k),          \
        cmocka_unit_test_prestate(random_faults_never_serve_wrong_bytes, k),                       \
        cmocka_unit_test_prestate(random_faults_never_serve_wrong_bytes_read_without_headers, k),  \
        cmocka_unit_test_prestate(a_device_failing_every_read_opens_the_breaker_and_one_probe_closes_it, k), \
        cmocka_unit_test_prestate(torn_and_misdirected_writes_are_never_served, k),                \
        cmocka_unit_test_prestate(torn_and_misdirected_writes_are_never_served_read_without_headers, k), \
        cmocka_unit_test_prestate(a_failed_wait_with_io_in_flight_is_unretired, k),                \
        cmocka_unit_test_prestate(the_engine_reports_each_request_once_as_it_finishes, k),         \
        cmocka_unit_test_prestate(a_get_judges_each_key_as_its_reads_land, k),                     \
    }
    const struct CMUnitTest on_uring[] = ALL(&uring);
    const struct CMUnitTest on_aio[] = ALL(&aio);
    int failed = cmocka_run_group_tests_name("faults_io_uring", on_uring, NULL, NULL);
    failed += cmocka_run_group_tests_name("faults_libaio", on_aio, NULL, NULL);
    return failed;
}
