/* l3cache: the I/O engine (internal to the library; not installed).
 *
 * An engine owns a pool of I/O contexts (one io_uring ring, or one libaio
 * context, each) over one O_DIRECT file descriptor. A thread acquires a
 * context, runs a batch of requests on it to completion (or to the
 * timeout), and releases it. io_uring contexts register the file and, per
 * context, the Host regions (each split into <= 1 GiB iovecs) and a bounce
 * buffer as fixed buffers, so that requests inside them go as READ_FIXED /
 * WRITE_FIXED: the kernel DMAs straight between the device and the pool.
 * A request's buffer is found among the regions by its address. */
#ifndef L3_ENGINE_H
#define L3_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_io.h"
#include "l3_status.h"

/* How to build an engine. */
typedef struct l3_io_options {
    l3_engine_kind kind;   /* auto: io_uring, else libaio (and say so) */
    unsigned contexts;     /* contexts in the pool (threads doing I/O at once) */
    unsigned depth;        /* requests in flight per context (SQ entries) */
    size_t bounce_bytes;   /* per-context bounce buffer, registered on io_uring */
    size_t alignment;      /* O_DIRECT memory alignment (the logical block) */
    bool register_buffers; /* register the Host pool as fixed buffers (default true) */
} l3_io_options;

/* A request's offset names its device too: the device's index in the
 * bits from L3_IO_DEV_SHIFT up, the byte offset on it below. A store of
 * one device uses plain offsets. */
#define L3_IO_DEV_SHIFT 48
#define L3_IO_MAX_DEVICES 16u
static inline uint64_t l3_io_offset(uint32_t dev, uint64_t off) { return (uint64_t)dev << L3_IO_DEV_SHIFT | off; }
static inline uint32_t l3_io_dev_of(uint64_t off) { return (uint32_t)(off >> L3_IO_DEV_SHIFT); }
static inline uint64_t l3_io_byte_of(uint64_t off) { return off & ((1ull << L3_IO_DEV_SHIFT) - 1); }

/* One request: read or write `len` bytes at device `offset` from `buf`. */
typedef struct l3_io_req {
    bool write;
    uint64_t offset;
    void *buf;
    uint32_t len;
    int32_t res; /* out: len on success, or -errno */
    /* Internal: bytes done so far, retries, and the fault applied to it. */
    uint32_t done;
    uint16_t retries;
    uint8_t fault;
} l3_io_req;

/* Counters of an engine (monotonic, updated atomically). */
typedef struct l3_io_stats {
    atomic_ulong requests;      /* requests completed */
    atomic_ulong fixed;         /* submissions that went as READ_FIXED/WRITE_FIXED */
    atomic_ulong unfixed;       /* submissions on unregistered memory */
    atomic_ulong bytes_read;
    atomic_ulong bytes_written;
    atomic_ulong short_retries; /* resubmissions after a short transfer */
    atomic_ulong eagain_retries;
    atomic_ulong errors;        /* requests that failed */
    atomic_ulong timeouts;      /* batches not reaped within their timeout */
} l3_io_stats;

typedef struct l3_io_engine l3_io_engine;
typedef struct l3_io_ctx l3_io_ctx;

/* Build an engine over `nfds` descriptors (opened O_DIRECT; a request's
 * offset names which, l3_io_offset). Each context's ring takes `depth`
 * requests per device. With kind auto, a failed io_uring setup
 * (io_uring_disabled, seccomp, ENOSYS) falls back to libaio and logs why. */
l3_status l3_io_engine_open(const l3_io_options *options, const int *fds, unsigned nfds,
                            l3_io_engine **out, l3_error *err);

/* What this engine moved on device `dev` so far: requests that failed,
 * bytes read and written. */
void l3_io_engine_dev_stats(l3_io_engine *engine, unsigned dev, uint64_t *errors, uint64_t *bytes_read,
                            uint64_t *bytes_written);

/* The engine actually in use: L3_ENGINE_IO_URING or L3_ENGINE_LIBAIO. */
l3_engine_kind l3_io_engine_kind(const l3_io_engine *engine);

/* The engine's counters. */
l3_io_stats *l3_io_engine_stats(l3_io_engine *engine);

/* Whether some batch was not reaped in time: the engine refuses all I/O
 * from then on, and memory it was given may still be written. */
bool l3_io_engine_broken(l3_io_engine *engine);

/* A Host region registered for fixed-buffer I/O. */
typedef struct l3_io_region {
    void *base;
    size_t len;
} l3_io_region;

/* The most Host regions an engine registers at once. */
#define L3_IO_MAX_REGIONS 64u

/* Register the Host regions (n of them, at most L3_IO_MAX_REGIONS; 0
 * unregisters all), replacing the ones before: io_uring contexts register
 * them (with their bounce buffer) as fixed buffers the next time they are
 * used. The caller keeps them mapped until it replaces them. A refused
 * registration (e.g. ENOMEM under RLIMIT_MEMLOCK) is logged once and the
 * regions are then used unregistered, still with O_DIRECT into them. */
void l3_io_engine_set_hosts(l3_io_engine *engine, const l3_io_region *regions, size_t n);

/* Whether Host regions are registered and no context's registration of
 * them was refused. */
bool l3_io_engine_host_fixed(l3_io_engine *engine);

/* Take a context for this thread's batch, waiting while all are in use. */
l3_io_ctx *l3_io_acquire(l3_io_engine *engine);

/* Take a free context without waiting, or NULL when all are in use. */
l3_io_ctx *l3_io_try_acquire(l3_io_engine *engine);

/* Give a context back. */
void l3_io_release(l3_io_engine *engine, l3_io_ctx *ctx);

/* The context's bounce buffer (aligned, registered where possible). */
void *l3_io_bounce(l3_io_ctx *ctx, size_t *len);

/* Run `n` requests to completion: short transfers are resubmitted for the
 * rest, -EAGAIN/-EINTR retried (bounded), a zero-byte read is -EIO. Each
 * req->res says how it ended. Returns L3_OK once every request completed
 * (check each res), or L3_ETIMEDOUT with *retired false when some were not
 * reaped within `timeout` seconds (the engine is then broken), or
 * L3_ECLOSED on a broken engine (nothing submitted, *retired true). Any
 * other error leaves *retired true only when nothing is still in flight. */
l3_status l3_io_run(l3_io_engine *engine, l3_io_ctx *ctx, l3_io_req *reqs, size_t n,
                    double timeout, bool *retired, l3_error *err);

/* Install (or with NULL, remove) a fault (l3_io.h); resets its counters.
 * With none installed, submissions never look at the fault state. */
void l3_io_engine_set_fault(l3_io_engine *engine, const l3_io_fault *fault);

/* Whether the next synchronous metadata write of the store to device
 * `dev` is to fail (an installed L3_FAULT_EIO with ops 3, or aimed at that
 * device with ops 0: a dead device); free when no fault is installed. */
bool l3_io_engine_meta_fault(l3_io_engine *engine, unsigned dev);

/* Whether a fault is installed (tests). */
bool l3_io_engine_fault_on(l3_io_engine *engine);

/* Requests a fault was applied to so far. */
uint64_t l3_io_engine_faults(l3_io_engine *engine);

/* Free the engine; every context must be released. */
void l3_io_engine_close(l3_io_engine *engine);

#endif
