/* l3bench --trace: admission on top of the object LRU, simulated on the
 * store's replay rule (per request, the longest run of present blocks from
 * the start is a hit and is read; the absent blocks after it are offered,
 * in chain order, for storing; present blocks after the first miss are left
 * alone). Every policy here refuses the rest of a put batch once it refuses
 * one block of it (a block after a missing one cannot be a prefix hit).
 * docs/admission.md is the store's spec of the chosen one (TR_ADAPTIVE). */
#ifndef L3_ADMITSIM_H
#define L3_ADMITSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ladder.h"
#include "tracesim.h"

enum tr_admit_kind {
    TR_ALL,          /* the object LRU: every absent block written */
    TR_NO_TAIL,      /* all but a request's last block */
    TR_SECOND_SIGHT, /* only blocks seen in an earlier request (memory without bound) */
    TR_GHOST,        /* only blocks seen within the ghost window */
    TR_TINYLFU,      /* a newcomer replaces the LRU victim only if seen more often (count-min sketch) */
    TR_RUNG,         /* one fixed rung (a rung of the ladder, ladder.h, or any other) */
    TR_ADAPTIVE,     /* the rung the ladder's rule chooses from sampled shadows, one per rung, as the store's
                        (the chosen policy) */
};

typedef struct tr_admit_config {
    int kind;                /* enum tr_admit_kind */
    l3_rung rung;            /* TR_RUNG */
    uint32_t ghost_gens;     /* the ghost window: generations of `capacity` sightings (default 5) */
    bool lazy;               /* as the store: a probation block read keeps its place until probation's oldest,
                                then moves to main (default; else at once) */
    bool chain_order;        /* a request's head ends as its most recent block, its tail as its oldest */
    bool orphans;            /* evicting a block evicts its cached descendants (they cannot be hit) */
    double budget;           /* writes allowed per ms of trace time; 0: no budget */
    double bucket_ms;        /* the budget's bucket: this many ms of budget (default 10000, the store's 10 s) */
    bool graceful;           /* under a budget: first sightings only while the bucket is half full */
    uint8_t *rungs;          /* if set, the rung in force after each request (the trace's num_requests) */
} tr_admit_config;

typedef struct tr_admit_result {
    uint64_t hits, accesses, written;
    uint32_t rung, switches; /* TR_ADAPTIVE: the rung at the end and how often it changed */
    double rung_mean;        /* TR_ADAPTIVE: the rung's mean over requests */
} tr_admit_result;

/* The defaults for `kind` (ghost 5 generations, lazy, a bucket of 10 s;
 * TR_RUNG's rung the object LRU's). */
void tr_admit_defaults(tr_admit_config *c, int kind);

/* Replay the trace at `capacity` objects under the configured policy. */
tr_admit_result tr_sim_admit(const tr_trace *t, uint32_t capacity, const tr_admit_config *c);

#endif
