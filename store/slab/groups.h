/* l3cache: the group table (internal; not installed): docs/admission.md,
 * "Groups: ranks and pools".
 *
 * A group is the objects of one page: every tensor-parallel rank's shard,
 * every pool's object (KV, an indexer's sidecar, a state). The adapter
 * names it (a 64-bit id per key, l3_put_hints). The table holds one entry
 * per live group, keyed by that id: how many published objects it has,
 * its admission decision (made once, by the first put of any member, so
 * that ranks never diverge), its verdict (the last eviction decision
 * about a member: every older member follows it, kept or dead), and a
 * read lease (a lease on one member holds them all).
 *
 * Pure: open addressing with linear probing and backward-shift deletion
 * over plain data, so that the table lives in the shared mapping; the
 * caller holds the store's lock. */
#ifndef L3_GROUPS_H
#define L3_GROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct l3_group {
    uint32_t tag;     /* the group's tag (l3_group_tag; never 0, 0 marks a free slot) */
    uint32_t members; /* published objects of the group */
    uint64_t verdict; /* (seq << 2) | read << 1 | dead: what members older than seq follow (below) */
    uint32_t lease;   /* CLOCK_MONOTONIC seconds until which its members are leased (0: none) */
    uint32_t decided; /* its admission decision: 0 none, else (ms << 10) | (followers << 2) |
                         (1 + verdict), ms of CLOCK_MONOTONIC's low 22 bits (a 2 s window,
                         wrap-safe), followers the members still to follow it (at most 255) */
} l3_group;
_Static_assert(sizeof(l3_group) == 24, "group entry size");

/* A group's tag: 32 bits of its id, mixed (never 0). Two live groups with
 * one tag share their fate (rare: a few in a million groups). */
static inline uint32_t l3_group_tag(uint64_t id)
{
    uint64_t x = id * 0x9e3779b97f4a7c15ull;
    uint32_t t = (uint32_t)((x ^ (x >> 29)) >> 32);
    return t ? t : 1;
}

/* CLOCK_MONOTONIC `ns` as the decision stamp's milliseconds (30 bits). */
static inline uint32_t l3_group_ms(uint64_t ns) { return (uint32_t)(ns / 1000000u) & 0x3fffffu; }

/* The table's counters (they live beside it). */
typedef struct l3_groups_meta {
    uint64_t slots;   /* entries of the table */
    uint64_t count;   /* entries in use */
    uint64_t skip;    /* refusals of a full table left before it is swept again */
} l3_groups_meta;

/* A view of a group table. */
typedef struct l3_groups {
    l3_groups_meta *meta;
    l3_group *table;
} l3_groups;

/* Entries of a table for a store of up to `max_objects` objects: two for
 * every three objects (rounded down), at least 1024. At a load of 3/4,
 * the most the table takes, that holds a store full of groups of two
 * objects (a group of one is not tracked: l3_put_hints.group_objects 1). */
uint64_t l3_groups_slots_for(uint64_t max_objects);

/* Set up an empty table of `slots` entries (zeroed by the caller). */
void l3_groups_format(l3_groups_meta *meta, uint64_t slots);

/* The entry of the group tagged `tag`, or NULL (tag 0: none). Valid
 * until the next insert or removal. */
l3_group *l3_groups_find(const l3_groups *g, uint32_t tag);

/* The entry of the group tagged `tag`, made (empty) if it has none. When
 * the table is 3/4 full, entries no member holds and no decision or
 * lease still needs (as l3_group_idle judges at `now`, CLOCK_MONOTONIC
 * ns) are swept first; NULL when it is still full (the group then goes
 * untracked: its objects live and die alone). */
l3_group *l3_groups_get(const l3_groups *g, uint32_t tag, uint64_t now);

/* How long at most an admission decision binds the group's other
 * members: they are put by the other ranks at about the same moment. */
#define L3_GROUP_DECISION_MS 2000u
/* Followers of a decision when the group's size is not known. */
#define L3_GROUP_FOLLOWERS_MAX 255u

/* The decision (1 + verdict) the group's members follow at `now`
 * (CLOCK_MONOTONIC ns), or 0 when it has none that recent, or every
 * member it was for has followed it. */
uint32_t l3_group_decision(const l3_group *e, uint64_t now);

/* Record decision `verdict` at `now`, for the group's `objects` objects
 * (ranks x pools; 0: unknown): the other objects - 1 follow it, once each,
 * and a later put of the page is decided afresh. A group of one object
 * records nothing. */
void l3_group_decide(l3_group *e, uint32_t verdict, uint64_t now, uint32_t objects);

/* One member followed the decision: one fewer still to. */
void l3_group_follow(l3_group *e);

/* Whether an entry may go at `now`: no members, no decision that binds,
 * no lease. */
bool l3_group_idle(const l3_group *e, uint64_t now);

/* A published member of the group tagged `tag` left the index: one
 * fewer; the entry goes when it is idle. */
void l3_groups_release(const l3_groups *g, uint32_t tag, uint64_t now);

/* A group's verdict: (seq << 2) | read << 1 | dead. Dead: a member was
 * evicted at `seq`, every member written before goes. Kept (neither
 * bit): a member was reinserted at `seq`, every member written before is
 * kept. Read: a member was read at `seq`, every member written before
 * counts as read at `seq` by the eviction policy's rule. 0: none. */
static inline uint64_t l3_group_seq(const l3_group *e) { return e->verdict >> 2; }

/* Mark the group dead at `seq`. */
static inline void l3_group_set_dead(l3_group *e, uint64_t seq) { e->verdict = seq << 2 | 1; }

/* A member kept (reinserted) at `seq`: unless the group is dead. */
static inline void l3_group_set_kept(l3_group *e, uint64_t seq)
{
    if (!(e->verdict & 1))
        e->verdict = seq << 2;
}

/* A member read at `seq`: unless the group is dead, or holds a later
 * verdict. */
static inline void l3_group_set_read(l3_group *e, uint64_t seq)
{
    if (!(e->verdict & 1) && l3_group_seq(e) < seq)
        e->verdict = seq << 2 | 2;
}

/* Whether an object of the group, written at sequence `seq`, is dead: a
 * member written before it was evicted. */
static inline bool l3_group_dead_for(const l3_group *e, uint64_t seq)
{
    return e && (e->verdict & 1) && seq < l3_group_seq(e);
}

/* Whether an object of the group written at `seq` is to be kept: a member
 * written before it was kept, or the group is leased at `now` (ns). */
static inline bool l3_group_kept_for(const l3_group *e, uint64_t seq, uint64_t now)
{
    return e && ((!(e->verdict & 3) && seq < l3_group_seq(e)) || (uint64_t)e->lease * 1000000000u > now);
}

/* The sequence at which a member read after `seq` was written, or 0 (no
 * read verdict, or one older than the object). */
static inline uint64_t l3_group_read_after(const l3_group *e, uint64_t seq)
{
    return e && (e->verdict & 2) && seq < l3_group_seq(e) ? l3_group_seq(e) : 0;
}

#endif
