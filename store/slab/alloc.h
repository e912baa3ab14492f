/* l3cache: the slab store's allocation and publication (internal; not
 * installed): namespaces, slots, index entries and whole-slab eviction.
 * Every function here runs under the store's lock (l3_slab_lock) and does
 * no I/O: the records it changes in the slab table's image are written by
 * the caller (meta.c) before any object goes into a reopened slab.
 *
 * A slab's states (slab_info.state, alloc_state.h; this room alone sets
 * them, the structure check enforces it), and what moves it:
 *
 *   from       to         by
 *   S_FREE     S_OPEN     l3_alloc_slot (its class's open slab) or l3_alloc_standby
 *                         (a standby), through open_slab: a new generation, its record
 *                         set in the table's image
 *   S_OPEN     S_SEALED   l3_alloc_slot (full: the next opened), l3_alloc_release (full
 *                         and no longer its class's open slab), l3_alloc_take_victim
 *   S_SEALED   S_FREE     l3_alloc_evict: the victim emptied (reinsert.c moved its keeps
 *                         first); open_slab evicts what is left before reopening
 *   any        S_FREE     l3_alloc_reset (an epoch bump, a failed load)
 *   (a load)   S_SEALED   l3_alloc_adopt_slabs / l3_alloc_adopt: a record in use
 *   (a load)   S_FREE     l3_alloc_adopt_slabs (a record not in use, or unusable),
 *                         l3_alloc_restore_fill (a checkpoint's free slab)
 *   S_SEALED   S_OPEN     l3_alloc_restore_fill: a checkpoint's open slab of its class
 *   any        S_OFFLINE  l3_alloc_adopt_slabs (its device missing at open),
 *                         l3_alloc_sweep_failed (failed at runtime): for good in this
 *                         mapping; objects with writes in flight go as the writes end
 *                         (l3_alloc_release)
 *
 * A slab with reservations (`inflight`) or a read lease is never a
 * victim; an S_OPEN slab is its class's append target (l3_class_open) or
 * a standby (l3_class_next). */
#ifndef L3_ALLOC_H
#define L3_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entries.h"

/* A store of several devices places puts' slots on one device until
 * about this many bytes went there, then on the next (RAID-0's chunk):
 * a batch of small objects reaches each device as requests as large as
 * one device's would be, a batch of large ones spreads over all. */
#define L3_STRIPE_BYTES (1u << 20)

/* The namespace id of a key (interning it), or 0 when it has none; -1
 * when the namespace table is full. */
int l3_alloc_ns_intern(l3_slabstore *s, const char *key, size_t len);

/* Set up slab `i` from a valid record of this epoch, sealed and empty. */
l3_status l3_alloc_adopt(l3_slabstore *s, uint32_t i, const l3_slab_record *r, l3_error *err);

/* Adopt every slab of the devices in `mask` whose record is in use in
 * this epoch (under lock); a device offline takes its slabs offline. */
l3_status l3_alloc_adopt_slabs(l3_slabstore *s, uint32_t mask, l3_error *err);

/* Drop every object of slab `v` (no writes in flight) and free it. */
void l3_alloc_evict(l3_slabstore *s, uint32_t v);

/* Reserve a slot of class `pb` in log `lg` (LOG_MAIN or LOG_PROBATION):
 * *out_slab, *out_slot. False when none can be had. A slab it reopens gets a new generation whose record is set in
 * the table's image only: whoever writes into a slab first makes sure its
 * record is on disk (slab.record_gen), whichever process opened it. */
bool l3_alloc_slot(l3_slabstore *s, uint32_t pb, uint32_t lg, uint32_t *out_slab, uint32_t *out_slot);

/* The most standby slabs a class keeps. */
#define L3_STANDBY_MAX 8u

/* Open standby slabs for the class of open slab `cur` (under the lock):
 * empty slabs, never ones with objects, enough for the writes in flight
 * to move on to, their records set in the table's image. The caller
 * writes those records (l3_meta_ensure_record with their generations)
 * so that they are on disk before the writers that move on to them need
 * them. Up to `max` slabs into out[] and gens[]; returns how many. */
uint32_t l3_alloc_standby(l3_slabstore *s, uint32_t cur, int32_t *out, uint64_t *gens, uint32_t max);

/* Take the policy's victim among slabs with live objects for reuse
 * (under the lock): sealed, so that no writer takes its slots, no longer
 * its class's open slab, and pinned (l3_alloc_release gives it back);
 * -1 when there is none. */
int32_t l3_alloc_take_victim(l3_slabstore *s);

/* Restore slab `i`'s fill from a checkpoint (under the lock, while it
 * loads): `next` slots used, free, or its class's open slab (an empty one,
 * a standby, stays sealed: the class's open slab is the one with
 * objects). */
void l3_alloc_restore_fill(l3_slabstore *s, uint32_t i, uint32_t next, bool free_slab, bool open);

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

/* Give back every reservation process slot `p` holds (under the lock): a
 * dead process's, or this process's own as it detaches. */
void l3_alloc_release_proc(l3_slabstore *s, int p);

/* Release what processes that died attached held, and free their process
 * slots (under the lock); how many there were. */
int l3_alloc_reap_dead(l3_slabstore *s);

/* This process waits for room for a put wave of `bytes` (under the
 * lock): counted in its account (l3_proc_account.pending), so that
 * whoever makes room makes it for this wave too. */
void l3_alloc_wait_room(l3_slabstore *s, uint64_t bytes);

/* This process's wave took `bytes` of the room it waited for: its slots
 * are reserved (under the lock). */
void l3_alloc_room_taken(l3_slabstore *s, uint64_t bytes);

/* Forget every object and slab (after an epoch bump, or a failed load):
 * an empty index, every slab free. */
void l3_alloc_reset(l3_slabstore *s);

#endif
