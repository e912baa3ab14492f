/* The eviction policy: least recently used whole slabs (policy.h). */
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

void l3_policy_touch(l3_slabstore *s, uint32_t slab)
{
    L3_ASSERT(slab < s->geo.num_slabs);
    atomic_store_explicit(&s->slabs[slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

int32_t l3_policy_victim(l3_slabstore *s, bool need_live)
{
    int32_t best = -1;
    uint64_t best_tick = UINT64_MAX, now = l3_policy_clock_ns();
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
        uint64_t t = atomic_load_explicit(&sl->last_access, memory_order_relaxed);
        if (t < best_tick) {
            best_tick = t;
            best = (int32_t)i;
        }
    }
    return best;
}
