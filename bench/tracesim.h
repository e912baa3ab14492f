/* l3bench --trace: a prefix-cache trace (Mooncake's format) and the exact
 * simulators it is judged against (object LRU, Belady's MIN), on the same
 * replay rule as the store: per request, the longest run of present blocks
 * from the start is a hit (and is read); the absent blocks are then
 * stored; present blocks after the first miss are left alone. */
#ifndef L3_TRACESIM_H
#define L3_TRACESIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A trace: requests of block ids (remapped to 0..num_ids-1). */
typedef struct tr_trace {
    uint32_t *ids;       /* every request's blocks, back to back */
    size_t *start;       /* request r is ids[start[r] .. start[r + 1]) */
    uint64_t *time;      /* request r's "timestamp" (ms; its index when absent) */
    size_t num_requests, num_accesses;
    uint32_t num_ids, longest;
} tr_trace;

/* Read a JSONL trace (one object per line with "hash_ids"); false with a
 * message on stderr. Ids are remapped densely in order of first use. */
bool tr_load(const char *path, tr_trace *t);
void tr_free(tr_trace *t);

/* Hit counts of the two simulators at `capacity` objects. */
typedef struct tr_sim_result {
    uint64_t hits, accesses, admitted;
} tr_sim_result;

/* An exact object LRU of `capacity` objects (hits touch, misses insert). */
tr_sim_result tr_sim_lru(const tr_trace *t, uint32_t capacity);

/* Belady's MIN with bypass: on a full cache, evict the object (or skip
 * the newcomer) whose next request is furthest in the future. */
tr_sim_result tr_sim_belady(const tr_trace *t, uint32_t capacity);

/* Belady's MIN, its two choices named: `bypass` lets it skip a newcomer
 * used later than everything cached (admission; without it every miss is
 * written, as LRU writes); `chain_ties` breaks ties between blocks next
 * used by the same request by their place in it (the deeper goes first:
 * a prefix hit needs the head). tr_sim_belady is (true, false). */
tr_sim_result tr_sim_belady_ex(const tr_trace *t, uint32_t capacity, bool bypass, bool chain_ties);

/* G, the share of Belady's gain over the object LRU that `hits` reaches:
 * (hits - lru) / (min - lru), negative below the LRU, above 1 past MIN
 * (issue 47 judges hit rates by it). False, *g left 0, where MIN gains
 * nothing over the LRU (min <= lru): there G is not defined. */
bool tr_gap_share(uint64_t hits, uint64_t lru_hits, uint64_t min_hits, double *g);

/* A capacity's targets: the least hits as a ratio to the object LRU's
 * (`ratio`, 0: none) and as G (`g`, NAN: none). */
typedef struct tr_target {
    double ratio, g;
} tr_target;

/* Whether `hits` (with `writes`, over the LRU's) meets the target: writes
 * at most the LRU's, the ratio if asked, G if asked (where G is not
 * defined, the ratio alone: the one asked, else 1.00x). An LRU of no hits
 * meets any ratio. */
bool tr_target_met(const tr_target *target, uint64_t hits, uint64_t lru_hits, uint64_t min_hits, double writes);

/* The four capacities of bench/traces/README.md's rule, each found by
 * bisection (the hit counts taken as growing with the capacity). */
typedef struct tr_capacities {
    uint64_t infinite;      /* the infinite cache's hits */
    uint32_t small;         /* the least where Belady's MIN gets half of them */
    uint32_t first_middle;  /* ... 96% of them */
    uint32_t min_all;       /* ... all of them */
    uint32_t second_middle; /* 1.25 x min_all */
    uint32_t large;         /* the least where the object LRU gets 97% of them */
} tr_capacities;

/* Find the trace's four capacities (tr_sim_belady and tr_sim_lru). */
tr_capacities tr_find_capacities(const tr_trace *t);

/* `n` rounded to two significant digits, half up (2,267 -> 2,300). */
uint32_t tr_round2(uint32_t n);

#endif
