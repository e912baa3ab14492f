/* l3cache: the slab store's in-memory index by object key.
 *
 * Open addressing with linear probing and backward-shift deletion over a
 * flat array of fixed 40-byte entries (no pointers), so that the table can
 * live in a mapping shared by several processes. A key is found by its
 * 64-bit hash and its length; the object header on disk holds the full
 * key, and the entry's crc is sealed with the key's crc32c (format.h,
 * l3_crc_seal), so that a payload read without its header is still
 * checked against the key asked for. Not thread-safe: the store locks around it. */
#ifndef L3_INDEX_H
#define L3_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_status.h"

/* One object, in 40 bytes. hash == 0 marks an empty slot; it is written
 * last, so an insert cut short by a dying process leaves an empty slot. */
typedef struct l3_index_entry {
    uint64_t hash;            /* l3_hash64 of the key */
    uint64_t seq : 48;        /* the object's sequence number (below L3_SEQ_LIMIT) */
    uint64_t read_stamp : 16; /* the policy's: when it was last read (policy.c) */
    uint32_t group;           /* its page's group tag (groups.h; 0: none): soft, 0 when loaded */
    uint32_t crc;             /* the payload's crc32c sealed with the key's (format.h, l3_crc_seal) */
    uint32_t size;            /* payload bytes */
    uint32_t slab : 24;       /* below L3_INDEX_SLABS (the geometry refuses more slabs) */
    uint32_t flags : 3;       /* L3_ENTRY_SEGMENTED; the policy's (policy.h) beside it */
    uint32_t spare : 5;       /* zero */
    uint64_t gen : 21;        /* the slab's generation's low bits when written (l3_index_gen) */
    uint64_t slot : 20;       /* below L3_INDEX_SLOTS (the geometry refuses more slots a slab) */
    uint64_t key_len : 12;    /* at most L3_OBJECT_KEY_MAX */
    uint64_t ns : 11;         /* namespace id, 0 for none (at most L3_MAX_NAMESPACES) */
} l3_index_entry;
_Static_assert(sizeof(l3_index_entry) == 40, "index entry size");

/* What an entry's fields hold: slabs a store may have, slots a slab may
 * have, sequence numbers a store may use. */
#define L3_INDEX_SLABS (1u << 24)
#define L3_INDEX_SLOTS (1u << 20)
#define L3_SEQ_LIMIT (1ull << 48)
#define L3_INDEX_GEN_BITS 21

/* A slab generation as an entry keeps it: its low 21 bits. An entry of a
 * reused slab is removed when its slab is; the generation is a second
 * check, for an entry a process left behind when it died mid-update (a
 * lookup drops it): it would pass only after 2^21 reuses of its slab. */
static inline uint32_t l3_index_gen(uint64_t slab_gen)
{
    return (uint32_t)(slab_gen & ((1u << L3_INDEX_GEN_BITS) - 1));
}

/* Index entry flag (in flags, bit 1): the object is of several ranges (its
 * header holds its segment table). A get of one range may read its
 * payload alone when this is clear; a get of one range of a segmented
 * object misses (the shape must be the put's). Kept in the checkpoint and
 * the slab summaries, and read from the header by a crash scan. */
#define L3_ENTRY_SEGMENTED 2u

/* The index's counters: they live beside the table (in shared memory). */
typedef struct l3_index_meta {
    uint64_t mask;     /* capacity - 1: the last slot (the capacity is not a power of two) */
    uint64_t count;
    uint64_t max;      /* entries allowed (load factor bound) */
} l3_index_meta;

/* A view of an index: its counters and table, wherever they are mapped. */
typedef struct l3_index {
    l3_index_entry *table;
    l3_index_meta *meta;
} l3_index;

/* A key's identity: the index finds it by hash and len; check, the key's
 * crc32c, seals the payload's crc. */
typedef struct l3_key_id {
    uint64_t hash;
    uint32_t check;
    uint16_t len;
} l3_key_id;

/* The identity of `key` (len bytes). */
l3_key_id l3_key_identity(const char *key, size_t len);

/* Slots of an index for up to `max_entries` objects: 8/7 of them, in whole
 * cache lines, at least 1024 (a load of at most 7/8 at the bound). */
uint64_t l3_index_capacity_for(uint64_t max_entries);

/* Start fetching the slot where the probe for `hash` begins: a bulk load
 * touches the table in random order, and a few fetches in flight at once
 * hide most of the memory latency. */
void l3_index_prefetch(const l3_index *ix, uint64_t hash);

/* Set up an empty index in `meta` and a zeroed `table` of
 * l3_index_capacity_for(max_entries) entries. */
void l3_index_format(l3_index_meta *meta, uint64_t max_entries);

/* The entry of `id`, or NULL. The pointer is valid until the next insert
 * or remove. */
l3_index_entry *l3_index_find(l3_index *ix, l3_key_id id);

/* A slot's id in the slot table: the top 31 bits of its key's hash, and
 * never 0 (an empty slot). 4 bytes per slot, not the hash's 8. */
static inline uint32_t l3_slot_id(uint64_t hash) { return (uint32_t)(hash >> 32) | 1u; }

/* The entry with this slot id at (slab, slot), or NULL: how a slab's
 * eviction finds its objects from the slot table alone. */
l3_index_entry *l3_index_find_at(l3_index *ix, uint32_t id, uint32_t slab, uint32_t slot);

/* Insert `entry` (its key must be absent); false when the index is full. */
bool l3_index_insert(l3_index *ix, const l3_index_entry *entry);

/* What l3_index_insert_unique did. */
typedef enum l3_index_put { L3_INDEX_ADDED, L3_INDEX_PRESENT, L3_INDEX_FULL } l3_index_put;

/* Insert `entry` unless its key is there already (one probe for both: a
 * bulk load's find-then-insert in one). */
l3_index_put l3_index_insert_unique(l3_index *ix, const l3_index_entry *entry);

/* Remove `entry` (a pointer from find or the table). */
void l3_index_remove(l3_index *ix, l3_index_entry *entry);

/* The slot where the probe for `hash` begins: the hash scaled to the
 * table (fastrange). */
static inline uint64_t l3_index_home(const l3_index *index, uint64_t hash)
{
    return (uint64_t)(((unsigned __int128)hash * (index->meta->mask + 1)) >> 64);
}

/* A check, slot by slot in table order, that a table filled in place
 * (a checkpoint image) holds each entry where a probe for its key finds
 * it: no empty slot between its home and it. Start zeroed. */
typedef struct l3_index_walk {
    uint64_t last_empty, min_wrapped_home;
    bool any_empty, any_wrapped, misplaced;
} l3_index_walk;

/* Walk slot i (the one after the last walked). */
static inline void l3_index_walk_slot(const l3_index *index, l3_index_walk *w, uint64_t i);

/* After the last slot: whether every entry was where a probe finds it. */
bool l3_index_walk_end(const l3_index_walk *w);

/* Take the table as filled in place (a checkpoint image read into it)
 * with `count` entries; false when that is more than its bound. */
bool l3_index_adopt(l3_index *ix, uint64_t count);

/* Remove every entry; keeps the table. */
void l3_index_clear(l3_index *ix);

/* The table's capacity, for reports. */
static inline uint64_t l3_index_capacity(const l3_index *index) { return index->meta->mask + 1; }

static inline void l3_index_walk_slot(const l3_index *index, l3_index_walk *w, uint64_t i)
{
    uint64_t hash = index->table[i].hash;
    if (!hash) {
        w->any_empty = true;
        w->last_empty = i;
        return;
    }
    uint64_t home = l3_index_home(index, hash);
    if (home <= i) {
        w->misplaced |= w->any_empty && w->last_empty >= home;
    } else { /* wrapped: nothing empty before it, nor from its home to the end (judged at the end) */
        w->misplaced |= w->any_empty;
        if (!w->any_wrapped || home < w->min_wrapped_home)
            w->min_wrapped_home = home;
        w->any_wrapped = true;
    }
}

#endif
