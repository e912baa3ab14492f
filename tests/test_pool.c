/* l3_pool_alloc: 2 MiB-aligned, zeroed, whole, advised as huge pages; and
 * l3_aligned_alloc, the small aligned buffers' allocator. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aligned.h"
#include "harness.h"
#include "l3_pool.h"

#define MIB (1ull << 20)

/* The "THPeligible" line of the mapping that holds `p` in /proc/self/smaps:
 * 1 when the kernel may back it with huge pages, -1 if not found. */
static int thp_eligible(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    bool inside = false;
    int found = -1;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = a >= lo && a < hi;
            continue;
        }
        int v;
        if (inside && sscanf(line, "THPeligible: %d", &v) == 1) {
            found = v;
            break;
        }
    }
    fclose(f);
    return found;
}

static void a_pool_is_aligned_zeroed_and_whole(void **state)
{
    (void)state;
    size_t len = 5 * MIB + 12345; /* not a multiple of the huge page */
    l3_error err;
    uint8_t *p = l3_pool_alloc(len, &err);
    assert_non_null(p);
    assert_int_equal((uintptr_t)p % (2 * MIB), 0);
    for (size_t i = 0; i < len; i += 4096)
        assert_int_equal(p[i], 0);
    assert_int_equal(p[len - 1], 0);
    memset(p, 0xab, len);
    assert_int_equal(p[len - 1], 0xab);
    l3_pool_free(p, len);
}

static void a_pool_is_advised_as_huge_pages_where_the_kernel_has_them(void **state)
{
    (void)state;
    if (!l3_pool_huge_pages() || thp_eligible(&state) < 0)
        skip_environment("transparent huge pages are off (or smaps has no THPeligible)");
    size_t len = 8 * MIB;
    uint8_t *p = l3_pool_alloc(len, NULL);
    assert_non_null(p);
    p[0] = 1;
    assert_int_equal(thp_eligible(p), 1);
    assert_int_equal(thp_eligible(p + len - 1), 1);
    l3_pool_free(p, len);
}

static void an_empty_pool_is_refused_with_a_message(void **state)
{
    (void)state;
    l3_error err;
    l3_error_clear(&err);
    assert_null(l3_pool_alloc(0, &err));
    assert_int_equal(err.code, L3_EINVAL);
    assert_true(strlen(err.msg) > 0);
    l3_pool_free(NULL, 0); /* a no-op */
}

static void an_aligned_buffer_is_aligned_zeroed_when_asked_and_never_empty(void **state)
{
    (void)state;
    size_t aligns[] = { 4096, 8192, 1u << 20 };
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        uint8_t *p = l3_aligned_alloc(aligns[a], 3 * aligns[a] + 1, true);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % aligns[a], 0);
        for (size_t i = 0; i < 3 * aligns[a] + 1; i++)
            assert_int_equal(p[i], 0);
        free(p);
    }
    uint8_t *raw = l3_aligned_alloc(4096, 12345, false);
    assert_non_null(raw);
    assert_int_equal((uintptr_t)raw % 4096, 0);
    memset(raw, 0xa5, 12345); /* all of it is ours */
    free(raw);
    uint8_t *one = l3_aligned_alloc(4096, 0, true); /* a zero length is one block */
    assert_non_null(one);
    assert_int_equal((uintptr_t)one % 4096, 0);
    for (size_t i = 0; i < 4096; i++)
        assert_int_equal(one[i], 0);
    free(one);
    assert_null(l3_aligned_alloc(4095, 4096, false)); /* not a power of two */
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_pool_is_aligned_zeroed_and_whole),
        cmocka_unit_test(an_empty_pool_is_refused_with_a_message),
        cmocka_unit_test(an_aligned_buffer_is_aligned_zeroed_when_asked_and_never_empty),
    };
    /* Its own ctest entry, test_pool_huge_pages (skipped without THP). */
    const struct CMUnitTest environment[] = {
        cmocka_unit_test(a_pool_is_advised_as_huge_pages_where_the_kernel_has_them),
    };
    if (argc > 1)
        return run_environment_case("pool", environment, ARRAY_LEN(environment), argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
