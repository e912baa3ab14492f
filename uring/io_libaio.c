/* The libaio engine: Linux native AIO on the O_DIRECT descriptor. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "l3_clock.h"

l3_status l3_aio_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err)
{
    int rc = io_setup((int)e->depth, &c->aio);
    if (rc < 0)
        return l3_fail(err, rc == -EAGAIN ? L3_ENOMEM : L3_EUNSUPPORTED,
                       "io_setup(%u): %s (see /proc/sys/fs/aio-max-nr)", e->depth,
                       strerror(-rc));
    c->aio_ready = true;
    c->iocbs = calloc(e->depth, sizeof *c->iocbs);
    c->events = calloc(e->depth, sizeof *c->events);
    c->free_list = calloc(e->depth, sizeof *c->free_list);
    if (!c->iocbs || !c->events || !c->free_list)
        return l3_fail(err, L3_ENOMEM, "allocating libaio control blocks");
    return L3_OK;
}

void l3_aio_ctx_free(l3_io_engine *e, l3_io_ctx *c)
{
    (void)e;
    if (c->aio_ready)
        io_destroy(c->aio);
    c->aio_ready = false;
    free(c->iocbs);
    free(c->events);
    free(c->free_list);
}

/* The most iocbs prepared for one io_submit. */
#define PREP_MAX 1024u

/* Prepare up to PREP_MAX iocbs from the pending stack into `ptrs`; returns
 * how many. A request held back by L3_FAULT_DELAY stops it until its time. */
static unsigned prep_iocbs(l3_io_engine *e, l3_io_ctx *c, struct iocb **ptrs)
{
    l3_io_batch *b = &c->batch;
    unsigned batch = 0;
    while (b->npending && c->nfree && batch < PREP_MAX && b->inflight + batch < l3_io_window(e, c)) {
        uint32_t i = c->pending[b->npending - 1];
        l3_io_req *r = &b->reqs[i];
        l3_fault_kind fault = l3_io_fault_next(e, b, r);
        if (fault == L3_FAULT_DELAY)
            break; /* not yet: the requests after it wait behind it */
        b->npending--;
        long res;
        if (l3_io_without_device(e, r, fault, &res)) {
            if (l3_io_complete(e, r, res))
                c->pending[b->npending++] = i;
            else
                l3_io_finished(c, i);
            continue;
        }
        if (fault == L3_FAULT_STALL) {
            b->stalled++; /* never submitted, never completed: the batch times out */
            continue;
        }
        unsigned slot = c->free_list[--c->nfree];
        struct iocb *cb = &c->iocbs[slot];
        char *buf;
        uint32_t len;
        uint64_t off;
        unsigned dev;
        l3_io_span(e, r, fault, &buf, &len, &off, &dev);
        r->fault = (uint8_t)fault;
        if (r->write)
            io_prep_pwrite(cb, e->fds[dev], buf, len, (long long)off);
        else
            io_prep_pread(cb, e->fds[dev], buf, len, (long long)off);
        cb->data = (void *)(uintptr_t)((uint64_t)c->gen << 32 | i);
        if (c->notify_fd >= 0)
            io_set_eventfd(cb, c->notify_fd);
        /* The slot is cb - iocbs: the kernel writes aio_key itself. */
        ptrs[batch++] = cb;
    }
    return batch;
}

/* Submit `batch` prepared iocbs; what the kernel does not take goes back
 * on the pending stack. */
static l3_status submit_iocbs(l3_io_engine *e, l3_io_ctx *c, struct iocb **ptrs, unsigned batch)
{
    l3_io_batch *b = &c->batch;
    l3_status st = L3_OK;
    unsigned sent = 0;
    while (sent < batch) {
        int rc = io_submit(c->aio, (long)(batch - sent), ptrs + sent);
        if (rc > 0) {
            sent += (unsigned)rc;
            b->inflight += (unsigned)rc;
            atomic_fetch_add(&e->stats.unfixed, (unsigned long)rc);
            continue;
        }
        if (rc == -EINTR)
            continue;
        if ((rc == -EAGAIN || rc == 0) && b->inflight)
            break; /* reap, then submit the rest */
        if (rc == -EAGAIN)
            continue;
        st = l3_fail(&b->err, L3_EIO, "io_submit: %s", strerror(-rc));
        break;
    }
    for (unsigned k = batch; k-- > sent;) {
        uint64_t ud = (uint64_t)(uintptr_t)ptrs[k]->data;
        c->pending[b->npending++] = (uint32_t)ud;
        c->free_list[c->nfree++] = (unsigned)(ptrs[k] - c->iocbs);
    }
    return st;
}

/* Prepare and submit what the free slots take. A submission error is kept
 * in b->failed: nothing more is submitted, what is in flight is reaped,
 * then the batch fails. */
static void push(l3_io_engine *e, l3_io_ctx *c)
{
    struct iocb *ptrs[PREP_MAX];
    if (c->batch.failed == L3_OK)
        c->batch.failed = submit_iocbs(e, c, ptrs, prep_iocbs(e, c, ptrs));
}

/* Wait for completions (or, with only stalled or held-back requests left,
 * for `until`); the count of events, 0 at `until`, or -errno. */
static int wait_events(l3_io_engine *e, l3_io_ctx *c, unsigned depth, double until)
{
    const l3_io_batch *b = &c->batch;
    for (;;) {
        double left = until - l3_monotonic_seconds();
        if (left < 0)
            left = 0;
        struct timespec ts = { .tv_sec = (time_t)left, .tv_nsec = (long)((left - floor(left)) * 1e9) };
        long least = l3_io_wait_count(b) < depth ? (long)l3_io_wait_count(b) : (long)depth;
        int got = b->inflight ? io_getevents(c->aio, least, (long)depth, c->events, &ts) : 0;
        if (got >= 0 && b->inflight && l3_io_fault_wait_check(e))
            got = -EIO; /* (the events it took are lost with the batch) */
        if (!b->inflight && left > 0)
            nanosleep(&ts, NULL); /* nothing in flight: wait out the time */
        if (got != -EINTR)
            return got;
    }
}

/* The events that have finished, without sleeping (l3_io_poll_some); 0
 * when none, or -errno. */
static int peek_events(l3_io_engine *e, l3_io_ctx *c, unsigned depth)
{
    if (!c->batch.inflight)
        return 0;
    struct timespec zero = { 0, 0 };
    int got = io_getevents(c->aio, 0, (long)depth, c->events, &zero);
    if (got >= 0 && l3_io_fault_wait_check(e))
        got = -EIO;
    return got == -EINTR ? 0 : got;
}

/* Account `got` events: this batch's finish (or go back to pending). */
static void reap_events(l3_io_engine *e, l3_io_ctx *c, int got)
{
    l3_io_batch *b = &c->batch;
    for (int k = 0; k < got; k++) {
        struct iocb *cb = c->events[k].obj;
        uint64_t ud = (uint64_t)(uintptr_t)c->events[k].data;
        c->free_list[c->nfree++] = (unsigned)(cb - c->iocbs);
        if ((uint32_t)(ud >> 32) != c->gen || (uint32_t)ud >= b->n)
            continue;
        L3_ASSERT(b->inflight > 0);
        b->inflight--;
        uint32_t i = (uint32_t)ud;
        if (l3_io_complete(e, &b->reqs[i], (long)c->events[k].res))
            c->pending[b->npending++] = i;
        else
            l3_io_finished(c, i);
    }
}

l3_status l3_aio_begin(l3_io_engine *e, l3_io_ctx *c)
{
    unsigned depth = e->depth;
    for (unsigned s = 0; s < depth; s++)
        c->free_list[s] = depth - 1 - s;
    c->nfree = depth;
    push(e, c);
    l3_io_batch *b = &c->batch;
    return b->failed != L3_OK && b->inflight == 0 ? b->failed : L3_OK;
}

l3_status l3_aio_step(l3_io_engine *e, l3_io_ctx *c)
{
    l3_io_batch *b = &c->batch;
    if (b->nowait && b->inflight) {
        /* What finished is taken before what waits is sent, so that it is
         * reported before newer requests can finish beside it. */
        struct timespec zero = { 0, 0 };
        int got = io_getevents(c->aio, 0, (long)e->depth, c->events, &zero);
        if (got > 0)
            reap_events(e, c, got);
    }
    /* After a submission error, report nothing more: drain, then fail. */
    while (b->head == b->tail || b->failed != L3_OK) {
        if (!b->npending && !b->inflight && !b->stalled)
            return b->failed;
        push(e, c);
        if (b->failed != L3_OK && b->inflight == 0)
            return b->failed;
        if (b->failed == L3_OK && b->inflight == 0 && b->nowait && l3_io_window(e, c) == 0)
            return L3_OK; /* held (l3_io_set_window 0): the caller comes back */
        if (b->failed == L3_OK && b->inflight == 0 && (b->npending || !b->stalled) && !b->delay_until &&
            l3_io_window(e, c) > 0)
            continue; /* more to submit, or (faults completed them all) done */
        double until = l3_io_wait_until(b);
        int got = b->nowait ? peek_events(e, c, e->depth) : wait_events(e, c, e->depth, until);
        if (got == 0 && b->nowait && l3_monotonic_seconds() < b->deadline)
            return L3_OK; /* nothing yet: the caller comes back */
        if (got == 0 && until < b->deadline)
            continue; /* a held-back request's time has come */
        if (got <= 0) {
            b->retired = false;
            return got == 0 ? l3_fail(&b->err, L3_ETIMEDOUT, "libaio: %zu I/Os not completed within the I/O timeout",
                                      b->inflight + b->stalled)
                            : l3_fail(&b->err, L3_ETIMEDOUT, "io_getevents: %s; %zu I/Os unreaped",
                                      strerror(-got), b->inflight);
        }
        reap_events(e, c, got);
    }
    /* Finished requests to report: first send what they left to resubmit,
     * so that the device works while the caller looks at them. */
    push(e, c);
    return L3_OK;
}
