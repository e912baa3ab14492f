/* Pages of several objects: ranks and pools (groupsim.h). */
#include "groupsim.h"

#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "simlist.h"

/* One run. Object ids: a page's pool objects (page * R + rank) * P + pool,
 * then its states from `state_base`: state_base + page * R + rank. In the
 * group-level cache the list is over pages and a page's size is counted in
 * objects. */
typedef struct gsim {
    const tr_trace *t;
    tr_group_config c;
    uint32_t per_page;      /* pool objects per page per rank: 1, or 2 with pools */
    uint64_t state_base, cap, used;
    sl_links k;
    sl_list lru;
    uint8_t *in;            /* per object (object level) or per page (group level): 1 there, 2 there and read */
    uint8_t *state;         /* group level: a page's states are there */
    uint32_t *order;        /* this request's rank order */
    uint64_t rng, written;
    l3_bucket bucket;       /* the write budget, on the trace's clock (bucket.h) */
} gsim;

/* The bucket's depth: the store's 10 s of the budget. */
static double depth(const gsim *s) { return s->c.budget * 10000.0; }

/* Take `n` tokens for a write, if the budget has them. */
static bool budget_take(gsim *s, uint64_t n)
{
    return s->c.budget <= 0 || l3_bucket_take(&s->bucket, depth(s), (double)n, false);
}

static uint64_t next_rand(gsim *s)
{
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    return s->rng;
}

static uint64_t pool_obj(const gsim *s, uint32_t page, uint32_t rank, uint32_t pool)
{
    return ((uint64_t)page * s->c.ranks + rank) * s->per_page + pool;
}

static uint64_t state_obj(const gsim *s, uint32_t page, uint32_t rank)
{
    return s->state_base + (uint64_t)page * s->c.ranks + rank;
}

/* A page's size in objects (group level). */
static uint64_t group_size(const gsim *s, uint32_t page)
{
    return (uint64_t)s->c.ranks * (s->per_page + (s->state[page] ? 1 : 0));
}

static uint64_t unit_size(const gsim *s, uint32_t x)
{
    return s->c.groups ? group_size(s, x) : 1;
}

static void evict_one(gsim *s)
{
    uint32_t x = sl_pop_tail(&s->k, &s->lru);
    s->used -= unit_size(s, x);
    s->in[x] = 0;
    if (s->c.groups)
        s->state[x] = 0;
}

/* The log of slabs: reclaim the oldest slab's worth of objects; what was
 * read since written goes back to the head (written again). */
static void reclaim_slab(gsim *s)
{
    uint64_t freed = 0;
    while (s->lru.size && freed < s->c.slab) {
        uint32_t x = sl_pop_tail(&s->k, &s->lru);
        uint64_t size = unit_size(s, x);
        freed += size;
        if (s->in[x] == 2) {
            s->in[x] = 1;
            sl_push(&s->k, &s->lru, x);
            s->written += size;
            continue;
        }
        s->used -= size;
        s->in[x] = 0;
        if (s->c.groups)
            s->state[x] = 0;
    }
}

static void touch(gsim *s, uint32_t x)
{
    if (s->c.slab) {
        s->in[x] = 2;
        return;
    }
    sl_unlink(&s->k, &s->lru, x);
    sl_push(&s->k, &s->lru, x);
}

/* Add `x` (an object, or a page of `size` objects) at the head. */
static void add(gsim *s, uint32_t x, uint64_t size)
{
    for (int tries = 0; s->lru.size && s->used + size > s->cap; tries++) {
        if (s->c.slab && tries < 64)
            reclaim_slab(s);
        else
            evict_one(s);
    }
    sl_push(&s->k, &s->lru, x);
    s->in[x] = 1;
    s->used += size;
    s->written += size;
}

/* ---- object level ---- */

static bool page_there(const gsim *s, uint32_t page, uint32_t rank)
{
    for (uint32_t p = 0; p < s->per_page; p++)
        if (!s->in[pool_obj(s, page, rank, p)])
            return false;
    return true;
}

/* A rank's usable prefix: its run of whole pages, cut back (with pools)
 * to the last page of it whose state is there. */
static size_t rank_usable(const gsim *s, const uint32_t *ids, size_t n, uint32_t rank)
{
    size_t h = 0;
    while (h < n && page_there(s, ids[h], rank))
        h++;
    if (!s->c.pools)
        return h;
    while (h > 0 && !s->in[state_obj(s, ids[h - 1], rank)])
        h--;
    return h;
}

/* A rank reads the usable hit `u` (its objects touched, its state too). */
static void rank_read(gsim *s, const uint32_t *ids, size_t u, uint32_t r)
{
    for (size_t j = 0; j < u; j++)
        for (uint32_t p = 0; p < s->per_page; p++)
            touch(s, (uint32_t)pool_obj(s, ids[j], r, p));
    if (s->c.pools && u > 0)
        touch(s, (uint32_t)state_obj(s, ids[u - 1], r));
}

/* A rank writes the pages after the hit that it lacks, then its state. */
static void rank_write(gsim *s, const uint32_t *ids, size_t n, size_t u, uint32_t r)
{
    for (size_t j = u; j < n; j++)
        for (uint32_t p = 0; p < s->per_page; p++)
            if (!s->in[pool_obj(s, ids[j], r, p)]) {
                if (!budget_take(s, 1))
                    return; /* refused: the rest of this rank's batch could not be a prefix hit */
                add(s, (uint32_t)pool_obj(s, ids[j], r, p), 1);
            }
    if (s->c.pools && n >= 2 && !s->in[state_obj(s, ids[n - 2], r)] && budget_take(s, 1))
        add(s, (uint32_t)state_obj(s, ids[n - 2], r), 1);
}

/* A random order of the ranks (Fisher-Yates). */
static void shuffle(gsim *s)
{
    for (uint32_t r = s->c.ranks; r-- > 1;) {
        uint32_t k = (uint32_t)(next_rand(s) % (r + 1)), tmp = s->order[r];
        s->order[r] = s->order[k];
        s->order[k] = tmp;
    }
}

/* Every rank asks and reads (in some order), then every rank writes (in
 * some order): the engine's prefetch, then its write-back. */
static size_t object_request(gsim *s, const uint32_t *ids, size_t n)
{
    size_t u = n;
    for (uint32_t r = 0; r < s->c.ranks; r++) {
        size_t ur = rank_usable(s, ids, n, r);
        u = ur < u ? ur : u;
    }
    shuffle(s);
    for (uint32_t r = 0; r < s->c.ranks; r++)
        rank_read(s, ids, u, s->order[r]);
    shuffle(s);
    for (uint32_t r = 0; r < s->c.ranks; r++)
        rank_write(s, ids, n, u, s->order[r]);
    return u;
}

/* ---- group level: a page is one unit of all its ranks' objects ---- */

static size_t group_request(gsim *s, const uint32_t *ids, size_t n)
{
    size_t u = 0;
    while (u < n && s->in[ids[u]])
        u++;
    while (s->c.pools && u > 0 && !s->state[ids[u - 1]])
        u--;
    for (size_t j = 0; j < u; j++)
        touch(s, ids[j]);
    for (size_t j = u; j < n; j++)
        if (!s->in[ids[j]]) {
            if (!budget_take(s, (uint64_t)s->c.ranks * s->per_page))
                return u;
            add(s, ids[j], (uint64_t)s->c.ranks * s->per_page);
        }
    if (s->c.pools && n >= 2 && s->in[ids[n - 2]] && !s->state[ids[n - 2]] && budget_take(s, s->c.ranks)) {
        uint32_t x = ids[n - 2];
        bool read = s->in[x] == 2;
        sl_unlink(&s->k, &s->lru, x); /* the page grows by its states: out, then back in whole */
        s->in[x] = 0;
        s->used -= (uint64_t)s->c.ranks * s->per_page;
        s->written -= (uint64_t)s->c.ranks * s->per_page; /* its pool objects are not written again */
        add(s, x, (uint64_t)s->c.ranks * (s->per_page + 1));
        s->state[x] = 1;
        s->in[x] = read ? 2 : 1;
    }
    return u;
}

tr_group_result tr_sim_groups(const tr_trace *t, uint32_t capacity_pages, const tr_group_config *c)
{
    tr_group_result r = { .accesses = t->num_accesses };
    gsim s = { .t = t, .c = *c, .per_page = c->pools ? 2 : 1, .rng = 88172645463325252ull, .lru = sl_empty() };
    if (s.c.ranks == 0)
        s.c.ranks = 1;
    s.state_base = (uint64_t)t->num_ids * s.c.ranks * s.per_page;
    s.cap = (uint64_t)capacity_pages * s.c.ranks * s.per_page;
    uint64_t objects = c->groups ? t->num_ids : s.state_base + (c->pools ? (uint64_t)t->num_ids * s.c.ranks : 0);
    if (objects >= UINT32_MAX || !capacity_pages)
        return r;
    s.k = (sl_links){ malloc(objects * 4 + 4), malloc(objects * 4 + 4) };
    s.in = calloc(objects + 1, 1);
    s.state = calloc((size_t)t->num_ids + 1, 1);
    s.order = malloc(s.c.ranks * sizeof *s.order);
    bool ok = s.k.prev && s.k.next && s.in && s.state && s.order;
    for (uint32_t i = 0; ok && i < s.c.ranks; i++)
        s.order[i] = i;
    for (size_t q = 0; ok && q < t->num_requests; q++) {
        const uint32_t *ids = t->ids + t->start[q];
        size_t n = t->start[q + 1] - t->start[q];
        if (c->budget > 0)
            l3_bucket_fill(&s.bucket, c->budget, depth(&s), t->time[q]); /* full at the first request */
        r.usable_hits += c->groups ? group_request(&s, ids, n) : object_request(&s, ids, n);
    }
    r.written = s.written;
    free(s.k.prev);
    free(s.k.next);
    free(s.in);
    free(s.state);
    free(s.order);
    return r;
}
