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

/* A group's entry, in 16 bytes: its numbers at the widths a group needs. */
typedef struct l3_group {
    uint32_t tag;         /* the group's tag (l3_group_tag; never 0, 0 marks a free slot) */
    uint32_t decided;     /* its admission decision: 0 none, else (ms << 10) | (followers << 2) |
                             (1 + verdict), ms of CLOCK_MONOTONIC's low 22 bits (a 2 s window,
                             wrap-safe), followers the members still to follow it (at most 255) */
    uint64_t verdict : 39; /* (seq's low L3_GROUP_SEQ_BITS << 2) | read << 1 | dead (0: none; below) */
    uint64_t members : 9;  /* published objects of the group (at most L3_GROUP_MEMBERS_MAX) */
    uint64_t lease : 16;   /* when its lease ends: L3_GROUP_LEASE_UNIT_NS units of CLOCK_MONOTONIC
                              after the table's lease_base (0: none; l3_groups_leased) */
} l3_group;
_Static_assert(sizeof(l3_group) == 16, "group entry size");

/* Published objects a group counts: a member past them is put untracked
 * (it lives and dies alone). A page is at most 256 objects (ranks x
 * pools); the adapters' pages are a few. */
#define L3_GROUP_MEMBERS_MAX 511u

/* Low bits of a verdict's sequence number an entry keeps. An object's
 * sequence number is compared with them modulo 2^37: right while the two
 * are within 2^36 writes of each other (weeks of a node's puts); past
 * that, an old verdict may bind or free a member as if it were recent (a
 * member kept or dropped with its page, never bytes served). */
#define L3_GROUP_SEQ_BITS 37

/* A lease's unit (8 s). An entry keeps when its lease ends as units after
 * the table's lease_base, in 16 bits; a lease is at most 2^15 units (three
 * days: longer ones are cut to it), and the base moves up (every entry's
 * lease with it) when a new lease would not fit. A lease ends at most one
 * unit after the time asked. */
#define L3_GROUP_LEASE_UNIT_NS 8000000000ull
#define L3_GROUP_LEASE_MOST (1u << 15)

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
    uint64_t lease_base; /* the leases' origin: L3_GROUP_LEASE_UNIT_NS units of CLOCK_MONOTONIC */
} l3_groups_meta;

/* A view of a group table. */
typedef struct l3_groups {
    l3_groups_meta *meta;
    l3_group *table;
} l3_groups;

/* Entries of a table for a store of up to `max_objects` objects: four
 * for every seven objects (rounded up), at least 1024. At a load of 7/8,
 * the most the table takes, that holds a store full of groups of two
 * objects (a group of one is not tracked: l3_put_hints.group_objects 1). */
uint64_t l3_groups_slots_for(uint64_t max_objects);

/* Set up an empty table of `slots` entries (zeroed by the caller). */
void l3_groups_format(l3_groups_meta *meta, uint64_t slots);

/* The entry of the group tagged `tag`, or NULL (tag 0: none). Valid
 * until the next insert or removal. */
l3_group *l3_groups_find(const l3_groups *g, uint32_t tag);

/* The entry of the group tagged `tag`, made (empty) if it has none. When
 * the table is 7/8 full, entries no member holds and no decision or
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

/* Whether entry `e` of table `g` may go at `now`: no members, no
 * decision that binds, no lease. */
bool l3_group_idle(const l3_groups *g, const l3_group *e, uint64_t now);

/* A published member of the group tagged `tag` left the index: one
 * fewer; the entry goes when it is idle. */
void l3_groups_release(const l3_groups *g, uint32_t tag, uint64_t now);

/* Whether a member may join the group (its count below
 * L3_GROUP_MEMBERS_MAX): counted if so. */
static inline bool l3_group_join(l3_group *e)
{
    if (e->members >= L3_GROUP_MEMBERS_MAX)
        return false;
    e->members++;
    return true;
}

/* Whether group `e` of table `g` is leased at `now` (CLOCK_MONOTONIC ns). */
static inline bool l3_groups_leased(const l3_groups *g, const l3_group *e, uint64_t now)
{
    return e->lease && g->meta->lease_base + e->lease > now / L3_GROUP_LEASE_UNIT_NS;
}

/* Lease group `e` of table `g` until `until` (ns; at most
 * L3_GROUP_LEASE_MOST units after `now`), unless it is leased longer
 * already (under the caller's lock: the table's base may move). */
void l3_groups_lease(const l3_groups *g, l3_group *e, uint64_t until, uint64_t now);

/* A group's verdict: (seq << 2) | read << 1 | dead, seq's low
 * L3_GROUP_SEQ_BITS. Dead: a member was evicted at `seq`, every member
 * written before goes. Kept (neither bit): a member was reinserted at
 * `seq`, every member written before is kept. Read: a member was read at
 * `seq`, every member written before counts as read at `seq` by the
 * eviction policy's rule. 0: none. */
void l3_group_set_verdict(l3_group *e, uint64_t seq, uint32_t bits);

/* The sequence number of the group's verdict nearest `seq` (an object's,
 * or the store's now): the one its low bits name within 2^37 of `seq`
 * (0 if that is before the first). */
static inline uint64_t l3_group_seq_near(const l3_group *e, uint64_t seq)
{
    const uint64_t span = 1ull << L3_GROUP_SEQ_BITS;
    uint64_t ahead = ((uint64_t)(e->verdict >> 2) - seq) & (span - 1);
    if (ahead < span / 2)
        return seq + ahead;
    return seq >= span - ahead ? seq - (span - ahead) : 0;
}

/* Whether a verdict binds an object written at `seq`: the group has one,
 * of these `bits` exactly, and from after the object. */
static inline bool l3_group_binds(const l3_group *e, uint64_t seq, uint32_t bits)
{
    return e && e->verdict && (e->verdict & 3) == bits && seq < l3_group_seq_near(e, seq);
}

/* Mark the group dead at `seq`. */
static inline void l3_group_set_dead(l3_group *e, uint64_t seq) { l3_group_set_verdict(e, seq, 1); }

/* A member kept (reinserted) at `seq`: unless the group is dead. */
static inline void l3_group_set_kept(l3_group *e, uint64_t seq)
{
    if (!(e->verdict & 1))
        l3_group_set_verdict(e, seq, 0);
}

/* A member read at `seq`: unless the group is dead, or holds a later
 * verdict. */
static inline void l3_group_set_read(l3_group *e, uint64_t seq)
{
    if (!(e->verdict & 1) && (!e->verdict || l3_group_seq_near(e, seq) < seq))
        l3_group_set_verdict(e, seq, 2);
}

/* Whether an object of the group written at `seq` is to go: the group is
 * dead since after it. */
static inline bool l3_group_dead_for(const l3_group *e, uint64_t seq) { return l3_group_binds(e, seq, 1); }

/* Whether an object of group `e` (of table `g`) written at `seq` is to
 * be kept: a member was kept after it was written, or the group is leased
 * at `now` (ns). */
static inline bool l3_group_kept_for(const l3_groups *g, const l3_group *e, uint64_t seq, uint64_t now)
{
    return e && (l3_group_binds(e, seq, 0) || l3_groups_leased(g, e, now));
}

/* The sequence at which a member read after `seq` was written, or 0 (no
 * read verdict, or one older than the object). */
static inline uint64_t l3_group_read_after(const l3_group *e, uint64_t seq)
{
    return l3_group_binds(e, seq, 2) ? l3_group_seq_near(e, seq) : 0;
}

#endif
