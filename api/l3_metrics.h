/* l3cache: metrics as Prometheus text exposition (version 0.0.4). */
#ifndef L3_METRICS_H
#define L3_METRICS_H

#include "l3_executor.h"
#include "l3_slabstore.h"

/* Render the executor snapshot and/or the store's stats (either may be
 * NULL) as Prometheus text; free() it. Counters end in _total. NULL for
 * stats that are no store's (num_devices over L3_SLAB_MAX_DEVICES). */
char *l3_metrics_prometheus(const l3_snapshot *snap, const l3_slab_stats *stats);

/* Metrics of a running executor and/or store (either may be NULL). */
char *l3_metrics_of(l3_executor *executor, l3_slabstore *store);

#endif
