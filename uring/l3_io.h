/* l3cache: the I/O engines' public names: which engine a store uses, and
 * the faults a test can inject into it.
 *
 * The engines themselves (io_uring with fixed buffers and a registered
 * file, and libaio as the fallback) are internal to the library; see
 * uring/engine.h. */
#ifndef L3_IO_H
#define L3_IO_H

#include <stdbool.h>
#include <stdint.h>

typedef enum l3_engine_kind { L3_ENGINE_AUTO, L3_ENGINE_IO_URING, L3_ENGINE_LIBAIO } l3_engine_kind;

/* "io_uring", "libaio" or "auto". */
const char *l3_engine_name(l3_engine_kind kind);

/* Parse "auto", "io_uring" or "libaio"; false for anything else. */
bool l3_engine_parse(const char *text, l3_engine_kind *kind);

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
    uint64_t shift;    /* L3_FAULT_MISDIRECT: how far from its offset a write lands */
    uint32_t device;   /* 0: requests to every device; d + 1: only device d's (a
                          store over several devices, store.paths) */
} l3_io_fault;

#endif
