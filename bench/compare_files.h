/* l3bench --compare's file-per-key baseline: a file per object, written
 * and read with pwrite and pread through the page cache, as simple disk
 * KV-cache backends do. */
#ifndef L3_COMPARE_FILES_H
#define L3_COMPARE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare_types.h"

/* A put round of the baseline: `total` bytes of `size`-byte pages, a file
 * per page in `dir` (emptied and made first), from `threads` threads,
 * durable at the end. */
bool cmp_files_put_round(const char *dir, uint64_t total, uint64_t size, size_t threads, cmp_result *put);

/* A get round over what the last put round wrote: the page cache dropped
 * first, so the reads reach the device. */
bool cmp_files_get_round(const char *dir, uint64_t total, uint64_t size, size_t threads, cmp_result *get);

/* Remove the first `n` pages' files from `dir`, then `dir` itself. */
void cmp_files_clear(const char *dir, size_t n);

#endif
