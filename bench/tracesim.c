/* The trace and its exact simulators (tracesim.h). */
#include "tracesim.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grow an array to hold `need` elements. */
static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 1024;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

/* Remap an original id densely (the map grows as ids come). */
static bool remap(uint64_t id, uint32_t **map, size_t *map_cap, uint32_t *next, uint32_t *out)
{
    if (id > (1u << 30))
        return false;
    size_t old = *map_cap;
    if (!grow((void **)map, map_cap, (size_t)id + 1, sizeof **map))
        return false;
    for (size_t i = old; i < *map_cap; i++)
        (*map)[i] = UINT32_MAX;
    if ((*map)[id] == UINT32_MAX)
        (*map)[id] = (*next)++;
    *out = (*map)[id];
    return true;
}

/* Append one request's hash_ids (and its timestamp). */
static bool add_request(tr_trace *t, const json_t *req, uint32_t **map, size_t *map_cap, size_t *ids_cap,
                        size_t *start_cap)
{
    const json_t *ids = json_object_get(req, "hash_ids"), *ts = json_object_get(req, "timestamp");
    size_t n = json_array_size(ids), time_cap = *start_cap;
    if (!grow((void **)&t->ids, ids_cap, t->num_accesses + n, sizeof *t->ids) ||
        !grow((void **)&t->time, &time_cap, t->num_requests + 2, sizeof *t->time) ||
        !grow((void **)&t->start, start_cap, t->num_requests + 2, sizeof *t->start))
        return false;
    t->time[t->num_requests] = json_is_number(ts) && json_number_value(ts) >= 0 ? (uint64_t)json_number_value(ts)
                                                                              : t->num_requests;
    t->start[t->num_requests] = t->num_accesses;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(ids, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            !remap((uint64_t)json_integer_value(v), map, map_cap, &t->num_ids, &t->ids[t->num_accesses++]))
            return false;
    }
    if (n > t->longest)
        t->longest = (uint32_t)n;
    t->start[++t->num_requests] = t->num_accesses;
    return true;
}

bool tr_load(const char *path, tr_trace *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return false;
    }
    uint32_t *map = NULL;
    size_t map_cap = 0, ids_cap = 0, start_cap = 0, line_cap = 0, lineno = 0;
    char *line = NULL;
    bool ok = true;
    while (ok && getline(&line, &line_cap, f) > 0) {
        lineno++;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        const json_t *ids = o ? json_object_get(o, "hash_ids") : NULL;
        ok = json_is_array(ids) && add_request(t, o, &map, &map_cap, &ids_cap, &start_cap);
        if (!ok)
            fprintf(stderr, "%s:%zu: not a request with \"hash_ids\" (an array of ids)\n", path, lineno);
        json_decref(o);
    }
    free(line);
    free(map);
    fclose(f);
    if (ok && t->num_requests == 0) {
        fprintf(stderr, "%s: no requests\n", path);
        ok = false;
    }
    if (!ok)
        tr_free(t);
    return ok;
}

void tr_free(tr_trace *t)
{
    free(t->ids);
    free(t->start);
    free(t->time);
    memset(t, 0, sizeof *t);
}

/* ---- exact LRU: a doubly linked list over ids, most recent at head ---- */

typedef struct lru {
    uint32_t *prev, *next;
    bool *in;
    uint32_t head, tail, size, cap;
} lru;

#define NIL UINT32_MAX

static void lru_unlink(lru *c, uint32_t x)
{
    if (c->prev[x] != NIL)
        c->next[c->prev[x]] = c->next[x];
    else
        c->head = c->next[x];
    if (c->next[x] != NIL)
        c->prev[c->next[x]] = c->prev[x];
    else
        c->tail = c->prev[x];
}

static void lru_push(lru *c, uint32_t x)
{
    c->prev[x] = NIL;
    c->next[x] = c->head;
    if (c->head != NIL)
        c->prev[c->head] = x;
    c->head = x;
    if (c->tail == NIL)
        c->tail = x;
}

static void lru_insert(lru *c, uint32_t x)
{
    if (c->size == c->cap) {
        uint32_t v = c->tail;
        lru_unlink(c, v);
        c->in[v] = false;
        c->size--;
    }
    lru_push(c, x);
    c->in[x] = true;
    c->size++;
}

tr_sim_result tr_sim_lru(const tr_trace *t, uint32_t capacity)
{
    tr_sim_result r = { 0 };
    lru c = { .prev = malloc(t->num_ids * sizeof(uint32_t)), .next = malloc(t->num_ids * sizeof(uint32_t)),
              .in = calloc(t->num_ids, 1), .head = NIL, .tail = NIL, .cap = capacity };
    for (size_t q = 0; c.prev && c.next && c.in && capacity && q < t->num_requests; q++) {
        const uint32_t *ids = t->ids + t->start[q];
        size_t n = t->start[q + 1] - t->start[q], i = 0;
        for (; i < n && c.in[ids[i]]; i++) {
            lru_unlink(&c, ids[i]);
            lru_push(&c, ids[i]);
        }
        r.hits += i;
        for (size_t j = i; j < n; j++)
            if (!c.in[ids[j]]) {
                lru_insert(&c, ids[j]);
                r.admitted++;
            }
    }
    r.accesses = t->num_accesses;
    free(c.prev);
    free(c.next);
    free(c.in);
    return r;
}

/* ---- Belady: next use per access, a max-heap of (next use, id) with
 * stale entries skipped ---- */

typedef struct heap_item {
    uint64_t when;
    uint32_t id;
} heap_item;

typedef struct belady {
    heap_item *h;
    size_t n, cap;
    uint64_t *next_use; /* per id, while cached: its next request */
    bool *in;
    uint32_t size, capacity;
    bool bypass;
} belady;

static void heap_push(belady *b, uint64_t when, uint32_t id)
{
    if (!grow((void **)&b->h, &b->cap, b->n + 1, sizeof *b->h))
        abort(); /* (a benchmark tool: out of memory ends it) */
    size_t i = b->n++;
    while (i && b->h[(i - 1) / 2].when < when) {
        b->h[i] = b->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    b->h[i] = (heap_item){ when, id };
}

static void heap_pop(belady *b)
{
    heap_item last = b->h[--b->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= b->n)
            break;
        if (c + 1 < b->n && b->h[c + 1].when > b->h[c].when)
            c++;
        if (b->h[c].when <= last.when)
            break;
        b->h[i] = b->h[c];
        i = c;
    }
    if (b->n)
        b->h[i] = last;
}

/* The cached object used furthest in the future (stale heap tops go). */
static heap_item heap_top(belady *b)
{
    while (b->n && (!b->in[b->h[0].id] || b->next_use[b->h[0].id] != b->h[0].when))
        heap_pop(b);
    return b->h[0];
}

/* Each access's next use (UINT64_MAX: none): the next request containing
 * the same id, shifted left 20 bits; with `ties`, the id's place in that
 * request in the low bits (so a deeper block counts as used later). */
static uint64_t *next_uses(const tr_trace *t, bool ties)
{
    uint64_t *next = malloc(t->num_accesses * sizeof *next), *seen = malloc(t->num_ids * sizeof *seen);
    for (uint32_t i = 0; next && seen && i < t->num_ids; i++)
        seen[i] = UINT64_MAX;
    for (size_t q = t->num_requests; next && seen && q-- > 0;)
        for (size_t a = t->start[q]; a < t->start[q + 1]; a++) {
            size_t pos = a - t->start[q];
            next[a] = seen[t->ids[a]];
            seen[t->ids[a]] = ((uint64_t)q << 20) | (ties ? (pos < 0xfffff ? pos : 0xfffff) : 0);
        }
    free(seen);
    return next;
}

/* Admit `id` (next use `when`) into a full or not full cache. */
static bool belady_admit(belady *b, uint32_t id, uint64_t when)
{
    if (b->size == b->capacity) {
        heap_item top = heap_top(b);
        if (b->bypass && top.when <= when)
            return false; /* the newcomer is used last: bypass it */
        b->in[top.id] = false;
        b->size--;
    }
    b->in[id] = true;
    b->next_use[id] = when;
    b->size++;
    heap_push(b, when, id);
    return true;
}

tr_sim_result tr_sim_belady(const tr_trace *t, uint32_t capacity)
{
    return tr_sim_belady_ex(t, capacity, true, false);
}

tr_sim_result tr_sim_belady_ex(const tr_trace *t, uint32_t capacity, bool bypass, bool chain_ties)
{
    tr_sim_result r = { 0 };
    uint64_t *next = next_uses(t, chain_ties);
    belady b = { .next_use = malloc(t->num_ids * sizeof(uint64_t)), .in = calloc(t->num_ids, 1),
                 .capacity = capacity, .bypass = bypass };
    for (size_t q = 0; next && b.next_use && b.in && capacity && q < t->num_requests; q++) {
        size_t s = t->start[q], n = t->start[q + 1] - s, i = 0;
        while (i < n && b.in[t->ids[s + i]])
            i++;
        r.hits += i;
        for (size_t j = 0; j < n; j++) {
            uint32_t id = t->ids[s + j];
            if (b.in[id]) {
                b.next_use[id] = next[s + j];
                heap_push(&b, next[s + j], id);
            } else if (j >= i) {
                r.admitted += belady_admit(&b, id, next[s + j]);
            }
        }
    }
    r.accesses = t->num_accesses;
    free(next);
    free(b.h);
    free(b.next_use);
    free(b.in);
    return r;
}

/* ---- judging a hit count: G, targets, the trace's capacities ---- */

bool tr_gap_share(uint64_t hits, uint64_t lru_hits, uint64_t min_hits, double *g)
{
    *g = 0;
    if (min_hits <= lru_hits)
        return false;
    *g = ((double)hits - (double)lru_hits) / (double)(min_hits - lru_hits); /* (signed: hits may be below) */
    return true;
}

bool tr_target_met(const tr_target *target, uint64_t hits, uint64_t lru_hits, uint64_t min_hits, double writes)
{
    double ratio = target->ratio > 0 ? target->ratio : 1.0, g;
    bool ratio_met = lru_hits == 0 || (double)hits / (double)lru_hits >= ratio;
    bool met = writes <= 1.0;
    if (target->ratio > 0)
        met = met && ratio_met;
    if (!isnan(target->g))
        met = met && (tr_gap_share(hits, lru_hits, min_hits, &g) ? g >= target->g : ratio_met);
    return met;
}

/* The least capacity in [1, num_ids] whose hits (MIN's, or with `by_lru` the
 * LRU's) reach num/den of `infinite` (at num_ids every repeat hits). */
static uint32_t bisect_capacity(const tr_trace *t, bool by_lru, uint64_t num, uint64_t den, uint64_t infinite)
{
    uint32_t lo = 1, hi = t->num_ids;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        tr_sim_result r = by_lru ? tr_sim_lru(t, mid) : tr_sim_belady(t, mid);
        if (r.hits * den >= infinite * num)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

tr_capacities tr_find_capacities(const tr_trace *t)
{
    if (t->num_ids == 0) /* (requests of no blocks: any capacity holds everything) */
        return (tr_capacities){ .small = 1, .first_middle = 1, .min_all = 1, .second_middle = 1, .large = 1 };
    tr_capacities c = { .infinite = tr_sim_lru(t, t->num_ids).hits };
    c.small = bisect_capacity(t, false, 1, 2, c.infinite);
    c.first_middle = bisect_capacity(t, false, 96, 100, c.infinite);
    c.min_all = bisect_capacity(t, false, 1, 1, c.infinite);
    uint64_t second = ((uint64_t)c.min_all * 5 + 2) / 4;
    c.second_middle = second < UINT32_MAX ? (uint32_t)second : UINT32_MAX - 1;
    c.large = bisect_capacity(t, true, 97, 100, c.infinite);
    return c;
}

uint32_t tr_round2(uint32_t n)
{
    uint64_t unit = 1;
    while (n / unit >= 100)
        unit *= 10;
    uint64_t r = (n + unit / 2) / unit * unit;
    return r < UINT32_MAX ? (uint32_t)r : n;
}
