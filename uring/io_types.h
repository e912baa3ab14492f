/* l3cache: the I/O engine's types (internal to the library; not
 * installed): the faults a test can inject (fault.h installs them; tests
 * reach them through the store, store/slab/slabstore.h), how to build an
 * engine, a request and its offset (which names the device), the
 * counters, the Host regions. Types only, so that every room of uring/
 * (and the store's on-disk format) can use them without depending on the
 * engine itself (engine.h). */
#ifndef L3_IO_TYPES_H
#define L3_IO_TYPES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_io.h"

/* Fault injection, for tests: which requests fail and how. A request is
 * considered once, at its first submission; L3_FAULT_WAIT_ERROR counts the
 * engine's waits for completions instead. TORN and MISDIRECT apply to
 * writes only, as a device that acknowledges what it did not do. */
typedef enum l3_fault_kind {
    L3_FAULT_NONE = 0,
    L3_FAULT_EIO,    /* completes with -EIO without touching the device */
    L3_FAULT_SHORT,  /* submitted for half its length: a genuine short transfer */
    L3_FAULT_EAGAIN, /* completes with -EAGAIN once, then is resubmitted */
    L3_FAULT_STALL,  /* never completes: its batch times out, unretired */
    L3_FAULT_TORN,   /* a write that lands only its first half but reports success */
    L3_FAULT_MISDIRECT, /* a write that lands `shift` bytes away but reports success */
    L3_FAULT_WAIT_ERROR, /* the wait for completions fails with EIO, I/O still in flight */
    L3_FAULT_DELAY,  /* submitted `shift` microseconds late, then as usual (a slow device): the
                        requests before it go on meanwhile, those after it wait behind it */
} l3_fault_kind;

typedef struct l3_io_fault {
    l3_fault_kind kind;
    int ops;           /* 0 reads and writes, 1 reads only, 2 writes only, 3 the
                          store's metadata writes only (superblock, slab
                          records, journal; L3_FAULT_EIO) */
    uint64_t after;    /* let this many matching requests through first */
    uint64_t count;    /* then fault this many (0: every one) */
    uint32_t permille; /* if not 0: fault each matching request with this
                          probability instead, from a seeded generator */
    uint64_t seed;
    uint64_t shift;    /* L3_FAULT_MISDIRECT: how far from its offset a write lands;
                          L3_FAULT_DELAY: how many microseconds its submission waits */
    uint32_t device;   /* 0: requests to every device; d + 1: only device d's (a
                          store over several devices, store.paths) */
} l3_io_fault;

/* The device model, for tests (power.h): each device's volatile write
 * cache. A write that completed is held as unflushed until a flush of its
 * device (l3_io_sync); at the cut, every unit (4 KiB) with unflushed
 * writes is left as it was at the last flush or as after any one of them,
 * chosen from `seed` (lost writes, writes torn at a unit's boundary, writes
 * landing out of order), and the process _exits at once. Process-wide:
 * every device this process writes through the engines or the store's
 * metadata writes, from its installation on. */
typedef struct l3_io_power {
    uint64_t seed;      /* the cut's choices */
    uint64_t cut_at;    /* the cut comes at this write (1 = the first the model sees), 0: never */
    uint64_t max_bytes; /* copies held at most (0: 256 MiB); past it, the cut comes at once */
    int exit_code;      /* the process's exit status at the cut (0: L3_IO_POWER_EXIT) */
} l3_io_power;

#define L3_IO_POWER_EXIT 86
#define L3_IO_POWER_UNIT 4096u

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
    uint8_t power; /* the device model (power.h) holds it as in flight */
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
    atomic_ulong host_pins;     /* registrations that pinned the Host regions: the engine's one
                                   pin (io_uring cloning), or a context's own table */
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
