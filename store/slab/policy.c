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

/* An entry's flags: bit 0 read since written, bit 1 not the policy's
 * (L3_ENTRY_SEGMENTED), bit 2 an early keep. Its read stamp is the
 * object sequence of its last read, in units of 2^stamp_shift: at most
 * 1/2048 of the store's bound, so the 16 bits span at least 16 turns of
 * the store. */
#define STAMP_BITS 16u
#define STAMP_UNITS_A_BOUND 2048u

static unsigned stamp_shift(const l3_slabstore *s)
{
    unsigned shift = 0;
    while ((s->geo.max_objects >> shift) > STAMP_UNITS_A_BOUND)
        shift++;
    return shift;
}

/* Early keeps (L3_KEEP_EARLY) are judged when their slab is reused
 * again: read since they moved, or not. A trial moves the next
 * EARLY_TRIAL of them; once EARLY_MIN or more are judged, they go on
 * while at least 1 in EARLY_SHARE judged was read (the counts halved
 * past EARLY_WINDOW), else they stop while the store writes EARLY_PAUSE
 * times the objects it holds, and a new trial follows. A trial is a run
 * of consecutive keeps, not a sample of keys: in a prefix cache a key
 * kept without the blocks before it is seldom a hit (a sample of 1 key in
 * 16 was read again 9% of the time where all were 26%). On the traces,
 * early keeps were read again 26% of the time where keeping them gains
 * hits, 2% where it loses (bench/results/2026-12-04-early-keeps.txt). */
#define EARLY_SHARE 8u
#define EARLY_MIN 64u
#define EARLY_WINDOW 4096u
#define EARLY_PAUSE 4u
#define EARLY_TRIAL 512u

void l3_policy_read(l3_slabstore *s, l3_index_entry *e)
{
    L3_ASSERT(e->slab < s->geo.num_slabs);
    uint64_t now = atomic_load_explicit(&s->sh->seq, memory_order_relaxed);
    e->read_stamp = (now >> stamp_shift(s)) & ((1u << STAMP_BITS) - 1);
    e->flags |= L3_ENTRY_READ;
    atomic_store_explicit(&s->slabs[e->slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

void l3_policy_written(l3_slabstore *s, uint32_t slab)
{
    L3_ASSERT(slab < s->geo.num_slabs);
    atomic_store_explicit(&s->slabs[slab].last_access, atomic_fetch_add(&s->sh->tick, 1),
                          memory_order_relaxed);
}

/* The object sequence at an entry's last read, from its stamp and the
 * sequence now: the end of the stamp's unit, at most now (a read more
 * than 2^STAMP_BITS units ago is taken for a later one, never for one
 * before the write). */
static uint64_t last_read_seq(const l3_slabstore *s, const l3_index_entry *e, uint64_t now)
{
    unsigned shift = stamp_shift(s);
    uint64_t span = 1ull << (STAMP_BITS + shift), unit = 1ull << shift;
    uint64_t seq = (now & ~(span - 1)) | ((uint64_t)e->read_stamp << shift);
    if (seq > now)
        seq = seq >= span ? seq - span : 0;
    seq += unit - 1;
    if (seq > now)
        seq = now;
    return seq > e->seq ? seq : e->seq;
}

/* Whether the object of `e` was read since its write, itself or its
 * group (last read at `group_read`, 0: none). */
static bool read_since(const l3_index_entry *e, uint64_t group_read)
{
    return (e->flags & L3_ENTRY_READ) || group_read > e->seq;
}

/* The objects the store holds (at least 1). */
static uint64_t held_objects(const l3_slabstore *s)
{
    return s->index.meta->count ? s->index.meta->count : 1;
}

/* Count an early keep judged (read since its move, or not) in trial `t`
 * at object sequence `now`, the store holding `held` objects: while they
 * pay they go on; once they do not, a pause. */
static void judge_early(l3_early_trial *t, uint64_t now, bool read, uint64_t held)
{
    t->judged++;
    t->read += read;
    if (t->judged >= 2ull * EARLY_WINDOW) {
        t->judged /= 2;
        t->read /= 2;
    }
    if (t->read > t->judged)
        t->read = t->judged; /* (a process that died between the halvings) */
    if (t->judged < EARLY_MIN)
        return;
    if (t->read * EARLY_SHARE >= t->judged) {
        t->on = 1;
        return;
    }
    t->on = 0;
    t->tried = 0;
    t->off_until = now + EARLY_PAUSE * held;
    t->judged = t->read = 0; /* the next trial is judged afresh */
}

void l3_policy_judge(l3_slabstore *s, const l3_index_entry *e, uint64_t group_read)
{
    uint64_t now = atomic_load_explicit(&s->sh->seq, memory_order_relaxed);
    if (!(e->flags & L3_ENTRY_EARLY) || now < s->sh->keep_trial.off_until)
        return; /* (while paused, what was moved before is not the next trial's) */
    judge_early(&s->sh->keep_trial, now, read_since(e, group_read), held_objects(s));
}

/* Whether an early keep moves now in trial `t` (under the lock), the store
 * holding `held` objects: not while paused; while they pay, yes; else the
 * trial's first EARLY_TRIAL do, and the rest wait for the verdict (a trial
 * not judged within two turns of the store, its keeps gone another way,
 * starts again). */
static bool early_moves(l3_early_trial *t, uint64_t now, uint64_t held)
{
    if (now < t->off_until)
        return false;
    if (t->on)
        return true;
    if (t->tried >= EARLY_TRIAL && now - t->trial_end > 2 * held)
        t->tried = 0;
    if (t->tried >= EARLY_TRIAL)
        return false;
    if (++t->tried == EARLY_TRIAL)
        t->trial_end = now;
    return true;
}

l3_keep l3_policy_keep(l3_slabstore *s, const l3_index_entry *e, uint64_t group_read)
{
    if (s->opt.eviction != L3_EVICT_FIFO_REINSERT || !read_since(e, group_read))
        return L3_KEEP_NOT;
    if (s->slabs[e->slab].log == LOG_PROBATION)
        return L3_KEEP; /* written at first sight and read since: it moves to main */
    uint64_t now = atomic_load_explicit(&s->sh->seq, memory_order_relaxed);
    uint64_t last = e->flags & L3_ENTRY_READ ? last_read_seq(s, e, now) : e->seq;
    if (group_read > last)
        last = group_read;
    /* Read in the last three quarters of its time here; a read right
     * after the write and none since says less: an early keep, while
     * they pay, and never under a write budget (the writes worth least:
     * at half the LRU's writes they cost 1.5 points of hits, bench/results). */
    if (now <= e->seq || (last - e->seq) * 4 > now - e->seq)
        return L3_KEEP;
    bool early = !s->opt.write_budget && early_moves(&s->sh->keep_trial, now, held_objects(s));
    return early ? L3_KEEP_EARLY : L3_KEEP_NOT;
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
    int32_t best[L3_LOGS] = { -1, -1 };
    uint64_t best_key[L3_LOGS] = { UINT64_MAX, UINT64_MAX }, now = l3_policy_clock_ns();
    uint32_t nd = s->geo.num_devices, used[L3_LOGS] = { 0, 0 };
    for (uint32_t i = device < 0 ? 0 : (uint32_t)device; i < s->geo.num_slabs; i += device < 0 ? 1 : nd) {
        slab_info *sl = &s->slabs[i];
        L3_ASSERT(sl->log < L3_LOGS);
        if (sl->live)
            used[sl->log]++;
        if (sl->inflight || sl->state == S_OFFLINE)
            continue;
        if (!need_live && sl->state == S_FREE)
            return (int32_t)i;
        if (!need_live && sl->live == 0 && sl->state == S_SEALED)
            return (int32_t)i;
        if ((need_live && sl->live == 0) || sl->lease_until > now)
            continue; /* nothing to evict, or leased to a reader */
        uint64_t key = age_key(s, sl);
        if (key < best_key[sl->log]) {
            best_key[sl->log] = key;
            best[sl->log] = (int32_t)i;
        }
    }
    int lg = from_probation(s, used[LOG_PROBATION], used[LOG_MAIN]) ? LOG_PROBATION : LOG_MAIN;
    return best[lg] >= 0 ? best[lg] : best[1 - lg];
}

uint64_t l3_policy_room(const l3_slabstore *s)
{
    uint64_t free = 0, open[L3_LOGS] = { 0, 0 };
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        const slab_info *sl = &s->slabs[i];
        if (!sl->inflight && (sl->state == S_FREE || (sl->state == S_SEALED && sl->live == 0)))
            free += s->geo.slab_size;
        else if (sl->state == S_OPEN && sl->next_slot < sl->nslots)
            open[sl->log] += (uint64_t)(sl->nslots - sl->next_slot) * l3_slot_bytes(&s->geo, sl->payload_blocks);
    }
    /* A wave's keys may land in either log, and what reinsertion keeps
     * moves to main's: while both logs are written, only the smaller one's
     * open slots are room for sure (counting probation's let main's moves
     * find no free slab, and evict a live one without reinsertion). */
    uint64_t in_main = open[LOG_MAIN], in_probation = open[LOG_PROBATION];
    bool both = !l3_admit_rung(s)->single;
    return free + (both && in_probation < in_main ? in_probation : in_main);
}
