/* Admission's rooms over plain memory, no disk (docs/admission.md): the
 * token bucket (bucket.c), the ladder and its rule (ladder.c), the
 * ghost's Bloom filters (ghost.c), the ladder's shadow caches (shadow.c),
 * the group table (groups.c), and admission itself (admit.c) over a
 * store's state in memory (slab_mem.c): verdicts by rung and ghost,
 * generations, the shadows' replay and the rung they choose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"
#include "bucket.h"
#include "ghost.h"
#include "groups.h"
#include "hash.h"
#include "ladder.h"
#include "shadow.h"
#include "slab_mem.h"

/* ---- the token bucket ---- */

/* A bucket starts full, fills at its rate to its depth, never moves back
 * with a clock behind it, and declines what it does not hold. */
static void a_bucket_fills_by_its_clock_to_its_depth(void **state)
{
    (void)state;
    l3_bucket b = { 0 };
    l3_bucket_fill(&b, 2.0, 100, 1000); /* never filled: full */
    assert_true(b.tokens == 100 && b.at == 1000);
    assert_true(l3_bucket_take(&b, 100, 70, false));
    assert_false(l3_bucket_take(&b, 100, 31, false)); /* 30 left */
    assert_true(b.tokens == 30);
    l3_bucket_fill(&b, 2.0, 100, 1010); /* 10 units at 2 a unit */
    assert_true(b.tokens == 50 && b.at == 1010);
    l3_bucket_fill(&b, 2.0, 100, 900); /* a clock behind: nothing, and not kept */
    assert_true(b.tokens == 50 && b.at == 1010);
    l3_bucket_fill(&b, 2.0, 100, 2000); /* never past its depth */
    assert_true(b.tokens == 100);
    l3_bucket_fill(&b, 2.0, 40, 2000); /* a shallower bucket holds less */
    assert_true(b.tokens == 40);
}

/* The graceful gate: a first sighting needs the bucket half full, a key
 * seen before only its tokens. */
static void a_first_sighting_needs_the_bucket_half_full(void **state)
{
    (void)state;
    l3_bucket b = { 0 };
    l3_bucket_fill(&b, 1.0, 10, 0);
    for (int i = 0; i < 6; i++)
        assert_true(l3_bucket_take(&b, 10, 1, true)); /* 10 .. 5 left before each: half full at least */
    assert_false(l3_bucket_take(&b, 10, 1, true)); /* 4 left */
    assert_true(l3_bucket_take(&b, 10, 4, false)); /* seen: its tokens alone */
    assert_true(b.tokens == 0);
    assert_false(l3_bucket_take(&b, 10, 1, false));
}

/* ---- the ladder and its rule ---- */

static void the_ladder_runs_from_second_sight_to_the_object_lru(void **state)
{
    (void)state;
    const l3_rung *strict = &l3_ladder[0], *lru = &l3_ladder[L3_LADDER_LEN - 1], *two = &l3_ladder[1];
    assert_false(l3_rung_admits(strict, false, 0, false, true)); /* full: a first sighting waits */
    assert_true(l3_rung_admits(strict, false, 0, false, false)); /* room left: anything */
    assert_true(l3_rung_admits(strict, true, 99, false, true));  /* seen: any depth */
    assert_false(l3_rung_admits(strict, true, 0, true, false));  /* a partial tail, never */
    assert_true(l3_rung_admits(two, false, 1, false, true) && !l3_rung_admits(two, false, 2, false, true));
    assert_true(l3_rung_admits(lru, false, 1000, true, true)); /* everything */
    /* docs/admission.md's table: depth, probation's share, one log, tails. */
    static const l3_rung spec[L3_LADDER_LEN] = {
        { 0, 0.25, false, false }, { 2, 0.25, false, false },         { 8, 0.35, false, false },
        { 16, 0.35, false, false }, { 32, 0.5, false, false },        { UINT32_MAX, 1.0, true, false },
        { UINT32_MAX, 1.0, true, true },
    };
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++) {
        assert_int_equal(l3_ladder[k].depth, spec[k].depth);
        assert_true(l3_ladder[k].probation == spec[k].probation);
        assert_true(l3_ladder[k].single == spec[k].single && l3_ladder[k].tail == spec[k].tail);
    }
}

/* A request's hits go into each window; the squared difference of each
 * pair into its spread, once per object of a page. */
static void a_request_counts_hits_and_the_noise_of_their_differences(void **state)
{
    (void)state;
    l3_ladder_score sc;
    memset(&sc, 0, sizeof sc);
    double hits[L3_LADDER_LEN] = { 0, 1, 2, 3, 4, 5, 6 };
    l3_ladder_count(&sc, hits, 0);
    l3_ladder_count(&sc, hits, 4);
    assert_true(sc.window[6] == 12 && sc.window[0] == 0);
    assert_true(sc.spread[6][0] == 36 + 4 * 36 && sc.spread[0][6] == sc.spread[6][0]);
    assert_true(sc.spread[3][3] == 0 && sc.spread[2][3] == 1 + 4);
}

/* The rung in force holds unless another beats it by 0.5% of its hits
 * (however far it is on the ladder: issue 47, a distant rung that wins
 * must be reachable) and by more than half the noise; of those that do,
 * the most hits wins; then the score keeps 0.75 of itself. */
static void a_round_takes_the_best_rung_past_the_hysteresis_and_the_noise(void **state)
{
    (void)state;
    l3_ladder_score sc;
    memset(&sc, 0, sizeof sc);
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        sc.window[k] = 1000;
    sc.window[5] = 1004; /* needs more than 5 */
    sc.window[3] = 1005; /* not more */
    sc.window[0] = 1016; /* six rungs away: more than 5 is enough */
    assert_false(l3_ladder_beats(&sc, 5, 6) || l3_ladder_beats(&sc, 3, 6) || l3_ladder_beats(&sc, 6, 6));
    assert_true(l3_ladder_beats(&sc, 0, 6));
    sc.spread[0][6] = 32 * 32; /* half the noise: 16, not under the lead */
    assert_false(l3_ladder_beats(&sc, 0, 6));
    assert_int_equal(l3_ladder_choose(&sc, 6), 6);
    assert_true(sc.window[0] == 1016 * 0.75 && sc.spread[0][6] == 32 * 32 * 0.75);
    memset(&sc, 0, sizeof sc);
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        sc.window[k] = 1000;
    sc.window[4] = 1020;
    sc.window[2] = 1040;
    sc.window[1] = 1100; /* the most, past the hysteresis (5) */
    sc.spread[1][6] = 300 * 300; /* ... but not past half the noise (150) */
    assert_int_equal(l3_ladder_choose(&sc, 6), 2); /* 2 beats 6 (40 > 5) and hits more than 4 */
}

/* A round is the capacity's sightings, at least 4096 pages' of them. */
static void a_round_is_the_capacity_or_4096_pages(void **state)
{
    (void)state;
    assert_int_equal(l3_ladder_round(1000, 0), L3_ROUND_PAGES);
    assert_int_equal(l3_ladder_round(1000, 4), 4 * L3_ROUND_PAGES);
    assert_int_equal(l3_ladder_round(50000, 1), 50000);
    assert_int_equal(l3_ladder_round(50000, 16), 16 * L3_ROUND_PAGES);
}

/* The shadows sample min(1, 4096 / capacity) of the keys and hold the
 * store's capacity at that rate; their budget is the store's at that rate. */
static void the_shadows_are_sized_and_budgeted_by_their_sampling(void **state)
{
    (void)state;
    uint64_t below;
    assert_int_equal(l3_shadow_size(1000, &below), 1000);
    assert_true(below == UINT64_MAX);
    assert_int_equal(l3_shadow_size(1, &below), 1);
    assert_int_equal(l3_shadow_size(50000, &below), L3_SHADOW_ENTRIES);
    assert_true(below > UINT64_MAX / 50000 * 4000 && below < UINT64_MAX / 50000 * 4200); /* 4096 / 50000 */
    assert_true(l3_shadow_rate(1000, 0.5) == 500 * 1e-9);
}

/* ---- the ghost ---- */

typedef struct ghost_mem {
    l3_ghost_head head;
    l3_ghost g;
} ghost_mem;

static ghost_mem *ghost_new(uint64_t keys)
{
    ghost_mem *m = calloc(1, sizeof *m);
    m->g = (l3_ghost){ .head = &m->head, .words = calloc(1, l3_ghost_bytes(keys)) };
    l3_ghost_format(&m->head, l3_ghost_words_for(keys));
    return m;
}

static void ghost_free(ghost_mem *m)
{
    free((void *)m->g.words);
    free(m);
}

static uint64_t h(uint64_t i) { return l3_mix64(i + 1) | 1; }

static void the_ghost_remembers_four_generations_and_forgets_the_fifth(void **state)
{
    (void)state;
    ghost_mem *m = ghost_new(1000);
    l3_ghost_add(&m->g, h(1));
    assert_true(l3_ghost_has(&m->g, h(1)));
    assert_false(l3_ghost_has(&m->g, h(2)));
    for (int r = 0; r < 4; r++) {
        l3_ghost_rotate(&m->g);
        assert_true(l3_ghost_has(&m->g, h(1))); /* seen within the window */
    }
    l3_ghost_rotate(&m->g); /* the fifth rotation clears the filter it went into */
    assert_false(l3_ghost_has(&m->g, h(1)));
    ghost_free(m);
}

static void a_ghost_filled_to_its_size_has_about_one_percent_false_positives(void **state)
{
    (void)state;
    ghost_mem *m = ghost_new(10000);
    for (uint64_t i = 0; i < 10000; i++)
        l3_ghost_add(&m->g, h(i));
    for (uint64_t i = 0; i < 10000; i++)
        assert_true(l3_ghost_has(&m->g, h(i))); /* never a false negative */
    uint64_t fp = 0;
    for (uint64_t i = 100000; i < 200000; i++)
        fp += l3_ghost_has(&m->g, h(i));
    assert_true(fp < 2000); /* under 2% at 10 bits and 7 hashes a key (about 0.8%) */
    assert_true(fp > 0);    /* a Bloom filter, not a set */
    ghost_free(m);
}

/* ---- the shadows ---- */

static size_t replay(l3_shadow *c, const uint64_t *keys, size_t n, const bool *seen)
{
    uint32_t pos[64];
    for (size_t i = 0; i < n; i++)
        pos[i] = (uint32_t)i;
    return l3_shadow_request(c, keys, pos, seen, n, n, false);
}

static void the_top_rung_is_an_object_lru(void **state)
{
    (void)state;
    l3_shadow *c = malloc(sizeof *c);
    l3_shadow_init(c, 3, L3_LADDER_LEN - 1);
    bool no[8] = { 0 };
    uint64_t abc[] = { 11, 12, 13 }, ab[] = { 11, 12 }, d[] = { 14 };
    assert_int_equal(replay(c, abc, 3, no), 0);
    assert_int_equal(c->written, 3);
    assert_int_equal(replay(c, ab, 2, no), 2); /* a, b now most recent; c least */
    assert_int_equal(replay(c, d, 1, no), 0);  /* evicts c */
    assert_false(l3_shadow_has(c, 13));
    assert_true(l3_shadow_has(c, 11) && l3_shadow_has(c, 12) && l3_shadow_has(c, 14));
    assert_int_equal(c->hits, 2);
    free(c);
}

static void rung_zero_writes_only_what_was_seen_once_the_cache_is_full(void **state)
{
    (void)state;
    l3_shadow *c = malloc(sizeof *c);
    l3_shadow_init(c, 2, 0);
    bool no[8] = { 0 }, yes[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    uint64_t ab[] = { 1, 2 }, cd[] = { 3, 4 };
    replay(c, ab, 2, no); /* not full: first sightings go to probation */
    assert_int_equal(c->size[0], 2);
    replay(c, cd, 2, no); /* full: first sightings refused at depth 0 */
    assert_false(l3_shadow_has(c, 3));
    replay(c, cd, 2, yes); /* seen before: admitted to main, probation gives way */
    assert_true(l3_shadow_has(c, 3) && l3_shadow_has(c, 4));
    assert_int_equal(c->size[1], 2);
    free(c);
}

static void a_refused_key_refuses_the_rest_of_its_request(void **state)
{
    (void)state;
    l3_shadow *c = malloc(sizeof *c);
    l3_shadow_init(c, 4, 1); /* rung 1: two first sightings a batch */
    bool no[8] = { 0 }, seen_last[4] = { 0, 0, 0, 1 };
    uint64_t fill[] = { 1, 2, 3, 4 }, req[] = { 5, 6, 7, 8 };
    replay(c, fill, 4, no);
    assert_int_equal(c->size[0] + c->size[1], 4);
    replay(c, req, 4, seen_last); /* 5 and 6 admitted, 7 refused: 8 (seen) is not reached */
    assert_true(l3_shadow_has(c, 5) && l3_shadow_has(c, 6));
    assert_false(l3_shadow_has(c, 7) || l3_shadow_has(c, 8));
    free(c);
}

/* Under a write budget a shadow writes as the store does: a token a
 * write, a first sighting only while the bucket is half full, refilled
 * by the clock it is given. */
static void a_shadow_writes_within_its_budget(void **state)
{
    (void)state;
    l3_shadow *c = malloc(sizeof *c);
    l3_shadow_init(c, 64, L3_LADDER_LEN - 1);
    l3_shadow_budget(c, 1e-9, 1000000000ull, true); /* one write a second: a bucket of 10, full */
    bool no[16] = { 0 }, yes[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
    uint64_t a[16], b[16], d[16];
    for (int i = 0; i < 16; i++) {
        a[i] = 100 + (uint64_t)i;
        b[i] = 200 + (uint64_t)i;
        d[i] = 300 + (uint64_t)i;
    }
    replay(c, a, 16, no); /* first sightings: while at least 5 tokens are left, 6 of them */
    assert_int_equal(c->written, 6);
    assert_true(l3_shadow_has(c, 105));
    assert_false(l3_shadow_has(c, 106));
    replay(c, b, 16, yes); /* seen before: down to the last token */
    assert_int_equal(c->written, 10);
    replay(c, d, 16, yes);
    assert_int_equal(c->written, 10); /* the clock has not moved */
    l3_shadow_budget(c, 1e-9, 4000000000ull, true); /* three seconds later: three more */
    replay(c, d, 16, yes);
    assert_int_equal(c->written, 13);
    l3_shadow_budget(c, 0, 5000000000ull, true); /* no budget: everything */
    replay(c, d, 16, yes);
    assert_int_equal(c->written, 26);
    /* A sampled shadow's share of a small budget is a fraction of a write in
     * 10 s: its bucket holds 8 writes all the same (the same rate). */
    l3_shadow_init(c, 64, L3_LADDER_LEN - 1);
    l3_shadow_budget(c, 1e-11, 1000000000ull, true);
    replay(c, b, 16, yes);
    assert_int_equal(c->written, 8);
    l3_shadow_budget(c, 1e-11, 1000000000ull - 500000000ull, true); /* a clock behind: no refill, none back */
    assert_true(c->bucket.at == 1000000000ull);
    free(c);
}

static void probation_gives_way_while_it_holds_its_share(void **state)
{
    (void)state;
    l3_shadow *c = malloc(sizeof *c);
    l3_shadow_init(c, 8, 4); /* rung 4: probation up to half */
    bool no[8] = { 0 }, yes[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
    uint64_t seen[] = { 1, 2, 3, 4, 5, 6 }, fresh[] = { 11, 12, 13, 14 };
    replay(c, seen, 6, yes); /* six in main */
    replay(c, fresh, 2, no); /* two in probation: full */
    replay(c, fresh + 2, 2, no); /* probation (2) under its share (4): main's oldest go */
    assert_false(l3_shadow_has(c, 1) || l3_shadow_has(c, 2));
    assert_int_equal(c->size[0], 4);
    uint64_t more[] = { 21 };
    replay(c, more, 1, no); /* probation at its share: its own oldest goes */
    assert_false(l3_shadow_has(c, 11));
    assert_true(l3_shadow_has(c, 3));
    free(c);
}

static void a_shadow_survives_churn_through_its_table(void **state)
{
    (void)state;
    l3_shadow *c = malloc(sizeof *c);
    l3_shadow_init(c, L3_SHADOW_ENTRIES, L3_LADDER_LEN - 1);
    bool no[64] = { 0 };
    uint64_t keys[64];
    for (uint64_t r = 0; r < 2000; r++) {
        for (int i = 0; i < 64; i++)
            keys[i] = h(r * 64 + (uint64_t)i);
        replay(c, keys, 64, no);
    }
    /* The last L3_SHADOW_ENTRIES keys are there, the ones before not. */
    for (uint64_t i = 2000 * 64 - L3_SHADOW_ENTRIES; i < 2000 * 64; i++)
        assert_true(l3_shadow_has(c, h(i)));
    assert_false(l3_shadow_has(c, h(2000 * 64 - L3_SHADOW_ENTRIES - 1)));
    assert_int_equal(c->size[0] + c->size[1], L3_SHADOW_ENTRIES);
    free(c);
}

/* ---- the group table ---- */

static void groups_count_members_and_go_when_idle(void **state)
{
    (void)state;
    l3_groups_meta meta;
    l3_groups_format(&meta, 1024);
    l3_groups g = { &meta, calloc(1024, sizeof(l3_group)) };
    const uint64_t t0 = 1000000000000ull; /* (CLOCK_MONOTONIC ns, some time after boot) */
    l3_group *e = l3_groups_get(&g, 77, t0);
    assert_non_null(e);
    e->members = 2;
    assert_ptr_equal(l3_groups_find(&g, 77), e);
    l3_groups_release(&g, 77, t0);
    assert_non_null(l3_groups_find(&g, 77)); /* one member left */
    l3_groups_release(&g, 77, t0);
    assert_null(l3_groups_find(&g, 77));
    assert_int_equal(meta.count, 0);
    /* A decision binds for L3_GROUP_DECISION_MS at most, and outlives the
     * members (a group of unknown size: followers not counted down). */
    e = l3_groups_get(&g, 78, t0);
    e->members = 1;
    l3_group_decide(e, L3_VERDICT_REFUSED, t0, 0);
    assert_int_equal(l3_group_decision(e, t0 + 1999000000ull), 1 + L3_VERDICT_REFUSED);
    l3_groups_release(&g, 78, t0 + 1000000000ull);
    assert_non_null(e = l3_groups_find(&g, 78));
    assert_false(l3_group_idle(&g, e, t0 + 1999000000ull));
    assert_int_equal(l3_group_decision(e, t0 + 2000000000ull), 0);
    assert_true(l3_group_idle(&g, e, t0 + 2000000000ull));
    /* A lease (whole units of 8 s, at or after the time asked) holds an
     * entry without members. */
    l3_groups_lease(&g, e, t0 + 60000000000ull, t0);
    assert_false(l3_group_idle(&g, e, t0 + 59000000000ull));
    assert_false(l3_group_idle(&g, e, t0 + 63999999999ull)); /* (1,064 s: 133 units) */
    assert_true(l3_group_idle(&g, e, t0 + 64000000000ull));
    free(g.table);
}

/* A decision is for one round of the page's puts: each of the group's
 * other objects follows it once, and the page's next put (a later
 * request, seen again) is decided afresh, however soon it comes. */
static void a_decision_is_followed_once_by_each_other_object(void **state)
{
    (void)state;
    l3_groups_meta meta;
    l3_groups_format(&meta, 1024);
    l3_groups g = { &meta, calloc(1024, sizeof(l3_group)) };
    const uint64_t t0 = 1000000000000ull;
    l3_group *e = l3_groups_get(&g, 90, t0);
    l3_group_decide(e, L3_VERDICT_REFUSED, t0, 4); /* 4 ranks: three follow */
    for (int k = 0; k < 3; k++) {
        assert_int_equal(l3_group_decision(e, t0 + 1000000ull), 1 + L3_VERDICT_REFUSED);
        l3_group_follow(e);
    }
    assert_int_equal(l3_group_decision(e, t0 + 2000000ull), 0); /* 2 ms later: decided afresh */
    l3_group_decide(e, L3_VERDICT_MAIN, t0, 1); /* a group of one: nothing to follow */
    assert_int_equal(l3_group_decision(e, t0), 0);
    l3_group_decide(e, L3_VERDICT_PROBATION, t0, 1000); /* more than 255: capped, still bound */
    assert_int_equal(l3_group_decision(e, t0 + 1000000ull), 1 + L3_VERDICT_PROBATION);
    free(g.table);
}

static void a_full_table_sweeps_idle_entries_then_refuses(void **state)
{
    (void)state;
    l3_groups_meta meta;
    l3_groups_format(&meta, 1024);
    l3_groups g = { &meta, calloc(1024, sizeof(l3_group)) };
    const uint64_t now = 1000000000000ull;
    uint32_t tag = 1;
    for (; meta.count < 896; tag++) /* 7/8 of 1024: full */
        l3_groups_get(&g, tag, now)->members = tag % 2; /* half of them idle */
    l3_group *e = l3_groups_get(&g, tag++, now); /* sweeps the idle half */
    assert_non_null(e);
    e->members = 1;
    assert_int_equal(meta.count, 449);
    for (uint32_t k = 1; k < 896; k += 2)
        assert_non_null(l3_groups_find(&g, k)); /* the busy ones all stay findable */
    for (; meta.count < 896; tag++)
        l3_groups_get(&g, tag, now)->members = 1;
    assert_null(l3_groups_get(&g, tag, now)); /* nothing idle: untracked */
    /* After a sweep that freed nothing, the next 1024 / 16 refusals do not
     * sweep (each would read the whole table): an entry gone idle
     * meanwhile is swept only after them. */
    l3_groups_find(&g, 1)->members = 0;
    for (int k = 0; k < 1024 / 16; k++)
        assert_null(l3_groups_get(&g, tag, now));
    assert_non_null(l3_groups_find(&g, 1));
    assert_non_null(l3_groups_get(&g, tag, now)); /* swept: entry 1 gave its place */
    assert_null(l3_groups_find(&g, 1));
    l3_groups_find(&g, tag)->members = 1;
    /* That insert found room (after its sweep): the next fill sweeps at once. */
    assert_int_equal(meta.skip, 0);
    l3_groups_find(&g, 5)->members = 0;
    assert_non_null(l3_groups_get(&g, tag + 1, now)); /* swept: entry 5 gave its place */
    assert_null(l3_groups_find(&g, 5));
    free(g.table);
}

/* The table is sized for the groups a store can hold, no more: at a load
 * of 7/8, a store of 3,000 objects full of groups of two (1,500 of them)
 * fits, and a group past them goes untracked (docs/operations.md: four
 * 16-byte entries for every seven objects, 9.2 bytes an object). */
static void the_table_holds_a_store_full_of_pairs(void **state)
{
    (void)state;
    uint64_t slots = l3_groups_slots_for(3000);
    assert_int_equal(slots, 1715);
    assert_true(slots * sizeof(l3_group) <= 3000 * 9.2);
    assert_int_equal(l3_groups_slots_for(100), 1024); /* the floor */
    l3_groups_meta meta;
    l3_groups_format(&meta, slots);
    l3_groups g = { &meta, calloc(slots, sizeof(l3_group)) };
    const uint64_t now = 1000000000000ull;
    for (uint32_t tag = 1; tag <= 1500; tag++) {
        l3_group *e = l3_groups_get(&g, tag, now);
        assert_non_null(e);
        e->members = 2;
    }
    for (uint32_t tag = 1; tag <= 1500; tag++)
        assert_int_equal(l3_groups_find(&g, tag)->members, 2);
    assert_null(l3_groups_get(&g, 1501, now)); /* nothing idle to sweep: untracked */
    free(g.table);
}

static void a_verdict_binds_the_members_older_than_it(void **state)
{
    (void)state;
    l3_groups_meta meta = { 0 };
    l3_groups g = { &meta, NULL }; /* (a table of no slots: its leases' base) */
    l3_group e = { .tag = 5 };
    l3_group_set_dead(&e, 100);
    assert_true(l3_group_dead_for(&e, 99));
    assert_false(l3_group_dead_for(&e, 100)); /* written after the death: a new page */
    assert_false(l3_group_kept_for(&g, &e, 99, 0));
    l3_group_set_kept(&e, 200);
    l3_group_set_read(&e, 300);
    assert_true(l3_group_dead_for(&e, 99)); /* dead stays dead */
    e.verdict = 0;
    l3_group_set_kept(&e, 100);
    assert_true(l3_group_kept_for(&g, &e, 99, 0));
    assert_false(l3_group_kept_for(&g, &e, 101, 0));
    assert_int_equal(l3_group_read_after(&e, 99), 0); /* kept, not read */
    /* A read: members written before it count as read at it, by the
     * policy's rule (not kept outright), later ones not at all. */
    l3_group_set_read(&e, 150);
    assert_false(l3_group_kept_for(&g, &e, 99, 0));
    assert_int_equal(l3_group_read_after(&e, 99), 150);
    assert_int_equal(l3_group_read_after(&e, 150), 0);
    l3_group_set_read(&e, 120); /* an older read changes nothing */
    assert_int_equal(l3_group_read_after(&e, 99), 150);
    l3_group_set_kept(&e, 160);
    assert_true(l3_group_kept_for(&g, &e, 155, 0));
    e.verdict = 0;
    l3_group_set_kept(&e, 100);
    l3_groups_lease(&g, &e, 48000000000ull, 0); /* 48 s: six units */
    assert_true(l3_group_kept_for(&g, &e, 101, 47999999999ull)); /* leased: every member stays */
    assert_false(l3_group_kept_for(&g, &e, 101, 48000000000ull));
    assert_false(l3_group_dead_for(NULL, 1) || l3_group_kept_for(&g, NULL, 1, 0));
    assert_int_not_equal(l3_group_tag(0x1234), 0);
    assert_int_not_equal(l3_group_tag(1), l3_group_tag(2));
}

/* An entry keeps a verdict's sequence number in 38 bits: an object's is
 * compared with it modulo 2^38, so that a verdict past a multiple of
 * 2^38 binds the members written just before it, and a read verdict
 * gives back the full number. */
static void a_verdict_binds_across_its_numbers_wrap(void **state)
{
    (void)state;
    const uint64_t wrap = 1ull << L3_GROUP_SEQ_BITS, base = 5 * wrap;
    l3_groups_meta meta = { 0 };
    l3_groups g = { &meta, NULL };
    l3_group e = { .tag = 5 };
    l3_group_set_dead(&e, base + 3);
    assert_true(l3_group_dead_for(&e, base - 7)); /* written before the wrap, dead after it */
    assert_true(l3_group_dead_for(&e, base + 2));
    assert_false(l3_group_dead_for(&e, base + 3));
    assert_false(l3_group_dead_for(&e, base + 1000));
    e.verdict = 0;
    l3_group_set_read(&e, base - 2); /* a read from no verdict */
    l3_group_set_read(&e, base + 9); /* a later read, across the wrap */
    assert_int_equal(l3_group_read_after(&e, base - 100), base + 9);
    assert_int_equal(l3_group_read_after(&e, base + 9), 0);
    l3_group_set_read(&e, base - 1); /* an older one changes nothing */
    assert_int_equal(l3_group_read_after(&e, base), base + 9);
    e.verdict = 0;
    l3_group_set_kept(&e, base); /* low bits 0: still a verdict, not none */
    assert_true(e.verdict != 0);
    assert_true(l3_group_kept_for(&g, &e, base - 5, 0));
    assert_false(l3_group_kept_for(&g, &e, base + 1, 0));
    /* The verdict nearest an object is never before the first number. */
    e.verdict = 0;
    l3_group_set_dead(&e, wrap - 1);
    assert_int_equal(l3_group_seq_near(&e, 3), 0);
    assert_false(l3_group_dead_for(&e, 3));
}

/* A lease is kept in 16 bits of 8-second units after the table's base:
 * it holds for as long as asked (three days at most) at any time, the
 * base moving up (every lease with it) when a new one would not fit, and
 * a shorter lease does not shorten a longer one. */
static void a_lease_holds_as_its_table_s_base_moves(void **state)
{
    (void)state;
    const uint64_t unit = L3_GROUP_LEASE_UNIT_NS;
    l3_groups_meta meta;
    l3_groups_format(&meta, 1024);
    l3_groups g = { &meta, calloc(1024, sizeof(l3_group)) };
    uint64_t now = 100000 * unit; /* past what 16 bits of units from 0 hold */
    l3_group *a = l3_groups_get(&g, 1, now), *b = l3_groups_get(&g, 2, now);
    assert_false(l3_groups_leased(&g, a, now));
    l3_groups_lease(&g, a, now + 5 * unit, now);
    assert_true(meta.lease_base > 0); /* (moved up to hold it) */
    assert_true(l3_groups_leased(&g, a, now + 5 * unit - 1));
    assert_false(l3_groups_leased(&g, a, now + 5 * unit));
    l3_groups_lease(&g, a, now + 2 * unit, now); /* shorter: kept */
    assert_true(l3_groups_leased(&g, a, now + 4 * unit));
    l3_groups_lease(&g, b, now + 1000000 * unit, now); /* cut to L3_GROUP_LEASE_MOST units */
    assert_true(l3_groups_leased(&g, b, now + (L3_GROUP_LEASE_MOST - 1) * unit));
    assert_false(l3_groups_leased(&g, b, now + L3_GROUP_LEASE_MOST * unit));
    /* Long after: a's lease is over for good (no wrap brings it back), b's
     * kept as the base moves for a new lease. */
    uint64_t later = now + 40000 * unit;
    for (uint64_t t = now; t < now + 400000 * unit; t += 1000 * unit)
        assert_false(l3_groups_leased(&g, a, t + 5 * unit));
    uint64_t base = meta.lease_base;
    l3_groups_lease(&g, a, later + 3 * unit, now + 30000 * unit);
    assert_int_equal(meta.lease_base, base); /* (fits: the base stays) */
    l3_groups_lease(&g, a, later + 40000 * unit, later);
    assert_true(meta.lease_base > base); /* moved up */
    assert_false(l3_groups_leased(&g, b, later)); /* (ended before the new base: none) */
    assert_int_equal(b->lease, 0);
    assert_true(l3_groups_leased(&g, a, later + 32767 * unit)); /* (cut to the most: 32,768 units from later) */
    assert_false(l3_groups_leased(&g, a, later + 32768 * unit));
    l3_groups_lease(&g, b, now + 500000 * unit, now + 499990 * unit); /* b's ended: the base moves past it */
    assert_true(l3_groups_leased(&g, b, now + 499999 * unit));
    assert_false(l3_groups_leased(&g, a, now + 499999 * unit));
    free(g.table);
}

/* A group counts up to L3_GROUP_MEMBERS_MAX members; one past them is
 * refused (put untracked), and the count never wraps to 0. */
static void a_group_counts_up_to_its_most_members(void **state)
{
    (void)state;
    l3_group e = { .tag = 3 };
    for (unsigned k = 0; k < L3_GROUP_MEMBERS_MAX; k++)
        assert_true(l3_group_join(&e));
    assert_false(l3_group_join(&e));
    assert_int_equal(e.members, L3_GROUP_MEMBERS_MAX);
}

/* ---- admission over a store's state in memory ---- */

static l3_slabstore *mem_store(uint32_t mode, uint32_t rung)
{
    l3_slabstore *s = slab_mem_new(8, 1u << 20, 0);
    s->sh->admit.mode = mode;
    atomic_store(&s->sh->admit.rung, rung);
    return s;
}

static int decide_in(l3_slabstore *s, uint64_t hash, uint64_t page, bool tail, bool taken)
{
    bool first;
    int v = l3_admit_decide(s, hash, page, tail, taken, &first);
    assert_true(first == (s->sh->admit.mode != L3_ADMISSION_ALL && !l3_ghost_has(&s->ghost, hash)));
    return v;
}

static int decide(l3_slabstore *s, uint64_t hash, uint64_t page, bool tail)
{
    return decide_in(s, hash, page, tail, false);
}

static l3_key_id id_of(uint64_t i) { return (l3_key_id){ .hash = h(i), .check = 1, .len = 8 }; }

static void verdicts_follow_the_rung_the_ghost_and_the_fill(void **state)
{
    (void)state;
    l3_slabstore *s = mem_store(L3_ADMISSION_RUNG, 1); /* depth 2 */
    assert_int_equal(decide(s, h(1), 5, false), L3_VERDICT_PROBATION); /* room left: all */
    l3_admit_note_full(s);
    assert_int_equal(decide(s, h(1), 0, false), L3_VERDICT_PROBATION);
    assert_int_equal(decide(s, h(1), 1, false), L3_VERDICT_PROBATION);
    assert_int_equal(decide(s, h(1), 2, false), L3_VERDICT_REFUSED); /* past the depth */
    assert_int_equal(decide(s, h(1), 0, true), L3_VERDICT_REFUSED);  /* a partial tail */
    l3_key_id k = id_of(1);
    l3_admit_put_seen(s, &k, 1, 65536, NULL);
    assert_int_equal(decide(s, h(1), 9, false), L3_VERDICT_MAIN); /* seen: main, any depth */
    atomic_store(&s->sh->admit.rung, L3_LADDER_LEN - 1);
    assert_int_equal(decide(s, h(2), 100, true), L3_VERDICT_MAIN); /* the object LRU */
    s->sh->admit.mode = L3_ADMISSION_ALL;
    atomic_store(&s->sh->admit.rung, 0);
    assert_int_equal(decide(s, h(3), 100, true), L3_VERDICT_MAIN); /* "all" ignores the rung */
    slab_mem_free(s);
}

/* A batch of use only whole, once taken, is taken past the depth and at
 * first sight, even on the rung that writes only keys seen before; its
 * partial tail is still refused. */
static void a_taken_whole_batch_is_not_cut_by_the_depth(void **state)
{
    (void)state;
    l3_slabstore *s = mem_store(L3_ADMISSION_RUNG, 1); /* depth 2 */
    l3_admit_note_full(s);
    assert_int_equal(decide_in(s, h(1), 2, false, false), L3_VERDICT_REFUSED);
    assert_int_equal(decide_in(s, h(1), 2, false, true), L3_VERDICT_PROBATION);
    assert_int_equal(decide_in(s, h(1), 40, true, true), L3_VERDICT_REFUSED); /* a partial tail */
    atomic_store(&s->sh->admit.rung, 0); /* second sight only */
    assert_int_equal(decide_in(s, h(2), 0, false, false), L3_VERDICT_REFUSED);
    assert_int_equal(decide_in(s, h(2), 7, false, true), L3_VERDICT_PROBATION);
    l3_key_id k = id_of(3);
    l3_admit_put_seen(s, &k, 1, 65536, NULL);
    assert_int_equal(decide_in(s, h(3), 7, false, true), L3_VERDICT_MAIN); /* seen: main */
    slab_mem_free(s);
}

static void generations_turn_by_sightings_of_the_capacity(void **state)
{
    (void)state;
    l3_slabstore *s = mem_store(L3_ADMISSION_RUNG, 0);
    l3_admit_note_full(s);
    l3_key_id k = id_of(1);
    /* Slots of 1 MiB in 8 slabs of 1 MiB: a capacity of 8 objects, and
     * generations of the 64-sighting floor. */
    l3_admit_put_seen(s, &k, 1, 1u << 20, NULL);
    assert_int_equal(s->sh->admit.cap, 8);
    l3_key_id other[64];
    bool found[64] = { 0 };
    for (int i = 0; i < 64; i++)
        other[i] = id_of(1000 + (uint64_t)i);
    for (int g = 0; g < 4; g++) {
        l3_admit_exists(s, other, found, 64);
        assert_int_equal(decide(s, h(1), 0, false), L3_VERDICT_MAIN); /* still remembered */
    }
    l3_admit_exists(s, other, found, 64); /* five generations: forgotten */
    assert_int_equal(decide(s, h(1), 0, false), L3_VERDICT_REFUSED);
    slab_mem_free(s);
}

/* Requests of `len` keys: `fresh` is a scan (never seen again), else a
 * loop over `loop` keys. A put follows each exists with the absent keys,
 * as an engine does. */
static void drive(l3_slabstore *s, uint64_t *next, size_t len, bool fresh, uint64_t loop, int requests,
                  const l3_put_hints *hints)
{
    l3_key_id ids[64];
    bool found[64] = { 0 };
    for (int r = 0; r < requests; r++) {
        for (size_t i = 0; i < len; i++)
            ids[i] = id_of(fresh ? (*next)++ : 1000000 + (*next)++ % loop);
        l3_admit_exists(s, ids, found, len);
        l3_admit_put_seen(s, ids, len, 1u << 20, hints);
    }
}

static void the_shadows_choose_the_rung_that_hits_most(void **state)
{
    (void)state;
    /* 8 objects of capacity. A loop of 4 keys fits: every rung hits it
     * alike, the store stays on the object LRU. */
    l3_slabstore *s = mem_store(L3_ADMISSION_ADAPTIVE, L3_LADDER_LEN - 1);
    uint64_t next = 0;
    drive(s, &next, 4, false, 4, 4000, NULL);
    assert_int_equal(atomic_load(&s->sh->admit.rung), L3_LADDER_LEN - 1);
    slab_mem_free(s);
    /* A loop of 6 keys mixed with scans of new keys: the LRU loses the
     * loop to the scans, second sight keeps it: the rung goes down. */
    s = mem_store(L3_ADMISSION_ADAPTIVE, L3_LADDER_LEN - 1);
    next = 0;
    uint64_t scan = 5000000;
    for (int r = 0; r < 3000; r++) {
        drive(s, &next, 6, false, 6, 1, NULL);
        drive(s, &scan, 16, true, 0, 1, NULL);
    }
    assert_true(atomic_load(&s->sh->admit.rung) < 3);
    assert_true(s->sh->admit.switches >= 1);
    assert_true(s->shadows[0].hits > s->shadows[L3_LADDER_LEN - 1].hits);
    slab_mem_free(s);
}

/* A round's choice with rung 3's shadow 20 hits ahead of rung 6's (in
 * force) and the noise of their difference `noise` (the root of the sum of
 * squared differences, call by call): the rung in force after it. */
static uint32_t choice_with_lead_of_20(double noise)
{
    l3_slabstore *s = mem_store(L3_ADMISSION_ADAPTIVE, L3_LADDER_LEN - 1);
    l3_key_id k = id_of(1);
    l3_admit_put_seen(s, &k, 1, 1u << 20, NULL); /* sized: 8 objects */
    l3_admit_state *a = &s->sh->admit;
    a->score.window[L3_LADDER_LEN - 1] = 1000;
    a->score.window[3] = 1020; /* past the hysteresis: 1000 x 0.5% x 3 rungs */
    a->score.spread[3][L3_LADDER_LEN - 1] = a->score.spread[L3_LADDER_LEN - 1][3] = noise * noise;
    a->round_end = atomic_load(&a->sightings) + 1;
    l3_key_id fresh = id_of(99);
    bool found = false;
    l3_admit_exists(s, &fresh, &found, 1); /* a miss in every shadow; the round ends */
    uint32_t rung = atomic_load(&a->rung);
    assert_true(a->score.window[3] > 1020 * 0.75 - 1e-9 && a->score.window[3] < 1020 * 0.75 + 1e-9);
    assert_true(a->score.spread[3][L3_LADDER_LEN - 1] < noise * noise * 0.75 + 1e-9); /* both keep 0.75 */
    slab_mem_free(s);
    return rung;
}

/* A lead within the noise of the shadows' difference is not taken: the
 * store moves only when the lead is more than half that noise. */
static void a_lead_within_the_noise_leaves_the_rung_in_force(void **state)
{
    (void)state;
    assert_int_equal(choice_with_lead_of_20(50), L3_LADDER_LEN - 1); /* 20 < 0.5 x 50 */
    assert_int_equal(choice_with_lead_of_20(30), 3);                 /* 20 > 0.5 x 30 */
}

/* The squared difference of one call, with a page of `per_page` objects
 * (0: not said): rung 6's shadow holds the key, rung 3's does not. */
static double spread_of_one_call(uint32_t per_page)
{
    l3_slabstore *s = mem_store(L3_ADMISSION_ADAPTIVE, L3_LADDER_LEN - 1);
    l3_key_id k = id_of(1);
    l3_admit_put_seen(s, &k, 1, 1u << 20, NULL); /* sized: 8 objects, every key sampled */
    atomic_store(&s->sh->admit.page_objects, per_page);
    uint64_t fp = id_of(7).hash;
    uint32_t pos = 0;
    bool seen = false;
    l3_shadow_request(&s->shadows[L3_LADDER_LEN - 1], &fp, &pos, &seen, 1, 1, false); /* written there */
    l3_key_id x = id_of(7);
    bool found = true;
    l3_admit_exists(s, &x, &found, 1); /* a hit for rung 6, a miss for rung 3 */
    double spread = s->sh->admit.score.spread[3][L3_LADDER_LEN - 1];
    assert_true(spread == s->sh->admit.score.spread[L3_LADDER_LEN - 1][3]);
    slab_mem_free(s);
    return spread;
}

/* The ranks' calls for one page move together: a call's squared
 * difference counts once per object of the page, so that the noise of
 * four ranks' sums is four times one rank's, as their lead is. */
static void the_noise_grows_with_a_page_s_objects(void **state)
{
    (void)state;
    assert_true(spread_of_one_call(0) == 1.0);
    assert_true(spread_of_one_call(1) == 1.0);
    assert_true(spread_of_one_call(4) == 4.0);
}

/* Sightings until the rung first moves under the loop-and-scans traffic
 * above, each page a group of `per_page` objects. */
static uint64_t sightings_to_first_switch(uint32_t per_page)
{
    uint64_t gids[16];
    for (size_t i = 0; i < 16; i++)
        gids[i] = i + 1;
    l3_put_hints hints = { .groups = gids, .group_objects = per_page };
    l3_slabstore *s = mem_store(L3_ADMISSION_ADAPTIVE, L3_LADDER_LEN - 1);
    uint64_t next = 0, scan = 5000000;
    for (int r = 0; r < 20000 && !s->sh->admit.switches; r++) {
        drive(s, &next, 6, false, 6, 1, &hints);
        drive(s, &scan, 16, true, 0, 1, &hints);
    }
    uint64_t seen = s->sh->admit.switches ? atomic_load(&s->sh->admit.sightings) : UINT64_MAX;
    slab_mem_free(s);
    return seen;
}

/* A round is 4096 pages' sightings at least: when every page is a group
 * of four objects (four ranks, each naming its own shard), four times the
 * objects, so that four ranks choose over as many pages as one does. */
static void a_round_counts_pages_when_pages_are_groups(void **state)
{
    (void)state;
    uint64_t one = sightings_to_first_switch(1), four = sightings_to_first_switch(4);
    assert_true(one >= 4096 && one < 2 * 4096); /* the first round moves it */
    assert_true(four >= 4 * 4096 && four < 8 * 4096);
    assert_int_equal(sightings_to_first_switch(0), one); /* unknown: one object a page */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_bucket_fills_by_its_clock_to_its_depth),
        cmocka_unit_test(a_first_sighting_needs_the_bucket_half_full),
        cmocka_unit_test(the_ladder_runs_from_second_sight_to_the_object_lru),
        cmocka_unit_test(a_request_counts_hits_and_the_noise_of_their_differences),
        cmocka_unit_test(a_round_takes_the_best_rung_past_the_hysteresis_and_the_noise),
        cmocka_unit_test(a_round_is_the_capacity_or_4096_pages),
        cmocka_unit_test(the_shadows_are_sized_and_budgeted_by_their_sampling),
        cmocka_unit_test(the_ghost_remembers_four_generations_and_forgets_the_fifth),
        cmocka_unit_test(a_ghost_filled_to_its_size_has_about_one_percent_false_positives),
        cmocka_unit_test(the_top_rung_is_an_object_lru),
        cmocka_unit_test(rung_zero_writes_only_what_was_seen_once_the_cache_is_full),
        cmocka_unit_test(a_refused_key_refuses_the_rest_of_its_request),
        cmocka_unit_test(a_shadow_writes_within_its_budget),
        cmocka_unit_test(probation_gives_way_while_it_holds_its_share),
        cmocka_unit_test(a_shadow_survives_churn_through_its_table),
        cmocka_unit_test(groups_count_members_and_go_when_idle),
        cmocka_unit_test(a_full_table_sweeps_idle_entries_then_refuses),
        cmocka_unit_test(the_table_holds_a_store_full_of_pairs),
        cmocka_unit_test(a_decision_is_followed_once_by_each_other_object),
        cmocka_unit_test(a_verdict_binds_the_members_older_than_it),
        cmocka_unit_test(a_verdict_binds_across_its_numbers_wrap),
        cmocka_unit_test(a_lease_holds_as_its_table_s_base_moves),
        cmocka_unit_test(a_group_counts_up_to_its_most_members),
        cmocka_unit_test(verdicts_follow_the_rung_the_ghost_and_the_fill),
        cmocka_unit_test(a_taken_whole_batch_is_not_cut_by_the_depth),
        cmocka_unit_test(generations_turn_by_sightings_of_the_capacity),
        cmocka_unit_test(the_shadows_choose_the_rung_that_hits_most),
        cmocka_unit_test(a_lead_within_the_noise_leaves_the_rung_in_force),
        cmocka_unit_test(the_noise_grows_with_a_page_s_objects),
        cmocka_unit_test(a_round_counts_pages_when_pages_are_groups),
    };
    return cmocka_run_group_tests_name("admit", tests, NULL, NULL);
}
