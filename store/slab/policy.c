/* The eviction policy (policy.h): FIFO slabs with reinsertion of what was
 * read (the default), or least recently used whole slabs. */
#include "policy.h"

#include "admit.h"
#include "monotonic.h"

uint64_t l3_policy_clock_ns(void) { return l3_now_ns(); }

void l3_policy_lease(l3_slabstore *s, uint32_t slab, uint64_t until)
{
    L3_ASSERT(slab < s->geo.num_slabs);
    if (s->slabs[slab].lease_until < until)
        s->slabs[slab].lease_until = until;
}

/* An entry's flag word: bit 0 read since written, bit 1 not the policy's
 * (L3_ENTRY_SEGMENTED), bits 2-31 the object sequence (low 30 bits) when
 * it was last read. */
#define READ_SEQ_MASK 0x3fffffffu

void l3_policy_read(l3_slabstore *s, l3_index_entry *e)
{
    L3_ASSERT(e->slab < s->geo.num_slabs);
    uint64_t now = atomic_load_explicit(&s->sh->seq, memory_order_relaxed);
    e->pad = (uint32_t)((now & READ_SEQ_MASK) << 2) | (e->pad & L3_ENTRY_SEGMENTED) | L3_ENTRY_READ;
    atomic_store_explicit(&s->slabs[e->slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

void l3_policy_written(l3_slabstore *s, uint32_t slab)
{
    L3_ASSERT(slab < s->geo.num_slabs);
    atomic_store_explicit(&s->slabs[slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

/* The object sequence at an entry's last read, from its low 31 bits and
 * the sequence now (reads more than 2^30 puts ago read as the write). */
static uint64_t last_read_seq(const l3_index_entry *e, uint64_t now)
{
    uint64_t low = e->pad >> 2, seq = (now & ~(uint64_t)READ_SEQ_MASK) | low;
    if (seq > now)
        seq = seq >= (uint64_t)READ_SEQ_MASK + 1 ? seq - ((uint64_t)READ_SEQ_MASK + 1) : 0;
    return seq > e->seq ? seq : e->seq;
}

/* The rule, for `e` last read at `last` (> its write). */
static bool reinserts_after(const l3_slabstore *s, const l3_index_entry *e, uint64_t last, uint64_t now)
{
    if (s->slabs[e->slab].segment == SEG_PROBATION)
        return true; /* written at first sight and read since: it moves to main */
    /* Read in the last three quarters of its time here: a read right after
     * the write and none since says little (bench/results: the write cost
     * falls by a third, the hits stay). */
    return now <= e->seq || (last - e->seq) * 4 > now - e->seq;
}

bool l3_policy_reinserts(const l3_slabstore *s, const l3_index_entry *e)
{
    if (s->opt.eviction != L3_EVICT_FIFO_REINSERT || !(e->pad & L3_ENTRY_READ))
        return false;
    uint64_t now = atomic_load_explicit(&s->sh->seq, memory_order_relaxed);
    return reinserts_after(s, e, last_read_seq(e, now), now);
}

bool l3_policy_reinserts_read_at(const l3_slabstore *s, const l3_index_entry *e, uint64_t read_seq)
{
    if (s->opt.eviction != L3_EVICT_FIFO_REINSERT || read_seq <= e->seq)
        return false;
    uint64_t now = atomic_load_explicit(&s->sh->seq, memory_order_relaxed);
    return reinserts_after(s, e, read_seq, now);
}

/* A slab's age for the victim choice: FIFO orders by when it was opened,
 * LRU by its last read or write. */
static uint64_t age_key(const l3_slabstore *s, const slab_info *sl)
{
    if (s->opt.eviction == L3_EVICT_LRU_SLAB)
        return atomic_load_explicit(&sl->last_access, memory_order_relaxed);
    return sl->first_seq;
}

/* Whether the victim comes from probation's log: while probation's slabs
 * are at least its share of the store's (or main has none), or always
 * under a rung without probation (it drains). */
static bool from_probation(const l3_slabstore *s, uint32_t probation, uint32_t main)
{
    const l3_rung *r = l3_admit_rung(s);
    return probation > 0 &&
           (r->single || main == 0 || (double)probation >= (double)r->probation * s->geo.num_slabs);
}

int32_t l3_policy_victim(l3_slabstore *s, bool need_live, int32_t device)
{
    int32_t best[L3_SEGMENTS] = { -1, -1 };
    uint64_t best_key[L3_SEGMENTS] = { UINT64_MAX, UINT64_MAX }, now = l3_policy_clock_ns();
    uint32_t nd = s->geo.num_devices, used[L3_SEGMENTS] = { 0, 0 };
    for (uint32_t i = device < 0 ? 0 : (uint32_t)device; i < s->geo.num_slabs; i += device < 0 ? 1 : nd) {
        slab_info *sl = &s->slabs[i];
        L3_ASSERT(sl->segment < L3_SEGMENTS);
        if (sl->live)
            used[sl->segment]++;
        if (sl->inflight || sl->state == S_OFFLINE)
            continue;
        if (!need_live && sl->state == S_FREE)
            return (int32_t)i;
        if (!need_live && sl->live == 0 && sl->state == S_SEALED)
            return (int32_t)i;
        if ((need_live && sl->live == 0) || sl->lease_until > now)
            continue; /* nothing to evict, or leased to a reader */
        uint64_t key = age_key(s, sl);
        if (key < best_key[sl->segment]) {
            best_key[sl->segment] = key;
            best[sl->segment] = (int32_t)i;
        }
    }
    int seg = from_probation(s, used[SEG_PROBATION], used[SEG_MAIN]) ? SEG_PROBATION : SEG_MAIN;
    return best[seg] >= 0 ? best[seg] : best[1 - seg];
}

bool l3_policy_admit(l3_slabstore *s, uint64_t bytes, bool first_sight)
{
    uint64_t rate = s->opt.write_budget;
    if (!rate)
        return true;
    uint64_t now = l3_admit_budget_clock(s), cap = rate * 10;
    shared *sh = s->sh;
    if (sh->budget_ns == 0) {
        sh->budget_bytes = cap; /* a new store starts with a full bucket */
        sh->budget_ns = now;
    } else if (now > sh->budget_ns) {
        double add = (double)(now - sh->budget_ns) * 1e-9 * (double)rate;
        sh->budget_bytes = add >= (double)(cap - sh->budget_bytes) ? cap : sh->budget_bytes + (uint64_t)add;
        sh->budget_ns = now; /* (a process whose clock is behind never moves it back: no refill twice) */
    }
    /* A first sighting waits for a bucket at least half full: as the
     * budget tightens, what was seen twice is still written. */
    if (sh->budget_bytes < bytes || (first_sight && sh->budget_bytes < cap / 2)) {
        atomic_fetch_add(&s->over_budget, 1);
        return false;
    }
    sh->budget_bytes -= bytes;
    return true;
}

uint64_t l3_policy_room(const l3_slabstore *s)
{
    uint64_t free = 0, open[L3_SEGMENTS] = { 0, 0 };
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        const slab_info *sl = &s->slabs[i];
        if (!sl->inflight && (sl->state == S_FREE || (sl->state == S_SEALED && sl->live == 0)))
            free += s->geo.slab_size;
        else if (sl->state == S_OPEN && sl->next_slot < sl->nslots)
            open[sl->segment] += (uint64_t)(sl->nslots - sl->next_slot) * l3_slot_bytes(&s->geo, sl->payload_blocks);
    }
    /* A wave's keys may land in either log, and what reinsertion keeps
     * moves to main's: while both logs are written, only the smaller one's
     * open slots are room for sure (counting probation's let main's moves
     * find no free slab, and evict a live one without reinsertion). */
    uint64_t in_main = open[SEG_MAIN], in_probation = open[SEG_PROBATION];
    bool both = !l3_admit_rung(s)->single;
    return free + (both && in_probation < in_main ? in_probation : in_main);
}
