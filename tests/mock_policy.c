/* A mock of the slab store's eviction policy (policy.h), for test_alloc:
 * the victims are scripted by the test, the notes it is given are counted.
 * Linked before the library, it stands in for policy.c. */
#include "mock_policy.h"

int32_t mock_victims[16];
size_t mock_num_victims, mock_victim_calls, mock_written_calls;

uint64_t l3_policy_clock_ns(void) { return 0; }
void l3_policy_lease(l3_slabstore *s, uint32_t slab, uint64_t until) { s->slabs[slab].lease_until = until; }
void l3_policy_read(l3_slabstore *s, l3_index_entry *e) { (void)s; e->flags |= L3_ENTRY_READ; }
void l3_policy_written(l3_slabstore *s, uint32_t slab)
{
    (void)s;
    (void)slab;
    mock_written_calls++;
}
void l3_policy_judge(l3_slabstore *s, const l3_index_entry *e, uint64_t group_read)
{
    (void)s;
    (void)e;
    (void)group_read;
}
l3_keep l3_policy_keep(l3_slabstore *s, const l3_index_entry *e, uint64_t group_read)
{
    (void)s;
    (void)group_read;
    return e->flags & L3_ENTRY_READ ? L3_KEEP : L3_KEEP_NOT;
}
uint64_t l3_policy_room(const l3_slabstore *s)
{
    (void)s;
    return 0;
}

/* The next scripted victim; with none scripted, the lowest free slab (or,
 * needing live objects, none). */
int32_t l3_policy_victim(l3_slabstore *s, bool need_live, int32_t device)
{
    (void)device;
    mock_victim_calls++;
    if (mock_num_victims) {
        int32_t v = mock_victims[0];
        for (size_t i = 1; i < mock_num_victims; i++)
            mock_victims[i - 1] = mock_victims[i];
        mock_num_victims--;
        return v;
    }
    for (uint32_t i = 0; !need_live && i < s->geo.num_slabs; i++)
        if (s->slabs[i].state == S_FREE && !s->slabs[i].inflight)
            return (int32_t)i;
    return -1;
}

void mock_policy_reset(void) { mock_num_victims = mock_victim_calls = mock_written_calls = 0; }

void mock_victim(int32_t v) { mock_victims[mock_num_victims++] = v; }
