/* l3cache: the slab store's published entries and its lock (internal; not
 * installed). An object is served only through its index entry; with the
 * entry go its slot id (the slot table names which entry a slot holds)
 * and its counts (its slab's live objects and bytes, its namespace's).
 * This room keeps the three in step, and owns the store's lock: taking it
 * after a holder died repairs what that holder may have left half-done
 * (as LMDB's lock and its mdb_mutex_failed go together). */
#ifndef L3_ENTRIES_H
#define L3_ENTRIES_H

#include <stdbool.h>

#include "slab.h"

/* Take the store's lock (the index, slabs, classes, namespaces and
 * counters); taken after a holder died, it first repairs the entries
 * (l3_entries_repair). */
void l3_slab_lock(l3_slabstore *s);

/* Drop the store's lock. */
void l3_slab_unlock(l3_slabstore *s);

/* Publish an entry (under the lock): index, slot id, counts, and its
 * group's member count if it names a group (entry.group; it goes
 * untracked, group 0, when the group table or the group is full). False
 * when the index is full. */
bool l3_entry_publish(l3_slabstore *s, const l3_index_entry *e);

/* Publish an entry whose object is of group `group` (its tag, 0: none):
 * l3_entry_publish of a copy of it in that group. */
bool l3_entry_publish_grouped(l3_slabstore *s, const l3_index_entry *e, uint32_t group);

/* Publish an entry unless its key is indexed already (one probe of the
 * index for both): what the index did. */
l3_index_put l3_entry_publish_unique(l3_slabstore *s, const l3_index_entry *e);

/* Count an entry that is in the index and the slot table already (a
 * checkpoint image read in place) in its slab's and namespace's tallies. */
void l3_entry_count(l3_slabstore *s, const l3_index_entry *e);

/* The entry of key `id` as it may be served (under the lock), or NULL: an
 * object whose group is dead (a member of its page was evicted) leaves the
 * index here, as it is found. */
l3_index_entry *l3_entry_find_live(l3_slabstore *s, l3_key_id id);

/* A served read of entry `e` (under the lock), for its group if it has
 * one: every member written before now then counts as read now when
 * eviction asks the policy about it (a page is used whole or not at all,
 * so a rarely read member, a state, must not take its read siblings with
 * it). A dead group stays dead. The object's own read mark is the
 * policy's. */
void l3_entry_group_read(l3_slabstore *s, const l3_index_entry *e);

/* Lease the group of entry `e` (if it has one) until `until`
 * (CLOCK_MONOTONIC ns): every member is then kept, wherever it is. */
void l3_entry_lease_group(l3_slabstore *s, const l3_index_entry *e, uint64_t until);

/* Drop an entry: index, slot id, counts. `e` points into the index (a
 * backward shift may move another entry into its place). */
void l3_entry_unpublish(l3_slabstore *s, l3_index_entry *e);

/* An object leaves the store (under the lock): announce it on the removal
 * feed for `reason` (l3_removal_reason), then drop its entry
 * (l3_entry_unpublish). Entries that only move (a reinsertion, a repair,
 * an older copy a scan replaces) are unpublished without it. */
void l3_entry_remove(l3_slabstore *s, l3_index_entry *e, uint32_t reason);

/* Announce every indexed object on the removal feed for `reason` (under
 * the lock): the index is about to be emptied at once. */
void l3_entries_announce_all(l3_slabstore *s, uint32_t reason);

/* Empty the index, the slot ids and every count (under the lock). */
void l3_entries_clear(l3_slabstore *s);

/* After a process died holding the lock (under it): rebuild the index
 * from its own entries, keeping those that fit their slab (in range, of
 * its generation, below its fill; one per key, the newest), and redo the
 * slot ids and counts from them. A death between an entry and its slot id
 * would otherwise leave an entry that eviction never finds, naming a
 * slot reused later. */
void l3_entries_repair(l3_slabstore *s);

#endif
