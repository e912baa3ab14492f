/* l3bench --trace: replay a prefix-cache trace through the real store and
 * print, in the same run, the hit rates of an exact object LRU and of
 * Belady's MIN at the same capacity, l3cache's, its ratios to both, and
 * the device bytes written per byte admitted. */
#ifndef L3_TRACE_H
#define L3_TRACE_H

#include "trace_options.h"

/* Replay the trace at each capacity and print the table (with `sim`, the
 * simulators' tables instead); the exit code. */
int l3_trace_run(const l3_trace_options *o);

#endif
