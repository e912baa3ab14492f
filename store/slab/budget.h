/* l3cache: the slab store's write budget (internal; not installed).
 *
 * A bucket of `rate` bytes per second, 10 s deep, shared by every process
 * of a store (budget_state.h, in the mapping; this room is its one
 * writer). A write it does not fit is declined; a key written at first
 * sight needs the bucket at least half full, so that as the budget
 * tightens what was seen twice is still written. Pure over the bucket
 * (bucket.h): the caller holds the store's lock and passes the clock. */
#ifndef L3_BUDGET_H
#define L3_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "budget_state.h"

/* Whether a write of `bytes` fits bucket `b` of `rate` bytes per second
 * (0: no budget, everything fits) at `now_ns` on the budget's clock, a
 * first sighting (`first_sight`) needing it at least half full; the bytes
 * are taken when it fits. A clock behind the bucket's last refill (another
 * process's) never moves it back. */
bool l3_budget_take(l3_budget *b, uint64_t rate, uint64_t now_ns, uint64_t bytes, bool first_sight);

/* Whether bucket `b` was ever drawn from (a budget has bound writes). */
static inline bool l3_budget_used(const l3_budget *b) { return b->bytes.filled != 0; }

#endif
