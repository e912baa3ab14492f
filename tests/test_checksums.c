/* CRC-32C and SHA-256 against published vectors, and the hardware CRC
 * against the table one over every length and alignment that matters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "l3_crc32c.h"
#include "sha256.h"

static void crc32c_matches_the_check_value(void **state)
{
    (void)state;
    assert_int_equal(l3_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(l3_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4: 32 bytes of zeros. */
    unsigned char zeros[32] = { 0 };
    assert_int_equal(l3_crc32c(0, zeros, 32), 0x8a9136aau);
    unsigned char ones[32];
    memset(ones, 0xff, sizeof ones);
    assert_int_equal(l3_crc32c(0, ones, 32), 0x62a8ab43u);
}

/* Bit-at-a-time reference. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static void crc32c_is_incremental_and_matches_bitwise_on_long_buffers(void **state)
{
    (void)state;
    size_t n = 3 * 8192 * 3 + 777;
    unsigned char *buf = malloc(n + 8);
    unsigned seed = 12345;
    for (size_t i = 0; i < n + 8; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (unsigned char)(seed >> 16);
    }
    for (size_t off = 0; off < 8; off += 3) {
        size_t lens[] = { 0, 1, 7, 8, 9, 4096, 24575, 24576, 24577, 49152 + 5, n };
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            uint32_t want = crc_bitwise(buf + off, lens[i]);
            assert_int_equal(l3_crc32c(0, buf + off, lens[i]), want);
            assert_int_equal(l3_crc32c_builtin(0, buf + off, lens[i]), want);
            size_t half = lens[i] / 3;
            uint32_t part = l3_crc32c(0, buf + off, half);
            assert_int_equal(l3_crc32c(part, buf + off + half, lens[i] - half), want);
            assert_int_equal(l3_crc32c_builtin(part, buf + off + half, lens[i] - half), want);
        }
    }
    free(buf);
}

static void hex(const uint8_t d[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha256_matches_fips_vectors(void **state)
{
    (void)state;
    uint8_t d[32];
    char h[65];
    l3_sha256("abc", 3, d);
    hex(d, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    l3_sha256("", 0, d);
    hex(d, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    l3_sha256(two, strlen(two), d);
    hex(d, h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc32c_matches_the_check_value),
        cmocka_unit_test(crc32c_is_incremental_and_matches_bitwise_on_long_buffers),
        cmocka_unit_test(sha256_matches_fips_vectors),
    };
    return cmocka_run_group_tests_name("checksums", tests, NULL, NULL);
}
