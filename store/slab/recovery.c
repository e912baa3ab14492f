/* The slab store's recovery (recovery.h): the index checkpoint
 * (checkpoint.c) written at a clean close and read at the next open, and
 * the scan of slab summaries and object headers that rebuilds the index
 * after a crash. What is live is decided by the
 * rulebook (rules.h), as in l3fsck. */
#include "recovery.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "bulk.h"
#include "checkpoint.h"
#include "l3_crc32c.h"
#include "l3_pool.h"
#include "meta.h"
#include "readahead.h"
#include "rules.h"
#include "summary.h"

#define SCAN_CHUNK (1u << 20)

/* The devices online now (a bit each). */
static uint32_t online_devices(const l3_slabstore *s)
{
    uint32_t m = 0;
    for (uint32_t d = 0; d < s->geo.num_devices; d++)
        m |= s->sh->dev_state[d] == DEV_OK ? 1u << d : 0;
    return m;
}

/* ---- the crash scan ---- */

typedef struct scan_state {
    uint64_t max_seq, dropped;
    uint64_t torn;          /* live headers whose payload did not check */
    uint64_t summarized;    /* slabs indexed from their summary */
} scan_state;

/* Whether the object at `slot_off` is a whole copy of `size` payload
 * bytes and sealed crc `crc` (l3_object_image_checks). */
static bool object_checks(l3_slabstore *s, uint64_t slot_off, uint32_t size, uint32_t crc)
{
    uint32_t b = s->geo.block_size, hb = s->geo.header_bytes;
    uint32_t len = hb + (uint32_t)l3_round_up(size, b);
    uint8_t *tmp = l3_meta_alloc(b, len);
    l3_error perr;
    bool ok = tmp && l3_meta_io(s, false, tmp, len, slot_off, &perr) == L3_OK &&
              l3_object_image_checks(tmp, hb, size, crc);
    free(tmp);
    return ok;
}

/* Whether the object (sequence `seq`, `size` bytes of sealed crc `crc`) at
 * slot_off is served over the indexed copy `old` of its key, by the rules:
 * the higher sequence unless its payload is torn (`checked`: its payload
 * was checked where it was read, not read again). */
static bool beats(l3_slabstore *s, uint64_t seq, uint64_t slot_off, uint32_t size, uint32_t crc, bool checked,
                  l3_index_entry old)
{
    bool mine = seq > old.seq;
    bool higher_checks = mine ? checked || object_checks(s, slot_off, size, crc)
                              : object_checks(s, l3_slot_offset(&s->geo, old.slab, s->slabs[old.slab].payload_blocks,
                                                                old.slot), old.size, old.crc);
    return l3_dup_wins(seq, old.seq, higher_checks);
}

/* Publish `c`, its key absent from the index (under the lock), with the
 * namespace of `key` (its key or its namespace's text; NULL: c.ns is
 * set). */
static void publish_new(l3_slabstore *s, l3_index_entry c, const char *key, size_t len, scan_state *ss)
{
    int ns = key ? l3_alloc_ns_intern(s, key, len) : c.ns;
    c.ns = (uint16_t)(ns < 0 ? 0 : ns);
    if (ns < 0 || !l3_entry_publish(s, &c))
        ss->dropped++;
}

/* Index the live object `c` (at slot_off, its payload `checked` already
 * or not; `key` its key or namespace text, to intern the namespace, or
 * NULL: c.ns is set) unless a live copy of its key already indexed beats
 * it. */
static void offer(l3_slabstore *s, l3_index_entry c, const char *key, size_t len, uint64_t slot_off, bool checked,
                  scan_state *ss)
{
    l3_key_id id = { .hash = c.hash, .len = c.key_len };
    l3_slab_lock(s);
    l3_index_entry *old = l3_index_find(&s->index, id);
    if (old) {
        l3_index_entry copy = *old;
        l3_slab_unlock(s);
        if (!beats(s, c.seq, slot_off, c.size, c.crc, checked, copy))
            return;
        l3_slab_lock(s);
        if ((old = l3_index_find(&s->index, id)))
            l3_entry_unpublish(s, old);
    }
    publish_new(s, c, key, len, ss);
    l3_slab_unlock(s);
}

/* Index one slot (its header h, its payload read with it) if the rules
 * say it is live, its payload checks, and it beats any other live header
 * of its key. */
static void scan_header(l3_slabstore *s, uint32_t i, uint32_t k, const l3_object_header *h, const uint8_t *payload,
                        uint64_t slot_off, scan_state *ss)
{
    l3_slot_verdict v = l3_slot_judge(&s->geo, s->sh->sb.epoch, &s->table[i], i, k, h, s->journal);
    if (v == L3_SLOT_CORRUPT || v == L3_SLOT_STALE)
        ss->dropped++;
    if (v != L3_SLOT_LIVE)
        return;
    if (h->seq >= L3_SEQ_LIMIT) { /* sealed, but no store writes it (l3_meta_seq_lease): an entry cannot hold it */
        ss->dropped++;
        return;
    }
    if (h->seq > ss->max_seq)
        ss->max_seq = h->seq; /* later puts go above every live header, served or not */
    /* A header proves only that its own write landed: the payload's may
     * not have (a put cut short by the crash). Only a whole copy is
     * indexed, so that a put of its key never takes a torn copy for one
     * already stored (and skips writing it). */
    if (l3_crc32c(0, payload, h->size) != h->payload_crc) {
        ss->torn++;
        return;
    }
    l3_key_id id = l3_key_identity(h->key, h->key_len);
    l3_index_entry e = { .hash = id.hash, .seq = h->seq, .crc = l3_crc_seal(h->payload_crc, id.check),
                         .slab = i, .slot = k, .size = h->size, .gen = l3_index_gen(h->slab_gen), .key_len = id.len,
                         .flags = h->flags & L3_OBJ_SEGMENTED ? L3_ENTRY_SEGMENTED : 0 };
    offer(s, e, h->key, h->key_len, slot_off, true, ss); /* (its payload checked above) */
}

/* The index entry of summary entry k (of slab i, head h). */
static l3_index_entry entry_of(const l3_summary_head *h, const l3_summary_entry *e, uint32_t i, uint32_t k)
{
    return (l3_index_entry){ .hash = e->hash, .seq = e->seq, .crc = l3_crc_seal(e->crc, e->check), .slab = i,
                             .slot = k, .size = e->size, .gen = l3_index_gen(h->gen), .key_len = e->key_len,
                             .flags = e->flags & L3_SUMMARY_SEGMENTED ? L3_ENTRY_SEGMENTED : 0 };
}

/* Summaries' live entries gathered for one sweep of the index: sorted
 * by the slot their probe starts at, they are published in table order,
 * each near the one before, not at random over a table of hundreds of
 * megabytes (a TLB and a cache miss each). */
typedef struct gather {
    l3_index_entry *e;
    size_t n, cap;
} gather;

/* Entries a gather holds: one per 8 slots of the index (a sweep then
 * touches most of its pages), at most 2^20 (48 MB; two gathers and the
 * scratch: 144 MB while a scan of ten million objects runs). */
static size_t gather_cap(l3_slabstore *s)
{
    uint64_t want = l3_index_capacity(&s->index) / 8;
    return want < 4096 ? 4096 : want > (1u << 20) ? (1u << 20) : (size_t)want;
}

/* Sort the gathered entries by the top 8 bits of their hash (their home
 * slot's order: l3_index_home is monotone in the hash), one radix pass
 * through `scratch` and back: each of the 256 runs then falls in 1/256
 * of the index, a window the cache and the TLB hold. */
static void gather_sort(gather *g, l3_index_entry *scratch)
{
    size_t count[257] = { 0 };
    for (size_t k = 0; k < g->n; k++)
        count[(g->e[k].hash >> 56) + 1]++;
    for (int b = 0; b < 256; b++)
        count[b + 1] += count[b];
    for (size_t k = 0; k < g->n; k++)
        scratch[count[g->e[k].hash >> 56]++] = g->e[k];
    memcpy(g->e, scratch, g->n * sizeof *g->e);
}

/* Publish the gathered entries in table order under one hold of the lock;
 * those whose key is indexed already (a copy in another slab) are then
 * offered one by one, by the duplicate rule (kept in `scratch`). */
static void gather_flush(l3_slabstore *s, gather *g, l3_index_entry *scratch, scan_state *ss)
{
    gather_sort(g, scratch);
    size_t dups = 0;
    l3_slab_lock(s);
    for (size_t k = 0; k < g->n; k++) {
        l3_index_entry *c = &g->e[k];
        if (k + 8 < g->n) { /* its index slot and its slot id (in slab order: at random here) */
            l3_index_prefetch(&s->index, g->e[k + 8].hash);
            __builtin_prefetch(&l3_slab_slot_ids(s, g->e[k + 8].slab)[g->e[k + 8].slot], 1);
        }
        l3_index_put put = l3_entry_publish_unique(s, c);
        if (put == L3_INDEX_PRESENT)
            scratch[dups++] = *c;
        ss->dropped += put == L3_INDEX_FULL;
    }
    l3_slab_unlock(s);
    for (size_t k = 0; k < dups; k++) {
        const l3_index_entry *c = &scratch[k];
        uint32_t pb = s->slabs[c->slab].payload_blocks;
        offer(s, *c, NULL, 0, l3_slot_offset(&s->geo, c->slab, pb, c->slot), false, ss);
    }
    g->n = 0;
}

/* Namespace ids of summaries' texts, as interned: most summaries name
 * the same few, and interning takes the lock a flush holds long. Each id
 * handed out is pinned (its `reserved` held) until the scan's entries
 * are published: an id interned for entries still in a gather has no
 * objects yet, and another namespace would otherwise take its slot over
 * (l3_alloc_ns_intern reuses a slot without objects), its keys then
 * indexed under that other namespace's text (a removal of theirs would
 * miss them, one of the other's would take them). */
#define NS_CACHE 64
typedef struct ns_cache {
    uint16_t len[NS_CACHE];
    const char *text[NS_CACHE]; /* the store's own copy (s->ns) */
    int id[NS_CACHE];
    int n;
    uint8_t pinned[L3_MAX_NAMESPACES]; /* ids (less one) whose `reserved` this scan holds */
} ns_cache;

/* The id of namespace text `t` (len bytes), interned if new, and pinned;
 * -1 when the namespace table is full. */
static int ns_id(l3_slabstore *s, ns_cache *c, const char *t, uint16_t len)
{
    for (int k = 0; k < c->n; k++)
        if (c->len[k] == len && memcmp(c->text[k], t, len) == 0)
            return c->id[k];
    l3_slab_lock(s);
    int id = l3_alloc_ns_intern(s, t, len);
    if (id > 0 && !c->pinned[id - 1]) {
        c->pinned[id - 1] = 1;
        s->ns[id - 1].reserved++;
    }
    l3_slab_unlock(s);
    if (id > 0 && c->n < NS_CACHE) {
        c->len[c->n] = len;
        c->text[c->n] = s->ns[id - 1].text;
        c->id[c->n++] = id;
    }
    return id;
}

/* Give back the namespaces ns_id pinned (their entries published). */
static void ns_unpin(l3_slabstore *s, ns_cache *c)
{
    l3_slab_lock(s);
    for (uint32_t i = 0; i < L3_MAX_NAMESPACES; i++)
        if (c->pinned[i]) {
            L3_ASSERT(s->ns[i].reserved > 0);
            s->ns[i].reserved--;
        }
    l3_slab_unlock(s);
}

/* The summaries of the slabs to scan: a thread reads them in batches of
 * SUMMARY_BATCH at once (a summary is under a megabyte: one at a time,
 * the device waits on each), judges them and gathers their live entries
 * into one gather while this thread publishes the other: reading and
 * publishing overlap. */
#define SUMMARY_BATCH 4
typedef struct summary_scan {
    l3_slabstore *s;
    const uint32_t *slabs;
    size_t n;
    uint8_t *buf[SUMMARY_BATCH], *verdicts[SUMMARY_BATCH];
    uint32_t *rest;          /* the slabs without a usable summary (for their headers) */
    size_t num_rest;
    gather g[2];             /* gather k % 2 is the k-th handed over */
    l3_index_entry *scratch; /* the publishing thread's, for sorting and duplicates */
    l3_progress handed, published; /* gathers handed over (the reader's), published (this thread's) */
    ns_cache names;
    scan_state own;          /* the reader's max_seq, drops and summaries, added in at the end */
    bool retired;            /* every read was reaped (set before `handed` stops) */
} summary_scan;

/* Gather slab i's live entries from its read and judged summary (the
 * reader's), handing the gather over whenever it is full. */
static void gather_summary(summary_scan *r, uint32_t i, const uint8_t *buf, const uint8_t *verdicts)
{
    const l3_summary_head *h = (const l3_summary_head *)buf;
    const l3_summary_entry *ents = (const l3_summary_entry *)(buf + L3_SUMMARY_ENTRIES_AT);
    int ns[L3_SUMMARY_NS + 1] = { 0 };
    for (uint32_t k = 0; k < h->num_ns && k < L3_SUMMARY_NS; k++)
        ns[k + 1] = ns_id(r->s, &r->names, h->ns_text[k], h->ns_len[k]);
    for (uint32_t k = 0; k < h->nslots; k++) {
        const l3_summary_entry *e = &ents[k];
        if (verdicts[k] != L3_SLOT_LIVE)
            continue;
        if (e->seq >= L3_SEQ_LIMIT) { /* (as scan_header) */
            r->own.dropped++;
            continue;
        }
        if (e->seq > r->own.max_seq)
            r->own.max_seq = e->seq;
        if (e->ns > L3_SUMMARY_NS || ns[e->ns] < 0) {
            r->own.dropped++; /* the namespace table is full */
            continue;
        }
        gather *g = &r->g[r->handed.count % 2];
        if (g->n == g->cap) { /* hand it over; the other one, once published, is next */
            l3_progress_set(&r->handed, r->handed.count + 1, false);
            l3_progress_wait(&r->published, r->handed.count - 1);
            g = &r->g[r->handed.count % 2];
        }
        g->e[g->n] = entry_of(h, e, i, k);
        g->e[g->n++].ns = (uint16_t)ns[e->ns];
    }
    r->own.summarized++;
}

/* Read and judge summaries j.. (m of them); gather the usable ones', list
 * the others (unreadable, or none that checks for the slab's record and
 * decides every slot alone) for their headers. */
static void read_summary_batch(summary_scan *r, l3_io_ctx *ctx, size_t j, size_t m)
{
    l3_slabstore *s = r->s;
    const l3_geometry *g = &s->geo;
    l3_io_req reqs[SUMMARY_BATCH];
    for (size_t k = 0; k < m; k++) {
        uint32_t i = r->slabs[j + k], pb = s->table[i].payload_blocks;
        reqs[k] = (l3_io_req){ .write = false, .offset = l3_summary_offset(g, i, pb), .buf = r->buf[k],
                               .len = (uint32_t)l3_summary_len(g, pb) };
    }
    bool retired = true;
    l3_error err;
    l3_status st = l3_io_run(s->engine, ctx, reqs, m, s->opt.io_timeout, &retired, &err);
    r->retired = r->retired && retired;
    for (size_t k = 0; k < m; k++) {
        uint32_t i = r->slabs[j + k];
        if (st == L3_OK && reqs[k].res == (int32_t)reqs[k].len &&
            l3_summary_usable(g, r->buf[k], i, &s->table[i], s->journal, r->verdicts[k]))
            gather_summary(r, i, r->buf[k], r->verdicts[k]);
        else
            r->rest[r->num_rest++] = i;
    }
}

static void *read_summaries(void *arg)
{
    summary_scan *r = arg;
    l3_io_ctx *ctx = l3_io_acquire(r->s->engine);
    for (size_t j = 0; j < r->n && r->retired; j += SUMMARY_BATCH)
        read_summary_batch(r, ctx, j, r->n - j < SUMMARY_BATCH ? r->n - j : SUMMARY_BATCH);
    l3_io_release(r->s->engine, ctx);
    l3_progress_set(&r->handed, r->handed.count + 1, true); /* the last, maybe empty */
    return NULL;
}

/* Allocate the scan's buffers and gathers; false when out of memory. */
static bool summary_scan_init(summary_scan *r)
{
    const l3_geometry *g = &r->s->geo;
    size_t cap = gather_cap(r->s), bytes = cap * sizeof(l3_index_entry);
    r->g[0] = (gather){ .e = l3_pool_alloc(bytes, NULL), .cap = cap }; /* mapped: freed back whole */
    r->g[1] = (gather){ .e = l3_pool_alloc(bytes, NULL), .cap = cap };
    r->scratch = l3_pool_alloc(bytes, NULL);
    bool ok = r->rest && r->g[0].e && r->g[1].e && r->scratch;
    for (int b = 0; b < SUMMARY_BATCH; b++) {
        r->buf[b] = l3_meta_alloc(g->block_size, l3_summary_bytes(g, g->max_slots));
        r->verdicts[b] = malloc(g->max_slots ? g->max_slots : 1);
        ok = ok && r->buf[b] && r->verdicts[b];
    }
    return ok;
}

/* Free them, unless a read was not reaped (the buffers stay: it may land). */
static void summary_scan_free(summary_scan *r)
{
    if (!r->retired) {
        atomic_store(&r->s->fatal, true);
        return;
    }
    for (int b = 0; b < SUMMARY_BATCH; b++) {
        free(r->buf[b]);
        free(r->verdicts[b]);
    }
    size_t bytes = r->g[0].cap * sizeof(l3_index_entry);
    l3_pool_free(r->g[0].e, bytes);
    l3_pool_free(r->g[1].e, bytes);
    l3_pool_free(r->scratch, bytes);
}

/* Index the slabs `slabs` from their summaries; those without a usable
 * one go to `rest` (*num_rest), for their headers. */
static l3_status scan_summaries(l3_slabstore *s, const uint32_t *slabs, size_t n, uint32_t *rest, size_t *num_rest,
                                scan_state *ss, l3_error *err)
{
    summary_scan r = { .s = s, .slabs = slabs, .n = n, .rest = rest, .handed = L3_PROGRESS_INIT,
                       .published = L3_PROGRESS_INIT, .retired = true };
    pthread_t t;
    bool ok = summary_scan_init(&r) && pthread_create(&t, NULL, read_summaries, &r) == 0;
    for (uint64_t k = 1; ok && l3_progress_wait(&r.handed, k) >= k; k++) {
        gather_flush(s, &r.g[(k - 1) % 2], r.scratch, ss);
        l3_progress_set(&r.published, k, false);
    }
    if (ok)
        pthread_join(t, NULL);
    ns_unpin(s, &r.names); /* every gather published: their namespaces have their objects */
    summary_scan_free(&r);
    *num_rest = r.num_rest;
    ss->dropped += r.own.dropped;
    ss->summarized += r.own.summarized;
    ss->max_seq = r.own.max_seq > ss->max_seq ? r.own.max_seq : ss->max_seq;
    return ok ? L3_OK : l3_fail(err, L3_ENOMEM, "allocating the summary scan's buffers or thread");
}

/* Read all of slab i into buf: one sequential read in 1 MiB requests. */
static l3_status read_whole(l3_slabstore *s, l3_io_ctx *ctx, l3_io_req *reqs, uint32_t i, uint8_t *buf,
                            bool *retired, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    size_t chunks = (size_t)(g->slab_size / SCAN_CHUNK);
    uint64_t base_off = l3_slot_offset(g, i, s->slabs[i].payload_blocks, 0);
    for (size_t c = 0; c < chunks; c++)
        reqs[c] = (l3_io_req){ .write = false, .offset = base_off + c * SCAN_CHUNK, .buf = buf + c * SCAN_CHUNK,
                               .len = SCAN_CHUNK };
    l3_status st = l3_io_run(s->engine, ctx, reqs, chunks, s->opt.io_timeout, retired, err);
    for (size_t c = 0; c < chunks && st == L3_OK; c++)
        if (reqs[c].res != (int32_t)SCAN_CHUNK)
            st = l3_fail(err, L3_EIO, "reading slab %u: %s", i, strerror(reqs[c].res < 0 ? -reqs[c].res : EIO));
    return st;
}

/* Judge every slot of slab i from its image. */
static void parse_whole(l3_slabstore *s, uint32_t i, const uint8_t *buf, scan_state *ss)
{
    slab_info *sl = &s->slabs[i];
    uint64_t slot_bytes = l3_slot_bytes(&s->geo, sl->payload_blocks);
    uint64_t base_off = l3_slot_offset(&s->geo, i, sl->payload_blocks, 0);
    uint32_t hb = s->geo.header_bytes;
    for (uint32_t k = 0; k < sl->nslots; k++)
        scan_header(s, i, k, (const l3_object_header *)(buf + k * slot_bytes), buf + k * slot_bytes + hb,
                    base_off + k * slot_bytes, ss);
}

/* The slabs judged by their headers, read whole ahead (readahead.h: a
 * thread, two buffers; every live header's payload is checked, so each
 * is read with it) while this thread judges the one before: reading and
 * judging overlap. */
typedef struct whole_read {
    l3_slabstore *s;
    const uint32_t *slabs;
    l3_io_ctx *ctx;
    l3_io_req *reqs;
    bool retired;           /* every read was reaped (the reader's: seen after the stop) */
} whole_read;

static l3_status read_slab(void *arg, size_t j, void *buf, l3_error *err)
{
    whole_read *d = arg;
    bool retired = true;
    l3_status st = read_whole(d->s, d->ctx, d->reqs, d->slabs[j], buf, &retired, err);
    d->retired = d->retired && retired;
    return st;
}

/* Judge the slabs as the reader lands them. */
static l3_status scan_whole(l3_slabstore *s, const uint32_t *slabs, size_t n, scan_state *ss, l3_error *err)
{
    /* The buffers on huge pages where the kernel gives them (l3_pool_alloc):
     * a request then needs a DMA segment per 2 MiB, not per 4 KiB. */
    whole_read d = { .s = s, .slabs = slabs, .retired = true,
                     .reqs = calloc((size_t)(s->geo.slab_size / SCAN_CHUNK), sizeof(l3_io_req)) };
    l3_readahead_spec spec = { .items = n, .buf_bytes = (size_t)s->geo.slab_size, .ring = 2, .threads = 1,
                               .read = read_slab, .arg = &d };
    l3_readahead *ra = NULL;
    if (!d.reqs)
        return l3_fail(err, L3_ENOMEM, "allocating a scan batch");
    d.ctx = l3_io_acquire(s->engine);
    if (l3_readahead_start(&spec, &ra, NULL) != L3_OK) {
        l3_io_release(s->engine, d.ctx);
        free(d.reqs);
        return l3_fail(err, L3_ENOMEM, "allocating the scan's buffers or thread");
    }
    const uint8_t *buf;
    for (size_t j = 0; j < n && (buf = l3_readahead_get(ra, j)); j++) {
        parse_whole(s, slabs[j], buf, ss);
        l3_readahead_release(ra, j);
    }
    l3_readahead_stop(ra);
    l3_status st = l3_readahead_failure(ra, err);
    if (!d.retired)
        atomic_store(&s->fatal, true); /* (the buffers stay mapped: reads may still land) */
    l3_readahead_free(ra, !d.retired);
    l3_io_release(s->engine, d.ctx);
    free(d.reqs);
    return st;
}

/* Start faulting the index and slot table in on threads when the slabs
 * to scan hold enough objects to touch nearly all their pages: a fault
 * per page as entries land costs more (the reads go on meanwhile). */
static void prefault(l3_slabstore *s, const uint32_t *slabs, size_t n, l3_populate *pop)
{
    uint64_t slots = 0;
    for (size_t j = 0; j < n; j++)
        slots += s->slabs[slabs[j]].nslots;
    l3_populate_start(s, slots, pop);
}

/* Rebuild the index of every used slab on the devices of `mask`: from its
 * summary where it has one a crash scan uses, else from its headers. */
static l3_status scan(l3_slabstore *s, uint32_t mask, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    l3_slab_lock(s);
    l3_status st = l3_alloc_adopt_slabs(s, mask, err);
    mask &= online_devices(s);
    l3_slab_unlock(s);
    if (st != L3_OK)
        return st;
    scan_state ss = { .max_seq = 0 };
    l3_populate pop = { .started = 0 };
    uint32_t *used = calloc(g->num_slabs, sizeof *used), *rest = calloc(g->num_slabs, sizeof *rest);
    size_t num_used = 0, num_rest = 0;
    if (!used || !rest)
        st = l3_fail(err, L3_ENOMEM, "allocating a scan batch");
    for (uint32_t i = 0; i < g->num_slabs && st == L3_OK; i++)
        if (s->slabs[i].disk_used && (mask >> l3_slab_device(g, i) & 1))
            used[num_used++] = i;
    if (st == L3_OK)
        prefault(s, used, num_used, &pop);
    if (st == L3_OK && g->summaries && num_used) /* (no reader thread for no slab) */
        st = scan_summaries(s, used, num_used, rest, &num_rest, &ss, err);
    size_t num_whole = g->summaries ? num_rest : num_used;
    if (st == L3_OK && num_whole)
        st = scan_whole(s, g->summaries ? rest : used, num_whole, &ss, err);
    l3_populate_join(&pop);
    /* The slabs read by their headers (sealed now) get their summary, so
     * that the next crash scan reads it instead: once what they hold is
     * flushed (a crash may have left it in the device's cache). */
    bool settle = st == L3_OK && g->summaries && !s->opt.read_only && num_rest;
    l3_error ferr;
    if (settle && l3_meta_flush(s, mask, &ferr) != L3_OK) {
        l3_log("warning", "%s: flushing after the scan: %s (the slabs it read by their headers keep no summary)",
               s->path, ferr.msg);
        settle = false;
    }
    for (size_t j = 0; settle && j < num_rest; j++)
        l3_summary_settle(s, rest[j]);
    free(used);
    free(rest);
    if (st != L3_OK)
        return st;
    s->sh->recovered_objects = s->index.meta->count;
    s->sh->recovered_summaries = ss.summarized;
    if (ss.max_seq + 1 > atomic_load(&s->sh->seq))
        atomic_store(&s->sh->seq, ss.max_seq + 1);
    if (ss.dropped || ss.torn)
        l3_log("info", "%s: recovery dropped objects: %llu torn (a payload the crash cut short), %llu stale "
                       "or unverifiable", s->path, (unsigned long long)ss.torn, (unsigned long long)ss.dropped);
    return L3_OK;
}

/* ---- open and close ---- */

/* A damaged journal record and no checkpoint that proves what is live
 * (l3_journal_lost_removal): nothing of the epoch is served. The epoch is
 * bumped (every older object dead, as remove_by_prefix("") does), then
 * the damaged records are zeroed: a crash between the two reaches the
 * same verdict again. Read-only, in memory alone. */
static l3_status drop_unprovable(l3_slabstore *s, l3_error *err)
{
    l3_log("error", "%s: a namespace journal record is damaged and no checkpoint proves what is live: "
                    "every object is dropped (a removal that cannot be read may have covered any of them)",
           s->path);
    l3_status st = l3_meta_bump_epoch(s, err);
    if (st == L3_OK && !s->opt.read_only)
        st = l3_meta_clear_damaged_journal(s, err);
    return st;
}

l3_status l3_recovery_load(l3_slabstore *s, l3_error *err)
{
    l3_status st;
    if (!s->formatted && (st = l3_meta_read_tables(s, err)) != L3_OK)
        return st;
    bool from_checkpoint = false;
    uint32_t online = online_devices(s), behind = s->behind_mask & online;
    if (behind)
        l3_log("warning", "store %s: %u device(s) missed the last session (mask 0x%x): their slabs are "
                          "scanned", s->path, (unsigned)__builtin_popcount(behind), behind);
    s->ckpt_skip = ~online | behind;
    bool damaged = l3_journal_damaged(s->journal);
    /* A device behind the checkpoint is scanned by rules a damaged
     * journal cannot decide: then the checkpoint is not used either. */
    if (s->sh->sb.clean && !(damaged && behind)) {
        st = l3_checkpoint_load(s, err);
        if (st == L3_OK)
            from_checkpoint = true;
        else if (st == L3_ECORRUPT)
            l3_log("warning", "%s: the checkpoint is unusable (%s); rebuilding the index from the "
                              "slabs' summaries and headers", s->path, err ? err->msg : "");
        else
            return st;
    }
    if (l3_journal_lost_removal(s->journal, from_checkpoint) && (st = drop_unprovable(s, err)) != L3_OK)
        return st;
    if (damaged && from_checkpoint)
        l3_log("warning", "%s: a namespace journal record is damaged: the checkpoint decides what is served; "
                          "until l3fsck -y repairs it, a crash empties the store", s->path);
    if ((!from_checkpoint || behind) && (st = scan(s, from_checkpoint ? behind : UINT32_MAX, err)) != L3_OK)
        return st;
    uint64_t next = l3_journal_next_seq(s->journal, s->sh->sb.epoch);
    if (next > atomic_load(&s->sh->seq))
        atomic_store(&s->sh->seq, next); /* later objects outlive earlier removals */
    s->sh->opened_from_checkpoint = from_checkpoint;
    if (s->opt.read_only)
        return L3_OK;
    /* Dirty before the first change: a crash from here on rebuilds. */
    return l3_meta_mark_dirty(s, err);
}

l3_status l3_recovery_save(l3_slabstore *s, l3_error *err)
{
    if (s->opt.read_only)
        return L3_OK;
    uint32_t crc = 0;
    uint64_t bytes = 0;
    l3_status st = l3_checkpoint_save(s, &crc, &bytes, err);
    if (st != L3_OK)
        return st;
    return l3_meta_mark_clean(s, bytes, crc, (uint32_t)s->index.meta->count, err);
}
