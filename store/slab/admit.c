/* The slab store's admission (admit.h). */
#include "admit.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "monotonic.h"

/* A generation's sightings may not be fewer (a tiny store's ghost would
 * forget within a request or two): in pages, each page_objects sightings
 * (every rank names its own shard). A round's floor is the ladder's
 * (ladder.h). */
#define MIN_GENERATION 64u
/* The most objects a page's group is taken to have. */
#define MAX_PAGE_OBJECTS 256u
/* The capacity's estimate moved by more than this share: the shadows are
 * sized again. */
#define RESIZE_SHARE 0.25

void l3_admit_format(l3_admit_state *a, uint32_t mode, uint32_t rung)
{
    L3_ASSERT(rung < L3_LADDER_LEN);
    l3_shm_init_robust(&a->mu);
    a->mode = mode;
    atomic_store(&a->rung, rung);
}

const char *l3_admission_name(uint32_t mode)
{
    return mode == L3_ADMISSION_RUNG ? "rung" : mode == L3_ADMISSION_ADAPTIVE ? "adaptive" : "all";
}

const l3_rung *l3_admit_rung(const l3_slabstore *s)
{
    uint32_t r = atomic_load_explicit(&s->sh->admit.rung, memory_order_relaxed);
    L3_ASSERT(r < L3_LADDER_LEN);
    return &l3_ladder[r < L3_LADDER_LEN ? r : L3_LADDER_LEN - 1];
}

bool l3_admit_active(const l3_slabstore *s)
{
    return s->sh->admit.mode != L3_ADMISSION_ALL;
}

/* The capacity in objects: the slabs' bytes over recent puts' mean slot,
 * at most the index's bound; 0 before any put. */
static uint64_t capacity_estimate(const l3_slabstore *s)
{
    uint64_t slot = atomic_load_explicit(&s->sh->admit.slot_bytes, memory_order_relaxed);
    if (!slot)
        return 0;
    uint64_t cap = (uint64_t)s->geo.num_slabs * (s->geo.slab_size / slot);
    if (cap > s->index.meta->max)
        cap = s->index.meta->max;
    return cap ? cap : 1;
}

/* A key is the shadows' when its hash, mixed apart from the ghost's
 * bits, falls below the sampling bound. */
static bool sampled(const l3_admit_state *a, uint64_t hash)
{
    return l3_mix64(hash ^ 0x5bd1e9955bd1e995ull) < a->sample_below;
}

/* Objects a page's group has, as puts last said (0: not said, one). */
static uint32_t page_objects(const l3_admit_state *a)
{
    return atomic_load_explicit(&a->page_objects, memory_order_relaxed);
}

/* A generation's sightings: `cap`, at least MIN_GENERATION pages'. */
static uint64_t generation(const l3_admit_state *a, uint64_t cap)
{
    uint32_t per_page = page_objects(a);
    uint64_t floor = (uint64_t)MIN_GENERATION * (per_page ? per_page : 1);
    return cap > floor ? cap : floor;
}

/* Size the shadows and the generations for capacity `cap` (under the
 * admission lock): sampled at min(1, L3_SHADOW_ENTRIES / cap), each
 * shadow as big as the store is at that rate. */
static void size_for(l3_slabstore *s, uint64_t cap)
{
    l3_admit_state *a = &s->sh->admit;
    uint32_t scap = l3_shadow_size(cap, &a->sample_below);
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        l3_shadow_init(&s->shadows[k], scap, k);
    memset(&a->score, 0, sizeof a->score);
    uint64_t now = atomic_load(&a->sightings);
    a->cap = cap;
    a->gen_end = now + generation(a, cap);
    a->round_end = now + l3_ladder_round(cap, page_objects(a));
}

/* Every round (under the admission lock): the rung the ladder's rule
 * chooses from the shadows' score, which then decays. */
static void choose_rung(l3_admit_state *a)
{
    uint32_t cur = atomic_load(&a->rung), best = l3_ladder_choose(&a->score, cur);
    if (best != cur) {
        a->switches++;
        atomic_store(&a->rung, best);
    }
}

/* Generations and rounds that fell due (under the admission lock). */
static void advance(l3_slabstore *s)
{
    l3_admit_state *a = &s->sh->admit;
    uint64_t now = atomic_load(&a->sightings), cap = capacity_estimate(s);
    if (!a->cap) {
        if (cap)
            size_for(s, cap);
        return;
    }
    while (now >= a->gen_end) {
        l3_ghost_rotate(&s->ghost);
        atomic_store(&a->exists_seen, 0);
        a->gen_end += generation(a, a->cap);
    }
    if (now < a->round_end)
        return;
    if (a->mode == L3_ADMISSION_ADAPTIVE)
        choose_rung(a);
    a->round_end = now + l3_ladder_round(a->cap, page_objects(a));
    double moved = cap > a->cap ? (double)(cap - a->cap) : (double)(a->cap - cap);
    if (cap && moved > RESIZE_SHARE * (double)a->cap)
        size_for(s, cap); /* the objects' size changed: the shadows start over */
}

uint64_t l3_admit_budget_clock(const l3_slabstore *s)
{
    return s->opt.budget_clock.now ? (uint64_t)(l3_clock_now(s->opt.budget_clock) * 1e9) : l3_now_ns();
}

/* A shadow's share of the write budget, in writes a nanosecond: the
 * budget over the puts' mean slot, at the shadows' sampling rate (0: no
 * budget, or nothing put yet). */
static double shadow_budget(const l3_slabstore *s)
{
    const l3_admit_state *a = &s->sh->admit;
    uint64_t slot = atomic_load_explicit(&a->slot_bytes, memory_order_relaxed);
    if (!s->opt.write_budget || !slot || !a->cap)
        return 0;
    double sampled_share = (double)s->shadows[0].cap / (double)a->cap;
    return l3_shadow_rate((double)s->opt.write_budget / (double)slot, sampled_share);
}

/* The shadows replay one exists call's sampled keys (under the admission
 * lock). */
static void shadows_replay(l3_slabstore *s, const l3_key_id *ids, size_t n)
{
    l3_admit_state *a = &s->sh->admit;
    uint64_t fps_stack[256];
    uint32_t pos_stack[256];
    bool seen_stack[256];
    uint64_t *fps = n <= 256 ? fps_stack : malloc(n * sizeof *fps);
    uint32_t *pos = n <= 256 ? pos_stack : malloc(n * sizeof *pos);
    bool *seen = n <= 256 ? seen_stack : malloc(n * sizeof *seen);
    size_t m = 0;
    for (size_t i = 0; fps && pos && seen && i < n; i++)
        if (sampled(a, ids[i].hash)) {
            fps[m] = ids[i].hash;
            pos[m] = (uint32_t)i;
            seen[m++] = l3_ghost_has(&s->ghost, ids[i].hash);
        }
    bool tails = atomic_load(&a->tails) != 0;
    double per_ns = shadow_budget(s);
    uint64_t now = per_ns > 0 ? l3_admit_budget_clock(s) : 0;
    double hits[L3_LADDER_LEN] = { 0 };
    for (uint32_t k = 0; m && k < L3_LADDER_LEN; k++) {
        l3_shadow_budget(&s->shadows[k], per_ns, now, true);
        hits[k] = (double)l3_shadow_request(&s->shadows[k], fps, pos, seen, m, n, tails);
    }
    /* The objects of a page come in as many calls (each rank names its own
     * shard) and their differences move together: the noise of their sum
     * grows with their count, not its root (ladder.h). */
    if (m)
        l3_ladder_count(&a->score, hits, page_objects(a));
    if (n > 256) {
        free(fps);
        free(pos);
        free(seen);
    }
}

void l3_admit_exists(l3_slabstore *s, const l3_key_id *ids, const bool *found, size_t n)
{
    l3_admit_state *a = &s->sh->admit;
    if (a->mode == L3_ADMISSION_ALL || n == 0)
        return;
    l3_shm_lock(&s->shm, &a->mu);
    if (a->cap && a->mode == L3_ADMISSION_ADAPTIVE)
        shadows_replay(s, ids, n);
    for (size_t i = 0; i < n; i++)
        if (found[i])
            l3_ghost_add(&s->ghost, ids[i].hash);
    atomic_store(&a->exists_seen, 1);
    atomic_fetch_add(&a->sightings, n);
    advance(s);
    l3_shm_unlock(&a->mu);
}

int l3_admit_decide(l3_slabstore *s, uint64_t hash, uint64_t page, bool tail, bool taken, bool *first_sight)
{
    *first_sight = false;
    if (!l3_admit_active(s))
        return L3_VERDICT_MAIN;
    const l3_rung *r = l3_admit_rung(s);
    bool seen = l3_ghost_has(&s->ghost, hash);
    *first_sight = !seen;
    bool full = atomic_load_explicit(&s->sh->admit.full, memory_order_relaxed) != 0;
    if (!l3_rung_admits(r, seen || taken, page, tail, full))
        return L3_VERDICT_REFUSED;
    return seen || r->single ? L3_VERDICT_MAIN : L3_VERDICT_PROBATION;
}

bool l3_admit_seen(const l3_slabstore *s, uint64_t hash)
{
    return l3_admit_active(s) && l3_ghost_has(&s->ghost, hash);
}

void l3_admit_put_seen(l3_slabstore *s, const l3_key_id *ids, size_t n, uint64_t slot_bytes,
                       const l3_put_hints *hints)
{
    l3_admit_state *a = &s->sh->admit;
    if (a->mode == L3_ADMISSION_ALL || n == 0)
        return;
    if (hints && hints->last_is_partial && !atomic_load(&a->tails))
        atomic_store(&a->tails, 1);
    if (hints && hints->groups && hints->group_objects > 1) {
        uint32_t per_page = hints->group_objects < MAX_PAGE_OBJECTS ? hints->group_objects : MAX_PAGE_OBJECTS;
        if (page_objects(a) != per_page)
            atomic_store(&a->page_objects, per_page);
    }
    uint64_t mean = atomic_load_explicit(&a->slot_bytes, memory_order_relaxed);
    atomic_store_explicit(&a->slot_bytes, mean ? mean - mean / 64 + slot_bytes / 64 : slot_bytes,
                          memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        l3_ghost_add(&s->ghost, ids[i].hash);
    if (atomic_load(&a->exists_seen) && a->cap)
        return; /* this generation is counted by exists calls */
    l3_shm_lock(&s->shm, &a->mu);
    atomic_fetch_add(&a->sightings, n);
    advance(s);
    l3_shm_unlock(&a->mu);
}

void l3_admit_note_full(l3_slabstore *s)
{
    if (!atomic_load_explicit(&s->sh->admit.full, memory_order_relaxed))
        atomic_store(&s->sh->admit.full, 1);
}
