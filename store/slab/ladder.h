/* l3cache: the admission ladder and the rule that climbs it (internal;
 * not installed): docs/admission.md, "The ladder" and "The shadows and the
 * adaptation".
 *
 * One model, run by the store (admit.c, shadow.c, policy.c) and by the
 * simulator (bench/admitsim.c) alike: the seven rungs and whether a rung
 * admits a key; a round's score (each rung's shadow's hits and the noise
 * of their differences, request by request); the rung a round's score
 * chooses; how many sightings a round is.
 *
 * Pure: each function reads only its arguments and the constant ladder
 * (no I/O, allocation, locks, clocks or other globals); the caller holds
 * whatever guards the score (the store's admission lock). */
#ifndef L3_LADDER_H
#define L3_LADDER_H

#include <stdbool.h>
#include <stdint.h>

/* One rung of the ladder. */
typedef struct l3_rung {
    uint32_t depth;   /* first-seen pages written per put batch; UINT32_MAX: all */
    double probation; /* probation's share of the capacity */
    bool single;      /* one list, no probation (everything goes to main) */
    bool tail;        /* a partial last page is written too */
} l3_rung;

#define L3_LADDER_LEN 7u
/* The ladder, from "nothing at first sight" (rung 0) to the object LRU
 * (rung L3_LADDER_LEN - 1). */
extern const l3_rung l3_ladder[L3_LADDER_LEN];

/* Whether a rung admits a key absent from its cache: `seen` in the ghost,
 * at `pos` from the first missing key of its batch, `tail` the batch's
 * partial last page, into a cache that is `full`. */
bool l3_rung_admits(const l3_rung *r, bool seen, uint64_t pos, bool tail, bool full);

/* The rung rule: a rung must beat the one in force by this share of its
 * hits, however far it is (the noise term guards a jump: a distant rung
 * scaled by its distance could not be reached within an hour's rounds,
 * bench/results/2026-12-05-g-by-trace.md), and by this many times the noise of their
 * difference; each round the score keeps this share of itself. */
#define L3_LADDER_HYSTERESIS 0.005
#define L3_LADDER_CONFIDENCE 0.5
#define L3_LADDER_MEMORY 0.75
/* A round is the capacity's sightings, at least this many pages'. */
#define L3_ROUND_PAGES 4096u

/* What a round's choice reads: per rung its shadow's hits, and per pair
 * of rungs the sum over requests of the squared difference of their
 * shadows' hits (the noise of the difference of their windows), both
 * decayed every round by L3_LADDER_MEMORY. */
typedef struct l3_ladder_score {
    double window[L3_LADDER_LEN];
    double spread[L3_LADDER_LEN][L3_LADDER_LEN];
} l3_ladder_score;

/* One request's hits, `hits[k]` in rung k's shadow, into score `sc`: each
 * window gains its hits, each pair's spread the squared difference times
 * `page_objects` (a page of that many objects comes in as many requests
 * whose differences move together; 0 counts as 1). */
void l3_ladder_count(l3_ladder_score *sc, const double hits[L3_LADDER_LEN], uint32_t page_objects);

/* Whether rung k's window beats rung `cur`'s (the rung in force) by the
 * hysteresis (of the current rung's hits) and by more than the confidence
 * times the root of their spread. */
bool l3_ladder_beats(const l3_ladder_score *sc, uint32_t k, uint32_t cur);

/* A round's end: of the rungs that beat `cur`, the one with the most hits
 * (else `cur`) is returned; then the score decays. */
uint32_t l3_ladder_choose(l3_ladder_score *sc, uint32_t cur);

/* A round's length in sightings for a capacity of `cap` objects whose
 * pages are `page_objects` objects each (0 counts as 1). */
uint64_t l3_ladder_round(uint64_t cap, uint32_t page_objects);

#endif
