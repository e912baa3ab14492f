/* l3bench --compare's sizing to the free space (bench/compare_space.c):
 * the plan on file systems of made-up sizes. A run that fits is kept as
 * asked; on a smaller disk the mixed phase, then recovery, then the
 * rounds shrink to the most that fits with the margin (and no more: one
 * step more would not); below a phase's least the plan refuses and says
 * which; several directories share their file system's space. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "compare_space.h"

#define MIB (1ull << 20)
#define GB 1000000000ull

static const uint64_t sizes[4] = { 64 << 10, 256 << 10, 1 << 20, 4 << 20 };

/* --compare's defaults: 1 GiB a run at four sizes, the mixed phase over
 * 1 GiB of 1 MiB pages in 3 rounds, recovery of a million objects. */
static cmp_space_ask defaults(void)
{
    return (cmp_space_ask){ .total = 1ull << 30, .sizes = sizes, .num_sizes = 4, .mixed_total = 1ull << 30,
                            .mixed_page = MIB, .mixed_rounds = 3, .recovery_objects = 1000000 };
}

static cmp_space_fs one_fs(uint64_t free) { return (cmp_space_fs){ .free = free, .dirs = 1, .first = true }; }

static uint64_t room(uint64_t free) { return free - cmp_space_margin(free); }

static void the_margin_is_a_twentieth_and_at_least_256_mib(void **state)
{
    (void)state;
    assert_int_equal(cmp_space_margin(1 * GB), 256 * MIB);
    assert_int_equal(cmp_space_margin(100 * GB), 5 * GB);
}

static void a_run_that_fits_is_kept_as_asked(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    cmp_space_fs fs = one_fs(100 * GB);
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_true(p.ok);
    assert_int_equal(p.total, a.total);
    assert_int_equal(p.mixed_total, a.mixed_total);
    assert_int_equal(p.recovery_objects, a.recovery_objects);
    /* The largest phase is the mixed one: 13 GiB of 1 MiB pages and their headers, a tenth more. */
    assert_int_equal(p.need, cmp_space_mixed(a.mixed_total, MIB, 3));
    assert_true(p.need > 15 * GB && p.need < 16 * GB);
    assert_int_equal(p.free, 100 * GB);
    assert_int_equal(p.room, 95 * GB);
}

static void on_a_smaller_disk_the_mixed_phase_shrinks_to_the_most_that_fits(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    cmp_space_fs fs = one_fs(12 * GB);
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_true(p.ok);
    assert_int_equal(p.total, a.total);                         /* the rounds fit: 6.3 GB */
    assert_int_equal(p.recovery_objects, a.recovery_objects);   /* 8.9 GB fits too */
    assert_true(p.mixed_total < a.mixed_total && p.mixed_total >= CMP_SPACE_MIN_MIXED);
    assert_int_equal(p.mixed_total % MIB, 0);
    assert_true(cmp_space_mixed(p.mixed_total, MIB, 3) <= room(12 * GB));
    assert_true(cmp_space_mixed(p.mixed_total + MIB, MIB, 3) > room(12 * GB)); /* the most, not less */
    assert_true(p.need <= p.room);
}

static void on_a_small_disk_every_phase_shrinks_and_the_rounds_by_the_largest_size(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    cmp_space_fs fs = one_fs(4 * GB);
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_true(p.ok);
    assert_true(p.total < a.total && p.total >= CMP_SPACE_MIN_TOTAL);
    assert_int_equal(p.total % (4 * MIB), 0);
    assert_true(p.mixed_total < a.mixed_total);
    assert_true(p.recovery_objects < a.recovery_objects && p.recovery_objects >= CMP_SPACE_MIN_RECOVERY);
    assert_int_equal(p.recovery_objects % 1000, 0);
    assert_true(cmp_space_recovery(p.recovery_objects) <= room(4 * GB));
    assert_true(cmp_space_recovery(p.recovery_objects + 1000) > room(4 * GB));
    assert_true(p.need <= p.room);
    /* One step more of the rounds would not fit: the plan at that total is refused or shrunk back. */
    cmp_space_ask more = a;
    more.total = p.total + 4 * MIB;
    more.mixed_total = 0;
    more.recovery_objects = 0;
    cmp_space_plan q = cmp_space_fit(&more, &fs, 1);
    assert_true(q.ok);
    assert_int_equal(q.total, p.total);
}

static void below_the_least_the_plan_refuses_and_names_the_phase(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    cmp_space_fs fs = one_fs(1500 * MIB); /* the rounds at 256 MiB need about 2 GB */
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_false(p.ok);
    assert_string_equal(p.short_of, "the rounds");
    assert_int_equal(p.short_fs, 0);
    assert_true(p.short_need > 1500 * MIB);
    /* What it says it needs is enough: that much free fits the rounds at their least. */
    cmp_space_ask rounds = a;
    rounds.total = CMP_SPACE_MIN_TOTAL;
    rounds.mixed_total = 0;
    rounds.recovery_objects = 0;
    fs.free = p.short_need;
    assert_true(cmp_space_fit(&rounds, &fs, 1).ok);
    fs.free = p.short_need - 64 * MIB;
    assert_false(cmp_space_fit(&rounds, &fs, 1).ok);
}

static void the_steady_state_store_is_never_shrunk(void **state)
{
    (void)state;
    cmp_space_ask a = { .total = 4 * MIB, .sizes = sizes, .num_sizes = 1, .mixed_page = MIB, .mixed_rounds = 3 };
    cmp_space_fs fs = one_fs(1 * GB); /* 768 MiB after the margin: the rounds fit, the 1 GiB store not */
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_false(p.ok);
    assert_string_equal(p.short_of, "the steady-state phase");
}

/* test_bench's run: 4 MiB a run, 2,000 objects of recovery, less than
 * each phase's least: kept as asked where it fits, refused where not. */
static void a_small_run_is_kept_as_asked_and_not_grown(void **state)
{
    (void)state;
    cmp_space_ask a = { .total = 4 * MIB, .sizes = sizes, .num_sizes = 1, .mixed_total = 4 * MIB,
                        .mixed_page = MIB, .mixed_rounds = 3, .recovery_objects = 2000 };
    cmp_space_fs fs = one_fs(3 * GB);
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_true(p.ok);
    assert_int_equal(p.total, 4 * MIB);
    assert_int_equal(p.mixed_total, 4 * MIB);
    assert_int_equal(p.recovery_objects, 2000);
    assert_int_equal(p.need, CMP_SPACE_STEADY);
    a.total = 2ull << 30; /* 2 GiB of 64 KiB objects: 11 GB, not 3 */
    p = cmp_space_fit(&a, &fs, 1);
    assert_true(p.ok);
    assert_true(p.total < a.total && p.total >= CMP_SPACE_MIN_TOTAL);
}

static void phases_not_run_ask_for_nothing(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    a.mixed_total = 0;       /* --no-mixed */
    a.recovery_objects = 0;  /* --recovery-objects 0 */
    cmp_space_fs fs = one_fs(8 * GB);
    cmp_space_plan p = cmp_space_fit(&a, &fs, 1);
    assert_true(p.ok);
    assert_int_equal(p.total, a.total);
    assert_int_equal(p.mixed_total, 0);
    assert_int_equal(p.recovery_objects, 0);
    assert_true(p.need < 7 * GB); /* the rounds alone, at 64 KiB */
}

static void directories_on_one_file_system_share_it(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    a.mixed_total = 0;
    a.recovery_objects = 0;
    cmp_space_fs one = one_fs(7 * GB), shared = one_fs(7 * GB); /* 6.65 GB after the margin */
    shared.dirs = 2;
    cmp_space_plan p1 = cmp_space_fit(&a, &one, 1), p2 = cmp_space_fit(&a, &shared, 1);
    assert_true(p1.ok && p2.ok);
    /* One directory's rounds take 6.3 GB at 64 KiB; over two files the stores' 256 MiB of slack is
     * there twice over, 6.8 GB. */
    assert_int_equal(p1.total, a.total);
    assert_true(p2.total < a.total);
}

static void a_second_file_system_bounds_the_rounds_alone(void **state)
{
    (void)state;
    cmp_space_ask a = defaults();
    cmp_space_fs fs[2] = { one_fs(100 * GB), { .free = 2 * GB, .dirs = 1, .dir = 1 } };
    cmp_space_plan p = cmp_space_fit(&a, fs, 2);
    assert_true(p.ok);
    assert_true(p.total < a.total); /* the second holds half the rounds' stores and fio's files */
    assert_int_equal(p.mixed_total, a.mixed_total); /* the phases beside the rounds run on the first */
    assert_int_equal(p.recovery_objects, a.recovery_objects);
    assert_int_equal(p.free, 100 * GB);
    fs[1].free = 600 * MIB;
    p = cmp_space_fit(&a, fs, 2);
    assert_false(p.ok);
    assert_string_equal(p.short_of, "the rounds");
    assert_int_equal(p.short_fs, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_margin_is_a_twentieth_and_at_least_256_mib),
        cmocka_unit_test(a_run_that_fits_is_kept_as_asked),
        cmocka_unit_test(on_a_smaller_disk_the_mixed_phase_shrinks_to_the_most_that_fits),
        cmocka_unit_test(on_a_small_disk_every_phase_shrinks_and_the_rounds_by_the_largest_size),
        cmocka_unit_test(below_the_least_the_plan_refuses_and_names_the_phase),
        cmocka_unit_test(the_steady_state_store_is_never_shrunk),
        cmocka_unit_test(a_small_run_is_kept_as_asked_and_not_grown),
        cmocka_unit_test(phases_not_run_ask_for_nothing),
        cmocka_unit_test(directories_on_one_file_system_share_it),
        cmocka_unit_test(a_second_file_system_bounds_the_rounds_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
