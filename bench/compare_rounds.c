/* l3bench --compare's rounds (compare_rounds.h). */
#include "compare_rounds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare_dev.h"
#include "compare_extras.h"
#include "compare_files.h"
#include "invariant.h"
#include "workload.h"

enum { SYS_FIO, SYS_FIO_JOBS, SYS_L3, SYS_L3_NOCRC, SYS_FILES, NSYS };

static const char *const sys_names[NSYS] = { "fio", "fio-jobs", "l3cache", "no-crc", "files" };

/* Each directory's files: l3cache's (with and without crc) and fio's. */
static void name_files(cmp_run *cx)
{
    for (size_t i = 0; i < cx->ndirs; i++) {
        const char *d = cx->dirs[i];
        snprintf(cx->l3[0].file[i], sizeof cx->l3[0].file[i], "%s/l3bench-compare.store", d);
        snprintf(cx->l3[1].file[i], sizeof cx->l3[1].file[i], "%s/l3bench-compare-nocrc.store", d);
    }
    cx->l3[0].nfiles = cx->l3[1].nfiles = cx->ndirs;
    cmp_fio_init(&cx->fio[0], cx->dirs, cx->ndirs, "l3bench-compare.fio", cx->depth, 1);
    cmp_fio_init(&cx->fio[1], cx->dirs, cx->ndirs, "l3bench-compare.fio-jobs", cx->o->keys, cx->o->qd);
}

void cmp_run_init(cmp_run *cx, const l3_compare_options *o)
{
    memset(cx, 0, sizeof *cx);
    cx->o = o;
    cx->all_ok = true;
    cx->ndirs = o->num_dirs ? o->num_dirs : 1;
    for (size_t i = 0; i < cx->ndirs; i++)
        cx->dirs[i] = o->num_dirs ? o->dirs[i] : o->dir;
    snprintf(cx->file, sizeof cx->file, "%s/l3bench-compare.store", cx->dirs[0]);
    snprintf(cx->files_dir, sizeof cx->files_dir, "%s/l3bench-compare.files", cx->dirs[0]);
    cx->l3[0].verify = true;
    cx->depth = o->keys * o->qd;
    name_files(cx);
    cmp_devices_watch(cx->dirs, cx->ndirs);
    cx->have_fio = system("fio --version >/dev/null 2>&1") == 0;
    if (!cx->have_fio)
        fprintf(stderr, "l3bench: fio not found (apt-get install fio): no device limit, no ratios\n");
    L3_ASSERT(o->repeat >= 1 && o->repeat <= L3_COMPARE_MAX_ROUNDS); /* l3bench refuses others */
    cx->reps = o->repeat;
    cx->crc_s_per_gb = cmp_crc_cost();
}

/* One system's put (op 0) or get (op 1) turn, with the device's view. */
static void run_turn(cmp_run *cx, const cmp_row *r, int sys, int op, cmp_result *res)
{
    const l3_compare_options *o = cx->o;
    cmp_devstat d0 = cmp_devstat_now();
    if (sys == SYS_FIO || sys == SYS_FIO_JOBS) {
        if (!cx->have_fio)
            return;
        cx->all_ok &= cmp_fio_round(&cx->fio[sys - SYS_FIO], o->total, r->size, op == 0, res);
    } else if (sys == SYS_L3 || sys == SYS_L3_NOCRC) {
        cmp_l3 *l = &cx->l3[sys - SYS_L3];
        cx->all_ok &=
            op == 0 ? cmp_l3_put_round(l, o->total, r->size, o->keys, o->qd, res) : cmp_l3_get_round(l, res);
    } else {
        cx->all_ok &= op == 0 ? cmp_files_put_round(cx->files_dir, o->total, r->size, o->qd, res)
                              : cmp_files_get_round(cx->files_dir, o->total, r->size, o->qd, res);
    }
    cmp_devstat d1 = cmp_devstat_now();
    if (d0.ok && d1.ok && d1.ios > d0.ios && d1.ticks_ms > d0.ticks_ms) {
        res->dev_queue = (d1.in_queue_ms - d0.in_queue_ms) / (d1.ticks_ms - d0.ticks_ms);
        res->dev_kib = (d1.sectors - d0.sectors) * 512 / 1024 / (d1.ios - d0.ios);
    }
    cmp_settle();
}

/* Every round's GB/s, device queue and request size, on stderr. */
static void print_rounds(const cmp_run *cx, const cmp_row *r, int op,
                         cmp_result (*runs)[2][L3_COMPARE_MAX_ROUNDS])
{
    for (size_t k = 0; k < cx->reps && !cx->o->json; k++) {
        char line[512];
        int len = snprintf(line, sizeof line, "l3bench: %lluK %s round %zu, GB/s (device queue, KiB per request):",
                           (unsigned long long)(r->size >> 10), op ? "get" : "put", k + 1);
        for (int sys = 0; sys < NSYS && len < (int)sizeof line; sys++) {
            const cmp_result *x = &runs[sys][op][k];
            len += snprintf(line + len, sizeof line - (size_t)len, " %s %.3f (%.0f, %.0f)", sys_names[sys],
                            x->gbs, x->dev_queue, x->dev_kib);
        }
        fprintf(stderr, "%s\n", line);
    }
}

static int cmp_gbs(const void *a, const void *b)
{
    double x = ((const cmp_result *)a)->gbs, y = ((const cmp_result *)b)->gbs;
    return x < y ? -1 : x > y;
}

/* The round with the median throughput (its latencies and CPU with it). */
static cmp_result median(cmp_result *runs, size_t n)
{
    qsort(runs, n, sizeof *runs, cmp_gbs);
    return runs[n / 2];
}

/* What a paired ratio compares: throughput, CPU over the floor, context
 * switches. */
enum { BY_GBS, BY_CPU_FLOOR, BY_CTX };

/* l3cache's figure over the other system's in the same round (each
 * round where both ran and the other's figure is above 0): the median,
 * lowest and highest. By CPU the other's figure is the floor: fio's CPU
 * per GB plus crc32c's (`crc`). */
static void paired(const cmp_result *l3, const cmp_result *other, size_t n, int by, double crc, cmp_ratio *out)
{
    double v[L3_COMPARE_MAX_ROUNDS];
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        double num = by == BY_GBS ? l3[k].gbs : by == BY_CTX ? l3[k].ctx_per_gb : l3[k].cpu_per_gb;
        double den = by == BY_GBS ? other[k].gbs : by == BY_CTX ? other[k].ctx_per_gb : other[k].cpu_per_gb + crc;
        if (l3[k].ok && other[k].ok && den > 0)
            v[m++] = num / den;
    }
    *out = (cmp_ratio){ 0, 0, 0 };
    if (!m)
        return;
    wl_sort(v, m);
    *out = (cmp_ratio){ m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2, v[0], v[m - 1] };
}

/* Reduce one size's rounds to its row: paired ratios, then medians. */
static void reduce(cmp_run *cx, cmp_row *r, cmp_result (*runs)[2][L3_COMPARE_MAX_ROUNDS])
{
    cmp_result *cells[NSYS][2] = {
        { &r->fio_put, &r->fio_get }, { &r->fiow_put, &r->fiow_get }, { &r->l3_put, &r->l3_get },
        { &r->l3_put_nc, &r->l3_get_nc }, { &r->files_put, &r->files_get } };
    for (int op = 0; op < 2; op++) {
        paired(runs[SYS_L3][op], runs[SYS_FIO][op], cx->reps, BY_GBS, 0, &r->vs_fio[op]);
        paired(runs[SYS_L3][op], runs[SYS_FIO_JOBS][op], cx->reps, BY_GBS, 0, &r->vs_jobs[op]);
        paired(runs[SYS_L3][op], runs[SYS_FIO][op], cx->reps, BY_CPU_FLOOR, cx->crc_s_per_gb,
               &r->cpu_floor[op]);
        paired(runs[SYS_L3][op], runs[SYS_FIO][op], cx->reps, BY_CTX, 0, &r->ctx_fio[op]);
    }
    paired(runs[SYS_L3][1], runs[SYS_L3_NOCRC][1], cx->reps, BY_GBS, 0, &r->vs_nocrc);
    for (int sys = 0; sys < NSYS; sys++)
        for (int op = 0; op < 2; op++)
            *cells[sys][op] = median(runs[sys][op], cx->reps); /* sorts: after the pairing */
    r->floor[0] = r->fio_put.cpu_per_gb + cx->crc_s_per_gb;
    r->floor[1] = r->fio_get.cpu_per_gb + cx->crc_s_per_gb;
}

/* Each round, every system takes its turn, first for puts and then (over
 * what its last put round wrote) for gets, in an order that rotates from
 * round to round. A write leaves the device busy for a while after it
 * returns (a virtual disk's host flushes behind it), so reads are never
 * timed right after another system's writes: all put rounds come first,
 * then all get rounds. */
void cmp_run_size(cmp_run *cx, cmp_row *r)
{
    static cmp_result runs[NSYS][2][L3_COMPARE_MAX_ROUNDS];
    memset(runs, 0, sizeof runs);
    for (int op = 0; op < 2; op++) {
        for (size_t k = 0; k < cx->reps; k++)
            for (size_t t = 0; t < NSYS; t++) {
                int sys = (int)((t + k) % NSYS);
                run_turn(cx, r, sys, op, &runs[sys][op][k]);
            }
        print_rounds(cx, r, op, runs);
        if (op == 0)
            cmp_settle(); /* a longer pause before the first read */
    }
    reduce(cx, r, runs);
}

void cmp_size_done(cmp_run *cx, const cmp_row *r)
{
    for (int j = 0; j < 2; j++) {
        cmp_l3_close(&cx->l3[j]);
        cmp_fio_remove(&cx->fio[j]);
    }
    cmp_files_clear(cx->files_dir, (size_t)(cx->o->total / r->size));
}
