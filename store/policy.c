/* The eviction policy (policy.h): FIFO slabs with reinsertion of what was
 * read (the default), or least recently used whole slabs. */
#include "policy.h"

#include <time.h>

uint64_t l3_policy_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void l3_policy_lease(l3_slabstore *s, uint32_t slab, uint64_t until)
{
    L3_ASSERT(slab < s->geo.num_slabs);
    if (s->slabs[slab].lease_until < until)
        s->slabs[slab].lease_until = until;
}

void l3_policy_read(l3_slabstore *s, l3_index_entry *e)
{
    L3_ASSERT(e->slab < s->geo.num_slabs);
    e->pad |= L3_ENTRY_READ;
    atomic_store_explicit(&s->slabs[e->slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

void l3_policy_written(l3_slabstore *s, uint32_t slab)
{
    L3_ASSERT(slab < s->geo.num_slabs);
    atomic_store_explicit(&s->slabs[slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

bool l3_policy_reinserts(const l3_slabstore *s, const l3_index_entry *e)
{
    return s->opt.eviction == L3_EVICT_FIFO_REINSERT && (e->pad & L3_ENTRY_READ);
}

/* A slab's age for the victim choice: FIFO orders by when it was opened,
 * LRU by its last read or write. */
static uint64_t age_key(const l3_slabstore *s, const slab *sl)
{
    if (s->opt.eviction == L3_EVICT_LRU_SLAB)
        return atomic_load_explicit(&sl->last_access, memory_order_relaxed);
    return sl->first_seq;
}

int32_t l3_policy_victim(l3_slabstore *s, bool need_live)
{
    int32_t best = -1;
    uint64_t best_key = UINT64_MAX, now = l3_policy_clock_ns();
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        slab *sl = &s->slabs[i];
        if (sl->inflight)
            continue;
        if (!need_live && sl->state == S_FREE)
            return (int32_t)i;
        if (!need_live && sl->live == 0 && sl->state == S_SEALED)
            return (int32_t)i;
        if ((need_live && sl->live == 0) || sl->lease_until > now)
            continue; /* nothing to evict, or leased to a reader */
        uint64_t key = age_key(s, sl);
        if (key < best_key) {
            best_key = key;
            best = (int32_t)i;
        }
    }
    return best;
}

uint32_t l3_policy_clean_slabs(const l3_slabstore *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        const slab *sl = &s->slabs[i];
        n += !sl->inflight && (sl->state == S_FREE || (sl->state == S_SEALED && sl->live == 0));
    }
    return n;
}
