/* l3cache: a thread-safe in-memory store with the store rules of
 * docs/SEMANTICS.md. */
#ifndef L3_MEMSTORE_H
#define L3_MEMSTORE_H

#include "l3_store.h"

typedef struct l3_memstore l3_memstore;

/* A new, empty memory store; NULL when out of memory. */
l3_memstore *l3_memstore_new(void);

/* The store interface of `m` (its destroy frees `m`). */
l3_store *l3_memstore_store(l3_memstore *m);

/* The number of objects it holds. */
size_t l3_memstore_count(l3_memstore *m);

/* Free a memory store directly (same as its destroy op). */
void l3_memstore_free(l3_memstore *m);

#endif
