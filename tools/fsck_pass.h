/* One pass's objects (fsck_pass.c). A store with more objects than
 * --memory holds is checked in passes, each keeping the objects of one
 * range of key hashes (f->part of f->parts); the slab pass
 * (fsck_slabs.h) fills f->objects, the checkpoint's matches them by slot. */
#ifndef L3_FSCK_PASS_H
#define L3_FSCK_PASS_H

#include "fsck.h"

/* Whether an object of key hash `hash` is this pass's. */
static inline bool fsck_in_part(const fsck *f, uint64_t hash)
{
    return f->parts < 2 || (uint32_t)(((hash >> 32) * f->parts) >> 32) == f->part;
}

/* Slots of every slab in use (for the plan and the progress line). */
uint64_t fsck_used_slots(fsck *f);

/* Plan the passes over the objects (f->parts, and room for one pass's
 * objects): one pass when every header is read (--headers and what
 * implies it), else as many as f->memory needs; false when out of memory. */
bool fsck_plan_passes(fsck *f);

/* Room for more objects (and the tables kept at a load of at most 1/2);
 * false (a problem reported) when out of memory. */
bool fsck_grow_objects(fsck *f);

/* fsck's own copy of a namespace's text of `len` bytes (interned; NULL
 * when out of memory). */
const char *fsck_intern_ns(fsck *f, const char *text, uint16_t len);

/* A pass's tables (by_key, by_slot) of f->table_cap slots, a power of
 * two: where the probe for `key` starts; and the slot for object index i
 * keyed by `key`: the first empty one from there, or the one `same` says
 * holds its equal. */
size_t fsck_table_home(const fsck *f, uint64_t key);
size_t fsck_table_slot(const fsck *f, const uint32_t *t, uint64_t key, size_t i,
                       bool (*same)(const fsck *, size_t, size_t));

/* Of live objects of one key, leave the rules' winner live (this pass's
 * objects; a key is its hash and length, as in the store's index);
 * how many it took out. O(objects). */
uint64_t fsck_supersede(fsck *f);

#endif
