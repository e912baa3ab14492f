#include "index.h"

#include <string.h>

#include "l3_crc32c.h"
#include "hash.h"
#include "invariant.h"

l3_key_id l3_key_identity(const char *key, size_t len)
{
    return (l3_key_id){ .hash = l3_hash64(key, len), .check = l3_crc32c(0, key, len),
                        .len = (uint16_t)len };
}

uint64_t l3_index_capacity_for(uint64_t max_entries)
{
    /* A load of at most 7/8 at the bound, in whole cache lines' worth of
     * entries (not a power of two: RAM in proportion to the bound). */
    uint64_t cap = max_entries + max_entries / 7 + 1;
    cap = (cap + 63) / 64 * 64;
    return cap < 1024 ? 1024 : cap;
}

void l3_index_prefetch(const l3_index *ix, uint64_t hash)
{
    __builtin_prefetch(&ix->table[l3_index_home(ix, hash)], 1);
}

/* The slot after `i`, wrapping around. */
static inline uint64_t next_of(const l3_index *ix, uint64_t i) { return i == ix->meta->mask ? 0 : i + 1; }

void l3_index_format(l3_index_meta *meta, uint64_t max_entries)
{
    meta->mask = l3_index_capacity_for(max_entries) - 1;
    meta->max = max_entries;
    meta->count = 0;
}

l3_index_entry *l3_index_find(l3_index *ix, l3_key_id id)
{
    for (uint64_t i = l3_index_home(ix, id.hash);; i = next_of(ix, i)) {
        l3_index_entry *e = &ix->table[i];
        if (e->hash == 0)
            return NULL;
        if (e->hash == id.hash && e->key_len == id.len)
            return e;
    }
}

l3_index_entry *l3_index_find_at(l3_index *ix, uint32_t id, uint32_t slab, uint32_t slot)
{
    /* The id keeps the hash's top 31 bits: with at most 2^31 slots its
     * home is this slot or the next, and a probe from an empty one starts
     * at the next. */
    L3_ASSERT(ix->meta->mask < (1ull << 31));
    uint64_t i = l3_index_home(ix, (uint64_t)(id & ~1u) << 32);
    if (ix->table[i].hash == 0)
        i = next_of(ix, i);
    for (;; i = next_of(ix, i)) {
        l3_index_entry *e = &ix->table[i];
        if (e->hash == 0)
            return NULL;
        if (l3_slot_id(e->hash) == id && e->slab == slab && e->slot == slot)
            return e;
    }
}

/* Put `entry` into the empty slot `e` and count it: everything but the
 * hash first, then the hash, which publishes it. */
static void place(l3_index *ix, l3_index_entry *e, const l3_index_entry *entry)
{
    l3_index_entry c = *entry;
    c.hash = 0;
    *e = c;
    __atomic_store_n(&e->hash, entry->hash, __ATOMIC_RELEASE);
    ix->meta->count++;
}

bool l3_index_insert(l3_index *ix, const l3_index_entry *entry)
{
    if (ix->meta->count >= ix->meta->max)
        return false;
    uint64_t i = l3_index_home(ix, entry->hash);
    while (ix->table[i].hash)
        i = next_of(ix, i);
    place(ix, &ix->table[i], entry);
    return true;
}

l3_index_put l3_index_insert_unique(l3_index *ix, const l3_index_entry *entry)
{
    for (uint64_t i = l3_index_home(ix, entry->hash);; i = next_of(ix, i)) {
        l3_index_entry *e = &ix->table[i];
        if (e->hash == entry->hash && e->key_len == entry->key_len)
            return L3_INDEX_PRESENT;
        if (e->hash == 0) {
            if (ix->meta->count >= ix->meta->max)
                return L3_INDEX_FULL;
            place(ix, e, entry);
            return L3_INDEX_ADDED;
        }
    }
}

void l3_index_remove(l3_index *ix, l3_index_entry *entry)
{
    uint64_t hole = (uint64_t)(entry - ix->table);
    /* Backward shift: move later entries of the run into the hole when
     * their home slot does not lie cyclically in (hole, j]. */
    for (uint64_t j = next_of(ix, hole); ix->table[j].hash; j = next_of(ix, j)) {
        uint64_t home = l3_index_home(ix, ix->table[j].hash);
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            ix->table[hole] = ix->table[j];
            hole = j;
        }
    }
    memset(&ix->table[hole], 0, sizeof ix->table[hole]);
    ix->meta->count--;
}

bool l3_index_walk_end(const l3_index_walk *w)
{
    return !w->misplaced && !(w->any_wrapped && w->any_empty && w->last_empty >= w->min_wrapped_home);
}

bool l3_index_adopt(l3_index *ix, uint64_t count)
{
    if (count > ix->meta->max)
        return false;
    ix->meta->count = count;
#if L3_ASSERT_ON
    /* Every entry is where a probe for its key finds it. */
    uint64_t seen = 0;
    for (uint64_t i = 0; i <= ix->meta->mask; i++) {
        const l3_index_entry *e = &ix->table[i];
        if (!e->hash)
            continue;
        seen++;
        L3_ASSERT(l3_index_find(ix, (l3_key_id){ .hash = e->hash, .len = e->key_len }) == e);
    }
    L3_ASSERT(seen == count);
#endif
    return true;
}

void l3_index_clear(l3_index *ix)
{
    memset(ix->table, 0, (ix->meta->mask + 1) * sizeof *ix->table);
    ix->meta->count = 0;
}
