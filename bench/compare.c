/* l3bench --compare: for each object size, on one file system:
 *   fio (io_uring, O_DIRECT, fixed buffers, huge-page buffers) on laid-out
 *   files in the same directory: the device limit; l3cache through the
 *   executor, checksums on and off; and a file-per-key buffered baseline
 *   (pread/pwrite, a file per object, as simple disk KV-cache backends
 *   do). Rounds of puts, then rounds of gets, each system in turn in a
 *   rotating order; ratios are paired per round. Then exists() keys/s,
 *   recovery time (clean checkpoint and crash scan) and puts under
 *   eviction.
 *
 * This room runs them in that order and reports; each job is a room below
 * it: the devices settled and watched (compare_dev.c), fio
 * (compare_fio.c), the file-per-key baseline (compare_files.c), l3cache's
 * cells (compare_l3.c), exists, recovery, steady state and crc32c's cost
 * (compare_extras.c), the rotated rounds, medians and paired ratios
 * (compare_rounds.c), the report (compare_report.c), the plot
 * (compare_plot.c). */
#include "compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_extras.h"
#include "compare_plot.h"
#include "compare_report.h"
#include "compare_rounds.h"
#include "l3_crc32c.h"
#include "mixed.h"

#define MIB (1ull << 20)

void l3_compare_defaults(l3_compare_options *o)
{
    memset(o, 0, sizeof *o);
    o->dir = ".";
    o->total = 1ull << 30;
    const uint64_t sizes[] = { 64 << 10, 256 << 10, 1 << 20, 4 << 20 };
    memcpy(o->sizes, sizes, sizeof sizes);
    o->num_sizes = 4;
    o->keys = 16;
    o->qd = 16;
    o->recovery_objects = 1000000;
    o->repeat = 5;
    o->plot = "l3bench-compare.png";
}

bool l3_compare_parse_sizes(const char *text, l3_compare_options *o)
{
    char *copy = strdup(text), *save = NULL;
    o->num_sizes = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t b;
        char unit[8];
        snprintf(unit, sizeof unit, "%s", t);
        size_t n = strlen(unit);
        /* Accept 64K / 1M as binary units. */
        char with[16];
        snprintf(with, sizeof with, "%s%s", t, (n && (unit[n - 1] == 'K' || unit[n - 1] == 'M')) ? "iB" : "");
        if (o->num_sizes == 8 || l3_parse_size(with, &b, NULL) != L3_OK || b < 4096 || b > (64ull << 20)) {
            free(copy);
            return false;
        }
        o->sizes[o->num_sizes++] = b;
    }
    free(copy);
    return o->num_sizes > 0;
}

int l3_compare_run(const l3_compare_options *o)
{
    cmp_run cx;
    cmp_set_flush(o->flush ? o->flush : "interval");
    cmp_run_init(&cx, o);
    if (!o->json)
        printf("l3cache vs fio vs file-per-key: %llu MiB per run, %zu keys per operation, %zu in flight "
               "(fio iodepth %zu), crc32c on %s, store.flush %s\n", (unsigned long long)(o->total >> 20), o->keys,
               o->qd, cx.depth, l3_crc32c_engine(), o->flush ? o->flush : "interval");
    if (!o->json && cx.ndirs > 1)
        printf("%zu directories: l3cache's store over a file in each (store.paths), fio over the same files "
               "(%s); the file-per-key baseline, recovery, steady state and the mixed phase use the first\n",
               cx.ndirs, cx.fio[0].list);
    cmp_row rows[8] = { 0 };
    cmp_extras x = { .crc_s_per_gb = cx.crc_s_per_gb };
    for (size_t i = 0; i < o->num_sizes; i++) {
        rows[i].size = o->sizes[i];
        cmp_run_size(&cx, &rows[i]);
        if (i == 0 && cx.l3[0].open)
            cmp_exists_run(&cx.l3[0], &x.ex);
        cmp_size_done(&cx, &rows[i]);
        if (!o->json)
            fprintf(stderr, "l3bench: %lluK done\n", (unsigned long long)(rows[i].size >> 10));
    }
    x.rec_ok = o->recovery_objects ? cmp_recovery_run(cx.file, o->recovery_objects, &x.rec) : false;
    x.sty_ok = cmp_steady_run(cx.file, o->keys, o->qd, &x.sty);
    if (!o->no_mixed)
        l3_mixed_run(o->dir, o->total, MIB, o->keys, o->qd, 3, &x.mix);
    if (o->json)
        cmp_report_json(&cx, rows, &x);
    else
        cmp_report_text(&cx, rows, &x);
    if (o->plot && o->num_sizes > 1)
        cmp_plot(o->plot, o->dir, rows, o->num_sizes);
    return cx.all_ok && (x.rec_ok || !o->recovery_objects) && x.sty_ok && (x.mix.ok || o->no_mixed) ? 0 : 1;
}
