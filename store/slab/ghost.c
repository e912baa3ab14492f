/* The ghost: rotating Bloom filters of recent sightings (ghost.h). */
#include "ghost.h"

#include "hash.h"
#include "invariant.h"

uint64_t l3_ghost_words_for(uint64_t keys)
{
    uint64_t bits = keys * L3_GHOST_BITS_PER_KEY;
    uint64_t words = (bits + 63) / 64;
    return words < 16 ? 16 : words;
}

size_t l3_ghost_bytes(uint64_t keys)
{
    return (size_t)(L3_GHOST_FILTERS * l3_ghost_words_for(keys) * sizeof(uint64_t));
}

void l3_ghost_format(l3_ghost_head *head, uint64_t words)
{
    head->words = words;
    atomic_store(&head->current, 0);
}

/* The i-th bit of a key in a filter of `bits` bits: double hashing from
 * the key's hash and a second hash mixed from it, reduced by a multiply
 * (no division; bits need not be a power of two). */
static uint64_t bit_of(uint64_t hash, uint32_t i, uint64_t bits)
{
    uint64_t h2 = l3_mix64(hash) | 1;
    uint64_t x = hash + i * h2;
    return (uint64_t)(((unsigned __int128)x * bits) >> 64);
}

void l3_ghost_add(const l3_ghost *g, uint64_t hash)
{
    uint64_t words = g->head->words, bits = words * 64;
    uint32_t f = atomic_load_explicit(&g->head->current, memory_order_relaxed);
    L3_ASSERT(f < L3_GHOST_FILTERS);
    _Atomic uint64_t *w = g->words + (uint64_t)f * words;
    for (uint32_t i = 0; i < L3_GHOST_HASHES; i++) {
        uint64_t b = bit_of(hash, i, bits);
        uint64_t mask = 1ull << (b & 63);
        if (!(atomic_load_explicit(&w[b >> 6], memory_order_relaxed) & mask))
            atomic_fetch_or_explicit(&w[b >> 6], mask, memory_order_relaxed);
    }
}

bool l3_ghost_has(const l3_ghost *g, uint64_t hash)
{
    uint64_t words = g->head->words, bits = words * 64;
    for (uint32_t f = 0; f < L3_GHOST_FILTERS; f++) {
        const _Atomic uint64_t *w = g->words + (uint64_t)f * words;
        bool all = true;
        for (uint32_t i = 0; i < L3_GHOST_HASHES && all; i++) {
            uint64_t b = bit_of(hash, i, bits);
            all = (atomic_load_explicit(&w[b >> 6], memory_order_relaxed) >> (b & 63)) & 1;
        }
        if (all)
            return true;
    }
    return false;
}

void l3_ghost_rotate(const l3_ghost *g)
{
    uint64_t words = g->head->words;
    uint32_t next = (atomic_load(&g->head->current) + 1) % L3_GHOST_FILTERS;
    _Atomic uint64_t *w = g->words + (uint64_t)next * words;
    for (uint64_t i = 0; i < words; i++)
        atomic_store_explicit(&w[i], 0, memory_order_relaxed);
    atomic_store(&g->head->current, next);
}
