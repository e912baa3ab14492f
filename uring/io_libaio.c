/* The libaio engine: Linux native AIO on the O_DIRECT descriptor. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"
#include "l3_clock.h"

l3_status l3_aio_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err)
{
    int rc = io_setup((int)e->options.depth, &c->aio);
    if (rc < 0)
        return l3_fail(err, rc == -EAGAIN ? L3_ENOMEM : L3_EUNSUPPORTED,
                       "io_setup(%u): %s (see /proc/sys/fs/aio-max-nr)", e->options.depth,
                       strerror(-rc));
    c->aio_ready = true;
    c->iocbs = calloc(e->options.depth, sizeof *c->iocbs);
    c->events = calloc(e->options.depth, sizeof *c->events);
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

l3_status l3_aio_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double deadline,
                     bool *retired, l3_error *err)
{
    unsigned depth = e->options.depth;
    uint32_t *pending = c->pending;
    size_t npending = 0, inflight = 0;
    for (size_t i = n; i-- > 0;)
        if (reqs[i].len)
            pending[npending++] = (uint32_t)i;
    /* iocb slots: a free list over the context's depth. */
    struct iocb *ptrs[1024];
    unsigned free_slots[1024];
    unsigned *free_list = depth <= 1024 ? free_slots : malloc(depth * sizeof *free_list);
    if (!free_list)
        return l3_fail(err, L3_ENOMEM, "allocating a libaio batch");
    unsigned nfree = depth;
    size_t stalled = 0;
    for (unsigned s = 0; s < depth; s++)
        free_list[s] = depth - 1 - s;
    l3_status st = L3_OK;
    while (npending || inflight || stalled) {
        unsigned batch = 0;
        while (npending && nfree && batch < 1024) {
            uint32_t i = pending[--npending];
            l3_io_req *r = &reqs[i];
            l3_fault_kind fault = l3_io_fault_decide(e, r);
            if (fault == L3_FAULT_EIO || fault == L3_FAULT_EAGAIN) {
                if (l3_io_complete(e, r, fault == L3_FAULT_EIO ? -EIO : -EAGAIN))
                    pending[npending++] = i;
                continue;
            }
            if (fault == L3_FAULT_STALL) {
                stalled++; /* never submitted, never completed: the batch times out */
                continue;
            }
            unsigned slot = free_list[--nfree];
            struct iocb *cb = &c->iocbs[slot];
            char *buf = (char *)r->buf + r->done;
            uint32_t len = r->len - r->done;
            if (fault == L3_FAULT_SHORT)
                len = (uint32_t)(len / 2 / e->options.alignment * e->options.alignment);
            if (r->write)
                io_prep_pwrite(cb, e->fd, buf, len, (long long)(r->offset + r->done));
            else
                io_prep_pread(cb, e->fd, buf, len, (long long)(r->offset + r->done));
            cb->data = (void *)(uintptr_t)((uint64_t)c->gen << 32 | i);
            /* The slot is cb - iocbs: the kernel writes aio_key itself. */
            ptrs[batch++] = cb;
        }
        unsigned sent = 0;
        while (sent < batch) {
            int rc = io_submit(c->aio, (long)(batch - sent), ptrs + sent);
            if (rc > 0) {
                sent += (unsigned)rc;
                inflight += (unsigned)rc;
                atomic_fetch_add(&e->stats.unfixed, (unsigned long)rc);
                continue;
            }
            if (rc == -EINTR)
                continue;
            if ((rc == -EAGAIN || rc == 0) && inflight)
                break; /* reap, then submit the rest */
            if (rc == -EAGAIN)
                continue;
            st = l3_fail(err, L3_EIO, "io_submit: %s", strerror(-rc));
            break;
        }
        /* Put back what was not submitted. */
        for (unsigned k = batch; k-- > sent;) {
            uint64_t ud = (uint64_t)(uintptr_t)ptrs[k]->data;
            pending[npending++] = (uint32_t)ud;
            free_list[nfree++] = (unsigned)(ptrs[k] - c->iocbs);
        }
        if (st != L3_OK && inflight == 0)
            break;
        if (inflight == 0 && npending)
            continue;
        int got;
        for (;;) {
            double left = deadline - l3_monotonic_seconds();
            if (left < 0)
                left = 0;
            struct timespec ts = { .tv_sec = (time_t)left, .tv_nsec = (long)((left - floor(left)) * 1e9) };
            got = inflight ? io_getevents(c->aio, 1, (long)depth, c->events, &ts) : 0;
            if (!inflight && left > 0) {
                /* Only stalled requests are left: wait out the timeout. */
                nanosleep(&ts, NULL);
            }
            if (got == -EINTR)
                continue;
            break;
        }
        if (got == 0) {
            *retired = false;
            st = l3_fail(err, L3_ETIMEDOUT, "libaio: %zu I/Os not completed within the I/O timeout",
                         inflight + stalled);
            break;
        }
        if (got < 0) {
            *retired = false;
            st = l3_fail(err, L3_ETIMEDOUT, "io_getevents: %s; %zu I/Os unreaped", strerror(-got),
                         inflight);
            break;
        }
        for (int k = 0; k < got; k++) {
            struct iocb *cb = c->events[k].obj;
            uint64_t ud = (uint64_t)(uintptr_t)c->events[k].data;
            free_list[nfree++] = (unsigned)(cb - c->iocbs);
            if ((uint32_t)(ud >> 32) != c->gen || (uint32_t)ud >= n)
                continue;
            inflight--;
            uint32_t i = (uint32_t)ud;
            if (l3_io_complete(e, &reqs[i], (long)c->events[k].res))
                pending[npending++] = i;
        }
    }
    if (free_list != free_slots)
        free(free_list);
    return st;
}
