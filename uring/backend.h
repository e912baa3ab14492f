/* l3cache: the I/O backends, io_uring (io_uring.c) and libaio
 * (io_libaio.c), as the engine (engine.c) calls them, and what the two
 * share: the per-submission fault check, free when no fault is installed,
 * and where a request (or its rest) goes. Internal to uring/. */
#ifndef L3_BACKEND_H
#define L3_BACKEND_H

#include "fault.h"
#include "invariant.h"
#include "io_internal.h"
#include "l3_status.h"
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

/* Each backend's context set-up, teardown and batch (engine.c calls them). */
l3_status l3_uring_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err);
void l3_uring_ctx_free(l3_io_engine *e, l3_io_ctx *c);
l3_status l3_uring_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double deadline,
                       bool *retired, l3_error *err);
l3_status l3_aio_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err);
void l3_aio_ctx_free(l3_io_engine *e, l3_io_ctx *c);
l3_status l3_aio_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double deadline,
                     bool *retired, l3_error *err);

#endif
