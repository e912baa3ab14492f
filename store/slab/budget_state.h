/* l3cache: the write budget's shared state (internal; types only). Its one
 * writer is budget.c (ARCHITECTURE.md, "Who writes the shared state"). */
#ifndef L3_BUDGET_STATE_H
#define L3_BUDGET_STATE_H

#include <stdint.h>

/* A token bucket of bytes, shared by every process of a store. */
typedef struct l3_budget {
    uint64_t bytes;          /* in the bucket */
    uint64_t refill_ns;      /* its last refill on the budget's clock (0: never: a full bucket) */
} l3_budget;

#endif
