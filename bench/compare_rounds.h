/* l3bench --compare's rounds: one run's systems and files, each size's
 * rounds (every system's put turns, then its get turns, in an order that
 * rotates from round to round), and their reduction to the size's row:
 * medians, and l3cache's ratios paired round by round. */
#ifndef L3_COMPARE_ROUNDS_H
#define L3_COMPARE_ROUNDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare_fio.h"
#include "compare_l3.h"
#include "compare_types.h"

/* l3cache's throughput over another system's, round by round: the median
 * of the per-round ratios, and the lowest and highest. */
typedef struct cmp_ratio {
    double median, lo, hi;
} cmp_ratio;

/* One size's row: each system's median cells and l3cache's ratios. */
typedef struct cmp_row {
    uint64_t size;
    cmp_ratio vs_fio[2], vs_jobs[2]; /* [0] put, [1] get */
    cmp_ratio vs_nocrc;              /* gets: l3cache over its own no-crc gets, round by round */
    cmp_ratio cpu_floor[2];          /* l3cache's CPU per GB over the floor (fio's in the round + crc32c's) */
    cmp_ratio ctx_fio[2];            /* l3cache's context switches per GB over fio's in the round */
    double floor[2];                 /* the floor of fio's median round: its CPU s/GB + crc32c's */
    cmp_result fio_put, fio_get, l3_put, l3_get, l3_put_nc, l3_get_nc, files_put, files_get;
    cmp_result fiow_put, fiow_get; /* fio with l3cache's shape: qd jobs of depth keys */
} cmp_row;

/* One --compare run: the options and what every round shares. */
typedef struct cmp_run {
    const l3_compare_options *o;
    char file[900], files_dir[900];
    cmp_fio fio[2]; /* one job of iodepth keys x qd; l3cache's shape (qd jobs of iodepth keys) */
    const char *dirs[L3_COMPARE_MAX_DIRS];
    size_t ndirs;
    bool have_fio, all_ok;
    size_t depth, reps;
    double crc_s_per_gb; /* crc32c's CPU per GB (cmp_crc_cost): the floor's second part */
    cmp_l3 l3[2];        /* checksums on, off */
} cmp_run;

/* Set up a run of `o`: its directories (their devices watched), every
 * system's files named, whether fio is there (said on stderr if not),
 * crc32c's cost measured (the floor's part beside fio's CPU). */
void cmp_run_init(cmp_run *cx, const l3_compare_options *o);

/* One size's rounds (r->size), reduced into *r; each round's GB/s and
 * device view on stderr (not with --json). A failed turn clears
 * cx->all_ok. l3cache's stores stay open for cmp_size_done. */
void cmp_run_size(cmp_run *cx, cmp_row *r);

/* After a size: every system's stores and files of it removed. */
void cmp_size_done(cmp_run *cx, const cmp_row *r);

#endif
