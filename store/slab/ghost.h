/* l3cache: the ghost, the keys the store saw recently (internal; not
 * installed): docs/admission.md, "The ghost".
 *
 * L3_GHOST_FILTERS rotating Bloom filters of one size: a sighting sets its
 * key's bits in the current filter; a key is in the ghost when any filter
 * holds it; every generation the oldest filter is cleared and becomes the
 * current one, so the ghost remembers the last 4 to 5 generations. A
 * filter is sized for the most keys one generation can name at about 1%
 * false positives (10 bits a key, 7 hashes); a false positive admits a
 * first-seen key as if it had been seen (a write the object LRU makes
 * anyway).
 *
 * Pure over its area (a header and the filters' words), so that the area
 * can live in the shared mapping: adds and lookups are atomic and need no
 * lock; a rotation runs under the caller's lock. */
#ifndef L3_GHOST_H
#define L3_GHOST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define L3_GHOST_FILTERS 5u
#define L3_GHOST_BITS_PER_KEY 10u
#define L3_GHOST_HASHES 7u

/* The ghost's header (its words follow it wherever the area is). */
typedef struct l3_ghost_head {
    uint64_t words;          /* 64-bit words per filter */
    _Atomic uint32_t current; /* the filter sightings go into */
    uint32_t pad;
} l3_ghost_head;

/* A view of a ghost: its header and its L3_GHOST_FILTERS x words words. */
typedef struct l3_ghost {
    l3_ghost_head *head;
    _Atomic uint64_t *words;
} l3_ghost;

/* The words per filter for generations of up to `keys` keys. */
uint64_t l3_ghost_words_for(uint64_t keys);

/* The bytes of a ghost's words (its header apart) for `keys` keys. */
size_t l3_ghost_bytes(uint64_t keys);

/* Set up an empty ghost of `words` words per filter (its words zeroed by
 * the caller, as a fresh mapping's are). */
void l3_ghost_format(l3_ghost_head *head, uint64_t words);

/* Note a sighting of the key whose l3_hash64 is `hash` (any lock, or none). */
void l3_ghost_add(const l3_ghost *g, uint64_t hash);

/* Whether the key whose l3_hash64 is `hash` is in the ghost. */
bool l3_ghost_has(const l3_ghost *g, uint64_t hash);

/* Start a generation (under the caller's lock): the oldest filter is
 * cleared and becomes the current one. */
void l3_ghost_rotate(const l3_ghost *g);

#endif
