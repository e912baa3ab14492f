/* l3bench --trace --sim: the simulators' tables (no store): per capacity
 * the object LRU, Belady's MIN and the adaptive admission (admitsim.h),
 * with --ranks/--pools the usable hit over ranks and pools (groupsim.h),
 * with --sim-all every policy compared, with --budget hit rate against a
 * write budget; a progress line on a terminal and a gnuplot plot. */
#ifndef L3_SIMTABLE_H
#define L3_SIMTABLE_H

#include <jansson.h>
#include <stdbool.h>
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

/* G of `hits` (tr_gap_share) as the tables print it, into `buf`: "%.3f"
 * right-aligned in `width` columns (0: none), or "-" where it is not
 * defined; returns buf. */
const char *l3_trace_g_text(uint64_t hits, uint64_t lru, uint64_t min, int width, char *buf, size_t len);

/* G of `hits` as JSON: a number, or null where it is not defined. */
json_t *l3_trace_g_json(uint64_t hits, uint64_t lru, uint64_t min);

/* The i-th capacity's targets from --targets and --target-g (none past
 * either list's end). */
tr_target l3_trace_target(const l3_trace_options *o, size_t i);

/* Judge `hits` against `target` (tr_target_met; `writes` over the LRU's)
 * and say so: a line "target: ..., <writes_what> <= its own: met|MISSED
 * (G g, r x, writes w x)", or with `row` its keys set on that JSON row;
 * whether it was met. */
bool l3_trace_judge(const tr_target *target, uint64_t hits, uint64_t lru, uint64_t min, double writes,
                    const char *writes_what, json_t *row);

#endif
