/* l3cache: the I/O backends, io_uring (io_uring.c) and libaio
 * (io_libaio.c), as the engine (engine.c) calls them, and what the two
 * share: the per-submission fault check, free when no fault is installed,
 * and where a request (or its rest) goes. Internal to uring/. */
#ifndef L3_BACKEND_H
#define L3_BACKEND_H

#include <errno.h>

#include "fault.h"
#include "invariant.h"
#include "io_internal.h"
#include "l3_clock.h"
#include "l3_status.h"
#include "power.h"
#include "request.h"

/* The fault to apply to a request at its first submission (fault.c's
 * l3_io_fault_decide), free when no fault is installed: the hot path's
 * check. */
static inline l3_fault_kind l3_io_fault_check(l3_io_engine *e, const l3_io_req *r)
{
    if (!atomic_load_explicit(&e->fault_on, memory_order_relaxed))
        return L3_FAULT_NONE;
    return l3_io_fault_decide(e, r);
}

/* The fault of request `r` of batch `b` as it is about to be submitted:
 * l3_io_fault_check's at its first submission. A request L3_FAULT_DELAY
 * hit is held back (L3_FAULT_DELAY, not submitted: the requests after it
 * on the pending stack wait behind it) until b->delay_until, then goes as
 * it is. */
static inline l3_fault_kind l3_io_fault_next(l3_io_engine *e, l3_io_batch *b, l3_io_req *r)
{
    if (r->fault == L3_FAULT_DELAY) {
        if (l3_monotonic_seconds() < b->delay_until)
            return L3_FAULT_DELAY;
        b->delay_until = 0;
        r->fault = L3_FAULT_NONE;
        return L3_FAULT_NONE;
    }
    l3_fault_kind fault = l3_io_fault_check(e, r);
    if (fault == L3_FAULT_DELAY) {
        r->fault = L3_FAULT_DELAY;
        b->delay_until = l3_monotonic_seconds() + (double)l3_io_fault_delay(e) / 1e6;
    }
    return fault;
}

/* Whether request `r`, about to be submitted, reaches the device: the
 * device model's look at a write's first submission (power.h), free when
 * none is installed. False: the model's cut is pending and the write is
 * lost (the caller completes it at once, as the device would have
 * acknowledged it). */
static inline bool l3_io_power_lands(l3_io_engine *e, l3_io_req *r)
{
    if (!r->write || r->done || r->retries || !l3_io_power_on())
        return true;
    unsigned dev = l3_io_dev_of(r->offset);
    L3_ASSERT(dev < e->nfds);
    bool held = l3_io_power_write_start(e->fds[dev], l3_io_byte_of(r->offset), r->len);
    r->power = held;
    return held;
}

/* Whether request `r`, its fault `fault` decided, completes at once
 * without the device, and with what result (*res): an injected EIO or
 * EAGAIN, or a write the device model loses (acknowledged whole, as the
 * device would have). Both backends ask it before they submit. */
static inline bool l3_io_without_device(l3_io_engine *e, l3_io_req *r, l3_fault_kind fault, long *res)
{
    if (fault == L3_FAULT_EIO || fault == L3_FAULT_EAGAIN) {
        *res = fault == L3_FAULT_EIO ? -EIO : -EAGAIN;
        return true;
    }
    if (fault == L3_FAULT_STALL || l3_io_power_lands(e, r))
        return false;
    *res = (long)(r->len - r->done);
    return true;
}

/* When the batch's wait for completions is to return at the latest: its
 * deadline, or sooner the time a held-back request is due (with nothing
 * in flight, at once once it is due; with requests in flight and its time
 * come, the next completion makes room for it). */
static inline double l3_io_wait_until(const l3_io_batch *b)
{
    if (b->delay_until > 0 && b->delay_until < b->deadline &&
        (b->inflight == 0 || b->delay_until > l3_monotonic_seconds()))
        return b->delay_until;
    return b->deadline;
}

/* The completions the batch's wait sleeps for: every request in flight
 * when its caller reports nothing until the end (l3_io_finish: one wake-up
 * for the lot), else the first. */
static inline unsigned l3_io_wait_count(const l3_io_batch *b)
{
    return b->wait_all && b->inflight > 1 ? (unsigned)b->inflight : 1;
}

/* Queue request `i` of the context's batch as finished: l3_io_wait_some
 * reports it. */
static inline void l3_io_finished(l3_io_ctx *c, uint32_t i)
{
    L3_ASSERT(c->batch.tail < c->batch.n);
    c->done[c->batch.tail++] = i;
}

/* Whether this wait for completions is to fail (L3_FAULT_WAIT_ERROR; fault.c's
 * l3_io_fault_wait), free when no fault is installed. */
static inline bool l3_io_fault_wait_check(l3_io_engine *e)
{
    return atomic_load_explicit(&e->fault_on, memory_order_relaxed) && l3_io_fault_wait(e);
}

/* Where and how much of a request to submit now, its fault applied: the
 * buffer, the length, and the device (its index) and byte offset there. */
static inline void l3_io_span(const l3_io_engine *e, const l3_io_req *r, l3_fault_kind fault, char **buf,
                              uint32_t *len, uint64_t *off, unsigned *dev)
{
    *buf = (char *)r->buf + r->done;
    *len = r->len - r->done;
    *dev = l3_io_dev_of(r->offset);
    L3_ASSERT(*dev < e->nfds);
    *off = l3_io_byte_of(r->offset) + r->done;
    if (fault == L3_FAULT_SHORT || fault == L3_FAULT_TORN)
        *len = (uint32_t)(*len / 2 / e->options.alignment * e->options.alignment);
    if (fault == L3_FAULT_MISDIRECT)
        *off += e->fault.shift;
}

/* Each backend's context set-up and teardown (engine.c calls them). */
l3_status l3_uring_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err);
void l3_uring_ctx_free(l3_io_engine *e, l3_io_ctx *c);
/* Unpin the Host regions the engine pinned for contexts to clone unless
 * they are the current ones (e->pin_mu not held): they were set anew. */
void l3_uring_unpin_stale(l3_io_engine *e);
/* Unpin them and end the ring that held them (the engine's teardown). */
void l3_uring_pin_free(l3_io_engine *e);
l3_status l3_aio_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err);
void l3_aio_ctx_free(l3_io_engine *e, l3_io_ctx *c);

/* Each backend's batch, as engine.c drives it. Begin: the context's batch
 * is set up (its requests reset, the pending stack filled, zero-length
 * ones already finished); submit what the device takes. Step: make
 * progress until a finished request is queued on the context's done
 * queue, or nothing is left to submit or reap. Both return L3_OK, or the
 * error that ends the batch (its message in c->batch.err, and
 * c->batch.retired false when some I/O may still be in flight). */
l3_status l3_uring_begin(l3_io_engine *e, l3_io_ctx *c);
/* Register the engine's Host regions on the context's ring now, not at its
 * next begin. */
void l3_uring_prepare(l3_io_engine *e, l3_io_ctx *c);
/* Signal eventfd `fd` (or none, -1) on each of the context's completions. */
l3_status l3_uring_set_notify(l3_io_ctx *c, int fd, l3_error *err);
/* How many completions a sleep on owned context c waits for: half its
 * batch in flight (all, with wake_all). */
static inline size_t l3_io_wake_count(const l3_io_ctx *c)
{
    return c->wake_all ? c->batch.inflight : (c->batch.inflight + 1) / 2;
}

/* Sleep on owned context c's ring (its owner thread) until half its
 * batch's requests in flight are in (all, with wake_all), eventfd `fd` is
 * written, or `until` (monotonic seconds) passes; at once when some have
 * finished already. What came in is reported by the next step. */
void l3_uring_wait_owned(l3_io_engine *e, l3_io_ctx *c, int fd, double until);
/* Stop signalling the context's eventfd on its completions. */
void l3_uring_quiet(l3_io_ctx *c);
l3_status l3_uring_step(l3_io_engine *e, l3_io_ctx *c);
l3_status l3_aio_begin(l3_io_engine *e, l3_io_ctx *c);
l3_status l3_aio_step(l3_io_engine *e, l3_io_ctx *c);

#endif
