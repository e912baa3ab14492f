/* l3bench --trace --sim: the simulators' tables (no store): per capacity
 * the object LRU, Belady's MIN and the adaptive admission (admitsim.h),
 * with --ranks/--pools the usable hit over ranks and pools (groupsim.h),
 * with --sim-all every policy compared, with --budget hit rate against a
 * write budget; a progress line on a terminal and a gnuplot plot. */
#ifndef L3_SIMTABLE_H
#define L3_SIMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_options.h"
#include "tracesim.h"

/* Print the tables for `caps` (blocks); the exit code. */
int l3_trace_sim(const l3_trace_options *o, const tr_trace *t, const uint64_t *caps, size_t ncaps);

/* --budget's list as drive writes per day into `out` (at most
 * L3_TRACE_MAX_BUDGETS): a plain number is DWPD, one ending in "x" that
 * share of the object LRU's own rate (`lru_dwpd`); how many. */
size_t l3_trace_budgets(const l3_trace_options *o, double lru_dwpd, double *out);

/* Drive writes a day: `written` objects over `hours` into a capacity of
 * `cap` objects (0 without either). */
double l3_trace_dwpd(double hours, uint64_t written, uint64_t cap);

/* The trace's span in hours (0 for fewer than two requests). */
double l3_trace_hours(const tr_trace *t);

#endif
