/* The group table (groups.h). */
#include "groups.h"

#include <string.h>

#include "hash.h"
#include "invariant.h"

uint64_t l3_groups_slots_for(uint64_t max_objects)
{
    uint64_t slots = (max_objects * 4 + 6) / 7; /* (the bound is at most 1.8 billion: no overflow) */
    return slots < 1024 ? 1024 : slots;
}

void l3_groups_format(l3_groups_meta *meta, uint64_t slots)
{
    meta->slots = slots;
    meta->count = 0;
    meta->skip = 0;
    meta->lease_base = 0;
}

static uint64_t home(const l3_groups *g, uint32_t tag)
{
    return (uint64_t)(((unsigned __int128)l3_mix64(tag) * g->meta->slots) >> 64);
}

/* Entries the table takes: 7/8 of its slots. */
static uint64_t room(const l3_groups *g) { return g->meta->slots * 7 / 8; }

static uint64_t next(const l3_groups *g, uint64_t i) { return i + 1 == g->meta->slots ? 0 : i + 1; }

/* The slot of `tag`, or of the empty slot where it would go. */
static uint64_t probe(const l3_groups *g, uint32_t tag)
{
    uint64_t i = home(g, tag);
    for (uint64_t n = 0; g->table[i].tag && g->table[i].tag != tag; n++) {
        L3_ASSERT(n < g->meta->slots);
        i = next(g, i);
    }
    return i;
}

l3_group *l3_groups_find(const l3_groups *g, uint32_t tag)
{
    if (!tag)
        return NULL;
    uint64_t i = probe(g, tag);
    return g->table[i].tag ? &g->table[i] : NULL;
}

static void remove_at(const l3_groups *g, uint64_t i)
{
    memset(&g->table[i], 0, sizeof g->table[i]);
    g->meta->count--;
    for (uint64_t j = next(g, i); g->table[j].tag; j = next(g, j)) {
        uint64_t h = home(g, g->table[j].tag);
        bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
        if (movable) {
            g->table[i] = g->table[j];
            memset(&g->table[j], 0, sizeof g->table[j]);
            i = j;
        }
    }
}

uint32_t l3_group_decision(const l3_group *e, uint64_t now)
{
    if (!e || !(e->decided & 3))
        return 0;
    uint32_t age = (l3_group_ms(now) - (e->decided >> 10)) & 0x3fffffu;
    return age < L3_GROUP_DECISION_MS && (e->decided >> 2 & 0xffu) ? (e->decided & 3) : 0;
}

void l3_group_decide(l3_group *e, uint32_t verdict, uint64_t now, uint32_t objects)
{
    L3_ASSERT(verdict < 3);
    uint32_t followers = objects == 0 || objects - 1 > L3_GROUP_FOLLOWERS_MAX ? L3_GROUP_FOLLOWERS_MAX : objects - 1;
    e->decided = followers ? l3_group_ms(now) << 10 | followers << 2 | (verdict + 1) : 0;
}

void l3_group_follow(l3_group *e)
{
    uint32_t followers = e->decided >> 2 & 0xffu;
    L3_ASSERT(followers > 0);
    e->decided = followers > 1 ? (e->decided & ~(0xffu << 2)) | (followers - 1) << 2 : 0;
}

bool l3_group_idle(const l3_groups *g, const l3_group *e, uint64_t now)
{
    return e->members == 0 && !l3_groups_leased(g, e, now) && !l3_group_decision(e, now);
}

/* Move the leases' base up to `at` (units): every lease is kept as the
 * same time, one that ended before `at` as none. */
static void rebase_leases(const l3_groups *g, uint64_t at)
{
    uint64_t by = at - g->meta->lease_base;
    for (uint64_t i = 0; i < g->meta->slots; i++) {
        l3_group *e = &g->table[i];
        if (e->tag && e->lease)
            e->lease = e->lease > by ? e->lease - by : 0;
    }
    g->meta->lease_base = at;
}

void l3_groups_lease(const l3_groups *g, l3_group *e, uint64_t until, uint64_t now)
{
    const uint64_t unit = L3_GROUP_LEASE_UNIT_NS, at = now / unit;
    uint64_t end = (until + unit - 1) / unit; /* (whole units: it ends at or after `until`) */
    if (end > at + L3_GROUP_LEASE_MOST)
        end = at + L3_GROUP_LEASE_MOST;
    if (end <= at)
        return; /* (over already) */
    L3_ASSERT(at >= g->meta->lease_base); /* (CLOCK_MONOTONIC) */
    if (end - g->meta->lease_base > UINT16_MAX)
        rebase_leases(g, at); /* (then end - base <= L3_GROUP_LEASE_MOST) */
    uint64_t rel = end - g->meta->lease_base;
    if (!l3_groups_leased(g, e, now) || rel > e->lease)
        e->lease = (uint16_t)rel;
}

void l3_group_set_verdict(l3_group *e, uint64_t seq, uint32_t bits)
{
    L3_ASSERT(bits < 3);
    const uint64_t mask = (1ull << L3_GROUP_SEQ_BITS) - 1;
    uint64_t low = seq & mask;
    if (!low && !bits)
        low = mask; /* (0 is none: kept from one write earlier) */
    e->verdict = low << 2 | bits;
}

/* Remove every entry that is idle. */
static void sweep(const l3_groups *g, uint64_t now)
{
    for (uint64_t i = 0; i < g->meta->slots; i++)
        while (g->table[i].tag && l3_group_idle(g, &g->table[i], now))
            remove_at(g, i); /* (a later entry may have shifted into i) */
}

l3_group *l3_groups_get(const l3_groups *g, uint32_t tag, uint64_t now)
{
    L3_ASSERT(tag != 0);
    uint64_t i = probe(g, tag);
    if (g->table[i].tag)
        return &g->table[i];
    if (g->meta->count + 1 > room(g)) {
        /* Full: sweep, but after a sweep that freed nothing not again for
         * a sixteenth of the table's refusals (a sweep reads the whole
         * table, under the store's lock). */
        if (g->meta->skip > 0) {
            g->meta->skip--;
            return NULL;
        }
        uint64_t before = g->meta->count;
        sweep(g, now);
        if (g->meta->count + 1 > room(g)) {
            if (g->meta->count == before)
                g->meta->skip = g->meta->slots / 16;
            return NULL;
        }
        i = probe(g, tag);
    }
    g->meta->skip = 0; /* room: a later fill starts with a sweep */
    g->table[i] = (l3_group){ .tag = tag };
    g->meta->count++;
    return &g->table[i];
}

void l3_groups_release(const l3_groups *g, uint32_t tag, uint64_t now)
{
    l3_group *e = l3_groups_find(g, tag);
    if (!e)
        return;
    if (e->members)
        e->members--;
    if (l3_group_idle(g, e, now))
        remove_at(g, (uint64_t)(e - g->table));
}
