/* l3cache: the slab store's eviction policy (internal; not installed).
 *
 * The one room that decides which slab is reused next and which of its
 * objects are worth keeping. It sees the slabs' state in the shared
 * mapping and is told of every read and write; it never evicts itself
 * (alloc.c does, reinsert.c moves what it keeps). Swap it by replacing
 * these functions. Two policies (store option `eviction`):
 *
 * - L3_EVICT_FIFO_REINSERT (default): slabs are reused in the order they
 *   were opened (a log: writes stay whole-slab and sequential); before a
 *   slab is reused, its objects read in the last three quarters of their
 *   time in the store are reinserted (rewritten at the head), as CacheLib
 *   Navy does, and those read only earlier while trials show such early
 *   keeps read again (policy.c). Close to an exact object LRU's hits at a
 *   small write cost, above them where early keeps pay (bench/results).
 * - L3_EVICT_LRU_SLAB: the least recently read or written slab goes
 *   whole, nothing is kept (the policy before; for comparison).
 *
 * Both use free slabs first, then empty ones, and pass over slabs with
 * writes in flight or under a read lease. With admission (admit.h) the
 * slabs form two logs, probation (keys written at first sight) and main:
 * the victim is probation's oldest while probation holds its rung's
 * share of the slabs, else main's oldest. */
#ifndef L3_POLICY_H
#define L3_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "entries.h"

/* Index entry flags (in l3_index_entry.flags; bit 1 is
 * L3_ENTRY_SEGMENTED; the last read's sequence is the entry's read_stamp,
 * policy.c's): read since it was written; moved by reinsertion as an early keep (L3_KEEP_EARLY), so that
 * its next read counts for early keeps. */
#define L3_ENTRY_READ 1u
#define L3_ENTRY_EARLY 4u

/* What reinsertion does with an object when its slab is reused. */
typedef enum l3_keep {
    L3_KEEP_NOT = 0, /* it is evicted */
    L3_KEEP = 1,     /* it moves: read since written, in probation's log, or in main's late in its time */
    L3_KEEP_EARLY = 2 /* it moves though main's and read only in the first quarter of its time: in a
                         trial, or while trials show 1 in 8 such moves read again (policy.c) */
} l3_keep;

/* CLOCK_MONOTONIC in nanoseconds: one clock for every process. */
uint64_t l3_policy_clock_ns(void);

/* Lease slab `slab` to readers until `until` (l3_policy_clock_ns), under
 * the lock: the victim choice passes it over until then. */
void l3_policy_lease(l3_slabstore *s, uint32_t slab, uint64_t until);

/* Note a read of the object of entry `e` (under the lock). */
void l3_policy_read(l3_slabstore *s, l3_index_entry *e);

/* Note a write into slab `slab` (any lock, or none). */
void l3_policy_written(l3_slabstore *s, uint32_t slab);

/* The verdict on the object of `e` when its slab is reused (under the
 * lock), its group's last read at sequence `group_read` (0: none) counting
 * as a read of it. */
l3_keep l3_policy_keep(l3_slabstore *s, const l3_index_entry *e, uint64_t group_read);

/* Judge the object of `e`, its slab being reused, if it was an early keep
 * (under the lock): read since its move, or its group since (`group_read`,
 * 0: none), or not; this counts for the early keeps to come. Call it for
 * every object of a reused slab, before any verdict. */
void l3_policy_judge(l3_slabstore *s, const l3_index_entry *e, uint64_t group_read);

/* The slab to reuse, under the lock: with `need_live` false a free or
 * empty slab first, else the victim among slabs with live objects; never
 * a slab with writes in flight, a read lease, or its device offline; only
 * on device `device` unless it is -1. -1 when none qualifies. */
int32_t l3_policy_victim(l3_slabstore *s, bool need_live, int32_t device);

/* The bytes writable without evicting anything, whichever log they go
 * to: free or empty slabs and the open slabs' free slots (while probation
 * and main are both written, the smaller log's only) (under the lock). */
uint64_t l3_policy_room(const l3_slabstore *s);

#endif
