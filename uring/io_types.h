/* l3cache: the I/O engine's types (internal to the library; not
 * installed): how to build an engine, a request and its offset (which
 * names the device), the counters, the Host regions. Types only, so that
 * every room of uring/ (and the store's on-disk format) can use them
 * without depending on the engine itself (engine.h). */
#ifndef L3_IO_TYPES_H
#define L3_IO_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_io.h"

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

/* A Host region registered for fixed-buffer I/O. */
typedef struct l3_io_region {
    void *base;
    size_t len;
} l3_io_region;

/* The most Host regions an engine registers at once. */
#define L3_IO_MAX_REGIONS 64u

#endif
