/* The admission ladder's shadow caches (shadow.h). */
#include "shadow.h"

#include <string.h>

#include "hash.h"
#include "invariant.h"

enum { FREE = 0, PROBATION = 1, MAIN = 2 };

/* ---- the fingerprint table: linear probing, backward-shift deletion ---- */

static uint32_t home(uint64_t fp) { return (uint32_t)(l3_mix64(fp) & (L3_SHADOW_SLOTS - 1)); }

static uint32_t find_slot(const l3_shadow *c, uint64_t fp)
{
    uint32_t i = home(fp);
    while (c->slot[i] && c->e[c->slot[i]].fp != fp)
        i = (i + 1) & (L3_SHADOW_SLOTS - 1);
    return i;
}

static void table_remove(l3_shadow *c, uint64_t fp)
{
    uint32_t i = find_slot(c, fp);
    L3_ASSERT(c->slot[i]);
    c->slot[i] = 0;
    /* Shift back every later entry of the run that may move into the hole. */
    for (uint32_t j = (i + 1) & (L3_SHADOW_SLOTS - 1); c->slot[j]; j = (j + 1) & (L3_SHADOW_SLOTS - 1)) {
        uint32_t h = home(c->e[c->slot[j]].fp);
        bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
        if (movable) {
            c->slot[i] = c->slot[j];
            c->slot[j] = 0;
            i = j;
        }
    }
}

/* ---- the two lists ---- */

static void list_unlink(l3_shadow *c, uint16_t x)
{
    l3_shadow_entry *e = &c->e[x];
    int w = e->where - 1;
    if (e->prev)
        c->e[e->prev].next = e->next;
    else
        c->head[w] = e->next;
    if (e->next)
        c->e[e->next].prev = e->prev;
    else
        c->tail[w] = e->prev;
    c->size[w]--;
}

static void list_push(l3_shadow *c, uint16_t x, int where)
{
    l3_shadow_entry *e = &c->e[x];
    int w = where - 1;
    e->where = (uint8_t)where;
    e->prev = 0;
    e->next = c->head[w];
    if (c->head[w])
        c->e[c->head[w]].prev = x;
    else
        c->tail[w] = x;
    c->head[w] = x;
    c->size[w]++;
}

uint32_t l3_shadow_size(uint64_t cap, uint64_t *sample_below)
{
    L3_ASSERT(cap >= 1);
    double rate = cap <= L3_SHADOW_ENTRIES ? 1.0 : (double)L3_SHADOW_ENTRIES / (double)cap;
    uint64_t entries = (uint64_t)((double)cap * rate + 0.5);
    *sample_below = rate >= 1.0 ? UINT64_MAX : (uint64_t)(rate * 18446744073709551615.0);
    return entries ? (uint32_t)entries : 1;
}

double l3_shadow_rate(double writes_per_s, double share)
{
    return writes_per_s * share * 1e-9;
}

void l3_shadow_init(l3_shadow *c, uint32_t cap, uint32_t rung)
{
    L3_ASSERT(cap >= 1 && cap <= L3_SHADOW_ENTRIES && rung < L3_LADDER_LEN);
    memset(c, 0, sizeof *c);
    c->cap = cap;
    c->rung = rung;
    for (uint32_t x = 1; x <= cap; x++)
        c->e[x].next = (uint16_t)(x < cap ? x + 1 : 0);
    c->free = 1;
}

bool l3_shadow_has(const l3_shadow *c, uint64_t fp)
{
    return c->slot[find_slot(c, fp)] != 0;
}

static void drop(l3_shadow *c, uint16_t x)
{
    list_unlink(c, x);
    table_remove(c, c->e[x].fp);
    c->e[x] = (l3_shadow_entry){ .next = c->free };
    c->free = x;
}

/* Room for one: probation's oldest while probation holds its share (or
 * main is empty), else main's oldest. */
static void make_room(l3_shadow *c)
{
    const l3_rung *r = &l3_ladder[c->rung];
    while (c->size[0] + c->size[1] >= c->cap) {
        bool from_p = c->size[0] > 0 &&
                      (r->single || c->size[1] == 0 || (double)c->size[0] >= (double)r->probation * c->cap);
        drop(c, from_p ? c->tail[0] : c->tail[1]);
    }
}

static void insert(l3_shadow *c, uint64_t fp, bool to_main)
{
    make_room(c);
    uint16_t x = c->free;
    L3_ASSERT(x != 0);
    c->free = c->e[x].next;
    c->e[x].fp = fp;
    c->slot[find_slot(c, fp)] = x;
    list_push(c, x, to_main || l3_ladder[c->rung].single ? MAIN : PROBATION);
    c->written++;
}

/* A hit: probation moves to main; main is touched. */
static void touch(l3_shadow *c, uint16_t x)
{
    list_unlink(c, x);
    list_push(c, x, MAIN);
}

#define BUCKET_NS 1e10  /* the store's bucket: 10 s of budget */
#define MIN_BUCKET 8.0   /* writes: a sampled shadow's share of a small budget is a fraction of one */

/* A shadow's bucket, in writes: 10 s of its budget, but never so few that
 * its half-full gate cannot work (a store of a million objects at 1 DWPD
 * gives its shadows 0.47 writes in 10 s): the same rate, in larger bursts. */
static double bucket_of(double per_ns)
{
    double b = per_ns * BUCKET_NS;
    return b > MIN_BUCKET ? b : MIN_BUCKET;
}

void l3_shadow_budget(l3_shadow *c, double per_ns, uint64_t now_ns, bool graceful)
{
    L3_ASSERT(per_ns >= 0);
    if (per_ns <= 0) {
        c->per_ns = 0;
        c->bucket.filled = 0; /* a new budget starts full */
        return;
    }
    l3_bucket_fill(&c->bucket, per_ns, bucket_of(per_ns), now_ns);
    c->per_ns = per_ns;
    c->graceful = graceful;
}

/* Whether the budget (if any) lets the shadow write a key, `seen` before;
 * takes its token. */
static bool budget_takes(l3_shadow *c, bool seen)
{
    return c->per_ns <= 0 || l3_bucket_take(&c->bucket, bucket_of(c->per_ns), 1, c->graceful && !seen);
}

size_t l3_shadow_request(l3_shadow *c, const uint64_t *fps, const uint32_t *pos, const bool *seen, size_t m,
                         size_t n, bool tails)
{
    const l3_rung *r = &l3_ladder[c->rung];
    size_t i = 0;
    uint16_t x;
    while (i < m && (x = c->slot[find_slot(c, fps[i])]) != 0) {
        touch(c, x);
        i++;
    }
    c->hits += i;
    uint64_t first = i < m ? pos[i] : n;
    for (size_t j = i; j < m; j++) {
        if (c->slot[find_slot(c, fps[j])])
            continue; /* present after the first miss: left alone */
        bool full = c->size[0] + c->size[1] >= c->cap;
        bool tail = tails && pos[j] + 1 == n;
        if (!l3_rung_admits(r, seen[j], pos[j] - first, tail, full) || !budget_takes(c, seen[j]))
            break; /* the rest could not be a prefix hit */
        insert(c, fps[j], seen[j]);
    }
    return i;
}
