/* l3bench --compare's types (types only): its options and their limits,
 * which l3bench.c fills, and one timed run's result, which every system's
 * runner returns and the rounds, the report and the plot read; so they
 * sit below all of --compare's rooms. */
#ifndef L3_COMPARE_TYPES_H
#define L3_COMPARE_TYPES_H

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
    const char *flush;      /* store.flush of l3cache's stores: "interval" (default) or "batch" */
    const char *gets;       /* executor.gets of l3cache's executors: "driver" (default) or "workers" */
    const char *puts;       /* executor.puts, as gets */
    uint64_t ram_device;    /* --ram-device: the run on a RAM-backed device of this many bytes (0: not) */
    bool on_ram;            /* the run is on that device (its directory the device's mount) */
    bool json;
} l3_compare_options;

/* One system's timed run (a put or a get turn), or a cell's median. */
typedef struct cmp_result {
    bool ok;
    double gbs, p50_ms, p99_ms, cpu_per_gb;
    double ctx_per_gb;         /* context switches per GB (l3cache, files: the process's; fio: its jobs') */
    double dev_queue, dev_kib; /* the device's mean queue and request size during the run */
} cmp_result;

#endif
