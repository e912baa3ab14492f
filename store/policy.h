/* l3cache: the slab store's eviction policy (internal; not installed).
 *
 * The one room that decides which slab is reused next. It sees the slabs'
 * state in the shared mapping and is told of every access; it never
 * evicts itself (alloc.c does). Swap it by replacing these functions. The
 * policy today: free slabs first, then empty ones, else the least
 * recently read or written slab (a tick per access). */
#ifndef L3_POLICY_H
#define L3_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "slab.h"

/* Note that slab `slab` was read or written (any lock, or none). */
void l3_policy_touch(l3_slabstore *s, uint32_t slab);

/* CLOCK_MONOTONIC in nanoseconds: one clock for every process. */
uint64_t l3_policy_clock_ns(void);

/* Lease slab `slab` to readers until `until` (l3_policy_clock_ns), under
 * the lock: the victim choice passes it over until then. */
void l3_policy_lease(l3_slabstore *s, uint32_t slab, uint64_t until);

/* The slab to reuse, under the lock: with `need_live` false a free or
 * empty slab first, else the victim among slabs with live objects; never
 * a slab with writes in flight or a read lease. -1 when none qualifies. */
int32_t l3_policy_victim(l3_slabstore *s, bool need_live);

#endif
