/* l3cache: the removal feed (internal; not installed): docs/SEMANTICS.md,
 * "The removal feed".
 *
 * A ring of the last 2^k removals: every object that leaves the index
 * (evicted, deleted, removed with its namespace, dropped after a failed
 * check or read, or with its page's group) is announced here with its
 * key's identity and the reason, numbered from 0. Writers announce under
 * the store's lock (one at a time); readers read without it, each from its
 * own cursor, as a sequence lock: a slot is checked for its number before
 * and after it is copied, so a reader that fell a ring behind is told how
 * many it missed, never handed a slot rewritten under it.
 *
 * Pure over its area (a header and the slots), so that it lives in the
 * shared mapping and every process reads every process's removals. */
#ifndef L3_FEED_H
#define L3_FEED_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"

/* Reasons a feed slot can carry (the public l3_removal_reason's values). */
#define L3_FEED_REASONS 8u

/* The feed's header (its slots follow it wherever the area is). */
typedef struct l3_feed_head {
    uint64_t mask;                 /* slots - 1 (a power of two) */
    _Atomic uint64_t next;         /* the next removal's number: how many were announced */
    _Atomic uint64_t by_reason[L3_FEED_REASONS]; /* announced, by reason */
} l3_feed_head;

/* One removal: `seq` is its number + 1 (0: being written or never). */
typedef struct l3_feed_slot {
    _Atomic uint64_t seq;
    _Atomic uint64_t hash;         /* the key's l3_hash64 */
    _Atomic uint64_t word;         /* the key's length << 32, the reason << 48 */
    uint64_t pad;
} l3_feed_slot;
_Static_assert(sizeof(l3_feed_slot) == 32, "feed slot size");

/* A view of a feed: its header and its slots. */
typedef struct l3_feed {
    l3_feed_head *head;
    l3_feed_slot *slots;
} l3_feed;

/* One removal as a reader copies it out. */
typedef struct l3_feed_item {
    uint64_t seq;
    l3_key_id id;
    uint32_t reason;
} l3_feed_item;

/* The slots of a store's feed sized for `max_objects`: a power of two,
 * a thirty-second of the objects, within 2^14 and 2^17 (512 KiB to 4 MiB). */
uint64_t l3_feed_slots_for(uint64_t max_objects);

/* Bytes of a feed's slots. */
size_t l3_feed_bytes(uint64_t slots);

/* Set up an empty feed of `slots` (a power of two) in a zeroed area. */
void l3_feed_format(l3_feed_head *head, uint64_t slots);

/* Announce that key `id` left, for `reason` (1 to L3_FEED_REASONS - 1);
 * one writer at a time (the caller's lock). */
void l3_feed_announce(l3_feed *f, l3_key_id id, uint32_t reason);

/* The first removal a new reader reads: the next one (`oldest` false) or
 * the oldest the ring still holds. */
uint64_t l3_feed_start(const l3_feed *f, int oldest);

/* Copy up to `max` removals from `*cursor` on into `out`, in order; the
 * cursor moves past them. Removals overwritten before they were read are
 * skipped and added to `*missed`. Returns how many were copied. */
size_t l3_feed_read(const l3_feed *f, uint64_t *cursor, l3_feed_item *out, size_t max, uint64_t *missed);

#endif
