/* A slab store's state in memory, with no device, no engine and no shared
 * object: a mapping laid out as the store lays it out (shm.c), its views,
 * and this process in slot 0 of its process table. For the unit tests of
 * the rooms that work on that state alone (alloc.c, policy.c). */
#ifndef L3_TEST_SLAB_MEM_H
#define L3_TEST_SLAB_MEM_H

#include "entries.h"

/* A store of `num_slabs` slabs of `slab_size` bytes (4 KiB blocks), its
 * index bounded at `max_objects` (0: by 64 KiB objects); every slab free. */
l3_slabstore *slab_mem_new(uint32_t num_slabs, uint64_t slab_size, uint64_t max_objects);
void slab_mem_free(l3_slabstore *s);

/* Publish an object of `size` bytes of key `name` into slab `slab`, slot
 * `slot` (the slab must be open or sealed with that slot used): its entry. */
l3_index_entry slab_mem_publish(l3_slabstore *s, const char *name, uint32_t slab, uint32_t slot, uint32_t size);

#endif
