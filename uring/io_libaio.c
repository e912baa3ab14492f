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
    if (!c->iocbs || !c->events)
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
}

/* A batch in flight on one libaio context: what is left to submit and
 * to reap, and the free iocb slots. */
typedef struct aio_batch {
    l3_io_req *reqs;
    size_t n;
    uint32_t *pending;  /* requests to (re)submit, a stack */
    size_t npending, inflight, stalled;
    unsigned *free_list, nfree;
    struct iocb *ptrs[1024];
} aio_batch;

/* Prepare up to 1024 iocbs from the pending stack; returns how many. */
static unsigned prep_iocbs(l3_io_engine *e, l3_io_ctx *c, aio_batch *b)
{
    unsigned batch = 0;
    while (b->npending && b->nfree && batch < 1024) {
        uint32_t i = b->pending[--b->npending];
        l3_io_req *r = &b->reqs[i];
        l3_fault_kind fault = l3_io_fault_check(e, r);
        if (fault == L3_FAULT_EIO || fault == L3_FAULT_EAGAIN) {
            if (l3_io_complete(e, r, fault == L3_FAULT_EIO ? -EIO : -EAGAIN))
                b->pending[b->npending++] = i;
            continue;
        }
        if (fault == L3_FAULT_STALL) {
            b->stalled++; /* never submitted, never completed: the batch times out */
            continue;
        }
        unsigned slot = b->free_list[--b->nfree];
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
        /* The slot is cb - iocbs: the kernel writes aio_key itself. */
        b->ptrs[batch++] = cb;
    }
    return batch;
}

/* Submit `batch` prepared iocbs; what the kernel does not take goes back
 * on the pending stack. */
static l3_status submit_iocbs(l3_io_engine *e, l3_io_ctx *c, aio_batch *b, unsigned batch,
                              l3_error *err)
{
    l3_status st = L3_OK;
    unsigned sent = 0;
    while (sent < batch) {
        int rc = io_submit(c->aio, (long)(batch - sent), b->ptrs + sent);
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
        st = l3_fail(err, L3_EIO, "io_submit: %s", strerror(-rc));
        break;
    }
    for (unsigned k = batch; k-- > sent;) {
        uint64_t ud = (uint64_t)(uintptr_t)b->ptrs[k]->data;
        b->pending[b->npending++] = (uint32_t)ud;
        b->free_list[b->nfree++] = (unsigned)(b->ptrs[k] - c->iocbs);
    }
    return st;
}

/* Wait for completions (or, with only stalled requests left, for the
 * deadline); the count of events, 0 at the deadline, or -errno. */
static int wait_events(l3_io_engine *e, l3_io_ctx *c, aio_batch *b, unsigned depth, double deadline)
{
    for (;;) {
        double left = deadline - l3_monotonic_seconds();
        if (left < 0)
            left = 0;
        struct timespec ts = { .tv_sec = (time_t)left, .tv_nsec = (long)((left - floor(left)) * 1e9) };
        int got = b->inflight ? io_getevents(c->aio, 1, (long)depth, c->events, &ts) : 0;
        if (got >= 0 && b->inflight && l3_io_fault_wait_check(e))
            got = -EIO; /* (the events it took are lost with the batch) */
        if (!b->inflight && left > 0)
            nanosleep(&ts, NULL); /* only stalled requests are left: wait out the timeout */
        if (got != -EINTR)
            return got;
    }
}

/* Account `got` events: this batch's complete (or go back to pending). */
static void reap_events(l3_io_engine *e, l3_io_ctx *c, aio_batch *b, int got)
{
    for (int k = 0; k < got; k++) {
        struct iocb *cb = c->events[k].obj;
        uint64_t ud = (uint64_t)(uintptr_t)c->events[k].data;
        b->free_list[b->nfree++] = (unsigned)(cb - c->iocbs);
        if ((uint32_t)(ud >> 32) != c->gen || (uint32_t)ud >= b->n)
            continue;
        L3_ASSERT(b->inflight > 0);
        b->inflight--;
        uint32_t i = (uint32_t)ud;
        if (l3_io_complete(e, &b->reqs[i], (long)c->events[k].res))
            b->pending[b->npending++] = i;
    }
}

l3_status l3_aio_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double deadline,
                     bool *retired, l3_error *err)
{
    unsigned depth = e->depth;
    aio_batch b = { .reqs = reqs, .n = n, .pending = c->pending, .nfree = depth };
    for (size_t i = n; i-- > 0;)
        if (reqs[i].len)
            b.pending[b.npending++] = (uint32_t)i;
    unsigned free_slots[1024];
    b.free_list = depth <= 1024 ? free_slots : malloc(depth * sizeof *b.free_list);
    if (!b.free_list)
        return l3_fail(err, L3_ENOMEM, "allocating a libaio batch");
    for (unsigned s = 0; s < depth; s++)
        b.free_list[s] = depth - 1 - s;
    l3_status st = L3_OK;
    while (b.npending || b.inflight || b.stalled) {
        /* After a submission error, submit nothing more: drain and fail. */
        if (st == L3_OK)
            st = submit_iocbs(e, c, &b, prep_iocbs(e, c, &b), err);
        if (st != L3_OK && b.inflight == 0)
            break;
        if (st == L3_OK && b.inflight == 0 && (b.npending || !b.stalled))
            continue; /* more to submit, or (faults completed them all) done */
        int got = wait_events(e, c, &b, depth, deadline);
        if (got <= 0) {
            *retired = false;
            st = got == 0 ? l3_fail(err, L3_ETIMEDOUT, "libaio: %zu I/Os not completed within the I/O timeout",
                                    b.inflight + b.stalled)
                          : l3_fail(err, L3_ETIMEDOUT, "io_getevents: %s; %zu I/Os unreaped",
                                    strerror(-got), b.inflight);
            break;
        }
        reap_events(e, c, &b, got);
    }
    if (b.free_list != free_slots)
        free(b.free_list);
    return st;
}
