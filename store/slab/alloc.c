/* The slab store's allocation and publication (alloc.h). */
#include "alloc.h"

#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "gate.h"
#include "policy.h"
#include "rules.h"

int l3_alloc_ns_intern(l3_slabstore *s, const char *key, size_t len)
{
    size_t n = l3_key_namespace_len(key, len);
    if (n == 0)
        return 0;
    int empty = -1;
    for (uint32_t i = 0; i < s->sh->num_ns; i++) {
        ns_info *ns = &s->ns[i];
        if (ns->len == n && memcmp(ns->text, key, n) == 0)
            return (int)i + 1;
        if (empty < 0 && ns->objects == 0 && ns->reserved == 0)
            empty = (int)i;
    }
    if (empty < 0) {
        if (s->sh->num_ns >= L3_MAX_NAMESPACES)
            return -1;
        empty = (int)s->sh->num_ns++;
    }
    ns_info *ns = &s->ns[empty];
    ns->len = (uint16_t)n;
    memcpy(ns->text, key, n);
    ns->text[n] = '\0';
    ns->objects = ns->bytes = ns->reserved = 0;
    return empty + 1;
}

l3_status l3_alloc_adopt(l3_slabstore *s, uint32_t i, const l3_slab_record *r, l3_error *err)
{
    slab_info *sl = &s->slabs[i];
    uint32_t nslots = l3_slots_per_slab(&s->geo, r->payload_blocks);
    if (r->payload_blocks > s->sh->max_payload_blocks || nslots == 0)
        return l3_fail(err, L3_ECORRUPT, "slab %u: size class %u does not fit a slab", i,
                       r->payload_blocks);
    if (nslots > s->sh->max_slots)
        return l3_fail(err, L3_ECORRUPT, "slab %u: %u slots", i, nslots);
    memset(l3_slab_slot_ids(s, i), 0, (size_t)nslots * sizeof(uint32_t));
    sl->state = S_SEALED;
    sl->log = LOG_MAIN;
    sl->disk_used = 1;
    sl->payload_blocks = r->payload_blocks;
    sl->gen = r->gen;
    sl->record_gen = r->gen; /* read from the disk */
    sl->summary_gen = 0;     /* not known: written again if due (deletes zero entries either way) */
    sl->first_seq = r->first_seq;
    sl->nslots = nslots;
    sl->next_slot = nslots;
    sl->live = 0;
    sl->live_bytes = 0;
    return L3_OK;
}

/* Adopt every slab of the devices in `mask` whose record is in use in
 * this epoch (under lock); a device offline takes its slabs offline. */
l3_status l3_alloc_adopt_slabs(l3_slabstore *s, uint32_t mask, l3_error *err)
{
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        const l3_slab_record *r = &s->table[i];
        slab_info *sl = &s->slabs[i];
        uint32_t d = l3_slab_device(&s->geo, i);
        if (!(mask & (1u << d)))
            continue;
        if (s->sh->dev_state[d] != DEV_OK) {
            sl->state = S_OFFLINE;
            continue;
        }
        if (l3_slab_record_valid(r, i))
            sl->gen = r->gen; /* a reopened slab's generation keeps growing */
        if (!l3_slab_in_use(r, i, s->sh->sb.epoch)) {
            sl->state = S_FREE;
            continue;
        }
        l3_status st = l3_alloc_adopt(s, i, r, err);
        if (st == L3_ECORRUPT) {
            sl->state = S_FREE; /* a record we cannot use: its objects are lost */
            continue;
        }
        if (st != L3_OK)
            return st;
    }
    return L3_OK;
}

/* Take slab v out of its class's standby chain, if it is in it. */
static void standby_unlink(l3_slabstore *s, uint32_t v)
{
    int32_t *at = l3_class_next(s, s->slabs[v].log, s->slabs[v].payload_blocks, l3_slab_device(&s->geo, v));
    for (uint32_t hops = 0; *at >= 0 && hops < s->geo.num_slabs; hops++) {
        if (*at == (int32_t)v) {
            *at = s->slabs[v].standby_next;
            return;
        }
        at = &s->slabs[*at].standby_next;
    }
}

/* Why a slab's objects leave as it is emptied: its device failed (lost),
 * or its room is wanted (evicted). */
static uint32_t evict_reason(l3_slabstore *s, uint32_t v)
{
    uint32_t failed = atomic_load(&s->sh->failed_mask);
    bool gone = s->slabs[v].state == S_OFFLINE || (failed & (1u << l3_slab_device(&s->geo, v)));
    return gone ? L3_REMOVED_LOST : L3_REMOVED_EVICTED;
}

void l3_alloc_evict(l3_slabstore *s, uint32_t v)
{
    slab_info *sl = &s->slabs[v];
    uint64_t dropped = 0;
    uint32_t *ids = l3_slab_slot_ids(s, v);
    L3_ASSERT(sl->inflight == 0);
    /* Every published slot (not trusting `live`, which a process that died
     * mid-update may have left off by one). */
    uint64_t seq = atomic_load(&s->sh->seq);
    uint32_t reason = evict_reason(s, v);
    for (uint32_t k = 0; k < sl->next_slot && k < sl->nslots; k++) {
        if (!ids[k])
            continue;
        l3_index_entry *e = l3_index_find_at(&s->index, ids[k], v, k);
        l3_group *g = e ? l3_groups_find(&s->groups, e->group) : NULL;
        if (g && !l3_group_dead_for(g, e->seq))
            l3_group_set_dead(g, seq); /* every older member goes as it is found */
        if (e) {
            l3_entry_remove(s, e, reason);
            dropped++;
        }
        ids[k] = 0;
    }
    sl->live = 0;
    sl->live_bytes = 0;
    if (dropped && sl->state != S_OFFLINE)
        l3_admit_note_full(s);
    int32_t *open = l3_class_open(s, sl->log, sl->payload_blocks, l3_slab_device(&s->geo, v));
    if (sl->state == S_OPEN && *open == (int32_t)v)
        *open = -1;
    if (sl->state == S_OPEN)
        standby_unlink(s, v);
    bool was_free = sl->state == S_FREE; /* (already counted when it was freed) */
    sl->state = sl->state == S_OFFLINE ? S_OFFLINE : S_FREE;
    if (dropped || (sl->disk_used && !was_free)) {
        atomic_fetch_add(&s->evictions, 1);
        atomic_fetch_add(&s->evicted_objects, dropped);
    }
}

/* Reopen slab v for `payload_blocks` with a new generation, and set its
 * record in the table's image (its first writer writes it to the disk);
 * the caller makes it its class's open or standby slab. */
static bool open_slab(l3_slabstore *s, uint32_t v, uint32_t payload_blocks, uint32_t lg)
{
    slab_info *sl = &s->slabs[v];
    uint32_t nslots = l3_slots_per_slab(&s->geo, payload_blocks);
    if (nslots > s->sh->max_slots)
        return false;
    l3_alloc_evict(s, v);
    memset(l3_slab_slot_ids(s, v), 0, (size_t)nslots * sizeof(uint32_t));
    sl->gen++;
    sl->record_gen = 0; /* the first writer into it writes its record */
    sl->payload_blocks = payload_blocks;
    sl->log = lg;
    sl->first_seq = atomic_load(&s->sh->seq);
    sl->next_slot = 0;
    sl->nslots = nslots;
    sl->state = S_OPEN;
    sl->disk_used = 1;
    l3_policy_written(s, v);
    l3_slab_record *r = &s->table[v];
    memset(r, 0, sizeof *r);
    r->slab = v;
    r->state = L3_SLAB_USED;
    r->gen = sl->gen;
    r->epoch = s->sh->sb.epoch;
    r->first_seq = sl->first_seq;
    r->payload_blocks = payload_blocks;
    l3_slab_record_seal(r);
    return true;
}

int32_t l3_alloc_take_victim(l3_slabstore *s)
{
    int32_t v = l3_policy_victim(s, true, -1);
    if (v < 0)
        return -1;
    slab_info *sl = &s->slabs[v];
    int32_t *open = l3_class_open(s, sl->log, sl->payload_blocks, l3_slab_device(&s->geo, (uint32_t)v));
    if (sl->state == S_OPEN && *open == v)
        *open = -1;
    sl->state = S_SEALED;
    l3_alloc_pin(s, (uint32_t)v);
    return v;
}

void l3_alloc_restore_fill(l3_slabstore *s, uint32_t i, uint32_t next, bool free_slab, bool open)
{
    slab_info *sl = &s->slabs[i];
    L3_ASSERT(next <= sl->nslots);
    sl->next_slot = next;
    sl->log = LOG_MAIN; /* (the logs are soft state: a load puts everything in main's) */
    int32_t *cls = l3_class_open(s, LOG_MAIN, sl->payload_blocks, l3_slab_device(&s->geo, i));
    if (free_slab) {
        sl->state = S_FREE;
    } else if (open && next > 0 && *cls < 0) {
        sl->state = S_OPEN;
        *cls = (int32_t)i;
    }
}

/* Account `a`'s pin of slab `slab`, or NULL. */
static l3_proc_pin *pin_of(l3_proc_account *a, uint32_t slab)
{
    for (uint32_t k = 0; k < a->npins; k++)
        if (a->pins[k].slab == slab)
            return &a->pins[k];
    return NULL;
}

void l3_alloc_pin(l3_slabstore *s, uint32_t slab)
{
    /* The slab's count first, the pin after (a new one written before it
     * is counted in npins): a process that dies between them leaves its
     * slab pinned, never another's reservation given back. */
    l3_proc_account *a = &s->sh->alloc.procs[s->shm.me];
    s->slabs[slab].inflight++;
    s->sh->alloc.reserved++;
    a->reserved++;
    l3_proc_pin *p = pin_of(a, slab);
    if (p) {
        p->count++;
    } else if (a->npins < L3_PROC_PINS) {
        a->pins[a->npins] = (l3_proc_pin){ .slab = slab, .count = 1 };
        a->npins++;
    } else {
        a->untracked++;
    }
}

/* Take the next slot of slab `v` for this process. */
static void reserve(l3_slabstore *s, uint32_t v, uint32_t *out_slab, uint32_t *out_slot)
{
    slab_info *sl = &s->slabs[v];
    L3_ASSERT(sl->state == S_OPEN && sl->next_slot < sl->nslots);
    *out_slab = v;
    *out_slot = sl->next_slot++;
    l3_alloc_pin(s, v);
}

/* The payload bytes the slabs hold. */
static uint64_t total_live_bytes(const l3_slabstore *s)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        n += s->slabs[i].live_bytes;
    return n;
}

/* Say once per process that the index bound, not the slabs, evicts while
 * slabs stand free: the objects are smaller than the store was sized for. */
static void warn_index_bound(l3_slabstore *s)
{
    if (atomic_load(&s->warned_index_bound))
        return;
    uint32_t free_slabs = 0;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        free_slabs += s->slabs[i].state == S_FREE;
    if (free_slabs == 0 || atomic_exchange(&s->warned_index_bound, true))
        return;
    l3_log("warning", "%s: the index is full at %llu objects (store.max_objects, from "
           "store.expected_object_size) while %u of %u slabs are free: slabs are evicted early. Objects "
           "average %llu bytes here; format the store with store.expected_object_size near that to use "
           "its whole capacity", s->path, (unsigned long long)s->index.meta->max, free_slabs, s->geo.num_slabs,
           (unsigned long long)(s->index.meta->count ? total_live_bytes(s) / s->index.meta->count : 0));
}

/* The device the next slot of `slot_bytes` goes to: the devices in turn,
 * a stripe of L3_STRIPE_BYTES each (consecutive keys of a batch land
 * together on one device, so that its requests stay as large as one
 * device's would be), passing over offline ones; -1 when none is online. */
static int32_t next_device(shared *sh, uint32_t nd, uint64_t slot_bytes)
{
    if (nd == 1)
        return sh->dev_state[0] == DEV_OK ? 0 : -1;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t d = (sh->alloc.stripe_dev + k) % nd;
        if (sh->dev_state[d] != DEV_OK)
            continue;
        if (k) { /* the current one went offline: a fresh stripe here */
            sh->alloc.stripe_dev = d;
            sh->alloc.stripe_fill = 0;
        }
        sh->alloc.stripe_fill += (uint32_t)(slot_bytes < L3_STRIPE_BYTES ? slot_bytes : L3_STRIPE_BYTES);
        if (sh->alloc.stripe_fill >= L3_STRIPE_BYTES) {
            sh->alloc.stripe_dev = (d + 1) % nd;
            sh->alloc.stripe_fill = 0;
        }
        return (int32_t)d;
    }
    return -1;
}

/* A slab to open on device `d`, or failing that on any online device. */
static int32_t victim_near(l3_slabstore *s, int32_t d)
{
    int32_t v = l3_policy_victim(s, false, s->geo.num_devices > 1 ? d : -1);
    if (v < 0 && s->geo.num_devices > 1)
        v = l3_policy_victim(s, false, -1);
    return v;
}

bool l3_alloc_slot(l3_slabstore *s, uint32_t pb, uint32_t lg, uint32_t *out_slab, uint32_t *out_slot)
{
    L3_ASSERT(lg < L3_LOGS);
    if (l3_alloc_sweep_due(s))
        l3_alloc_sweep_failed(s);
    /* The index has a bound: make room by evicting whole slabs. */
    while (s->index.meta->count + s->sh->alloc.reserved >= s->index.meta->max) {
        int32_t v = l3_policy_victim(s, true, -1);
        if (v < 0)
            return false;
        warn_index_bound(s);
        l3_alloc_evict(s, (uint32_t)v);
        atomic_fetch_add(&s->index_bound_evictions, 1);
    }
    int32_t d = next_device(s->sh, s->geo.num_devices, l3_slot_bytes(&s->geo, pb));
    if (d < 0)
        return false;
    int32_t *open = l3_class_open(s, lg, pb, (uint32_t)d);
    int32_t cur = *open;
    if (cur >= 0 && s->slabs[cur].next_slot < s->slabs[cur].nslots) {
        reserve(s, (uint32_t)cur, out_slab, out_slot);
        return true;
    }
    if (cur >= 0) {
        s->slabs[cur].state = S_SEALED;
        *open = -1;
    }
    int32_t *next = l3_class_next(s, lg, pb, (uint32_t)d);
    int32_t v = *next;
    if (v >= 0)
        *next = s->slabs[v].standby_next;
    if (v < 0 || s->slabs[v].state != S_OPEN || s->slabs[v].payload_blocks != pb || s->slabs[v].next_slot ||
        s->slabs[v].log != lg) {
        v = victim_near(s, d);
        if (v < 0 && l3_alloc_reap_dead(s))
            v = victim_near(s, d); /* a dead process held them */
        if (v < 0 || !open_slab(s, (uint32_t)v, pb, lg))
            return false;
    }
    *open = v;
    reserve(s, (uint32_t)v, out_slab, out_slot);
    return true;
}

/* How many standby slabs class `pb` keeps: enough for the writes in
 * flight (every reservation of every process, as slots of this class) to
 * move on without waiting for a record, and one more. */
static uint32_t standby_target(const l3_slabstore *s, uint32_t pb)
{
    uint64_t slot = l3_slot_bytes(&s->geo, pb);
    uint64_t inflight = (uint64_t)s->sh->alloc.reserved * slot;
    uint64_t n = inflight / s->geo.slab_size + 1;
    uint32_t cap = s->geo.num_slabs / 8 < L3_STANDBY_MAX ? s->geo.num_slabs / 8 : L3_STANDBY_MAX;
    return n < cap ? (uint32_t)n : cap;
}

uint32_t l3_alloc_standby(l3_slabstore *s, uint32_t cur, int32_t *out, uint64_t *gens, uint32_t max)
{
    slab_info *sl = &s->slabs[cur];
    uint32_t pb = sl->payload_blocks, d = l3_slab_device(&s->geo, cur), lg = sl->log;
    if (sl->state != S_OPEN || *l3_class_open(s, lg, pb, d) != (int32_t)cur)
        return 0;
    int32_t *tail = l3_class_next(s, lg, pb, d);
    uint32_t have = 0;
    while (*tail >= 0 && have < s->geo.num_slabs) {
        tail = &s->slabs[*tail].standby_next;
        have++;
    }
    uint32_t target = standby_target(s, pb), n = 0;
    while (have + n < target && n < max) {
        int32_t v = victim_near(s, (int32_t)d);
        if (v < 0 || v == (int32_t)cur || l3_slab_device(&s->geo, (uint32_t)v) != d)
            break;
        slab_info *vs = &s->slabs[v];
        if (vs->state != S_FREE && !(vs->state == S_SEALED && vs->live == 0))
            break; /* only empty slabs: evicting stays the full slab's job */
        if (!open_slab(s, (uint32_t)v, pb, lg))
            break;
        vs->standby_next = -1;
        *tail = v;
        tail = &vs->standby_next;
        out[n] = v;
        gens[n++] = vs->gen;
    }
    return n;
}

void l3_alloc_sweep_failed(l3_slabstore *s)
{
    uint32_t failed = atomic_load(&s->sh->failed_mask), swept = atomic_load(&s->sh->swept_mask);
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        uint32_t d = l3_slab_device(&s->geo, i);
        if (!(failed & ~swept & (1u << d)))
            continue;
        slab_info *sl = &s->slabs[i];
        if (sl->state != S_OFFLINE && sl->inflight == 0)
            l3_alloc_evict(s, i);
        sl->state = S_OFFLINE; /* (one with writes in flight is evicted as they end) */
    }
    atomic_fetch_or(&s->sh->swept_mask, failed);
}

void l3_alloc_release(l3_slabstore *s, uint32_t slab_id)
{
    slab_info *sl = &s->slabs[slab_id];
    /* Only this process's own reservations; a dead process's are released
     * by l3_alloc_reap_dead. */
    l3_proc_account *a = &s->sh->alloc.procs[s->shm.me];
    l3_proc_pin *p = pin_of(a, slab_id);
    L3_ASSERT(p || a->untracked > 0);
    if (p || a->untracked) {
        L3_ASSERT(sl->inflight > 0 && s->sh->alloc.reserved > 0 && a->reserved > 0);
        if (!p)
            a->untracked--;
        else if (--p->count == 0)
            *p = a->pins[--a->npins]; /* (the last takes its place) */
        sl->inflight--;
        s->sh->alloc.reserved--;
        a->reserved--;
    }
    if (sl->state == S_OPEN && sl->next_slot >= sl->nslots &&
        *l3_class_open(s, sl->log, sl->payload_blocks, l3_slab_device(&s->geo, slab_id)) != (int32_t)slab_id)
        sl->state = S_SEALED;
    if (sl->state == S_OFFLINE && sl->inflight == 0 && (sl->live || sl->next_slot))
        l3_alloc_evict(s, slab_id); /* its device failed while writes were in flight */
}

void l3_alloc_release_proc(l3_slabstore *s, int p)
{
    shared *h = s->sh;
    l3_proc_account *a = &h->alloc.procs[p];
    for (uint32_t k = 0; k < a->npins && k < L3_PROC_PINS; k++) {
        if (a->pins[k].slab >= s->geo.num_slabs)
            continue; /* (not a slab: nothing a process writes) */
        slab_info *sl = &s->slabs[a->pins[k].slab];
        uint32_t n = a->pins[k].count;
        L3_ASSERT(sl->inflight >= n);
        sl->inflight = sl->inflight >= n ? sl->inflight - n : 0;
    }
    if (a->untracked)
        l3_log("warning", "%s: %u reservations of a dead process were past its %u slabs' pins: their slabs "
               "stay pinned until every process has closed the store", s->path, a->untracked, L3_PROC_PINS);
    l3_gate_release_proc(&h->gate, p);
    h->alloc.reserved = h->alloc.reserved >= a->reserved ? h->alloc.reserved - a->reserved : 0;
    *a = (l3_proc_account){ 0 };
}

int l3_alloc_reap_dead(l3_slabstore *s)
{
    uint64_t dead = l3_shm_dead_slots(&s->shm);
    int n = 0;
    for (int p = 0; p < L3_MAX_PROCS; p++)
        if (dead & (1ull << p)) {
            l3_alloc_release_proc(s, p);
            l3_shm_free_slot(&s->shm, p);
            n++;
        }
    return n;
}

void l3_alloc_reset(l3_slabstore *s)
{
    l3_entries_clear(s);
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        slab_info *sl = &s->slabs[i];
        sl->state = sl->state == S_OFFLINE ? S_OFFLINE : S_FREE;
        sl->disk_used = 0;
        sl->record_gen = 0;
        sl->log = LOG_MAIN;
    }
    for (uint32_t c = 0; c < 2 * L3_LOGS * (s->sh->max_payload_blocks + 1) * s->geo.num_devices; c++)
        s->class_open[c] = -1; /* (open and standby) */
}

void l3_alloc_wait_room(l3_slabstore *s, uint64_t bytes)
{
    s->sh->alloc.procs[s->shm.me].pending += bytes;
}

void l3_alloc_room_taken(l3_slabstore *s, uint64_t bytes)
{
    uint64_t *pending = &s->sh->alloc.procs[s->shm.me].pending;
    *pending = *pending > bytes ? *pending - bytes : 0;
}
