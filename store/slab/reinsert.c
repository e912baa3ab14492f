/* Reinsertion ahead of eviction (reinsert.h). */
#include "reinsert.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "batch.h"
#include "l3_crc32c.h"
#include "meta.h"
#include "policy.h"

/* The objects of one victim to move: their index entries (copied under
 * the lock), early[i] for an early keep, and, after the read, their slot
 * images (header, then payload) at off[i] of one buffer; ok[i] when the
 * image checked. */
typedef struct evacuation {
    uint32_t slab;
    size_t n;
    l3_index_entry *entries;
    bool *early;
    uint8_t *buf;
    uint64_t *off;
    bool *ok;
} evacuation;

/* Whether the object of `e`, of group `g` (or none), is kept (under the
 * lock): a page's objects stay or go together, so a group's verdict on
 * an older member (kept, or dead: evicted) or its lease decides first;
 * else the policy, whose keeping then keeps the group's older members. */
static l3_keep keeps(l3_slabstore *s, const l3_index_entry *e, l3_group *g)
{
    uint64_t group_read = l3_group_read_after(g, e->seq);
    l3_policy_judge(s, e, group_read); /* (every early keep, whatever its group says) */
    if (l3_group_dead_for(g, e->seq)) {
        atomic_fetch_add(&s->group_dropped, 1);
        return L3_KEEP_NOT;
    }
    if (l3_group_kept_for(&s->groups, g, e->seq, l3_policy_clock_ns()))
        return L3_KEEP;
    /* Its own reads, or its page's: a member read since it was written
     * counts for every member written before that read. */
    l3_keep keep = l3_policy_keep(s, e, group_read);
    if (keep != L3_KEEP_NOT && g)
        l3_group_set_kept(g, atomic_load(&s->sh->seq)); /* (a dead group stays dead for its older members) */
    return keep;
}

/* Take the policy's victim (the allocator seals and pins it, under the
 * lock) and copy the entries of what it keeps. False when there is no
 * victim. */
static bool pick(l3_slabstore *s, evacuation *ev)
{
    int32_t v = l3_alloc_take_victim(s);
    if (v < 0)
        return false;
    const slab_info *sl = &s->slabs[v];
    uint32_t *ids = l3_slab_slot_ids(s, (uint32_t)v);
    ev->slab = (uint32_t)v;
    ev->entries = calloc(sl->nslots ? sl->nslots : 1, sizeof *ev->entries);
    ev->early = calloc(sl->nslots ? sl->nslots : 1, sizeof *ev->early);
    for (uint32_t k = 0; ev->entries && ev->early && k < sl->next_slot && k < sl->nslots; k++) {
        l3_index_entry *e = ids[k] ? l3_index_find_at(&s->index, ids[k], (uint32_t)v, k) : NULL;
        l3_keep keep = e ? keeps(s, e, l3_groups_find(&s->groups, e->group)) : L3_KEEP_NOT;
        if (keep != L3_KEEP_NOT) {
            ev->early[ev->n] = keep == L3_KEEP_EARLY;
            ev->entries[ev->n++] = *e;
        }
    }
    return true;
}

/* Whether a slot image read back is the object its entry describes. */
static bool image_checks(const l3_slabstore *s, const l3_index_entry *e, const uint8_t *img)
{
    const l3_object_header *h = (const l3_object_header *)img;
    if (!l3_object_header_valid(h, s->geo.header_bytes) || h->seq != e->seq || h->slab != e->slab ||
        h->slot != e->slot || h->size != e->size || h->key_len != e->key_len)
        return false;
    l3_key_id id = l3_key_identity(h->key, h->key_len);
    return id.hash == e->hash && l3_crc_seal(h->payload_crc, id.check) == e->crc &&
           (s->opt.no_verify_checksums || l3_crc32c(0, img + s->geo.header_bytes, e->size) == h->payload_crc);
}

/* Read the kept objects' slot images into one buffer (one I/O each); an
 * object that cannot be read or does not check is not moved. */
static void read_images(l3_slabstore *s, evacuation *ev)
{
    uint32_t b = s->geo.block_size, hb = s->geo.header_bytes, pb = s->slabs[ev->slab].payload_blocks;
    uint64_t total = 0;
    ev->off = calloc(ev->n, sizeof *ev->off);
    ev->ok = calloc(ev->n, sizeof *ev->ok);
    l3_io_req *reqs = calloc(ev->n, sizeof *reqs);
    for (size_t i = 0; ev->off && i < ev->n; i++) {
        ev->off[i] = total;
        total += hb + l3_round_up(ev->entries[i].size, b);
    }
    ev->buf = ev->off && ev->ok && reqs ? l3_meta_alloc(b, total) : NULL;
    if (!ev->buf) {
        free(reqs);
        return;
    }
    for (size_t i = 0; i < ev->n; i++)
        reqs[i] = (l3_io_req){ .offset = l3_slot_offset(&s->geo, ev->slab, pb, ev->entries[i].slot),
                               .buf = ev->buf + ev->off[i], .len = hb + (uint32_t)l3_round_up(ev->entries[i].size, b) };
    bool retired = true;
    l3_error err;
    /* Within the I/O timeout: on a driver's thread (a driven put making
     * room), its own puts may hold every context until it polls them. */
    l3_io_ctx *ctx = l3_io_acquire_within(s->engine, s->opt.io_timeout);
    l3_status rc = ctx ? l3_io_run(s->engine, ctx, reqs, ev->n, s->opt.io_timeout, &retired, &err)
                       : l3_fail(&err, L3_ETIMEDOUT, "no I/O context free within the I/O timeout");
    if (ctx)
        l3_io_release(s->engine, ctx);
    if (!retired)
        atomic_store(&s->fatal, true); /* the buffer may still be written: keep it */
    for (size_t i = 0; i < ev->n; i++)
        ev->ok[i] = rc == L3_OK && retired && reqs[i].res == (int32_t)reqs[i].len &&
                    image_checks(s, &ev->entries[i], ev->buf + ev->off[i]);
    if (!retired)
        ev->buf = NULL; /* leaked on purpose: late completions may land in it */
    free(reqs);
}

/* Write the images that checked as moves, in one put run (put.c publishes
 * each in place of its old copy if that is still current). */
static void move_images(l3_slabstore *s, evacuation *ev)
{
    size_t n = 0, hb = s->geo.header_bytes;
    char **keys = calloc(ev->n, sizeof *keys);
    l3_move *moves = calloc(ev->n, sizeof *moves);
    l3_range *ranges = calloc(ev->n, sizeof *ranges);
    bool *res_arrays = calloc(ev->n, 2 * sizeof *res_arrays);
    uint64_t total = 0;
    for (size_t i = 0; keys && moves && ranges && res_arrays && i < ev->n; i++) {
        const l3_object_header *h = (const l3_object_header *)(ev->buf + ev->off[i]);
        total = ev->off[i] + hb + l3_round_up(h->size, s->geo.block_size);
        if (!ev->ok[i] || !(keys[n] = strndup(h->key, h->key_len)))
            continue;
        moves[n] = (l3_move){ .old_seq = h->seq, .header = h, .early = ev->early[i] };
        ranges[n] = (l3_range){ ev->off[i] + hb, h->size };
        n++;
    }
    if (n) {
        l3_io_result res = { .success = res_arrays, .object_failures = res_arrays + ev->n };
        l3_error err;
        if (l3_put_run(s, (const char *const *)keys, n, (l3_host_buffer){ ev->buf, total }, ranges, 1, moves, &res,
                       &err) != L3_OK)
            l3_log("warning", "reinserting %zu objects: %s (they are evicted)", n, err.msg);
    }
    for (size_t i = 0; keys && i < n; i++)
        free(keys[i]);
    free(keys);
    free(moves);
    free(ranges);
    free(res_arrays);
}

/* Evacuate one victim: move what it keeps, then free it. False when there
 * is no victim. */
static bool evacuate_one(l3_slabstore *s)
{
    evacuation ev = { 0 };
    l3_slab_lock(s);
    bool picked = pick(s, &ev);
    l3_slab_unlock(s);
    if (!picked)
        return false;
    if (ev.n) {
        read_images(s, &ev);
        if (ev.buf) {
            move_images(s, &ev);
            /* The moved copies durable before the victim is freed (another
             * may write into it at once): a power cut never loses an
             * object the move took from a slab written again. */
            l3_meta_flush_dirty(s, "reinsertion's moves");
        }
    }
    l3_slab_lock(s);
    l3_alloc_release(s, ev.slab);
    bool evicted = s->slabs[ev.slab].inflight == 0;
    if (evicted)
        l3_alloc_evict(s, ev.slab);
    l3_slab_unlock(s);
    l3_error err;
    if (evicted && ev.n && ev.buf && l3_meta_retire_record(s, ev.slab, &err) != L3_OK)
        l3_log("error", "%s: retiring evacuated slab %u: %s", s->path, ev.slab, err.msg);
    free(ev.buf);
    free(ev.off);
    free(ev.ok);
    free(ev.entries);
    free(ev.early);
    return true;
}

/* The waves other processes wait room for (under the lock): published
 * before they wait for room_mu, so that whoever makes room makes it for
 * them too. At most half the store: a process that died waiting leaves
 * its wave published until it is reaped. */
static uint64_t others_pending(const l3_slabstore *s)
{
    uint64_t sum = 0, cap = (uint64_t)(s->geo.num_slabs / 2) * s->geo.slab_size;
    for (int p = 0; p < L3_MAX_PROCS; p++)
        if (p != s->shm.me && s->sh->procs[p].used)
            sum += s->sh->alloc.procs[p].pending;
    return sum < cap ? sum : cap;
}

/* Whether the store has room for every wave waiting for it and a slab
 * for what reinsertion moves (under the lock). */
static bool room_enough(const l3_slabstore *s)
{
    uint64_t need = s->sh->alloc.procs[s->shm.me].pending + s->geo.slab_size + others_pending(s);
    return l3_policy_room(s) >= need;
}

/* Take room_mu (under no lock), waiting at most an I/O timeout: 0 held,
 * 1 held after its holder died (what that process held is reaped here),
 * -1 passed: a maker that holds it that long (stopped, or on a stalled
 * device) is not waited for, and this one makes room alongside. */
static int take_room(l3_slabstore *s)
{
    int held = l3_shm_lock_within(&s->shm, &s->sh->room_mu, s->opt.io_timeout);
    if (held == 1) {
        l3_slab_lock(s);
        l3_alloc_reap_dead(s); /* its victim pinned, its wave published */
        l3_slab_unlock(s);
    } else if (held < 0 && !atomic_exchange(&s->warned_room_wait, true)) {
        l3_log("warning", "%s: another process has made room for over %.0f s; this one makes room alongside",
               s->path, s->opt.io_timeout);
    }
    return held;
}

void l3_reinsert_make_room(l3_slabstore *s, uint64_t bytes)
{
    bool evacuates = s->opt.eviction == L3_EVICT_FIFO_REINSERT && !s->opt.read_only;
    l3_slab_lock(s);
    l3_alloc_wait_room(s, bytes); /* until put.c reserves its slots (this process's other threads' waves
                                     add theirs) */
    bool enough = !evacuates || room_enough(s); /* (the room's scan only where room is made) */
    l3_slab_unlock(s);
    if (enough)
        return;
    /* One maker of room at a time: makers side by side each counted the
     * room the other's victim was about to free as missing and freed more
     * (four ranks held 1.1% fewer pages than one process, bench/results). */
    int held = take_room(s);
    for (uint32_t round = 0; round < s->geo.num_slabs; round++) {
        l3_slab_lock(s);
        enough = room_enough(s);
        l3_slab_unlock(s);
        if (enough || !evacuate_one(s))
            break;
    }
    if (held >= 0)
        l3_shm_unlock(&s->sh->room_mu);
}
