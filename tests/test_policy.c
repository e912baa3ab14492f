/* The eviction policy (store/slab/policy.c) over a store's state in
 * memory, no disk: the victim choice (FIFO by opening, LRU by access; free
 * and empty slabs first; what it passes over), a device's slabs, which
 * objects reinsertion keeps, the write budget's bucket, the room left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "budget.h"
#include "policy.h"
#include "slab_mem.h"

#define SLAB (1u << 20)

static int setup(void **state)
{
    *state = slab_mem_new(8, SLAB, 0);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    slab_mem_free(*state);
    return 0;
}

/* Slab i sealed with `live` objects, opened at `first_seq`. */
static void sealed(l3_slabstore *s, uint32_t i, uint32_t live, uint64_t first_seq)
{
    s->slabs[i] = (slab_info){ .state = S_SEALED, .disk_used = 1, .payload_blocks = 16,
                               .nslots = l3_slots_per_slab(&s->geo, 16), .live = live,
                               .first_seq = first_seq, .standby_next = -1 };
    s->slabs[i].next_slot = s->slabs[i].nslots;
}

/* Every slab sealed with objects, opened in order 100, 101, ... */
static void all_sealed(l3_slabstore *s)
{
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        sealed(s, i, 3, 100 + i);
}

static void fifo_takes_the_slab_opened_first(void **state)
{
    l3_slabstore *s = *state;
    all_sealed(s);
    s->slabs[5].first_seq = 7;
    s->slabs[2].first_seq = 9;
    assert_int_equal(l3_policy_victim(s, true, -1), 5);
    assert_int_equal(l3_policy_victim(s, false, -1), 5); /* no free or empty slab either */
}

static void free_and_empty_slabs_come_first_unless_live_objects_are_needed(void **state)
{
    l3_slabstore *s = *state;
    all_sealed(s);
    s->slabs[6].live = 0; /* sealed and empty */
    assert_int_equal(l3_policy_victim(s, false, -1), 6);
    s->slabs[3].state = S_FREE;
    s->slabs[3].live = 0;
    assert_int_equal(l3_policy_victim(s, false, -1), 3);
    assert_int_equal(l3_policy_victim(s, true, -1), 0); /* the oldest with objects */
}

static void writes_in_flight_offline_and_leased_slabs_are_passed_over(void **state)
{
    l3_slabstore *s = *state;
    all_sealed(s);
    s->slabs[0].inflight = 1;
    s->slabs[1].state = S_OFFLINE;
    l3_policy_lease(s, 2, l3_policy_clock_ns() + 60000000000ull);
    assert_int_equal(l3_policy_victim(s, true, -1), 3);
    l3_policy_lease(s, 2, 1); /* a shorter lease never shortens one */
    assert_int_equal(l3_policy_victim(s, true, -1), 3);
    s->slabs[2].lease_until = 1; /* run out */
    assert_int_equal(l3_policy_victim(s, true, -1), 2);
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        s->slabs[i].inflight = 1;
    assert_int_equal(l3_policy_victim(s, true, -1), -1);
}

static void lru_slab_takes_the_least_recently_read_or_written(void **state)
{
    l3_slabstore *s = *state;
    all_sealed(s);
    s->opt.eviction = L3_EVICT_LRU_SLAB;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        l3_policy_written(s, i);
    l3_index_entry e = { .slab = 0, .seq = 1 };
    l3_policy_read(s, &e); /* slab 0 is now the most recent */
    assert_int_equal(l3_policy_victim(s, true, -1), 1);
    s->opt.eviction = L3_EVICT_FIFO_REINSERT;
    assert_int_equal(l3_policy_victim(s, true, -1), 0); /* FIFO ignores reads */
}

static void a_device_s_victims_are_its_own_slabs(void **state)
{
    l3_slabstore *s = *state;
    all_sealed(s);
    s->geo.num_devices = 2; /* slab i on device i % 2 */
    assert_int_equal(l3_policy_victim(s, true, 1), 1);
    s->slabs[1].inflight = 1;
    assert_int_equal(l3_policy_victim(s, true, 1), 3);
    assert_int_equal(l3_policy_victim(s, true, 0), 0);
}

static void reinsertion_keeps_what_was_read_late_in_its_time(void **state)
{
    l3_slabstore *s = *state;
    atomic_store(&s->sh->seq, 190);
    l3_index_entry late = { .slab = 0, .seq = 100 };
    l3_policy_read(s, &late); /* read at 190 of 100..200: late */
    l3_index_entry early = { .slab = 0, .seq = 100 };
    atomic_store(&s->sh->seq, 110);
    l3_policy_read(s, &early); /* read at 110: right after its write */
    l3_index_entry never = { .slab = 0, .seq = 100 };
    atomic_store(&s->sh->seq, 200);
    assert_int_equal(l3_policy_keep(s, &late, 0), L3_KEEP);
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_EARLY); /* tried from the start */
    assert_int_equal(l3_policy_keep(s, &never, 0), L3_KEEP_NOT);
    assert_int_equal(l3_policy_keep(s, &never, 190), L3_KEEP);     /* its group was read late */
    assert_int_equal(l3_policy_keep(s, &never, 100), L3_KEEP_NOT); /* (not since its write) */
    s->opt.write_budget = 1000;
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_NOT); /* none under a write budget */
    s->opt.write_budget = 0;
    s->sh->keep_trial.off_until = 201;
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_NOT); /* early keeps paused */
    assert_int_equal(l3_policy_keep(s, &late, 0), L3_KEEP);
    s->opt.eviction = L3_EVICT_LRU_SLAB; /* the whole-slab policy keeps nothing */
    assert_int_equal(l3_policy_keep(s, &late, 0), L3_KEEP_NOT);
}

/* In a store of a large bound an entry's read stamp is coarse (units of
 * 1/2048 of the bound, 16 bits of them): a read late in an object's time
 * still counts as late and one right after its write as early, the
 * earlier read taken across the stamp's wrap. */
static void a_coarse_read_stamp_keeps_late_and_early_reads_apart(void **state)
{
    l3_slabstore *s = *state;
    s->geo.max_objects = 1u << 22; /* units of 2^11 sequences: a stamp wraps every 2^27 */
    uint64_t wrap = 5ull << 27, w = wrap - 100000;
    l3_index_entry late = { .slab = 0, .seq = w }, early = { .slab = 0, .seq = w };
    atomic_store(&s->sh->seq, w + 5000);
    l3_policy_read(s, &early); /* before the wrap, right after the write */
    atomic_store(&s->sh->seq, w + 900000);
    l3_policy_read(s, &late); /* after it, late */
    atomic_store(&s->sh->seq, w + 1000000);
    assert_int_equal(l3_policy_keep(s, &late, 0), L3_KEEP);
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_EARLY);
    atomic_store(&s->sh->seq, w + 5000 + 3000); /* the verdict a moment after the early read */
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP); /* (read in the last 3/4 of so short a time) */
}

/* Judge `n` early keeps whose slab is reused again, `read` of them read
 * since they moved: half themselves, half through their group. */
static void judge(l3_slabstore *s, int n, int read)
{
    for (int i = 0; i < n; i++) {
        l3_index_entry e = { .slab = 0, .seq = 1, .flags = L3_ENTRY_EARLY };
        if (i < read / 2)
            l3_policy_read(s, &e);
        l3_policy_judge(s, &e, i >= read / 2 && i < read ? 2 : 0);
    }
}

/* An object written at 100 and read at 110, the store at 1000 holding
 * 50 objects: an early keep's candidate. */
static l3_index_entry read_early(l3_slabstore *s)
{
    l3_index_entry early = { .slab = 0, .seq = 100 };
    atomic_store(&s->sh->seq, 110);
    l3_policy_read(s, &early);
    atomic_store(&s->sh->seq, 1000);
    s->index.meta->count = 50;
    return early;
}

/* Early keeps go on while 1 in 8 of them is read again before its slab
 * is reused again; else they pause while the store writes four times
 * what it holds, then a new trial starts. */
static void early_keeps_pause_when_too_few_are_read_again(void **state)
{
    l3_slabstore *s = *state;
    l3_index_entry early = read_early(s);
    judge(s, 8, 8);
    l3_index_entry other = { .slab = 0, .seq = 1 };
    l3_policy_read(s, &other);
    l3_policy_judge(s, &other, 0); /* not an early keep: not judged */
    l3_index_entry before = { .slab = 0, .seq = 5, .flags = L3_ENTRY_EARLY };
    l3_policy_judge(s, &before, 5); /* its group read, but not since its move */
    assert_int_equal(s->sh->keep_trial.judged, 9);
    assert_int_equal(s->sh->keep_trial.read, 8);
    judge(s, 54, 0);
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_EARLY); /* 63 judged: too few to say */
    judge(s, 1, 0); /* 8 of 64 read: 1 in 8 */
    assert_int_equal(s->sh->keep_trial.judged, 64);
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_EARLY);
    judge(s, 1, 0); /* 8 of 65: below */
    assert_int_equal(s->sh->keep_trial.off_until, 1000 + 4 * 50);
    assert_int_equal(s->sh->keep_trial.judged, 0); /* the next trial starts afresh */
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_NOT);
    judge(s, 100, 100); /* what moved before the pause is not the next trial's */
    assert_int_equal(s->sh->keep_trial.judged, 0);
    atomic_store(&s->sh->seq, 1199);
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_NOT);
    atomic_store(&s->sh->seq, 1200);
    assert_int_equal(l3_policy_keep(s, &early, 0), L3_KEEP_EARLY); /* tried again */
    /* The counts halve as they grow: the measure follows the workload. */
    judge(s, 8192, 8192);
    assert_true(s->sh->keep_trial.judged < 8192);
    assert_int_equal(s->sh->keep_trial.read, s->sh->keep_trial.judged);
}

/* Keep `early` as an early keep `n` times; how many times it moved. */
static int keep_early(l3_slabstore *s, const l3_index_entry *early, int n)
{
    int moved = 0;
    for (int i = 0; i < n; i++)
        moved += l3_policy_keep(s, early, 0) == L3_KEEP_EARLY;
    return moved;
}

/* A trial moves 512 early keeps, then waits for its verdict: while they
 * pay they move without a count; a trial never judged (its keeps gone
 * another way) starts again after two turns of the store. */
static void early_keeps_are_tried_then_move_while_they_pay(void **state)
{
    l3_slabstore *s = *state;
    l3_index_entry early = read_early(s);
    assert_int_equal(keep_early(s, &early, 600), 512); /* the trial */
    judge(s, 8, 8);
    judge(s, 56, 0); /* 8 of 64 read: they pay */
    assert_int_equal(keep_early(s, &early, 600), 600);
    judge(s, 1, 0); /* 8 of 65: they do not */
    assert_int_equal(keep_early(s, &early, 1), 0);
    atomic_store(&s->sh->seq, 1200); /* the pause is over: a new trial */
    assert_int_equal(keep_early(s, &early, 600), 512);
    atomic_store(&s->sh->seq, 1300);
    assert_int_equal(keep_early(s, &early, 1), 0); /* waiting for its verdict */
    atomic_store(&s->sh->seq, 1301);
    assert_int_equal(keep_early(s, &early, 1), 1); /* none came in two turns: tried again */
}

/* The write budget's bucket (budget.c), on a clock the test moves. */
static void the_write_budget_is_a_bucket_of_ten_seconds(void **state)
{
    (void)state;
    l3_budget b = { 0 };
    uint64_t t = 5000000000ull;
    assert_true(l3_budget_take(&b, 0, t, 1ull << 40, false)); /* no budget: everything */
    assert_false(l3_budget_used(&b));
    assert_true(l3_budget_take(&b, 1000, t, 6000, false)); /* 1000 bytes a second: a bucket of 10000 */
    assert_true(l3_budget_used(&b));
    assert_false(l3_budget_take(&b, 1000, t, 6000, false));
    assert_true(l3_budget_take(&b, 1000, t, 4000, false));
    t += 3000000000ull; /* three seconds later: 3000 more */
    assert_true(l3_budget_take(&b, 1000, t, 2900, false));
    assert_false(l3_budget_take(&b, 1000, t, 500, false));
    t += 100000000000ull; /* long after: a full bucket, not more */
    assert_true(l3_budget_take(&b, 1000, t, 10000, false));
    assert_false(l3_budget_take(&b, 1000, t, 1, false));
}

static void a_first_sighting_needs_the_bucket_half_full(void **state)
{
    (void)state;
    l3_budget b = { 0 };
    uint64_t t = 1;
    assert_true(l3_budget_take(&b, 1000, t, 4000, true));  /* a full bucket of 10000: 6000 left */
    assert_true(l3_budget_take(&b, 1000, t, 1000, true));  /* 6000: 5000 left */
    assert_true(l3_budget_take(&b, 1000, t, 1000, true));  /* 5000 is half full: 4000 left */
    assert_false(l3_budget_take(&b, 1000, t, 10, true));   /* 4000: a first sighting waits */
    assert_true(l3_budget_take(&b, 1000, t, 1000, false)); /* a second sighting needs its bytes only: 3000 */
    t += 2000000000ull;                                     /* two seconds later: 5000 */
    assert_true(l3_budget_take(&b, 1000, t, 10, true));
}

/* The bucket is shared by processes whose clocks may differ (a caller's
 * budget_clock): one behind never moves it back, or the next would refill
 * the same seconds again. */
static void a_clock_behind_never_moves_the_bucket_back(void **state)
{
    (void)state;
    l3_budget b = { 0 };
    assert_true(l3_budget_take(&b, 1000, 100000000000ull, 10000, false)); /* empty at 100 s */
    assert_false(l3_budget_take(&b, 1000, 50000000000ull, 1, false));     /* another process, 50 s behind */
    /* one second after the first: 1000, not 51 s of it */
    assert_true(l3_budget_take(&b, 1000, 101000000000ull, 1000, false));
    assert_false(l3_budget_take(&b, 1000, 101000000000ull, 1, false));
}

static void room_counts_free_and_empty_slabs_and_open_slots(void **state)
{
    l3_slabstore *s = *state;
    assert_int_equal(l3_policy_room(s), 8ull * SLAB); /* all free */
    all_sealed(s);
    assert_int_equal(l3_policy_room(s), 0);
    s->slabs[1].live = 0;
    s->slabs[2].state = S_OPEN;
    s->slabs[2].next_slot = s->slabs[2].nslots - 2;
    assert_int_equal(l3_policy_room(s), SLAB + 2 * l3_slot_bytes(&s->geo, 16));
    s->slabs[1].inflight = 1; /* an empty slab being written is no room */
    assert_int_equal(l3_policy_room(s), 2 * l3_slot_bytes(&s->geo, 16));
}

/* With probation and main both written, a wave may land in either log and
 * reinsertion moves into main's: only the smaller log's open slots are
 * room (counting probation's let main's moves find no free slab and evict
 * a live one unread: 717 slabs in a replay of the conversation trace). */
static void room_counts_the_smaller_log_s_open_slots_while_both_are_written(void **state)
{
    l3_slabstore *s = *state;
    all_sealed(s);
    uint64_t slot = l3_slot_bytes(&s->geo, 16);
    s->slabs[1].state = S_OPEN; /* main's open slab: 2 slots left */
    s->slabs[1].log = LOG_MAIN;
    s->slabs[1].next_slot = s->slabs[1].nslots - 2;
    s->slabs[2].state = S_OPEN; /* probation's: 5 left */
    s->slabs[2].log = LOG_PROBATION;
    s->slabs[2].next_slot = s->slabs[2].nslots - 5;
    atomic_store(&s->sh->admit.rung, L3_LADDER_LEN - 1); /* one log (main's) */
    assert_int_equal(l3_policy_room(s), 2 * slot);
    atomic_store(&s->sh->admit.rung, 3); /* probation and main */
    assert_int_equal(l3_policy_room(s), 2 * slot);
    s->slabs[1].next_slot = s->slabs[1].nslots - 9;
    assert_int_equal(l3_policy_room(s), 5 * slot);
    s->slabs[3].live = 0; /* and an empty slab, whoever takes it */
    assert_int_equal(l3_policy_room(s), SLAB + 5 * slot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        T(fifo_takes_the_slab_opened_first),
        T(free_and_empty_slabs_come_first_unless_live_objects_are_needed),
        T(writes_in_flight_offline_and_leased_slabs_are_passed_over),
        T(lru_slab_takes_the_least_recently_read_or_written),
        T(a_device_s_victims_are_its_own_slabs),
        T(reinsertion_keeps_what_was_read_late_in_its_time),
        T(a_coarse_read_stamp_keeps_late_and_early_reads_apart),
        T(early_keeps_pause_when_too_few_are_read_again),
        T(early_keeps_are_tried_then_move_while_they_pay),
        T(the_write_budget_is_a_bucket_of_ten_seconds),
        T(a_first_sighting_needs_the_bucket_half_full),
        T(a_clock_behind_never_moves_the_bucket_back),
        T(room_counts_free_and_empty_slabs_and_open_slots),
        T(room_counts_the_smaller_log_s_open_slots_while_both_are_written),
    };
    return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
