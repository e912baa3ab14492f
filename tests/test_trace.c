/* l3bench --trace: the trace reader, the exact LRU and Belady simulators
 * on a trace worked out by hand, admission (admitsim.h), ranks and pools
 * (groupsim.h), each on a small trace worked out by hand, the replay
 * through the real store, and the simulators' tables (--sim). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "admitsim.h"
#include "groupsim.h"
#include "store_util.h"
#include "tracesim.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Load `text` as a trace (a temporary file). */
static void load_text(const char *text, tr_trace *t)
{
    char path[512];
    temp_store_path(path, sizeof path, "hand.jsonl");
    write_file(path, text);
    assert_true(tr_load(path, t));
    unlink(path);
}

static tr_admit_result admit_run(const tr_trace *t, uint32_t cap, int kind, void (*tweak)(tr_admit_config *))
{
    tr_admit_config c;
    tr_admit_defaults(&c, kind);
    if (tweak)
        tweak(&c);
    return tr_sim_admit(t, cap, &c);
}

/* Replay under `kind` (tweaked) and expect its hits and writes. */
static void expect_run(const tr_trace *t, uint32_t cap, int kind, void (*tweak)(tr_admit_config *), uint64_t hits,
                       uint64_t written)
{
    tr_admit_result r = admit_run(t, cap, kind, tweak);
    assert_int_equal(r.hits, hits);
    assert_int_equal(r.written, written);
}

/* Six requests over seven blocks (ids as a service would remap them). */
static const char *const small_trace =
    "{\"timestamp\": 0, \"hash_ids\": [10, 11, 12]}\n"
    "{\"timestamp\": 1, \"hash_ids\": [10, 11, 13]}\n"
    "{\"timestamp\": 2, \"hash_ids\": [10, 14]}\n"
    "{\"timestamp\": 3, \"hash_ids\": [10, 11, 12, 15]}\n"
    "{\"timestamp\": 4, \"hash_ids\": [16]}\n"
    "{\"timestamp\": 5, \"hash_ids\": [10, 11, 12]}\n";

static void the_simulators_match_a_trace_worked_by_hand(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "small.jsonl");
    write_file(path, small_trace);
    tr_trace t;
    assert_true(tr_load(path, &t));
    assert_int_equal(t.num_requests, 6);
    assert_int_equal(t.num_accesses, 16);
    assert_int_equal(t.num_ids, 7);
    assert_int_equal(t.longest, 4);
    /* LRU of 3: r2 hits 10 11; r3 hits 10; r4 hits 10 (11 was evicted by
     * 14); r5 and r6 miss (10 went when 15 came). */
    tr_sim_result lru = tr_sim_lru(&t, 3);
    assert_int_equal(lru.hits, 4);
    assert_int_equal(lru.accesses, 16);
    /* Belady of 3 keeps 10 11 12 (13 14 15 16 are never used again, so they
     * are bypassed): r2 2, r3 1, r4 3, r6 3. */
    tr_sim_result bel = tr_sim_belady(&t, 3);
    assert_int_equal(bel.hits, 9);
    assert_int_equal(bel.admitted, 3);
    /* A cache that holds everything hits every repeat from the start. */
    assert_int_equal(tr_sim_lru(&t, 100).hits, 9);
    tr_free(&t);
    unlink(path);
}

/* G = (hits - LRU) / (MIN - LRU): signed below the LRU, past 1 above
 * MIN, and not defined where MIN gains nothing over the LRU (equal, or
 * below it: counts are unsigned, so neither difference may wrap). */
static void g_is_the_share_of_the_gap_and_undefined_without_one(void **state)
{
    (void)state;
    double g = -1;
    assert_true(tr_gap_share(125, 100, 200, &g));
    assert_true(g == 0.25);
    assert_true(tr_gap_share(100, 100, 200, &g) && g == 0.0);
    assert_true(tr_gap_share(200, 100, 200, &g) && g == 1.0);
    assert_true(tr_gap_share(50, 100, 200, &g) && g == -0.5); /* below the LRU: negative, not 2^64 / 100 */
    assert_true(tr_gap_share(250, 100, 200, &g) && g == 1.5);
    assert_true(tr_gap_share(0, 7, 8, &g) && g == -7.0);
    g = -1;
    assert_false(tr_gap_share(100, 100, 100, &g)); /* MIN = LRU: no gap */
    assert_true(g == 0.0);
    g = -1;
    assert_false(tr_gap_share(120, 100, 90, &g)); /* MIN below the LRU (the prefix rule allows it) */
    assert_true(g == 0.0);
    assert_true(tr_gap_share(3, 0, 10, &g) && g == 0.3); /* an LRU of no hits */
}

/* A target as G, as a ratio, or both; writes never above the LRU's; where
 * MIN = LRU a G target is judged as the ratio asked (else 1.00x). */
static void targets_as_g_fall_back_to_the_ratio_without_a_gap(void **state)
{
    (void)state;
    tr_target g20 = { .ratio = 0, .g = 0.2 }, r11 = { .ratio = 1.1, .g = NAN }, none = { .ratio = 0, .g = NAN };
    assert_true(tr_target_met(&g20, 120, 100, 200, 1.0)); /* G exactly 0.20 */
    assert_false(tr_target_met(&g20, 119, 100, 200, 1.0));
    assert_false(tr_target_met(&g20, 200, 100, 200, 1.001)); /* writes over the LRU's */
    assert_false(tr_target_met(&g20, 99, 100, 100, 0.5));    /* no gap: below the LRU */
    assert_true(tr_target_met(&g20, 100, 100, 100, 0.5));    /* no gap: at the LRU */
    assert_true(tr_target_met(&g20, 100, 100, 95, 0.5));     /* MIN below the LRU: the same */
    tr_target both = { .ratio = 1.05, .g = 0.5 };
    assert_false(tr_target_met(&both, 104, 100, 100, 1.0)); /* no gap: the ratio asked, 1.05x */
    assert_true(tr_target_met(&both, 105, 100, 100, 1.0));
    assert_false(tr_target_met(&both, 130, 100, 200, 1.0)); /* the ratio met, G 0.30 not */
    assert_true(tr_target_met(&both, 150, 100, 200, 1.0));
    both.ratio = 1.6;
    assert_false(tr_target_met(&both, 150, 100, 200, 1.0)); /* G 0.50 met, the ratio not */
    assert_true(tr_target_met(&r11, 1100, 1000, 2000, 1.0)); /* 1.1x exactly (1.1 * 1000 rounds above 1100) */
    assert_false(tr_target_met(&r11, 1099, 1000, 2000, 1.0));
    assert_true(tr_target_met(&r11, 0, 0, 10, 1.0)); /* an LRU of no hits: any ratio */
    assert_false(tr_target_met(&g20, 1, 0, 10, 1.0)); /* ... but G 0.1 is not 0.2 */
    assert_true(tr_target_met(&none, 0, 100, 200, 1.0)); /* nothing asked but the writes */
    assert_false(tr_target_met(&none, 0, 100, 200, 1.5));
}

/* The four capacities on the hand-worked trace: MIN gets 4, 7, 9 of the
 * infinite cache's 9 hits at 1, 2, 3 blocks (10; 10 11; 10 11 12 kept), the
 * LRU 5 at 4 blocks and 9 at 5: small 2 (half: 4.5), first middle 3 (96%:
 * 8.64), all at 3 so the second middle 1.25 x 3 = 3.75, rounded 4; large 5
 * (97%: 8.73). And two significant digits, half up. */
static void the_four_capacities_follow_the_readme_s_rule(void **state)
{
    (void)state;
    tr_trace t;
    load_text(small_trace, &t);
    assert_int_equal(tr_sim_belady(&t, 1).hits, 4);
    assert_int_equal(tr_sim_belady(&t, 2).hits, 7);
    assert_int_equal(tr_sim_lru(&t, 4).hits, 5);
    tr_capacities c = tr_find_capacities(&t);
    assert_int_equal(c.infinite, 9);
    assert_int_equal(c.small, 2);
    assert_int_equal(c.first_middle, 3);
    assert_int_equal(c.min_all, 3);
    assert_int_equal(c.second_middle, 4);
    assert_int_equal(c.large, 5);
    tr_free(&t);
    /* The LRU can reach 97% before MIN gets everything: one block read 100
     * times between two reads of another; of one block the LRU (and MIN)
     * get the 99 hits of the first, and MIN the other's only at 2 blocks. */
    char text[2048] = "{\"hash_ids\": [2]}\n";
    for (int k = 0; k < 100; k++)
        strcat(text, "{\"hash_ids\": [1]}\n");
    strcat(text, "{\"hash_ids\": [2]}\n");
    load_text(text, &t);
    c = tr_find_capacities(&t);
    assert_int_equal(c.infinite, 100);
    assert_true(c.small == 1 && c.first_middle == 1 && c.min_all == 2 && c.large == 1);
    assert_int_equal(c.second_middle, 3); /* 1.25 x 2, half up */
    tr_free(&t);
    assert_int_equal(tr_round2(99), 99);
    assert_int_equal(tr_round2(2267), 2300);
    assert_int_equal(tr_round2(4946), 4900);
    assert_int_equal(tr_round2(4950), 5000);
    assert_int_equal(tr_round2(15072), 15000);
    assert_int_equal(tr_round2(52009), 52000);
    assert_int_equal(tr_round2(1), 1);
}

static void a_line_without_hash_ids_is_refused(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "bad.jsonl");
    write_file(path, "{\"hash_ids\": [1, 2]}\n{\"input_length\": 5}\n");
    tr_trace t;
    assert_false(tr_load(path, &t));
    write_file(path, "");
    assert_false(tr_load(path, &t));
    unlink(path);
}

/* Belady's two choices: without bypass every miss is written; chain ties
 * evict the deeper of two blocks next used by the same request. */
static void belady_without_bypass_and_with_chain_ties(void **state)
{
    (void)state;
    tr_trace t;
    load_text(small_trace, &t);
    /* Of 3, no bypass, chain ties: r2 evicts 12 (deeper than 11 in r4)
     * for 13; r3 evicts 13 (never again) for 14; r4 hits 10 11, evicts 14
     * for 12 and 12 for 15 (the deepest of r6's); r5 evicts 15 for 16; r6
     * hits 10 11. Hits 2 + 1 + 2 + 2, every miss written (3+1+1+2+1+1). */
    tr_sim_result r = tr_sim_belady_ex(&t, 3, false, true);
    assert_int_equal(r.hits, 7);
    assert_int_equal(r.admitted, 9);
    assert_int_equal(tr_sim_belady_ex(&t, 3, true, false).hits, 9); /* the existing one, with bypass */
    tr_free(&t);
    /* Of 2: C (used at r3) must come in while A and B are both next used
     * by r4; the tie taken by depth evicts B, so r4 still hits A. */
    load_text("{\"hash_ids\": [1, 2]}\n{\"hash_ids\": [3]}\n{\"hash_ids\": [3]}\n{\"hash_ids\": [1, 2]}\n", &t);
    assert_int_equal(tr_sim_belady_ex(&t, 2, true, true).hits, 2);
    assert_true(tr_sim_belady_ex(&t, 2, true, false).hits <= 2);
    tr_free(&t);
}

static void rung_depth1(tr_admit_config *c) { c->rung = (l3_rung){ 1, 0.5, false, false }; }

/* A rung: first sightings written only at the head of a put batch (into
 * probation), seen blocks into main, the tail never, and a refusal ends
 * the batch. */
static void a_rung_writes_the_head_of_a_batch_and_what_was_seen(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 2, 3, 4, 5]}\n{\"hash_ids\": [6, 7, 8]}\n{\"hash_ids\": [7, 8, 9]}\n"
              "{\"hash_ids\": [7, 8]}\n", &t);
    /* Of 4, depth 1: r1 fills with 1 2 3 4 (the tail 5 refused); r2 writes 6
     * (evicting 1 from probation), refuses 7 and so 8; r3 writes 7 and 8
     * (seen in r2) into main, evicting 2 and 3, refuses the tail 9; r4 hits
     * 7 8. The object LRU: r3 hits 7 8, r4 hits 7 8, nine blocks written. */
    expect_run(&t, 4, TR_RUNG, rung_depth1, 2, 7);
    tr_admit_result l = admit_run(&t, 4, TR_ALL, NULL);
    assert_int_equal(l.hits, 4);
    assert_int_equal(l.written, 9);
    assert_int_equal(l.hits, tr_sim_lru(&t, 4).hits);
    tr_free(&t);
}

static void rung_depth1_eager(tr_admit_config *c)
{
    c->rung = (l3_rung){ 1, 0.5, false, true };
    c->lazy = false;
}
static void rung_depth1_lazy(tr_admit_config *c)
{
    c->rung = (l3_rung){ 1, 0.5, false, true };
    c->lazy = true;
}

/* Lazy promotion, the store's: a probation block read keeps its place
 * until it is probation's oldest, then moves to main (the store moves it
 * when its slab comes up). */
static void a_read_probation_block_moves_to_main_when_it_is_the_oldest(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 6, 3]}\n{\"hash_ids\": [6, 3, 2]}\n{\"hash_ids\": [1]}\n{\"hash_ids\": [4]}\n"
              "{\"hash_ids\": [6]}\n", &t);
    /* Of 4, probation half: r1 writes 1 6 3 and r2 2 into probation, r2
     * hits 6 3 and r3 hits 1. Eager, 6 3 1 move to main as they are read;
     * at r4 probation (2 alone) is under its share, main's oldest (6) goes
     * for 4, and r5 misses 6 and writes it. Lazy, 1 6 3 stay in probation;
     * at r4 probation gives way from its oldest, so 1, 6, 3 move to main in
     * that order, probation (2) is then under its share, and main's oldest
     * (1) goes: r5 hits 6. */
    expect_run(&t, 4, TR_RUNG, rung_depth1_eager, 3, 6);
    expect_run(&t, 4, TR_RUNG, rung_depth1_lazy, 4, 5);
    tr_free(&t);
}

static void ghost_3(tr_admit_config *c) { c->ghost_gens = 3; }

/* Second sight remembers forever; the ghost only a window (generations of
 * `capacity` sightings); neither writes a request's tail. */
static void the_ghost_forgets_what_second_sight_remembers(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 90]}\n{\"hash_ids\": [2, 91]}\n{\"hash_ids\": [3, 92]}\n{\"hash_ids\": [4, 93]}\n"
              "{\"hash_ids\": [1, 94]}\n{\"hash_ids\": [1, 95]}\n{\"hash_ids\": [1, 96]}\n", &t);
    /* Of 1: second sight writes 1 at r5 and hits it at r6 and r7. The ghost
     * of 3 generations of one sighting: at r5 block 1 was last seen 8
     * sightings ago (refused), at r6 2 ago (written), so only r7 hits. */
    expect_run(&t, 1, TR_SECOND_SIGHT, NULL, 2, 1);
    expect_run(&t, 1, TR_GHOST, ghost_3, 1, 1);
    tr_free(&t);
}

/* TinyLFU: a newcomer replaces the victim only when seen more often. */
static void tinylfu_waits_until_the_newcomer_is_seen_more_often(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 90]}\n{\"hash_ids\": [1, 91]}\n{\"hash_ids\": [2, 92]}\n{\"hash_ids\": [2, 93]}\n"
              "{\"hash_ids\": [2, 94]}\n{\"hash_ids\": [2, 95]}\n", &t);
    /* Of 1: 1 comes in (room), hits at r2 (seen twice); 2 is refused at r3
     * (1 against 2) and r4 (2 against 2), written at r5 (3 against 2), hit
     * at r6. */
    expect_run(&t, 1, TR_TINYLFU, NULL, 2, 2);
    tr_free(&t);
}

static void rung_0(tr_admit_config *c) { c->rung = l3_ladder[0]; }
static void rung_0_orphans(tr_admit_config *c)
{
    c->rung = l3_ladder[0];
    c->orphans = true;
}

/* Evicting a block evicts its cached descendants (they cannot be a prefix
 * hit), and the room they leave is used. */
static void orphans_leave_with_their_parent(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 2, 3, 90]}\n{\"hash_ids\": [4, 91]}\n{\"hash_ids\": [4, 92]}\n"
              "{\"hash_ids\": [5, 6, 93]}\n{\"hash_ids\": [5, 6, 94]}\n", &t);
    /* Of 3, rung 0 (first sightings only into free room): r1 fills with
     * 1 2 3; r2 refuses 4; r3 writes 4 (seen) evicting 1, and with orphans
     * 2 and 3 go with it, so r4 finds room for 5 6 and r5 hits both.
     * Without, r4 is refused, r5 writes 5 6 over 2 3 and hits nothing. */
    expect_run(&t, 3, TR_RUNG, rung_0_orphans, 2, 6);
    expect_run(&t, 3, TR_RUNG, rung_0, 0, 6);
    tr_free(&t);
}

static void chain_order(tr_admit_config *c) { c->chain_order = true; }

/* Chain order: a request's head ends as its most recent block, so the
 * tail goes first and the next request still hits the head. */
static void chain_order_keeps_the_head(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 2, 3]}\n{\"hash_ids\": [4]}\n{\"hash_ids\": [1, 2, 3]}\n", &t);
    /* Of 3: the object LRU evicts 1 for 4 and r3 hits nothing; in chain
     * order 3 goes for 4 and r3 hits 1 2. */
    assert_int_equal(admit_run(&t, 3, TR_ALL, NULL).hits, 0);
    assert_int_equal(admit_run(&t, 3, TR_ALL, chain_order).hits, 2);
    tr_free(&t);
}

static void budget_4(tr_admit_config *c)
{
    c->budget = 1.0;
    c->bucket_ms = 4.0;
}

static void budget_4_graceful(tr_admit_config *c)
{
    budget_4(c);
    c->graceful = true;
}

/* A write budget: a bucket of 4 writes (no refill, the clock stands
 * still). Graceful: a first sighting needs the bucket half full. */
static void a_budget_bounds_the_writes(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"timestamp\": 0, \"hash_ids\": [1, 2, 3, 4]}\n{\"timestamp\": 0, \"hash_ids\": [1, 2, 3, 4, 5]}\n", &t);
    /* Naive: r1 writes 1 2 3 4, r2 hits 4 and 5 finds no token. Graceful:
     * r1 writes 1 2 3 (4 would leave less than half), r2 hits 3 and writes
     * 4 (seen) with the last token. */
    expect_run(&t, 10, TR_ALL, budget_4, 4, 4);
    expect_run(&t, 10, TR_ALL, budget_4_graceful, 3, 4);
    assert_int_equal(admit_run(&t, 10, TR_ALL, NULL).written, 5);
    tr_free(&t);
}

/* Topics: 10 prefixes of 8 blocks, each request one of them and then 30
 * blocks never seen again; `requests` of them. */
static void write_topics(const char *path, int requests)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    unsigned next = 100000, seed = 12345;
    for (int r = 0; r < requests; r++) {
        seed = seed * 1103515245u + 12345u;
        unsigned topic = (seed >> 16) % 10;
        fprintf(f, "{\"hash_ids\": [%u", topic * 100);
        for (unsigned k = 1; k < 8; k++)
            fprintf(f, ", %u", topic * 100 + k);
        for (int k = 0; k < 30; k++)
            fprintf(f, ", %u", next++);
        fprintf(f, "]}\n");
    }
    fclose(f);
}

/* The adaptive admission climbs down the ladder when one-timers flood a
 * small cache, and stays the object LRU when everything fits. */
static void adaptive_admission_follows_the_best_shadow(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "topics.jsonl");
    write_topics(path, 600);
    tr_trace t;
    assert_true(tr_load(path, &t));
    unlink(path);
    /* Of 100: the object LRU keeps under three requests, so a topic is
     * gone before it comes back; refusing first sightings keeps the 80
     * blocks of the topics. */
    tr_admit_result lru = admit_run(&t, 100, TR_ALL, NULL), ad = admit_run(&t, 100, TR_ADAPTIVE, NULL);
    assert_true(ad.hits > 3 * lru.hits);
    assert_true(ad.rung <= 1);
    assert_true(ad.written < lru.written / 4);
    /* Room for everything: nothing to gain, the object LRU it stays. */
    tr_admit_result big_lru = admit_run(&t, t.num_ids, TR_ALL, NULL), big = admit_run(&t, t.num_ids, TR_ADAPTIVE, NULL);
    assert_int_equal(big.hits, big_lru.hits);
    assert_int_equal(big.rung, L3_LADDER_LEN - 1);
    assert_int_equal(big.switches, 0);
    tr_free(&t);
}

/* Pools, TRAILING: a prefix is usable up to its last page with a state;
 * a request stores the state of its last full page (its next to last). */
static void pools_use_a_prefix_up_to_its_last_state(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 2, 3]}\n{\"hash_ids\": [1, 2, 3, 4]}\n{\"hash_ids\": [1, 2, 3, 4, 5]}\n", &t);
    /* r1 stores a state at 2; r2 has 1 2 3 but a state only at 2: 2 usable,
     * and stores a state at 3; r3 has 1 2 3 4, states at 2 and 3: 3. */
    for (uint32_t ranks = 1; ranks <= 2; ranks++)
        for (int groups = 0; groups < 2; groups++) {
            tr_group_config c = { .ranks = ranks, .pools = true, .groups = groups != 0 };
            assert_int_equal(tr_sim_groups(&t, 100, &c).usable_hits, 5);
            c.pools = false;
            assert_int_equal(tr_sim_groups(&t, 100, &c).usable_hits, 7);
        }
    /* Small: the object LRU of one rank and no pools is the plain one. */
    tr_group_config one = { .ranks = 1 };
    assert_int_equal(tr_sim_groups(&t, 3, &one).usable_hits, tr_sim_lru(&t, 3).hits);
    tr_free(&t);
}

/* Ranks under a budget of three writes: the object-level store spends
 * them on one rank's shards, which no other rank has; a group takes a
 * page's two or nothing. */
static void a_group_is_written_whole_or_not_at_all(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"timestamp\": 0, \"hash_ids\": [1, 2, 3]}\n{\"timestamp\": 0, \"hash_ids\": [1, 2, 3]}\n", &t);
    /* 6 x 2^-14 a ms for 10 s: 3.66 tokens, never refilled. Object level: one
     * rank writes 1 2 3, the other nothing, r2's usable hit is 0. Groups:
     * page 1 (two objects) is written, page 2 is not, r2 uses 1. */
    tr_group_config c = { .ranks = 2, .budget = 6.0 / 16384 };
    tr_group_result obj = tr_sim_groups(&t, 100, &c);
    assert_int_equal(obj.usable_hits, 0);
    assert_int_equal(obj.written, 3);
    c.groups = true;
    tr_group_result grp = tr_sim_groups(&t, 100, &c);
    assert_int_equal(grp.usable_hits, 1);
    assert_int_equal(grp.written, 2);
    tr_free(&t);
}

/* Conversations that grow turn by turn over shared system prompts: enough
 * reuse and enough churn to evict; a request every `ms` milliseconds of
 * the trace's clock (0: no timestamps, a request a millisecond). */
static void write_conversations(const char *path, int requests, int ms)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    unsigned next = 1000, turns[64] = { 0 }, base[64];
    for (int c = 0; c < 64; c++)
        base[c] = (unsigned)c * 10000;
    srand(7);
    for (int r = 0; r < requests; r++) {
        int c = rand() % 64;
        if (ms)
            fprintf(f, "{\"timestamp\": %d, ", r * ms);
        else
            fputc('{', f);
        fprintf(f, "\"hash_ids\": [%d", c % 4); /* one of four system prompts */
        turns[c] = turns[c] % 12 + 1;
        for (unsigned k = 0; k < turns[c]; k++)
            fprintf(f, ", %u", base[c] + k);
        fprintf(f, ", %u]}\n", next++); /* this turn's new tail */
    }
    fclose(f);
}

/* Run l3bench --trace with `args` over `requests` generated conversations
 * (into a temporary trace named `name`); its output is left in `out`, and
 * the trace is removed. */
static void run_replay(const char *name, int requests, int ms, const char *args, char *out, size_t out_len)
{
    char trace[512], cmd[2048];
    temp_store_path(trace, sizeof trace, name);
    snprintf(out, out_len, "%s.out", trace);
    write_conversations(trace, requests, ms);
    const char *dir = getenv("L3_TEST_DIR") ? getenv("L3_TEST_DIR") : L3_TEST_DIR_DEFAULT;
    snprintf(cmd, sizeof cmd, "%s --trace %s %s --dir %s > %s", L3BENCH, trace, args, dir, out);
    assert_int_equal(system(cmd), 0);
    unlink(trace);
}

/* The next line of `f` that `fmt` reads `want` values from (into the
 * pointers after it); false at the end. */
static bool next_match(FILE *f, int want, const char *fmt, ...)
{
    char line[512];
    while (fgets(line, sizeof line, f)) {
        va_list ap;
        va_start(ap, fmt);
        int got = vsscanf(line, fmt, ap);
        va_end(ap);
        if (got == want)
            return true;
    }
    return false;
}

/* Whether `f` has the line `text` (read from its start). */
static bool has_line(FILE *f, const char *text)
{
    char line[512];
    rewind(f);
    while (fgets(line, sizeof line, f))
        if (strcmp(line, text) == 0)
            return true;
    return false;
}

/* run_replay, then its output opened for reading (`out` names it). */
static FILE *open_replay(const char *name, int requests, int ms, const char *args, char *out, size_t out_len)
{
    run_replay(name, requests, ms, args, out, out_len);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    return f;
}

static void the_replay_runs_through_the_store_and_reports(void **state)
{
    (void)state;
    char out[600];
    FILE *f = open_replay("conv.jsonl", 3000, 0, "--capacity 120,400 --block-bytes 16K --eviction both", out, sizeof out);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long cap;
        char policy[64];
        unsigned slabs;
        double lru, bel, l3;
        if (sscanf(line, "%llu %63s %u x %*u MiB %lf %lf %lf", &cap, policy, &slabs, &lru, &bel, &l3) == 6) {
            rows++;
            assert_true(slabs >= 4);
            assert_true(lru > 0 && lru <= bel + 1e-9 && l3 > 0 && l3 < 1);
        }
    }
    fclose(f);
    assert_int_equal(rows, 4); /* two capacities, two policies */
    unlink(out);
}

/* Under a write budget on the trace's clock (a request every 100 ms, 300
 * s in all, replayed in about a second): the store writes what the budget
 * allows over the trace's time, not over the replay's, and no more (the
 * bucket's 10 s and the slabs' own headers above it). */
static void the_replay_under_a_budget_writes_what_the_trace_s_clock_allows(void **state)
{
    (void)state;
    char out[600];
    FILE *f = open_replay("budget.jsonl", 3000, 100,
                          "--capacity 400 --block-bytes 32K --eviction fifo-reinsert --admit adaptive --budget 1x,0.25x",
                          out, sizeof out);
    int rows = 0;
    double shares[2] = { 1, 0.25 }, dwpd, share, hit, vs_lru, written, sim, vs_sim;
    while (next_match(f, 7, "%lf %lf %lf %lf %lf %lf %lf", &dwpd, &share, &hit, &vs_lru, &written, &sim, &vs_sim)) {
        assert_true(rows < 2);
        assert_true(share > shares[rows] - 0.001 && share < shares[rows] + 0.001);
        assert_true(hit > 0 && hit < 1 && sim > 0);
        assert_true(written <= 1.10 * dwpd);              /* within the budget */
        assert_true(rows == 0 || written >= 0.5 * dwpd); /* and held to it by the trace's clock */
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 2);
    unlink(out);
}

/* --targets: each capacity's row says met or missed, and the count. */
static void the_replay_checks_each_capacity_against_its_target(void **state)
{
    (void)state;
    char out[600];
    FILE *f = open_replay("targets.jsonl", 1500, 0,
                          "--capacity 120,400 --block-bytes 32K --eviction fifo-reinsert --admit rung:0 --targets 0.01,50",
                          out, sizeof out);
    int said = 0;
    double target, vs, writes;
    char verdict[16];
    static const char fmt[] =
        " target: >= %lf x the LRU's hits, writes (reinsertions too) <= its own: %15s (%lf x, writes %lf x)";
    while (next_match(f, 4, fmt, &target, verdict, &vs, &writes)) {
        bool met = vs >= target && writes <= 1.0;
        assert_string_equal(verdict, met ? "met" : "MISSED");
        assert_true(said == 0 ? met : !met); /* 0.01 x is met (rung 0 writes less), 50 x is not */
        said++;
    }
    assert_int_equal(said, 2);
    assert_true(has_line(f, "targets: 1 of 2 met\n"));
    fclose(f);
    unlink(out);
}

/* --target-g through the store: each capacity's line says G and met or
 * missed (met exactly when G reaches the target and writes stay at the
 * LRU's), and the count. */
static void the_replay_judges_targets_as_g(void **state)
{
    (void)state;
    char out[600];
    FILE *f = open_replay("targets_g.jsonl", 1500, 0,
                          "--capacity 120,400 --block-bytes 32K --eviction fifo-reinsert --admit rung:0 "
                          "--target-g -100,100", out, sizeof out);
    int said = 0;
    double target, g, vs, writes;
    char verdict[16];
    static const char fmt[] =
        " target: G >= %lf, writes (reinsertions too) <= its own: %15s (G %lf, %lf x, writes %lf x)";
    while (next_match(f, 5, fmt, &target, verdict, &g, &vs, &writes)) {
        assert_true(target == (said == 0 ? -100 : 100));
        assert_string_equal(verdict, g >= target && writes <= 1.0 ? "met" : "MISSED");
        assert_true(said == 0 ? g >= target : g < target); /* G is at most a few x the gap, never 100 */
        said++;
    }
    assert_int_equal(said, 2);
    assert_true(has_line(f, "targets: 1 of 2 met\n"));
    fclose(f);
    unlink(out);
}

/* Replay `args` (a trace of `name`) and check its rows "<label>, groups:"
 * and "<label>, no groups:": the usable hit above 0, never above what the
 * ranks hit on their own, with groups the ranks' own within 1% (a page's
 * objects stay or go together; a read racing another rank's eviction may
 * still differ), and under one rank's single-process hit when `below`. */
static void check_rank_rows(const char *name, const char *args, const char *label, bool below)
{
    char out[600];
    run_replay(name, 1500, 0, args, out, sizeof out);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char kind[16];
        double usable, share, single, own;
        const char *at = line + strspn(line, " ");
        if (strncmp(at, label, strlen(label)) == 0 &&
            sscanf(at + strlen(label), ", %15[a-z ]: usable %lf (%lf x one rank's %lf; %*f x LRU); the ranks' own %lf",
                   kind, &usable, &share, &single, &own) == 5) {
            rows++;
            assert_true(usable > 0 && usable <= own + 1e-9 && single > 0);
            assert_true(!below || usable < single);
            if (strcmp(kind, "groups") == 0)
                assert_true(usable >= 0.99 * own);
        }
    }
    fclose(f);
    assert_int_equal(rows, 2); /* with groups, and without */
    unlink(out);
}

/* --ranks 2 through the store: two processes in lockstep on one store,
 * each its shard of every block; the usable hit (the minimum over the
 * ranks) is printed with and without groups. */
static void the_replay_over_ranks_reports_usable_hits(void **state)
{
    (void)state;
    check_rank_rows("ranks.jsonl", "--capacity 400 --block-bytes 32K --eviction fifo-reinsert --admit rung:2 --ranks 2",
                    "2 ranks", false);
}

/* --pools through the store (two ranks): a KV, a sidecar and a last full
 * page's state per rank, read back and checked by their stamps (a wrong
 * byte or a failed put fails the run); the usable hit is cut back to the
 * last page with a state, so it stays under the KV-only replay's at the
 * same capacity. */
static void the_replay_with_pools_cuts_prefixes_at_states(void **state)
{
    (void)state;
    check_rank_rows("pools.jsonl", "--capacity 400 --block-bytes 32K --eviction fifo-reinsert --ranks 2 --pools",
                    "2 ranks with pools", true);
}

/* The log of slabs (the store's fifo-reinsert): the oldest slab's worth is
 * reclaimed at once, and what was read since written is written again at
 * the head. */
static void the_slab_log_rewrites_what_was_read(void **state)
{
    (void)state;
    tr_trace t;
    load_text("{\"hash_ids\": [1, 2]}\n{\"hash_ids\": [1]}\n{\"hash_ids\": [3, 4]}\n{\"hash_ids\": [5]}\n"
              "{\"hash_ids\": [1, 2]}\n", &t);
    /* Of 4 in slabs of 2: r4 reclaims 1 (read at r2: written again) and 2
     * (not read: gone) for 5; r2 and r5 hit 1, and r5's 2 reclaims 3 and 4. Written:
     * 2 + 2 + 1 (again) + 1 + 1. */
    tr_group_config c = { .ranks = 1, .slab = 2 };
    tr_group_result r = tr_sim_groups(&t, 4, &c);
    assert_int_equal(r.usable_hits, 2);
    assert_int_equal(r.written, 7);
    tr_free(&t);
}

/* Lines of `path` that `match` accepts. */
static int count_lines(const char *path, bool (*match)(const char *line))
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += match(line);
    fclose(f);
    return n;
}

/* A main row: capacity, LRU, Belady, adaptive, vs LRU, vs MIN, G, writes
 * over the LRU's, its DWPD, the rung. */
static bool main_row(const char *line)
{
    unsigned long long cap;
    double v[9];
    if (sscanf(line, "%llu %lf %lf %lf %lf %lf %lf %lf %lf %lf", &cap, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7], &v[8]) != 10)
        return false;
    assert_true(v[0] > 0 && v[0] <= v[1] + 1e-9 && v[2] > 0 && v[6] <= 1.0 + 1e-9); /* LRU <= MIN; writes <= LRU's */
    /* G is the adaptive's share of the gap (the rates printed to 4 digits) */
    assert_true(v[1] > v[0] && fabs(v[5] * (v[1] - v[0]) - (v[2] - v[0])) <= 2e-4);
    return true;
}

static bool adaptive_row(const char *line)
{
    unsigned long long cap;
    char name[64];
    double h, vl, vb, w;
    return sscanf(line, "%llu %63s %lf %lf %lf %lf", &cap, name, &h, &vl, &vb, &w) == 6 && strcmp(name, "adaptive") == 0;
}

static bool ranks_row(const char *line)
{
    unsigned long long cap;
    char pools[8];
    unsigned r;
    double v[6];
    return sscanf(line, "%llu %7s %u %lf %lf %lf %lf %lf %lf", &cap, pools, &r, &v[0], &v[1], &v[2], &v[3], &v[4],
                  &v[5]) == 9 &&
           (strcmp(pools, "no") == 0 || strcmp(pools, "yes") == 0);
}

static bool graceful_row(const char *line) { return strstr(line, "adaptive, graceful") != NULL; }
static bool any_line(const char *line) { return line[0] != '#'; }

static void the_simulation_tables_cover_every_capacity(void **state)
{
    (void)state;
    char trace[512], out[512], png[512], dat[600], cmd[2048];
    temp_store_path(trace, sizeof trace, "simconv.jsonl");
    temp_store_path(out, sizeof out, "simconv.out");
    temp_store_path(png, sizeof png, "simconv.png");
    snprintf(dat, sizeof dat, "%s.dat", png);
    write_conversations(trace, 3000, 0);
    snprintf(cmd, sizeof cmd, "%s --trace %s --sim-all --ranks 2 --pools --budget 500 --capacity 120,400 --plot %s > %s",
             L3BENCH, trace, png, out);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(count_lines(out, main_row), 2);
    assert_int_equal(count_lines(out, adaptive_row), 2);
    assert_int_equal(count_lines(out, ranks_row), 16); /* two capacities, pools or not, four rank counts */
    assert_int_equal(count_lines(out, graceful_row), 2);
    assert_int_equal(count_lines(dat, any_line), 2); /* the plot's data: a line per capacity */
    unlink(trace);
    unlink(out);
    unlink(dat);
    snprintf(cmd, sizeof cmd, "%s.gp", png);
    unlink(cmd);
    unlink(png);
}

/* --capacities: the four found by bisection, rounded, and the simulators'
 * table at them, each row with its G; targets (--target-g, --targets, "-"
 * for none) judge the adaptive admission's simulator; the JSON has the
 * same. */
static void the_simulators_find_the_capacities_and_judge_targets(void **state)
{
    (void)state;
    char out[600];
    FILE *f = open_replay("capacities.jsonl", 3000, 0, "--capacities --target-g -100,100,- --targets -,-,1.0 --plot ''",
                          out, sizeof out);
    unsigned small, first, second, all, large;
    unsigned long long rounded[4], cap;
    assert_true(next_match(f, 9, "capacities (bench/traces/README.md's rule, by bisection): small %u (Belady's MIN "
                                 "gets half of the infinite cache's hits), first middle %u (96%%), second middle %u "
                                 "(1.25 x %u, where MIN first gets all), large %u (the object LRU gets 97%%); "
                                 "rounded: %llu,%llu,%llu,%llu",
                           &small, &first, &second, &all, &large, &rounded[0], &rounded[1], &rounded[2], &rounded[3]));
    assert_true(small <= first && first <= all && all <= second && second == (all * 5 + 2) / 4);
    assert_true(rounded[0] == tr_round2(small) && rounded[3] == tr_round2(large));
    char line[512];
    int rows = 0, said = 0;
    while (fgets(line, sizeof line, f)) {
        double target, g, vs, writes;
        char verdict[16];
        if (sscanf(line, "%llu", &cap) == 1 && main_row(line))
            assert_true(cap == rounded[rows++]);
        else if (sscanf(line, " target: G >= %lf, the simulator's writes <= its own: %15s (G %lf, %lf x, writes %lf x)",
                        &target, verdict, &g, &vs, &writes) == 5) {
            assert_string_equal(verdict, g >= target && writes <= 1.0 ? "met" : "MISSED");
            said++;
        } else if (sscanf(line, " target: >= %lf x the LRU's hits, the simulator's writes <= its own: %15s (%lf x, "
                                "writes %lf x)", &target, verdict, &vs, &writes) == 4) {
            assert_string_equal(verdict, vs >= target && writes <= 1.0 ? "met" : "MISSED");
            said++;
        }
    }
    assert_int_equal(rows, 4);
    assert_int_equal(said, 3); /* none asked at the fourth */
    fclose(f);
    unlink(out);
    f = open_replay("capacities_json.jsonl", 3000, 0, "--capacities --json --plot ''", out, sizeof out);
    json_error_t je;
    json_t *all_rows = json_loadf(f, 0, &je), *row;
    assert_non_null(all_rows);
    size_t i, mains = 0;
    json_array_foreach(all_rows, i, row) {
        const char *table = json_string_value(json_object_get(row, "table"));
        if (strcmp(table, "capacities") == 0)
            assert_int_equal(json_integer_value(json_object_get(row, "small")), small);
        if (strcmp(table, "main") == 0) {
            assert_true(json_is_real(json_object_get(row, "g")));
            assert_int_equal(json_integer_value(json_object_get(row, "capacity_blocks")), rounded[mains++]);
        }
    }
    assert_int_equal(mains, 4);
    json_decref(all_rows);
    fclose(f);
    unlink(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_simulators_match_a_trace_worked_by_hand),
        cmocka_unit_test(g_is_the_share_of_the_gap_and_undefined_without_one),
        cmocka_unit_test(targets_as_g_fall_back_to_the_ratio_without_a_gap),
        cmocka_unit_test(the_four_capacities_follow_the_readme_s_rule),
        cmocka_unit_test(a_line_without_hash_ids_is_refused),
        cmocka_unit_test(belady_without_bypass_and_with_chain_ties),
        cmocka_unit_test(a_rung_writes_the_head_of_a_batch_and_what_was_seen),
        cmocka_unit_test(a_read_probation_block_moves_to_main_when_it_is_the_oldest),
        cmocka_unit_test(the_ghost_forgets_what_second_sight_remembers),
        cmocka_unit_test(tinylfu_waits_until_the_newcomer_is_seen_more_often),
        cmocka_unit_test(orphans_leave_with_their_parent),
        cmocka_unit_test(chain_order_keeps_the_head),
        cmocka_unit_test(a_budget_bounds_the_writes),
        cmocka_unit_test(adaptive_admission_follows_the_best_shadow),
        cmocka_unit_test(pools_use_a_prefix_up_to_its_last_state),
        cmocka_unit_test(a_group_is_written_whole_or_not_at_all),
        cmocka_unit_test(the_slab_log_rewrites_what_was_read),
        cmocka_unit_test(the_replay_runs_through_the_store_and_reports),
        cmocka_unit_test(the_replay_under_a_budget_writes_what_the_trace_s_clock_allows),
        cmocka_unit_test(the_replay_checks_each_capacity_against_its_target),
        cmocka_unit_test(the_replay_judges_targets_as_g),
        cmocka_unit_test(the_replay_over_ranks_reports_usable_hits),
        cmocka_unit_test(the_replay_with_pools_cuts_prefixes_at_states),
        cmocka_unit_test(the_simulation_tables_cover_every_capacity),
        cmocka_unit_test(the_simulators_find_the_capacities_and_judge_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
