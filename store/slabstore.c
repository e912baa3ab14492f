/* The slab disk store: allocation, eviction, get/put/exists/remove. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "l3_clock.h"
#include "l3_crc32c.h"
#include "l3_keys.h"
#include "l3_pool.h"
#include "slab_internal.h"

#define MIB (1ull << 20)

void l3_slab_options_default(l3_slab_options *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->slab_size = 64 * MIB;
    o->block_size = 4096;
    o->engine = L3_ENGINE_AUTO;
    o->io_timeout = 30.0;
    o->io_contexts = 4;
    o->batch_keys = 256;
    o->create = true;
    o->lock_timeout = 5.0;
}

static l3_status check_options(l3_slab_options *o, l3_error *err)
{
    if (!o->path || !o->path[0])
        return l3_fail(err, L3_ECONFIG, "the store needs a path");
    if (!o->slab_size)
        o->slab_size = 64 * MIB;
    if (!o->block_size)
        o->block_size = 4096;
    if (!(o->io_timeout > 0))
        o->io_timeout = o->io_timeout == 0 ? 30.0 : -1;
    if (o->io_timeout < 0 || o->io_timeout > 86400)
        return l3_fail(err, L3_ECONFIG, "io_timeout must be more than 0 and at most 86400 seconds");
    if (!o->io_contexts)
        o->io_contexts = 4;
    if (o->io_contexts > 256)
        return l3_fail(err, L3_ECONFIG, "io_contexts must be 1 to 256");
    if (!o->batch_keys)
        o->batch_keys = 256;
    if (o->batch_keys > 8192)
        return l3_fail(err, L3_ECONFIG, "batch_keys must be 1 to 8192");
    if (!o->queue_depth) {
        unsigned d = 1;
        while (d < 3 * o->batch_keys)
            d <<= 1;
        o->queue_depth = d > 4096 ? 4096 : d;
    }
    if (o->queue_depth > 32768)
        return l3_fail(err, L3_ECONFIG, "queue_depth must be 1 to 32768");
    char why[256];
    l3_geometry g;
    uint64_t probe = o->capacity ? o->capacity : 1ull << 40;
    if (!l3_geometry_plan(probe, o->slab_size, o->block_size, o->max_objects, &g, why, sizeof why))
        return l3_fail(err, L3_ECONFIG, "%s", why);
    return L3_OK;
}

/* ---- metadata I/O (synchronous, aligned) ---- */

l3_status l3_slab_rw_all(int fd, const char *path, bool write, void *buf, size_t len, uint64_t off,
                         l3_error *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
                          : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return l3_fail(err, n == 0 && !write ? L3_ECORRUPT : L3_EIO, "%s %zu bytes at %llu of %s: %s",
                           write ? "writing" : "reading", len, (unsigned long long)off, path,
                           n < 0 ? strerror(errno) : write ? "no progress" : "the file ends first");
        done += (size_t)n;
    }
    return L3_OK;
}

static l3_status pwrite_all(l3_slabstore *s, const void *buf, size_t len, uint64_t off, l3_error *err)
{
    return l3_slab_rw_all(s->fd, s->path, true, (void *)buf, len, off, err);
}

static l3_status pread_all(int fd, const char *path, void *buf, size_t len, uint64_t off, l3_error *err)
{
    return l3_slab_rw_all(fd, path, false, buf, len, off, err);
}

void *l3_slab_alloc_aligned(size_t align, size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, align < 4096 ? 4096 : align, len ? len : align) != 0)
        return NULL;
    memset(p, 0, len ? len : align);
    return p;
}

l3_status l3_slab_write_sb(l3_slabstore *s, l3_error *err)
{
    if (s->opt.read_only)
        return l3_fail(err, L3_ECLOSED, "the store is open read-only");
    uint32_t slot = (uint32_t)l3_round_up(L3_SB_BYTES, s->geo.block_size ? s->geo.block_size : 4096);
    uint8_t *buf = l3_slab_alloc_aligned(4096, slot);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a superblock buffer");
    /* Before the mapping exists (formatting), the superblock is our own. */
    l3_superblock *cur = s->sh ? &s->sh->sb : &s->disk_sb;
    cur->sequence++;
    l3_status st = L3_OK;
    for (uint32_t c = 0; c < L3_SB_COPIES && st == L3_OK; c++) {
        l3_superblock *sb = (l3_superblock *)buf;
        *sb = *cur;
        sb->copy = c;
        l3_sb_seal(sb);
        st = pwrite_all(s, buf, slot, (uint64_t)c * slot, err);
        if (st == L3_OK && fdatasync(s->fd) != 0)
            st = l3_fail(err, L3_EIO, "fdatasync %s: %s", s->path, strerror(errno));
    }
    free(buf);
    return st;
}

l3_status l3_slab_write_record(l3_slabstore *s, uint32_t i, l3_error *err)
{
    uint32_t b = s->geo.block_size;
    uint64_t byte = (uint64_t)i * L3_SLAB_RECORD_BYTES;
    uint64_t block_off = byte / b * b;
    uint8_t *buf = l3_slab_alloc_aligned(b, b);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a slab table buffer");
    l3_shm_lock(s, &s->sh->table_mu);
    l3_slab_lock(s);
    memcpy(buf, (uint8_t *)s->table + block_off, b);
    l3_slab_unlock(s);
    l3_status st = pwrite_all(s, buf, b, s->geo.slab_table_off + block_off, err);
    l3_shm_unlock(&s->sh->table_mu);
    free(buf);
    return st;
}

/* ---- namespaces, publication ---- */

int l3_slab_ns_intern(l3_slabstore *s, const char *key, size_t len)
{
    size_t n = l3_key_namespace_len(key, len);
    if (n == 0)
        return 0;
    int empty = -1;
    for (uint32_t i = 0; i < s->sh->num_ns; i++) {
        ns_info *ns = &s->ns[i];
        if (ns->len == n && memcmp(ns->text, key, n) == 0)
            return (int)i + 1;
        if (empty < 0 && ns->objects == 0)
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
    ns->objects = ns->bytes = 0;
    return empty + 1;
}

bool l3_slab_publish(l3_slabstore *s, const l3_index_entry *e)
{
    if (!l3_index_insert(&s->index, e))
        return false;
    slab *sl = &s->slabs[e->slab];
    l3_slab_slot_ids(s, e->slab)[e->slot] = e->hash;
    sl->live++;
    sl->live_bytes += e->size;
    if (e->ns) {
        s->ns[e->ns - 1].objects++;
        s->ns[e->ns - 1].bytes += e->size;
    }
    return true;
}

void l3_slab_unpublish(l3_slabstore *s, l3_index_entry *e)
{
    slab *sl = &s->slabs[e->slab];
    if (e->slot < sl->nslots)
        l3_slab_slot_ids(s, e->slab)[e->slot] = 0;
    sl->live = sl->live ? sl->live - 1 : 0;
    sl->live_bytes = sl->live_bytes >= e->size ? sl->live_bytes - e->size : 0;
    if (e->ns && s->ns[e->ns - 1].objects) {
        s->ns[e->ns - 1].objects--;
        s->ns[e->ns - 1].bytes -= e->size;
    }
    l3_index_remove(&s->index, e);
}

bool l3_slab_journal_kills(l3_slabstore *s, const char *key, size_t len, uint64_t seq)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &s->journal[j];
        if (!l3_journal_record_valid(r) || r->epoch != s->sh->sb.epoch)
            continue;
        if (seq < r->seq && r->prefix_len <= len && memcmp(key, r->prefix, r->prefix_len) == 0)
            return true;
    }
    return false;
}

l3_status l3_slab_adopt(l3_slabstore *s, uint32_t i, const l3_slab_record *r, l3_error *err)
{
    slab *sl = &s->slabs[i];
    uint32_t nslots = l3_slots_per_slab(&s->geo, r->payload_blocks);
    if (r->payload_blocks > s->sh->max_payload_blocks || nslots == 0)
        return l3_fail(err, L3_ECORRUPT, "slab %u: size class %u does not fit a slab", i,
                       r->payload_blocks);
    if (nslots > s->sh->max_slots)
        return l3_fail(err, L3_ECORRUPT, "slab %u: %u slots", i, nslots);
    memset(l3_slab_slot_ids(s, i), 0, (size_t)nslots * sizeof(uint64_t));
    sl->state = S_SEALED;
    sl->disk_used = 1;
    sl->payload_blocks = r->payload_blocks;
    sl->gen = r->gen;
    sl->first_seq = r->first_seq;
    sl->nslots = nslots;
    sl->next_slot = nslots;
    sl->live = 0;
    sl->live_bytes = 0;
    return L3_OK;
}

/* ---- allocation and eviction (under the write lock) ---- */

static void evict(l3_slabstore *s, uint32_t v)
{
    slab *sl = &s->slabs[v];
    uint64_t dropped = 0, *ids = l3_slab_slot_ids(s, v);
    /* Every published slot (not trusting `live`, which a process that died
     * mid-update may have left off by one). */
    for (uint32_t k = 0; k < sl->next_slot && k < sl->nslots; k++) {
        if (!ids[k])
            continue;
        l3_index_entry *e = l3_index_find_at(&s->index, ids[k], v, k);
        if (e) {
            l3_slab_unpublish(s, e);
            dropped++;
        }
        ids[k] = 0;
    }
    sl->live = 0;
    sl->live_bytes = 0;
    if (sl->state == S_OPEN && s->class_open[sl->payload_blocks] == (int32_t)v)
        s->class_open[sl->payload_blocks] = -1;
    sl->state = S_FREE;
    if (dropped || sl->disk_used) {
        atomic_fetch_add(&s->evictions, 1);
        atomic_fetch_add(&s->evicted_objects, dropped);
    }
}

/* The slab to reuse: a free one, an empty one, else the least recently
 * used one without writes in flight; -1 when every slab is busy. */
static int32_t pick_victim(l3_slabstore *s, bool need_live)
{
    int32_t best = -1;
    uint64_t best_tick = UINT64_MAX;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        slab *sl = &s->slabs[i];
        if (sl->inflight)
            continue;
        if (!need_live && sl->state == S_FREE)
            return (int32_t)i;
        if (!need_live && sl->live == 0 && sl->state == S_SEALED)
            return (int32_t)i;
        if (need_live && sl->live == 0)
            continue;
        uint64_t t = atomic_load_explicit(&sl->last_access, memory_order_relaxed);
        if (t < best_tick) {
            best_tick = t;
            best = (int32_t)i;
        }
    }
    return best;
}

/* Reopen slab v for `payload_blocks`; its record must then be written. */
static bool open_slab(l3_slabstore *s, uint32_t v, uint32_t payload_blocks)
{
    slab *sl = &s->slabs[v];
    uint32_t nslots = l3_slots_per_slab(&s->geo, payload_blocks);
    if (nslots > s->sh->max_slots)
        return false;
    evict(s, v);
    memset(l3_slab_slot_ids(s, v), 0, (size_t)nslots * sizeof(uint64_t));
    sl->gen++;
    sl->payload_blocks = payload_blocks;
    sl->first_seq = atomic_load(&s->sh->seq);
    sl->next_slot = 0;
    sl->nslots = nslots;
    sl->state = S_OPEN;
    sl->disk_used = 1;
    atomic_store_explicit(&sl->last_access, atomic_fetch_add(&s->sh->tick, 1), memory_order_relaxed);
    s->class_open[payload_blocks] = (int32_t)v;
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

/* Reserve a slot of class `pb`; false when none can be had. `opened`
 * collects slabs whose records must be written before their objects. */
static bool alloc_slot(l3_slabstore *s, uint32_t pb, uint32_t *out_slab, uint32_t *out_slot,
                       uint32_t *opened, size_t *num_opened)
{
    /* The index has a bound: make room by evicting whole slabs. */
    while (s->index.meta->count + s->sh->reserved >= s->index.meta->max) {
        int32_t v = pick_victim(s, true);
        if (v < 0)
            return false;
        evict(s, (uint32_t)v);
    }
    int32_t cur = s->class_open[pb];
    if (cur >= 0 && s->slabs[cur].next_slot < s->slabs[cur].nslots) {
        slab *sl = &s->slabs[cur];
        *out_slab = (uint32_t)cur;
        *out_slot = sl->next_slot++;
        sl->inflight++;
        sl->proc_inflight[s->me]++;
        s->sh->reserved++;
        s->sh->procs[s->me].reserved++;
        return true;
    }
    if (cur >= 0) {
        s->slabs[cur].state = S_SEALED;
        s->class_open[pb] = -1;
    }
    int32_t v = pick_victim(s, false);
    if (v < 0 && l3_shm_reap_dead(s))
        v = pick_victim(s, false); /* a dead process held them */
    if (v < 0 || !open_slab(s, (uint32_t)v, pb))
        return false;
    opened[(*num_opened)++] = (uint32_t)v;
    slab *sl = &s->slabs[v];
    *out_slab = (uint32_t)v;
    *out_slot = sl->next_slot++;
    sl->inflight++;
    sl->proc_inflight[s->me]++;
    s->sh->reserved++;
    s->sh->procs[s->me].reserved++;
    return true;
}

static void release_slot(l3_slabstore *s, uint32_t slab_id)
{
    slab *sl = &s->slabs[slab_id];
    /* (A dead process's reservations are released by l3_shm_reap_dead.) */
    if (sl->proc_inflight[s->me]) {
        sl->proc_inflight[s->me]--;
        sl->inflight--;
        s->sh->reserved--;
        s->sh->procs[s->me].reserved--;
    }
    if (sl->state == S_OPEN && sl->next_slot >= sl->nslots && s->class_open[sl->payload_blocks] != (int32_t)slab_id)
        sl->state = S_SEALED;
}

/* ---- the batch paths ---- */

static l3_status check_batch(l3_slabstore *s, const char *const *keys, size_t n,
                             l3_host_buffer host, const l3_range *ranges, l3_error *err)
{
    if (s->closed)
        return l3_fail(err, L3_ECLOSED, "the store is closed");
    if (atomic_load(&s->fatal))
        return l3_fail(err, L3_ECLOSED,
                       "the store refuses I/O: an earlier batch's I/O was not reaped in time or "
                       "its metadata could not be written; restart required");
    for (size_t i = 0; i < n; i++) {
        l3_status st = l3_key_check(keys[i], err);
        if (st != L3_OK)
            return st;
    }
    if (ranges) {
        l3_status st = l3_check_ranges(host, ranges, n, err);
        if (st != L3_OK)
            return st;
        for (size_t i = 0; i < n; i++)
            if (ranges[i].size > UINT32_MAX)
                return l3_fail(err, L3_EINVAL, "range %zu is over 4 GiB", i);
    }
    return L3_OK;
}

/* Every key failed (not an object failure), all retired: what a batch
 * reports until a key proves otherwise. */
static void result_clear(l3_io_result *res, size_t n)
{
    memset(res->success, 0, n * sizeof *res->success);
    memset(res->object_failures, 0, n * sizeof *res->object_failures);
    res->success_len = res->object_failures_len = n;
    res->retired = true;
}

static l3_status slab_exists(l3_store *st, const char *const *keys, size_t n, bool *flags,
                             l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_status rc = check_batch(s, keys, n, (l3_host_buffer){ 0 }, NULL, err);
    if (rc != L3_OK)
        return rc;
    l3_key_id ids[64];
    for (size_t base = 0; base < n; base += 64) {
        size_t m = n - base < 64 ? n - base : 64;
        for (size_t i = 0; i < m; i++)
            ids[i] = l3_key_identity(keys[base + i], strlen(keys[base + i]));
        l3_slab_lock(s);
        for (size_t i = 0; i < m; i++)
            flags[base + i] = l3_index_find(&s->index, ids[i]) != NULL;
        l3_slab_unlock(s);
    }
    return L3_OK;
}

/* How a key's payload moves: straight to/from the pool for the aligned
 * part, through a bounce block for a partial tail, or all through a
 * temporary aligned buffer when the pool address is misaligned. */
typedef struct plan {
    uint64_t dev;       /* device offset of the payload */
    uint8_t *host;      /* its Host range */
    uint32_t size;
    uint32_t direct;    /* bytes read/written in place */
    uint32_t tail;      /* bytes through the bounce block */
    uint8_t *tail_buf;  /* the bounce block */
    uint8_t *temp;      /* misaligned: the whole payload's buffer */
    int first_req, num_reqs;
} plan;

static int plan_payload(l3_slabstore *s, plan *p, bool write, l3_io_req *reqs, int r)
{
    uint32_t b = s->geo.block_size;
    p->first_req = r;
    if (p->size == 0) {
        p->num_reqs = 0;
        return r;
    }
    if (((uintptr_t)p->host & (b - 1)) != 0) {
        if (!atomic_exchange(&s->warned_unaligned, true))
            l3_log("warning", "a Host range at %p is not aligned to %u bytes: it moves through a "
                              "bounce copy (slow); align the Host pool to %u", (void *)p->host, b, b);
        atomic_fetch_add(&s->unaligned_ios, 1);
        uint32_t len = (uint32_t)l3_round_up(p->size, b);
        p->temp = l3_slab_alloc_aligned(b, len);
        p->direct = 0;
        p->tail = 0;
        if (!p->temp)
            return -1;
        if (write)
            memcpy(p->temp, p->host, p->size);
        reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev, .buf = p->temp, .len = len };
    } else {
        p->direct = p->size / b * b;
        p->tail = p->size - p->direct;
        if (p->direct)
            reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev, .buf = p->host, .len = p->direct };
        if (p->tail) {
            if (write) {
                memcpy(p->tail_buf, p->host + p->direct, p->tail);
                memset(p->tail_buf + p->tail, 0, b - p->tail);
            }
            reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev + p->direct,
                                     .buf = p->tail_buf, .len = b };
        }
    }
    p->num_reqs = r - p->first_req;
    return r;
}

static bool reqs_ok(const l3_io_req *reqs, const plan *p, int *error)
{
    for (int k = 0; k < p->num_reqs; k++) {
        const l3_io_req *r = &reqs[p->first_req + k];
        if (r->res != (int32_t)r->len) {
            if (!*error)
                *error = r->res < 0 ? -r->res : EIO;
            return false;
        }
    }
    return true;
}

typedef struct get_key {
    size_t pos;
    l3_key_id id;
    uint64_t seq, gen;
    uint32_t slab, slot, crc;
    uint8_t *header;    /* its header block, read with the payload */
} get_key;

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

typedef struct dev_order {
    uint64_t dev;
    uint32_t k;
} dev_order;

static int cmp_dev_order(const void *a, const void *b)
{
    uint64_t x = ((const dev_order *)a)->dev, y = ((const dev_order *)b)->dev;
    return x < y ? -1 : x > y;
}

static l3_status slab_get(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                          const l3_range *ranges, l3_io_result *res, l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_status rc = check_batch(s, keys, n, host, ranges, err);
    if (rc != L3_OK)
        return rc;
    atomic_fetch_add(&s->gets, 1);
    result_clear(res, n);
    size_t w = s->wave_keys;
    get_key *gk = calloc(w, sizeof *gk);
    plan *plans = calloc(w, sizeof *plans);
    l3_io_req *reqs = calloc(3 * w, sizeof *reqs);
    dev_order *order = calloc(w, sizeof *order);
    if (!gk || !plans || !reqs || !order) {
        free(gk); free(plans); free(reqs); free(order);
        return l3_fail(err, L3_ENOMEM, "allocating a get batch");
    }
    uint32_t b = s->geo.block_size, hb = s->geo.header_bytes;
    int io_error = 0;
    rc = L3_OK;
    for (size_t base = 0; base < n && rc == L3_OK; base += w) {
        size_t m = n - base < w ? n - base : w, nk = 0;
        for (size_t i = 0; i < m; i++)
            gk[i].id = l3_key_identity(keys[base + i], strlen(keys[base + i]));
        l3_io_ctx *ctx = l3_io_acquire(s->engine);
        uint8_t *bounce = l3_io_bounce(ctx, NULL);
        l3_slab_lock(s);
        for (size_t i = 0; i < m; i++) {
            size_t pos = base + i;
            l3_index_entry *e = l3_index_find(&s->index, gk[i].id);
            if (e && e->gen != (uint32_t)s->slabs[e->slab].gen) {
                /* Left behind by a process that died mid-update: stale. */
                l3_slab_unpublish(s, e);
                e = NULL;
            }
            if (!e || e->size != ranges[pos].size) {
                res->object_failures[pos] = true; /* missing or of another size */
                atomic_fetch_add(&s->get_misses, 1);
                continue;
            }
            slab *sl = &s->slabs[e->slab];
            get_key *g = &gk[nk];
            g->pos = pos;
            g->id = gk[i].id;
            g->seq = e->seq;
            g->gen = sl->gen;
            g->slab = e->slab;
            g->slot = e->slot;
            g->crc = e->crc;
            g->header = bounce + nk * (hb + b);
            plans[nk] = (plan){ .dev = l3_slot_offset(&s->geo, e->slab, sl->payload_blocks, e->slot) + hb,
                                .host = host.base + ranges[pos].offset,
                                .size = e->size,
                                .tail_buf = g->header + hb };
            order[nk] = (dev_order){ plans[nk].dev, (uint32_t)nk };
            nk++;
        }
        l3_slab_unlock(s);
        /* Each header is read with its payload, in device order: the
         * header is checked against the index, and the reads of adjacent
         * slots are contiguous, so the block layer can merge them. */
        qsort(order, nk, sizeof *order, cmp_dev_order);
        int r = 0;
        for (size_t o = 0; o < nk; o++) {
            size_t k = order[o].k;
            int first = r;
            reqs[r++] = (l3_io_req){ .write = false, .offset = plans[k].dev - hb, .buf = gk[k].header, .len = hb };
            int next = plan_payload(s, &plans[k], false, reqs, r);
            if (next < 0) {
                rc = l3_fail(err, L3_ENOMEM, "allocating a bounce buffer");
                break;
            }
            r = next;
            plans[k].first_req = first;
            plans[k].num_reqs = r - first;
        }
        bool retired = true;
        if (rc == L3_OK)
            rc = l3_io_run(s->engine, ctx, reqs, (size_t)r, s->opt.io_timeout, &retired, err);
        if (!retired) {
            /* Some reads may still land in the pool: say so, refuse more. */
            atomic_store(&s->fatal, true);
            res->retired = false;
            for (size_t i = 0; i < n; i++)
                res->object_failures[i] = false;
            l3_io_release(s->engine, ctx);
            for (size_t k = 0; k < nk; k++)
                free(plans[k].temp);
            rc = L3_OK;
            break;
        }
        for (size_t k = 0; k < nk && rc == L3_OK; k++) {
            plan *p = &plans[k];
            get_key *g = &gk[k];
            if (!reqs_ok(reqs, p, &io_error))
                continue;
            if (p->temp)
                memcpy(p->host, p->temp, p->size);
            else if (p->tail)
                memcpy(p->host + p->direct, p->tail_buf, p->tail);
            bool crc_ok = header_matches(s, g, keys[g->pos], p->size) &&
                          (s->opt.no_verify_checksums || l3_crc32c(0, p->host, p->size) == g->crc);
            l3_slab_lock(s);
            l3_index_entry *e = l3_index_find(&s->index, g->id);
            bool current = e && e->seq == g->seq && s->slabs[g->slab].gen == g->gen;
            if (current && crc_ok)
                atomic_store_explicit(&s->slabs[g->slab].last_access,
                                      atomic_fetch_add(&s->sh->tick, 1), memory_order_relaxed);
            l3_slab_unlock(s);
            if (current && crc_ok) {
                res->success[g->pos] = true;
                atomic_fetch_add(&s->get_hits, 1);
                continue;
            }
            res->object_failures[g->pos] = true;
            if (!current) {
                atomic_fetch_add(&s->stale_reads, 1); /* evicted while it was read */
                continue;
            }
            atomic_fetch_add(&s->checksum_failures, 1);
            l3_log("error", "checksum or header mismatch reading object %.*s (slab %u): dropped", 120,
                   keys[g->pos], g->slab);
            l3_slab_lock(s);
            e = l3_index_find(&s->index, g->id);
            if (e && e->seq == g->seq)
                l3_slab_unpublish(s, e);
            l3_slab_unlock(s);
        }
        l3_io_release(s->engine, ctx);
        for (size_t k = 0; k < nk; k++)
            free(plans[k].temp);
    }
    free(gk);
    free(plans);
    free(reqs);
    free(order);
    if (rc == L3_OK && io_error && res->retired)
        rc = l3_fail(err, L3_EIO, "reading %s: %s", s->path, strerror(io_error));
    if (rc != L3_OK)
        for (size_t i = 0; i < n; i++)
            res->success[i] = res->object_failures[i] = false;
    return rc;
}

typedef struct put_key {
    size_t pos;
    l3_key_id id;
    int state;          /* 0 nothing to write (exists/failed), 1 write */
    int ns;
    uint32_t slab, slot, crc;
    uint64_t seq, gen;
} put_key;

static l3_status slab_put(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                          const l3_range *ranges, l3_io_result *res, l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_status rc = check_batch(s, keys, n, host, ranges, err);
    if (rc != L3_OK)
        return rc;
    if (s->opt.read_only)
        return l3_fail(err, L3_ECLOSED, "the store is open read-only");
    atomic_fetch_add(&s->puts, 1);
    result_clear(res, n);
    size_t w = s->wave_keys;
    put_key *pk = calloc(w, sizeof *pk);
    plan *plans = calloc(w, sizeof *plans);
    l3_io_req *reqs = calloc(3 * w, sizeof *reqs);
    uint32_t *opened = calloc(w, sizeof *opened);
    if (!pk || !plans || !reqs || !opened) {
        free(pk); free(plans); free(reqs); free(opened);
        return l3_fail(err, L3_ENOMEM, "allocating a put batch");
    }
    uint32_t b = s->geo.block_size, hb = s->geo.header_bytes;
    int io_error = 0;
    for (size_t base = 0; base < n && rc == L3_OK; base += w) {
        size_t m = n - base < w ? n - base : w, num_opened = 0;
        for (size_t i = 0; i < m; i++) {
            pk[i] = (put_key){ .pos = base + i,
                               .id = l3_key_identity(keys[base + i], strlen(keys[base + i])) };
        }
        l3_slab_lock(s);
        for (size_t i = 0; i < m; i++) {
            put_key *p = &pk[i];
            uint64_t size = ranges[p->pos].size;
            if (l3_index_find(&s->index, p->id)) {
                res->success[p->pos] = true; /* create-only: already there */
                atomic_fetch_add(&s->put_existing, 1);
                continue;
            }
            bool dup = false;
            for (size_t j = 0; j < i && !dup; j++)
                dup = pk[j].state == 1 && pk[j].id.hash == p->id.hash &&
                      pk[j].id.check == p->id.check && pk[j].id.len == p->id.len;
            if (dup) {
                p->state = 2; /* succeeds with its twin */
                continue;
            }
            uint32_t pb = (uint32_t)((size + b - 1) / b);
            if (pb > s->sh->max_payload_blocks) {
                if (!atomic_exchange(&s->warned_too_big, true))
                    l3_log("warning", "an object of %llu bytes does not fit a %llu-byte slab: "
                                      "its put fails", (unsigned long long)size,
                           (unsigned long long)s->geo.slab_size);
                atomic_fetch_add(&s->put_rejected, 1);
                continue;
            }
            int ns = l3_slab_ns_intern(s, keys[p->pos], p->id.len);
            if (ns < 0 || !alloc_slot(s, pb, &p->slab, &p->slot, opened, &num_opened)) {
                atomic_fetch_add(&s->put_rejected, 1); /* full: a retired failure of this key */
                continue;
            }
            p->ns = ns;
            p->state = 1;
            p->seq = atomic_fetch_add(&s->sh->seq, 1);
        }
        l3_slab_unlock(s);
        /* A reopened slab's record lands before any object in it. */
        for (size_t k = 0; k < num_opened && rc == L3_OK; k++)
            rc = l3_slab_write_record(s, opened[k], err);
        l3_io_ctx *ctx = l3_io_acquire(s->engine);
        uint8_t *bounce = l3_io_bounce(ctx, NULL);
        int r = 0;
        size_t np = 0;
        for (size_t i = 0; i < m && rc == L3_OK; i++) {
            put_key *p = &pk[i];
            if (p->state != 1)
                continue;
            uint8_t *src = host.base + ranges[p->pos].offset;
            uint32_t size = (uint32_t)ranges[p->pos].size;
            p->crc = l3_crc32c(0, src, size);
            uint8_t *hdr = bounce + np * (hb + b);
            memset(hdr, 0, hb);
            l3_object_header *h = (l3_object_header *)hdr;
            l3_slab_lock(s);
            slab *sl = &s->slabs[p->slab];
            uint64_t slot_off = l3_slot_offset(&s->geo, p->slab, sl->payload_blocks, p->slot);
            h->slab_gen = p->gen = sl->gen;
            l3_slab_unlock(s);
            h->epoch = s->sh->sb.epoch;
            h->seq = p->seq;
            h->slab = p->slab;
            h->slot = p->slot;
            h->size = size;
            h->payload_crc = p->crc;
            h->key_len = p->id.len;
            memcpy(h->key, keys[p->pos], p->id.len);
            l3_object_header_seal(h);
            plans[np] = (plan){ .dev = slot_off + hb, .host = src, .size = size,
                                .tail_buf = hdr + hb };
            int first = r;
            reqs[r++] = (l3_io_req){ .write = true, .offset = slot_off, .buf = hdr, .len = hb };
            int next = plan_payload(s, &plans[np], true, reqs, r);
            if (next < 0) {
                rc = l3_fail(err, L3_ENOMEM, "allocating a bounce buffer");
                break;
            }
            r = next;
            plans[np].first_req = first;
            plans[np].num_reqs = r - first;
            np++;
        }
        bool retired = true;
        if (rc == L3_OK)
            rc = l3_io_run(s->engine, ctx, reqs, (size_t)r, s->opt.io_timeout, &retired, err);
        l3_io_release(s->engine, ctx);
        if (!retired) {
            atomic_store(&s->fatal, true);
            res->retired = false;
            rc = L3_OK;
        }
        l3_slab_lock(s);
        for (size_t i = 0, k = 0; i < m; i++) {
            put_key *p = &pk[i];
            if (p->state != 1)
                continue;
            plan *pl = &plans[k++];
            bool written = rc == L3_OK && retired && k <= np && reqs_ok(reqs, pl, &io_error);
            if (written && !l3_index_find(&s->index, p->id)) {
                l3_index_entry e = { .hash = p->id.hash, .seq = p->seq, .check = p->id.check,
                                     .crc = p->crc, .slab = p->slab, .slot = p->slot,
                                     .size = (uint32_t)ranges[p->pos].size, .gen = (uint32_t)p->gen,
                                     .ns = (uint16_t)p->ns, .key_len = p->id.len };
                written = l3_slab_publish(s, &e);
                atomic_store_explicit(&s->slabs[p->slab].last_access,
                                      atomic_fetch_add(&s->sh->tick, 1), memory_order_relaxed);
            }
            if (written) {
                res->success[p->pos] = true;
                atomic_fetch_add(&s->put_written, 1);
            }
            release_slot(s, p->slab);
        }
        l3_slab_unlock(s);
        for (size_t i = 0; i < m; i++)
            if (pk[i].state == 2)
                for (size_t j = 0; j < i; j++)
                    if (pk[j].state == 1 && pk[j].id.hash == pk[i].id.hash &&
                        pk[j].id.check == pk[i].id.check && pk[j].id.len == pk[i].id.len)
                        res->success[pk[i].pos] = res->success[pk[j].pos];
        for (size_t k = 0; k < np; k++)
            free(plans[k].temp);
        if (!retired)
            break;
    }
    free(pk);
    free(plans);
    free(reqs);
    free(opened);
    if (rc == L3_OK && io_error && res->retired)
        rc = l3_fail(err, L3_EIO, "writing %s: %s", s->path, strerror(io_error));
    if (rc != L3_OK)
        for (size_t i = 0; i < n; i++)
            res->success[i] = false;
    return rc;
}

/* ---- namespace removal ---- */

static l3_status journal_append(l3_slabstore *s, const char *prefix, size_t len, l3_error *err)
{
    if (len > L3_JOURNAL_PREFIX_MAX)
        return l3_fail(err, L3_EINVAL, "a prefix of %zu bytes is longer than the journal's %u", len,
                       L3_JOURNAL_PREFIX_MAX);
    l3_shm_lock(s, &s->sh->journal_mu);
    /* A record is needed while some used slab opened before it. */
    uint64_t oldest = UINT64_MAX;
    l3_slab_lock(s);
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        if (s->slabs[i].disk_used && s->slabs[i].first_seq < oldest)
            oldest = s->slabs[i].first_seq;
    l3_slab_unlock(s);
    int slot = -1;
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS && slot < 0; j++) {
        l3_journal_record *r = &s->journal[j];
        if (!l3_journal_record_valid(r) || r->epoch != s->sh->sb.epoch || r->seq <= oldest)
            slot = (int)j;
    }
    l3_status st = L3_OK;
    if (slot < 0) {
        st = l3_fail(err, L3_ENOSPC, "the namespace journal is full (%u deletions still cover "
                                     "objects on disk)", L3_JOURNAL_RECORDS);
    } else {
        l3_journal_record rec;
        memset(&rec, 0, sizeof rec);
        rec.seq = atomic_fetch_add(&s->sh->seq, 1);
        rec.epoch = s->sh->sb.epoch;
        rec.prefix_len = (uint32_t)len;
        memcpy(rec.prefix, prefix, len);
        l3_journal_record_seal(&rec);
        uint32_t b = s->geo.block_size;
        uint64_t byte = (uint64_t)slot * L3_JOURNAL_RECORD_BYTES, block_off = byte / b * b;
        uint8_t *buf = l3_slab_alloc_aligned(b, b);
        if (!buf) {
            st = l3_fail(err, L3_ENOMEM, "allocating a journal buffer");
        } else {
            l3_journal_record saved = s->journal[slot];
            s->journal[slot] = rec;
            memcpy(buf, (uint8_t *)s->journal + block_off, b);
            st = pwrite_all(s, buf, b, s->geo.journal_off + block_off, err);
            if (st == L3_OK && fdatasync(s->fd) != 0)
                st = l3_fail(err, L3_EIO, "fdatasync %s: %s", s->path, strerror(errno));
            if (st != L3_OK)
                s->journal[slot] = saved;
            free(buf);
        }
    }
    l3_shm_unlock(&s->sh->journal_mu);
    return st;
}

static bool slab_remove(l3_store *st, const char *prefix)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_error err;
    if (s->closed || atomic_load(&s->fatal) || s->opt.read_only || !prefix) {
        l3_log("error", "remove_by_prefix: the store is closed, read-only or refuses I/O");
        return false;
    }
    size_t plen = strlen(prefix);
    l3_slab_lock(s);
    l3_shm_reap_dead(s);
    bool busy = s->sh->reserved > 0;
    l3_slab_unlock(s);
    if (busy) {
        l3_log("error", "remove_by_prefix(%.80s): puts are in flight; nothing was removed", prefix);
        return false;
    }
    if (plen == 0) {
        /* Everything: one epoch bump invalidates every object at once. */
        l3_shm_lock(s, &s->sh->sb_mu);
        s->sh->sb.epoch++;
        s->sh->sb.next_seq = atomic_load(&s->sh->seq);
        l3_status rc = l3_slab_write_sb(s, &err);
        if (rc != L3_OK) {
            s->sh->sb.epoch--;
            l3_shm_unlock(&s->sh->sb_mu);
            l3_log("error", "remove_by_prefix(\"\"): %s; nothing was removed", err.msg);
            return false;
        }
        l3_shm_unlock(&s->sh->sb_mu);
        l3_slab_lock(s);
        l3_index_clear(&s->index);
        for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
            slab *sl = &s->slabs[i];
            memset(l3_slab_slot_ids(s, i), 0, (size_t)sl->nslots * sizeof(uint64_t));
            sl->live = 0;
            sl->live_bytes = 0;
            sl->state = S_FREE;
            sl->disk_used = 0;
        }
        for (uint32_t c = 0; c <= s->sh->max_payload_blocks; c++)
            s->class_open[c] = -1;
        for (uint32_t i = 0; i < s->sh->num_ns; i++)
            s->ns[i].objects = s->ns[i].bytes = 0;
        l3_slab_unlock(s);
        return true;
    }
    /* Which namespaces it covers; a prefix that ends inside a namespace's
     * keys cannot be decided from the index. */
    const char *u = memchr(prefix, '_', plen < L3_NS_TEXT_MAX ? plen : L3_NS_TEXT_MAX);
    bool *match = calloc(L3_MAX_NAMESPACES + 1, 1);
    if (!match)
        return false;
    bool undecidable = false, any = false;
    l3_slab_lock(s);
    for (uint32_t i = 0; i < s->sh->num_ns; i++) {
        ns_info *ns = &s->ns[i];
        if (!ns->objects)
            continue;
        if (u) {
            size_t nl = (size_t)(u - prefix) + 1;
            if (ns->len == nl && memcmp(ns->text, prefix, nl) == 0) {
                if (plen == nl)
                    match[i + 1] = any = true;
                else
                    undecidable = true;
            }
        } else if (ns->len >= plen && memcmp(ns->text, prefix, plen) == 0) {
            match[i + 1] = any = true;
        }
    }
    if (!u) {
        /* Keys without a namespace might start with the prefix. */
        for (uint64_t i = 0; i <= s->index.meta->mask && !undecidable; i++)
            if (s->index.table[i].hash && s->index.table[i].ns == 0)
                undecidable = true;
    }
    l3_slab_unlock(s);
    if (undecidable) {
        free(match);
        l3_log("error", "remove_by_prefix(%.80s): the prefix must end at a namespace boundary "
                        "(its first '_') to be removed from the index; nothing was removed", prefix);
        return false;
    }
    if (!any) {
        free(match);
        return true;
    }
    if (journal_append(s, prefix, plen, &err) != L3_OK) {
        free(match);
        l3_log("error", "remove_by_prefix(%.80s): %s; nothing was removed", prefix, err.msg);
        return false;
    }
    l3_slab_lock(s);
    for (uint64_t i = 0; i <= s->index.meta->mask;) {
        l3_index_entry *e = &s->index.table[i];
        if (e->hash && match[e->ns])
            l3_slab_unpublish(s, e); /* backward shift may move another entry here */
        else
            i++;
    }
    l3_slab_unlock(s);
    free(match);
    return true;
}

static bool slab_failures_retire(l3_store *st)
{
    /* Errors are returned only after every submitted I/O was reaped; an
     * unreaped batch is reported as retired=false, never as an error. */
    (void)st;
    return true;
}

static void slab_close_op(l3_store *st)
{
    l3_error err;
    if (l3_slabstore_close((l3_slabstore *)st, &err) != L3_OK)
        l3_log("error", "closing the slab store: %s", err.msg);
}

static void slab_destroy_op(l3_store *st) { l3_slabstore_free((l3_slabstore *)st); }

/* The block device's DMA segments per request (its queue's max_segments),
 * from sysfs; 0 when it cannot be told. A partition's queue is its disk's. */
static unsigned device_max_segments(int fd, bool blockdev)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 0;
    dev_t dev = blockdev ? st.st_rdev : st.st_dev;
    const char *paths[] = { "queue/max_segments", "../queue/max_segments" };
    for (size_t i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/%s", major(dev), minor(dev), paths[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned n = 0;
        bool ok = fscanf(f, "%u", &n) == 1;
        fclose(f);
        if (ok && n)
            return n;
    }
    return 0;
}

static l3_status slab_register_host(l3_store *st, l3_host_buffer host, l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    if (s->closed || !s->engine)
        return l3_fail(err, L3_ECLOSED, "the store is closed");
    l3_io_engine_set_host(s->engine, host.base, host.len);
    /* A pool of 4 KiB pages needs a DMA segment per page: objects over
     * max_segments pages are split into several device requests, and
     * neighbouring objects cannot merge. Say so once. */
    if (host.base && host.len >= (2u << 20) && s->max_segments && !atomic_load(&s->warned_small_pages) &&
        l3_pool_is_huge(host.base, host.len) == 0 && !atomic_exchange(&s->warned_small_pages, true))
        l3_log("warning", "the Host pool (%zu bytes at %p) is on 4 KiB pages and %s's device takes %u "
                          "of them per request: objects over %u KiB are split into several requests "
                          "and neighbours do not merge. Allocate the pool with l3_pool_alloc (or 2 MiB "
                          "aligned with madvise(MADV_HUGEPAGE)) to move them whole",
               host.len, (void *)host.base, s->path, s->max_segments, s->max_segments * 4);
    return L3_OK;
}

static const l3_store_ops slab_ops = {
    .batch_exists = slab_exists,
    .batch_get_into = slab_get,
    .batch_put_from = slab_put,
    .remove_by_prefix = slab_remove,
    .close = slab_close_op,
    .failures_retire = slab_failures_retire,
    .destroy = slab_destroy_op,
    .register_host = slab_register_host,
};

l3_store *l3_slabstore_store(l3_slabstore *s) { return &s->base; }

/* ---- open, close, stats ---- */

static void store_free(l3_slabstore *s)
{
    free(s->path);
    free(s);
}

static l3_status format_store(l3_slabstore *s, uint64_t capacity, l3_error *err)
{
    char why[256];
    if (!l3_geometry_plan(capacity, s->opt.slab_size, s->opt.block_size, s->opt.max_objects,
                          &s->geo, why, sizeof why))
        return l3_fail(err, L3_ECONFIG, "%s: %s", s->path, why);
    l3_geometry *g = &s->geo;
    if (!s->is_blockdev) {
        int rc = posix_fallocate(s->fd, 0, (off_t)g->capacity);
        if (rc == EOPNOTSUPP || rc == EINVAL)
            rc = ftruncate(s->fd, (off_t)g->capacity) == 0 ? 0 : errno;
        if (rc != 0)
            return l3_fail(err, rc == ENOSPC ? L3_ENOSPC : L3_EIO,
                           "allocating %llu bytes for %s: %s", (unsigned long long)g->capacity,
                           s->path, strerror(rc));
    }
    l3_superblock *sb = &s->disk_sb;
    memset(sb, 0, sizeof *sb);
    memcpy(sb->magic, L3_SB_MAGIC, 8);
    sb->version = L3_FORMAT_VERSION;
    if (getrandom(sb->uuid, sizeof sb->uuid, 0) != (ssize_t)sizeof sb->uuid)
        for (size_t i = 0; i < sizeof sb->uuid; i++)
            sb->uuid[i] = (uint8_t)(rand() ^ (int)time(NULL));
    sb->epoch = 1;
    sb->clean = 0;
    sb->block_size = g->block_size;
    sb->slab_size = g->slab_size;
    sb->capacity = g->capacity;
    sb->num_slabs = g->num_slabs;
    sb->max_objects = g->max_objects;
    sb->slab_table_off = g->slab_table_off;
    sb->slab_table_len = g->slab_table_len;
    sb->journal_off = g->journal_off;
    sb->journal_len = g->journal_len;
    sb->checkpoint_off = g->checkpoint_off;
    sb->checkpoint_len = g->checkpoint_len;
    sb->data_off = g->data_off;
    sb->next_seq = 1;
    sb->created_at = (uint64_t)time(NULL);
    /* An empty slab table and journal, then the superblock that names them. */
    size_t zlen = g->slab_table_len > g->journal_len ? g->slab_table_len : g->journal_len;
    uint8_t *zero = l3_slab_alloc_aligned(g->block_size, zlen);
    if (!zero)
        return l3_fail(err, L3_ENOMEM, "allocating a metadata buffer");
    l3_status st = pwrite_all(s, zero, g->slab_table_len, g->slab_table_off, err);
    if (st == L3_OK)
        st = pwrite_all(s, zero, g->journal_len, g->journal_off, err);
    free(zero);
    if (st != L3_OK)
        return st;
    if (s->is_blockdev) {
        uint64_t range[2] = { g->data_off, (uint64_t)g->num_slabs * g->slab_size };
        (void)ioctl(s->fd, BLKDISCARD, range); /* best effort: tell the SSD it is free */
    }
    return l3_slab_write_sb(s, err);
}

/* Read both superblock copies; pick the valid one with the highest
 * sequence. Returns how many are valid; `why` says what is wrong. */
static int read_superblocks(int fd, const char *path, uint64_t size, l3_superblock *best,
                            char *why, size_t why_len)
{
    uint8_t *buf = l3_slab_alloc_aligned(4096, 65536);
    int valid = 0;
    why[0] = '\0';
    if (!buf)
        return 0;
    for (uint32_t c = 0; c < L3_SB_COPIES; c++) {
        /* Copies sit at multiples of max(4096, block); try the common ones. */
        bool found = false;
        char one[128] = "";
        for (uint32_t slot = 4096; slot <= 65536 && !found; slot *= 2) {
            uint64_t off = (uint64_t)c * slot;
            if (c == 0 && slot > 4096)
                break;
            if (off + 4096 > size)
                break;
            l3_error err;
            if (pread_all(fd, path, buf, 4096, off, &err) != L3_OK) {
                snprintf(one, sizeof one, "%.100s", err.msg);
                break;
            }
            l3_superblock *sb = (l3_superblock *)buf;
            if (!l3_sb_valid(sb, one, sizeof one))
                continue;
            if (sb->copy != c || l3_round_up(L3_SB_BYTES, sb->block_size) != slot) {
                snprintf(one, sizeof one, "copy %u found at offset %llu", sb->copy,
                         (unsigned long long)off);
                continue;
            }
            found = true;
            if (!valid || sb->sequence > best->sequence)
                *best = *sb;
            valid++;
        }
        if (!found) {
            size_t used = strlen(why);
            snprintf(why + used, why_len - used, "%scopy %u: %s", used ? "; " : "", c,
                     one[0] ? one : "unreadable");
        }
    }
    free(buf);
    return valid;
}

static bool all_zero_head(int fd, const char *path, uint64_t size)
{
    uint8_t *buf = l3_slab_alloc_aligned(4096, 8192);
    bool zero = false;
    l3_error err;
    if (buf && size >= 8192 && pread_all(fd, path, buf, 8192, 0, &err) == L3_OK) {
        zero = true;
        for (size_t i = 0; i < 8192 && zero; i++)
            zero = buf[i] == 0;
    }
    free(buf);
    return zero;
}

/* The first process to attach loads the store into the mapping. */
static l3_status load_from_disk(l3_slabstore *s, l3_error *err)
{
    l3_status st;
    if (!s->formatted &&
        ((st = pread_all(s->fd, s->path, s->table, s->geo.slab_table_len, s->geo.slab_table_off, err)) != L3_OK ||
         (st = pread_all(s->fd, s->path, s->journal, s->geo.journal_len, s->geo.journal_off, err)) != L3_OK))
        return st;
    bool from_checkpoint = false;
    if (s->sh->sb.clean) {
        st = l3_slab_load_checkpoint(s, err);
        if (st == L3_OK) {
            from_checkpoint = true;
        } else if (st == L3_ECORRUPT) {
            l3_log("warning", "%s: the checkpoint is unusable (%s); rebuilding the index from the "
                              "object headers", s->path, err ? err->msg : "");
        } else {
            return st;
        }
    }
    if (!from_checkpoint && (st = l3_slab_scan(s, err)) != L3_OK)
        return st;
    s->sh->opened_from_checkpoint = from_checkpoint;
    if (!s->opt.read_only) {
        /* Dirty before the first change: a crash from here on rebuilds. */
        l3_shm_lock(s, &s->sh->sb_mu);
        s->sh->sb.clean = 0;
        s->sh->sb.next_seq = atomic_load(&s->sh->seq);
        st = l3_slab_write_sb(s, err);
        l3_shm_unlock(&s->sh->sb_mu);
        if (st != L3_OK)
            return st;
    }
    return L3_OK;
}

/* The last process to detach writes the checkpoint and marks it clean. */
static l3_status checkpoint_on_detach(l3_slabstore *s, l3_error *err)
{
    if (s->opt.read_only)
        return L3_OK;
    uint32_t crc = 0;
    uint64_t bytes = 0;
    l3_status st = l3_slab_write_checkpoint(s, &crc, &bytes, err);
    if (st != L3_OK)
        return st;
    l3_shm_lock(s, &s->sh->sb_mu);
    s->sh->sb.clean = 1;
    s->sh->sb.ckpt_bytes = bytes;
    s->sh->sb.ckpt_crc = crc;
    s->sh->sb.ckpt_entries = (uint32_t)s->index.meta->count;
    s->sh->sb.next_seq = atomic_load(&s->sh->seq);
    st = l3_slab_write_sb(s, err);
    l3_shm_unlock(&s->sh->sb_mu);
    return st;
}

static int lock_file(int fd, int how, double timeout)
{
    double deadline = l3_monotonic_seconds() + (timeout > 0 ? timeout : 0);
    while (flock(fd, how | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK || l3_monotonic_seconds() >= deadline)
            return -1;
        usleep(10000);
    }
    return 0;
}

l3_status l3_slabstore_open(const l3_slab_options *o, l3_slabstore **out, l3_error *err)
{
    *out = NULL;
    if (!o)
        return l3_fail(err, L3_EINVAL, "no store options");
    l3_slab_options opt = *o;
    l3_status st = check_options(&opt, err);
    if (st != L3_OK)
        return st;
    double started = l3_monotonic_seconds();
    struct stat stbuf;
    bool exists = stat(opt.path, &stbuf) == 0;
    if (!exists && (errno != ENOENT || !opt.create || opt.read_only))
        return l3_fail(err, errno == ENOENT ? L3_ENOTFOUND : L3_EIO, "%s: %s", opt.path,
                       strerror(errno));
    bool blockdev = exists && S_ISBLK(stbuf.st_mode);
    if (exists && !blockdev && !S_ISREG(stbuf.st_mode))
        return l3_fail(err, L3_EINVAL, "%s is neither a regular file nor a block device", opt.path);
    int flags = (opt.read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC;
    if (!exists)
        flags |= O_CREAT | O_EXCL;
    /* A block device is opened O_EXCL (no mounts meanwhile) by its first
     * opener; the others attach without it (l3_shm_attach checks that
     * they share it with a live l3cache process). */
    bool shared_dev = false;
    int fd = open(opt.path, flags | (blockdev ? O_EXCL : 0), 0644);
    if (fd < 0 && errno == EEXIST && !exists) {
        /* Another process created it meanwhile: open what it made. */
        exists = true;
        flags &= ~(O_CREAT | O_EXCL);
        fd = open(opt.path, flags, 0644);
        if (fd >= 0)
            fstat(fd, &stbuf);
    }
    if (fd < 0 && errno == EBUSY && blockdev) {
        fd = open(opt.path, flags, 0644);
        shared_dev = fd >= 0;
    }
    if (fd < 0) {
        int e = errno;
        if (e == EINVAL)
            return l3_fail(err, L3_EUNSUPPORTED,
                           "%s: the file system does not support O_DIRECT (tmpfs?); put the store "
                           "on a disk file system or a block device", opt.path);
        return l3_fail(err, e == EBUSY ? L3_EBUSY : L3_EIO, "opening %s: %s%s", opt.path,
                       strerror(e), e == EBUSY ? " (mounted or opened exclusively elsewhere)" : "");
    }
    l3_slabstore *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return l3_fail(err, L3_ENOMEM, "allocating the store");
    }
    s->base.ops = &slab_ops;
    s->opt = opt;
    s->path = strdup(opt.path);
    s->opt.path = s->path;
    s->fd = fd;
    s->shm_fd = -1;
    s->me = -1;
    s->is_blockdev = blockdev;
    s->max_segments = device_max_segments(fd, blockdev);
    /* Concurrent openers of one store take turns from here to attach. */
    if ((st = l3_shm_open_locked(s, err)) != L3_OK)
        goto fail;
    /* Its size, now that a concurrent creator (who held the lock) is done. */
    if (!blockdev && fstat(fd, &stbuf) != 0) {
        st = l3_fail(err, L3_EIO, "%s: %s", opt.path, strerror(errno));
        goto fail;
    }
    /* Processes share the store (LOCK_SH); l3fsck -y and formatting take
     * it exclusively. A killed process holds it until the kernel tore its
     * rings down, so wait a little. */
    if (lock_file(fd, LOCK_SH, opt.lock_timeout) != 0) {
        st = l3_fail(err, L3_EBUSY, "%s is locked exclusively by another process (l3fsck -y?)", opt.path);
        goto fail;
    }
    uint64_t size = 0;
    if (blockdev) {
        int lbs = 0;
        if (ioctl(fd, BLKGETSIZE64, &size) != 0 || ioctl(fd, BLKSSZGET, &lbs) != 0) {
            st = l3_fail(err, L3_EIO, "%s: reading the device's size: %s", opt.path, strerror(errno));
            goto fail;
        }
        if (lbs <= 0 || opt.block_size % (uint32_t)lbs) {
            st = l3_fail(err, L3_ECONFIG, "%s: block_size %u is not a multiple of the device's "
                                          "logical block %d", opt.path, opt.block_size, lbs);
            goto fail;
        }
    } else {
        /* Read under the open lock: whoever created the file may have
         * formatted it meanwhile. */
        size = (uint64_t)stbuf.st_size;
    }
    char why[512];
    l3_superblock sb;
    int valid = size ? read_superblocks(fd, s->path, size, &sb, why, sizeof why) : 0;
    if (valid && !opt.format) {
        s->disk_sb = sb;
        if (!l3_geometry_from_sb(&sb, &s->geo, why, sizeof why)) {
            st = l3_fail(err, L3_ECORRUPT, "%s: %s", s->path, why);
            goto fail;
        }
        if (s->geo.capacity > size) {
            st = l3_fail(err, L3_ECORRUPT,
                         "%s is %llu bytes but its store needs %llu: the image is truncated",
                         s->path, (unsigned long long)size, (unsigned long long)s->geo.capacity);
            goto fail;
        }
    } else {
        bool blank = size == 0 || (!valid && all_zero_head(fd, s->path, size));
        if (!opt.format && !(opt.create && blank)) {
            st = l3_fail(err, L3_ECORRUPT,
                         "%s holds no valid l3cache superblock (%s); refusing to overwrite it "
                         "(format it explicitly, or repair it with l3fsck)",
                         opt.path, size ? why : "empty");
            goto fail;
        }
        if (opt.read_only || shared_dev) {
            st = l3_fail(err, opt.read_only ? L3_ECLOSED : L3_EBUSY, "%s: %s", opt.path,
                         opt.read_only ? "a read-only open cannot format"
                                       : "the device is in use: cannot format it");
            goto fail;
        }
        uint64_t capacity = opt.capacity ? opt.capacity : size;
        if (blockdev && capacity > size) {
            st = l3_fail(err, L3_ECONFIG, "%s: capacity %llu exceeds the device's %llu bytes",
                         opt.path, (unsigned long long)capacity, (unsigned long long)size);
            goto fail;
        }
        if (!capacity) {
            st = l3_fail(err, L3_ECONFIG, "%s: a new store file needs a capacity", opt.path);
            goto fail;
        }
        /* Formatting needs the store to itself. */
        if (lock_file(fd, LOCK_EX, 0) != 0) {
            st = l3_fail(err, L3_EBUSY, "%s is open in another process: cannot format it", opt.path);
            goto fail;
        }
        st = format_store(s, capacity, err);
        lock_file(fd, LOCK_SH, 0);
        if (st != L3_OK)
            goto fail;
        s->formatted = true;
    }
    memcpy(s->geo_uuid, s->disk_sb.uuid, 16);
    /* This process's engine: contexts for its workers, bounce room for a wave. */
    uint32_t b = s->geo.block_size;
    s->wave_keys = opt.batch_keys;
    l3_io_options io = {
        .kind = opt.engine,
        .contexts = opt.io_contexts,
        .depth = opt.queue_depth,
        .bounce_bytes = s->wave_keys * (s->geo.header_bytes + b),
        .alignment = b,
        .register_buffers = !opt.no_register_buffers,
    };
    st = l3_io_engine_open(&io, fd, &s->engine, err);
    if (st != L3_OK)
        goto fail;
    st = l3_shm_attach(s, s->formatted, load_from_disk, err);
    if (st != L3_OK)
        goto fail;
    if (shared_dev && s->sh->attached <= 1) {
        /* Nobody of ours held the device: someone else has it exclusively. */
        l3_shm_open_unlock(s, false);
        l3_shm_detach(s, NULL, NULL);
        s->shm_fd = -1;
        st = l3_fail(err, L3_EBUSY, "opening %s: the device is mounted or opened exclusively elsewhere",
                     opt.path);
        goto fail;
    }
    l3_shm_open_unlock(s, false);
    s->open_seconds = l3_monotonic_seconds() - started;
    *out = s;
    return L3_OK;
fail:
    l3_shm_open_unlock(s, true);
    if (s->engine)
        l3_io_engine_close(s->engine);
    flock(fd, LOCK_UN);
    close(fd);
    if (!exists && !opt.read_only) {
        /* Leave nothing behind for a store that never opened. */
        unlink(opt.path);
    }
    store_free(s);
    return st;
}

l3_status l3_slabstore_close(l3_slabstore *s, l3_error *err)
{
    if (s->closed)
        return L3_OK;
    s->closed = true;
    if (atomic_load(&s->fatal) || l3_io_engine_broken(s->engine)) {
        /* Some I/O may still be in flight: keep the engine (and its
         * registration of the pool) and stay attached, so that the store
         * stays dirty and no one reuses what this process reserved. */
        s->engine_leaked = true;
        return l3_fail(err, L3_EUNRETIRED, "%s: I/O was not reaped; the store stays dirty and "
                                           "is rebuilt from its headers on the next open", s->path);
    }
    l3_io_engine_close(s->engine);
    s->engine = NULL;
    l3_status st = l3_shm_detach(s, checkpoint_on_detach, err);
    flock(s->fd, LOCK_UN);
    close(s->fd);
    s->fd = -1;
    return st;
}

void l3_slabstore_free(l3_slabstore *s)
{
    if (!s)
        return;
    if (!s->closed) {
        l3_error err;
        if (l3_slabstore_close(s, &err) != L3_OK)
            l3_log("error", "closing %s: %s", s->path, err.msg);
    }
    if (s->engine_leaked)
        return; /* the kernel may still write memory the engine owns */
    store_free(s);
}

void l3_slabstore_stats(l3_slabstore *s, l3_slab_stats *o)
{
    memset(o, 0, sizeof *o);
    l3_slab_lock(s);
    o->objects = s->index.meta->count;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        slab *sl = &s->slabs[i];
        o->payload_bytes += sl->live_bytes;
        if (sl->state == S_FREE)
            o->slabs_free++;
        else if (sl->state == S_OPEN)
            o->slabs_open++;
        else
            o->slabs_sealed++;
    }
    l3_slab_unlock(s);
    o->capacity_bytes = s->geo.capacity;
    o->data_bytes = (uint64_t)s->geo.num_slabs * s->geo.slab_size;
    o->block_size = s->geo.block_size;
    o->slab_size = s->geo.slab_size;
    o->slabs_total = s->geo.num_slabs;
    o->max_objects = s->geo.max_objects;
    o->index_bytes = l3_index_capacity(&s->index) * sizeof(l3_index_entry);
    o->puts = atomic_load(&s->puts);
    o->put_keys_written = atomic_load(&s->put_written);
    o->put_keys_existing = atomic_load(&s->put_existing);
    o->put_keys_rejected = atomic_load(&s->put_rejected);
    o->gets = atomic_load(&s->gets);
    o->get_hits = atomic_load(&s->get_hits);
    o->get_misses = atomic_load(&s->get_misses);
    if (s->engine) {
        l3_io_stats *io = l3_io_engine_stats(s->engine);
        o->bytes_written = atomic_load(&io->bytes_written);
        o->bytes_read = atomic_load(&io->bytes_read);
        o->io_fixed = atomic_load(&io->fixed);
        o->io_unfixed = atomic_load(&io->unfixed);
        o->io_short_retries = atomic_load(&io->short_retries);
        o->io_eagain_retries = atomic_load(&io->eagain_retries);
        o->io_errors = atomic_load(&io->errors);
        o->io_timeouts = atomic_load(&io->timeouts);
        o->io_faults = l3_io_engine_faults(s->engine);
        o->engine = l3_engine_name(l3_io_engine_kind(s->engine));
        o->host_fixed = l3_io_engine_host_fixed(s->engine);
        o->broken = l3_io_engine_broken(s->engine);
    } else {
        o->engine = "closed";
    }
    o->evictions = atomic_load(&s->evictions);
    o->evicted_objects = atomic_load(&s->evicted_objects);
    o->checksum_failures = atomic_load(&s->checksum_failures);
    o->stale_reads = atomic_load(&s->stale_reads);
    o->unaligned_ios = atomic_load(&s->unaligned_ios);
    o->device_max_segments = s->max_segments;
    o->recovered_objects = s->sh->recovered_objects;
    o->opened_from_checkpoint = s->sh->opened_from_checkpoint;
    o->open_seconds = s->open_seconds;
    o->broken = o->broken || atomic_load(&s->fatal);
    o->epoch = s->sh->sb.epoch;
    o->attached_processes = (uint32_t)l3_shm_attached(s, NULL, 0);
    l3_slab_lock(s);
    o->reserved_slots = s->sh->reserved;
    l3_slab_unlock(s);
}

char *l3_slab_stats_to_json(const l3_slab_stats *st)
{
    json_t *o = json_object();
#define U(name) json_object_set_new(o, #name, json_integer((json_int_t)st->name))
    U(objects); U(payload_bytes); U(capacity_bytes); U(data_bytes); U(block_size); U(slab_size);
    U(slabs_total); U(slabs_free); U(slabs_open); U(slabs_sealed); U(max_objects); U(index_bytes);
    U(puts); U(put_keys_written); U(put_keys_existing); U(put_keys_rejected);
    U(gets); U(get_hits); U(get_misses); U(bytes_written); U(bytes_read);
    U(evictions); U(evicted_objects); U(checksum_failures); U(stale_reads); U(unaligned_ios);
    U(io_fixed); U(io_unfixed); U(io_short_retries); U(io_eagain_retries); U(io_errors);
    U(io_timeouts); U(io_faults);
    U(recovered_objects); U(epoch); U(attached_processes); U(reserved_slots); U(device_max_segments);
#undef U
    json_object_set_new(o, "opened_from_checkpoint", json_boolean(st->opened_from_checkpoint));
    json_object_set_new(o, "open_seconds", json_real(st->open_seconds));
    json_object_set_new(o, "engine", json_string(st->engine ? st->engine : ""));
    json_object_set_new(o, "host_fixed", json_boolean(st->host_fixed));
    json_object_set_new(o, "broken", json_boolean(st->broken));
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(o);
    return text;
}

l3_status l3_slabstore_register_host(l3_slabstore *s, l3_host_buffer host, l3_error *err)
{
    return slab_register_host(&s->base, host, err);
}

void l3_slabstore_set_fault(l3_slabstore *s, const l3_io_fault *fault)
{
    if (s->engine)
        l3_io_engine_set_fault(s->engine, fault);
}

int l3_slabstore_attached(l3_slabstore *s, int32_t *pids, int max)
{
    l3_slab_lock(s);
    l3_shm_reap_dead(s);
    l3_slab_unlock(s);
    return l3_shm_attached(s, pids, max);
}
