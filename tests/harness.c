#include "harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "aligned.h"
#include "l3_keys.h"

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static void *kept[4096];
static size_t num_kept;

static void quiet(const char *level, const char *message, void *ctx)
{
    (void)level; (void)message; (void)ctx;
}

void quiet_logs(void)
{
    if (!getenv("L3_TEST_VERBOSE"))
        l3_set_logger(quiet, NULL);
}

static bool skipped_for_environment;

void skip_environment(const char *why)
{
    fprintf(stderr, "[ SKIP     ] %s\n", why);
    skipped_for_environment = true;
    skip();
}

int run_environment_case(const char *group, const struct CMUnitTest *cases, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cases[i].name, name) == 0) {
            int failed = _cmocka_run_group_tests(group, &cases[i], 1, NULL, NULL);
            return failed ? failed : skipped_for_environment ? 77 : 0;
        }
    fprintf(stderr, "%s: no environment-dependent case named %s\n", group, name);
    return 1;
}

void keep_alive(void *p)
{
    pthread_mutex_lock(&keep_mu);
    if (num_kept < sizeof kept / sizeof kept[0])
        kept[num_kept++] = p;
    pthread_mutex_unlock(&keep_mu);
}

event *event_new(void)
{
    event *ev = calloc(1, sizeof *ev);
    pthread_mutex_init(&ev->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ev->cond, &attr);
    pthread_condattr_destroy(&attr);
    return ev;
}

void event_set(event *ev)
{
    pthread_mutex_lock(&ev->mu);
    ev->set = true;
    pthread_cond_broadcast(&ev->cond);
    pthread_mutex_unlock(&ev->mu);
}

bool event_wait(event *ev, double timeout)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)timeout;
    deadline.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&ev->mu);
    while (!ev->set)
        if (pthread_cond_timedwait(&ev->cond, &ev->mu, &deadline) != 0)
            break;
    bool set = ev->set;
    pthread_mutex_unlock(&ev->mu);
    return set;
}

fake_clock *fake_clock_new(double now)
{
    fake_clock *c = calloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->now = now;
    keep_alive(c);
    return c;
}

void fake_clock_set(fake_clock *c, double now)
{
    pthread_mutex_lock(&c->mu);
    c->now = now;
    pthread_mutex_unlock(&c->mu);
}

static double fake_now(void *ctx)
{
    fake_clock *c = ctx;
    pthread_mutex_lock(&c->mu);
    double now = c->now;
    pthread_mutex_unlock(&c->mu);
    return now;
}

l3_clock fake_clock_of(fake_clock *c) { return (l3_clock){ .now = fake_now, .ctx = c }; }

static void record(test_store *s, const char *kind, const char *const *keys, size_t n)
{
    pthread_mutex_lock(&s->calls_mu);
    if (s->num_calls < MAX_CALLS) {
        size_t c = s->num_calls++;
        s->call_kind[c] = kind;
        s->call_num_keys[c] = n;
        for (size_t i = 0; i < n && i < 8; i++)
            s->call_keys[c][i] = strdup(keys[i]);
    }
    pthread_mutex_unlock(&s->calls_mu);
}

static l3_store *mem(test_store *s) { return l3_memstore_store(s->memory); }

static l3_status ts_exists(l3_store *st, const char *const *keys, size_t n, bool *flags,
                           l3_error *err)
{
    test_store *s = (test_store *)st;
    if (s->exists)
        return s->exists(s->ctx, keys, n, flags, err);
    return mem(s)->ops->batch_exists(mem(s), keys, n, flags, err);
}

static l3_status ts_get(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                        const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    test_store *s = (test_store *)st;
    record(s, "get", keys, n);
    if (s->get)
        return s->get(s->ctx, keys, n, host, ranges, r, err);
    return mem(s)->ops->batch_get_into(mem(s), keys, n, host, ranges, r, err);
}

static l3_status ts_put(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                        const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    test_store *s = (test_store *)st;
    record(s, "put", keys, n);
    if (s->put)
        return s->put(s->ctx, keys, n, host, ranges, r, err);
    return mem(s)->ops->batch_put_from(mem(s), keys, n, host, ranges, r, err);
}

static bool ts_remove(l3_store *st, const char *prefix)
{
    test_store *s = (test_store *)st;
    return !s->remove_fails && mem(s)->ops->remove_by_prefix(mem(s), prefix);
}

static void ts_close(l3_store *st) { atomic_fetch_add(&((test_store *)st)->closes, 1); }
static bool ts_failures_retire(l3_store *st) { return ((test_store *)st)->failures_retire; }
/* The harness frees the test store itself, after reading its counters. */
static void ts_destroy(l3_store *st) { (void)st; }

static const l3_store_ops test_ops = {
    .batch_exists = ts_exists,
    .batch_get_into = ts_get,
    .batch_put_from = ts_put,
    .remove_by_prefix = ts_remove,
    .close = ts_close,
    .failures_retire = ts_failures_retire,
    .destroy = ts_destroy,
};

test_store *test_store_new(l3_memstore *memory)
{
    test_store *s = calloc(1, sizeof *s);
    s->base.ops = &test_ops;
    s->memory = memory ? memory : l3_memstore_new();
    s->own_memory = memory == NULL;
    s->failures_retire = true;
    pthread_mutex_init(&s->calls_mu, NULL);
    return s;
}

size_t test_store_calls(test_store *s)
{
    pthread_mutex_lock(&s->calls_mu);
    size_t n = s->num_calls;
    pthread_mutex_unlock(&s->calls_mu);
    return n;
}

static void test_store_free(test_store *s)
{
    for (size_t c = 0; c < s->num_calls; c++)
        for (size_t i = 0; i < s->call_num_keys[c] && i < 8; i++)
            free(s->call_keys[c][i]);
    if (s->own_memory)
        l3_memstore_free(s->memory);
    pthread_mutex_destroy(&s->calls_mu);
    free(s);
}

const l3_executor_config CONFIG = {
    .max_operations = 32,
    .max_keys_per_operation = 256,
    .query_workers = 2,
    .read_workers = 2,
    .write_workers = 1,
    .failure_threshold = 1,
    .recovery_interval = 30.0,
};

l3_host_layout test_layout(uint32_t shard_count, uint32_t owner_rank, uint32_t tp_rank)
{
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ .packing = 1, .block_bytes = 8, .shard_count = shard_count };
    l.groups[1] = (l3_group_layout){ .packing = 1, .block_bytes = 16, .shard_count = 1 };
    l.num_groups = 2;
    l.lcm_block_bytes = 24;
    l.num_lcm_blocks = 4;
    l.owner_rank = owner_rank;
    l.tp_rank = tp_rank;
    return l;
}

l3_host_layout page_layout(uint32_t page, uint32_t blocks)
{
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ .packing = 1, .block_bytes = page, .shard_count = 1 };
    l.num_groups = 1;
    l.lcm_block_bytes = page;
    l.num_lcm_blocks = blocks;
    return l;
}

harness *harness_start_raw(l3_store *store, l3_executor_config config, l3_host_layout layout,
                           l3_clock clock)
{
    harness *h = calloc(1, sizeof *h);
    h->pool_len = l3_layout_bytes(&layout);
    /* Page-aligned, as an engine's pinned Host pool is. */
    if (!(h->pool = l3_aligned_alloc(4096, h->pool_len, true)))
        fail_msg("allocating the pool");
    l3_namespace ns = { .deployment_id = "deployment", .has_draft = false };
    l3_error err;
    l3_status st = l3_executor_start(store, (l3_host_buffer){ h->pool, h->pool_len }, &layout, &ns,
                                     "v1", &config, clock, &h->executor, &err);
    if (st != L3_OK)
        fail_msg("l3_executor_start: %s", err.msg);
    return h;
}

harness *harness_start(test_store *store, l3_executor_config config, l3_host_layout layout,
                       l3_clock clock)
{
    harness *h = harness_start_raw(&store->base, config, layout, clock);
    h->store = store;
    return h;
}

typedef struct borrowed {
    l3_store base;
    l3_store *inner;
    l3_store_ops ops; /* borrowed_ops, with the inner store's gets in three calls where it has them */
} borrowed;

static l3_status b_exists(l3_store *s, const char *const *keys, size_t n, bool *flags, l3_error *err)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->batch_exists(in, keys, n, flags, err);
}
static l3_status b_get(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                       const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->batch_get_into(in, keys, n, host, ranges, r, err);
}
static l3_status b_put(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                       const l3_range *ranges, l3_io_result *r, l3_error *err)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->batch_put_from(in, keys, n, host, ranges, r, err);
}
static bool b_remove(l3_store *s, const char *prefix)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->remove_by_prefix(in, prefix);
}
static void b_close(l3_store *s) { (void)s; }
static bool b_retire(l3_store *s)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->failures_retire(in);
}
static void b_destroy(l3_store *s) { free(s); }
static l3_status b_register(l3_store *s, const l3_host_buffer *regions, size_t n, l3_error *err)
{
    return l3_store_register_hosts(((borrowed *)s)->inner, regions, n, err);
}

static l3_status b_get_begin(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                             const l3_range *ranges, l3_io_result *r, int notify_fd, l3_store_job **job,
                             l3_error *err)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->get_begin(in, keys, n, host, ranges, r, notify_fd, job, err);
}

static l3_status b_put_begin(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                             const l3_range *ranges, l3_io_result *r, int notify_fd, l3_store_put_job **job,
                             l3_error *err)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->put_begin(in, keys, n, host, ranges, r, notify_fd, job, err);
}

static void b_forget_notify(l3_store *s, int notify_fd)
{
    l3_store *in = ((borrowed *)s)->inner;
    in->ops->forget_notify(in, notify_fd);
}

static bool b_driver_wait(l3_store *s, int notify_fd, double until)
{
    l3_store *in = ((borrowed *)s)->inner;
    return in->ops->driver_wait(in, notify_fd, until);
}

static void b_driver_start(l3_store *s, int notify_fd, size_t ops)
{
    l3_store *in = ((borrowed *)s)->inner;
    in->ops->driver_start(in, notify_fd, ops);
}

static const l3_store_ops borrowed_ops = {
    .batch_exists = b_exists, .batch_get_into = b_get, .batch_put_from = b_put,
    .remove_by_prefix = b_remove, .close = b_close, .failures_retire = b_retire,
    .destroy = b_destroy, .register_hosts = b_register,
};

l3_store *borrowed_store(l3_store *inner)
{
    borrowed *b = calloc(1, sizeof *b);
    b->ops = borrowed_ops;
    if (inner->ops->get_begin) {
        b->ops.get_begin = b_get_begin;
        b->ops.get_poll = inner->ops->get_poll; /* (a job is its store's own) */
        b->ops.get_end = inner->ops->get_end;
    }
    if (inner->ops->put_begin) {
        b->ops.put_begin = b_put_begin;
        b->ops.put_poll = inner->ops->put_poll;
        b->ops.put_end = inner->ops->put_end;
    }
    if (inner->ops->forget_notify)
        b->ops.forget_notify = b_forget_notify;
    if (inner->ops->driver_wait)
        b->ops.driver_wait = b_driver_wait;
    if (inner->ops->driver_start)
        b->ops.driver_start = b_driver_start;
    b->base.ops = &b->ops;
    b->inner = inner;
    return &b->base;
}

harness *harness_new(test_store *store, l3_executor_config config)
{
    return harness_start(store, config, test_layout(1, 0, 0), l3_monotonic_clock());
}

l3_completion *harness_wait(harness *h, size_t count)
{
    double deadline = l3_monotonic_seconds() + 3.0;
    if (h->num_polls + 1 >= sizeof h->polls / sizeof h->polls[0])
        fail_msg("too many waits in one test");
    free(h->got);
    h->got = calloc(count + 16, sizeof *h->got);
    h->num_got = 0;
    while (h->num_got < count) {
        if (l3_monotonic_seconds() >= deadline)
            fail_msg("only %zu of %zu completions within 3 s", h->num_got, count);
        l3_poll *poll = &h->polls[h->num_polls];
        assert_int_equal(l3_executor_poll(h->executor, poll, NULL), L3_OK);
        if (poll->num_completions) {
            if (h->num_got + poll->num_completions > count)
                fail_msg("%zu completions; expected %zu", h->num_got + poll->num_completions, count);
            memcpy(h->got + h->num_got, poll->completions,
                   poll->num_completions * sizeof *h->got);
            h->num_got += poll->num_completions;
            h->num_polls++;
        } else {
            l3_poll_release(poll);
        }
        usleep(1000);
    }
    assert_int_equal(h->num_got, count);
    return h->got;
}

l3_status harness_close(harness *h, double timeout)
{
    if (!h->executor)
        return L3_OK;
    l3_status st = l3_executor_close(h->executor, timeout, NULL);
    if (st == L3_EUNRETIRED) {
        /* The pool must outlive the leaked workers. */
        h->leaked = true;
        keep_alive(h->pool);
        keep_alive(h->store);
        keep_alive(h);
    }
    return st;
}

void harness_free(harness *h)
{
    if (!h->leaked && h->executor) {
        if (harness_close(h, 2.0) != L3_OK && h->leaked)
            return;
        l3_executor_free(h->executor);
        h->executor = NULL;
    }
    if (h->leaked)
        return;
    for (size_t i = 0; i < h->num_polls; i++)
        l3_poll_release(&h->polls[i]);
    free(h->got);
    if (h->store)
        test_store_free(h->store);
    free(h->pool);
    free(h);
}

l3_storage_key key(const char *hash)
{
    return (l3_storage_key){ .group = 0, .content_hash = hash, .page_offset = 0 };
}

l3_operation query(uint64_t op_id, const l3_storage_key *keys, size_t n)
{
    return (l3_operation){ .kind = L3_OP_QUERY, .op_id = op_id, .keys = keys, .num_keys = n };
}

l3_operation get_op(uint64_t op_id, const l3_storage_key *k, const int32_t *block)
{
    return (l3_operation){ .kind = L3_OP_GET, .op_id = op_id, .keys = k, .num_keys = 1,
                           .host_blocks = block, .num_host_blocks = 1 };
}

l3_operation put_op(uint64_t op_id, const l3_storage_key *k, const int32_t *block)
{
    return (l3_operation){ .kind = L3_OP_PUT, .op_id = op_id, .keys = k, .num_keys = 1,
                           .host_blocks = block, .num_host_blocks = 1 };
}

l3_operation cancel_op(uint64_t op_id) { return (l3_operation){ .kind = L3_OP_CANCEL, .op_id = op_id }; }

void submit_ok(harness *h, const l3_operation *ops, size_t n)
{
    l3_error err;
    l3_status st = l3_executor_submit(h->executor, ops, n, &err);
    if (st != L3_OK)
        fail_msg("submit: %s", err.msg);
}

void ref_key(const char *version, const char *hash, char *out, size_t size)
{
    char prefix[L3_KEY_PREFIX_LEN + 1];
    assert_int_equal(l3_key_prefix("deployment", version, "", prefix, NULL), L3_OK);
    assert_int_equal(l3_object_key(prefix, hash, 0, 0, 0, out, size, NULL), L3_OK);
}
