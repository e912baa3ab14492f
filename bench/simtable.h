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

#endif
