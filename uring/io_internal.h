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
#include "l3_status.h"

#define L3_IO_CHUNK (1ull << 30) /* the largest registered iovec */
#define L3_IO_MAX_RETRIES 64

/* The batch a context runs, from l3_io_start to its end (engine.h): its
 * requests, what is left to submit and to reap, the finished requests not
 * yet reported (done[head, tail) in the context), and how it ended. */
typedef struct l3_io_batch {
    l3_io_req *reqs;
    size_t n;
    size_t bytes;         /* the requests' lengths, summed */
    double deadline;      /* monotonic seconds: reaped by then, or unretired */
    size_t npending;      /* requests to (re)submit: the context's pending stack */
    size_t inflight;      /* submitted, not yet reaped */
    size_t stalled;       /* libaio: held back by L3_FAULT_STALL, never submitted */
    size_t nops;          /* io_uring: no-ops submitted for requests a fault completed at once, not yet reaped */
    size_t head, tail;    /* the context's done queue: finished, from head on not yet reported */
    double delay_until;   /* the top of the pending stack waits for this time (L3_FAULT_DELAY), or 0 */
    l3_status failed;     /* libaio: a submission error, reported once what is in flight is reaped */
    bool open;            /* started and not yet ended */
    l3_status status;     /* how it ended (once not open) */
    bool retired;         /* every request submitted was reaped (so far, while open) */
    bool wait_all;        /* the caller reports nothing until the end (l3_io_finish): a wait
                             sleeps until every request in flight has finished, one wake-up
                             for the lot, not one per completion */
    bool nowait;          /* this step never sleeps (l3_io_poll_some): it submits, takes what
                             has finished, judges the deadline and returns */
    l3_error err;         /* the message of a status other than L3_OK */
} l3_io_batch;

#define L3_IO_MAX_OWNED 64 /* contexts owned by driving threads, in all */

struct l3_io_ctx {
    bool in_use;
    /* A context owned by the thread that drives its batches
     * (l3_io_try_acquire_for): its ring is that thread's alone
     * (IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN), so its completions wake
     * nobody until the thread waits on the ring (l3_io_wait_owned). */
    bool owned;
    pthread_t owner;
    bool link_armed;  /* a poll of notify_fd, linked to a timeout that ends a wait, is armed on the ring */
    bool woken;       /* that poll completed since the last l3_io_wait_owned: notify_fd was written */
    bool wake_all;    /* l3_io_wait_owned waits for all of its batch in flight, not half */
    void *bounce;
    size_t bounce_len;
    uint32_t gen; /* batch generation, in each SQE's user_data */
    int notify_fd; /* an eventfd its completions signal (l3_io_set_notify), or -1 */
    /* io_uring */
    struct io_uring ring;
    bool ring_ready;
    bool file_registered;
    bool buffers_registered; /* a table is registered: the bounce buffer's, the Host regions', or both */
    bool bounce_fixed;       /* the bounce buffer is in it, at index 0 */
    bool pin_refused;        /* the engine's pin of these regions was refused: try again when due */
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
    unsigned *free_list;     /* free iocb slots, a stack of nfree */
    unsigned nfree;
    /* both: the batch, and its scratch of cap requests */
    l3_io_batch batch;
    size_t window;           /* with window_on: a batch's requests in flight at most (l3_io_set_window) */
    bool window_on;
    uint32_t *pending;       /* requests to (re)submit, a stack */
    uint32_t *done;          /* finished requests in the order they finished */
    size_t cap;
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
    l3_io_ctx *owned[L3_IO_MAX_OWNED]; /* driving threads' own contexts (NULL: freed); under mu */
    unsigned num_owned;
    atomic_bool owned_off;             /* the kernel has no DEFER_TASKRUN: drivers use the pool */
    l3_io_region host[L3_IO_MAX_REGIONS]; /* the registered Host regions */
    unsigned nhost;
    uint64_t host_gen; /* bumped by every l3_io_engine_set_hosts */
    atomic_bool host_refused; /* some registration of the regions was refused */
    /* io_uring: the Host regions pinned once, on a ring that does no I/O;
     * each context clones that table behind its own bounce buffer
     * (IORING_REGISTER_CLONE_BUFFERS at an offset, kernel 6.13) instead of
     * pinning the regions again and counting them against RLIMIT_MEMLOCK
     * once more (under pin_mu, taken before mu: pinning a large pool takes
     * a while, and acquire and release go on meanwhile). */
    pthread_mutex_t pin_mu;
    struct io_uring pin_ring;
    bool pin_ready;        /* pin_ring is set up */
    uint64_t pin_gen;      /* the host generation last pinned there (0: none) */
    int pin_rc;            /* that pinning's result: 0, or -errno */
    _Atomic uint64_t pin_retry_ns; /* a refused pin is tried again from then on (CLOCK_MONOTONIC) */
    uint64_t pin_backoff_ns;       /* the wait after the last refusal of this generation's pin (0: none) */
    uint64_t pin_retry_first_ns;   /* the first such wait (1 s; tests set it) */
    atomic_bool clone_off; /* the kernel cannot clone at an offset: each context pins its own */
    bool clone_known;      /* it can: a clone succeeded (under pin_mu) */
    int clone_fault;       /* tests: a clone's error in place of the kernel's (-EINVAL: cannot), 0 none */
    _Atomic uint64_t warned_gen; /* the host generation whose refusal was last logged (0: none) */
    /* Fault injection (tests): fault_on is false unless a fault is
     * installed, and then only does a submission take fault_mu. */
    atomic_bool fault_on;
    pthread_mutex_t fault_mu;
    l3_io_fault fault;
    uint64_t fault_seen, fault_applied, fault_rng;
    int stall_pipe[2]; /* io_uring: stalled requests read from its empty end */
};

/* How many of its batch's requests context `c` keeps in flight at most:
 * its window, within the engine's depth (0: held). */
static inline size_t l3_io_window(const l3_io_engine *e, const l3_io_ctx *c)
{
    return c->window_on && c->window < e->depth ? c->window : e->depth;
}

#endif
