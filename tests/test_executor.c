/* The executor's reference tests (executor.rs `mod tests`), one cmocka twin
 * of each, with the same names and assertions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_keys.h"

#define QUERY(id, ...)                                                                             \
    query((id), (const l3_storage_key[]){ __VA_ARGS__ },                                           \
          ARRAY_LEN(((const l3_storage_key[]){ __VA_ARGS__ })))
#define K(hash) key(hash)

static void assert_bools(const bool *got, size_t n, const bool *want, size_t m)
{
    assert_int_equal(n, m);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}
#define ASSERT_BOOLS(got, n, ...)                                                                  \
    assert_bools((got), (n), (const bool[]){ __VA_ARGS__ },                                        \
                 ARRAY_LEN(((const bool[]){ __VA_ARGS__ })))

static const l3_operation_snapshot *row(l3_snapshot *snap, l3_executor *e, const char *kind)
{
    l3_executor_snapshot(e, snap);
    const l3_operation_snapshot *r = l3_snapshot_row(snap, kind);
    assert_non_null(r);
    return r;
}

static const char *health_state(l3_executor *e)
{
    l3_snapshot snap;
    l3_executor_snapshot(e, &snap);
    return snap.health_state;
}

/* A context that blocks a store call until released. */
typedef struct blocker {
    event *started;
    event *release;
    double wait;
    atomic_bool wait_failed;
    const char *only_key;      /* block only on this key (NULL: always) */
    const char *only_contains; /* block only on keys containing this */
    l3_memstore *reader;       /* then read through this memory store */
    bool value;                /* the flags a blocking exists returns */
} blocker;

static blocker *blocker_new(double wait)
{
    blocker *b = calloc(1, sizeof *b);
    b->started = event_new();
    b->release = event_new();
    b->wait = wait;
    keep_alive(b->started);
    keep_alive(b->release);
    keep_alive(b);
    return b;
}

static void block_here(blocker *b)
{
    event_set(b->started);
    if (!event_wait(b->release, b->wait))
        atomic_store(&b->wait_failed, true);
}

static l3_status blocking_exists(void *ctx, const char *const *keys, size_t n, bool *flags,
                                 l3_error *err)
{
    (void)err;
    blocker *b = ctx;
    if (!b->only_key || (n == 1 && strcmp(keys[0], b->only_key) == 0))
        block_here(b);
    for (size_t i = 0; i < n; i++)
        flags[i] = b->value;
    return L3_OK;
}

static void all_succeed(l3_io_result *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        r->success[i] = true;
        r->object_failures[i] = false;
    }
    r->success_len = r->object_failures_len = n;
    r->retired = true;
}

static l3_status blocking_get(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                              const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    blocker *b = ctx;
    if (!b->only_contains || strstr(keys[0], b->only_contains))
        block_here(b);
    if (b->reader) {
        l3_store *m = l3_memstore_store(b->reader);
        return m->ops->batch_get_into(m, keys, n, host, ranges, r, err);
    }
    all_succeed(r, n);
    return L3_OK;
}

static l3_status failing_exists(void *ctx, const char *const *keys, size_t n, bool *flags,
                                l3_error *err)
{
    (void)ctx; (void)keys; (void)n; (void)flags;
    return l3_fail(err, L3_EIO, "unavailable");
}

static l3_status failing_get(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                             const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    (void)ctx; (void)keys; (void)n; (void)host; (void)ranges; (void)r;
    return l3_fail(err, L3_EIO, "unavailable");
}

static void stale_reports_cannot_reopen_a_failed_recovery(void **state)
{
    (void)state;
    fake_clock *now = fake_clock_new(1.0);
    l3_health health;
    l3_health_init(&health, 1, 10.0, fake_clock_of(now));
    l3_health_token old, failing, probe, recovered, t;
    assert_true(l3_health_begin(&health, &old));
    assert_true(l3_health_begin(&health, &failing));
    l3_health_failure(&health, failing);
    l3_health_success(&health, old);
    assert_false(l3_health_begin(&health, &t));
    fake_clock_set(now, 12.0);
    assert_true(l3_health_begin(&health, &probe));
    assert_true(probe.recovery);
    assert_false(l3_health_begin(&health, &t));
    l3_health_failure(&health, probe);
    /* This success belongs to the failed term. */
    l3_health_success(&health, probe);
    assert_false(l3_health_begin(&health, &t));
    assert_string_equal(l3_health_snapshot(&health, NULL), "open");
    fake_clock_set(now, 23.0);
    assert_true(l3_health_begin(&health, &recovered));
    assert_true(recovered.recovery && !l3_health_begin(&health, &t));
    l3_health_success(&health, recovered);
    assert_true(l3_health_begin(&health, &t));
    assert_false(t.recovery);
    l3_health_destroy(&health);
}

static void a_snapshot_cannot_take_the_recovery_probe(void **state)
{
    (void)state;
    fake_clock *now = fake_clock_new(0.0);
    l3_health health;
    l3_health_init(&health, 1, 1.0, fake_clock_of(now));
    l3_health_token t, probe;
    assert_true(l3_health_begin(&health, &t));
    l3_health_failure(&health, t);
    fake_clock_set(now, 2.0);
    for (int i = 0; i < 3; i++)
        assert_string_equal(l3_health_snapshot(&health, NULL), "open");
    assert_true(l3_health_begin(&health, &probe));
    assert_true(probe.recovery);
    assert_string_equal(l3_health_snapshot(&health, NULL), "half_open");
    l3_health_success(&health, probe);
    assert_string_equal(l3_health_snapshot(&health, NULL), "healthy");
    l3_health_destroy(&health);
}

static void a_slow_query_blocks_neither_another_worker_nor_the_submitter(void **state)
{
    (void)state;
    blocker *b = blocker_new(3.0);
    char slow[L3_OBJECT_KEY_MAX + 1];
    ref_key("v1", "slow", slow, sizeof slow);
    b->only_key = slow;
    b->value = true;
    test_store *store = test_store_new(NULL);
    store->exists = blocking_exists;
    store->ctx = b;
    harness *h = harness_new(store, CONFIG);
    SUBMIT(h, QUERY(1, K("slow")));
    assert_true(event_wait(b->started, 1.0));
    SUBMIT(h, QUERY(2, K("fast")));
    l3_completion *fast = harness_wait(h, 1);
    assert_int_equal(fast[0].op_id, 2);
    ASSERT_BOOLS(fast[0].success, fast[0].num_keys, true);
    event_set(b->release);
    assert_int_equal(harness_wait(h, 1)[0].op_id, 1);
    assert_false(atomic_load(&b->wait_failed));
    harness_free(h);
}

static void a_cancelled_queued_get_never_reaches_the_store(void **state)
{
    (void)state;
    blocker *b = blocker_new(3.0);
    test_store *store = test_store_new(NULL);
    store->get = blocking_get;
    store->ctx = b;
    l3_executor_config config = CONFIG;
    config.read_workers = 1;
    harness *h = harness_new(store, config);
    SUBMIT(h, GET(1, "a", 1));
    assert_true(event_wait(b->started, 1.0));
    SUBMIT(h, GET(2, "b", 2), cancel_op(2));
    l3_completion *cancelled = harness_wait(h, 1);
    assert_int_equal(cancelled[0].op_id, 2);
    assert_true(cancelled[0].retired);
    ASSERT_BOOLS(cancelled[0].success, cancelled[0].num_keys, false);
    ASSERT_BOOLS(cancelled[0].object_failures, cancelled[0].num_keys, false);
    /* The only worker is still inside a's I/O. */
    assert_int_equal(test_store_calls(store), 1);
    event_set(b->release);
    assert_int_equal(harness_wait(h, 1)[0].op_id, 1);
    assert_int_equal(test_store_calls(store), 1);
    assert_false(atomic_load(&b->wait_failed));
    harness_free(h);
}

static void a_failing_query_degrades_without_killing_its_worker(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    store->exists = failing_exists;
    harness *h = harness_new(store, CONFIG);
    SUBMIT(h, QUERY(1, K("a")));
    l3_completion *failed = harness_wait(h, 1);
    assert_true(failed[0].retired);
    ASSERT_BOOLS(failed[0].success, failed[0].num_keys, false);
    SUBMIT(h, QUERY(2, K("b")));
    assert_int_equal(harness_wait(h, 1)[0].op_id, 2);
    harness_free(h);
}

static l3_status unretired_get(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                               const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    (void)keys; (void)host; (void)ranges; (void)err; (void)n;
    r->success[0] = *(bool *)ctx;
    r->object_failures[0] = false;
    r->success_len = r->object_failures_len = 1;
    r->retired = false;
    return L3_OK;
}

static void unproven_retirement_disables_io_and_refuses_a_clean_close(void **state)
{
    (void)state;
    static bool successes[2] = { false, true };
    for (int i = 0; i < 2; i++) {
        test_store *store = test_store_new(NULL);
        store->get = unretired_get;
        store->ctx = &successes[i];
        harness *h = harness_new(store, CONFIG);
        SUBMIT(h, GET(1, "a", 1));
        assert_false(harness_wait(h, 1)[0].retired);
        assert_false(l3_executor_is_idle(h->executor));
        assert_string_equal(health_state(h->executor), "open");
        SUBMIT(h, GET(2, "b", 2));
        /* No new I/O starts. */
        l3_completion *refused = harness_wait(h, 1);
        assert_true(refused[0].retired);
        ASSERT_BOOLS(refused[0].success, refused[0].num_keys, false);
        assert_int_equal(harness_close(h, 2.0), L3_EUNRETIRED);
        /* The store stays connected: only process exit releases it. */
        assert_int_equal(atomic_load(&store->closes), 0);
        /* The pool must outlive the leaked workers (harness_close kept it). */
        assert_true(h->leaked);
        harness_free(h);
    }
}

static void independent_executors_share_objects_through_the_store(void **state)
{
    (void)state;
    l3_memstore *memory = l3_memstore_new();
    harness *writer = harness_new(test_store_new(memory), CONFIG);
    harness *reader = harness_new(test_store_new(memory), CONFIG);
    /* Block 1 of group 0 is the pool's first 8 bytes. */
    memcpy(writer->pool, "abcdefgh", 8);
    SUBMIT(writer, PUT(1, "shared", 1));
    l3_completion *w = harness_wait(writer, 1);
    ASSERT_BOOLS(w[0].success, w[0].num_keys, true);
    /* Block 3 sits at the third LCM block. */
    SUBMIT(reader, GET(1, "shared", 3));
    l3_completion *r = harness_wait(reader, 1);
    ASSERT_BOOLS(r[0].success, r[0].num_keys, true);
    assert_memory_equal(reader->pool + 48, "abcdefgh", 8);
    static const uint8_t zeros[8];
    assert_memory_equal(reader->pool, zeros, 8);
    harness_free(writer);
    harness_free(reader);
    l3_memstore_free(memory);
}

static void operation_credits_bound_what_is_in_flight(void **state)
{
    (void)state;
    l3_executor_config config = CONFIG;
    config.max_operations = 1;
    harness *h = harness_new(test_store_new(NULL), config);
    SUBMIT(h, QUERY(1, K("a")));
    /* Completed but not polled still counts. */
    usleep(20000);
    l3_operation op = QUERY(2, K("b"));
    assert_int_equal(l3_executor_submit(h->executor, &op, 1, NULL), L3_ECREDITS);
    harness_wait(h, 1);
    harness_free(h);
}

static void the_key_limit_and_increasing_ids_are_enforced(void **state)
{
    (void)state;
    l3_executor_config config = CONFIG;
    config.max_keys_per_operation = 2;
    harness *h = harness_new(test_store_new(NULL), config);
    l3_operation three = QUERY(1, K("a"), K("b"), K("c"));
    assert_int_equal(l3_executor_submit(h->executor, &three, 1, NULL), L3_EINVAL);
    SUBMIT(h, QUERY(1, K("a"), K("b")));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, false, false);
    l3_operation again = QUERY(1, K("a"));
    assert_int_equal(l3_executor_submit(h->executor, &again, 1, NULL), L3_EINVAL);
    harness_free(h);
}

static void a_retired_get_miss_is_an_object_failure_not_a_backend_fault(void **state)
{
    (void)state;
    harness *h = harness_new(test_store_new(NULL), CONFIG);
    SUBMIT(h, GET(1, "evicted", 1));
    l3_completion *miss = harness_wait(h, 1);
    assert_true(miss[0].retired);
    ASSERT_BOOLS(miss[0].success, miss[0].num_keys, false);
    ASSERT_BOOLS(miss[0].object_failures, miss[0].num_keys, true);
    assert_string_equal(health_state(h->executor), "healthy");
    harness_free(h);
}

static void snapshots_count_cancelled_queued_work_and_late_completions(void **state)
{
    (void)state;
    blocker *b = blocker_new(3.0);
    test_store *store = test_store_new(NULL);
    store->get = blocking_get;
    store->ctx = b;
    l3_executor_config config = CONFIG;
    config.read_workers = 1;
    harness *h = harness_new(store, config);
    l3_executor *e = h->executor;
    l3_snapshot snap;
    SUBMIT(h, GET(1, "running", 1));
    assert_true(event_wait(b->started, 1.0));
    /* A group-1 block is 16 bytes. */
    l3_storage_key queued_key = { .group = 1, .content_hash = "queued", .page_offset = 0 };
    int32_t block = 1;
    SUBMIT(h, get_op(2, &queued_key, &block));
    const l3_operation_snapshot *s = row(&snap, e, "get");
    assert_true(l3_snapshot_phase(s->operations, "queued") == 1.0);
    assert_true(l3_snapshot_phase(s->operations, "running") == 1.0);
    assert_true(l3_snapshot_phase(s->operations, "completed") == 0.0);
    assert_true(l3_snapshot_phase(s->bytes, "queued") == 16.0);
    assert_true(l3_snapshot_phase(s->bytes, "running") == 8.0);
    SUBMIT(h, cancel_op(2), cancel_op(2), cancel_op(1));
    harness_wait(h, 1);
    const l3_operation_snapshot *cancelled = row(&snap, e, "get");
    assert_true(l3_snapshot_event(cancelled, "cancelled_queued") == 1.0);
    assert_true(l3_snapshot_event(cancelled, "cancelled_running") == 1.0);
    assert_true(l3_snapshot_event(cancelled, "backend_calls") == 1.0);
    assert_true(l3_snapshot_phase(cancelled->operations, "running") == 1.0);
    event_set(b->release);
    double deadline = l3_monotonic_seconds() + 3.0;
    while (l3_snapshot_phase(row(&snap, e, "get")->operations, "completed") != 1.0) {
        assert_true(l3_monotonic_seconds() < deadline);
        usleep(1000);
    }
    const l3_operation_snapshot *completed = row(&snap, e, "get");
    assert_true(l3_snapshot_phase(completed->bytes, "completed") == 8.0);
    /* I/O success does not imply publication. */
    assert_true(completed->success_bytes == 8.0);
    assert_true(completed->success_keys == 1.0 && completed->failed_keys == 1.0);
    assert_true(completed->queue_seconds >= 0.0 && completed->backend_seconds > 0.0);
    harness_wait(h, 1);
    const l3_operation_snapshot *drained = row(&snap, e, "get");
    for (int p = 0; p < L3_NUM_PHASES; p++)
        assert_true(drained->operations[p] == 0.0);
    assert_false(atomic_load(&b->wait_failed));
    harness_free(h);
}

static void open_the_backend(l3_executor *e)
{
    l3_health_token token;
    assert_true(l3_health_begin(l3_executor_health(e), &token));
    l3_health_failure(l3_executor_health(e), token);
}

static void an_open_backend_rejects_jobs_visibly_without_calling_it(void **state)
{
    (void)state;
    harness *h = harness_new(test_store_new(NULL), CONFIG);
    l3_executor *e = h->executor;
    open_the_backend(e);
    SUBMIT(h, PUT(1, "rejected", 1));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, false);
    l3_snapshot snap;
    const l3_operation_snapshot *put_row = row(&snap, e, "put");
    assert_true(l3_snapshot_event(put_row, "rejected") == 1.0);
    assert_true(l3_snapshot_event(put_row, "backend_calls") == 0.0);
    assert_true(put_row->success_bytes == 0.0 && put_row->backend_seconds == 0.0);
    harness_free(h);
}

static void assert_pressure(l3_pressure p, int64_t ops, int64_t bytes, int64_t oldest)
{
    assert_int_equal(p.queued_operations, ops);
    assert_int_equal(p.queued_bytes, bytes);
    assert_int_equal(p.oldest_operation_us, oldest);
}

static l3_pressure poll_pressure(l3_executor *e, size_t *completions, uint64_t *first)
{
    l3_poll poll;
    assert_int_equal(l3_executor_poll(e, &poll, NULL), L3_OK);
    if (completions)
        *completions = poll.num_completions;
    if (first && poll.num_completions)
        *first = poll.completions[0].op_id;
    l3_pressure p = poll.pressure;
    l3_poll_release(&poll);
    return p;
}

static void pressure_tracks_the_queue_and_cancelled_native_work_until_it_retires(void **state)
{
    (void)state;
    fake_clock *now = fake_clock_new(1.0);
    blocker *b = blocker_new(5.0);
    test_store *store = test_store_new(NULL);
    store->get = blocking_get;
    store->ctx = b;
    l3_executor_config config = CONFIG;
    config.read_workers = 1;
    harness *h = harness_start(store, config, test_layout(1, 0, 0), fake_clock_of(now));
    l3_executor *e = h->executor;
    SUBMIT(h, GET(1, "active", 1));
    assert_true(event_wait(b->started, 1.0));
    SUBMIT(h, GET(2, "queued", 2));
    fake_clock_set(now, 1.75);
    size_t n;
    uint64_t first = 0;
    l3_pressure p = poll_pressure(e, &n, NULL);
    assert_int_equal(n, 0);
    assert_pressure(p, 1, 8, 750000);
    SUBMIT(h, cancel_op(2));
    p = poll_pressure(e, &n, &first);
    assert_int_equal(n, 1);
    assert_int_equal(first, 2);
    assert_pressure(p, 0, 0, 750000);
    /* Cancelling running native work does not retire it. */
    SUBMIT(h, cancel_op(1));
    assert_int_equal(poll_pressure(e, NULL, NULL).oldest_operation_us, 750000);
    assert_string_equal(health_state(e), "healthy");
    event_set(b->release);
    assert_true(harness_wait(h, 1)[0].retired);
    assert_pressure(poll_pressure(e, NULL, NULL), 0, 0, 0);
    assert_true(l3_executor_is_idle(e));
    assert_false(atomic_load(&b->wait_failed));
    harness_free(h);
}

static void query_pressure_counts_metadata_jobs_without_payload_bytes(void **state)
{
    (void)state;
    fake_clock *now = fake_clock_new(1.0);
    blocker *b = blocker_new(5.0);
    b->value = false;
    test_store *store = test_store_new(NULL);
    store->exists = blocking_exists;
    store->ctx = b;
    l3_executor_config config = CONFIG;
    config.query_workers = 1;
    harness *h = harness_start(store, config, test_layout(1, 0, 0), fake_clock_of(now));
    l3_executor *e = h->executor;
    SUBMIT(h, QUERY(1, K("a")));
    assert_true(event_wait(b->started, 1.0));
    SUBMIT(h, QUERY(2, K("b")));
    fake_clock_set(now, 2.0);
    assert_pressure(poll_pressure(e, NULL, NULL), 1, 0, 1000000);
    event_set(b->release);
    l3_completion *c = harness_wait(h, 2);
    assert_true(c[0].retired && c[1].retired);
    assert_int_equal(poll_pressure(e, NULL, NULL).oldest_operation_us, 0);
    harness_free(h);
}

static void a_rejected_or_failed_get_reports_no_object_failure(void **state)
{
    (void)state;
    /* Through the open backend, a full queue and a failing store. */
    const char *failures[] = { "health", "queue", "error" };
    for (int f = 0; f < 3; f++) {
        const char *failure = failures[f];
        blocker *b = blocker_new(3.0);
        b->only_contains = "_blocker";
        test_store *store = test_store_new(NULL);
        if (strcmp(failure, "queue") == 0)
            store->get = blocking_get;
        else if (strcmp(failure, "error") == 0)
            store->get = failing_get;
        store->ctx = b;
        l3_executor_config config = CONFIG;
        config.max_operations = 2;
        config.read_workers = 1;
        harness *h = harness_new(store, config);
        l3_executor *e = h->executor;
        uint64_t target = 1;
        if (strcmp(failure, "health") == 0) {
            open_the_backend(e);
        } else if (strcmp(failure, "queue") == 0) {
            /* A stale entry of a cancelled job keeps its queue slot until
             * a worker passes it. */
            SUBMIT(h, GET(1, "blocker", 1));
            assert_true(event_wait(b->started, 1.0));
            SUBMIT(h, GET(2, "stale", 2), cancel_op(2));
            harness_wait(h, 1);
            SUBMIT(h, GET(3, "stale", 3), cancel_op(3));
            harness_wait(h, 1);
            target = 4;
        }
        SUBMIT(h, GET(target, "present", 4));
        l3_completion *result = harness_wait(h, 1);
        assert_int_equal(result[0].op_id, target);
        assert_true(result[0].retired);
        ASSERT_BOOLS(result[0].success, result[0].num_keys, false);
        ASSERT_BOOLS(result[0].object_failures, result[0].num_keys, false);
        if (strcmp(failure, "error") != 0) {
            l3_snapshot snap;
            double calls = strcmp(failure, "queue") == 0 ? 1.0 : 0.0;
            assert_true(l3_snapshot_event(row(&snap, e, "get"), "backend_calls") == calls);
        }
        event_set(b->release);
        harness_free(h);
    }
}

typedef struct malformed {
    size_t success_len, failures_len;
    bool success, failure;
} malformed;

static l3_status malformed_get(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                               const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    (void)keys; (void)n; (void)host; (void)ranges; (void)err;
    const malformed *m = ctx;
    if (m->success_len)
        r->success[0] = m->success;
    if (m->failures_len)
        r->object_failures[0] = m->failure;
    r->success_len = m->success_len;
    r->object_failures_len = m->failures_len;
    r->retired = true;
    return L3_OK;
}

static void malformed_facts_cannot_publish(void **state)
{
    (void)state;
    static const malformed cases[] = {
        { 1, 0, true, false },  /* (vec![true], vec![]) */
        { 1, 1, true, true },   /* (vec![true], vec![true]) */
        { 0, 1, false, false }, /* (vec![], vec![false]) */
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        test_store *store = test_store_new(NULL);
        store->get = malformed_get;
        store->ctx = (void *)&cases[i];
        harness *h = harness_new(store, CONFIG);
        SUBMIT(h, GET(1, "a", 1));
        l3_completion *result = harness_wait(h, 1);
        ASSERT_BOOLS(result[0].success, result[0].num_keys, false);
        ASSERT_BOOLS(result[0].object_failures, result[0].num_keys, false);
        assert_string_equal(health_state(h->executor), "open");
        harness_free(h);
    }
}

static void a_put_never_reports_object_failures(void **state)
{
    (void)state;
    harness *h = harness_new(test_store_new(NULL), CONFIG);
    SUBMIT(h, PUT(1, "a", 1));
    l3_completion *result = harness_wait(h, 1);
    ASSERT_BOOLS(result[0].success, result[0].num_keys, true);
    assert_true(result[0].retired);
    ASSERT_BOOLS(result[0].object_failures, result[0].num_keys, false);
    harness_free(h);
}

static void close_waits_for_native_retirement_then_closes_the_store_once(void **state)
{
    (void)state;
    blocker *b = blocker_new(3.0);
    l3_memstore *memory = l3_memstore_new();
    b->reader = memory;
    test_store *store = test_store_new(memory);
    store->get = blocking_get;
    store->ctx = b;
    harness *h = harness_new(store, CONFIG);
    l3_executor *e = h->executor;
    char prefix[L3_KEY_PREFIX_LEN + 1], object[L3_OBJECT_KEY_MAX + 1];
    l3_executor_key_prefix(e, prefix);
    assert_int_equal(l3_object_key(prefix, "a", 0, 0, 0, object, sizeof object, NULL), L3_OK);
    uint8_t source[8];
    memcpy(source, "abcdefgh", 8);
    bool ok, fail;
    l3_io_result r = { .success = &ok, .object_failures = &fail };
    const char *keys[] = { object };
    l3_store *m = l3_memstore_store(memory);
    assert_int_equal(m->ops->batch_put_from(m, keys, 1, (l3_host_buffer){ source, 8 },
                                            &(l3_range){ 0, 8 }, &r, NULL),
                     L3_OK);
    SUBMIT(h, GET(1, "a", 1));
    assert_true(event_wait(b->started, 1.0));
    /* The poll does not wait for the store. */
    size_t n;
    poll_pressure(e, &n, NULL);
    assert_int_equal(n, 0);
    event_set(b->release);
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    assert_memory_equal(h->pool, "abcdefgh", 8);
    assert_int_equal(harness_close(h, 2.0), L3_OK);
    assert_int_equal(harness_close(h, 2.0), L3_OK);
    assert_int_equal(atomic_load(&store->closes), 1);
    harness_free(h);
    l3_memstore_free(memory);
}

static void a_close_timeout_keeps_the_store_and_the_pool(void **state)
{
    (void)state;
    blocker *b = blocker_new(3.0);
    test_store *store = test_store_new(NULL);
    store->get = blocking_get;
    store->ctx = b;
    harness *h = harness_new(store, CONFIG);
    SUBMIT(h, GET(1, "a", 1));
    assert_true(event_wait(b->started, 1.0));
    assert_int_equal(harness_close(h, 0.0), L3_EUNRETIRED);
    assert_int_equal(atomic_load(&store->closes), 0);
    /* The worker still writes the pool after the close (harness kept it). */
    assert_true(h->leaked);
    event_set(b->release);
    harness_free(h);
}

static void a_namespace_changes_only_while_idle(void **state)
{
    (void)state;
    blocker *b = blocker_new(3.0);
    b->value = false;
    test_store *store = test_store_new(NULL);
    store->exists = blocking_exists;
    store->ctx = b;
    harness *h = harness_new(store, CONFIG);
    l3_executor *e = h->executor;
    char first[L3_KEY_PREFIX_LEN + 1], want[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, first);
    assert_int_equal(l3_key_prefix("deployment", "v1", "", want, NULL), L3_OK);
    assert_string_equal(first, want);
    SUBMIT(h, QUERY(1, K("a")));
    assert_true(event_wait(b->started, 1.0));
    assert_int_equal(l3_executor_set_weight_version(e, "v2", NULL), L3_EBUSY);
    assert_false(l3_executor_delete_namespace(e));
    event_set(b->release);
    harness_wait(h, 1);
    assert_int_equal(l3_executor_set_weight_version(e, "v2", NULL), L3_OK);
    char now[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, now);
    assert_int_equal(l3_key_prefix("deployment", "v2", "", want, NULL), L3_OK);
    assert_string_equal(now, want);
    assert_true(l3_executor_delete_namespace(e));
    harness_free(h);
}

static void clearing_the_namespace_deletes_its_objects_and_keeps_its_name(void **state)
{
    (void)state;
    harness *h = harness_new(test_store_new(NULL), CONFIG);
    l3_executor *e = h->executor;
    SUBMIT(h, PUT(1, "h", 1));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    char prefix[L3_KEY_PREFIX_LEN + 1], after[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, prefix);
    assert_true(l3_executor_delete_namespace(e));
    l3_executor_key_prefix(e, after);
    assert_string_equal(after, prefix);
    SUBMIT(h, QUERY(2, K("h")));
    c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, false);
    harness_free(h);
}

static void a_failed_clear_keeps_the_namespace_and_its_objects(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    store->remove_fails = true;
    harness *h = harness_new(store, CONFIG);
    l3_executor *e = h->executor;
    SUBMIT(h, PUT(1, "h", 1));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    char prefix[L3_KEY_PREFIX_LEN + 1], after[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, prefix);
    assert_false(l3_executor_delete_namespace(e));
    l3_executor_key_prefix(e, after);
    assert_string_equal(after, prefix);
    SUBMIT(h, QUERY(2, K("h")));
    c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    harness_free(h);
}

static void a_new_weight_version_publishes_under_a_new_namespace(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    l3_memstore *memory = store->memory;
    harness *h = harness_new(store, CONFIG);
    l3_executor *e = h->executor;
    SUBMIT(h, PUT(1, "h", 1));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    char prefix[L3_KEY_PREFIX_LEN + 1], old[L3_OBJECT_KEY_MAX + 1], new[L3_OBJECT_KEY_MAX + 1];
    l3_executor_key_prefix(e, prefix);
    assert_int_equal(l3_object_key(prefix, "h", 0, 0, 0, old, sizeof old, NULL), L3_OK);
    assert_int_equal(l3_executor_set_weight_version(e, "v2", NULL), L3_OK);
    /* The new checkpoint's pages are not the old one's. */
    SUBMIT(h, QUERY(2, K("h")));
    c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, false);
    SUBMIT(h, PUT(3, "h", 1));
    c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    l3_executor_key_prefix(e, prefix);
    assert_int_equal(l3_object_key(prefix, "h", 0, 0, 0, new, sizeof new, NULL), L3_OK);
    assert_string_not_equal(new, old);
    const char *both[] = { old, new };
    bool flags[2];
    l3_store *m = l3_memstore_store(memory);
    assert_int_equal(m->ops->batch_exists(m, both, 2, flags, NULL), L3_OK);
    ASSERT_BOOLS(flags, 2, true, true);
    harness_free(h);
}

typedef struct rejecting {
    l3_memstore *memory;
    char rejected[L3_OBJECT_KEY_MAX + 1];
} rejecting;

/* A full store rejects one key's allocation before reading its bytes. */
static l3_status rejecting_put(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                               const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    rejecting *rj = ctx;
    l3_store *m = l3_memstore_store(rj->memory);
    for (size_t i = 0; i < n; i++) {
        bool ok = false, fail = false;
        if (strcmp(keys[i], rj->rejected) != 0) {
            l3_io_result one = { .success = &ok, .object_failures = &fail };
            l3_status st = m->ops->batch_put_from(m, &keys[i], 1, host, &ranges[i], &one, err);
            if (st != L3_OK)
                return st;
        }
        r->success[i] = ok;
        r->object_failures[i] = false;
    }
    r->success_len = r->object_failures_len = n;
    r->retired = true;
    return L3_OK;
}

static void a_rejected_put_retires_and_keeps_the_backend_in_service(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    rejecting rj = { .memory = store->memory };
    ref_key("v1", "pressure", rj.rejected, sizeof rj.rejected);
    store->put = rejecting_put;
    store->ctx = &rj;
    harness *h = harness_new(store, CONFIG);
    l3_executor *e = h->executor;
    const l3_storage_key keys[] = { K("pressure"), K("saved") };
    const int32_t blocks[] = { 1, 2 };
    SUBMIT(h, (l3_operation){ .kind = L3_OP_PUT, .op_id = 1, .keys = keys, .num_keys = 2,
                              .host_blocks = blocks, .num_host_blocks = 2 });
    l3_completion *done = harness_wait(h, 1);
    ASSERT_BOOLS(done[0].success, done[0].num_keys, false, true);
    assert_true(done[0].retired);
    const char *pressure[] = { rj.rejected };
    bool flag;
    l3_store *m = l3_memstore_store(store->memory);
    assert_int_equal(m->ops->batch_exists(m, pressure, 1, &flag, NULL), L3_OK);
    assert_false(flag);
    /* Neither a quarantine nor an open circuit: the scheduler offers the
     * page again later. */
    l3_snapshot snap;
    l3_executor_snapshot(e, &snap);
    assert_string_equal(snap.health_state, "healthy");
    assert_false(snap.unsafe_io);
    SUBMIT(h, PUT(2, "retry", 3));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    harness_free(h);
}

static void keys_of(harness *h, uint32_t group, char *out, size_t size)
{
    l3_storage_key k = { .group = group, .content_hash = "h", .page_offset = 0 };
    assert_int_equal(l3_executor_object_key(h->executor, &k, out, size, NULL), L3_OK);
}

static void page_keys_follow_the_shard_and_state_keys_follow_the_rank(void **state)
{
    (void)state;
    l3_memstore *memory = l3_memstore_new();
    harness *hs[3];
    for (uint32_t rank = 0; rank < 3; rank++)
        hs[rank] = harness_start(test_store_new(memory), CONFIG, test_layout(2, rank % 2, rank),
                                 l3_monotonic_clock());
    char a0[256], b0[256], o0[256], a1[256], b1[256];
    keys_of(hs[0], 0, a0, sizeof a0);
    keys_of(hs[1], 0, b0, sizeof b0);
    keys_of(hs[2], 0, o0, sizeof o0);
    keys_of(hs[0], 1, a1, sizeof a1);
    keys_of(hs[1], 1, b1, sizeof b1);
    assert_string_equal(a0, b0);
    assert_string_not_equal(a0, o0);
    assert_string_not_equal(a1, b1);
    for (int i = 0; i < 3; i++)
        harness_free(hs[i]);
    l3_memstore_free(memory);
}

static void a_sharded_block_moves_to_its_new_owner_through_the_store(void **state)
{
    (void)state;
    l3_memstore *memory = l3_memstore_new();
    harness *writers[2], *readers[2];
    for (uint32_t rank = 0; rank < 2; rank++)
        writers[rank] = harness_start(test_store_new(memory), CONFIG, test_layout(2, rank, rank),
                                      l3_monotonic_clock());
    /* Block 2 of group 0 is rank 1's local block 1: the pool's first 8
     * bytes. */
    memcpy(writers[1]->pool, "KV01KV01", 8);
    for (int w = 0; w < 2; w++) {
        SUBMIT(writers[w], PUT(1, "h", 2));
        l3_completion *fact = harness_wait(writers[w], 1);
        assert_true(fact[0].success[0] && fact[0].num_keys == 1 && fact[0].retired);
    }
    assert_int_equal(l3_memstore_count(memory), 1);
    /* Block 3 belongs to rank 0 as its local block 2, at the second LCM
     * block. */
    for (uint32_t rank = 0; rank < 2; rank++)
        readers[rank] = harness_start(test_store_new(memory), CONFIG, test_layout(2, rank, rank),
                                      l3_monotonic_clock());
    for (int r = 0; r < 2; r++) {
        SUBMIT(readers[r], GET(1, "h", 3));
        l3_completion *fact = harness_wait(readers[r], 1);
        assert_true(fact[0].success[0] && fact[0].num_keys == 1 && fact[0].retired);
        ASSERT_BOOLS(fact[0].object_failures, fact[0].num_keys, false);
    }
    assert_memory_equal(readers[0]->pool + 24, "KV01KV01", 8);
    for (size_t i = 0; i < readers[1]->pool_len; i++)
        assert_int_equal(readers[1]->pool[i], 0);
    for (int i = 0; i < 2; i++) {
        harness_free(writers[i]);
        harness_free(readers[i]);
    }
    l3_memstore_free(memory);
}

static void a_non_owner_is_neutral_and_moves_no_bytes(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    harness *h = harness_start(store, CONFIG, test_layout(2, 1, 1), l3_monotonic_clock());
    /* Block 3 belongs to rank 0. */
    SUBMIT(h, GET(1, "h", 3));
    l3_completion *fact = harness_wait(h, 1);
    assert_true(fact[0].success[0] && fact[0].retired && !fact[0].object_failures[0]);
    assert_int_equal(test_store_calls(store), 0);
    l3_snapshot snap;
    const l3_operation_snapshot *get_row = row(&snap, h->executor, "get");
    assert_true(get_row->success_keys == 0.0 && get_row->success_bytes == 0.0);
    harness_free(h);
}

static void a_job_without_native_work_cannot_recover_an_open_backend(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    store->exists = failing_exists;
    harness *h = harness_start(store, CONFIG, test_layout(2, 1, 1), l3_monotonic_clock());
    l3_executor *e = h->executor;
    SUBMIT(h, QUERY(1, K("h")));
    l3_completion *c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, false);
    l3_snapshot before, after;
    l3_executor_snapshot(e, &before);
    assert_string_not_equal(before.health_state, "healthy");
    SUBMIT(h, GET(2, "h", 3));
    c = harness_wait(h, 1);
    ASSERT_BOOLS(c[0].success, c[0].num_keys, true);
    l3_executor_snapshot(e, &after);
    assert_string_equal(after.health_state, before.health_state);
    assert_int_equal(after.health_term, before.health_term);
    assert_int_equal(test_store_calls(store), 0);
    harness_free(h);
}

static void mixed_owner_results_keep_their_logical_order(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    harness *h = harness_start(store, CONFIG, test_layout(2, 0, 0), l3_monotonic_clock());
    l3_executor *e = h->executor;
    const l3_storage_key keys[] = {
        { .group = 0, .content_hash = "absent-peer", .page_offset = 0 },
        { .group = 0, .content_hash = "absent-local", .page_offset = 0 },
        { .group = 1, .content_hash = "state", .page_offset = 0 },
    };
    char names[3][256];
    for (int i = 0; i < 3; i++)
        assert_int_equal(l3_executor_object_key(e, &keys[i], names[i], sizeof names[i], NULL), L3_OK);
    uint8_t payload[16];
    memset(payload, 7, sizeof payload);
    bool ok, fail;
    l3_io_result r = { .success = &ok, .object_failures = &fail };
    const char *state_key[] = { names[2] };
    l3_store *m = l3_memstore_store(store->memory);
    assert_int_equal(m->ops->batch_put_from(m, state_key, 1, (l3_host_buffer){ payload, 16 },
                                            &(l3_range){ 0, 16 }, &r, NULL),
                     L3_OK);
    /* Block 2 of the sharded group is rank 1's; block 3 is rank 0's. */
    const int32_t blocks[] = { 2, 3, 1 };
    SUBMIT(h, (l3_operation){ .kind = L3_OP_GET, .op_id = 1, .keys = keys, .num_keys = 3,
                              .host_blocks = blocks, .num_host_blocks = 3 });
    l3_completion *fact = harness_wait(h, 1);
    ASSERT_BOOLS(fact[0].success, fact[0].num_keys, true, false, true);
    ASSERT_BOOLS(fact[0].object_failures, fact[0].num_keys, false, true, false);
    assert_true(fact[0].retired);
    l3_snapshot snap;
    const l3_operation_snapshot *get_row = row(&snap, e, "get");
    assert_true(get_row->success_keys == 1.0 && get_row->failed_keys == 1.0 &&
                get_row->success_bytes == 16.0);
    assert_int_equal(store->call_num_keys[0], 2);
    assert_string_equal(store->call_keys[0][0], names[1]);
    assert_string_equal(store->call_keys[0][1], names[2]);
    harness_free(h);
}

static void a_failing_store_and_its_cooldown_keep_non_owners_neutral(void **state)
{
    (void)state;
    test_store *store = test_store_new(NULL);
    store->get = failing_get;
    l3_executor_config config = CONFIG;
    config.recovery_interval = 60.0;
    harness *h = harness_start(store, config, test_layout(2, 0, 0), l3_monotonic_clock());
    l3_executor *e = h->executor;
    const l3_storage_key keys[] = { K("peer"), K("local") };
    const int32_t blocks[] = { 2, 3 };
    for (uint64_t op_id = 1; op_id <= 2; op_id++) {
        SUBMIT(h, (l3_operation){ .kind = L3_OP_GET, .op_id = op_id, .keys = keys, .num_keys = 2,
                                  .host_blocks = blocks, .num_host_blocks = 2 });
        l3_completion *fact = harness_wait(h, 1);
        ASSERT_BOOLS(fact[0].success, fact[0].num_keys, true, false);
        assert_true(fact[0].retired);
        ASSERT_BOOLS(fact[0].object_failures, fact[0].num_keys, false, false);
    }
    assert_int_equal(test_store_calls(store), 1);
    l3_snapshot snap;
    const l3_operation_snapshot *get_row = row(&snap, e, "get");
    assert_true(get_row->failed_keys == 2.0 && get_row->success_keys == 0.0 &&
                get_row->success_bytes == 0.0);
    harness_free(h);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stale_reports_cannot_reopen_a_failed_recovery),
        cmocka_unit_test(a_snapshot_cannot_take_the_recovery_probe),
        cmocka_unit_test(a_slow_query_blocks_neither_another_worker_nor_the_submitter),
        cmocka_unit_test(a_cancelled_queued_get_never_reaches_the_store),
        cmocka_unit_test(a_failing_query_degrades_without_killing_its_worker),
        cmocka_unit_test(unproven_retirement_disables_io_and_refuses_a_clean_close),
        cmocka_unit_test(independent_executors_share_objects_through_the_store),
        cmocka_unit_test(operation_credits_bound_what_is_in_flight),
        cmocka_unit_test(the_key_limit_and_increasing_ids_are_enforced),
        cmocka_unit_test(a_retired_get_miss_is_an_object_failure_not_a_backend_fault),
        cmocka_unit_test(snapshots_count_cancelled_queued_work_and_late_completions),
        cmocka_unit_test(an_open_backend_rejects_jobs_visibly_without_calling_it),
        cmocka_unit_test(pressure_tracks_the_queue_and_cancelled_native_work_until_it_retires),
        cmocka_unit_test(query_pressure_counts_metadata_jobs_without_payload_bytes),
        cmocka_unit_test(a_rejected_or_failed_get_reports_no_object_failure),
        cmocka_unit_test(malformed_facts_cannot_publish),
        cmocka_unit_test(a_put_never_reports_object_failures),
        cmocka_unit_test(close_waits_for_native_retirement_then_closes_the_store_once),
        cmocka_unit_test(a_close_timeout_keeps_the_store_and_the_pool),
        cmocka_unit_test(a_namespace_changes_only_while_idle),
        cmocka_unit_test(clearing_the_namespace_deletes_its_objects_and_keeps_its_name),
        cmocka_unit_test(a_failed_clear_keeps_the_namespace_and_its_objects),
        cmocka_unit_test(a_new_weight_version_publishes_under_a_new_namespace),
        cmocka_unit_test(a_rejected_put_retires_and_keeps_the_backend_in_service),
        cmocka_unit_test(page_keys_follow_the_shard_and_state_keys_follow_the_rank),
        cmocka_unit_test(a_sharded_block_moves_to_its_new_owner_through_the_store),
        cmocka_unit_test(a_non_owner_is_neutral_and_moves_no_bytes),
        cmocka_unit_test(a_job_without_native_work_cannot_recover_an_open_backend),
        cmocka_unit_test(mixed_owner_results_keep_their_logical_order),
        cmocka_unit_test(a_failing_store_and_its_cooldown_keep_non_owners_neutral),
    };
    return cmocka_run_group_tests_name("executor", tests, NULL, NULL);
}
