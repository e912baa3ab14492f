/* l3cache: the allocator's shared state (internal; types only). Its one
 * writer is alloc.c (ARCHITECTURE.md, "Who writes the shared state"):
 * the slabs' states and fill, the slots reserved, the stripe over the
 * devices, and each process's account of what it reserved and the room
 * it waits for. The slab state machine is drawn in alloc.h. */
#ifndef L3_ALLOC_STATE_H
#define L3_ALLOC_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "procs_state.h"

enum { S_FREE = 0, S_OPEN = 1, S_SEALED = 2, S_OFFLINE = 3 /* its device is missing or failed */ };

/* A slab's admission log: keys admitted at first sight go to probation's
 * slabs, the rest (and what reinsertion keeps) to main's. */
enum { LOG_MAIN = 0, LOG_PROBATION = 1, L3_LOGS = 2 };

/* A slab's state (an area of the mapping, one per slab). */
typedef struct slab_info {
    uint32_t state;          /* S_FREE, S_OPEN (its class's append target) or S_SEALED */
    uint32_t disk_used;      /* its record on disk says USED in this epoch */
    uint32_t payload_blocks; /* size class */
    uint32_t nslots;
    uint64_t gen;
    uint64_t first_seq;
    uint32_t next_slot;
    uint32_t live;
    uint32_t inflight;       /* reserved slots whose writes are not published */
    int32_t standby_next;    /* in its class's standby chain (l3_class_next): the next, or -1 */
    uint64_t record_gen;     /* the generation whose slab record is on disk (0: none yet) */
    uint64_t summary_gen;    /* the generation whose summary was written (or claimed) */
    uint64_t live_bytes;
    _Atomic uint64_t last_access;
    uint64_t lease_until;    /* CLOCK_MONOTONIC ns: readers hold it until then (0: none) */
    uint32_t log;            /* LOG_MAIN, or LOG_PROBATION: written at first sight, not read since
                                (admission's two logs, docs/admission.md) */
    uint32_t pad;
} slab_info;

/* Slabs a process holds reservations in at once, by slab (its pins): a
 * put's open slabs, a move's victim. Past them a reservation is counted
 * untracked. */
#define L3_PROC_PINS 128u

/* A process's reservations in one slab. */
typedef struct l3_proc_pin {
    uint32_t slab;
    uint32_t count;
} l3_proc_pin;

/* A process's account with the allocator (by its slot in the process
 * table): zero when its slot is free. */
typedef struct l3_proc_account {
    uint64_t reserved;       /* its share of the reserved slots */
    uint64_t pending;        /* bytes of the put waves it waits room for, until their slots are
                                reserved (l3_reinsert_make_room: whoever makes room makes it for them) */
    uint32_t npins;          /* pins[0..npins) in use */
    uint32_t untracked;      /* reservations past its pins: if it dies, their slabs stay pinned until
                                the store's mapping is built again (every process closed it) */
    l3_proc_pin pins[L3_PROC_PINS]; /* what it reserved, by slab: given back if it dies */
} l3_proc_account;

/* The allocator's part of the mapping's header. */
typedef struct l3_alloc_shared {
    uint64_t reserved;       /* slots allocated but not yet published */
    uint32_t stripe_dev;     /* the device puts' slots go to now (under the store's lock) */
    uint32_t stripe_fill;    /* the bytes placed there since it became current */
    l3_proc_account procs[L3_MAX_PROCS];
} l3_alloc_shared;

#endif
