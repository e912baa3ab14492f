/* l3bench --compare: l3cache against fio (the device limit) and a
 * file-per-key buffered baseline, on the same file system, same sizes. */
#ifndef L3_COMPARE_H
#define L3_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define L3_COMPARE_MAX_DIRS 16
#define L3_COMPARE_MAX_ROUNDS 16 /* --repeat: 1 to this */

typedef struct l3_compare_options {
    const char *dir;        /* where the store file and the baseline live */
    const char *dirs[L3_COMPARE_MAX_DIRS]; /* several (--dir A --dir B): l3cache's store over a
                                              file in each (store.paths), fio over the same files */
    size_t num_dirs;        /* 0: `dir` alone */
    uint64_t total;         /* bytes moved per size and system */
    uint64_t sizes[8];
    size_t num_sizes;
    size_t keys, qd;        /* keys per operation, operations in flight */
    size_t recovery_objects;
    size_t repeat;          /* rounds per size (1 to L3_COMPARE_MAX_ROUNDS); each cell is the median */
    const char *plot;       /* PNG to draw (gnuplot), or NULL */
    bool no_mixed;          /* skip the mixed phase (gets under a put stream) */
    bool json;
} l3_compare_options;

/* The defaults: the working directory, 1 GiB per run, 64 KiB to 4 MiB. */
void l3_compare_defaults(l3_compare_options *o);

/* Parse "64K,256K,1M,4M" into o->sizes. */
bool l3_compare_parse_sizes(const char *text, l3_compare_options *o);

/* Run everything and print the report; the exit code. */
int l3_compare_run(const l3_compare_options *o);

#endif
