/* l3cache: a fast 64-bit hash of byte strings, for in-memory indexes. */
#ifndef L3_HASH_H
#define L3_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Mix 64 bits to 64 bits (the splitmix64 finaliser). */
static inline uint64_t l3_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Hash `len` bytes: eight at a time through a multiply-xorshift, then a
 * finaliser. Stable across runs and processes (no random seed), so that a
 * shared index agrees with itself; never 0. */
static inline uint64_t l3_hash64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ l3_mix64(w)) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, len);
    h = (h ^ l3_mix64(w ^ ((uint64_t)len << 56))) * 0x9e3779b97f4a7c15ull;
    h = l3_mix64(h);
    return h ? h : 1;
}

#endif
