/* Object keys and namespace prefixes (docs/SEMANTICS.md, "Keys"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "l3_keys.h"

static void object_keys_have_the_reference_shape(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(l3_object_key("P", "abc", 3, 7, 1, out, sizeof out, NULL), L3_OK);
    assert_string_equal(out, "P_abc|g3|o7|r1");
    assert_int_equal(l3_object_key("P", "abc", 0, -2, 0, out, sizeof out, NULL), L3_OK);
    assert_string_equal(out, "P_abc|g0|o-2|r0");
}

/* The formatter is hand-written (no snprintf per key): it must agree with
 * printf's decimal forms at the extremes and on random values. */
static void object_keys_match_printf_at_every_value(void **state)
{
    (void)state;
    uint32_t u[] = { 0, 1, 9, 10, 99, 4294967295u, 2147483648u };
    int32_t o[] = { 0, -1, 1, -10, 2147483647, -2147483647 - 1 };
    char got[256], want[256];
    unsigned seed = 7;
    for (int round = 0; round < 2000; round++) {
        uint32_t g = round < 7 ? u[round] : (uint32_t)rand_r(&seed) * 2654435761u;
        int32_t off = round < 6 ? o[round] : (int32_t)((uint32_t)rand_r(&seed) * 2246822519u);
        uint32_t r = u[round % 7];
        assert_int_equal(l3_object_key("l3v1-x", "hash", g, off, r, got, sizeof got, NULL), L3_OK);
        snprintf(want, sizeof want, "l3v1-x_hash|g%u|o%d|r%u", g, off, r);
        assert_string_equal(got, want);
    }
    /* Exactly fitting and one byte short. */
    size_t n = strlen("P_h|g0|o0|r0");
    assert_int_equal(l3_object_key("P", "h", 0, 0, 0, got, n + 1, NULL), L3_OK);
    assert_string_equal(got, "P_h|g0|o0|r0");
    assert_int_equal(l3_object_key("P", "h", 0, 0, 0, got, n, NULL), L3_EINVAL);
    assert_string_equal(got, "");
}

static void an_empty_content_hash_is_an_error(void **state)
{
    (void)state;
    char out[256];
    l3_error err;
    assert_int_equal(l3_object_key("P", "", 0, 0, 0, out, sizeof out, &err), L3_EINVAL);
    assert_non_null(strstr(err.msg, "content hash"));
}

static void a_key_longer_than_the_format_allows_is_an_error(void **state)
{
    (void)state;
    static char hash[L3_OBJECT_KEY_MAX + 10], out[L3_OBJECT_KEY_MAX * 2];
    memset(hash, 'h', sizeof hash - 1);
    l3_error err;
    assert_int_equal(l3_object_key("P", hash, 0, 0, 0, out, sizeof out, &err), L3_EINVAL);
    assert_non_null(strstr(err.msg, "longer"));
    /* A buffer too small is an error too, never a truncated key. */
    char small[8];
    assert_int_equal(l3_object_key("P", "abcdefgh", 0, 0, 0, small, sizeof small, NULL), L3_EINVAL);
    assert_string_equal(small, "");
    assert_int_equal(l3_key_check("", NULL), L3_EINVAL);
    hash[L3_OBJECT_KEY_MAX] = '\0';
    assert_int_equal(l3_key_check(hash, NULL), L3_OK);
    hash[L3_OBJECT_KEY_MAX] = 'h';
    assert_int_equal(l3_key_check(hash, NULL), L3_EINVAL);
}

static void prefixes_are_fixed_charset_and_injective(void **state)
{
    (void)state;
    char a[L3_KEY_PREFIX_LEN + 1], b[L3_KEY_PREFIX_LEN + 1], c[L3_KEY_PREFIX_LEN + 1],
        d[L3_KEY_PREFIX_LEN + 1];
    assert_int_equal(l3_key_prefix("deployment", "v1", "", a, NULL), L3_OK);
    assert_int_equal(strlen(a), L3_KEY_PREFIX_LEN);
    assert_memory_equal(a, "l3v1-", 5);
    for (size_t i = 5; i < L3_KEY_PREFIX_LEN; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    assert_int_equal(l3_key_prefix("deployment", "v1", "", b, NULL), L3_OK);
    assert_string_equal(a, b);
    /* Field boundaries matter: no concatenation ambiguity. */
    assert_int_equal(l3_key_prefix("deploymentv", "1", "", c, NULL), L3_OK);
    assert_string_not_equal(a, c);
    assert_int_equal(l3_key_prefix("deployment", "v1", "v1", d, NULL), L3_OK);
    assert_string_not_equal(a, d);
    /* No prefix followed by '_' starts another namespace's keys: all
     * prefixes have one length and no '_'. */
    assert_null(strchr(a, '_'));
}

static void prefix_matches_sha256_of_the_canonical_json(void **state)
{
    (void)state;
    /* sha256('{"deployment_id":"d","draft_weight_version":"","weight_version":"w"}') */
    char p[L3_KEY_PREFIX_LEN + 1];
    assert_int_equal(l3_key_prefix("d", "w", "", p, NULL), L3_OK);
    assert_string_equal(p, "l3v1-6f9c4b7db8887148300e4bac414b6a3d477a90d02f754ee03e48ef93e8412dd5");
}

static void non_utf8_namespace_fields_are_rejected(void **state)
{
    (void)state;
    char p[L3_KEY_PREFIX_LEN + 1];
    l3_error err;
    assert_int_equal(l3_key_prefix("\xff\xfe", "v1", "", p, &err), L3_EINVAL);
    assert_non_null(strstr(err.msg, "UTF-8"));
    assert_int_equal(l3_key_prefix(NULL, "v1", "", p, NULL), L3_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(object_keys_have_the_reference_shape),
        cmocka_unit_test(object_keys_match_printf_at_every_value),
        cmocka_unit_test(an_empty_content_hash_is_an_error),
        cmocka_unit_test(a_key_longer_than_the_format_allows_is_an_error),
        cmocka_unit_test(prefixes_are_fixed_charset_and_injective),
        cmocka_unit_test(prefix_matches_sha256_of_the_canonical_json),
        cmocka_unit_test(non_utf8_namespace_fields_are_rejected),
    };
    return cmocka_run_group_tests_name("keys", tests, NULL, NULL);
}
