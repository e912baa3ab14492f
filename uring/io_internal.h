/* l3cache: the insides of an engine and of its contexts, shared inside
 * uring/ (not installed). Types only.
 *
 * Rooms (ARCHITECTURE.md, lowest first): l3_io.h and io_types.h (the
 * names and types), this header, fault.c (fault injection) and request.c
 * (completion accounting), the backends io_uring.c and io_libaio.c
 * (backend.h), and engine.c (the context pool and the batch entry point),
 * which calls the backends; never the other way. */
#ifndef L3_IO_INTERNAL_H
#define L3_IO_INTERNAL_H

#include <libaio.h>
#include <liburing.h>
#include <pthread.h>
#include <sys/uio.h>

#include "io_types.h"

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

#endif
