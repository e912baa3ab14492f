/* l3bench --trace: the trace reader, the exact LRU and Belady simulators
 * on a trace worked out by hand, and the replay through the real store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_util.h"
#include "tracesim.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
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

/* Conversations that grow turn by turn over shared system prompts: enough
 * reuse and enough churn to evict. */
static void write_conversations(const char *path, int requests)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    unsigned next = 1000, turns[64] = { 0 }, base[64];
    for (int c = 0; c < 64; c++)
        base[c] = (unsigned)c * 10000;
    srand(7);
    for (int r = 0; r < requests; r++) {
        int c = rand() % 64;
        fprintf(f, "{\"hash_ids\": [%d", c % 4); /* one of four system prompts */
        turns[c] = turns[c] % 12 + 1;
        for (unsigned k = 0; k < turns[c]; k++)
            fprintf(f, ", %u", base[c] + k);
        fprintf(f, ", %u]}\n", next++); /* this turn's new tail */
    }
    fclose(f);
}

static void the_replay_runs_through_the_store_and_reports(void **state)
{
    (void)state;
    char trace[512], out[512], cmd[2048];
    temp_store_path(trace, sizeof trace, "conv.jsonl");
    temp_store_path(out, sizeof out, "conv.out");
    write_conversations(trace, 3000);
    const char *dir = getenv("L3_TEST_DIR") ? getenv("L3_TEST_DIR") : L3_TEST_DIR_DEFAULT;
    snprintf(cmd, sizeof cmd, "%s --trace %s --capacity 120,400 --block-bytes 16K --eviction both --dir %s > %s",
             L3BENCH, trace, dir, out);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
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
    unlink(trace);
    unlink(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_simulators_match_a_trace_worked_by_hand),
        cmocka_unit_test(a_line_without_hash_ids_is_refused),
        cmocka_unit_test(the_replay_runs_through_the_store_and_reports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
