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

/* Whether the header read back with a payload is sound and the one of
 * the entry found: sealed, and of its sequence, slab, generation and
 * slot. */
static bool header_of_entry(const l3_slabstore *s, const get_key *g)
{
    const l3_object_header *h = (const l3_object_header *)g->header;
    return l3_object_header_valid(h, s->geo.header_bytes) && h->seq == g->seq && h->slab_gen == g->gen &&
           h->slab == g->slab && h->slot == g->slot;
}

/* Whether that header is of `key`: else the entry found is another key's
 * of the same hash and length (index.h). */
static bool header_of_key(const get_key *g, const char *key)
{
    const l3_object_header *h = (const l3_object_header *)g->header;
    return h->key_len == g->id.len && memcmp(h->key, key, g->id.len) == 0;
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
        if (e && e->gen != l3_index_gen(s->slabs[e->slab].gen)) {
            l3_entry_remove(s, e, L3_REMOVED_EVICTED); /* left behind by a process that died mid-update */
            e = NULL;
        }
        const l3_range *kr = &ranges[pos * w->k];
        bool segmented = e && (e->flags & L3_ENTRY_SEGMENTED);
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
                        .slot = e->slot, .crc = l3_crc_seal(e->crc, w->keys[i].id.check), /* (its payload's) */
                        .ranges = kr, .header = bounce + w->nk * (hb + b),
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
    const l3_object_header *h = (const l3_object_header *)g->header;
    bool of_entry = !g->payload_only && header_of_entry(s, g);
    if (of_entry && !header_of_key(g, key)) {
        res->object_failures[g->pos] = true; /* the entry of a key of the same hash and length: it stays */
        atomic_fetch_add(&s->get_misses, 1);
        return;
    }
    /* The one its entry promises: of its key, size and payload crc too. */
    bool header_ok = g->payload_only || (of_entry && h->size == size && h->payload_crc == g->crc);
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

/* A get batch from its start to its end (struct l3_store_job, l3_store.h):
 * the batch's arguments, its wave's scratch, the wave's context and reads,
 * and how the batch goes so far. The synchronous get runs one the same way,
 * sleeping on its reads instead of polling them. */
struct l3_store_job {
    l3_slabstore *s;
    const char *const *keys;
    size_t n;
    const l3_range *ranges;
    l3_io_result *res;
    get_wave w;
    get_io io;
    int notify_fd;        /* the eventfd its contexts signal, or -1 */
    l3_io_ctx *ctx;       /* the open wave's context, or NULL */
    size_t base, m;       /* the open wave's keys [base, base + m) */
    size_t r, seen;       /* its requests, and those reported finished */
    size_t ok, failed;    /* io's counts before the wave (restored when it fails) */
    int error;
    bool retired;         /* the open wave's reads so far */
    bool gated;           /* counted a read by the gate */
    bool checked;         /* the batch passed its checks: its result arrays are its own */
    bool started;         /* the open wave's reads were started */
    l3_status rc;         /* the batch's status so far */
    l3_error err;
};

/* Start the next wave, [base, base + m), on context `ctx`: look its keys
 * up, plan and submit its reads, judge the keys with none. */
static void wave_begin(l3_store_job *j, l3_io_ctx *ctx)
{
    l3_slabstore *s = j->s;
    get_wave *w = &j->w;
    size_t m = j->n - j->base < s->wave_keys ? j->n - j->base : s->wave_keys;
    j->m = m;
    for (size_t i = 0; i < m; i++)
        w->keys[i].id = l3_key_identity(j->keys[j->base + i], strlen(j->keys[j->base + i]));
    j->ctx = ctx;
    if (j->notify_fd >= 0) /* (its driver wakes for half a wave: keys are checked as they land) */
        j->rc = l3_io_set_notify(s->engine, j->ctx, j->notify_fd, &j->err);
    plan_wave(s, w, j->base, m, j->ranges, l3_io_bounce(j->ctx, NULL), j->res);
    int r = build_reads(s, w);
    j->retired = true;
    j->ok = j->io.ok;
    j->failed = j->io.failed;
    j->error = j->io.error;
    j->r = r < 0 ? 0 : (size_t)r;
    j->seen = 0;
    j->started = false;
    if (j->rc == L3_OK && r < 0)
        j->rc = l3_fail(&j->err, L3_ENOMEM, "allocating a bounce buffer");
    if (j->rc == L3_OK) {
        count_reads(w);
        j->started = true;
        j->rc = l3_io_start(s->engine, j->ctx, w->reqs, j->r, s->opt.io_timeout, &j->retired, &j->err);
    }
    for (size_t kk = 0; kk < w->nk && j->rc == L3_OK; kk++) {
        if (w->left[kk] == 0)
            settle_key(s, w, kk, j->keys, j->res, &j->io, false); /* (no read to wait for) */
    }
}

/* Judge each of the wave's keys whose reads have all finished, while the
 * others' are still in flight: its crc32c is computed as the device works
 * on the rest. Sleeps for them when `block`. Returns whether the wave's
 * reads have ended. */
static bool wave_pump(l3_store_job *j, bool block)
{
    l3_slabstore *s = j->s;
    get_wave *w = &j->w;
    size_t done[64], got = 0;
    if (!j->started)
        return true;
    while (j->rc == L3_OK && l3_io_batch_open(j->ctx)) {
        j->rc = block ? l3_io_wait_some(s->engine, j->ctx, done, 64, &got, &j->retired, &j->err)
                      : l3_io_poll_some(s->engine, j->ctx, done, 64, &got, &j->retired, &j->err);
        if (got == 0 && !block)
            break;
        j->seen += got;
        for (size_t d = 0; d < got; d++) {
            uint32_t kk = w->req_key[done[d]];
            L3_ASSERT(kk < w->nk && w->left[kk] > 0);
            if (--w->left[kk] == 0)
                settle_key(s, w, kk, j->keys, j->res, &j->io, j->seen < j->r);
        }
    }
    return j->rc != L3_OK || !l3_io_batch_open(j->ctx);
}

/* End the open wave: its outcome (l3_io_finish), its keys unserved when it
 * failed, the store refusing more when its reads did not retire. */
static void wave_end(l3_store_job *j)
{
    l3_slabstore *s = j->s;
    get_wave *w = &j->w;
    l3_status rc = j->started ? l3_io_finish(s->engine, j->ctx, &j->retired, j->rc == L3_OK ? &j->err : NULL)
                              : L3_OK;
    if (j->rc == L3_OK)
        j->rc = rc;
    if (j->r > 0 && j->rc == L3_OK && j->retired) {
        l3_meta_note_io(s, w->reqs, j->r);
        if (l3_alloc_sweep_due(s)) {
            l3_slab_lock(s);
            l3_alloc_sweep_failed(s);
            l3_slab_unlock(s);
        }
    }
    if (j->rc != L3_OK || !j->retired) {
        /* The wave failed: none of its keys is served, though some were
         * judged as their reads finished, and none is lost. */
        for (size_t k = 0; k < w->nk; k++)
            j->res->success[w->keys[k].pos] = false;
        j->io.ok = j->ok;
        j->io.failed = j->failed;
        j->io.error = j->error;
    }
    if (!j->retired) {
        /* Some reads may still land in the pool: say so, refuse more. */
        atomic_store(&s->fatal, true);
        j->res->retired = false;
        j->rc = L3_OK;
    }
    l3_io_release(s->engine, j->ctx);
    j->ctx = NULL;
    l3_plan_free(w->plans, w->nk * w->k);
    j->base += j->m;
}

/* Whether another wave is to start: keys are left and all went well. */
static bool waves_left(const l3_store_job *j)
{
    return j->base < j->n && j->rc == L3_OK && j->res->retired;
}

/* Start the next wave, if any, waiting for a context. */
static void next_wave(l3_store_job *j)
{
    if (waves_left(j))
        wave_begin(j, l3_io_acquire(j->s->engine));
}

/* Start the next wave if a context is free (a driver never waits for
 * one: its own gets may hold them all); false when none is. */
static bool try_next_wave(l3_store_job *j)
{
    l3_io_ctx *ctx = l3_io_try_acquire_for(j->s->engine, j->notify_fd);
    if (ctx)
        wave_begin(j, ctx);
    return ctx != NULL;
}

/* Make a job for a get of n keys of k ranges each: its batch checked, its
 * scratch allocated, its result cleared; NULL when it cannot be had. */
static l3_store_job *job_new(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                             const l3_range *ranges, size_t k, l3_io_result *res, int notify_fd)
{
    l3_store_job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    *j = (l3_store_job){ .s = s, .keys = keys, .n = n, .ranges = ranges, .res = res, .notify_fd = notify_fd };
    l3_error_clear(&j->err);
    j->rc = l3_batch_check_io(s, keys, n, host, ranges, k, res, &j->err);
    if (j->rc != L3_OK || !res)
        return j; /* (no result arrays: an empty batch) */
    j->checked = true;
    atomic_fetch_add(&s->gets, 1);
    l3_batch_result_clear(res, n);
    size_t wk = s->wave_keys;
    get_wave *w = &j->w;
    *w = (get_wave){ .keys = calloc(wk, sizeof(get_key)), .plans = calloc(wk * k, sizeof(l3_plan)),
                     .reqs = calloc(wk * (1 + 2 * k), sizeof(l3_io_req)),
                     .req_key = calloc(wk * (1 + 2 * k), sizeof(uint32_t)), .left = calloc(wk, sizeof(uint32_t)),
                     .order = calloc(wk, sizeof(dev_order)), .k = k, .base = host.base };
    j->io.lost = calloc(n ? n : 1, sizeof(get_key));
    if (!w->keys || !w->plans || !w->reqs || !w->req_key || !w->left || !w->order || !j->io.lost)
        j->rc = l3_fail(&j->err, L3_ENOMEM, "allocating a get batch");
    if (j->rc == L3_OK) {
        l3_gate_read_begin(&s->sh->gate, s->shm.me);
        j->gated = true;
    }
    return j;
}

/* A checked batch's outcome, its waves over: a result that did not retire
 * names no object failure, the failed reads are told (an error of the
 * whole batch when every read failed, else object failures dropped from
 * the index), and a failed batch serves nothing. */
static l3_status get_outcome(l3_store_job *j, l3_status rc)
{
    l3_slabstore *s = j->s;
    l3_io_result *res = j->res;
    get_io *io = &j->io;
    if (!res->retired)
        memset(res->object_failures, 0, j->n * sizeof *res->object_failures);
    if (io->failed)
        l3_log("error", "reading %s: %zu of %zu objects failed (%s)%s", s->path, io->failed, io->failed + io->ok,
               strerror(io->error), io->ok ? ": object failures" : "");
    if (rc == L3_OK && io->failed && !io->ok && res->retired)
        rc = l3_fail(&j->err, L3_EIO, "reading %s: %s", s->path, strerror(io->error));
    else if (rc == L3_OK && io->failed && res->retired)
        drop_failed(s, io, res);
    if (rc != L3_OK)
        for (size_t i = 0; i < j->n; i++)
            res->success[i] = res->object_failures[i] = false;
    return rc;
}

/* End a job whose last wave has ended: the batch's outcome (of a checked
 * one, get_outcome) into *err, the job freed. */
static l3_status job_end(l3_store_job *j, l3_error *err)
{
    L3_ASSERT(!j->ctx);
    if (j->gated)
        l3_gate_read_end(&j->s->sh->gate, j->s->shm.me);
    free(j->w.keys);
    free(j->w.plans);
    free(j->w.reqs);
    free(j->w.req_key);
    free(j->w.left);
    free(j->w.order);
    l3_status rc = j->checked ? get_outcome(j, j->rc) : j->rc;
    free(j->io.lost);
    if (rc != L3_OK && err)
        *err = j->err;
    free(j);
    return rc;
}

l3_status l3_slab_get_begin(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                            const l3_range *ranges, l3_io_result *res, int notify_fd, l3_store_job **job,
                            l3_error *err)
{
    l3_store_job *j = job_new((l3_slabstore *)st, keys, n, host, ranges, 1, res, notify_fd);
    *job = j;
    if (!j)
        return l3_fail(err, L3_ENOMEM, "allocating a get batch");
    return L3_OK;
}

bool l3_slab_get_poll(l3_store_job *j, double *wake_by)
{
    *wake_by = 0;
    for (;;) {
        if (!j->ctx && (!j->checked || !waves_left(j)))
            return true;
        if (!j->ctx && !try_next_wave(j)) {
            *wake_by = l3_monotonic_seconds() + L3_JOB_RETRY;
            return false;
        }
        if (!wave_pump(j, false)) {
            *wake_by = l3_io_wake_by(j->ctx);
            return false;
        }
        wave_end(j);
    }
}

/* Run the job's waves left to their end, sleeping on their reads. */
static void run_waves(l3_store_job *j)
{
    if (!j->checked)
        return;
    if (!j->ctx)
        next_wave(j);
    for (; j->ctx; next_wave(j)) {
        (void)wave_pump(j, true);
        wave_end(j);
    }
}

l3_status l3_slab_get_end(l3_store_job *j, l3_error *err)
{
    run_waves(j);
    return job_end(j, err);
}

void l3_slab_forget_notify(l3_store *st, int notify_fd)
{
    l3_io_forget_notify(((l3_slabstore *)st)->engine, notify_fd);
}

void l3_slab_driver_start(l3_store *st, int notify_fd, size_t ops)
{
    l3_io_own(((l3_slabstore *)st)->engine, notify_fd, ops);
}

bool l3_slab_driver_wait(l3_store *st, int notify_fd, double until)
{
    return l3_io_wait_owned(((l3_slabstore *)st)->engine, notify_fd, until);
}

l3_status l3_slab_get(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                      const l3_range *ranges, l3_io_result *res, l3_error *err)
{
    return l3_slab_get_v(st, keys, n, host, ranges, 1, res, err);
}

l3_status l3_slab_get_v(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                        const l3_range *ranges, size_t k, l3_io_result *res, l3_error *err)
{
    l3_store_job *j = job_new((l3_slabstore *)st, keys, n, host, ranges, k, res, -1);
    if (!j)
        return l3_fail(err, L3_ENOMEM, "allocating a get batch");
    run_waves(j);
    return job_end(j, err);
}
