/* Admission on top of the object LRU (admitsim.h). */
#include "admitsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "shadow.h"
#include "simlist.h"

enum { ABSENT = 0, IN_P = 1, IN_M = 2, IN_P_READ = 3 };

/* The real cache: probation (P: written at first sight, not read since)
 * and main (M) segments over dense ids; the object LRU is M alone. A lazy
 * one (the store's) leaves a probation block read in its place
 * (IN_P_READ) until it is probation's oldest, then moves it to main, as
 * the store moves it when its slab comes up. (The shadows are the
 * store's, shadow.h.) */
typedef struct seg {
    sl_links k;
    uint8_t *where;
    sl_list p, m;
    uint32_t cap;
    l3_rung rung;
    uint64_t hits, written;
    bool lazy;
    l3_bucket bucket;      /* its write budget on the trace's clock */
    double depth;          /* its bucket's tokens (the rate is the config's budget) */
} seg;

/* One run: the real cache, its shadows, and what they share. */
typedef struct sim {
    const tr_trace *t;
    const tr_admit_config *c;
    uint32_t cap;
    uint32_t *seen;          /* per id: 1 + generation of its last sighting; 0: never seen */
    uint64_t sight, gen;     /* block sightings so far; their generation (sight / cap) */
    seg real;
    l3_shadow *shadow;       /* TR_ADAPTIVE: the store's shadows, one per rung (shadow.h) */
    size_t nshadow;
    uint64_t sample_below;   /* a shadow sees an id when mix(id) < this */
    double shadow_share;     /* the shadows' sampling rate: their share of the budget */
    uint32_t rung, switches;
    l3_ladder_score score;   /* the shadows' hits and the noise of their differences (ladder.h) */
    uint64_t round, next_round;
    double rung_sum;
    uint8_t *sketch;         /* TinyLFU: 4 rows of 4-bit counters (a byte each here) */
    uint32_t sk_width;
    uint64_t sk_adds;
    uint32_t *kid_start, *kids; /* children of each id (orphans) */
    uint32_t *stack;         /* orphans: the descendants still to evict */
    uint32_t *buf;           /* scratch: what a request admitted (chain order) */
    size_t *pos;             /* scratch: a request's places */
    uint64_t *fps;           /* scratch: a request's sampled ids as the shadows' fingerprints, */
    uint32_t *spos;          /* their places in the request, */
    bool *sseen;             /* and whether the ghost held them */
} sim;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static bool seg_init(seg *c, uint32_t n, uint32_t cap, l3_rung rung)
{
    *c = (seg){ .k = { malloc((size_t)n * 4 + 4), malloc((size_t)n * 4 + 4) }, .where = calloc((size_t)n + 1, 1),
                .p = sl_empty(), .m = sl_empty(), .cap = cap, .rung = rung };
    return c->k.prev && c->k.next && c->where;
}

static void seg_free(seg *c)
{
    free(c->k.prev);
    free(c->k.next);
    free(c->where);
}

/* ---- what the shared state says about a block ---- */

/* Seen in an earlier request within the ghost window. */
static bool in_ghost(const sim *s, uint32_t x)
{
    if (s->c->kind == TR_SECOND_SIGHT)
        return s->seen[x] != 0;
    return s->seen[x] != 0 && s->gen - (s->seen[x] - 1) < s->c->ghost_gens;
}

static uint32_t sk_slot(const sim *s, uint32_t x, int row)
{
    return (uint32_t)(mix64(((uint64_t)x << 2) | (uint64_t)row) % s->sk_width) + (uint32_t)row * s->sk_width;
}

static int sk_estimate(const sim *s, uint32_t x)
{
    int m = 15;
    for (int r = 0; r < 4; r++)
        if (s->sketch[sk_slot(s, x, r)] < m)
            m = s->sketch[sk_slot(s, x, r)];
    return m;
}

/* Count a sighting (conservative update); halve every 10 x capacity
 * sightings (at least 1024). */
static void sk_add(sim *s, uint32_t x)
{
    int m = sk_estimate(s, x);
    for (int r = 0; r < 4; r++) {
        uint8_t *v = &s->sketch[sk_slot(s, x, r)];
        if (*v == m && *v < 15)
            (*v)++;
    }
    if (++s->sk_adds >= (s->cap > 102 ? 10ull * s->cap : 1024)) {
        for (uint32_t i = 0; i < 4 * s->sk_width; i++)
            s->sketch[i] >>= 1;
        s->sk_adds = 0;
    }
}

/* ---- eviction ---- */

static void unlink_one(seg *c, uint32_t x)
{
    sl_unlink(&c->k, c->where[x] == IN_M ? &c->m : &c->p, x);
    c->where[x] = ABSENT;
}

/* Evict `x`; with orphans, its cached descendants too (they cannot be a
 * prefix hit without it), walked with a stack. */
static void drop(sim *s, seg *c, uint32_t x)
{
    unlink_one(c, x);
    if (!s->c->orphans)
        return;
    size_t n = 0;
    s->stack[n++] = x;
    while (n > 0) {
        uint32_t y = s->stack[--n];
        for (uint32_t k = s->kid_start[y]; k < s->kid_start[y + 1]; k++)
            if (c->where[s->kids[k]] != ABSENT) {
                unlink_one(c, s->kids[k]);
                s->stack[n++] = s->kids[k];
            }
    }
}

/* Move x to main's head, from wherever it is. */
static void to_main(seg *c, uint32_t x)
{
    sl_unlink(&c->k, c->where[x] == IN_M ? &c->m : &c->p, x);
    sl_push(&c->k, &c->m, x);
    c->where[x] = IN_M;
}

/* Make room for one: probation's oldest while probation is over its share
 * (or main is empty), else main's oldest; a read one at probation's end
 * (lazy) moves to main instead. */
static void make_room(sim *s, seg *c)
{
    while (c->p.size + c->m.size >= c->cap) {
        bool from_p = c->p.size > 0 && (c->rung.single || c->m.size == 0 ||
                                       (double)c->p.size >= c->rung.probation * c->cap);
        uint32_t x = from_p ? c->p.tail : c->m.tail;
        if (c->where[x] == IN_P_READ)
            to_main(c, x);
        else
            drop(s, c, x);
    }
}

static void insert(sim *s, seg *c, uint32_t x, bool to_main)
{
    make_room(s, c);
    bool m = to_main || c->rung.single;
    sl_push(&c->k, m ? &c->m : &c->p, x);
    c->where[x] = m ? IN_M : IN_P;
    c->written++;
}

/* A hit: probation moves to main (lazily: marked read, in its place);
 * main is touched. */
static void touch(seg *c, uint32_t x)
{
    if (c->lazy && c->where[x] != IN_M)
        c->where[x] = IN_P_READ;
    else
        to_main(c, x);
}

/* ---- admission ---- */

/* What the policy says of the absent block `x`, the `pos`-th block of its
 * put batch (`tail`: the request's last): write it or not, and where. */
static bool policy_admits(const sim *s, const seg *c, uint32_t x, size_t pos, bool tail, bool *to_main)
{
    bool seen = in_ghost(s, x), full = c->p.size + c->m.size >= c->cap;
    *to_main = seen;
    switch (s->c->kind) {
    case TR_ALL: return true;
    case TR_NO_TAIL: return !tail;
    case TR_SECOND_SIGHT:
    case TR_GHOST: return !tail && seen;
    case TR_TINYLFU: return !tail && (!full || sk_estimate(s, x) > sk_estimate(s, c->m.tail));
    default: return l3_rung_admits(&c->rung, seen, pos, tail, full);
    }
}

/* The write budget: a bucket of `bucket_ms` of budget, filled by the
 * trace's clock (bucket.h). Without `graceful` a write waits only for a
 * token; with it a first-seen block also needs the bucket at least half
 * full, so an emptying bucket keeps what was seen twice. */
static bool budget_allows(const sim *s, seg *c, bool first_sight)
{
    return s->c->budget <= 0 || l3_bucket_take(&c->bucket, c->depth, 1, s->c->graceful && first_sight);
}

/* Insert what a request admitted, tail first, then touch its hits tail
 * first: the request's head ends as its most recent block. */
static void chain_order_insert(sim *s, seg *c, const uint32_t *ids, size_t hits, const uint32_t *adm, size_t n)
{
    for (size_t k = n; k-- > 0;)
        insert(s, c, adm[k] & 0x7fffffffu, (adm[k] >> 31) != 0);
    for (size_t k = hits; k-- > 0;)
        if (c->where[ids[k]] != ABSENT)
            touch(c, ids[k]);
}

/* One request as cache `c` sees it: `ids` (m of them, at places `pos` of
 * a request of n blocks). Returns its hits. */
static size_t seg_request(sim *s, seg *c, const uint32_t *ids, const size_t *pos, size_t m, size_t n)
{
    bool order = s->c->chain_order;
    size_t i = 0, nadm = 0;
    while (i < m && c->where[ids[i]] != ABSENT)
        i++;
    for (size_t k = 0; k < i; k++)
        touch(c, ids[order ? i - 1 - k : k]);
    c->hits += i;
    size_t first = i < m ? pos[i] : n;
    for (size_t j = i; j < m; j++) {
        uint32_t x = ids[j];
        bool to_main;
        if (c->where[x] != ABSENT)
            continue; /* present after the first miss: left alone */
        if (!policy_admits(s, c, x, pos[j] - first, pos[j] + 1 == n, &to_main) || !budget_allows(s, c, !to_main))
            break; /* the rest of the batch could not be a prefix hit */
        if (order)
            s->buf[nadm++] = x | (to_main ? 0x80000000u : 0);
        else
            insert(s, c, x, to_main);
    }
    if (order)
        chain_order_insert(s, c, ids, i, s->buf, nadm);
    return i;
}

/* ---- the shadows and the rung they choose ---- */

/* The shadows replay request q's sampled blocks (a block's fingerprint
 * its id + 1), as the store's replay an exists call's sampled keys: each
 * with its share of the budget on the trace's clock (in ns, as the
 * store's), the last block a partial tail. */
static void shadows_request(sim *s, size_t q, const uint32_t *ids, size_t n)
{
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (mix64(ids[j]) < s->sample_below) {
            s->fps[m] = (uint64_t)ids[j] + 1;
            s->spos[m] = (uint32_t)j;
            s->sseen[m++] = in_ghost(s, ids[j]);
        }
    if (!m)
        return;
    double per_ns = s->c->budget > 0 ? l3_shadow_rate(s->c->budget * 1000.0, s->shadow_share) : 0;
    double h[L3_LADDER_LEN];
    for (size_t k = 0; k < s->nshadow; k++) {
        l3_shadow_budget(&s->shadow[k], per_ns, s->t->time[q] * 1000000ull, s->c->graceful);
        h[k] = (double)l3_shadow_request(&s->shadow[k], s->fps, s->spos, s->sseen, m, n, true);
    }
    l3_ladder_count(&s->score, h, 1); /* a block is a page of one object */
}

/* Every round: the real cache takes the rung the ladder's rule chooses
 * from the shadows' score (ladder.h), as the store does. */
static void choose_rung(sim *s)
{
    if (s->sight < s->next_round)
        return;
    s->next_round = s->sight + s->round;
    uint32_t best = l3_ladder_choose(&s->score, s->rung);
    s->switches += best != s->rung;
    s->rung = best;
    s->real.rung = l3_ladder[best];
}

/* ---- a run ---- */

/* Each id's children (the blocks that follow it in a request): a hash
 * chain gives every block one parent. */
static bool build_kids(sim *s)
{
    const tr_trace *t = s->t;
    uint32_t *parent = malloc((size_t)t->num_ids * 4 + 4), *fill = calloc((size_t)t->num_ids + 1, 4);
    s->kid_start = calloc((size_t)t->num_ids + 2, 4);
    s->kids = malloc((size_t)t->num_ids * 4 + 4);
    s->stack = malloc((size_t)t->num_ids * 4 + 4);
    bool ok = parent && fill && s->kid_start && s->kids && s->stack;
    for (uint32_t i = 0; ok && i < t->num_ids; i++)
        parent[i] = SL_NIL;
    for (size_t q = 0; ok && q < t->num_requests; q++)
        for (size_t a = t->start[q] + 1; a < t->start[q + 1]; a++)
            if (parent[t->ids[a]] == SL_NIL && t->ids[a] != t->ids[a - 1])
                parent[t->ids[a]] = t->ids[a - 1];
    for (uint32_t i = 0; ok && i < t->num_ids; i++)
        if (parent[i] != SL_NIL)
            s->kid_start[parent[i] + 1]++;
    for (uint32_t i = 0; ok && i < t->num_ids; i++)
        s->kid_start[i + 1] += s->kid_start[i];
    for (uint32_t i = 0; ok && i < t->num_ids; i++)
        if (parent[i] != SL_NIL)
            s->kids[s->kid_start[parent[i]] + fill[parent[i]]++] = i;
    free(parent);
    free(fill);
    return ok;
}

static bool sim_init(sim *s, const tr_trace *t, uint32_t cap, const tr_admit_config *c)
{
    const l3_rung lru = l3_ladder[L3_LADDER_LEN - 1];
    size_t longest = t->longest ? t->longest : 1;
    *s = (sim){ .t = t, .c = c, .cap = cap, .seen = calloc((size_t)t->num_ids + 1, 4),
                .buf = malloc(longest * 4), .pos = malloc(longest * sizeof(size_t)),
                .fps = malloc(longest * sizeof(uint64_t)), .spos = malloc(longest * sizeof(uint32_t)),
                .sseen = malloc(longest) };
    bool ok = s->seen && s->buf && s->pos && s->fps && s->spos && s->sseen;
    l3_rung first = c->kind == TR_RUNG ? c->rung : lru;
    ok = ok && seg_init(&s->real, t->num_ids, cap, first);
    s->real.lazy = c->lazy;
    s->real.depth = c->budget * c->bucket_ms;
    if (ok && c->kind == TR_ADAPTIVE) {
        uint32_t scap = l3_shadow_size(cap, &s->sample_below);
        s->shadow_share = (double)scap / (double)cap;
        ok = (s->shadow = malloc(L3_LADDER_LEN * sizeof *s->shadow)) != NULL;
        for (uint32_t k = 0; ok && k < L3_LADDER_LEN; k++)
            l3_shadow_init(&s->shadow[k], scap, k);
        s->nshadow = ok ? L3_LADDER_LEN : 0;
        s->rung = L3_LADDER_LEN - 1; /* start as the object LRU */
        s->round = s->next_round = l3_ladder_round(cap, 1);
    }
    if (ok && c->kind == TR_TINYLFU) {
        for (s->sk_width = 64; s->sk_width < cap; s->sk_width *= 2)
            ;
        ok = (s->sketch = calloc(4 * (size_t)s->sk_width, 1)) != NULL;
    }
    return ok && (!c->orphans || build_kids(s));
}

static void sim_free(sim *s)
{
    seg_free(&s->real);
    free(s->shadow);
    free(s->seen);
    free(s->buf);
    free(s->pos);
    free(s->fps);
    free(s->spos);
    free(s->sseen);
    free(s->sketch);
    free(s->kid_start);
    free(s->kids);
    free(s->stack);
}

/* The request's blocks are seen: the ghost's generations, the sketch. */
static void sighted(sim *s, const uint32_t *ids, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        s->seen[ids[j]] = (uint32_t)s->gen + 1;
        s->gen = ++s->sight / s->cap;
    }
}

tr_admit_result tr_sim_admit(const tr_trace *t, uint32_t capacity, const tr_admit_config *c)
{
    tr_admit_result r = { .accesses = t->num_accesses };
    sim s;
    bool ok = capacity > 0 && sim_init(&s, t, capacity, c);
    for (size_t q = 0; ok && q < t->num_requests; q++) {
        const uint32_t *ids = t->ids + t->start[q];
        size_t n = t->start[q + 1] - t->start[q];
        for (size_t j = 0; s.sketch && j < n; j++)
            sk_add(&s, ids[j]);
        if (c->budget > 0)
            l3_bucket_fill(&s.real.bucket, c->budget, s.real.depth, t->time[q]); /* full at the first request */
        if (s.nshadow)
            shadows_request(&s, q, ids, n);
        for (size_t j = 0; j < n; j++)
            s.pos[j] = j;
        seg_request(&s, &s.real, ids, s.pos, n, n);
        sighted(&s, ids, n);
        if (s.nshadow)
            choose_rung(&s);
        s.rung_sum += s.rung;
        if (c->rungs)
            c->rungs[q] = (uint8_t)s.rung;
    }
    if (capacity > 0) {
        r.hits = s.real.hits;
        r.written = s.real.written;
        r.rung = s.rung;
        r.switches = s.switches;
        r.rung_mean = t->num_requests ? s.rung_sum / (double)t->num_requests : 0;
        sim_free(&s);
    }
    return r;
}

void tr_admit_defaults(tr_admit_config *c, int kind)
{
    *c = (tr_admit_config){ .kind = kind, .rung = l3_ladder[L3_LADDER_LEN - 1], .ghost_gens = 5, .lazy = true,
                            .bucket_ms = 10000 };
}
