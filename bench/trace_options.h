/* l3bench --trace's options (types only): what trace.c replays through
 * the store and what simtable.c simulates without one both read them, so
 * they sit below both. */
#ifndef L3_TRACE_OPTIONS_H
#define L3_TRACE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest lists --capacity and --budget take (l3bench refuses more). */
#define L3_TRACE_MAX_CAPACITIES 16
#define L3_TRACE_MAX_BUDGETS 16

typedef struct l3_trace_options {
    const char *trace;        /* JSONL, Mooncake's format */
    const char *dir;          /* where the store file goes */
    uint64_t block_bytes;     /* an object's bytes; default 64 KiB */
    char capacity[256];       /* "1000,5859" (blocks) or "1GiB" (bytes), a list */
    uint64_t slab_size;       /* 0: the store's default for the capacity */
    int eviction;             /* -1: both policies; else an l3_eviction */
    int admit;                /* which absent blocks the engine stores: L3_ADMIT_* */
    int store_admission;      /* the store's admission (l3_admission; 0: all) */
    uint32_t store_rung;      /* its rung, for L3_ADMISSION_RUNG */
    bool json;
    /* The simulators alone (simtable.c): no store is opened. */
    bool sim;                 /* --sim: LRU, Belady and the adaptive admission per capacity */
    bool sim_all;             /* --sim-all: every policy, Belady's variants, chain eviction */
    bool capacities;          /* --capacities: the trace's four capacities (README's rule), then --sim at them */
    uint32_t ranks;           /* --ranks R: usable hits over R ranks (object and group LRU) */
    bool pools;               /* --pools: a KV and a sidecar object per page, TRAILING states */
    char budget[256];         /* --budget DWPD[,DWPD...]: hit rate against a write budget */
    const char *plot;         /* --plot PNG (gnuplot) of hit rate against capacity; NULL: none */
    double targets[L3_TRACE_MAX_CAPACITIES]; /* --targets: per capacity, the least hit rate over the
                                                object LRU's (writes at most its own); 0: none */
    size_t num_targets;
    double targets_g[L3_TRACE_MAX_CAPACITIES]; /* --target-g: per capacity, the least G, the share of the
                                                  LRU-to-MIN gap (writes at most the LRU's); NAN: none */
    size_t num_targets_g;
} l3_trace_options;

/* What the replaying engine stores of a request's absent blocks: all of
 * them; all but the chain's tail (its last block: rarely read again); or
 * only blocks seen in an earlier request (one-timers are never stored). */
enum { L3_ADMIT_ALL = 0, L3_ADMIT_NO_TAIL = 1, L3_ADMIT_SECOND_SIGHT = 2 };

#endif
