/* The I/O engine: its context pool, the batch entry points (a batch
 * started, its finished requests reported as they finish, finished; or run
 * whole), and the choice between io_uring and libaio. */
#include "engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aligned.h"
#include "backend.h"
#include "l3_clock.h"
#include "monotonic.h"

const char *l3_engine_name(l3_engine_kind kind)
{
    switch (kind) {
    case L3_ENGINE_IO_URING: return "io_uring";
    case L3_ENGINE_LIBAIO: return "libaio";
    default: return "auto";
    }
}

bool l3_engine_parse(const char *text, l3_engine_kind *kind)
{
    if (strcmp(text, "auto") == 0)
        *kind = L3_ENGINE_AUTO;
    else if (strcmp(text, "io_uring") == 0)
        *kind = L3_ENGINE_IO_URING;
    else if (strcmp(text, "libaio") == 0)
        *kind = L3_ENGINE_LIBAIO;
    else
        return false;
    return true;
}

/* An owned slot taken while its context is being made (never matches). */
static l3_io_ctx reserved_slot = { .notify_fd = -3 };

static void ctx_free(l3_io_engine *e, l3_io_ctx *c)
{
    if (e->kind == L3_ENGINE_IO_URING)
        l3_uring_ctx_free(e, c);
    else
        l3_aio_ctx_free(e, c);
    free(c->bounce);
    free(c->pending);
    free(c->done);
}

static l3_status ctx_init(l3_io_engine *e, l3_io_ctx *c, bool owned, l3_error *err)
{
    memset(c, 0, sizeof *c);
    c->notify_fd = -1;
    c->owned = owned;
    c->owner = pthread_self();
    c->batch.retired = true; /* (nothing ever in flight) */
    c->bounce_len = e->options.bounce_bytes;
    if (c->bounce_len && !(c->bounce = l3_aligned_alloc(4096, c->bounce_len, true)))
        return l3_fail(err, L3_ENOMEM, "allocating a %zu-byte bounce buffer", c->bounce_len);
    if (e->kind == L3_ENGINE_IO_URING)
        return l3_uring_ctx_init(e, c, err);
    return l3_aio_ctx_init(e, c, err);
}

static void engine_free(l3_io_engine *e)
{
    l3_io_fault_free(e);
    for (unsigned i = 0; i < e->num_ctxs; i++)
        ctx_free(e, &e->ctxs[i]);
    free(e->ctxs);
    for (unsigned i = 0; i < e->num_owned; i++) {
        /* A thread that never forgot them: unregistering from here is
         * refused (SINGLE_ISSUER), their files let go as the rings end. */
        if (e->owned[i] && e->owned[i] != &reserved_slot) {
            ctx_free(e, e->owned[i]);
            free(e->owned[i]);
        }
    }
    if (e->kind == L3_ENGINE_IO_URING)
        l3_uring_pin_free(e);
    pthread_mutex_destroy(&e->pin_mu);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->freed);
    free(e);
}

static l3_status engine_build(const l3_io_options *o, const int *fds, unsigned nfds, l3_engine_kind kind,
                              l3_io_engine **out, l3_error *err)
{
    l3_io_engine *e = calloc(1, sizeof *e);
    if (!e)
        return l3_fail(err, L3_ENOMEM, "allocating the I/O engine");
    e->kind = kind;
    e->options = *o;
    memcpy(e->fds, fds, nfds * sizeof *fds);
    e->nfds = nfds;
    e->depth = o->depth * nfds > 32768 ? 32768 : o->depth * nfds;
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->pin_mu, NULL);
    e->pin_retry_first_ns = 1000000000ull;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* (l3_deadline_after's clock) */
    pthread_cond_init(&e->freed, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&e->fault_mu, NULL);
    e->stall_pipe[0] = e->stall_pipe[1] = -1;
    e->ctxs = calloc(o->contexts, sizeof *e->ctxs);
    if (!e->ctxs) {
        engine_free(e);
        return l3_fail(err, L3_ENOMEM, "allocating I/O contexts");
    }
    for (unsigned i = 0; i < o->contexts; i++) {
        l3_status st = ctx_init(e, &e->ctxs[i], false, err);
        if (st != L3_OK) {
            ctx_free(e, &e->ctxs[i]);
            engine_free(e);
            return st;
        }
        e->num_ctxs++;
    }
    *out = e;
    return L3_OK;
}

l3_status l3_io_engine_open(const l3_io_options *o, const int *fds, unsigned nfds, l3_io_engine **out,
                            l3_error *err)
{
    *out = NULL;
    if (nfds == 0 || nfds > L3_IO_MAX_DEVICES)
        return l3_fail(err, L3_EINVAL, "I/O engine: 1 to %u devices, not %u", L3_IO_MAX_DEVICES, nfds);
    if (!o || o->contexts == 0 || o->depth == 0 || o->depth > 32768)
        return l3_fail(err, L3_EINVAL, "I/O engine: contexts must be >= 1 and depth 1 to 32768");
    if (o->alignment == 0 || (o->alignment & (o->alignment - 1)))
        return l3_fail(err, L3_EINVAL, "I/O engine: alignment %zu is not a power of two", o->alignment);
    if (o->kind == L3_ENGINE_LIBAIO)
        return engine_build(o, fds, nfds, L3_ENGINE_LIBAIO, out, err);
    l3_error uerr;
    l3_status st = engine_build(o, fds, nfds, L3_ENGINE_IO_URING, out, &uerr);
    if (st == L3_OK || o->kind == L3_ENGINE_IO_URING) {
        if (st != L3_OK && err)
            *err = uerr;
        return st;
    }
    l3_log("warning", "io_uring is unavailable (%s); falling back to libaio", uerr.msg);
    return engine_build(o, fds, nfds, L3_ENGINE_LIBAIO, out, err);
}

l3_engine_kind l3_io_engine_kind(const l3_io_engine *e) { return e->kind; }
void l3_io_engine_dev_stats(l3_io_engine *e, unsigned dev, uint64_t *errors, uint64_t *bytes_read,
                            uint64_t *bytes_written)
{
    bool in = dev < e->nfds;
    *errors = in ? atomic_load(&e->dev_errors[dev]) : 0;
    *bytes_read = in ? atomic_load(&e->dev_read[dev]) : 0;
    *bytes_written = in ? atomic_load(&e->dev_written[dev]) : 0;
}
l3_io_stats *l3_io_engine_stats(l3_io_engine *e) { return &e->stats; }
bool l3_io_engine_broken(l3_io_engine *e) { return atomic_load(&e->broken); }

void l3_io_engine_set_hosts(l3_io_engine *e, const l3_io_region *regions, size_t n)
{
    L3_ASSERT(n <= L3_IO_MAX_REGIONS);
    pthread_mutex_lock(&e->mu);
    e->nhost = 0;
    for (size_t i = 0; i < n; i++)
        if (regions[i].base && regions[i].len)
            e->host[e->nhost++] = regions[i];
    e->host_gen++;
    atomic_store(&e->host_refused, false);
    pthread_mutex_unlock(&e->mu);
    if (e->kind == L3_ENGINE_IO_URING)
        l3_uring_unpin_stale(e); /* (the old regions: contexts that cloned them hold them until they register anew) */
}

bool l3_io_engine_host_fixed(l3_io_engine *e)
{
    pthread_mutex_lock(&e->mu);
    bool registered = e->nhost > 0;
    pthread_mutex_unlock(&e->mu);
    return e->kind == L3_ENGINE_IO_URING && e->options.register_buffers && registered &&
           !atomic_load(&e->host_refused);
}

/* Mark a free context in use and return it, or NULL (e->mu held): one
 * that signals eventfd `fd` (-1: none) if any is free, so that a driver's
 * contexts stay its own and others' completions do not wake it. */
static l3_io_ctx *take_free(l3_io_engine *e, int fd)
{
    l3_io_ctx *any = NULL;
    for (unsigned i = 0; i < e->num_ctxs; i++) {
        l3_io_ctx *c = &e->ctxs[i];
        if (c->in_use)
            continue;
        if (c->notify_fd == fd) {
            any = c;
            break;
        }
        if (!any)
            any = c;
    }
    if (any)
        any->in_use = true;
    return any;
}

/* Take a free context, preferring one that signals `fd`, waiting while
 * all are in use: until `until` (NULL: for ever); NULL when none was
 * freed by then. */
static l3_io_ctx *acquire_until(l3_io_engine *e, int fd, const struct timespec *until)
{
    pthread_mutex_lock(&e->mu);
    l3_io_ctx *got;
    while (!(got = take_free(e, fd))) {
        if (!until)
            pthread_cond_wait(&e->freed, &e->mu);
        else if (pthread_cond_timedwait(&e->freed, &e->mu, until) == ETIMEDOUT) {
            got = take_free(e, fd); /* (one freed as the wait ran out) */
            break;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return got;
}

l3_io_ctx *l3_io_acquire_for(l3_io_engine *e, int notify_fd) { return acquire_until(e, notify_fd, NULL); }

/* A context a thread that sleeps on no eventfd took: it signals none. */
static l3_io_ctx *untagged(l3_io_engine *e, l3_io_ctx *c)
{
    if (c && c->notify_fd >= 0 && l3_io_set_notify(e, c, -1, NULL) != L3_OK)
        l3_log("warning", "io_uring: unregistering a context's eventfd failed: a driver may wake for nothing");
    return c;
}

l3_io_ctx *l3_io_acquire(l3_io_engine *e) { return untagged(e, l3_io_acquire_for(e, -1)); }

l3_io_ctx *l3_io_acquire_within(l3_io_engine *e, double seconds)
{
    struct timespec until = l3_deadline_after(seconds);
    return untagged(e, acquire_until(e, -1, &until));
}

l3_io_ctx *l3_io_try_acquire(l3_io_engine *e) { return untagged(e, l3_io_try_acquire_for(e, -1)); }

/* Whether owned context c is the calling thread's for eventfd fd. */
static bool owned_by_me(const l3_io_ctx *c, int fd)
{
    return c && c->notify_fd == fd && pthread_equal(c->owner, pthread_self());
}

void l3_io_forget_notify(l3_io_engine *e, int fd)
{
    l3_io_ctx *gone[L3_IO_MAX_OWNED];
    unsigned n = 0;
    bool broken = atomic_load(&e->broken);
    pthread_mutex_lock(&e->mu);
    for (unsigned i = 0; i < e->num_ctxs; i++) {
        l3_io_ctx *c = &e->ctxs[i];
        if (!c->in_use && fd >= 0 && c->notify_fd == fd)
            (void)l3_io_set_notify(e, c, -1, NULL);
    }
    for (unsigned i = 0; i < e->num_owned; i++) {
        l3_io_ctx *c = e->owned[i];
        if (fd < 0 || !owned_by_me(c, fd) || c->in_use)
            continue;
        if (broken || !c->batch.retired) {
            c->notify_fd = -2; /* its I/O may still land in its memory: kept, as a broken engine is */
            continue;
        }
        gone[n++] = c;
        e->owned[i] = NULL;
    }
    pthread_mutex_unlock(&e->mu);
    for (unsigned i = 0; i < n; i++) { /* (on their owner's thread: their rings' files let go at once) */
        ctx_free(e, gone[i]);
        free(gone[i]);
    }
}

/* Reserve a slot for an owned context (e->mu held); its index, or -1. */
static int reserve_owned(l3_io_engine *e)
{
    unsigned k = 0;
    while (k < e->num_owned && e->owned[k])
        k++;
    if (k == L3_IO_MAX_OWNED)
        return -1;
    e->owned[k] = &reserved_slot;
    e->num_owned += k == e->num_owned;
    return (int)k;
}

/* Make the calling thread a context of its own for eventfd fd in slot k,
 * in use; NULL when none can be had, which turns owned contexts off (no
 * DEFER_TASKRUN, a kernel before 6.1, or no memory for a ring): the pool
 * serves the thread, its completions waking it each. */
static l3_io_ctx *make_owned(l3_io_engine *e, int fd, int k)
{
    l3_io_ctx *c = malloc(sizeof *c);
    l3_error err = { 0 };
    l3_status st = c ? ctx_init(e, c, true, &err) : l3_fail(&err, L3_ENOMEM, "allocating an I/O context");
    if (st == L3_OK)
        st = l3_uring_set_notify(c, fd, &err);
    if (st != L3_OK) {
        if (c)
            ctx_free(e, c);
        free(c);
        c = NULL;
        if (!atomic_exchange(&e->owned_off, true))
            l3_log("info", "%s: driving threads share the pool's rings", err.msg);
    } else {
        c->notify_fd = fd;
        c->in_use = true;
    }
    pthread_mutex_lock(&e->mu);
    e->owned[k] = c;
    pthread_mutex_unlock(&e->mu);
    return c;
}

/* A free context the calling thread owns for eventfd fd, in use; or one
 * made for it; NULL when neither can be had. */
static l3_io_ctx *take_owned(l3_io_engine *e, int fd)
{
    pthread_mutex_lock(&e->mu);
    for (unsigned i = 0; i < e->num_owned; i++) {
        l3_io_ctx *c = e->owned[i];
        if (owned_by_me(c, fd) && !c->in_use) {
            c->in_use = true;
            pthread_mutex_unlock(&e->mu);
            return c;
        }
    }
    int k = reserve_owned(e);
    pthread_mutex_unlock(&e->mu);
    return k < 0 ? NULL : make_owned(e, fd, k);
}

void l3_io_own(l3_io_engine *e, int fd, size_t n)
{
    l3_io_ctx *made[L3_IO_MAX_OWNED];
    unsigned k = 0;
    if (fd < 0 || e->kind != L3_ENGINE_IO_URING)
        return;
    while (k < n && k < L3_IO_MAX_OWNED && !atomic_load(&e->owned_off) && (made[k] = take_owned(e, fd)))
        l3_uring_prepare(e, made[k++]);
    for (unsigned i = 0; i < k; i++)
        l3_io_release(e, made[i]);
}

l3_io_ctx *l3_io_try_acquire_for(l3_io_engine *e, int notify_fd)
{
    if (notify_fd >= 0 && e->kind == L3_ENGINE_IO_URING && !atomic_load(&e->owned_off)) {
        l3_io_ctx *c = take_owned(e, notify_fd);
        if (c)
            return c;
    }
    pthread_mutex_lock(&e->mu);
    l3_io_ctx *got = take_free(e, notify_fd);
    pthread_mutex_unlock(&e->mu);
    return got;
}

void l3_io_release(l3_io_engine *e, l3_io_ctx *c)
{
    L3_ASSERT(!c->batch.open); /* its batch ended (l3_io_finish) */
    c->window_on = false;
    c->wake_all = false;
    pthread_mutex_lock(&e->mu);
    c->in_use = false;
    pthread_cond_signal(&e->freed);
    pthread_mutex_unlock(&e->mu);
}

void *l3_io_bounce(l3_io_ctx *c, size_t *len)
{
    if (len)
        *len = c->bounce_len;
    return c->bounce;
}

/* End the context's batch with `st` (its message already in batch.err):
 * one not reaped in time breaks the engine. */
static void batch_end(l3_io_engine *e, l3_io_ctx *c, l3_status st)
{
    l3_io_batch *b = &c->batch;
    b->open = false;
    b->status = st;
    if (st == L3_ETIMEDOUT) {
        atomic_store(&e->broken, true);
        atomic_fetch_add(&e->stats.timeouts, 1);
    }
}

/* How the context's batch stands: while it is open, L3_OK and retired so
 * far; once ended, how it ended (its message into *err). */
static l3_status batch_outcome(const l3_io_ctx *c, bool *retired, l3_error *err)
{
    const l3_io_batch *b = &c->batch;
    *retired = b->retired;
    if (b->open || b->status == L3_OK)
        return L3_OK;
    if (err)
        *err = b->err;
    return b->status;
}

/* Make the context's scratch hold a batch of n requests. */
static bool batch_room(l3_io_ctx *c, size_t n)
{
    if (n <= c->cap)
        return true;
    uint32_t *p = realloc(c->pending, n * sizeof *p);
    if (p)
        c->pending = p;
    uint32_t *d = p ? realloc(c->done, n * sizeof *d) : NULL;
    if (d)
        c->done = d;
    if (!p || !d)
        return false;
    c->cap = n;
    return true;
}

/* Whether the batch has nothing left to submit, reap or report. */
static bool batch_idle(const l3_io_batch *b)
{
    return b->head == b->tail && !b->npending && !b->inflight && !b->stalled && !b->nops;
}

/* One step of the open batch on its backend (backend.h); an error ends it. */
static void batch_step(l3_io_engine *e, l3_io_ctx *c)
{
    l3_status st = e->kind == L3_ENGINE_IO_URING ? l3_uring_step(e, c) : l3_aio_step(e, c);
    if (st != L3_OK)
        batch_end(e, c, st);
    else if (batch_idle(&c->batch))
        batch_end(e, c, L3_OK);
}

void l3_io_set_window(l3_io_ctx *c, size_t window)
{
    c->window = window;
    c->window_on = true;
}

l3_status l3_io_start(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double timeout, bool *retired,
                      l3_error *err)
{
    l3_io_batch *b = &c->batch;
    L3_ASSERT(!b->open); /* one batch at a time on a context */
    *b = (l3_io_batch){ .reqs = reqs, .n = n, .open = true, .retired = true };
    if (atomic_load(&e->broken))
        batch_end(e, c, l3_fail(&b->err, L3_ECLOSED,
                                "the I/O engine is broken: an earlier batch was not reaped in time"));
    else if (n == 0)
        batch_end(e, c, L3_OK);
    else if (!batch_room(c, n))
        batch_end(e, c, l3_fail(&b->err, L3_ENOMEM, "allocating an I/O batch"));
    if (!b->open)
        return batch_outcome(c, retired, err);
    for (size_t i = 0; i < n; i++) {
        b->bytes += reqs[i].len;
        reqs[i].done = 0;
        reqs[i].retries = 0;
        reqs[i].fault = 0;
        reqs[i].power = 0;
        reqs[i].res = 0;
    }
    for (size_t i = n; i-- > 0;) {
        if (reqs[i].len)
            c->pending[b->npending++] = (uint32_t)i;
    }
    for (size_t i = 0; i < n; i++) {
        if (!reqs[i].len)
            c->done[b->tail++] = (uint32_t)i; /* nothing to move: finished (res 0) */
    }
    c->gen++;
    b->deadline = l3_monotonic_seconds() + timeout;
    l3_status st = e->kind == L3_ENGINE_IO_URING ? l3_uring_begin(e, c) : l3_aio_begin(e, c);
    if (st != L3_OK)
        batch_end(e, c, st);
    return batch_outcome(c, retired, err);
}

/* l3_io_wait_some, or with `nowait` l3_io_poll_some: a step of the batch
 * when nothing finished is left to report, then what there is to report
 * (nothing once the batch ended or a submission failed). */
static l3_status take_some(l3_io_engine *e, l3_io_ctx *c, size_t *done, size_t max, size_t *ndone, bool *retired,
                           l3_error *err, bool nowait)
{
    l3_io_batch *b = &c->batch;
    L3_ASSERT(max > 0);
    *ndone = 0;
    if (b->open && b->head == b->tail) {
        b->nowait = nowait;
        batch_step(e, c);
        b->nowait = false;
    }
    if (!b->open || b->failed != L3_OK)
        return batch_outcome(c, retired, err);
    while (*ndone < max && b->head < b->tail)
        done[(*ndone)++] = c->done[b->head++];
    return batch_outcome(c, retired, err);
}

l3_status l3_io_wait_some(l3_io_engine *e, l3_io_ctx *c, size_t *done, size_t max, size_t *ndone, bool *retired,
                          l3_error *err)
{
    return take_some(e, c, done, max, ndone, retired, err, false);
}

l3_status l3_io_poll_some(l3_io_engine *e, l3_io_ctx *c, size_t *done, size_t max, size_t *ndone, bool *retired,
                          l3_error *err)
{
    return take_some(e, c, done, max, ndone, retired, err, true);
}

bool l3_io_batch_open(const l3_io_ctx *c) { return c->batch.open; }

double l3_io_wake_by(const l3_io_ctx *c)
{
    return c->batch.open ? l3_io_wait_until(&c->batch) : 0;
}

l3_status l3_io_set_notify(l3_io_engine *e, l3_io_ctx *c, int fd, l3_error *err)
{
    L3_ASSERT(!c->owned || fd == c->notify_fd); /* (signalling its owner's eventfd from its making on) */
    if (c->notify_fd == fd)
        return L3_OK;
    if (e->kind == L3_ENGINE_IO_URING) {
        l3_status st = l3_uring_set_notify(c, fd, err);
        if (st != L3_OK)
            return st;
    }
    c->notify_fd = fd;
    return L3_OK;
}

void l3_io_set_wake_all(l3_io_ctx *c) { c->wake_all = true; }

/* The calling thread's owned context for fd, with requests in flight, whose
 * batch should reach its wake count first: the fewest bytes to wait for (as
 * many of its requests, of their mean length), the oldest of equals (the
 * earliest deadline: a thread's batches share their timeout); NULL when
 * none has any; whether another has some too. Each of its contexts stops
 * signalling fd: the thread sleeps on their rings from now on, and on fd
 * only while none has I/O in flight. */
static l3_io_ctx *soonest_owned(l3_io_engine *e, int fd, bool *others)
{
    l3_io_ctx *best = NULL;
    double best_bytes = 0;
    *others = false;
    pthread_mutex_lock(&e->mu);
    for (unsigned i = 0; i < e->num_owned; i++) {
        l3_io_ctx *c = e->owned[i];
        if (!owned_by_me(c, fd))
            continue;
        l3_uring_quiet(c);
        if (!c->in_use || !c->batch.open || !c->batch.inflight)
            continue;
        double bytes = (double)l3_io_wake_count(c) * (double)c->batch.bytes / (double)c->batch.n;
        *others = *others || best;
        if (!best || bytes < best_bytes || (bytes == best_bytes && c->batch.deadline < best->batch.deadline)) {
            best = c;
            best_bytes = bytes;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return best;
}

bool l3_io_wait_owned(l3_io_engine *e, int fd, double until)
{
    if (e->kind != L3_ENGINE_IO_URING || fd < 0)
        return false;
    bool others;
    l3_io_ctx *c = soonest_owned(e, fd, &others);
    if (!c)
        return false;
    double by = l3_io_wait_until(&c->batch); /* (a held-back request's time, else the deadline) */
    if (until <= 0 || until > by)
        until = by;
    double most = l3_monotonic_seconds() + L3_IO_OTHERS_WAIT;
    if (others && until > most)
        until = most; /* (the other batches' completions are not counted: look at them now and then) */
    l3_uring_wait_owned(e, c, fd, until);
    return true;
}

l3_status l3_io_finish(l3_io_engine *e, l3_io_ctx *c, bool *retired, l3_error *err)
{
    l3_io_batch *b = &c->batch;
    b->wait_all = true;
    while (b->open) {
        b->head = b->tail; /* reported to nobody */
        batch_step(e, c);
    }
    return batch_outcome(c, retired, err);
}

l3_status l3_io_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double timeout,
                    bool *retired, l3_error *err)
{
    (void)l3_io_start(e, c, reqs, n, timeout, retired, err); /* (an error ended the batch: finish says it) */
    return l3_io_finish(e, c, retired, err);
}

void l3_io_engine_close(l3_io_engine *e)
{
    if (e)
        engine_free(e);
}
