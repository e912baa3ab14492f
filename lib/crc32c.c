#include "l3_crc32c.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++)
            table[k][n] = (table[k - 1][n] >> 8) ^ table[0][table[k - 1][n] & 0xff];
}

static uint32_t crc_soft(uint32_t crc, const unsigned char *p, size_t len)
{
    pthread_once(&table_once, build_table);
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
              table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
#include <cpuid.h>

/* One stream of crc32 instructions, 8 bytes at a time (bytes before and
 * after the aligned words one at a time). */
__attribute__((target("sse4.2"))) static uint32_t crc_hw_run(uint32_t crc, const unsigned char *p,
                                                             size_t len)
{
    uint64_t c = crc;
    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}

/* Multiply two polynomials mod P (bit-reflected), for stream combination. */
static uint32_t gf2_mul(uint32_t a, uint32_t b)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i++) {
        if (a & 0x80000000u)
            r ^= b;
        a <<= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return r;
}

/* x^(8n) mod P in reflected form: the operator that appends n zero bytes. */
static uint32_t x8n(size_t n)
{
    uint32_t r = 0x80000000u; /* x^0 */
    uint32_t sq = 0x00800000u; /* x^8 */
    while (n) {
        if (n & 1)
            r = gf2_mul(r, sq);
        sq = gf2_mul(sq, sq);
        n >>= 1;
    }
    return r;
}

#define STRIPE ((size_t)8192)
static uint32_t shift_stripe;
static uint32_t shift_2stripe;
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;
static void build_shift(void)
{
    shift_stripe = x8n(STRIPE);
    shift_2stripe = x8n(2 * STRIPE);
}

/* Three interleaved streams of STRIPE bytes hide the crc32 instruction's
 * 3-cycle latency; the streams are combined by multiplying each by the
 * operator that appends the bytes after it (x8n: shift_stripe,
 * shift_2stripe). Below 3 stripes, and for the rest, one stream. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t len)
{
    if (len < 3 * STRIPE)
        return crc_hw_run(crc, p, len);
    pthread_once(&shift_once, build_shift);
    uint32_t raw = crc;
    while (len >= 3 * STRIPE) {
        /* Streams b and c start from zero; CRC is linear in its register,
         * so raw(ABC) = shift(ra, 2S) ^ shift(rb, S) ^ rc. */
        uint64_t a = raw, b = 0, cc = 0;
        const unsigned char *pa = p, *pb = p + STRIPE, *pc = p + 2 * STRIPE;
        for (size_t i = 0; i < STRIPE; i += 8) {
            uint64_t wa, wb, wc;
            memcpy(&wa, pa + i, 8);
            memcpy(&wb, pb + i, 8);
            memcpy(&wc, pc + i, 8);
            a = __builtin_ia32_crc32di(a, wa);
            b = __builtin_ia32_crc32di(b, wb);
            cc = __builtin_ia32_crc32di(cc, wc);
        }
        raw = gf2_mul((uint32_t)a, shift_2stripe) ^ gf2_mul((uint32_t)b, shift_stripe) ^ (uint32_t)cc;
        p += 3 * STRIPE;
        len -= 3 * STRIPE;
    }
    return crc_hw_run(raw, p, len);
}

static int hw_checked = -1;
static void check_hw(void)
{
    unsigned a, b, c, d;
    hw_checked = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
static pthread_once_t hw_once = PTHREAD_ONCE_INIT;

int l3_crc32c_hardware(void)
{
    pthread_once(&hw_once, check_hw);
    return hw_checked;
}

uint32_t l3_crc32c_builtin(uint32_t crc, const void *data, size_t len)
{
    if (l3_crc32c_hardware())
        return ~crc_hw(~crc, data, len);
    return ~crc_soft(~crc, data, len);
}
#define BUILTIN_NAME (l3_crc32c_hardware() ? "sse4.2" : "table")
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
int l3_crc32c_hardware(void) { return 1; }
#define BUILTIN_NAME "armv8"
uint32_t l3_crc32c_builtin(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __crc32cd(c, w);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = __crc32cb(c, *p++);
    return ~c;
}
#else
int l3_crc32c_hardware(void) { return 0; }
#define BUILTIN_NAME "table"
uint32_t l3_crc32c_builtin(uint32_t crc, const void *data, size_t len)
{
    return ~crc_soft(~crc, data, len);
}
#endif

#ifdef L3_HAVE_ISAL
#include <isa-l/crc.h>
#include <limits.h>

uint32_t l3_crc32c(uint32_t crc, const void *data, size_t len)
{
    /* ISA-L's crc32_iscsi takes the raw register and an int length. */
    const unsigned char *p = data;
    uint32_t raw = ~crc;
    while (len) {
        int n = len > (size_t)INT_MAX ? INT_MAX & ~4095 : (int)len;
        raw = crc32_iscsi((unsigned char *)p, n, raw);
        p += n;
        len -= (size_t)n;
    }
    return ~raw;
}

const char *l3_crc32c_engine(void) { return "isa-l"; }
#else
uint32_t l3_crc32c(uint32_t crc, const void *data, size_t len)
{
    return l3_crc32c_builtin(crc, data, len);
}

const char *l3_crc32c_engine(void) { return BUILTIN_NAME; }
#endif
