/* l3bench's prefix-cache workload through the executor, shared by the
 * main job and the --compare mode. */
#ifndef L3_WORKLOAD_H
#define L3_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_config.h"
#include "l3_executor.h"
#include "l3_slabstore.h"

/* One phase's counts, timings and per-operation latencies (seconds). */
typedef struct wl_phase {
    const char *name;
    bool no_bytes; /* create-only re-puts move no bytes */
    size_t ops, keys, hits, misses, failures;
    uint64_t bytes;
    double seconds, cpu, cpu_user; /* cpu: user + system, of the whole process */
    uint64_t ctx;                  /* context switches of the whole process, voluntary and involuntary */
    double *lat;
    size_t nlat;
} wl_phase;

/* A store and an executor over a Host pool of qd x keys pages. */
typedef struct workload {
    l3_slabstore *store;
    l3_executor *ex;
    uint8_t *pool;
    size_t pool_len, page, keys, qd;
    uint64_t next_op;
    char (*hashes)[48];
    size_t num_hashes;
    l3_slab_stats open_stats;
} workload;

/* Open the store `cfg` names and start the executor; page identities for
 * `count` pages (twice: a second namespace's too). */
l3_status wl_start(workload *w, l3_config *cfg, size_t page, size_t keys, size_t qd, size_t count,
                   l3_error *err);

/* Run `kind` over pages [base, base + count) in operations of `keys` keys,
 * `qd` in flight; gets check every page's stamp. False on a protocol error
 * or wrong bytes. */
bool wl_run(workload *w, l3_op_kind kind, size_t count, uint64_t base, wl_phase *p);

/* Sort `n` doubles ascending (latencies, throughputs, ratios): the one
 * order l3bench's percentiles and medians use. */
void wl_sort(double *v, size_t n);

/* The q-quantile of a phase's latencies (sorted by wl_run). */
double wl_pct(const wl_phase *p, double q);

/* This process's CPU seconds so far (user + system); its user seconds in
 * *user (if not NULL). */
double wl_cpu_seconds(double *user);

/* This process's context switches so far, voluntary and involuntary,
 * every thread's (getrusage's ru_nvcsw + ru_nivcsw). */
uint64_t wl_context_switches(void);

/* Close the executor (and with it the store); frees the workload. */
l3_status wl_stop(workload *w, l3_error *err);

#endif
