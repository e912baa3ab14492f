/* l3cache: the write budget's shared state (internal; types only). Its one
 * writer is budget.c (ARCHITECTURE.md, "Who writes the shared state"). */
#ifndef L3_BUDGET_STATE_H
#define L3_BUDGET_STATE_H

#include "bucket.h"

/* A token bucket of bytes on the budget's clock in nanoseconds, shared by
 * every process of a store. */
typedef struct l3_budget {
    l3_bucket bytes; /* bytes (bucket.h): never filled, it is full at its first draw */
} l3_budget;

#endif
