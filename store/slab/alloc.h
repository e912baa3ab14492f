/* l3cache: the slab store's allocation and publication (internal; not
 * installed): namespaces, slots, index entries and whole-slab eviction.
 * Every function here runs under the store's lock (l3_slab_lock) and does
 * no I/O: the records it changes in the slab table's image are written by
 * the caller (meta.c) before any object goes into a reopened slab. */
#ifndef L3_ALLOC_H
#define L3_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slab.h"

/* A store of several devices places puts' slots on one device until
 * about this many bytes went there, then on the next (RAID-0's chunk):
 * a batch of small objects reaches each device as requests as large as
 * one device's would be, a batch of large ones spreads over all. */
#define L3_STRIPE_BYTES (1u << 20)

/* The namespace id of a key (interning it), or 0 when it has none; -1
 * when the namespace table is full. */
int l3_alloc_ns_intern(l3_slabstore *s, const char *key, size_t len);

/* Publish an entry: index, slot id, counts. False when the index is full. */
bool l3_alloc_publish(l3_slabstore *s, const l3_index_entry *e);

/* Publish an entry unless its key is indexed already (one probe of the
 * index for both): what the index did. */
l3_index_put l3_alloc_publish_unique(l3_slabstore *s, const l3_index_entry *e);

/* Count an entry that is in the index and the slot table already (a
 * checkpoint image read in place) in its slab's and namespace's tallies. */
void l3_alloc_count(l3_slabstore *s, const l3_index_entry *e);

/* Drop an entry: index, slot id, counts. `e` points into the index (a
 * backward shift may move another entry into its place). */
void l3_alloc_unpublish(l3_slabstore *s, l3_index_entry *e);

/* Set up slab `i` from a valid record of this epoch, sealed and empty. */
l3_status l3_alloc_adopt(l3_slabstore *s, uint32_t i, const l3_slab_record *r, l3_error *err);

/* Adopt every slab of the devices in `mask` whose record is in use in
 * this epoch (under lock); a device offline takes its slabs offline. */
l3_status l3_alloc_adopt_slabs(l3_slabstore *s, uint32_t mask, l3_error *err);

/* Drop every object of slab `v` (no writes in flight) and free it. */
void l3_alloc_evict(l3_slabstore *s, uint32_t v);

/* Reserve a slot of class `pb`: *out_slab, *out_slot. False when none can
 * be had. A slab it reopens gets a new generation whose record is set in
 * the table's image only: whoever writes into a slab first makes sure its
 * record is on disk (slab.record_gen), whichever process opened it. */
bool l3_alloc_slot(l3_slabstore *s, uint32_t pb, uint32_t *out_slab, uint32_t *out_slot);

/* The most standby slabs a class keeps. */
#define L3_STANDBY_MAX 8u

/* Open standby slabs for the class of open slab `cur` (under the lock):
 * empty slabs, never ones with objects, enough for the writes in flight
 * to move on to, their records set in the table's image. The caller
 * writes those records (l3_meta_ensure_record with their generations)
 * so that they are on disk before the writers that move on to them need
 * them. Up to `max` slabs into out[] and gens[]; returns how many. */
uint32_t l3_alloc_standby(l3_slabstore *s, uint32_t cur, int32_t *out, uint64_t *gens, uint32_t max);

/* Hold slab `slab` as a reservation does (it cannot be evicted or
 * reopened) without taking a slot; l3_alloc_release gives it back. */
void l3_alloc_pin(l3_slabstore *s, uint32_t slab);

/* Give back this process's reservation of a slot in `slab` (published or
 * not). */
void l3_alloc_release(l3_slabstore *s, uint32_t slab);

/* Take the slabs of devices that failed since the last sweep offline:
 * their objects leave the index (those with writes in flight as the
 * writes end), and nothing is placed there again. */
void l3_alloc_sweep_failed(l3_slabstore *s);

/* Whether a device failed since the last sweep (any lock, or none). */
static inline bool l3_alloc_sweep_due(l3_slabstore *s)
{
    return atomic_load_explicit(&s->sh->failed_mask, memory_order_relaxed) !=
           atomic_load_explicit(&s->sh->swept_mask, memory_order_relaxed);
}

/* After a process died holding the lock (under it): rebuild the index
 * from its own entries, keeping those that fit their slab (in range, of
 * its generation, below its fill; one per key, the newest), and redo the
 * slot ids and counts from them. A death between an entry and its slot id
 * would otherwise leave an entry that eviction never finds, naming a
 * slot reused later. */
void l3_alloc_repair(l3_slabstore *s);

/* Forget every object and slab (after an epoch bump, or a failed load):
 * an empty index, every slab free. */
void l3_alloc_reset(l3_slabstore *s);

#endif
