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

#include "tracesim.h"

/* One rung of the admission ladder: how many of a put batch's first-seen
 * blocks are written (the rest wait for a second sighting), and how much
 * of the cache blocks written at first sight and not read since may hold
 * (the probation segment; a block read moves to the main segment). */
typedef struct tr_rung {
    uint32_t depth;   /* first-seen blocks written per put batch; UINT32_MAX: all */
    double probation; /* probation's share of the capacity */
    bool single;      /* one LRU, no probation segment */
    bool tail;        /* a request's last block is written too (else never: it is rarely read again) */
} tr_rung;

/* The ladder TR_ADAPTIVE climbs: from "nothing at first sight" to "all". */
extern const tr_rung tr_ladder[];
extern const size_t tr_ladder_len;

enum tr_admit_kind {
    TR_ALL,          /* the object LRU: every absent block written */
    TR_NO_TAIL,      /* all but a request's last block */
    TR_SECOND_SIGHT, /* only blocks seen in an earlier request (memory without bound) */
    TR_GHOST,        /* only blocks seen within the ghost window */
    TR_TINYLFU,      /* a newcomer replaces the LRU victim only if seen more often (count-min sketch) */
    TR_RUNG,         /* one fixed rung */
    TR_ADAPTIVE,     /* the rung of the best of sampled shadows, one per rung (the chosen policy) */
};

typedef struct tr_admit_config {
    int kind;                /* enum tr_admit_kind */
    tr_rung rung;            /* TR_RUNG */
    uint32_t ghost_gens;     /* the ghost window: generations of `capacity` sightings (default 5) */
    uint32_t shadow_entries; /* TR_ADAPTIVE: a sampled shadow's entries (default 4096) */
    double hysteresis;       /* TR_ADAPTIVE: a new rung must beat the current one by this share per rung between (0.005) */
    double confidence;       /* TR_ADAPTIVE: ... and by this many times the noise of the difference (0.5) */
    double memory;           /* TR_ADAPTIVE: the share of the shadows' counts a round keeps (0.75) */
    bool lazy;               /* as the store: a probation block read keeps its place until probation's oldest,
                                then moves to main (default; else at once) */
    bool chain_order;        /* a request's head ends as its most recent block, its tail as its oldest */
    bool orphans;            /* evicting a block evicts its cached descendants (they cannot be hit) */
    double budget;           /* writes allowed per ms of trace time; 0: no budget */
    double bucket_ms;        /* the budget's bucket: this many ms of budget (default 10000, the store's 10 s) */
    bool graceful;           /* under a budget: first sightings only while the bucket is half full */
} tr_admit_config;

typedef struct tr_admit_result {
    uint64_t hits, accesses, written;
    uint32_t rung, switches; /* TR_ADAPTIVE: the rung at the end and how often it changed */
    double rung_mean;        /* TR_ADAPTIVE: the rung's mean over requests */
} tr_admit_result;

/* The defaults for `kind` (ghost 5 generations, shadows of 4096, 0.5% a
 * rung and half the noise, counts kept at 0.75 a round, lazy). */
void tr_admit_defaults(tr_admit_config *c, int kind);

/* Replay the trace at `capacity` objects under the configured policy. */
tr_admit_result tr_sim_admit(const tr_trace *t, uint32_t capacity, const tr_admit_config *c);

#endif
