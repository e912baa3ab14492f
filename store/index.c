#include "l3_index.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "l3_crc32c.h"
#include "l3_hash.h"

l3_key_id l3_key_identity(const char *key, size_t len)
{
    return (l3_key_id){ .hash = l3_hash64(key, len), .check = l3_crc32c(0, key, len),
                        .len = (uint16_t)len };
}

l3_status l3_index_init(l3_index *ix, uint64_t max_entries, l3_error *err)
{
    memset(ix, 0, sizeof *ix);
    uint64_t cap = 1024;
    while (cap < max_entries + max_entries / 4)
        cap <<= 1;
    size_t bytes = cap * sizeof(l3_index_entry);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return l3_fail(err, L3_ENOMEM, "mapping a %zu-byte index for %llu objects: %s", bytes,
                       (unsigned long long)max_entries, strerror(errno));
    ix->table = p;
    ix->mask = cap - 1;
    ix->max = max_entries;
    ix->mapped = bytes;
    return L3_OK;
}

void l3_index_free(l3_index *ix)
{
    if (ix->table)
        munmap(ix->table, ix->mapped);
    memset(ix, 0, sizeof *ix);
}

l3_index_entry *l3_index_find(l3_index *ix, l3_key_id id)
{
    for (uint64_t i = id.hash & ix->mask;; i = (i + 1) & ix->mask) {
        l3_index_entry *e = &ix->table[i];
        if (e->hash == 0)
            return NULL;
        if (e->hash == id.hash && e->check == id.check && e->key_len == id.len)
            return e;
    }
}

bool l3_index_insert(l3_index *ix, const l3_index_entry *entry)
{
    if (ix->count >= ix->max)
        return false;
    for (uint64_t i = entry->hash & ix->mask;; i = (i + 1) & ix->mask) {
        if (ix->table[i].hash == 0) {
            ix->table[i] = *entry;
            ix->count++;
            return true;
        }
    }
}

void l3_index_remove(l3_index *ix, l3_index_entry *entry)
{
    uint64_t hole = (uint64_t)(entry - ix->table);
    /* Backward shift: move later entries of the run into the hole when
     * their home slot does not lie cyclically in (hole, j]. */
    for (uint64_t j = (hole + 1) & ix->mask; ix->table[j].hash; j = (j + 1) & ix->mask) {
        uint64_t home = ix->table[j].hash & ix->mask;
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            ix->table[hole] = ix->table[j];
            hole = j;
        }
    }
    memset(&ix->table[hole], 0, sizeof ix->table[hole]);
    ix->count--;
}

void l3_index_clear(l3_index *ix)
{
    memset(ix->table, 0, (ix->mask + 1) * sizeof *ix->table);
    ix->count = 0;
}
