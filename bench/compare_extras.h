/* l3bench --compare's measurements beside the rows: exists() keys/s,
 * recovery time (clean checkpoint and crash scan, and l3fsck's rates),
 * puts under eviction (steady state), the crc32c's cost on cold data;
 * and what the report shows of them (with the mixed phase's result). */
#ifndef L3_COMPARE_EXTRAS_H
#define L3_COMPARE_EXTRAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare_l3.h"
#include "compare_space.h"
#include "mixed.h"

typedef struct cmp_exists {
    double store_keys_per_s, executor_keys_per_s;
} cmp_exists;

typedef struct cmp_recovery {
    size_t objects;
    double populate_s, clean_open_s, scan_open_s;
    uint64_t clean_objects, scan_objects;
    uint64_t scan_summaries, scan_slabs; /* slabs the crash scan read from their summary, of all used */
    double fsck_s, verify_s, verify_gbs; /* l3fsck -n, and -n --verify (0: no l3fsck) */
    uint64_t fsck_objects;
} cmp_recovery;

typedef struct cmp_steady {
    double gbs, fill_gbs; /* third round under eviction; first fill of a fresh (fallocated) store */
    uint64_t evictions, rejected;
} cmp_steady;

/* What every report shows besides the rows. */
typedef struct cmp_extras {
    double crc_s_per_gb; /* crc32c of data not in any cache, one core */
    cmp_exists ex;
    cmp_recovery rec;
    cmp_steady sty;
    l3_mixed_result mix;
    bool rec_ok, sty_ok;
    cmp_space_plan space; /* the run as sized to the free space */
} cmp_extras;

/* exists() over the keys of l's last put round (l open): through the
 * executor, and on the store directly (for a second). */
void cmp_exists_run(cmp_l3 *l, cmp_exists *ex);

/* Recovery of a store of `n` 4 KiB objects in `file`: its clean reopen
 * (from the checkpoint), l3fsck's rates on it, then its reopen after a
 * crash (the scan); the file removed after. False if a step failed. */
bool cmp_recovery_run(const char *file, size_t n, cmp_recovery *r);

/* Puts under eviction: three rounds of 0.9 GiB of 1 MiB pages into a
 * 1 GiB store in `file` (removed after); the third round's rate, the first
 * fill's, and the store's evictions and rejections. False on failure. */
bool cmp_steady_run(const char *file, size_t keys, size_t qd, cmp_steady *r);

/* CPU seconds per GB of crc32c over data no cache holds (as a get's
 * freshly read pages): 256 MiB, more than any last-level cache, in 64 KiB
 * pieces, the second pass timed. The part of l3cache's CPU per GB that
 * fio has no counterpart for. 0 when the buffer cannot be had. */
double cmp_crc_cost(void);

#endif
