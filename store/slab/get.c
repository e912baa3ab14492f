/* The slab store's get path: read each object's header with its payload,
 * in device order, check both against the index as soon as the object's
 * own reads have finished (the wave's others still in flight), and serve
 * only what checks (batch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "batch.h"
#include "gate.h"
#include "l3_crc32c.h"
#include "meta.h"
#include "policy.h"

typedef struct get_key {
    size_t pos;
    l3_key_id id;
    uint64_t seq, gen;
    uint32_t slab, slot, crc;
    uint64_t dev;       /* its payload's device offset */
    const l3_range *ranges; /* its k ranges */
    uint8_t *header;    /* its header block, read with the payload (and its tail's bounce block after it) */
    bool payload_only;  /* its payload alone is read, checked by the index's crc (l3_get_payload_only) */
} get_key;

typedef struct dev_order {
    uint64_t dev;
    uint32_t k;
} dev_order;

/* One wave's scratch, sized for the store's keys per wave. */
typedef struct get_wave {
    get_key *keys;
    l3_plan *plans;
    l3_io_req *reqs;
    uint32_t *req_key;  /* each request's key (its index in keys) */
    uint32_t *left;     /* each key's requests not yet finished */
    dev_order *order;
    size_t nk;
    size_t k;           /* ranges per key: key j's plans are plans[j * k ...] */
    uint8_t *base;      /* the Host buffer */
} get_wave;

static int cmp_dev_order(const void *a, const void *b)
{
    uint64_t x = ((const dev_order *)a)->dev, y = ((const dev_order *)b)->dev;
    return x < y ? -1 : x > y;
}

/* Whether the header read back with a payload is the one its index entry
 * promises: sealed, and of its key, sequence, slab, generation, slot, size
 * and payload crc. */
static bool header_matches(const l3_slabstore *s, const get_key *g, const char *key, uint32_t size)
{
    const l3_object_header *h = (const l3_object_header *)g->header;
    return l3_object_header_valid(h, s->geo.header_bytes) && h->seq == g->seq && h->slab_gen == g->gen &&
           h->slab == g->slab && h->slot == g->slot && h->size == size && h->payload_crc == g->crc &&
           h->key_len == g->id.len && memcmp(h->key, key, g->id.len) == 0;
}

/* Whether an object of one range and `size` payload bytes is read without
 * its header: when the header and payload together would be more than the
 * device takes in one request (a 4 MiB page and its 4 KiB header: two
 * requests), the payload alone is one. Its crc32c (the index's) checks it,
 * and the entry is checked current after the read, as always; with the
 * crc check off the header is always read. */
static bool payload_alone(const l3_slabstore *s, uint32_t size)
{
    return !s->opt.no_verify_checksums && s->max_request && s->geo.header_bytes + (uint64_t)size > s->max_request;
}

/* Look the wave's keys up (under the lock) and plan a read for each found
 * one of the right size; the others are object failures. */
static void plan_wave(l3_slabstore *s, get_wave *w, size_t base, size_t m, const l3_range *ranges,
                      uint8_t *bounce, l3_io_result *res)
{
    uint32_t b = s->geo.block_size, hb = s->geo.header_bytes;
    w->nk = 0;
    l3_slab_lock(s);
    for (size_t i = 0; i < m; i++) {
        size_t pos = base + i;
        l3_index_entry *e = l3_entry_find_live(s, w->keys[i].id);
        if (e && e->gen != (uint32_t)s->slabs[e->slab].gen) {
            l3_entry_remove(s, e, L3_REMOVED_EVICTED); /* left behind by a process that died mid-update */
            e = NULL;
        }
        const l3_range *kr = &ranges[pos * w->k];
        bool segmented = e && (e->pad & L3_ENTRY_SEGMENTED);
        if (!e || e->size != l3_ranges_disk_len(kr, w->k, b) || segmented != (w->k > 1)) {
            /* Missing, of another size, or asked as another number of ranges
             * than it was put as (a miss: the object stays). */
            res->object_failures[pos] = true;
            atomic_fetch_add(&s->get_misses, 1);
            continue;
        }
        slab_info *sl = &s->slabs[e->slab];
        get_key *g = &w->keys[w->nk];
        *g = (get_key){ .pos = pos, .id = w->keys[i].id, .seq = e->seq, .gen = sl->gen, .slab = e->slab,
                        .slot = e->slot, .crc = e->crc, .ranges = kr, .header = bounce + w->nk * (hb + b),
                        .dev = l3_slot_offset(&s->geo, e->slab, sl->payload_blocks, e->slot) + hb,
                        .payload_only = !segmented && payload_alone(s, e->size) };
        w->order[w->nk] = (dev_order){ g->dev, (uint32_t)w->nk };
        w->nk++;
    }
    l3_slab_unlock(s);
}

/* The wave's requests, each header with its payload, in device order: the
 * reads of adjacent slots are contiguous, so the block layer merges them.
 * Returns the count, or -1 when a temporary buffer cannot be had. */
static int build_reads(l3_slabstore *s, get_wave *w)
{
    qsort(w->order, w->nk, sizeof *w->order, cmp_dev_order);
    int r = 0;
    for (size_t o = 0; o < w->nk && r >= 0; o++) {
        get_key *g = &w->keys[w->order[o].k];
        r = l3_plan_object(s, &w->plans[w->order[o].k * w->k], w->k, g->dev, w->base, g->ranges, false,
                           g->payload_only ? NULL : g->header, g->header + s->geo.header_bytes, w->reqs, r);
    }
    return r;
}

/* Judge one read key: serve it, or count it stale or corrupt (and drop a
 * corrupt one from the index). Its reads have finished; others of its
 * wave may still be in flight, into other keys' ranges and blocks. */
static void finish_key(l3_slabstore *s, get_wave *w, get_key *g, l3_plan *plans, const char *key,
                       l3_io_result *res)
{
    uint32_t b = s->geo.block_size;
    for (size_t j = 0; j < w->k; j++) {
        l3_plan *p = &plans[j];
        if (p->temp)
            memcpy(p->host, p->temp, p->size);
        else if (p->tail)
            memcpy(p->host + p->direct, p->tail_buf, p->tail);
    }
    uint32_t size = (uint32_t)l3_ranges_disk_len(g->ranges, w->k, b);
    bool header_ok = g->payload_only || header_matches(s, g, key, size);
    if (header_ok && !g->payload_only && !l3_header_has_shape((const l3_object_header *)g->header, g->ranges, w->k)) {
        res->object_failures[g->pos] = true; /* asked as ranges of other sizes: the object stays */
        atomic_fetch_add(&s->get_misses, 1);
        return;
    }
    bool crc_ok = header_ok && (s->opt.no_verify_checksums || l3_ranges_crc(w->base, g->ranges, w->k, b) == g->crc);
    l3_slab_lock(s);
    l3_index_entry *e = l3_index_find(&s->index, g->id);
    bool current = e && e->seq == g->seq && s->slabs[g->slab].gen == g->gen;
    if (current && crc_ok) {
        l3_policy_read(s, e);
        l3_entry_group_read(s, e);
    } else if (current) {
        l3_entry_remove(s, e, L3_REMOVED_CORRUPT);
    }
    l3_slab_unlock(s);
    if (current && crc_ok) {
        res->success[g->pos] = true;
        atomic_fetch_add(&s->get_hits, 1);
        return;
    }
    res->object_failures[g->pos] = true;
    if (!current) {
        atomic_fetch_add(&s->stale_reads, 1); /* evicted while it was read */
        return;
    }
    atomic_fetch_add(&s->checksum_failures, 1);
    l3_log("error", "checksum or header mismatch reading object %.*s (slab %u): dropped", 120, key, g->slab);
}

/* How a batch's reads went: one that failed is its key's object failure;
 * only a batch whose every read failed (a device that fails everything)
 * is an error of the whole batch. */
typedef struct get_io {
    int error;          /* the first read error */
    size_t ok, failed;  /* keys whose reads completed, and failed */
    get_key *lost;      /* the failed keys (the batch's length) */
} get_io;

/* Keys whose reads failed while others' completed (media errors): object
 * failures, and gone from the index so that they are not read again. */
static void drop_failed(l3_slabstore *s, const get_io *io, l3_io_result *res)
{
    l3_slab_lock(s);
    for (size_t k = 0; k < io->failed; k++) {
        const get_key *g = &io->lost[k];
        res->object_failures[g->pos] = true;
        l3_index_entry *e = l3_index_find(&s->index, g->id);
        if (e && e->seq == g->seq)
            l3_entry_remove(s, e, L3_REMOVED_LOST);
    }
    l3_slab_unlock(s);
}

/* Note which key each of the wave's requests reads for, and how many each
 * key waits for. */
static void count_reads(get_wave *w)
{
    for (size_t kk = 0; kk < w->nk; kk++) {
        w->left[kk] = 0;
        for (size_t j = 0; j < w->k; j++) {
            const l3_plan *p = &w->plans[kk * w->k + j];
            for (int q = 0; q < p->num_reqs; q++)
                w->req_key[p->first_req + q] = (uint32_t)kk;
            w->left[kk] += (uint32_t)p->num_reqs;
        }
    }
}

/* Key kk's reads have all finished: judge it, or, when one failed, keep it
 * for drop_failed. `early`: other reads of the wave are still to come. */
static void settle_key(l3_slabstore *s, get_wave *w, size_t kk, const char *const *keys, l3_io_result *res,
                       get_io *io, bool early)
{
    get_key *g = &w->keys[kk];
    if (!l3_plans_ok(w->reqs, &w->plans[kk * w->k], w->k, &io->error)) {
        io->lost[io->failed++] = *g;
        return;
    }
    io->ok++;
    finish_key(s, w, g, &w->plans[kk * w->k], keys[g->pos], res);
    if (early)
        atomic_fetch_add(&s->get_checked_early, 1);
}

/* Read the wave's `r` requests and judge each key as soon as its own
 * reads have finished, while the others' are still in flight: its crc32c
 * is computed as the device works on the rest. Returns the batch's
 * outcome (l3_io_finish). */
static l3_status read_and_judge(l3_slabstore *s, get_wave *w, l3_io_ctx *ctx, size_t r, const char *const *keys,
                                l3_io_result *res, get_io *io, bool *retired, l3_error *err)
{
    count_reads(w);
    l3_status rc = l3_io_start(s->engine, ctx, w->reqs, r, s->opt.io_timeout, retired, err);
    for (size_t kk = 0; kk < w->nk && rc == L3_OK; kk++) {
        if (w->left[kk] == 0)
            settle_key(s, w, kk, keys, res, io, false); /* (no read to wait for) */
    }
    size_t done[64], got = 0, seen = 0;
    while (rc == L3_OK) {
        rc = l3_io_wait_some(s->engine, ctx, done, sizeof done / sizeof done[0], &got, retired, err);
        if (rc != L3_OK || got == 0)
            break;
        seen += got;
        for (size_t d = 0; d < got; d++) {
            uint32_t kk = w->req_key[done[d]];
            L3_ASSERT(kk < w->nk && w->left[kk] > 0);
            if (--w->left[kk] == 0)
                settle_key(s, w, kk, keys, res, io, seen < r);
        }
    }
    return l3_io_finish(s->engine, ctx, retired, err);
}

/* Run one wave of keys [base, base + m). */
static l3_status get_wave_run(l3_slabstore *s, get_wave *w, const char *const *keys, size_t base,
                              size_t m, const l3_range *ranges, l3_io_result *res, get_io *io,
                              l3_error *err)
{
    for (size_t i = 0; i < m; i++)
        w->keys[i].id = l3_key_identity(keys[base + i], strlen(keys[base + i]));
    l3_io_ctx *ctx = l3_io_acquire(s->engine);
    plan_wave(s, w, base, m, ranges, l3_io_bounce(ctx, NULL), res);
    int r = build_reads(s, w);
    bool retired = true;
    size_t ok = io->ok, failed = io->failed;
    int error = io->error;
    l3_status rc = r < 0 ? l3_fail(err, L3_ENOMEM, "allocating a bounce buffer")
                         : read_and_judge(s, w, ctx, (size_t)r, keys, res, io, &retired, err);
    if (r > 0 && rc == L3_OK && retired) {
        l3_meta_note_io(s, w->reqs, (size_t)r);
        if (l3_alloc_sweep_due(s)) {
            l3_slab_lock(s);
            l3_alloc_sweep_failed(s);
            l3_slab_unlock(s);
        }
    }
    if (rc != L3_OK || !retired) {
        /* The wave failed: none of its keys is served, though some were
         * judged as their reads finished, and none is lost. */
        for (size_t k = 0; k < w->nk; k++)
            res->success[w->keys[k].pos] = false;
        io->ok = ok;
        io->failed = failed;
        io->error = error;
    }
    if (!retired) {
        /* Some reads may still land in the pool: say so, refuse more. */
        atomic_store(&s->fatal, true);
        res->retired = false;
        rc = L3_OK;
    }
    l3_io_release(s->engine, ctx);
    l3_plan_free(w->plans, w->nk * w->k);
    return rc;
}

l3_status l3_slab_get(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                      const l3_range *ranges, l3_io_result *res, l3_error *err)
{
    return l3_slab_get_v(st, keys, n, host, ranges, 1, res, err);
}

l3_status l3_slab_get_v(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                        const l3_range *ranges, size_t k, l3_io_result *res, l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_status rc = l3_batch_check_io(s, keys, n, host, ranges, k, res, err);
    if (rc != L3_OK || !res)
        return rc; /* (no result arrays: an empty batch) */
    atomic_fetch_add(&s->gets, 1);
    l3_batch_result_clear(res, n);
    size_t wk = s->wave_keys;
    get_wave w = { .keys = calloc(wk, sizeof(get_key)), .plans = calloc(wk * k, sizeof(l3_plan)),
                   .reqs = calloc(wk * (1 + 2 * k), sizeof(l3_io_req)),
                   .req_key = calloc(wk * (1 + 2 * k), sizeof(uint32_t)), .left = calloc(wk, sizeof(uint32_t)),
                   .order = calloc(wk, sizeof(dev_order)), .k = k, .base = host.base };
    get_io io = { .lost = calloc(n ? n : 1, sizeof(get_key)) };
    if (!w.keys || !w.plans || !w.reqs || !w.req_key || !w.left || !w.order || !io.lost)
        rc = l3_fail(err, L3_ENOMEM, "allocating a get batch");
    l3_gate_read_begin(&s->sh->gate, s->shm.me);
    for (size_t base = 0; base < n && rc == L3_OK && res->retired; base += wk)
        rc = get_wave_run(s, &w, keys, base, n - base < wk ? n - base : wk, ranges, res, &io, err);
    l3_gate_read_end(&s->sh->gate, s->shm.me);
    free(w.keys);
    free(w.plans);
    free(w.reqs);
    free(w.req_key);
    free(w.left);
    free(w.order);
    if (!res->retired)
        memset(res->object_failures, 0, n * sizeof *res->object_failures);
    if (io.failed)
        l3_log("error", "reading %s: %zu of %zu objects failed (%s)%s", s->path, io.failed, io.failed + io.ok,
               strerror(io.error), io.ok ? ": object failures" : "");
    if (rc == L3_OK && io.failed && !io.ok && res->retired)
        rc = l3_fail(err, L3_EIO, "reading %s: %s", s->path, strerror(io.error));
    else if (rc == L3_OK && io.failed && res->retired)
        drop_failed(s, &io, res);
    free(io.lost);
    if (rc != L3_OK)
        for (size_t i = 0; i < n; i++)
            res->success[i] = res->object_failures[i] = false;
    return rc;
}
