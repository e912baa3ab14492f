/* The slab store's put path: reserve slots, write each object's header
 * and payload, and publish only what was written (batch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "alloc.h"
#include "batch.h"
#include "background.h"
#include "budget.h"
#include "gate.h"
#include "l3_crc32c.h"
#include "meta.h"
#include "monotonic.h"
#include "policy.h"
#include "summary.h"

enum { PUT_SKIP = 0, PUT_WRITE = 1, PUT_TWIN = 2 };

typedef struct put_key {
    size_t pos;
    uint64_t page;      /* its page's place in the batch: its own, or with groups its group's */
    bool tail;          /* of the batch's partial last page (l3_put_hints) */
    const l3_move *move; /* a reinsertion: the copy it replaces */
    l3_key_id id;
    int state;          /* PUT_SKIP (exists or failed), PUT_WRITE, PUT_TWIN (a key twice) */
    int ns;
    uint32_t log;       /* the log it goes to: LOG_MAIN or LOG_PROBATION */
    uint32_t pb;        /* its payload blocks (decided keys) */
    uint32_t group;     /* its group's tag (l3_put_hints), 0: none */
    uint32_t slab, slot, crc;
    uint64_t seq, gen;
    size_t plan;        /* its plans' index (plans[plan * k ...]), or SIZE_MAX before it is planned */
} put_key;

/* One wave's scratch, sized for the store's keys per wave. */
typedef struct put_wave {
    put_key *keys;
    l3_plan *plans;
    l3_io_req *reqs;
    uint32_t *slabs;    /* the distinct slabs the wave writes into */
    bool *due;          /* per slab: its summary is due once the wave is published */
    size_t m, num_slabs, np;
    size_t k;           /* ranges per key: a key's plans are plans[j * k ...] */
    const l3_move *moves; /* reinsertions (NULL for puts) */
    int32_t standby[L3_STANDBY_MAX]; /* standby slabs this wave opened (l3_alloc_standby) */
    uint64_t standby_gen[L3_STANDBY_MAX];
    uint32_t num_standby;
    uint64_t *orphans;  /* offsets of written headers a move could not publish: one per key at most */
    size_t num_orphans;
    const uint64_t *disk_len; /* every key's on-disk payload length, by its place in the batch */
    l3_key_id *ids;     /* the wave's keys' identities (admission's ghost) */
    const l3_put_hints *hints; /* what the engine said of the batch (NULL: nothing) */
    size_t batch_n;     /* the batch's keys */
    bool refused;       /* a key was declined (the rest of the batch is declined too), */
    int refused_why;    /* by admission (L3_VERDICT_REFUSED) or the budget (OVER_BUDGET) */
    bool taken;         /* admission took a key of a batch of use only whole: it takes the rest */
    uint64_t page;      /* the page of the last key numbered (put_key.page) */
    uint64_t last_page; /* the batch's last key's page */
    size_t tail_from;   /* the first key of the batch's last page */
} put_wave;

/* Whether two keys are one to the index: their hash and length. */
static bool same_key(const put_key *a, const put_key *b)
{
    return a->id.hash == b->id.hash && a->id.len == b->id.len;
}

/* A verdict beside admit.h's: refused by the write budget. */
#define OVER_BUDGET (-1)

/* Whether a write of `bytes` fits the store's write budget (under the
 * lock; budget.h): a write it does not fit is counted and declined. */
static bool within_budget(l3_slabstore *s, uint64_t bytes, bool first_sight)
{
    uint64_t rate = s->opt.write_budget;
    if (!rate || l3_budget_take(&s->sh->budget, rate, l3_admit_budget_clock(s), bytes, first_sight))
        return true; /* (no budget: no clock read) */
    atomic_fetch_add(&s->over_budget, 1);
    return false;
}

/* The decision (1 + verdict) of group g that put key p follows, or 0. A
 * refusal binds only members at first sight: a page's followers, counted
 * for a trailing state its other pages lack, never all come, and the
 * refusal would bind the page's next request, whose members the ghost has
 * seen. Such a member decides afresh, alone: its verdict binds no one
 * (a false positive of the ghost must not carry the page's other members
 * with it) and the budget charges it alone. */
static uint32_t decision_for(const l3_slabstore *s, const l3_group *g, const put_key *p, uint64_t now,
                             bool *alone)
{
    uint32_t decision = l3_group_decision(g, now);
    *alone = decision == 1 + L3_VERDICT_REFUSED && l3_admit_seen(s, p->id.hash);
    return *alone ? 0 : decision;
}

/* The admission verdict on put key p (under the lock), as its group's
 * earlier decision has it (the other ranks' and pools' objects of one
 * page follow the first), or else as the rung and the budget decide (the
 * first object of a group is charged for all of it; the keys of a whole
 * batch, once it is taken, pass the budget's gate as seen keys do). */
static int admit_key(l3_slabstore *s, put_wave *w, put_key *p, uint64_t bytes)
{
    const l3_put_hints *h = w->hints;
    uint64_t now = l3_now_ns();
    l3_group *g = p->group ? l3_groups_get(&s->groups, p->group, now) : NULL;
    bool alone;
    uint32_t decision = decision_for(s, g, p, now, &alone);
    if (decision) {
        atomic_fetch_add(&s->group_followed, 1);
        l3_group_follow(g);
        return (int)decision - 1;
    }
    bool first_sight;
    /* A batch of use only whole is decided as its last page would be. */
    uint64_t page = h && h->whole ? w->last_page : p->page;
    int v = l3_admit_decide(s, p->id.hash, page, p->tail, w->taken, &first_sight);
    if (g && !alone && h && h->group_objects > 1)
        bytes *= h->group_objects;
    if (v != L3_VERDICT_REFUSED && !within_budget(s, bytes, first_sight && !w->taken))
        v = OVER_BUDGET;
    else if (v == L3_VERDICT_REFUSED)
        atomic_fetch_add(&s->not_admitted, 1);
    /* Recorded for the other members only where it could go another way:
     * admitting everything with no budget (none here, and no process has
     * drawn on the shared bucket), every member decides alike, and a
     * decision would hold its entry for a page's members that never come. */
    bool binding = s->sh->admit.mode != L3_ADMISSION_ALL || s->opt.write_budget || l3_budget_used(&s->sh->budget);
    if (g && binding && !alone)
        l3_group_decide(g, v == OVER_BUDGET ? L3_VERDICT_REFUSED : (uint32_t)v, now, h ? h->group_objects : 0);
    return v;
}

/* Decide key i (under the lock): already there, a twin of an earlier key,
 * too big, refused by admission or the budget, or to be written (into
 * which log). */
static void decide_key(l3_slabstore *s, put_wave *w, size_t i, uint64_t size, l3_io_result *res)
{
    put_key *p = &w->keys[i];
    uint32_t b = s->geo.block_size;
    if (p->move) {
        const l3_index_entry *cur = l3_index_find(&s->index, p->id);
        if (!cur || cur->seq != p->move->old_seq)
            return; /* deleted or replaced meanwhile: nothing to move */
    } else if (l3_index_find(&s->index, p->id)) {
        res->success[p->pos] = true; /* create-only: already there */
        atomic_fetch_add(&s->put_existing, 1);
        return;
    }
    for (size_t j = 0; j < i; j++)
        if (w->keys[j].state == PUT_WRITE && same_key(&w->keys[j], p)) {
            p->state = PUT_TWIN; /* succeeds with its twin */
            return;
        }
    uint32_t pb = p->pb = (uint32_t)((size + b - 1) / b);
    if (pb > s->sh->max_payload_blocks) {
        if (!atomic_exchange(&s->warned_too_big, true))
            l3_log("warning", "an object of %llu bytes does not fit a %llu-byte slab: its put fails",
                   (unsigned long long)size, (unsigned long long)s->geo.slab_size);
        atomic_fetch_add(&s->put_rejected, 1);
        return;
    }
    uint64_t bytes = s->geo.header_bytes + (uint64_t)pb * b;
    int v;
    if (p->move)
        v = within_budget(s, bytes, false) ? L3_VERDICT_MAIN : OVER_BUDGET;
    else if (w->refused)
        v = w->refused_why;
    else
        v = admit_key(s, w, p, bytes);
    if (v == L3_VERDICT_REFUSED || v == OVER_BUDGET) {
        /* Declined, retired: over the budget or not admitted, and then so
         * is the rest of the batch (it could not be a prefix hit). */
        if (!p->move && w->refused)
            atomic_fetch_add(v == OVER_BUDGET ? &s->over_budget : &s->not_admitted, 1);
        else if (!p->move) {
            w->refused = true;
            w->refused_why = v;
        }
        atomic_fetch_add(&s->put_rejected, 1);
        return;
    }
    if (!p->move)
        atomic_fetch_add(v == L3_VERDICT_MAIN ? &s->admitted_main : &s->admitted_probation, 1);
    w->taken = w->taken || (!p->move && w->hints && w->hints->whole);
    p->log = v == L3_VERDICT_PROBATION ? LOG_PROBATION : LOG_MAIN;
    p->state = PUT_WRITE;
}

/* Reserve a slot and a sequence for key p, decided to be written (under
 * the lock); a full store refuses it. */
static void reserve_slot(l3_slabstore *s, put_wave *w, put_key *p, const char *key)
{
    int ns = l3_alloc_ns_intern(s, key, p->id.len);
    if (ns < 0 || !l3_alloc_slot(s, p->pb, p->log, &p->slab, &p->slot)) {
        p->state = PUT_SKIP;
        atomic_fetch_add(&s->put_rejected, 1); /* full: a retired failure of this key */
        return;
    }
    if (ns > 0)
        s->ns[ns - 1].reserved++; /* its slot is not reused while this put is in flight */
    p->ns = ns;
    p->gen = s->slabs[p->slab].gen; /* stable: a slab with reservations is never reopened */
    p->seq = atomic_fetch_add(&s->sh->seq, 1);
    bool known = false;
    for (size_t k = 0; k < w->num_slabs && !known; k++)
        known = w->slabs[k] == p->slab;
    if (!known)
        w->slabs[w->num_slabs++] = p->slab;
}

/* Seal key i's header into `hdr` and plan its writes at reqs[r]; returns
 * the next request index, or -1. */
static int plan_write(l3_slabstore *s, put_wave *w, put_key *p, const char *key, l3_host_buffer host,
                      const l3_range *ranges, uint8_t *hdr, int r)
{
    uint32_t hb = s->geo.header_bytes, b = s->geo.block_size;
    uint32_t size = (uint32_t)w->disk_len[p->pos];
    p->crc = l3_ranges_crc(host.base, ranges, w->k, b);
    memset(hdr, 0, hb);
    l3_object_header *h = (l3_object_header *)hdr;
    l3_slab_lock(s);
    uint64_t slot_off = l3_slot_offset(&s->geo, p->slab, s->slabs[p->slab].payload_blocks, p->slot);
    l3_slab_unlock(s);
    h->slab_gen = p->gen;
    h->epoch = s->sh->sb.epoch;
    h->seq = p->seq;
    h->slab = p->slab;
    h->slot = p->slot;
    h->size = size;
    h->payload_crc = p->crc;
    h->key_len = p->id.len;
    memcpy(h->key, key, p->id.len);
    if (p->move && (p->move->header->flags & L3_OBJ_SEGMENTED)) {
        h->flags = p->move->header->flags; /* the same shape as the copy it replaces */
        memcpy(l3_object_segments(h), l3_object_segments((l3_object_header *)p->move->header),
               sizeof(l3_segment_table));
    } else {
        l3_header_set_shape(h, ranges, w->k);
    }
    l3_object_header_seal(h);
    p->plan = w->np;
    l3_plan *pl = &w->plans[w->np++ * w->k];
    return l3_plan_object(s, pl, w->k, slot_off + hb, host.base, ranges, true, hdr, hdr + hb, w->reqs, r);
}

/* Publish a moved copy in place of the one it replaces, if that is still
 * current (under the lock); otherwise its header must not outlive a
 * crash (the key was deleted or replaced): note it for zeroing. */
static bool replace_moved(l3_slabstore *s, put_wave *w, const put_key *p, const l3_plan *pl)
{
    l3_index_entry *cur = l3_index_find(&s->index, p->id);
    if (cur && cur->seq == p->move->old_seq) {
        l3_index_entry e = *cur;
        /* The copy stays in its group: held across the swap, so that the
         * group's entry (its decisions) does not go in between. */
        uint32_t group = e.group;
        l3_group *g = l3_groups_find(&s->groups, group);
        bool held = g && l3_group_join(g); /* (a full group cannot go idle below either) */
        l3_entry_unpublish(s, cur);
        e.seq = p->seq;
        e.slab = p->slab;
        e.slot = p->slot;
        e.gen = l3_index_gen(p->gen);
        e.flags &= L3_ENTRY_SEGMENTED; /* not read since this write; the same shape */
        if (p->move->early)
            e.flags |= L3_ENTRY_EARLY;
        bool published = l3_entry_publish_grouped(s, &e, g ? group : 0);
        if (held)
            l3_groups_release(&s->groups, group, l3_now_ns());
        if (published) {
            atomic_fetch_add(&s->early_keeps, p->move->early);
            atomic_fetch_add(&s->reinserted_objects, 1);
            atomic_fetch_add(&s->reinserted_bytes, e.size);
            return true;
        }
    }
    L3_ASSERT(w->num_orphans < w->m); /* room for every key of the wave */
    w->orphans[w->num_orphans++] = pl->dev - s->geo.header_bytes;
    return false;
}

/* Publish what was written and give every reservation back (under the
 * lock); `ran` says the wave's I/O completed and was reaped. */
static void publish_wave(l3_slabstore *s, put_wave *w, bool ran, l3_io_result *res, int *io_error)
{
    l3_slab_lock(s);
    for (size_t i = 0; i < w->m; i++) {
        put_key *p = &w->keys[i];
        if (p->state != PUT_WRITE)
            continue;
        l3_plan *pl = p->plan < w->np ? &w->plans[p->plan * w->k] : NULL;
        bool written = ran && pl && l3_plans_ok(w->reqs, pl, w->k, io_error);
        if (written && p->move)
            written = replace_moved(s, w, p, pl);
        else if (written && !l3_index_find(&s->index, p->id)) {
            l3_index_entry e = { .hash = p->id.hash, .seq = p->seq, .crc = l3_crc_seal(p->crc, p->id.check),
                                 .slab = p->slab, .slot = p->slot, .size = (uint32_t)w->disk_len[p->pos],
                                 .gen = l3_index_gen(p->gen), .ns = (uint16_t)p->ns, .key_len = p->id.len,
                                 .flags = w->k > 1 ? L3_ENTRY_SEGMENTED : 0 };
            written = l3_entry_publish_grouped(s, &e, p->group);
            l3_policy_written(s, p->slab);
        }
        if (written) {
            res->success[p->pos] = true;
            atomic_fetch_add(&s->put_written, 1);
        }
        if (p->ns > 0) {
            L3_ASSERT(s->ns[p->ns - 1].reserved > 0);
            s->ns[p->ns - 1].reserved--;
        }
        l3_alloc_release(s, p->slab);
    }
    for (size_t k = 0; k < w->num_slabs; k++)
        w->due[k] = l3_summary_due(s, w->slabs[k]); /* (under this hold: no lock taken per slab to ask) */
    l3_slab_unlock(s);
    for (size_t i = 0; i < w->m; i++)
        for (size_t j = 0; w->keys[i].state == PUT_TWIN && j < i; j++)
            if (w->keys[j].state == PUT_WRITE && same_key(&w->keys[j], &w->keys[i]))
                res->success[w->keys[i].pos] = res->success[w->keys[j].pos];
}

/* A slab's record lands before any object in it, whoever reopened it: a
 * writer whose slab's record of this generation is not known to be on disk
 * writes it, or waits for the write of another writer already at it. */
static l3_status ensure_records(l3_slabstore *s, put_wave *w, l3_error *err)
{
    for (size_t k = 0; k < w->num_slabs; k++) {
        l3_slab_lock(s);
        uint64_t gen = s->slabs[w->slabs[k]].gen; /* stable: the wave holds slots in it */
        l3_slab_unlock(s);
        l3_status rc = l3_meta_ensure_record(s, w->slabs[k], gen, err);
        if (rc != L3_OK)
            return rc;
    }
    return L3_OK;
}

/* Plan the wave's writes: every reserved key's header sealed into the
 * context's bounce blocks, its header and payload requests at w->reqs, a
 * device's together, in slot order (a request merges only with the one
 * submitted before it to the same queue). The count, or -1 when a
 * temporary buffer cannot be had. */
static int plan_writes(l3_slabstore *s, put_wave *w, const char *const *keys, l3_host_buffer host,
                       const l3_range *ranges, uint8_t *bounce)
{
    uint32_t slot_scratch = s->geo.header_bytes + s->geo.block_size, nd = s->geo.num_devices;
    int r = 0;
    w->np = 0;
    for (uint32_t d = 0; d < nd && r >= 0; d++)
        for (size_t i = 0; i < w->m && r >= 0; i++) {
            put_key *p = &w->keys[i];
            if (p->state != PUT_WRITE || (nd > 1 && l3_slab_device(&s->geo, p->slab) != d))
                continue;
            r = plan_write(s, w, p, keys[p->pos], host, &ranges[p->pos * w->k], bounce + w->np * slot_scratch, r);
        }
    return r;
}

/* The devices the wave wrote objects to (a bit each), now dirty: written
 * since their last flush. With store.flush "batch" they are flushed
 * before the wave is published, so that a confirmed put is durable. */
static l3_status wave_written(l3_slabstore *s, put_wave *w, l3_error *err)
{
    uint32_t mask = 0;
    for (size_t i = 0; i < w->m; i++)
        if (w->keys[i].state == PUT_WRITE)
            mask |= 1u << l3_slab_device(&s->geo, w->keys[i].slab);
    atomic_fetch_or(&s->dirty, mask);
    return s->opt.flush == L3_FLUSH_BATCH && mask ? l3_meta_flush(s, mask, err) : L3_OK;
}

/* Zero the headers of moved copies that were written but not published:
 * they must not come back after a crash, nor after a power cut (flushed:
 * the key they copy may be deleted, and that delete's flush may not reach
 * them). */
static void zero_orphans(l3_slabstore *s, put_wave *w)
{
    uint32_t hb = s->geo.header_bytes, mask = 0;
    uint8_t *zero = w->num_orphans ? l3_meta_alloc(s->geo.block_size, hb) : NULL;
    if (w->num_orphans && !zero) {
        l3_log("error", "%zu moved objects could not be unwritten (out of memory)", w->num_orphans);
        return;
    }
    for (size_t i = 0; i < w->num_orphans; i++) {
        memset(zero, 0, hb);
        l3_error e;
        if (l3_meta_io(s, true, zero, hb, w->orphans[i], &e) != L3_OK)
            l3_log("error", "zeroing an unpublished moved object: %s", e.msg);
        mask |= 1u << l3_io_dev_of(w->orphans[i]);
    }
    l3_error e;
    if (mask && l3_meta_flush(s, mask, &e) != L3_OK)
        l3_log("error", "flushing unwritten moved objects: %s", e.msg);
    free(zero);
    w->num_orphans = 0;
}


/* The slot bytes of a batch's keys [from, to): what a wave of them needs. */
static uint64_t span_bytes(const l3_slabstore *s, const uint64_t *disk_len, size_t from, size_t to)
{
    uint64_t bytes = 0;
    for (size_t i = from; i < to; i++)
        bytes += s->geo.header_bytes + l3_round_up(disk_len[i], s->geo.block_size);
    return bytes;
}

/* Decide the wave's keys in order (a refusal refuses the rest), then
 * reserve slots for those to be written; a hinted batch (its keys in
 * chain order, l3_put_hints) tail first, so that its head lands last in
 * the log and is reclaimed last (a prefix's tail is of no use without its
 * head). Standby slabs are opened for the classes written. Under the
 * lock. */
static void reserve_wave(l3_slabstore *s, put_wave *w, const char *const *keys, size_t base, l3_io_result *res)
{
    w->num_slabs = 0;
    w->num_standby = 0;
    uint64_t published = w->moves ? 0 : span_bytes(s, w->disk_len, base, base + w->m); /* (by make_room) */
    l3_slab_lock(s);
    for (size_t i = 0; i < w->m; i++)
        decide_key(s, w, i, w->disk_len[base + i], res);
    bool chain = w->hints != NULL; /* (keys in chain order, as the hints' caller declares) */
    for (size_t j = 0; j < w->m; j++) {
        size_t i = chain ? w->m - 1 - j : j;
        if (w->keys[i].state == PUT_WRITE)
            reserve_slot(s, w, &w->keys[i], keys[base + i]);
    }
    for (size_t k = 0; k < w->num_slabs && !w->num_standby; k++)
        w->num_standby = l3_alloc_standby(s, w->slabs[k], w->standby, w->standby_gen, L3_STANDBY_MAX);
    l3_alloc_room_taken(s, published); /* its room is taken: reserved */
    l3_slab_unlock(s);
}

/* The batch's group ids, or NULL: a group of one object is the object
 * itself (not in the table), and a move keeps no group. */
static const uint64_t *batch_groups(const l3_put_hints *hints, const l3_move *moves)
{
    return hints && !moves && hints->group_objects != 1 ? hints->groups : NULL;
}

/* Whether key i (> 0) starts a page: with groups, consecutive keys of one
 * group are one page (a page's pools' objects come together). */
static bool starts_page(const uint64_t *groups, size_t i)
{
    return !(groups && groups[i] && groups[i] == groups[i - 1]);
}

/* Number put key p's page, so that the rung's depth counts pages, and
 * mark it if it is of the partial last page (keys in batch order, wave
 * after wave). */
static void number_page(put_wave *w, const uint64_t *groups, put_key *p)
{
    size_t i = p->pos;
    p->page = w->page = i == 0 ? 0 : w->page + starts_page(groups, i);
    p->tail = w->hints && w->hints->last_is_partial && i >= w->tail_from;
}

/* Where a put job's open wave is: not open, waiting for room (made by
 * its caller), at the read-first gate, at the engine for a context,
 * writing, or written (to be published). */
enum { STEP_NONE, STEP_ROOM, STEP_GATE, STEP_CONTEXT, STEP_WRITE, STEP_CLOSE };

/* A put batch from its start to its end (l3_store_put_job, l3_store.h):
 * the batch's arguments, its wave's scratch, and the open wave's place.
 * Each wave: room made (puts, not moves), keys decided and slots reserved,
 * the gate entered, slab records landed, a context taken, the writes sent
 * a gate's step at a time and reaped, then what was written published.
 * The synchronous put runs one the same way, sleeping where a driven one
 * comes back later. */
struct l3_store_put_job {
    l3_slabstore *s;
    const char *const *keys;
    size_t n, k;              /* keys, and ranges per key */
    l3_host_buffer host;
    const l3_range *ranges;
    const l3_move *moves;     /* reinsertions (reinsert.c), or NULL: create-only puts */
    l3_io_result *res;
    uint64_t *disk_len;       /* each key's on-disk payload length, computed once */
    put_wave *w;
    bool room;                /* room is made before each wave (a put's, not a move's) */
    int notify_fd;            /* the eventfd its contexts signal, or -1 */
    size_t next;              /* the next wave's first key */
    int io_error;             /* the first write error */
    int step;                 /* STEP_*: the open wave's place */
    bool gated;               /* the open wave entered the gate */
    bool gate_open;           /* without waiting it out */
    uint64_t gate_until;      /* a driven wave's deadline at the gate (ms), 0 before it waits */
    uint64_t hold_until;      /* the end of its writes' hold beside gets (ms), 0 before one */
    bool held;                /* its writes are held beside gets: it comes back to send them */
    bool may_hold;            /* it entered the gate with no get in flight (a get that comes finds it
                                 ahead: it holds its writes); else it went in beside gets, to write */
    l3_io_ctx *ctx;           /* the open wave's context, or NULL */
    size_t r, sent;           /* its requests, and those sent so far */
    bool retired;             /* its writes so far */
    bool checked;             /* the batch passed its checks: its result arrays are its own */
    l3_status rc;
    l3_error err;
};

/* The next wave's keys: [next, next + wave_keys) at most. */
static size_t wave_len(const l3_store_put_job *j)
{
    return j->n - j->next < j->s->wave_keys ? j->n - j->next : j->s->wave_keys;
}

/* Open the next wave, its keys [next, next + m), room made for it: its
 * keys decided, slots reserved, its sequence numbers leased. */
static void wave_open(l3_store_put_job *j)
{
    l3_slabstore *s = j->s;
    put_wave *w = j->w;
    size_t base = j->next, m = wave_len(j);
    w->m = m;
    const uint64_t *groups = batch_groups(w->hints, w->moves);
    for (size_t i = 0; i < m; i++) {
        w->keys[i] = (put_key){ .pos = base + i, .move = w->moves ? &w->moves[base + i] : NULL,
                                .id = l3_key_identity(j->keys[base + i], strlen(j->keys[base + i])),
                                .plan = SIZE_MAX,
                                .group = groups && groups[base + i] ? l3_group_tag(groups[base + i]) : 0 };
        number_page(w, groups, &w->keys[i]);
        w->ids[i] = w->keys[i].id;
    }
    j->gate_until = 0; /* (a deadline per wave) */
    j->hold_until = 0;
    j->held = false;
    j->may_hold = false;
    j->gated = false;
    j->rc = l3_meta_seq_lease(s, m, &j->err);
    if (j->rc != L3_OK) {
        if (j->room) { /* the room made for it is not taken */
            l3_slab_lock(s);
            l3_alloc_room_taken(s, span_bytes(s, j->disk_len, base, base + m));
            l3_slab_unlock(s);
        }
        j->step = STEP_NONE; /* nothing reserved: no wave to close */
        return;
    }
    reserve_wave(s, w, j->keys, base, j->res);
    if (!w->moves && m) {
        uint32_t b = s->geo.block_size, pb = (uint32_t)((j->disk_len[base] + b - 1) / b);
        l3_admit_put_seen(s, w->ids, m, l3_slot_bytes(&s->geo, pb), w->hints);
    }
    bool writes = false;
    for (size_t i = 0; i < m && !writes; i++)
        writes = w->keys[i].state == PUT_WRITE;
    j->step = writes ? STEP_GATE : STEP_CLOSE; /* (nothing to write: no gate, no context) */
}

/* Enter the gate (gets first), then land the wave's slab records; false
 * when a driven wave finds the gate closed (it comes back). */
static bool wave_gate(l3_store_put_job *j, bool block)
{
    l3_slabstore *s = j->s;
    if (block)
        j->gate_open = l3_gate_write_begin(&s->sh->gate, s->shm.me);
    else if (!l3_gate_write_try(&s->sh->gate, s->shm.me, &j->gate_until, &j->gate_open))
        return false;
    j->gated = true;
    j->may_hold = j->gate_open && !atomic_load(&s->sh->gate.reads);
    j->rc = ensure_records(j->s, j->w, &j->err);
    j->step = j->rc == L3_OK ? STEP_CONTEXT : STEP_CLOSE;
    return true;
}

/* Send the next step of the wave's writes: while gets are in flight, a
 * few requests at a time, so that a read waits behind no more than those
 * in the device's queue. */
static void send_step(l3_store_put_job *j)
{
    l3_slabstore *s = j->s;
    size_t step = l3_gate_write_step(&s->sh->gate, j->r - j->sent);
    j->rc = l3_io_start(s->engine, j->ctx, j->w->reqs + j->sent, step, s->opt.io_timeout, &j->retired, &j->err);
    j->sent += step;
}

/* The window of a driven wave's writes now (l3_io_set_window): the
 * gate's; but a wave that went in with no get in flight sends none more
 * while one is, for L3_GATE_WAIT_MS at most in all, so that a get finds
 * only what was already sent ahead of it. */
static size_t driven_window(l3_store_put_job *j)
{
    const l3_gate *g = &j->s->sh->gate;
    j->held = false;
    if (!j->may_hold || !atomic_load(&g->reads))
        return l3_gate_write_window(g);
    uint64_t now = l3_now_ns() / 1000000u;
    if (!j->hold_until)
        j->hold_until = now + L3_GATE_WAIT_MS;
    j->held = now < j->hold_until;
    return j->held ? 0 : l3_gate_write_window(g);
}

/* Take a context (a driven wave never waits for one: false when none is
 * free), plan the wave's writes into its bounce blocks and send the first
 * step. */
static bool wave_context(l3_store_put_job *j, bool block)
{
    l3_slabstore *s = j->s;
    if (!block)
        j->ctx = l3_io_try_acquire_for(s->engine, j->notify_fd);
    else if (!j->moves)
        j->ctx = l3_io_acquire(s->engine);
    else if (!(j->ctx = l3_io_acquire_within(s->engine, s->opt.io_timeout))) {
        /* Moves made on a driver's thread, whose own puts may hold every
         * context until it polls them again: fail, do not wait for ever. */
        j->rc = l3_fail(&j->err, L3_ETIMEDOUT, "no I/O context free within the I/O timeout");
        j->step = STEP_CLOSE;
        return true;
    }
    if (!j->ctx)
        return false;
    if (j->notify_fd >= 0) {
        j->rc = l3_io_set_notify(s->engine, j->ctx, j->notify_fd, &j->err);
        l3_io_set_wake_all(j->ctx); /* (a wave is published whole: its driver need not wake before) */
    }
    int r = plan_writes(s, j->w, j->keys, j->host, j->ranges, l3_io_bounce(j->ctx, NULL));
    j->r = r < 0 ? 0 : (size_t)r;
    j->sent = 0;
    j->retired = true;
    if (j->rc == L3_OK && r < 0)
        j->rc = l3_fail(&j->err, L3_ENOMEM, "allocating a bounce buffer");
    j->step = j->rc == L3_OK ? STEP_WRITE : STEP_CLOSE;
    if (j->rc == L3_OK && block)
        send_step(j);
    else if (j->rc == L3_OK) { /* all at once, within the gate's window */
        l3_io_set_window(j->ctx, driven_window(j));
        j->rc = l3_io_start(s->engine, j->ctx, j->w->reqs, j->r, s->opt.io_timeout, &j->retired, &j->err);
        j->sent = j->r;
    }
    return true;
}

/* Reap the wave's writes, step after step, sleeping on them when `block`;
 * whether they have all ended (or one step failed). */
static bool wave_pump(l3_store_put_job *j, bool block)
{
    l3_slabstore *s = j->s;
    if (block && j->sent == j->r)
        l3_io_set_window(j->ctx, SIZE_MAX); /* a driven wave ended by a wait (put_end): no hold */
    for (;;) {
        size_t done[64], got;
        while (!block && j->rc == L3_OK && l3_io_batch_open(j->ctx)) {
            l3_io_set_window(j->ctx, driven_window(j));
            j->rc = l3_io_poll_some(s->engine, j->ctx, done, 64, &got, &j->retired, &j->err);
            if (got == 0 && l3_io_batch_open(j->ctx))
                return false;
        }
        l3_status rc = l3_io_finish(s->engine, j->ctx, &j->retired, j->rc == L3_OK ? &j->err : NULL);
        if (j->rc == L3_OK)
            j->rc = rc;
        if (j->rc != L3_OK || !j->retired || j->sent == j->r)
            break;
        send_step(j);
    }
    j->step = STEP_CLOSE;
    return true;
}

/* Close the open wave: out of the gate, its context given back, its
 * devices dirty (flushed with store.flush "batch"), what was written
 * published, the summaries of slabs it filled and its standby slabs'
 * records written. Writes that did not retire fail the store. */
static void wave_close(l3_store_put_job *j)
{
    l3_slabstore *s = j->s;
    put_wave *w = j->w;
    L3_ASSERT(j->step == STEP_CLOSE);
    if (j->gated)
        l3_gate_write_end(&s->sh->gate, s->shm.me);
    if (j->gated && !j->gate_open) { /* it waited the longest: a dead process's count may hold the gate */
        l3_slab_lock(s);
        l3_alloc_reap_dead(s);
        l3_slab_unlock(s);
    }
    if (j->rc == L3_OK && j->retired)
        l3_meta_note_io(s, w->reqs, j->r);
    if (j->ctx)
        l3_io_release(s->engine, j->ctx);
    j->ctx = NULL;
    if (j->rc == L3_OK && j->retired)
        j->rc = wave_written(s, w, &j->err);
    if (!j->retired) {
        atomic_store(&s->fatal, true);
        j->res->retired = false;
        j->rc = L3_OK;
    }
    publish_wave(s, w, j->rc == L3_OK && j->retired, j->res, &j->io_error);
    /* A driven put leaves the metadata writes after it to the background
     * thread: queued behind the device's data writes, they would hold up
     * every operation of its driver. */
    bool defer = j->notify_fd >= 0;
    for (size_t k = 0; k < w->num_slabs && j->retired; k++)
        if (w->due[k])
            l3_background_settle(s, w->slabs[k], defer); /* a slab this wave filled */
    l3_plan_free(w->plans, w->np * w->k);
    zero_orphans(s, w);
    for (uint32_t k = 0; k < w->num_standby && j->rc == L3_OK && j->retired; k++) {
        /* After this wave's keys are published: its put need not wait. */
        l3_error e;
        if (defer)
            l3_background_defer(s, (uint32_t)w->standby[k], w->standby_gen[k], true);
        else if (l3_meta_ensure_record(s, (uint32_t)w->standby[k], w->standby_gen[k], &e) != L3_OK)
            l3_log("warning", "writing standby slab %d's record: %s (its first writer writes it)",
                   w->standby[k], e.msg);
    }
    j->next += w->m;
    j->step = STEP_NONE;
}

/* Whether another wave is to open: keys are left and all went well. */
static bool waves_left(const l3_store_put_job *j)
{
    return j->checked && j->next < j->n && j->rc == L3_OK && j->res->retired;
}

bool l3_put_job_step(l3_store_put_job *j, bool block, double *wake_by, uint64_t *room)
{
    *wake_by = 0;
    *room = 0;
    for (;;) {
        if (j->step == STEP_NONE && !waves_left(j))
            return true;
        if (j->step == STEP_NONE && j->room) {
            j->step = STEP_ROOM;
            *room = span_bytes(j->s, j->disk_len, j->next, j->next + wave_len(j));
            return false; /* (made by the caller, which calls again) */
        }
        if (j->step == STEP_NONE || j->step == STEP_ROOM)
            wave_open(j);
        if (j->step == STEP_NONE)
            continue; /* (the lease failed: nothing to close) */
        if (j->step == STEP_GATE && !wave_gate(j, block)) {
            *wake_by = l3_monotonic_seconds() + L3_JOB_RETRY;
            return false;
        }
        if (j->step == STEP_CONTEXT && !wave_context(j, block)) {
            *wake_by = l3_monotonic_seconds() + L3_JOB_RETRY;
            return false;
        }
        if (j->step == STEP_WRITE && !wave_pump(j, block)) {
            double wake = l3_io_wake_by(j->ctx), retry = l3_monotonic_seconds() + L3_JOB_RETRY;
            *wake_by = j->held && retry < wake ? retry : wake; /* (held: nothing may be in flight) */
            return false;
        }
        wave_close(j);
    }
}

static void free_wave(put_wave *w)
{
    if (!w)
        return;
    free(w->keys);
    free(w->plans);
    free(w->reqs);
    free(w->slabs);
    free(w->due);
    free(w->orphans);
    free(w->ids);
    free(w);
}

/* The batch's scratch: its wave's, and each key's on-disk length; false
 * when it cannot be had. */
static bool scratch_new(l3_store_put_job *j, const l3_put_hints *hints)
{
    l3_slabstore *s = j->s;
    size_t wk = s->wave_keys, k = j->k, n = j->n;
    put_wave *w = j->w = calloc(1, sizeof *w);
    j->disk_len = calloc(n ? n : 1, sizeof *j->disk_len);
    if (!w || !j->disk_len)
        return false;
    *w = (put_wave){ .keys = calloc(wk, sizeof(put_key)), .plans = calloc(wk * k, sizeof(l3_plan)),
                     .reqs = calloc(wk * (1 + 2 * k), sizeof(l3_io_req)), .slabs = calloc(wk, sizeof(uint32_t)),
                     .due = calloc(wk, sizeof(bool)), .orphans = j->moves ? calloc(wk, sizeof(uint64_t)) : NULL,
                     .ids = calloc(wk, sizeof(l3_key_id)), .hints = hints, .batch_n = n, .k = k,
                     .moves = j->moves, .disk_len = j->disk_len };
    if (!w->keys || !w->plans || !w->reqs || !w->slabs || !w->due || !w->ids || (j->moves && !w->orphans))
        return false;
    for (size_t i = 0; i < n; i++) /* once a key: every room of the put reads it from here */
        j->disk_len[i] = l3_ranges_disk_len(&j->ranges[i * k], k, s->geo.block_size);
    const uint64_t *groups = batch_groups(hints, j->moves);
    for (size_t i = 1; i < n; i++)
        if (starts_page(groups, i)) {
            w->last_page++;
            w->tail_from = i;
        }
    return true;
}

l3_store_put_job *l3_put_job_new(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                                 const l3_range *ranges, size_t k, const l3_move *moves, const l3_put_hints *hints,
                                 l3_io_result *res, int notify_fd)
{
    l3_store_put_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    *j = (l3_store_put_job){ .s = s, .keys = keys, .n = n, .k = k, .host = host, .ranges = ranges, .moves = moves,
                             .res = res, .room = !moves, .notify_fd = notify_fd, .retired = true };
    l3_error_clear(&j->err);
    if (!moves) {
        j->rc = l3_batch_check_io(s, keys, n, host, ranges, k, res, &j->err);
        if (j->rc != L3_OK || !res)
            return j; /* (no result arrays: an empty batch) */
        if (s->opt.read_only) {
            j->rc = l3_fail(&j->err, L3_ECLOSED, "the store is open read-only");
            return j;
        }
        atomic_fetch_add(&s->puts, 1);
    }
    j->checked = true;
    l3_batch_result_clear(res, n);
    if (!scratch_new(j, hints))
        j->rc = l3_fail(&j->err, L3_ENOMEM, "allocating a put batch");
    return j;
}

l3_slabstore *l3_put_job_store(const l3_store_put_job *j) { return j->s; }

l3_status l3_put_job_end(l3_store_put_job *j, l3_error *err)
{
    L3_ASSERT(!j->ctx && j->step == STEP_NONE);
    l3_slabstore *s = j->s;
    l3_io_result *res = j->res;
    l3_status rc = j->rc;
    free_wave(j->w);
    free(j->disk_len);
    size_t n = j->n, written = 0;
    for (size_t i = 0; j->checked && i < n && s->ndev > 1; i++)
        written += res->success[i];
    if (rc == L3_OK && j->checked && j->io_error && res->retired && !written)
        rc = l3_fail(&j->err, L3_EIO, "writing %s: %s", s->path, strerror(j->io_error));
    else if (rc == L3_OK && j->checked && j->io_error && res->retired)
        l3_log("error", "writing %s: %zu of %zu keys failed on a device (%s)", s->path, n - written, n,
               strerror(j->io_error));
    if (rc != L3_OK && j->checked)
        for (size_t i = 0; i < n; i++)
            res->success[i] = false;
    if (rc != L3_OK && err)
        *err = j->err;
    free(j);
    return rc;
}

l3_status l3_put_run(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                     const l3_range *ranges, size_t k, const l3_move *moves, l3_io_result *res, l3_error *err)
{
    L3_ASSERT(moves);
    l3_store_put_job *j = l3_put_job_new(s, keys, n, host, ranges, k, moves, NULL, res, -1);
    if (!j)
        return l3_fail(err, L3_ENOMEM, "allocating a put batch");
    double wake_by;
    uint64_t room;
    (void)l3_put_job_step(j, true, &wake_by, &room); /* (moves make no room) */
    return l3_put_job_end(j, err);
}
