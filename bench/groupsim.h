/* l3bench --trace --ranks R --pools: pages whose objects are several.
 *
 * Tensor-parallel ranks: each of R ranks stores its own shard of every page
 * as its own object in one shared store, and the engine uses the minimum
 * hit over ranks. Hybrid models' pools (--pools): a page has a KV object
 * and a sidecar object (an indexer's, say), and a request also stores a
 * state object for its last full page (its last block is the prompt's
 * partial page); TRAILING semantics: a prefix is usable only up to the last
 * page, within the run of pages whose KV and sidecar are all there, whose
 * state exists. The usable hit of a request is that, the minimum over ranks.
 *
 * Per request the ranks, in a random order (seeded), each ask for every
 * page; the usable hit is read by every rank; the pages after it that a
 * rank lacks are written by that rank, in chain order (its state object
 * after them). An object-level LRU keeps every object on its own (a store
 * without groups); a group-level LRU keeps a page's objects (every rank's,
 * every pool's, its states) as one unit. Capacity is in objects: pages x
 * objects per page (R, or 2R with pools), so equal bytes compare; `written`
 * counts rewrites by reinsertion too. */
#ifndef L3_GROUPSIM_H
#define L3_GROUPSIM_H

#include <stdbool.h>
#include <stdint.h>

#include "tracesim.h"

typedef struct tr_group_config {
    uint32_t ranks; /* 1 or more */
    bool pools;     /* KV + sidecar per page, a state per request's last full page */
    bool groups;    /* evict a page's objects as one */
    uint32_t slab;  /* 0: an exact LRU; else a log of slabs of this many objects, the oldest slab
                       reclaimed whole, what was read since written rewritten at the head (the store's
                       fifo-reinsert), everything else evicted */
    double budget;  /* objects written per ms of trace time, a bucket of 10 s of it; 0: none. Each
                       object takes a token (object level) or a page all of its objects' at once */
} tr_group_config;

typedef struct tr_group_result {
    uint64_t usable_hits, accesses, written; /* written: objects */
} tr_group_result;

/* The usable hits at `capacity_pages` pages' worth of objects. */
tr_group_result tr_sim_groups(const tr_trace *t, uint32_t capacity_pages, const tr_group_config *c);

#endif
