/* l3bench --compare's report (compare_report.h). */
#include "compare_report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "l3_crc32c.h"

static const char *met(bool yes) { return yes ? "met" : "NOT met"; }

static json_t *ratio_json(const cmp_ratio *v)
{
    return json_pack("{s:f,s:f,s:f}", "median", v->median, "lowest", v->lo, "highest", v->hi);
}

static json_t *row_json(const cmp_row *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "size", json_integer((json_int_t)r->size));
    const struct { const char *name; const cmp_result *res; } cols[] = {
        { "fio_get", &r->fio_get }, { "fio_put", &r->fio_put }, { "l3_get", &r->l3_get },
        { "l3_put", &r->l3_put }, { "l3_get_no_crc", &r->l3_get_nc }, { "l3_put_no_crc", &r->l3_put_nc },
        { "files_get", &r->files_get }, { "files_put", &r->files_put },
        { "fio_jobs_get", &r->fiow_get }, { "fio_jobs_put", &r->fiow_put } };
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        json_object_set_new(j, cols[c].name,
                            json_pack("{s:f,s:f,s:f,s:f,s:f}", "gb_per_s", cols[c].res->gbs, "p50_ms",
                                      cols[c].res->p50_ms, "p99_ms", cols[c].res->p99_ms, "cpu_s_per_gb",
                                      cols[c].res->cpu_per_gb, "ctx_switches_per_gb", cols[c].res->ctx_per_gb));
    const char *ops[2] = { "put", "get" };
    for (int op = 0; op < 2; op++) {
        char name[32];
        snprintf(name, sizeof name, "l3_over_fio_%s", ops[op]);
        json_object_set_new(j, name, ratio_json(&r->vs_fio[op]));
        snprintf(name, sizeof name, "l3_over_fio_jobs_%s", ops[op]);
        json_object_set_new(j, name, ratio_json(&r->vs_jobs[op]));
        snprintf(name, sizeof name, "cpu_floor_%s_s_per_gb", ops[op]);
        json_object_set_new(j, name, json_real(r->floor[op]));
        snprintf(name, sizeof name, "l3_cpu_over_floor_%s", ops[op]);
        json_object_set_new(j, name, ratio_json(&r->cpu_floor[op]));
        snprintf(name, sizeof name, "l3_ctx_switches_over_fio_%s", ops[op]);
        json_object_set_new(j, name, ratio_json(&r->ctx_fio[op]));
    }
    json_object_set_new(j, "l3_over_no_crc_get", ratio_json(&r->vs_nocrc));
    return j;
}

void cmp_report_json(const cmp_run *cx, const cmp_row *rows, const cmp_extras *x)
{
    json_t *root = json_object(), *arr = json_array();
    for (size_t i = 0; i < cx->o->num_sizes; i++)
        json_array_append_new(arr, row_json(&rows[i]));
    json_object_set_new(root, "rounds", json_integer((json_int_t)cx->reps));
    json_object_set_new(root, "crc32c_cold_s_per_gb", json_real(x->crc_s_per_gb));
    json_t *dirs = json_array();
    for (size_t i = 0; i < cx->ndirs; i++)
        json_array_append_new(dirs, json_string(cx->dirs[i]));
    json_object_set_new(root, "dirs", dirs);
    json_object_set_new(root, "ram_device_bytes", json_integer((json_int_t)(cx->o->on_ram ? cx->o->ram_device : 0)));
    const cmp_space_plan *sp = &x->space;
    json_object_set_new(root, "space", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "free_bytes", (json_int_t)sp->free,
                                                 "room_bytes", (json_int_t)sp->room, "need_bytes",
                                                 (json_int_t)sp->need, "total", (json_int_t)sp->total,
                                                 "mixed_total", (json_int_t)sp->mixed_total, "recovery_objects",
                                                 (json_int_t)sp->recovery_objects));
    json_object_set_new(root, "sizes", arr);
    json_object_set_new(root, "exists", json_pack("{s:f,s:f}", "store_keys_per_s", x->ex.store_keys_per_s,
                                                  "executor_keys_per_s", x->ex.executor_keys_per_s));
    json_object_set_new(root, "recovery", json_pack("{s:I,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:f}", "objects",
                                                    (json_int_t)x->rec.objects, "clean_open_s", x->rec.clean_open_s,
                                                    "scan_open_s", x->rec.scan_open_s, "clean_objects",
                                                    (json_int_t)x->rec.clean_objects, "scan_objects",
                                                    (json_int_t)x->rec.scan_objects, "scan_summaries",
                                                    (json_int_t)x->rec.scan_summaries, "fsck_s", x->rec.fsck_s,
                                                    "fsck_verify_s", x->rec.verify_s, "fsck_verify_gb_per_s",
                                                    x->rec.verify_gbs));
    const l3_mixed_result *m = &x->mix;
    json_object_set_new(root, "mixed", json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "page", (json_int_t)m->page,
                                                 "rounds", (json_int_t)m->rounds, "get_alone_gb_per_s", m->alone_gbs,
                                                 "get_alone_p99_ms", m->alone_p99_ms, "get_mixed_gb_per_s", m->mixed_gbs,
                                                 "get_mixed_p99_ms", m->mixed_p99_ms, "put_gb_per_s", m->put_gbs,
                                                 "p99_ratio", m->p99_ratio, "gb_per_s_ratio", m->gbs_ratio));
    json_object_set_new(root, "steady_put", json_pack("{s:f,s:f,s:I}", "gb_per_s", x->sty.gbs, "first_fill_gb_per_s",
                                                      x->sty.fill_gbs, "evictions", (json_int_t)x->sty.evictions));
    char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
    puts(text);
    free(text);
    json_decref(root);
}

/* One row's line: the table's columns, then the CPU floor's and the
 * context switches' (the CPU of the three systems padded to its
 * heading's width, so that the columns after it line up). */
static void print_cell(const cmp_row *r, int op)
{
    const cmp_result *f = op ? &r->fio_put : &r->fio_get, *l = op ? &r->l3_put : &r->l3_get,
                     *nc = op ? &r->l3_put_nc : &r->l3_get_nc, *fl = op ? &r->files_put : &r->files_get,
                     *fw = op ? &r->fiow_put : &r->fiow_get;
    int k = op ? 0 : 1; /* the row's ratios are [0] put, [1] get */
    char size[24], cpu[64];
    snprintf(size, sizeof size, "%lluK", (unsigned long long)(r->size >> 10));
    snprintf(cpu, sizeof cpu, "%.2f %.2f %.2f", f->cpu_per_gb, l->cpu_per_gb, fl->cpu_per_gb);
    printf("%-8s %-4s %9.3f %9.3f %9.3f %7.2f %7.2f %9.3f %9.3f   %7.2f / %-7.2f       %7.2f / %-7.2f"
           "       %-21s %10.3f %8.2f %10.0f %10.0f\n", size, op ? "put" : "get", f->gbs, fw->gbs, l->gbs,
           r->vs_fio[k].median, r->vs_jobs[k].median, nc->gbs, fl->gbs, f->p50_ms, f->p99_ms, l->p50_ms,
           l->p99_ms, cpu, r->floor[k], r->cpu_floor[k].median, f->ctx_per_gb, l->ctx_per_gb);
}

static void print_table(const cmp_run *cx, const cmp_row *rows)
{
    printf("\n%-8s %-4s %9s %9s %9s %7s %7s %9s %9s   %-23s %-23s %-21s %10s %8s %10s %10s\n", "size", "op",
           "fio GB/s", "fio-jobs", "l3 GB/s", "l3/fio", "l3/jobs", "no-crc", "files", "p50/p99 ms fio",
           "p50/p99 ms l3", "CPU s/GB fio l3 files", "floor s/GB", "l3/floor", "csw/GB fio", "csw/GB l3");
    for (size_t i = 0; i < cx->o->num_sizes; i++)
        for (int op = 0; op < 2; op++)
            print_cell(&rows[i], op);
    const l3_compare_options *o = cx->o;
    printf("\nGB/s, latency and CPU: the median of %zu rounds; l3/fio and l3/jobs: the median of the "
           "per-round ratios (l3cache and fio in the same round).\n"
           "fio: one job of iodepth %zu; fio-jobs: %zu jobs of iodepth %zu (l3cache's shape: %zu operations "
           "of %zu keys in flight); l3cache latency is per\noperation of %zu keys, fio's per I/O of one "
           "object. Puts of all systems run first, then gets of what each wrote.\n",
           cx->reps, cx->depth, o->qd, o->keys, o->qd, o->keys, o->keys);
    printf("floor s/GB: fio's CPU per GB plus crc32c's (%.3f), the least a store that checks every byte can "
           "spend; l3/floor: the median of the per-round\nratios of l3cache's CPU per GB to the floor of "
           "the same round. csw/GB: context switches per GB (l3cache: its process's, every thread's;\n"
           "fio: its jobs' ctx, as its JSON reports it).\n", cx->crc_s_per_gb);
}

/* The mixed phase's lines and targets. */
static void print_mixed(const l3_mixed_result *m, bool targets)
{
    if (!m->ok) {
        printf("%s", targets ? "" : "mixed phase: failed\n");
        return;
    }
    if (targets) {
        printf("  get p99 under a put stream <= 1.5x alone: %s (%.2fx)\n", met(m->p99_ratio <= 1.5), m->p99_ratio);
        printf("  get GB/s under a put stream >= 0.8x alone: %s (%.2fx; puts %.2f GB/s)\n", met(m->gbs_ratio >= 0.8),
               m->gbs_ratio, m->put_gbs);
        return;
    }
    printf("mixed (%llu KiB pages, %zu rounds, medians): gets alone %.3f GB/s p99 %.1f ms; under a put stream "
           "%.3f GB/s (%.2fx) p99 %.1f ms (%.2fx), the stream's puts %.3f GB/s\n",
           (unsigned long long)(m->page >> 10), m->rounds, m->alone_gbs, m->alone_p99_ms, m->mixed_gbs, m->gbs_ratio,
           m->mixed_p99_ms, m->p99_ratio, m->put_gbs);
}

static void print_extras(const cmp_run *cx, const cmp_extras *x)
{
    if (x->crc_s_per_gb > 0)
        printf("crc32c (%s) of data in no cache, one core: %.1f GB/s, %.3f CPU s/GB\n", l3_crc32c_engine(),
               1.0 / x->crc_s_per_gb, x->crc_s_per_gb);
    printf("exists(): %.2f M keys/s on the store, %.2f M keys/s through the executor\n",
           x->ex.store_keys_per_s / 1e6, x->ex.executor_keys_per_s / 1e6);
    if (x->rec_ok)
        printf("recovery of %zu objects: clean reopen %.3f s (%llu objects, checkpoint), crash scan %.3f s "
               "(%llu objects; %llu of %llu slabs from their summary, the rest from headers); populating took "
               "%.1f s\n", x->rec.objects, x->rec.clean_open_s, (unsigned long long)x->rec.clean_objects,
               x->rec.scan_open_s, (unsigned long long)x->rec.scan_objects,
               (unsigned long long)x->rec.scan_summaries, (unsigned long long)x->rec.scan_slabs, x->rec.populate_s);
    else if (cx->o->recovery_objects)
        printf("recovery: failed\n");
    if (x->rec_ok && x->rec.fsck_s > 0)
        printf("l3fsck of those %llu objects: -n %.2f s (%.2f M objects/s); -n --verify %.2f s (%.2f GB/s of "
               "used slabs)\n", (unsigned long long)x->rec.fsck_objects, x->rec.fsck_s,
               (double)x->rec.fsck_objects / x->rec.fsck_s / 1e6, x->rec.verify_s, x->rec.verify_gbs);
    else if (x->rec_ok)
        printf("l3fsck: not found beside l3bench nor on the PATH\n");
    print_mixed(&x->mix, false);
    if (x->sty_ok)
        printf("steady-state puts under eviction (1 GiB store, 1 MiB pages, third round): %.3f GB/s, "
               "%llu slabs evicted, %llu puts rejected;\nthe first fill of that fresh, fallocated store "
               "(ext4 converts unwritten extents as it goes): %.3f GB/s\n", x->sty.gbs,
               (unsigned long long)x->sty.evictions, (unsigned long long)x->sty.rejected, x->sty.fill_gbs);
}

/* Issue 48's targets per cell: l3cache's CPU per GB within 1.10x the
 * floor, its context switches per GB within 2x fio's (medians of the
 * per-round ratios). */
static void print_floor_targets(const cmp_run *cx, const cmp_row *rows)
{
    for (size_t i = 0; i < cx->o->num_sizes && cx->have_fio; i++) {
        const cmp_row *r = &rows[i];
        for (int op = 1; op >= 0; op--) {
            const cmp_result *l = op ? &r->l3_get : &r->l3_put, *f = op ? &r->fio_get : &r->fio_put;
            const cmp_ratio *c = &r->cpu_floor[op], *w = &r->ctx_fio[op];
            unsigned long long kib = (unsigned long long)(r->size >> 10);
            const char *name = op ? "get" : "put";
            printf("  %lluK %s CPU <= 1.10x the floor: %s (%.2fx; rounds %.2f to %.2f; l3cache %.3f s/GB, floor "
                   "%.3f)\n", kib, name, met(c->median > 0 && c->median <= 1.10), c->median, c->lo, c->hi,
                   l->cpu_per_gb, r->floor[op]);
            printf("  %lluK %s context switches per GB <= 2x fio's: %s (%.2fx; rounds %.2f to %.2f; l3cache %.0f, "
                   "fio %.0f)\n", kib, name, met(w->median > 0 && w->median <= 2.0), w->median, w->lo, w->hi,
                   l->ctx_per_gb, f->ctx_per_gb);
        }
    }
}

/* Issue 48's target on the RAM-backed device, where the device is not
 * the limit: l3cache at 0.95x fio or more in every cell. */
static void print_ram_target(const cmp_run *cx, const cmp_row *rows)
{
    size_t cells = 0, held = 0, low_i = 0;
    int low_op = 1;
    for (size_t i = 0; i < cx->o->num_sizes; i++)
        for (int op = 1; op >= 0; op--) {
            double v = rows[i].vs_fio[op].median;
            cells++;
            held += v >= 0.95;
            if (v < rows[low_i].vs_fio[low_op].median) {
                low_i = i;
                low_op = op;
            }
        }
    printf("  on the RAM-backed device, l3cache >= 0.95x fio at every size, gets and puts: %s (%zu of %zu cells; "
           "lowest %lluK %s %.2fx)\n", met(held == cells), held, cells,
           (unsigned long long)(rows[low_i].size >> 10), low_op ? "get" : "put", rows[low_i].vs_fio[low_op].median);
}

static void print_targets(const cmp_run *cx, const cmp_row *rows, const cmp_extras *x)
{
    printf("\ntargets:\n");
    for (size_t i = 0; i < cx->o->num_sizes; i++) {
        const cmp_row *r = &rows[i];
        double want = 0.95; /* issue 16: every size, gets and puts */
        if (!cx->have_fio)
            continue;
        for (int op = 1; op >= 0; op--) {
            const cmp_ratio *v = &r->vs_fio[op];
            printf("  %lluK %s >= %.2fx fio: %s (%.2fx; rounds %.2f to %.2f; %.2fx of fio-jobs)\n",
                   (unsigned long long)(r->size >> 10), op ? "get" : "put", want, met(v->median >= want),
                   v->median, v->lo, v->hi, r->vs_jobs[op].median);
        }
    }
    for (size_t i = 0; i < cx->o->num_sizes; i++) {
        const cmp_row *r = &rows[i];
        const cmp_ratio *nc = &r->vs_nocrc;
        printf("  %lluK get >= 0.97x its no-crc gets: %s (%.2fx; rounds %.2f to %.2f)\n",
               (unsigned long long)(r->size >> 10), met(nc->median >= 0.97), nc->median, nc->lo, nc->hi);
    }
    for (size_t i = 0; i < cx->o->num_sizes && cx->have_fio; i++) {
        const cmp_row *r = &rows[i];
        for (int op = 1; op >= 0; op--) {
            const cmp_result *l = op ? &r->l3_get : &r->l3_put, *f = op ? &r->fio_get : &r->fio_put;
            /* fio's own CPU for the same I/O plus the crc: below that no
             * store that checks every byte can go on this machine. */
            printf("  %lluK %s CPU <= 0.06 s/GB: %s (%.3f; floor fio %.3f + crc32c %.3f = %.3f)\n",
                   (unsigned long long)(r->size >> 10), op ? "get" : "put", met(l->cpu_per_gb <= 0.06),
                   l->cpu_per_gb, f->cpu_per_gb, x->crc_s_per_gb, f->cpu_per_gb + x->crc_s_per_gb);
        }
    }
    print_floor_targets(cx, rows);
    if (cx->o->on_ram && cx->have_fio)
        print_ram_target(cx, rows);
    print_mixed(&x->mix, true);
    printf("  exists >= 5M keys/s: %s (%.2fM on the store)\n", met(x->ex.store_keys_per_s >= 5e6),
           x->ex.store_keys_per_s / 1e6);
    const char *of = x->rec.objects >= 1000000 ? "" : " (the target is for 1000000)";
    if (x->rec_ok) {
        printf("  clean reopen of %zu objects <= 0.3 s: %s (%.3f s)%s\n", x->rec.objects,
               met(x->rec.clean_open_s <= 0.3), x->rec.clean_open_s, of);
        printf("  crash scan of %zu objects <= 2 s: %s (%.3f s)%s\n", x->rec.objects,
               met(x->rec.scan_open_s <= 2.0), x->rec.scan_open_s, of);
    }
    if (x->rec_ok && x->rec.fsck_s > 0)
        printf("  l3fsck -n of %llu objects < 10 s: %s (%.2f s)\n", (unsigned long long)x->rec.fsck_objects,
               met(x->rec.fsck_objects >= 1000000 && x->rec.fsck_s < 10.0), x->rec.fsck_s);
}

void cmp_report_text(const cmp_run *cx, const cmp_row *rows, const cmp_extras *x)
{
    print_table(cx, rows);
    print_extras(cx, x);
    print_targets(cx, rows, x);
}
