/* The slab store's published entries and its lock (entries.h). */
#include "entries.h"

#include <stdlib.h>
#include <string.h>

#include "monotonic.h"

void l3_slab_lock(l3_slabstore *s)
{
    l3_shm_lock(&s->shm, &s->sh->lock);
    if (s->sh->repair_needed)
        l3_entries_repair(s);
}

void l3_slab_unlock(l3_slabstore *s) { l3_shm_unlock(&s->sh->lock); }

/* Count entry `e` into its group, if it names one the table holds and
 * that has room: else it goes untracked, alone (its group 0). */
static void join_group(l3_slabstore *s, l3_index_entry *e)
{
    if (!e->group)
        return;
    l3_group *g = l3_groups_get(&s->groups, e->group, l3_now_ns());
    if (!g || !l3_group_join(g))
        e->group = 0; /* the table or the group is full */
}

/* An entry just indexed: its slot id and its counts. */
static void published(l3_slabstore *s, const l3_index_entry *e)
{
    L3_ASSERT(e->slab < s->geo.num_slabs);
    L3_ASSERT(e->slot < s->slabs[e->slab].nslots);
    L3_ASSERT(e->ns <= s->sh->num_ns);
    l3_slab_slot_ids(s, e->slab)[e->slot] = l3_slot_id(e->hash);
    l3_entry_count(s, e);
}

/* Publish a copy of `e` in its group (counted first: before any lookup
 * finds it), by a plain insert or, `unique`, unless its key is there;
 * what the index did. */
static l3_index_put publish(l3_slabstore *s, const l3_index_entry *e, bool unique)
{
    l3_index_entry c = *e;
    join_group(s, &c);
    l3_index_put put = unique ? l3_index_insert_unique(&s->index, &c)
                              : l3_index_insert(&s->index, &c) ? L3_INDEX_ADDED : L3_INDEX_FULL;
    if (put == L3_INDEX_ADDED)
        published(s, &c);
    else if (c.group)
        l3_groups_release(&s->groups, c.group, l3_now_ns());
    return put;
}

bool l3_entry_publish(l3_slabstore *s, const l3_index_entry *e) { return publish(s, e, false) == L3_INDEX_ADDED; }

bool l3_entry_publish_grouped(l3_slabstore *s, const l3_index_entry *e, uint32_t group)
{
    l3_index_entry c = *e;
    c.group = group;
    return l3_entry_publish(s, &c);
}

l3_index_put l3_entry_publish_unique(l3_slabstore *s, const l3_index_entry *e) { return publish(s, e, true); }

void l3_entry_count(l3_slabstore *s, const l3_index_entry *e)
{
    slab_info *sl = &s->slabs[e->slab];
    sl->live++;
    sl->live_bytes += e->size;
    if (e->ns) {
        s->ns[e->ns - 1].objects++;
        s->ns[e->ns - 1].bytes += e->size;
    }
}

void l3_entry_unpublish(l3_slabstore *s, l3_index_entry *e)
{
    L3_ASSERT(e->slab < s->geo.num_slabs);
    slab_info *sl = &s->slabs[e->slab];
    if (e->slot < sl->nslots)
        l3_slab_slot_ids(s, e->slab)[e->slot] = 0;
    if (e->group)
        l3_groups_release(&s->groups, e->group, l3_now_ns());
    /* Counts a process that died mid-update may have left off by one:
     * never below zero. */
    sl->live = sl->live ? sl->live - 1 : 0;
    sl->live_bytes = sl->live_bytes >= e->size ? sl->live_bytes - e->size : 0;
    if (e->ns && s->ns[e->ns - 1].objects) {
        s->ns[e->ns - 1].objects--;
        s->ns[e->ns - 1].bytes -= e->size;
    }
    l3_index_remove(&s->index, e);
}

/* The identity of an entry's key: its hash and length (an entry keeps no
 * crc32c of the key: its crc is sealed with it). */
static l3_key_id entry_id(const l3_index_entry *e)
{
    return (l3_key_id){ .hash = e->hash, .len = e->key_len };
}

void l3_entry_remove(l3_slabstore *s, l3_index_entry *e, uint32_t reason)
{
    l3_feed_announce(&s->feed, entry_id(e), reason);
    l3_entry_unpublish(s, e);
}

void l3_entries_announce_all(l3_slabstore *s, uint32_t reason)
{
    for (uint64_t i = 0; i <= s->index.meta->mask; i++) {
        const l3_index_entry *e = &s->index.table[i];
        if (e->hash)
            l3_feed_announce(&s->feed, entry_id(e), reason);
    }
}

/* The group of a published entry's object, or NULL (none, or not in the table). */
static l3_group *entry_group(l3_slabstore *s, const l3_index_entry *e)
{
    return l3_groups_find(&s->groups, e->group);
}

l3_index_entry *l3_entry_find_live(l3_slabstore *s, l3_key_id id)
{
    l3_index_entry *e = l3_index_find(&s->index, id);
    if (!e)
        return NULL;
    if (l3_group_dead_for(entry_group(s, e), e->seq)) {
        l3_entry_remove(s, e, L3_REMOVED_GROUP); /* a member of its page was evicted: of no use alone */
        atomic_fetch_add(&s->group_dropped, 1);
        return NULL;
    }
    return e;
}

void l3_entry_group_read(l3_slabstore *s, const l3_index_entry *e)
{
    l3_group *g = entry_group(s, e);
    if (g)
        l3_group_set_read(g, atomic_load(&s->sh->seq));
}

void l3_entry_lease_group(l3_slabstore *s, const l3_index_entry *e, uint64_t until)
{
    l3_group *g = entry_group(s, e);
    if (g)
        l3_groups_lease(&s->groups, g, until, l3_now_ns());
}

/* Whether an entry fits its slab as the slab stands (under the lock). */
static bool entry_fits(const l3_slabstore *s, const l3_index_entry *e)
{
    if (e->slab >= s->geo.num_slabs)
        return false;
    const slab_info *sl = &s->slabs[e->slab];
    return (sl->state == S_OPEN || sl->state == S_SEALED) && e->gen == l3_index_gen(sl->gen) && e->slot < sl->nslots &&
           e->slot < sl->next_slot && e->size <= (uint64_t)sl->payload_blocks * s->geo.block_size &&
           e->ns <= s->sh->num_ns;
}

void l3_entries_clear(l3_slabstore *s)
{
    l3_index_clear(&s->index);
    memset(s->slot_ids, 0, (size_t)s->geo.num_slabs * s->sh->max_slots * sizeof(uint32_t));
    memset(s->groups.table, 0, s->groups.meta->slots * sizeof(l3_group));
    s->groups.meta->count = 0;
    s->groups.meta->skip = 0;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        s->slabs[i].live = 0, s->slabs[i].live_bytes = 0;
    for (uint32_t i = 0; i < s->sh->num_ns; i++)
        s->ns[i].objects = s->ns[i].bytes = 0;
}

void l3_entries_repair(l3_slabstore *s)
{
    s->sh->repair_needed = 0;
    uint64_t cap = l3_index_capacity(&s->index), n = 0, dropped = 0;
    for (uint64_t i = 0; i < cap; i++)
        n += s->index.table[i].hash != 0;
    l3_index_entry *keep = malloc((n ? n : 1) * sizeof *keep); /* (their groups kept where they can be) */
    if (!keep) {
        l3_log("error", "%s: no memory to check the index after a process died holding its lock", s->path);
        return;
    }
    size_t k = 0;
    for (uint64_t i = 0; i < cap; i++) {
        const l3_index_entry *e = &s->index.table[i];
        if (e->hash && entry_fits(s, e)) {
            keep[k++] = *e;
        } else if (e->hash) {
            l3_feed_announce(&s->feed, entry_id(e), L3_REMOVED_EVICTED); /* its slab moved on */
            dropped++;
        }
    }
    l3_entries_clear(s);
    for (size_t j = 0; j < k; j++) {
        l3_key_id id = entry_id(&keep[j]);
        l3_index_entry *old = l3_index_find(&s->index, id);
        if (old && old->seq >= keep[j].seq) {
            dropped += old->slab != keep[j].slab || old->slot != keep[j].slot; /* (a copy of itself is not) */
            continue;
        }
        if (old)
            l3_entry_unpublish(s, old), dropped++;
        if (!l3_entry_publish(s, &keep[j])) {
            l3_feed_announce(&s->feed, entry_id(&keep[j]), L3_REMOVED_EVICTED); /* (the index is full) */
            dropped++;
        }
    }
    free(keep);
    l3_log("warning", "%s: the index checked after a process died holding its lock: %llu entries kept, %llu "
                      "dropped (half-done or stale)", s->path, (unsigned long long)s->index.meta->count,
           (unsigned long long)dropped);
}

