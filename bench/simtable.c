/* l3bench --trace --sim: the simulators' tables (simtable.h). */
#include "simtable.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admitsim.h"
#include "groupsim.h"
#include "invariant.h"

/* One capacity's main row. */
typedef struct sim_row {
    uint64_t cap;
    tr_sim_result lru, bel;
    tr_admit_result ad;
    tr_group_result obj, grp; /* with ranks or pools */
} sim_row;

/* What every table shares. */
typedef struct simctx {
    const l3_trace_options *o;
    const tr_trace *t;
    json_t *rows;       /* --json */
    bool progress;
    double hours;       /* the trace's span */
} simctx;

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0; }

const char *l3_trace_g_text(uint64_t hits, uint64_t lru, uint64_t min, int width, char *buf, size_t len)
{
    double g;
    if (tr_gap_share(hits, lru, min, &g))
        snprintf(buf, len, "%*.3f", width, g);
    else
        snprintf(buf, len, "%*s", width, "-");
    return buf;
}

json_t *l3_trace_g_json(uint64_t hits, uint64_t lru, uint64_t min)
{
    double g;
    return tr_gap_share(hits, lru, min, &g) ? json_real(g) : json_null();
}

tr_target l3_trace_target(const l3_trace_options *o, size_t i)
{
    return (tr_target){ .ratio = i < o->num_targets ? o->targets[i] : 0,
                        .g = i < o->num_targets_g ? o->targets_g[i] : NAN };
}

bool l3_trace_judge(const tr_target *target, uint64_t hits, uint64_t lru, uint64_t min, double writes,
                    const char *writes_what, json_t *row)
{
    bool met = tr_target_met(target, hits, lru, min, writes), has_g = !isnan(target->g);
    double g;
    bool defined = tr_gap_share(hits, lru, min, &g);
    if (row) {
        if (target->ratio > 0)
            json_object_set_new(row, "target", json_real(target->ratio));
        if (has_g)
            json_object_set_new(row, "target_g", json_real(target->g));
        json_object_set_new(row, "target_met", json_boolean(met));
        return met;
    }
    char what[128] = "", gs[16];
    if (has_g)
        snprintf(what, sizeof what, "G >= %.2f%s%s", target->g, defined ? "" : " (MIN = LRU here: as a ratio)",
                 target->ratio > 0 ? " and " : "");
    if (target->ratio > 0)
        snprintf(what + strlen(what), sizeof what - strlen(what), ">= %.2f x the LRU's hits", target->ratio);
    printf("%8s  target: %s, %s <= its own: %s (", "", what, writes_what, met ? "met" : "MISSED");
    if (has_g)
        printf("G %s, ", l3_trace_g_text(hits, lru, min, 0, gs, sizeof gs));
    printf("%.3f x, writes %.3f x)\n", ratio(hits, lru), writes);
    fflush(stdout);
    return met;
}

static void progress(const simctx *x, uint64_t cap, const char *what)
{
    if (x->progress)
        fprintf(stderr, "\r  capacity %llu: %-40s", (unsigned long long)cap, what);
}

/* Writes per day as drive writes of the capacity (the trace's clock). */
double l3_trace_dwpd(double hours, uint64_t written, uint64_t cap)
{
    return hours > 0 && cap ? (double)written / (double)cap * 24.0 / hours : 0;
}

static double dwpd(const simctx *x, uint64_t written, uint64_t cap)
{
    return l3_trace_dwpd(x->hours, written, cap);
}

static void trace_summary(const simctx *x)
{
    const tr_trace *t = x->t;
    uint32_t *uses = calloc(t->num_ids ? t->num_ids : 1, sizeof *uses);
    size_t once = 0;
    for (size_t a = 0; uses && a < t->num_accesses; a++)
        uses[t->ids[a]]++;
    for (uint32_t i = 0; uses && i < t->num_ids; i++)
        once += uses[i] == 1;
    free(uses);
    tr_sim_result inf = tr_sim_lru(t, t->num_ids ? t->num_ids : 1);
    if (x->rows) {
        json_array_append_new(x->rows, json_pack("{s:s,s:I,s:I,s:I,s:I,s:f,s:f}", "table", "trace", "requests",
                                                 (json_int_t)t->num_requests, "accesses", (json_int_t)t->num_accesses,
                                                 "distinct", (json_int_t)t->num_ids, "used_once", (json_int_t)once,
                                                 "infinite_hit_rate", ratio(inf.hits, inf.accesses), "hours", x->hours));
        return;
    }
    printf("trace %s: %zu requests, %zu block accesses, %u distinct blocks (%zu used once), %.2f h; "
           "infinite cache %.4f\n", x->o->trace, t->num_requests, t->num_accesses, t->num_ids, once, x->hours,
           ratio(inf.hits, inf.accesses));
}

/* ---- the main table ---- */

static void main_row(simctx *x, sim_row *r)
{
    const tr_trace *t = x->t;
    uint32_t cap = (uint32_t)r->cap;
    progress(x, r->cap, "object LRU, Belady");
    r->lru = tr_sim_lru(t, cap);
    r->bel = tr_sim_belady(t, cap);
    progress(x, r->cap, "adaptive admission");
    tr_admit_config c;
    tr_admit_defaults(&c, TR_ADAPTIVE);
    r->ad = tr_sim_admit(t, cap, &c);
    if (x->o->ranks > 1 || x->o->pools) {
        tr_group_config g = { .ranks = x->o->ranks ? x->o->ranks : 1, .pools = x->o->pools };
        progress(x, r->cap, "ranks and pools, object LRU");
        r->obj = tr_sim_groups(t, cap, &g);
        g.groups = true;
        progress(x, r->cap, "ranks and pools, group LRU");
        r->grp = tr_sim_groups(t, cap, &g);
    }
}

static void print_main_header(const simctx *x)
{
    if (x->rows)
        return;
    printf("capacity     LRU  Belady  adaptive  vs LRU  vs MIN       G  writes/LRU  LRU DWPD  rung");
    if (x->o->ranks > 1 || x->o->pools)
        printf("  usable(R%u%s): object LRU  group LRU  (vs LRU)", x->o->ranks ? x->o->ranks : 1,
               x->o->pools ? ", pools" : "");
    printf("\n");
}

static void print_main_row(const simctx *x, const sim_row *r)
{
    double hl = ratio(r->lru.hits, r->lru.accesses), hb = ratio(r->bel.hits, r->bel.accesses);
    double ha = ratio(r->ad.hits, r->ad.accesses), w = ratio(r->ad.written, r->lru.admitted);
    bool groups = x->o->ranks > 1 || x->o->pools;
    double uo = ratio(r->obj.usable_hits, r->obj.accesses), ug = ratio(r->grp.usable_hits, r->grp.accesses);
    if (x->rows) {
        json_t *j = json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:f,s:o,s:f,s:f,s:f}", "table", "main", "capacity_blocks",
                              (json_int_t)r->cap, "lru", hl, "belady", hb, "adaptive", ha, "vs_lru",
                              ratio(r->ad.hits, r->lru.hits), "vs_belady", ratio(r->ad.hits, r->bel.hits), "g",
                              l3_trace_g_json(r->ad.hits, r->lru.hits, r->bel.hits), "writes_vs_lru", w, "lru_dwpd",
                              dwpd(x, r->lru.admitted, r->cap), "rung_mean", r->ad.rung_mean);
        if (groups) {
            json_object_set_new(j, "usable_object_lru", json_real(uo));
            json_object_set_new(j, "usable_group_lru", json_real(ug));
        }
        json_array_append_new(x->rows, j);
        return;
    }
    char g[16];
    printf("%8llu  %.4f  %.4f    %.4f   %5.3f   %5.3f  %s       %5.3f  %8.1f  %4.2f", (unsigned long long)r->cap,
           hl, hb, ha, ratio(r->ad.hits, r->lru.hits), ratio(r->ad.hits, r->bel.hits),
           l3_trace_g_text(r->ad.hits, r->lru.hits, r->bel.hits, 6, g, sizeof g), w, dwpd(x, r->lru.admitted, r->cap),
           r->ad.rung_mean);
    if (groups)
        printf("                 %.4f     %.4f  (%.3f / %.3f)", uo, ug, hl > 0 ? uo / hl : 0, hl > 0 ? ug / hl : 0);
    printf("\n");
    fflush(stdout);
}

/* The plot: hit rate against capacity (gnuplot, as --compare's). */
static void plot(const simctx *x, const sim_row *rows, size_t n)
{
    char dat[1024], gp[1024];
    snprintf(dat, sizeof dat, "%s.dat", x->o->plot);
    snprintf(gp, sizeof gp, "%s.gp", x->o->plot);
    FILE *f = fopen(dat, "w");
    if (!f)
        return;
    fprintf(f, "# capacity_blocks lru belady adaptive usable_object_lru usable_group_lru\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%llu %.4f %.4f %.4f %.4f %.4f\n", (unsigned long long)rows[i].cap,
                ratio(rows[i].lru.hits, rows[i].lru.accesses), ratio(rows[i].bel.hits, rows[i].bel.accesses),
                ratio(rows[i].ad.hits, rows[i].ad.accesses), ratio(rows[i].obj.usable_hits, rows[i].obj.accesses),
                ratio(rows[i].grp.usable_hits, rows[i].grp.accesses));
    fclose(f);
    if (!(f = fopen(gp, "w")))
        return;
    bool groups = x->o->ranks > 1 || x->o->pools;
    fprintf(f,
            "set terminal pngcairo size 900,560 font ',11'\nset output '%s'\nset termoption noenhanced\n"
            "set title 'prefix hit rate against capacity: %s'\nset logscale x 10\nset xlabel 'capacity (blocks)'\n"
            "set ylabel 'hit rate'\nset grid\nset key below\nset yrange [0:*]\n"
            "plot '%s' u 1:2 w lp lw 2 t 'object LRU', '' u 1:3 w lp lw 2 dt 2 t 'Belady MIN', "
            "'' u 1:4 w lp lw 2 t 'adaptive admission'%s\n",
            x->o->plot, x->o->trace, dat,
            groups ? ", '' u 1:5 w lp lw 1 t 'usable, object LRU', '' u 1:6 w lp lw 1 t 'usable, group LRU'" : "");
    fclose(f);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "gnuplot %s 2>/dev/null", gp);
    if (system(cmd) != 0)
        fprintf(stderr, "l3bench: gnuplot failed or is missing; the data is in %s\n", dat);
}

/* ---- --sim-all: every policy ---- */

typedef struct named {
    const char *name;
    int kind;         /* enum tr_admit_kind, or -1..-3: Belady without bypass, with, with chain ties */
    int rung;         /* TR_RUNG: the ladder's rung */
    bool chain, orphans;
} named;

static const named policies[] = {
    { "lru", TR_ALL, 0, false, false },           { "lru+chain-order", TR_ALL, 0, true, false },
    { "lru+orphans", TR_ALL, 0, false, true },    { "no-tail", TR_NO_TAIL, 0, false, false },
    { "second-sight", TR_SECOND_SIGHT, 0, false, false }, { "ghost", TR_GHOST, 0, false, false },
    { "tinylfu", TR_TINYLFU, 0, false, false },   { "rung 0", TR_RUNG, 0, false, false },
    { "rung 1", TR_RUNG, 1, false, false },       { "rung 2", TR_RUNG, 2, false, false },
    { "rung 3", TR_RUNG, 3, false, false },       { "rung 4", TR_RUNG, 4, false, false },
    { "rung 5", TR_RUNG, 5, false, false },       { "adaptive", TR_ADAPTIVE, 0, false, false },
    { "adaptive+chain-order", TR_ADAPTIVE, 0, true, false }, { "adaptive+orphans", TR_ADAPTIVE, 0, false, true },
    { "belady-no-bypass", -1, 0, false, false },  { "belady", -2, 0, false, false },
    { "belady+chain-ties", -3, 0, false, false },
};

static tr_admit_result run_named(const simctx *x, const named *p, uint32_t cap)
{
    if (p->kind < 0) {
        tr_sim_result b = tr_sim_belady_ex(x->t, cap, p->kind != -1, p->kind == -3);
        return (tr_admit_result){ .hits = b.hits, .accesses = b.accesses, .written = b.admitted };
    }
    tr_admit_config c;
    tr_admit_defaults(&c, p->kind);
    if (p->kind == TR_RUNG)
        c.rung = l3_ladder[p->rung];
    c.chain_order = p->chain;
    c.orphans = p->orphans;
    return tr_sim_admit(x->t, cap, &c);
}

static void emit(const simctx *x, const char *table, uint64_t cap, const char *name, const tr_admit_result *r,
                 const sim_row *base)
{
    double h = ratio(r->hits, r->accesses);
    double vl = ratio(r->hits, base->lru.hits), vb = ratio(r->hits, base->bel.hits);
    double w = ratio(r->written, base->lru.admitted);
    if (x->rows) {
        json_array_append_new(x->rows, json_pack("{s:s,s:I,s:s,s:f,s:f,s:f,s:o,s:f,s:f}", "table", table,
                                                 "capacity_blocks", (json_int_t)cap, "policy", name, "hit", h,
                                                 "vs_lru", vl, "vs_belady", vb, "g",
                                                 l3_trace_g_json(r->hits, base->lru.hits, base->bel.hits),
                                                 "writes_vs_lru", w, "rung_mean", r->rung_mean));
        return;
    }
    char g[16];
    printf("%8llu  %-24s %.4f   %5.3f   %5.3f  %s       %5.3f\n", (unsigned long long)cap, name, h, vl, vb,
           l3_trace_g_text(r->hits, base->lru.hits, base->bel.hits, 6, g, sizeof g), w);
    fflush(stdout);
}

static void policy_table(simctx *x, const sim_row *rows, size_t n)
{
    if (!x->rows) {
        printf("\nevery policy (the ladder's rungs: ");
        for (uint32_t k = 0; k < L3_LADDER_LEN; k++) {
            if (l3_ladder[k].depth == UINT32_MAX)
                printf("%u all%s%s", k, l3_ladder[k].tail ? "" : " but the tail", k + 1 < L3_LADDER_LEN ? ", " : ")\n");
            else
                printf("%u depth %u probation %.2f, ", k, l3_ladder[k].depth, l3_ladder[k].probation);
        }
        printf("capacity  policy                   hit      vs LRU  vs MIN       G  writes/LRU\n");
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof policies / sizeof policies[0]; k++) {
            progress(x, rows[i].cap, policies[k].name);
            tr_admit_result r = run_named(x, &policies[k], (uint32_t)rows[i].cap);
            emit(x, "policies", rows[i].cap, policies[k].name, &r, &rows[i]);
        }
}

/* ---- --sim-all: ranks and pools ---- */

/* Usable hits over R ranks (and pools): object against group LRU, without
 * a budget and with half the object LRU's write rate as one, and as the
 * store's log of slabs (1/64 of the capacity each, fifo-reinsert). */
static void ranks_row(simctx *x, const sim_row *base, bool pools, uint32_t ranks)
{
    double span = x->t->num_requests ? (double)(x->t->time[x->t->num_requests - 1] - x->t->time[0]) : 0;
    double per_page = ranks * (pools ? 2.0 : 1.0);
    double half = span > 0 ? 0.5 * (double)base->lru.admitted * per_page / span : 0;
    double v[6];
    uint32_t slab = (uint32_t)(base->cap * per_page / 64 > 0 ? base->cap * per_page / 64 : 1);
    for (int k = 0; k < 6; k++) {
        tr_group_config g = { .ranks = ranks, .pools = pools, .groups = (k & 1) != 0, .budget = k / 2 == 1 ? half : 0,
                              .slab = k / 2 == 2 ? slab : 0 };
        progress(x, base->cap, "ranks and pools");
        tr_group_result r = tr_sim_groups(x->t, (uint32_t)base->cap, &g);
        v[k] = ratio(r.usable_hits, base->lru.hits);
    }
    if (x->rows) {
        json_array_append_new(x->rows, json_pack("{s:s,s:I,s:b,s:i,s:f,s:f,s:f,s:f,s:f,s:f}", "table", "ranks",
                                                 "capacity_blocks", (json_int_t)base->cap, "pools", pools, "ranks",
                                                 (int)ranks, "object_lru", v[0], "group_lru", v[1],
                                                 "object_half_budget", v[2], "group_half_budget", v[3],
                                                 "object_slab_log", v[4], "group_slab_log", v[5]));
        return;
    }
    printf("%8llu  %-5s %2u      %5.3f      %5.3f              %5.3f             %5.3f       %5.3f      %5.3f\n",
           (unsigned long long)base->cap, pools ? "yes" : "no", ranks, v[0], v[1], v[2], v[3], v[4], v[5]);
    fflush(stdout);
}

static void ranks_table(simctx *x, const sim_row *rows, size_t n)
{
    if (!x->rows)
        printf("\nusable hit over ranks and pools / single-rank object LRU hit (equal bytes)\n"
               "capacity  pools  R  object LRU  group LRU  object, 1/2 budget  group, 1/2 budget  object log  group log\n");
    for (size_t i = 0; i < n; i++)
        for (int pools = 0; pools < 2; pools++)
            for (uint32_t r = 1; r <= 8; r *= 2)
                ranks_row(x, &rows[i], pools != 0, r);
}

/* ---- --budget: hit rate against a write budget ---- */

static void budget_row(simctx *x, const sim_row *base, double d)
{
    double per_ms = d * (double)base->cap / 86400000.0;
    static const struct { const char *name; int kind; bool graceful; } runs[] = {
        { "lru", TR_ALL, false }, { "adaptive", TR_ADAPTIVE, false }, { "adaptive, graceful", TR_ADAPTIVE, true },
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        tr_admit_config c;
        tr_admit_defaults(&c, runs[k].kind);
        c.budget = per_ms;
        c.graceful = runs[k].graceful;
        progress(x, base->cap, runs[k].name);
        tr_admit_result r = tr_sim_admit(x->t, (uint32_t)base->cap, &c);
        double lru_dwpd = dwpd(x, base->lru.admitted, base->cap);
        if (x->rows) {
            json_array_append_new(x->rows, json_pack("{s:s,s:I,s:f,s:f,s:s,s:f,s:f,s:f}", "table", "budget",
                                                     "capacity_blocks", (json_int_t)base->cap, "dwpd", d,
                                                     "of_lru_rate", lru_dwpd > 0 ? d / lru_dwpd : 0, "policy",
                                                     runs[k].name, "hit", ratio(r.hits, r.accesses), "vs_lru",
                                                     ratio(r.hits, base->lru.hits), "dwpd_written",
                                                     dwpd(x, r.written, base->cap)));
            continue;
        }
        printf("%8llu  %8.1f  %6.3f  %-20s %.4f   %5.3f  %8.1f\n", (unsigned long long)base->cap, d,
               lru_dwpd > 0 ? d / lru_dwpd : 0, runs[k].name, ratio(r.hits, r.accesses), ratio(r.hits, base->lru.hits),
               dwpd(x, r.written, base->cap));
        fflush(stdout);
    }
}

size_t l3_trace_budgets(const l3_trace_options *o, double lru_dwpd, double *out)
{
    size_t m = 0;
    char text[sizeof o->budget];
    snprintf(text, sizeof text, "%s", o->budget);
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        L3_ASSERT(m < L3_TRACE_MAX_BUDGETS); /* l3bench refuses a longer list */
        char *end;
        double d = strtod(tok, &end);
        out[m++] = *end == 'x' ? d * lru_dwpd : d;
    }
    return m;
}

double l3_trace_hours(const tr_trace *t)
{
    return t->num_requests > 1 ? (double)(t->time[t->num_requests - 1] - t->time[0]) / 3600000.0 : 0;
}

static void budget_table(simctx *x, const sim_row *rows, size_t n)
{
    if (!x->rows)
        printf("\nhit rate against a write budget (drive writes per day of the capacity, by the trace's clock)\n"
               "capacity      DWPD  of LRU  policy               hit      vs LRU  DWPD written\n");
    for (size_t i = 0; i < n; i++) {
        double list[L3_TRACE_MAX_BUDGETS];
        size_t m = l3_trace_budgets(x->o, dwpd(x, rows[i].lru.admitted, rows[i].cap), list);
        for (size_t k = 0; k < m; k++)
            if (list[k] > 0)
                budget_row(x, &rows[i], list[k]);
    }
}

/* ---- --capacities: the trace's four, by bench/traces/README.md's rule ---- */

/* Find and print the four capacities; their values rounded to two
 * significant digits into `caps`. */
static void capacities(const simctx *x, uint64_t *caps)
{
    if (x->progress)
        fprintf(stderr, "\r  bisecting the four capacities (Belady's MIN, the object LRU)");
    tr_capacities c = tr_find_capacities(x->t);
    uint32_t exact[4] = { c.small, c.first_middle, c.second_middle, c.large };
    for (size_t k = 0; k < 4; k++)
        caps[k] = tr_round2(exact[k]);
    if (x->progress)
        fprintf(stderr, "\r%70s\r", "");
    if (x->rows) {
        json_array_append_new(x->rows, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:[I,I,I,I]}", "table", "capacities",
                                                 "infinite_hits", (json_int_t)c.infinite, "small", (json_int_t)c.small,
                                                 "first_middle", (json_int_t)c.first_middle, "min_all",
                                                 (json_int_t)c.min_all, "second_middle", (json_int_t)c.second_middle,
                                                 "large", (json_int_t)c.large, "rounded", (json_int_t)caps[0],
                                                 (json_int_t)caps[1], (json_int_t)caps[2], (json_int_t)caps[3]));
        return;
    }
    printf("capacities (bench/traces/README.md's rule, by bisection): small %u (Belady's MIN gets half of the "
           "infinite cache's hits), first middle %u (96%%), second middle %u (1.25 x %u, where MIN first gets "
           "all), large %u (the object LRU gets 97%%); rounded: %llu,%llu,%llu,%llu\n",
           c.small, c.first_middle, c.second_middle, c.min_all, c.large, (unsigned long long)caps[0],
           (unsigned long long)caps[1], (unsigned long long)caps[2], (unsigned long long)caps[3]);
    if (c.large < c.second_middle)
        printf("  (the object LRU gets 97%% of the infinite cache's hits before MIN gets all of them: the large "
               "capacity is below the second middle here)\n");
}

/* --targets and --target-g on the adaptive admission's simulator, under
 * its row: whether it met them (*met), or -1 where none is asked. */
static int sim_target(const simctx *x, const sim_row *r, size_t i)
{
    tr_target target = l3_trace_target(x->o, i);
    if (!(target.ratio > 0) && isnan(target.g))
        return -1;
    json_t *row = x->rows ? json_array_get(x->rows, json_array_size(x->rows) - 1) : NULL;
    return l3_trace_judge(&target, r->ad.hits, r->lru.hits, r->bel.hits, ratio(r->ad.written, r->lru.admitted),
                          "the simulator's writes", row);
}

int l3_trace_sim(const l3_trace_options *o, const tr_trace *t, const uint64_t *caps, size_t ncaps)
{
    sim_row rows[L3_TRACE_MAX_CAPACITIES];
    simctx x = { .o = o, .t = t, .rows = o->json ? json_array() : NULL, .progress = !o->json && isatty(2) };
    x.hours = l3_trace_hours(t);
    for (size_t i = 0; i < ncaps; i++)
        if (caps[i] == 0 || caps[i] >= UINT32_MAX) {
            fprintf(stderr, "l3bench: --capacity: %llu blocks is out of range\n", (unsigned long long)caps[i]);
            return 2;
        }
    L3_ASSERT(ncaps <= L3_TRACE_MAX_CAPACITIES); /* trace.c's list refuses more */
    trace_summary(&x);
    uint64_t found[4];
    if (o->capacities) {
        capacities(&x, found);
        caps = found;
        ncaps = 4;
    }
    print_main_header(&x);
    size_t met = 0, checked = 0;
    for (size_t i = 0; i < ncaps; i++) {
        rows[i] = (sim_row){ .cap = caps[i] };
        main_row(&x, &rows[i]);
        progress(&x, caps[i], "");
        if (x.progress)
            fprintf(stderr, "\r%70s\r", "");
        print_main_row(&x, &rows[i]);
        int m = sim_target(&x, &rows[i], i);
        met += m == 1;
        checked += m >= 0;
    }
    if (checked && !x.rows)
        printf("targets: %zu of %zu met (the adaptive admission's simulator)\n", met, checked);
    if (o->sim_all) {
        policy_table(&x, rows, ncaps);
        ranks_table(&x, rows, ncaps);
    }
    if (o->budget[0])
        budget_table(&x, rows, ncaps);
    if (x.progress)
        fprintf(stderr, "\r%70s\r", "");
    if (o->plot)
        plot(&x, rows, ncaps);
    if (x.rows) {
        char *text = json_dumps(x.rows, JSON_INDENT(2));
        puts(text);
        free(text);
        json_decref(x.rows);
    }
    return 0;
}
