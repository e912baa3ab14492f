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
 *   Navy does. Close to an exact object LRU's hits at a small write cost
 *   (bench/results).
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

/* Index entry flag (in l3_index_entry.pad, bit 0; policy.c keeps bits
 * 2-31, and bit 1 is L3_ENTRY_SEGMENTED): read since it was written. */
#define L3_ENTRY_READ 1u

/* CLOCK_MONOTONIC in nanoseconds: one clock for every process. */
uint64_t l3_policy_clock_ns(void);

/* Lease slab `slab` to readers until `until` (l3_policy_clock_ns), under
 * the lock: the victim choice passes it over until then. */
void l3_policy_lease(l3_slabstore *s, uint32_t slab, uint64_t until);

/* Note a read of the object of entry `e` (under the lock). */
void l3_policy_read(l3_slabstore *s, l3_index_entry *e);

/* Note a write into slab `slab` (any lock, or none). */
void l3_policy_written(l3_slabstore *s, uint32_t slab);

/* Whether the object of `e` is to be kept when its slab is reused: in
 * probation's log, read since it was written (it moves to main); in
 * main's, read in the last three quarters of its time here. */
bool l3_policy_reinserts(const l3_slabstore *s, const l3_index_entry *e);

/* The same rule as if `e` had been read at sequence `read_seq` (its
 * group's last read; 0: never). */
bool l3_policy_reinserts_read_at(const l3_slabstore *s, const l3_index_entry *e, uint64_t read_seq);

/* The slab to reuse, under the lock: with `need_live` false a free or
 * empty slab first, else the victim among slabs with live objects; never
 * a slab with writes in flight, a read lease, or its device offline; only
 * on device `device` unless it is -1. -1 when none qualifies. */
int32_t l3_policy_victim(l3_slabstore *s, bool need_live, int32_t device);

/* Whether a write of `bytes` fits the store's write budget (under the
 * lock): a bucket of `write_budget` bytes per second, 10 s deep, shared
 * by every process; a write it does not fit is declined. A key written
 * at first sight (`first_sight`) needs the bucket at least half full. */
bool l3_policy_admit(l3_slabstore *s, uint64_t bytes, bool first_sight);

/* The bytes writable without evicting anything, whichever log they go
 * to: free or empty slabs and the open slabs' free slots (while probation
 * and main are both written, the smaller log's only) (under the lock). */
uint64_t l3_policy_room(const l3_slabstore *s);

#endif
