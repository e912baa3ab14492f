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

/* Write `len` bytes of zeros over the file at `path` (created or
 * truncated), 8 MiB at a time with O_DIRECT, and fsync it: its blocks are
 * then allocated and written, so that timed writes into it are overwrites
 * (a first write into fallocated or sparse space makes ext4 convert its
 * extents, one write at a time). The file is the owner's alone (0600, as
 * the store makes its own). False on any failure (errno says). */
bool l3_probe_lay_out(const char *path, uint64_t len);

/* Put n objects of `obj_bytes` bytes named `prefix`<i> into the store,
 * `batch` keys a call, from a Host pool registered for the purpose. False
 * (said on stderr) at the first call or object that fails. */
bool l3_probe_fill(l3_slabstore *s, uint64_t n, uint32_t obj_bytes, size_t batch, const char *prefix);

/* This process's resident set (VmRSS) and its peak (VmHWM), in bytes. */
void l3_probe_rss(uint64_t *rss, uint64_t *peak);

#endif
