/* Measuring a store file from outside: leave it as a crash would, time
 * l3fsck on it, read this process's resident memory. Used by --compare's
 * recovery lines and by --scale. */
#ifndef L3_PROBE_H
#define L3_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "l3_slabstore.h"

/* Leave the store of `so` as a crash would: a child opens it (marking it
 * dirty) and exits without closing, so that the next open rebuilds the
 * index from the headers. False if the child failed. */
bool l3_probe_crash_open(const l3_slab_options *so);

/* Time `l3fsck -n [--verify] --json file` (the l3fsck beside this l3bench,
 * else on the PATH): its seconds, the objects it says the store serves,
 * the bytes of its used slabs and (if max_rss) its peak resident set.
 * False if it failed. */
bool l3_probe_time_fsck(const char *file, bool verify, double *seconds, uint64_t *objects, double *slab_bytes,
                        uint64_t *max_rss);

/* This process's resident set (VmRSS) and its peak (VmHWM), in bytes. */
void l3_probe_rss(uint64_t *rss, uint64_t *peak);

#endif
