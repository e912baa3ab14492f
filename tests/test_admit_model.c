/* One model (docs/admission.md, "The shadows and the adaptation"): the
 * store's admission (admit.c, over a store's state in memory) and the
 * simulator (bench/admitsim.c) run the same ladder, shadows, rung rule and
 * bucket (ladder.h, shadow.h, bucket.h). Fed one stream of requests, they
 * choose the same rung after every request, with and without a write
 * budget; a change to either side's rule alone makes them part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "admit.h"
#include "admitsim.h"
#include "hash.h"
#include "slab_mem.h"

/* The store: 64 slabs of 1 MiB, slots of 64 KiB, a capacity of 1,024
 * objects, so every key is sampled (1,024 <= L3_SHADOW_ENTRIES). A
 * request is 32 keys: a generation (1,024 sightings) and a round (4,096)
 * end with a request, in both. Requests of many keys make the noise of the
 * shadows' differences as large as the hysteresis, so both terms decide. */
#define SLABS 64u
#define SLOT (64u << 10)
#define CAP 1024u
#define LEN 32u
#define TOPICS 24u
/* Rounds of the stream, and requests to a to and fro of its mix. */
#define ROUNDS 48u
#define REQUESTS (ROUNDS * L3_ROUND_PAGES / LEN)
#define PERIOD (12u * L3_ROUND_PAGES / LEN)
/* A request every 125 ms: its time in seconds is exact as a double, so
 * the store's clock (seconds) and the simulator's (milliseconds) agree
 * to the nanosecond. */
#define TICK_MS 125u

static uint32_t next_rand(uint32_t *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return *seed >> 16;
}

/* Request r's keys into `out` (LEN of them), in a mix that drifts to and
 * fro every PERIOD requests: at one end a loop of 24 topics of 32 keys
 * between scans of new keys (the loop fits the store, not beside the
 * scans: a strict rung keeps it), at the other bursts, new keys asked for
 * twice in a row (what first sight writes is hit: the object LRU wins).
 * The rungs' leads grow and shrink round by round, so that the rule's
 * terms decide close rounds. New keys take ids from *next; *burst says
 * the request before was new keys not yet asked again. */
static void request_keys(uint32_t r, uint32_t *seed, uint32_t *next, uint32_t *last, bool *burst, uint32_t *out)
{
    uint32_t at = r % PERIOD, drift = (at < PERIOD / 2 ? at : PERIOD - at) * 200 / PERIOD; /* 0..100..0 */
    uint32_t u = next_rand(seed) % 100, topic = next_rand(seed) % TOPICS;
    int kind = u < drift ? (*burst ? 2 : 1) : next_rand(seed) % 2;
    for (uint32_t i = 0; i < LEN; i++) {
        out[i] = kind == 0 ? topic * LEN + i : kind == 2 ? last[i] : (*next)++; /* the topics: ids 0..767 */
        last[i] = out[i];
    }
    *burst = kind == 1;
}

/* The stream as a trace for the simulator. */
static void make_stream(tr_trace *t)
{
    memset(t, 0, sizeof *t);
    t->ids = malloc((size_t)REQUESTS * LEN * sizeof *t->ids);
    t->start = malloc(((size_t)REQUESTS + 1) * sizeof *t->start);
    t->time = malloc((size_t)REQUESTS * sizeof *t->time);
    assert_true(t->ids && t->start && t->time);
    uint32_t seed = 47, next = TOPICS * LEN, last[LEN] = { 0 };
    bool burst = false;
    for (uint32_t r = 0; r < REQUESTS; r++) {
        t->start[r] = (size_t)r * LEN;
        t->time[r] = (uint64_t)(r + 1) * TICK_MS;
        request_keys(r, &seed, &next, last, &burst, t->ids + t->start[r]);
    }
    t->start[REQUESTS] = (size_t)REQUESTS * LEN;
    t->num_requests = REQUESTS;
    t->num_accesses = (size_t)REQUESTS * LEN;
    t->num_ids = next;
    t->longest = LEN;
}

static void free_stream(tr_trace *t)
{
    free(t->ids);
    free(t->start);
    free(t->time);
}

/* A block's key in the store. */
static l3_key_id key_of(uint32_t id)
{
    return (l3_key_id){ .hash = l3_mix64((uint64_t)id + 1) | 1, .check = id, .len = 8 };
}

/* The store's budget clock: the request's time, in seconds. */
static double clock_of(void *ctx) { return *(const double *)ctx; }

/* The simulator's rungs over the stream: rungs[r] after request r. */
static void sim_rungs(const tr_trace *t, double writes_per_ms, uint8_t *rungs)
{
    tr_admit_config c;
    tr_admit_defaults(&c, TR_ADAPTIVE);
    c.budget = writes_per_ms;
    c.graceful = true; /* the store's gate */
    c.rungs = rungs;
    tr_sim_admit(t, CAP, &c);
}

/* The store's rungs over the stream. A first put of a generation of keys
 * never asked for says its slot (the capacity's estimate, so the shadows
 * are sized before the stream, as the simulator's are) and that a put's
 * last key is a partial page (as the simulator takes a request's last
 * block). Then each request is an exists call naming its keys, every one
 * found: after it every key of the request is in the ghost, as after an
 * engine's exists and put. (Puts are not called: a put that follows the
 * exists call that ended a generation counts its keys again, a generation
 * without exists calls yet, which the simulator does not model.) */
static void store_rungs(const tr_trace *t, uint64_t write_budget, uint8_t *rungs)
{
    l3_slabstore *s = slab_mem_new(SLABS, 1u << 20, 0);
    assert_non_null(s);
    s->sh->admit.mode = L3_ADMISSION_ADAPTIVE;
    atomic_store(&s->sh->admit.rung, L3_LADDER_LEN - 1);
    double now_s = 0;
    s->opt.write_budget = write_budget;
    s->opt.budget_clock = (l3_clock){ clock_of, &now_s };
    l3_key_id primer[CAP];
    for (uint32_t i = 0; i < CAP; i++)
        primer[i] = key_of(UINT32_MAX - 1 - i);
    l3_put_hints hints = { .last_is_partial = true };
    l3_admit_put_seen(s, primer, CAP, SLOT, &hints);
    assert_int_equal(s->sh->admit.cap, CAP);
    l3_key_id ids[LEN];
    bool found[LEN];
    for (size_t r = 0; r < t->num_requests; r++) {
        now_s = (double)t->time[r] / 1000.0;
        for (uint32_t i = 0; i < LEN; i++) {
            ids[i] = key_of(t->ids[t->start[r] + i]);
            found[i] = true;
        }
        l3_admit_exists(s, ids, found, LEN);
        rungs[r] = (uint8_t)atomic_load(&s->sh->admit.rung);
    }
    slab_mem_free(s);
}

/* Both sides over the stream under a write budget of `write_budget` bytes
 * a second (the store's) or `writes_per_ms` writes (the simulator's; the
 * same, in slots): the same rung after every request, and the rung moved
 * enough that a change to the rule would show. The store's rungs, one a
 * request (the caller frees them). */
static uint8_t *expect_same_rungs(uint64_t write_budget, double writes_per_ms)
{
    tr_trace t;
    make_stream(&t);
    uint8_t *sim = calloc(REQUESTS, 1), *store = calloc(REQUESTS, 1);
    assert_true(sim && store);
    sim_rungs(&t, writes_per_ms, sim);
    store_rungs(&t, write_budget, store);
    uint32_t switches = 0, seen[L3_LADDER_LEN] = { 0 };
    for (size_t r = 0; r < REQUESTS; r++) {
        if (sim[r] != store[r])
            fail_msg("request %zu: the simulator is on rung %u, the store on rung %u", r, sim[r], store[r]);
        switches += r > 0 && store[r] != store[r - 1];
        seen[store[r]]++;
    }
    uint32_t rungs = 0;
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        rungs += seen[k] > 0;
    assert_true(switches >= 6); /* (8 between rungs 4 and 6; 12 over four rungs under the budget) */
    assert_true(rungs >= 2);
    free(sim);
    free_stream(&t);
    return store;
}

static void the_store_and_the_simulator_choose_the_same_rungs(void **state)
{
    (void)state;
    free(expect_same_rungs(0, 0));
}

/* Under a write budget of 125 writes a second (the shadows' share: all of
 * it, every key sampled), 15.6 writes a request of 32 keys: the shadows'
 * buckets bind, and rounds end on other rungs than without them. */
static void under_a_budget_they_choose_the_same_rungs(void **state)
{
    (void)state;
    uint8_t *free_rungs = expect_same_rungs(0, 0);
    uint8_t *budgeted = expect_same_rungs(125ull * SLOT, 0.125); /* exact in both units */
    assert_true(memcmp(free_rungs, budgeted, REQUESTS) != 0);
    free(free_rungs);
    free(budgeted);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_store_and_the_simulator_choose_the_same_rungs),
        cmocka_unit_test(under_a_budget_they_choose_the_same_rungs),
    };
    return cmocka_run_group_tests_name("admit_model", tests, NULL, NULL);
}
