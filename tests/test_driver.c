/* The executor's drivers (executor/driver.h): one thread runs many gets
 * (and one many puts) at once from the submission of their I/O to their
 * verified completion (issue 48). Through the slab store on each engine: a
 * get that ends after later ones keeps its own result while new gets take
 * the freed places; many gets in flight, read in any order, each get their
 * own bytes; many puts in flight, their writes ending in any order, each
 * land their own bytes; a put waiting at the read-first gate leaves its
 * driver free to finish the put it waits for; the drivers and the
 * thread-per-operation workers serve the same bytes. */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <sys/eventfd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "harness.h"
#include "l3_slabstore.h"
#include "engine.h"
#include "io_internal.h"
#include "gate.h"
#include "slab.h"
#include "slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define PAGE 16384
#define PAGES 64
#define KEYS_PER_GET 4

typedef struct env {
    char path[512];
    l3_slabstore *store;
    harness *h;
} env;

static l3_host_layout pages_layout(void) { return page_layout(PAGE, PAGES); }

static env *start(l3_engine_kind kind, bool on_workers)
{
    env *v = calloc(1, sizeof *v);
    temp_store_path(v->path, sizeof v->path, "driver");
    l3_slab_options o = test_options(v->path, 32 * MIB, kind);
    l3_error err;
    if (l3_slabstore_open(&o, &v->store, &err) != L3_OK)
        fail_msg("open: %s", err.msg);
    l3_executor_config c = CONFIG;
    c.read_workers = 8;
    c.write_workers = 8;
    c.gets_on_workers = c.puts_on_workers = on_workers;
    v->h = harness_start_raw(l3_slabstore_store(v->store), c, pages_layout(), l3_monotonic_clock());
    return v;
}

static void stop(env *v)
{
    harness_free(v->h); /* frees the store too */
    unlink(v->path);
    free(v);
}

static char hashes[PAGES][32];

/* Put page p (its block p + 1, stamped with p) under hash "page-p". */
static void put_pages(env *v, size_t n)
{
    for (size_t p = 0; p < n; p++) {
        snprintf(hashes[p], sizeof hashes[p], "page-%zu", p);
        fill_pattern(v->h->pool + p * PAGE, PAGE, (uint32_t)p + 1);
        SUBMIT(v->h, PUT(p + 1, hashes[p], (int32_t)p + 1));
        assert_true(harness_wait(v->h, 1)[0].success[0]);
    }
    memset(v->h->pool, 0, (size_t)PAGES * PAGE);
}

/* Whether block b holds page p's bytes. */
static bool holds(env *v, int32_t b, size_t p)
{
    uint8_t *want = malloc(PAGE);
    fill_pattern(want, PAGE, (uint32_t)p + 1);
    bool same = memcmp(v->h->pool + (size_t)(b - 1) * PAGE, want, PAGE) == 0;
    free(want);
    return same;
}

/* The completion of op_id among the harness's last `n`. */
static l3_completion *of(l3_completion *got, size_t n, uint64_t op_id)
{
    for (size_t i = 0; i < n; i++)
        if (got[i].op_id == op_id)
            return &got[i];
    fail_msg("no completion for operation %llu (got %llu, %llu)", (unsigned long long)op_id,
             (unsigned long long)got[0].op_id, n > 1 ? (unsigned long long)got[1].op_id : 0ull);
    return NULL;
}

/* Poll until at least `n` completions are in (within 5 s), into got[],
 * room for `cap`; how many. */
static size_t collect_some(env *v, l3_completion *got, size_t n, size_t cap)
{
    double deadline = l3_monotonic_seconds() + 5.0;
    size_t have = 0;
    while (have < n) {
        if (l3_monotonic_seconds() >= deadline)
            fail_msg("only %zu of %zu completions within 5 s", have, n);
        l3_poll poll;
        assert_int_equal(l3_executor_poll(v->h->executor, &poll, NULL), L3_OK);
        for (size_t i = 0; i < poll.num_completions; i++) {
            assert_true(have < cap);
            l3_completion *c = &poll.completions[i];
            got[have] = *c;
            got[have].success = malloc(c->num_keys);
            got[have].object_failures = malloc(c->num_keys);
            memcpy(got[have].success, c->success, c->num_keys);
            memcpy(got[have].object_failures, c->object_failures, c->num_keys);
            have++;
        }
        bool idle = poll.num_completions == 0;
        l3_poll_release(&poll);
        if (idle)
            l3_executor_wait(v->h->executor, 0.05);
    }
    return have;
}

/* Exactly `n` completions, into got[0..n). */
static void collect(env *v, l3_completion *got, size_t n)
{
    assert_int_equal(collect_some(v, got, n, n), n);
}

static void release(l3_completion *got, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(got[i].success);
        free(got[i].object_failures);
    }
}

/* Gets A, B, C at once, B's read held back 300 ms: A and C end first, and
 * a fourth get, D, takes a place they freed while B is still reading. B
 * must come back with its own result and bytes. (A driver that moved its
 * running gets down its table as others ended left B's store call writing
 * into the place D then took: B came back failed.) */
static void a_late_get_keeps_its_result_while_new_gets_take_freed_places(l3_engine_kind kind)
{
    env *v = start(kind, false);
    put_pages(v, 4);
    /* Each get reads its header and its page: two requests, so B's first is the third. */
    l3_io_fault f = { .kind = L3_FAULT_DELAY, .ops = 1, .after = 2, .count = 1, .shift = 300000 };
    l3_slabstore_set_fault(v->store, &f);
    SUBMIT(v->h, GET(100, hashes[0], 11), GET(101, hashes[1], 12), GET(102, hashes[2], 13));
    l3_completion first[2], rest[2];
    collect(v, first, 2);
    assert_true(of(first, 2, 100)->success[0]);
    assert_true(of(first, 2, 102)->success[0]); /* C ended before B */
    SUBMIT(v->h, GET(103, hashes[3], 14));
    collect(v, rest, 2);
    l3_completion *b = of(rest, 2, 101), *d = of(rest, 2, 103);
    assert_true(b->retired && d->retired);
    assert_true(b->success[0]);
    assert_true(d->success[0]);
    release(first, 2);
    release(rest, 2);
    assert_true(holds(v, 11, 0) && holds(v, 12, 1) && holds(v, 13, 2) && holds(v, 14, 3));
    stop(v);
}

/* 48 gets of 4 pages each, 16 in flight, a quarter of the reads held back
 * 1-2 ms at random so that they end out of order: every page of every get
 * is served, into its own blocks, with its own bytes. */
static void many_gets_in_flight_each_get_their_own_bytes(l3_engine_kind kind, bool on_workers)
{
    env *v = start(kind, on_workers);
    put_pages(v, 16);
    l3_io_fault f = { .kind = L3_FAULT_DELAY, .ops = 1, .permille = 250, .seed = 7, .shift = 1500 };
    if (!getenv("NOFAULT"))
        l3_slabstore_set_fault(v->store, &f);
    const size_t gets = 48, inflight = 16;
    size_t next = 0, done = 0;
    while (done < gets) {
        for (; next < gets && next - done < inflight; next++) {
            size_t slot = next % inflight;
            l3_storage_key k[KEYS_PER_GET];
            int32_t blocks[KEYS_PER_GET];
            for (size_t i = 0; i < KEYS_PER_GET; i++) {
                k[i] = key(hashes[(next * 3 + i * 5) % 16]);
                blocks[i] = (int32_t)(slot * KEYS_PER_GET + i + 1);
            }
            l3_operation op = { .kind = L3_OP_GET, .op_id = 1000 + next, .keys = k, .num_keys = KEYS_PER_GET,
                                .host_blocks = blocks, .num_host_blocks = KEYS_PER_GET };
            submit_ok(v->h, &op, 1);
        }
        l3_completion c[16];
        size_t got = collect_some(v, c, 1, 16);
        for (size_t k = 0; k < got; k++) {
            size_t g = (size_t)(c[k].op_id - 1000), slot = g % inflight;
            assert_true(c[k].retired);
            for (size_t i = 0; i < KEYS_PER_GET; i++) {
                assert_true(c[k].success[i]);
                assert_true(holds(v, (int32_t)(slot * KEYS_PER_GET + i + 1), (g * 3 + i * 5) % 16));
            }
        }
        release(c, got);
        done += got;
    }
    stop(v);
}

/* A read that comes back short is sent again for the rest at once, not
 * at the I/O timeout: the driver's poll that reaps it also resubmits it.
 * (One that did not left the get waiting 30 s, then unretired.) */
static void a_short_read_is_resent_at_once(l3_engine_kind kind)
{
    env *v = start(kind, false);
    put_pages(v, 2);
    l3_io_fault f = { .kind = L3_FAULT_SHORT, .ops = 1, .count = 2 };
    l3_slabstore_set_fault(v->store, &f);
    double t0 = l3_monotonic_seconds();
    SUBMIT(v->h, GET(100, hashes[0], 11));
    l3_completion c;
    collect(v, &c, 1);
    assert_true(c.retired && c.success[0]);
    assert_true(l3_monotonic_seconds() - t0 < 2.0);
    assert_true(holds(v, 11, 0));
    release(&c, 1);
    stop(v);
}

/* Two executors one after the other over one store: the second's driver
 * is woken by its own reads, though its eventfd may reuse the number of
 * the first's, closed (the store's contexts forget a driver's eventfd when
 * it stops; one that kept it kept signalling the closed one, and the get
 * waited for its I/O timeout). */
static void a_second_executor_s_driver_is_woken_by_its_reads(l3_engine_kind kind)
{
    env *v = start(kind, false);
    put_pages(v, 2);
    l3_store *st = l3_slabstore_store(v->store);
    l3_executor_config c = CONFIG;
    c.read_workers = 4;
    for (int round = 0; round < 2; round++) {
        harness *h = harness_start_raw(borrowed_store(st), c, pages_layout(), l3_monotonic_clock());
        double t0 = l3_monotonic_seconds();
        SUBMIT(h, GET(100, hashes[round], 11));
        assert_true(harness_wait(h, 1)[0].success[0]);
        assert_true(l3_monotonic_seconds() - t0 < 2.0);
        harness_free(h);
    }
    stop(v);
}

/* An engine of options `o` over the file at `path`, opened O_DIRECT (its
 * descriptor into *fd); NULL when either cannot be had. */
static l3_io_engine *engine_over(const char *path, const l3_io_options *o, int *fd)
{
    l3_io_engine *e;
    l3_error err;
    *fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
    return *fd >= 0 && l3_io_engine_open(o, fd, 1, &e, &err) == L3_OK ? e : NULL;
}

/* An io_uring engine of `contexts` contexts, each with a bounce buffer of
 * `bounce` bytes, that registers the Host regions it is given, over the
 * file at `path` (its descriptor into *fd); NULL when it cannot be had. */
static l3_io_engine *registering_engine(const char *path, unsigned contexts, size_t bounce, int *fd)
{
    return engine_over(path, &(l3_io_options){ .kind = L3_ENGINE_IO_URING, .contexts = contexts, .depth = 8,
                                               .bounce_bytes = bounce, .alignment = 4096,
                                               .register_buffers = true }, fd);
}

/* An engine of `contexts` contexts over a fresh file (its path into
 * path[512], its descriptor into *fd). */
static l3_io_engine *engine_on_file(l3_engine_kind kind, const char *name, unsigned contexts, char *path, int *fd)
{
    temp_store_path(path, 512, name);
    l3_io_engine *e = engine_over(path, &(l3_io_options){ .kind = kind, .contexts = contexts, .depth = 8,
                                                          .alignment = 4096 }, fd);
    assert_non_null(e);
    return e;
}

/* The engine's poll without sleeping, as a driver uses it: whenever a poll
 * returns with nothing finished, every unfinished request is in flight, so
 * the context's eventfd is signalled when one finishes. A read reaped
 * short is sent again for the rest by the poll that reaped it. */
static void a_poll_leaves_nothing_unsent_behind_it(l3_engine_kind kind)
{
    enum { LEN = 65536 };
    char path[512];
    int fd;
    l3_io_engine *e = engine_on_file(kind, "poll", 1, path, &fd);
    l3_error err;
    uint8_t *buf = aligned_pool(LEN);
    fill_pattern(buf, LEN, 9);
    l3_io_req req = { .write = true, .offset = 0, .buf = buf, .len = LEN };
    l3_io_ctx *ctx = l3_io_acquire(e);
    bool retired = false;
    assert_int_equal(l3_io_run(e, ctx, &req, 1, 10, &retired, &err), L3_OK);
    memset(buf, 0, LEN);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    assert_int_equal(l3_io_set_notify(e, ctx, efd, &err), L3_OK);
    l3_io_engine_set_fault(e, &(l3_io_fault){ .kind = L3_FAULT_SHORT, .ops = 1, .count = 1 });
    req = (l3_io_req){ .offset = 0, .buf = buf, .len = LEN };
    assert_int_equal(l3_io_start(e, ctx, &req, 1, 10, &retired, &err), L3_OK);
    size_t done, got = 0, sleeps = 0;
    while (got == 0) {
        assert_int_equal(l3_io_poll_some(e, ctx, &done, 1, &got, &retired, &err), L3_OK);
        if (got)
            break;
        struct pollfd p = { .fd = efd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 2000), 1); /* signalled: something was in flight */
        eventfd_t v;
        (void)eventfd_read(efd, &v);
        assert_true(++sleeps < 10);
    }
    assert_int_equal(req.res, LEN);
    assert_int_equal(l3_io_engine_faults(e), 1); /* (it was short once) */
    assert_int_equal(l3_io_finish(e, ctx, &retired, &err), L3_OK);
    assert_true(retired);
    uint8_t *want = aligned_pool(LEN);
    fill_pattern(want, LEN, 9);
    assert_memory_equal(buf, want, LEN);
    l3_io_release(e, ctx);
    l3_io_engine_close(e);
    close(efd);
    close(fd);
    unlink(path);
    free(buf);
    free(want);
}

/* An io_uring engine over a fresh file, and an eventfd for a driving
 * thread (the owned-context tests). */
typedef struct owned_env {
    char path[512];
    int fd, efd;
    l3_io_engine *e;
} owned_env;

static void owned_open(owned_env *v, const char *name)
{
    v->e = engine_on_file(L3_ENGINE_IO_URING, name, 1, v->path, &v->fd);
    v->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

static void owned_close(owned_env *v)
{
    l3_io_engine_close(v->e);
    close(v->efd);
    close(v->fd);
    unlink(v->path);
}

/* Write eventfd *arg after 50 ms (a thread beside a sleeping driver). */
static void *signal_later(void *arg)
{
    usleep(50000);
    (void)eventfd_write(*(int *)arg, 1);
    return NULL;
}

/* Seconds l3_io_wait_owned slept for eventfd efd, at most `most`. */
static double owned_sleep(l3_io_engine *e, int efd, double most)
{
    double t0 = l3_monotonic_seconds();
    assert_true(l3_io_wait_owned(e, efd, t0 + most));
    return l3_monotonic_seconds() - t0;
}

/* Start n 4 KiB writes on ctx (the first `stalled` of them held by the
 * device for ever: they time out after `timeout` seconds). */
static void start_writes(l3_io_engine *e, l3_io_ctx *ctx, l3_io_req *reqs, uint8_t *buf, size_t n, size_t stalled,
                         double timeout)
{
    bool retired;
    l3_error err;
    if (stalled)
        l3_io_engine_set_fault(e, &(l3_io_fault){ .kind = L3_FAULT_STALL, .ops = 2, .count = (uint32_t)stalled });
    for (size_t i = 0; i < n; i++)
        reqs[i] = (l3_io_req){ .write = true, .offset = i * 4096, .buf = buf + i * 4096, .len = 4096 };
    assert_int_equal(l3_io_start(e, ctx, reqs, n, timeout, &retired, &err), L3_OK);
}

/* End ctx's batch: every request landed, or (stalled) it timed out. */
static void end_writes(l3_io_engine *e, l3_io_ctx *ctx, bool stalled)
{
    bool retired;
    l3_error err;
    assert_int_equal(l3_io_finish(e, ctx, &retired, &err), stalled ? L3_ETIMEDOUT : L3_OK);
    l3_io_engine_set_fault(e, NULL);
}

/* A driving thread's own context (io_uring): it sleeps on its ring, not
 * on its eventfd, while its batch is in flight (false at once with none),
 * and wakes when the eventfd is written (a new operation queued), not
 * before: also after the wake armed by an earlier sleep fired into the
 * idle ring (it ends the next sleep at once, and must leave the one after
 * that with a wake armed). A context whose I/O never retired is not freed
 * when its thread forgets the eventfd. */
static void a_driver_s_sleep_on_its_ring_wakes_for_its_eventfd(void **state)
{
    (void)state;
    owned_env v;
    owned_open(&v, "owned");
    l3_io_engine *e = v.e;
    int efd = v.efd;
    uint8_t *buf = aligned_pool(4 * 4096);
    l3_io_req reqs[4];
    l3_io_ctx *ctx = l3_io_try_acquire_for(e, efd);
    assert_non_null(ctx);
    assert_true(ctx->owned);
    assert_false(l3_io_wait_owned(e, efd, l3_monotonic_seconds() + 5)); /* nothing in flight */
    start_writes(e, ctx, reqs, buf, 1, 0, 10);
    assert_true(owned_sleep(e, efd, 5) < 2); /* it lands */
    end_writes(e, ctx, false);
    start_writes(e, ctx, reqs, buf, 4, 4, 1.5); /* (it waits for 2: only the wake can end it early) */
    double slept = owned_sleep(e, efd, 0.05); /* (its wake armed) */
    assert_true(slept >= 0.04);
    (void)eventfd_write(efd, 1); /* the wake fires, nobody asleep */
    eventfd_t count;
    (void)eventfd_read(efd, &count);
    assert_true(owned_sleep(e, efd, 1) < 0.04); /* at once: the wake that fired is reported, a round first */
    pthread_t t;
    pthread_create(&t, NULL, signal_later, &efd);
    double t0 = l3_monotonic_seconds();
    while (l3_monotonic_seconds() - t0 < 0.045)
        (void)owned_sleep(e, efd, 1); /* (the fired wake's timeout may still end one early) */
    assert_true(l3_monotonic_seconds() - t0 < 0.5); /* woken by the eventfd, not by its time */
    pthread_join(t, NULL);
    end_writes(e, ctx, true);
    l3_io_release(e, ctx);
    l3_io_forget_notify(e, efd);
    bool kept = false; /* its writes never retired: the kernel may still write its memory */
    for (unsigned i = 0; i < e->num_owned; i++)
        kept = kept || e->owned[i] == ctx;
    assert_true(kept);
    owned_close(&v);
    free(buf);
}

/* Acquire a context for eventfd *arg on this thread and hand it back. */
static void *acquire_elsewhere(void *arg)
{
    l3_io_engine **pe = arg;
    return l3_io_try_acquire_for(pe[0], (int)(intptr_t)pe[1]);
}

/* A driving thread's own contexts stay its own: another thread acquiring
 * for the same eventfd gets another; its own comes back to it. */
static void a_driver_s_contexts_stay_its_own(void **state)
{
    (void)state;
    owned_env v;
    owned_open(&v, "own");
    l3_io_engine *e = v.e;
    int efd = v.efd;
    l3_io_ctx *mine = l3_io_try_acquire_for(e, efd);
    assert_non_null(mine);
    l3_io_release(e, mine);
    void *args[2] = { e, (void *)(intptr_t)efd };
    pthread_t t;
    void *theirs = NULL;
    pthread_create(&t, NULL, acquire_elsewhere, args);
    pthread_join(t, &theirs);
    assert_non_null(theirs);
    assert_ptr_not_equal(theirs, mine);
    assert_ptr_equal(l3_io_try_acquire_for(e, efd), mine);
    l3_io_release(e, mine);
    l3_io_release(e, theirs);
    l3_io_forget_notify(e, efd); /* mine is freed, theirs (another thread's) kept */
    unsigned left = 0;
    for (unsigned i = 0; i < e->num_owned; i++)
        left += e->owned[i] != NULL;
    assert_int_equal(left, 1);
    owned_close(&v);
}

/* A driver's rings made ready as it starts (l3_io_own): as many as asked,
 * its own, the Host regions already seen by each (their registration
 * done, not left to the first batch), and the first acquire takes one. */
static void a_driver_s_rings_are_made_ready_as_it_starts(void **state)
{
    (void)state;
    owned_env v;
    owned_open(&v, "ready");
    l3_io_engine *e = v.e;
    int efd = v.efd;
    uint8_t *pool = aligned_pool(1 << 20);
    l3_io_engine_set_hosts(e, &(l3_io_region){ pool, 1 << 20 }, 1);
    l3_io_own(e, efd, 3);
    assert_int_equal(e->num_owned, 3);
    for (unsigned i = 0; i < 3; i++) {
        assert_false(e->owned[i]->in_use);
        assert_int_equal(e->owned[i]->host_gen, e->host_gen); /* (registered, as the options say: here not) */
    }
    l3_io_ctx *c = l3_io_try_acquire_for(e, efd);
    assert_true(c == e->owned[0] || c == e->owned[1] || c == e->owned[2]);
    l3_io_release(e, c);
    l3_io_forget_notify(e, efd);
    owned_close(&v);
    free(pool);
}

/* Write 4 KiB at `src` through context c to file offset `at`, then read
 * it back into src + 4 KiB: 0, or why not. */
static int round_trip(l3_io_engine *e, l3_io_ctx *c, uint8_t *src, uint64_t at)
{
    bool retired;
    l3_error err;
    fill_pattern(src, 4096, (uint32_t)at);
    memset(src + 4096, 0, 4096);
    l3_io_req w = { .write = true, .offset = at, .buf = src, .len = 4096 };
    if (l3_io_start(e, c, &w, 1, 10, &retired, &err) != L3_OK || l3_io_finish(e, c, &retired, &err) != L3_OK)
        return 1;
    l3_io_req r = { .offset = at, .buf = src + 4096, .len = 4096 };
    if (l3_io_start(e, c, &r, 1, 10, &retired, &err) != L3_OK || l3_io_finish(e, c, &retired, &err) != L3_OK)
        return 2;
    return memcmp(src, src + 4096, 4096) ? 3 : 0;
}

/* Whether this kernel clones a ring's registered buffers into another's
 * table at an offset (IORING_REGISTER_CLONE_BUFFERS with DST_REPLACE,
 * 6.13), asked of two rings of its own. */
static bool kernel_clones_at_an_offset(void)
{
    struct io_uring a, b;
    if (io_uring_queue_init(1, &a, 0) < 0)
        return false;
    if (io_uring_queue_init(1, &b, 0) < 0) {
        io_uring_queue_exit(&a);
        return false;
    }
    uint8_t *buf = aligned_pool(8192);
    struct iovec one = { buf, 4096 }, other = { buf + 4096, 4096 };
    struct { uint32_t src_fd, flags, src_off, dst_off, nr, pad[3]; } arg = {
        .src_fd = (uint32_t)a.ring_fd, .flags = 1u << 1, .dst_off = 1, .nr = 1 };
    bool ok = io_uring_register_buffers(&a, &one, 1) == 0 && io_uring_register_buffers(&b, &other, 1) == 0 &&
              syscall(__NR_io_uring_register, b.ring_fd, 30, &arg, 1) == 0;
    io_uring_queue_exit(&b);
    io_uring_queue_exit(&a);
    free(buf);
    return ok;
}

/* In a child under a memlock limit of the pool and 1.5 MiB: two pool
 * contexts and three driver's rings, each with a bounce buffer of 512 KiB
 * (the limit holds the first three: the others' are refused), each move
 * pool bytes, then bounce bytes. */
static int pinned_once_child(const char *path)
{
    enum { POOL = 4 << 20 };
    bool clones = kernel_clones_at_an_offset();
    limit_memlock(POOL + (3 << 19));
    int fd;
    l3_io_engine *e = registering_engine(path, 2, 512 << 10, &fd);
    if (!e)
        return 20;
    uint8_t *pool = aligned_pool(POOL);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    l3_io_engine_set_hosts(e, &(l3_io_region){ pool, POOL }, 1);
    l3_io_own(e, efd, 3);
    l3_io_ctx *c[5] = { l3_io_acquire(e), l3_io_acquire(e) };
    for (unsigned i = 0; i < 3; i++)
        c[2 + i] = l3_io_try_acquire_for(e, efd);
    for (unsigned i = 0; i < 5; i++) {
        int rc = c[i] ? round_trip(e, c[i], pool + (size_t)i * 8192, (uint64_t)i * 8192) : 9;
        if (rc)
            return 30 + rc;
    }
    /* (a kernel that cannot clone at an offset: each ring pins its own, and
     * the limit refuses the second, which must be said) */
    bool fixed = atomic_load(&e->stats.unfixed) == 0 && l3_io_engine_host_fixed(e);
    if (clones != fixed || clones == atomic_load(&e->clone_off))
        return 40;
    unsigned bounces_fixed = 0;
    for (unsigned i = 0; i < 5; i++)
        bounces_fixed += c[i]->bounce_fixed;
    if (bounces_fixed == 5)
        return 60; /* (the limit holds 4 MiB and 1.5: not five of 512 KiB beside the pool) */
    for (unsigned i = 0; i < 5; i++) {
        int rc = round_trip(e, c[i], c[i]->bounce, (uint64_t)(8 + i) * 8192); /* (fixed or not) */
        if (rc)
            return 50 + rc;
    }
    for (unsigned i = 0; i < 5; i++)
        l3_io_release(e, c[i]);
    l3_io_forget_notify(e, efd);
    l3_io_engine_close(e);
    return 0;
}

/* In a child under a memlock limit that holds one pool and the bounce
 * buffers: three rings move bytes of pool A, then of a new pool B; each
 * lets go of A as it registers B, so B's pin is refused until the last
 * has; once the retry is due (made so here, not waited for), every ring
 * moves B's bytes fixed. */
static int repinned_child(const char *path)
{
    enum { POOL = 4 << 20 };
    if (!kernel_clones_at_an_offset())
        return 0; /* (each ring pins its own: the pin test asks for that refusal) */
    limit_memlock(POOL + (1 << 20));
    int fd;
    l3_io_engine *e = registering_engine(path, 3, 64 << 10, &fd);
    if (!e)
        return 20;
    e->pin_retry_first_ns = 600000000000ull; /* (no retry until the test says so, below) */
    uint8_t *a = aligned_pool(POOL), *b = aligned_pool(POOL);
    l3_io_ctx *c[3] = { l3_io_acquire(e), l3_io_acquire(e), l3_io_acquire(e) };
    l3_io_engine_set_hosts(e, &(l3_io_region){ a, POOL }, 1);
    for (unsigned i = 0; i < 3; i++)
        if (round_trip(e, c[i], a + (size_t)i * 8192, (uint64_t)i * 8192) || !c[i]->host_fixed)
            return 30;
    l3_io_engine_set_hosts(e, &(l3_io_region){ b, POOL }, 1);
    for (unsigned i = 0; i < 3; i++)
        if (round_trip(e, c[i], b + (size_t)i * 8192, (uint64_t)i * 8192) || c[i]->host_fixed)
            return 40; /* (refused: A was still held) */
    atomic_store(&e->pin_retry_ns, 0); /* (the retry is due) */
    unsigned long unfixed = atomic_load(&e->stats.unfixed);
    for (unsigned i = 0; i < 3; i++)
        if (round_trip(e, c[i], b + (size_t)i * 8192, (uint64_t)i * 8192) || !c[i]->host_fixed)
            return 50 + (int)i;
    if (atomic_load(&e->stats.unfixed) != unfixed || !l3_io_engine_host_fixed(e))
        return 60;
    for (unsigned i = 0; i < 3; i++)
        l3_io_release(e, c[i]);
    l3_io_engine_close(e);
    return 0;
}

/* Run child(path) in a child process on a store path named `name`; it
 * must exit 0 (its own memlock limit and capabilities stay its own). */
static void in_a_child(int (*child)(const char *path), const char *name)
{
    char path[512];
    temp_store_path(path, sizeof path, name);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child(path));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    unlink(path);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Regions set anew under a memlock limit that holds one pool: the new
 * pin, refused while rings still hold the old pool, is tried again, and
 * every ring then registers it. */
static void a_refused_pin_is_tried_again(void **state)
{
    (void)state;
    in_a_child(repinned_child, "repin");
}

/* The Host pool is pinned once, whatever the rings (issue 48): each
 * context's ring clones the engine's table, so under a memlock limit that
 * holds the pool once, every pool context and every driver's ring moves
 * pool bytes as fixed buffers (each pinning its own, the second was
 * refused and all went unregistered); a ring whose bounce buffer the limit
 * refused moves its bounce bytes unregistered (not through an empty slot
 * of its table). On a kernel that cannot clone so, the refusal is said. */
static void the_host_pool_is_pinned_once_for_every_ring(void **state)
{
    (void)state;
    in_a_child(pinned_once_child, "pinned");
}

/* On a kernel that cannot clone at an offset (made so here: each clone
 * fails as such a kernel's does), every ring pins the pool itself, and
 * the engine's probe of one page keeps it from pinning the whole pool
 * once more for nothing first (a second's work for a large pool, at every
 * start); where the kernel clones, the pool is pinned once. */
static void a_kernel_that_cannot_clone_pins_no_pool_for_nothing(void **state)
{
    (void)state;
    enum { POOL = 256 << 10 };
    bool clones = kernel_clones_at_an_offset();
    for (int cannot = 0; cannot < 2; cannot++) {
        char path[512];
        int fd;
        temp_store_path(path, sizeof path, "probe");
        l3_io_engine *e = registering_engine(path, 3, 64 << 10, &fd);
        assert_non_null(e);
        if (cannot)
            e->clone_fault = -EINVAL;
        uint8_t *pool = aligned_pool(POOL);
        l3_io_engine_set_hosts(e, &(l3_io_region){ pool, POOL }, 1);
        l3_io_ctx *c[3] = { l3_io_acquire(e), l3_io_acquire(e), l3_io_acquire(e) };
        for (unsigned i = 0; i < 3; i++)
            assert_int_equal(round_trip(e, c[i], pool + (size_t)i * 8192, (uint64_t)i * 8192), 0);
        assert_int_equal(atomic_load(&e->stats.host_pins), clones && !cannot ? 1 : 3);
        assert_int_equal(atomic_load(&e->stats.unfixed), 0);
        assert_true(l3_io_engine_host_fixed(e));
        assert_int_equal(atomic_load(&e->clone_off), !clones || cannot);
        for (unsigned i = 0; i < 3; i++)
            l3_io_release(e, c[i]);
        l3_io_engine_close(e);
        close(fd);
        unlink(path);
        free(pool);
    }
}

static int refusals_said;

/* A log sink that counts the warnings of a refused registration. */
static void count_refusals(const char *level, const char *message, void *ctx)
{
    (void)ctx;
    if (!strcmp(level, "warning") && strstr(message, "as fixed buffers failed"))
        refusals_said++;
}

/* In a child under a memlock limit below the pool: a refusal of pool A is
 * said, and so is one of a new pool B. */
static int said_again_child(const char *path)
{
    enum { POOL = 4 << 20 };
    limit_memlock(POOL / 2); /* (the ring and its bounce buffer fit, the pool does not) */
    l3_set_logger(count_refusals, NULL);
    int fd;
    l3_io_engine *e = registering_engine(path, 1, 64 << 10, &fd);
    if (!e)
        return 20;
    uint8_t *a = aligned_pool(POOL), *b = aligned_pool(POOL);
    l3_io_ctx *c = l3_io_acquire(e);
    l3_io_engine_set_hosts(e, &(l3_io_region){ a, POOL }, 1);
    if (round_trip(e, c, a, 0) || c->host_fixed || refusals_said != 1)
        return 30;
    l3_io_engine_set_hosts(e, &(l3_io_region){ b, POOL }, 1);
    if (round_trip(e, c, b, 0) || c->host_fixed)
        return 40;
    if (refusals_said != 2)
        return 50;
    l3_io_release(e, c);
    l3_io_engine_close(e);
    return 0;
}

/* Each new set of regions that the memlock limit refuses is said, not
 * only the first an engine saw (an engine that went unregistered for its
 * second pool did so without a word). */
static void a_refusal_of_new_regions_is_said(void **state)
{
    (void)state;
    in_a_child(said_again_child, "said");
}

/* A thread that, `after` seconds, lets `n` of an engine's stalled
 * requests (4 KiB each) finish whole: 4 KiB each down the stall pipe they
 * read from, at once. */
typedef struct stall_release {
    l3_io_engine *e;
    unsigned n;
    double after;
    bool written;
} stall_release;

static void *release_stalled(void *arg)
{
    stall_release *r = arg;
    static uint8_t bytes[4 * 4096];
    usleep((useconds_t)(r->after * 1e6));
    r->written = write(r->e->stall_pipe[1], bytes, r->n * 4096) == (ssize_t)(r->n * 4096);
    return NULL;
}

/* The sleep waits for half of its batch in flight, or, after
 * l3_io_set_wake_all, for all of it: of four writes held by the device,
 * two let go during the sleep end it; one alone does not (it sleeps to
 * its time); waiting for all, three do not. (The writes are let go 0.2 s
 * into the sleep: writes that landed before it would be reported first,
 * and a sleep with something to report returns at once. A write let go
 * reads 4 KiB from the stall pipe: it finishes whole.) */
static void a_driver_s_sleep_counts_its_batch(void **state)
{
    (void)state;
    static const struct { unsigned released; bool all, early; } cases[] = {
        { 2, false, true }, { 1, false, false }, { 3, true, false } };
    for (size_t k = 0; k < 3; k++) {
        owned_env v;
        owned_open(&v, "count");
        l3_io_engine *e = v.e;
        int efd = v.efd;
        uint8_t *buf = aligned_pool(4 * 4096);
        l3_io_req reqs[4];
        l3_io_ctx *ctx = l3_io_try_acquire_for(e, efd);
        if (cases[k].all)
            l3_io_set_wake_all(ctx);
        start_writes(e, ctx, reqs, buf, 4, 4, 2);
        stall_release rel = { e, cases[k].released, 0.2, false };
        pthread_t t;
        pthread_create(&t, NULL, release_stalled, &rel);
        double slept = owned_sleep(e, efd, 0.8);
        pthread_join(t, NULL);
        assert_true(rel.written);
        if (cases[k].early)
            assert_true(slept < 0.6);
        else
            assert_true(slept >= 0.7);
        end_writes(e, ctx, true);
        l3_io_release(e, ctx);
        l3_io_forget_notify(e, efd);
        owned_close(&v);
        free(buf);
    }
}

/* A context's window bounds its batch in flight, as a driven put wave
 * beside gets uses it: at 0 nothing is sent (the file stays empty) and a
 * poll comes back with nothing; at 2 no poll reports more than 2
 * finished; then every request lands. */
static void a_window_bounds_a_batch_in_flight(l3_engine_kind kind)
{
    enum { LEN = 4096, N = 8 };
    char path[512];
    int fd;
    l3_io_engine *e = engine_on_file(kind, "window", 1, path, &fd);
    l3_error err;
    uint8_t *buf = aligned_pool(LEN * N);
    fill_pattern(buf, LEN * N, 5);
    l3_io_req reqs[N];
    for (size_t i = 0; i < N; i++)
        reqs[i] = (l3_io_req){ .write = true, .offset = i * LEN, .buf = buf + i * LEN, .len = LEN };
    l3_io_ctx *ctx = l3_io_acquire(e);
    bool retired = false;
    l3_io_set_window(ctx, 0);
    assert_int_equal(l3_io_start(e, ctx, reqs, N, 10, &retired, &err), L3_OK);
    size_t done[N], got, total = 0;
    for (int k = 0; k < 5; k++) {
        assert_int_equal(l3_io_poll_some(e, ctx, done, N, &got, &retired, &err), L3_OK);
        assert_int_equal(got, 0);
        assert_true(l3_io_batch_open(ctx));
        usleep(2000);
    }
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 0); /* held: nothing was written */
    l3_io_set_window(ctx, 2);
    for (int polls = 0; total < N; polls++) {
        assert_int_equal(l3_io_poll_some(e, ctx, done, N, &got, &retired, &err), L3_OK);
        assert_true(got <= 2);
        total += got;
        assert_true(polls < 100000);
        if (!got)
            usleep(100);
    }
    assert_int_equal(l3_io_finish(e, ctx, &retired, &err), L3_OK);
    assert_true(retired);
    uint8_t *back = aligned_pool(LEN * N);
    assert_int_equal(pread(fd, back, LEN * N, 0), LEN * N);
    assert_memory_equal(back, buf, LEN * N);
    l3_io_release(e, ctx);
    l3_io_engine_close(e);
    close(fd);
    unlink(path);
    free(buf);
    free(back);
}

/* The threads of this process named `name`. */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *t; (t = readdir(d));) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
        FILE *f = t->d_name[0] == '.' ? NULL : fopen(path, "r");
        if (f && fgets(comm, sizeof comm, f))
            n += strncmp(comm, name, strlen(name)) == 0;
        if (f)
            fclose(f);
    }
    closedir(d);
    return n;
}

/* One operation of `kind` over keys "put-<first>".. of KEYS_PER_GET, into
 * or from blocks [1 + slot * KEYS_PER_GET, ...). */
static void submit_four(env *v, l3_op_kind kind, uint64_t op_id, size_t first, size_t slot)
{
    static char names[PAGES * 4][32];
    l3_storage_key k[KEYS_PER_GET];
    int32_t blocks[KEYS_PER_GET];
    for (size_t i = 0; i < KEYS_PER_GET; i++) {
        size_t q = first + i;
        snprintf(names[q % (PAGES * 4)], sizeof names[0], "put-%zu", q);
        k[i] = key(names[q % (PAGES * 4)]);
        blocks[i] = (int32_t)(slot * KEYS_PER_GET + i + 1);
    }
    l3_operation op = { .kind = kind, .op_id = op_id, .keys = k, .num_keys = KEYS_PER_GET, .host_blocks = blocks,
                        .num_host_blocks = KEYS_PER_GET };
    submit_ok(v->h, &op, 1);
}

/* 48 puts of 4 keys each, 16 in flight, a quarter of the writes held back
 * 1-2 ms at random so that they end out of order, on the put driver (or a
 * thread per put): every put succeeds, and every key reads back with its
 * own bytes. */
static void many_puts_in_flight_each_land_their_own_bytes(l3_engine_kind kind, bool on_workers)
{
    env *v = start(kind, on_workers);
    assert_int_equal(threads_named("l3-drive-put"), on_workers ? 0 : 1);
    l3_io_fault f = { .kind = L3_FAULT_DELAY, .ops = 2, .permille = 250, .seed = 11, .shift = 1500 };
    l3_slabstore_set_fault(v->store, &f);
    enum { PUTS = 48, INFLIGHT = 16 };
    size_t next = 0, done = 0, slot_of[PUTS], free_slots[INFLIGHT], num_free = INFLIGHT;
    for (size_t i = 0; i < INFLIGHT; i++)
        free_slots[i] = INFLIGHT - 1 - i;
    while (done < PUTS) {
        for (; next < PUTS && num_free > 0; next++) { /* a slot's blocks are rewritten only once its put ended */
            size_t slot = slot_of[next] = free_slots[--num_free];
            for (size_t i = 0; i < KEYS_PER_GET; i++)
                fill_pattern(v->h->pool + (slot * KEYS_PER_GET + i) * PAGE, PAGE,
                             (uint32_t)(next * KEYS_PER_GET + i + 1000));
            submit_four(v, L3_OP_PUT, 2000 + next, next * KEYS_PER_GET, slot);
        }
        l3_completion c[INFLIGHT];
        size_t got = collect_some(v, c, 1, INFLIGHT);
        for (size_t k = 0; k < got; k++) {
            assert_true(c[k].retired);
            for (size_t i = 0; i < KEYS_PER_GET; i++)
                assert_true(c[k].success[i]);
            free_slots[num_free++] = slot_of[c[k].op_id - 2000];
        }
        release(c, got);
        done += got;
    }
    l3_slabstore_set_fault(v->store, NULL);
    uint8_t *want = malloc(PAGE);
    for (size_t p = 0; p < PUTS; p++) {
        memset(v->h->pool, 0, (size_t)KEYS_PER_GET * PAGE);
        submit_four(v, L3_OP_GET, 3000 + p, p * KEYS_PER_GET, 0);
        l3_completion c;
        collect(v, &c, 1);
        for (size_t i = 0; i < KEYS_PER_GET; i++) {
            assert_true(c.success[i]);
            fill_pattern(want, PAGE, (uint32_t)(p * KEYS_PER_GET + i + 1000));
            assert_memory_equal(v->h->pool + i * PAGE, want, PAGE);
        }
        release(&c, 1);
    }
    free(want);
    stop(v);
}

/* Wait (up to 5 s) until *count is at least `want`. */
static void wait_count(_Atomic uint32_t *count, uint32_t want)
{
    for (int i = 0; i < 5000 && atomic_load(count) < want; i++)
        usleep(1000);
    assert_true(atomic_load(count) >= want);
}

/* A get whose first read the device holds back 500 ms is in flight; put A,
 * its first write held back 30 ms, writes beside it; put B waits at the
 * read-first gate behind A. The put driver does not sleep at the gate: it
 * reaps and finishes A, and B goes through as A leaves, not after the
 * gate's longest wait (100 ms, counted as forced). (A driver that slept
 * at the gate for B left A unreaped, holding the gate, until the wait ran
 * out.) A round in which A ended before B reached the gate shows nothing,
 * and is run again. */
static void a_put_at_the_gate_leaves_its_driver_free(l3_engine_kind kind)
{
    env *v = start(kind, false);
    put_pages(v, 1);
    l3_gate *g = &v->store->sh->gate;
    l3_slab_stats st = { 0 };
    for (int round = 0; round < 4 && st.gate_waits == 0; round++) {
        l3_io_fault f = { .kind = L3_FAULT_DELAY, .count = 1, .shift = 500000 };
        l3_slabstore_set_fault(v->store, &f);
        SUBMIT(v->h, GET(100 + round, hashes[0], 64));
        wait_count(&g->reads, 1);
        for (int i = 0; i < 5000 && l3_io_engine_faults(v->store->engine) < 1; i++)
            usleep(1000); /* (its read held: the driver's first ring may still be in the making) */
        assert_int_equal(l3_io_engine_faults(v->store->engine), 1);
        f = (l3_io_fault){ .kind = L3_FAULT_DELAY, .ops = 2, .count = 1, .shift = 30000 };
        l3_slabstore_set_fault(v->store, &f);
        fill_pattern(v->h->pool, 2 * PAGE, (uint32_t)round + 50);
        submit_four(v, L3_OP_PUT, 200 + round, 1000 + round * 8, 0); /* A: blocks 1-4 */
        wait_count(&g->writes, 1);
        submit_four(v, L3_OP_PUT, 300 + round, 1004 + round * 8, 1); /* B: blocks 5-8 */
        l3_completion c[3];
        collect(v, c, 3);
        for (size_t i = 0; i < 3; i++)
            assert_true(c[i].retired && c[i].success[0]);
        assert_int_equal(c[2].op_id, 100 + round); /* the get last */
        release(c, 3);
        l3_slabstore_stats(v->store, &st);
    }
    l3_slabstore_set_fault(v->store, NULL);
    assert_true(st.gate_waits >= 1);
    assert_int_equal(st.gate_forced, 0);
    assert_true(holds(v, 64, 0));
    stop(v);
}

/* Puts on the driver that fill slabs: the summaries of the slabs they
 * filled are written by the store's background thread while the store is
 * open (the driver defers them rather than sleep on them behind its data
 * writes), not left for close. */
static void a_driven_put_s_filled_slabs_get_their_summaries(l3_engine_kind kind)
{
    env *v = start(kind, false);
    const size_t puts = 40; /* 160 pages of 16 KiB: 2.5 MiB, slabs of 1 MiB */
    for (size_t p = 0; p < puts; p++) {
        for (size_t i = 0; i < KEYS_PER_GET; i++)
            fill_pattern(v->h->pool + i * PAGE, PAGE, (uint32_t)(p * KEYS_PER_GET + i + 5000));
        submit_four(v, L3_OP_PUT, 4000 + p, 5000 + p * KEYS_PER_GET, 0);
        l3_completion c;
        collect(v, &c, 1);
        assert_true(c.retired && c.success[0] && c.success[KEYS_PER_GET - 1]);
        release(&c, 1);
    }
    uint32_t slabs[64], n = 0;
    for (int i = 0; i < 500 && n < 2; i++) {
        n = summarized_slabs(v->path, slabs);
        usleep(10000);
    }
    assert_true(n >= 2);
    stop(v);
}

static void summaries_uring(void **s) { (void)s; a_driven_put_s_filled_slabs_get_their_summaries(L3_ENGINE_IO_URING); }
static void summaries_aio(void **s) { (void)s; a_driven_put_s_filled_slabs_get_their_summaries(L3_ENGINE_LIBAIO); }
static void put_many_uring(void **s) { (void)s; many_puts_in_flight_each_land_their_own_bytes(L3_ENGINE_IO_URING, false); }
static void put_many_aio(void **s) { (void)s; many_puts_in_flight_each_land_their_own_bytes(L3_ENGINE_LIBAIO, false); }
static void put_many_workers(void **s) { (void)s; many_puts_in_flight_each_land_their_own_bytes(L3_ENGINE_IO_URING, true); }
static void gate_uring(void **s) { (void)s; a_put_at_the_gate_leaves_its_driver_free(L3_ENGINE_IO_URING); }
static void gate_aio(void **s) { (void)s; a_put_at_the_gate_leaves_its_driver_free(L3_ENGINE_LIBAIO); }

/* Hands a context back after 50 ms, on a thread of its own. */
typedef struct giver {
    l3_io_engine *e;
    l3_io_ctx *c;
} giver;

static void *give_back(void *arg)
{
    giver *g = arg;
    usleep(50000);
    l3_io_release(g->e, g->c);
    return NULL;
}

/* l3_io_acquire_within, as moves made on a driver's thread take their
 * context: with every context held it comes back empty when its time runs
 * out (rather than wait for ever for a driver that is itself waiting),
 * and it takes one given back meanwhile. */
static void a_wait_for_a_context_ends(l3_engine_kind kind)
{
    char path[512];
    int fd;
    l3_io_engine *e = engine_on_file(kind, "within", 2, path, &fd);
    l3_io_ctx *a = l3_io_acquire(e), *b = l3_io_acquire(e);
    double t0 = l3_monotonic_seconds();
    assert_null(l3_io_acquire_within(e, 0.05));
    assert_true(l3_monotonic_seconds() - t0 >= 0.045);
    giver g = { e, b };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, give_back, &g), 0);
    l3_io_ctx *c = l3_io_acquire_within(e, 5.0);
    assert_ptr_equal(c, b);
    assert_int_equal(pthread_join(t, NULL), 0);
    l3_io_release(e, a);
    l3_io_release(e, c);
    l3_io_engine_close(e);
    close(fd);
    unlink(path);
}

static void within_uring(void **s) { (void)s; a_wait_for_a_context_ends(L3_ENGINE_IO_URING); }
static void within_aio(void **s) { (void)s; a_wait_for_a_context_ends(L3_ENGINE_LIBAIO); }

static void window_uring(void **s) { (void)s; a_window_bounds_a_batch_in_flight(L3_ENGINE_IO_URING); }
static void window_aio(void **s) { (void)s; a_window_bounds_a_batch_in_flight(L3_ENGINE_LIBAIO); }
static void poll_uring(void **s) { (void)s; a_poll_leaves_nothing_unsent_behind_it(L3_ENGINE_IO_URING); }
static void poll_aio(void **s) { (void)s; a_poll_leaves_nothing_unsent_behind_it(L3_ENGINE_LIBAIO); }

static void short_uring(void **s) { (void)s; a_short_read_is_resent_at_once(L3_ENGINE_IO_URING); }
static void short_aio(void **s) { (void)s; a_short_read_is_resent_at_once(L3_ENGINE_LIBAIO); }
static void second_uring(void **s) { (void)s; a_second_executor_s_driver_is_woken_by_its_reads(L3_ENGINE_IO_URING); }
static void second_aio(void **s) { (void)s; a_second_executor_s_driver_is_woken_by_its_reads(L3_ENGINE_LIBAIO); }

static void late_get_uring(void **s) { (void)s; a_late_get_keeps_its_result_while_new_gets_take_freed_places(L3_ENGINE_IO_URING); }
static void late_get_aio(void **s) { (void)s; a_late_get_keeps_its_result_while_new_gets_take_freed_places(L3_ENGINE_LIBAIO); }
static void many_uring(void **s) { (void)s; many_gets_in_flight_each_get_their_own_bytes(L3_ENGINE_IO_URING, false); }
static void many_aio(void **s) { (void)s; many_gets_in_flight_each_get_their_own_bytes(L3_ENGINE_LIBAIO, false); }
static void many_workers(void **s) { (void)s; many_gets_in_flight_each_get_their_own_bytes(L3_ENGINE_IO_URING, true); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(late_get_uring),
        cmocka_unit_test(late_get_aio),
        cmocka_unit_test(many_uring),
        cmocka_unit_test(many_aio),
        cmocka_unit_test(many_workers),
        cmocka_unit_test(poll_uring),
        cmocka_unit_test(poll_aio),
        cmocka_unit_test(a_driver_s_sleep_on_its_ring_wakes_for_its_eventfd),
        cmocka_unit_test(a_driver_s_contexts_stay_its_own),
        cmocka_unit_test(a_driver_s_sleep_counts_its_batch),
        cmocka_unit_test(a_driver_s_rings_are_made_ready_as_it_starts),
        cmocka_unit_test(the_host_pool_is_pinned_once_for_every_ring),
        cmocka_unit_test(a_kernel_that_cannot_clone_pins_no_pool_for_nothing),
        cmocka_unit_test(a_refusal_of_new_regions_is_said),
        cmocka_unit_test(a_refused_pin_is_tried_again),
        cmocka_unit_test(short_uring),
        cmocka_unit_test(short_aio),
        cmocka_unit_test(second_uring),
        cmocka_unit_test(second_aio),
        cmocka_unit_test(put_many_uring),
        cmocka_unit_test(put_many_aio),
        cmocka_unit_test(put_many_workers),
        cmocka_unit_test(window_uring),
        cmocka_unit_test(window_aio),
        cmocka_unit_test(gate_uring),
        cmocka_unit_test(gate_aio),
        cmocka_unit_test(summaries_uring),
        cmocka_unit_test(summaries_aio),
        cmocka_unit_test(within_uring),
        cmocka_unit_test(within_aio),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
