/* l3cache: what the I/O engines share inside uring/ (not installed).
 *
 * Rooms: engine.c (the context pool and the batch entry point) calls the
 * backends (io_uring.c, io_libaio.c), which call request.c (completion
 * accounting) and fault.c (fault injection); never the other way. */
#ifndef L3_IO_INTERNAL_H
#define L3_IO_INTERNAL_H

#include <libaio.h>
#include <liburing.h>
#include <pthread.h>
#include <sys/uio.h>

#include "engine.h"
#include "invariant.h"

#define L3_IO_CHUNK (1ull << 30) /* the largest registered iovec */
#define L3_IO_MAX_RETRIES 64

struct l3_io_ctx {
    bool in_use;
    void *bounce;
    size_t bounce_len;
    uint32_t gen; /* batch generation, in each SQE's user_data */
    /* io_uring */
    struct io_uring ring;
    bool ring_ready;
    bool file_registered;
    bool buffers_registered; /* bounce (and maybe host) registered */
    l3_io_region host[L3_IO_MAX_REGIONS]; /* the Host regions this context registered */
    unsigned host_first[L3_IO_MAX_REGIONS]; /* each region's first fixed-buffer index */
    unsigned nhost;
    uint64_t host_gen;       /* the engine's host generation it registered */
    bool host_fixed;         /* the Host regions are in the registered table */
    /* libaio */
    io_context_t aio;
    bool aio_ready;
    struct iocb *iocbs;
    struct io_event *events;
    /* both: per-batch scratch */
    uint32_t *pending;
    size_t pending_cap;
};

struct l3_io_engine {
    l3_engine_kind kind;
    l3_io_options options;
    int fds[L3_IO_MAX_DEVICES];
    unsigned nfds;
    unsigned depth;  /* each context's entries: options.depth per device */
    atomic_ulong dev_errors[L3_IO_MAX_DEVICES], dev_read[L3_IO_MAX_DEVICES], dev_written[L3_IO_MAX_DEVICES];
    l3_io_stats stats;
    atomic_bool broken;
    pthread_mutex_t mu;
    pthread_cond_t freed;
    l3_io_ctx *ctxs;
    unsigned num_ctxs;
    l3_io_region host[L3_IO_MAX_REGIONS]; /* the registered Host regions */
    unsigned nhost;
    uint64_t host_gen; /* bumped by every l3_io_engine_set_hosts */
    atomic_bool host_refused; /* some registration of the regions was refused */
    atomic_bool host_warned;
    /* Fault injection (tests): fault_on is false unless a fault is
     * installed, and then only does a submission take fault_mu. */
    atomic_bool fault_on;
    pthread_mutex_t fault_mu;
    l3_io_fault fault;
    uint64_t fault_seen, fault_applied, fault_rng;
    int stall_pipe[2]; /* io_uring: stalled requests read from its empty end */
};

/* The fault to apply to a request at its first submission (fault.c). */
l3_fault_kind l3_io_fault_decide(l3_io_engine *e, const l3_io_req *r);

/* The same, free when no fault is installed: the hot path's check. */
static inline l3_fault_kind l3_io_fault_check(l3_io_engine *e, const l3_io_req *r)
{
    if (!atomic_load_explicit(&e->fault_on, memory_order_relaxed))
        return L3_FAULT_NONE;
    return l3_io_fault_decide(e, r);
}

/* Whether this wait for completions is to fail (L3_FAULT_WAIT_ERROR). */
bool l3_io_fault_wait(l3_io_engine *e);
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

/* Release what fault injection holds (fault.c). */
void l3_io_fault_free(l3_io_engine *e);

/* Backend hooks. */
l3_status l3_uring_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err);
void l3_uring_ctx_free(l3_io_engine *e, l3_io_ctx *c);
l3_status l3_uring_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double deadline,
                       bool *retired, l3_error *err);
l3_status l3_aio_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err);
void l3_aio_ctx_free(l3_io_engine *e, l3_io_ctx *c);
l3_status l3_aio_run(l3_io_engine *e, l3_io_ctx *c, l3_io_req *reqs, size_t n, double deadline,
                     bool *retired, l3_error *err);

/* Apply one completion `res` to `r` (request.c); true when it needs
 * resubmitting. */
bool l3_io_complete(l3_io_engine *e, l3_io_req *r, long res);

#endif
