/* l3bench --compare's device limit: fio (io_uring, O_DIRECT, fixed
 * buffers, huge-page buffers) on laid-out files beside the store's, its
 * JSON output read into a run's result. */
#ifndef L3_COMPARE_FIO_H
#define L3_COMPARE_FIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare_types.h"

/* fio in one shape: its file in each directory, `jobs` jobs of iodepth
 * `depth`. */
typedef struct cmp_fio {
    char file[L3_COMPARE_MAX_DIRS][1000];  /* its file in each directory */
    char list[L3_COMPARE_MAX_DIRS * 1001]; /* the same joined by ':' (fio's list) */
    size_t nfiles, depth, jobs;
} cmp_fio;

/* Name f's file `name` in each of `dirs` (n of them, at least 1) and its
 * shape: `jobs` jobs of iodepth `depth`. */
void cmp_fio_init(cmp_fio *f, const char *const *dirs, size_t n, const char *name, size_t depth, size_t jobs);

/* One turn of fio over `total` bytes in `bs`-byte I/Os: writes (its files
 * laid out and the devices settled first, untimed but right before them,
 * as fio would do itself) or reads of what the last write turn wrote.
 * False if a file could not be laid out or fio failed. */
bool cmp_fio_round(const cmp_fio *f, uint64_t total, uint64_t bs, bool write, cmp_result *r);

/* Remove f's files. */
void cmp_fio_remove(const cmp_fio *f);

#endif
