/* l3fsck's slab pass (fsck_slabs.h): every used slab of a given device,
 * judged as a crash scan would judge it: by its summary where a crash
 * scan would use one (summaries read ahead on a thread), else by its
 * headers, each slot by the rulebook and its payload checked as a crash
 * scan checks it (the slab read whole); a summary checked against its
 * headers when both are read; --verify checks every payload. */
#include "fsck_slabs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aligned.h"
#include "fsck_io.h"
#include "fsck_pass.h"
#include "hash.h"
#include "l3_crc32c.h"
#include "l3_pool.h"
#include "readahead.h"

/* Add the object live by header h, if its key is this pass's: its key
 * kept for --list and -y, else its namespace's text. */
static void add_object(fsck *f, const l3_object_header *h, uint64_t offset)
{
    uint64_t hash = l3_hash64(h->key, h->key_len);
    if (!fsck_in_part(f, hash) || (f->num_objects == f->cap_objects && !fsck_grow_objects(f)))
        return;
    bool keep = f->list || f->repair;
    uint16_t nl = keep ? 0 : (uint16_t)l3_key_namespace_len(h->key, h->key_len);
    f->objects[f->num_objects++] = (fsck_object){
        .key = keep ? strndup(h->key, h->key_len) : NULL, .ns = nl ? fsck_intern_ns(f, h->key, nl) : NULL,
        .key_len = h->key_len, .slab = h->slab, .slot = h->slot, .size = h->size,
        .crc = l3_crc_seal(h->payload_crc, l3_crc32c(0, h->key, h->key_len)), .seq = h->seq, .offset = offset,
        .hash = hash, .live = true };
}

/* Where one slab's slots are read from: the whole slab in memory, or a
 * header buffer filled slot by slot. */
typedef struct slab_view {
    uint32_t slab;
    const l3_slab_record *r;
    uint8_t *whole;       /* the slab's bytes, or NULL */
    uint8_t *hdr;         /* one header (when not whole) */
    uint8_t *payload;     /* a payload buffer (not whole) */
    size_t payload_cap;
    bool by_headers;      /* the store's next open scans it by its headers (no summary it uses):
                             each payload checked, torn ones dropped */
} slab_view;

/* Whether a live object's payload checks. */
static bool payload_ok(fsck *f, slab_view *v, const l3_object_header *h, uint64_t off, uint64_t in_slab)
{
    uint32_t b = f->geo.block_size, hb = f->geo.header_bytes;
    if (v->whole)
        return l3_crc32c(0, v->whole + in_slab + hb, h->size) == h->payload_crc;
    size_t len = l3_round_up(h->size, b);
    if (len > v->payload_cap) {
        free(v->payload);
        v->payload = malloc(len);
        v->payload_cap = v->payload ? len : 0;
    }
    return v->payload && fsck_read(f, v->payload, len, off + hb) == 0 &&
           l3_crc32c(0, v->payload, h->size) == h->payload_crc;
}

/* Judge slot k of the slab in view by the rules. */
static void check_slot(fsck *f, slab_view *v, uint32_t k)
{
    const l3_geometry *g = &f->geo;
    uint64_t in_slab = (uint64_t)k * l3_slot_bytes(g, v->r->payload_blocks);
    uint64_t off = l3_slot_offset(g, v->slab, v->r->payload_blocks, k);
    const uint8_t *hb = v->whole ? v->whole + in_slab : v->hdr;
    if (!v->whole && fsck_read_bulk(f, v->hdr, g->header_bytes, off) < 0) {
        fsck_problem(f, false, "slab %u slot %u: unreadable header at offset %llu", v->slab, k, (unsigned long long)off);
        return;
    }
    const l3_object_header *h = (const l3_object_header *)hb;
    switch (l3_slot_judge(g, f->sb.epoch, v->r, v->slab, k, h, f->journal)) {
    case L3_SLOT_EMPTY: f->empty_slots++; return;
    case L3_SLOT_STALE: f->stale++; return;
    case L3_SLOT_DELETED: f->deleted++; return;
    case L3_SLOT_CORRUPT:
        f->corrupt_headers++;
        fsck_problem(f, true, "slab %u slot %u: corrupt object header at offset %llu", v->slab, k,
                     (unsigned long long)off);
        fsck_zero_header(f, off, "a corrupt object header zeroed");
        return;
    case L3_SLOT_LIVE: break;
    }
    if ((f->verify || v->by_headers) && !payload_ok(f, v, h, off, in_slab)) {
        if (v->by_headers) {
            f->torn++; /* a put the crash cut short: a crash scan drops it too */
            return;
        }
        f->corrupt_payloads++;
        fsck_problem(f, true, "object %.*s (slab %u slot %u, payload at offset %llu): payload checksum mismatch",
                     (int)(h->key_len > 120 ? 120 : h->key_len), h->key, v->slab, k,
                     (unsigned long long)(off + g->header_bytes));
        fsck_zero_header(f, off, "an object with a corrupt payload dropped");
        return;
    }
    add_object(f, h, off);
}

/* Whether summary entry k (live by the rules) names the object whose
 * header is live at its slot: x, or NULL when no header is. */
static bool entry_names(const l3_summary_entry *e, const fsck_object *x)
{
    return x && x->seq == e->seq && x->hash == e->hash && x->size == e->size && x->crc == l3_crc_seal(e->crc, e->check);
}

/* Slab i's summary into a buffer (free() it), its entries' verdicts
 * after the summary's bytes (*verdicts), or NULL when a crash scan would
 * not use it: then its headers decide, as in a crash scan. */
static uint8_t *usable_summary(fsck *f, uint32_t i, const uint8_t **verdicts)
{
    const l3_geometry *g = &f->geo;
    uint32_t pb = f->table[i].payload_blocks;
    size_t len = l3_summary_len(g, pb);
    uint8_t *buf = g->summaries ? l3_aligned_alloc(4096, l3_image_summary_room(g), false) : NULL;
    if (!buf || fsck_read_bulk(f, buf, len, l3_summary_offset(g, i, pb)) < 0 ||
        !(*verdicts = l3_image_summary_verdicts(g, buf, i, f->table, f->journal))) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Take slab i's objects of this pass's keys from its summary, read into
 * buf, as a crash scan would, without reading its headers; false when it
 * has no summary a crash scan uses. */
static bool take_summary(fsck *f, uint32_t i, uint8_t *buf)
{
    const uint8_t *verdicts = buf ? l3_image_summary_verdicts(&f->geo, buf, i, f->table, f->journal) : NULL;
    if (!verdicts)
        return false;
    const l3_summary_head *h = (const l3_summary_head *)buf;
    const l3_summary_entry *ents = (const l3_summary_entry *)(buf + L3_SUMMARY_ENTRIES_AT);
    for (uint32_t k = 0; k < h->nslots; k++) {
        const l3_summary_entry *e = &ents[k];
        if (verdicts[k] != L3_SLOT_LIVE || !fsck_in_part(f, e->hash))
            continue;
        if (f->num_objects == f->cap_objects && !fsck_grow_objects(f))
            break;
        f->objects[f->num_objects++] = (fsck_object){
            .ns = e->ns ? fsck_intern_ns(f, h->ns_text[e->ns - 1], h->ns_len[e->ns - 1]) : NULL,
            .key_len = e->key_len, .slab = i, .slot = k, .size = e->size, .crc = l3_crc_seal(e->crc, e->check),
            .seq = e->seq, .offset = l3_slot_offset(&f->geo, i, h->payload_blocks, k), .hash = e->hash,
            .live = true };
    }
    f->summaries++;
    return true;
}

/* Check slab i's summary (buf, its verdicts), one a crash scan would
 * use, against its headers (its objects live by header are
 * objects[first...], in slot order): every live entry must name the live
 * object at its slot, and an object no entry names (written, never
 * published: its put did not complete) is not served, as a crash scan
 * would not serve it. */
static void check_summary(fsck *f, uint32_t i, size_t first, uint8_t *buf, const uint8_t *verdicts)
{
    const l3_summary_head *h = (const l3_summary_head *)buf;
    const l3_summary_entry *ents = (const l3_summary_entry *)(buf + L3_SUMMARY_ENTRIES_AT);
    uint32_t wrong = 0, at = 0;
    size_t o = first, kept = first;
    for (uint32_t k = 0; k < h->nslots; k++) {
        bool live = verdicts[k] == L3_SLOT_LIVE;
        fsck_object *x = o < f->num_objects && f->objects[o].slot == k ? &f->objects[o++] : NULL;
        if (live && !entry_names(&ents[k], x) && !wrong++)
            at = k;
        if (x && live && entry_names(&ents[k], x))
            f->objects[kept++] = *x;
        else if (x) {
            free(x->key);
            f->stale++;
        }
    }
    f->num_objects = kept;
    f->summaries++;
    if (wrong) {
        fsck_problem(f, true, "slab %u's summary names %u object(s) its headers do not hold (first: slot %u)", i,
                     wrong, at);
        if (f->repair) {
            memset(buf, 0, f->geo.block_size);
            fsck_repair(f, buf, f->geo.block_size, l3_summary_offset(&f->geo, i, f->table[i].payload_blocks),
                   "a summary that disagrees with its headers dropped (a crash scan reads them)");
        }
    }
}

static void progress(fsck *f, uint64_t done, uint64_t total)
{
    if (!f->tty || f->json || !total)
        return;
    fprintf(stderr, "\r%s: %llu/%llu slots (%llu%%)", f->verify ? "verifying" : "scanning",
            (unsigned long long)done, (unsigned long long)total, (unsigned long long)(done * 100 / total));
    if (done == total)
        fputc('\n', stderr);
}

static void save_counts(fsck *f, fsck_counts *c, bool restore)
{
    fsck_counts now = { f->stale, f->corrupt_headers, f->corrupt_payloads, f->torn, f->deleted, f->empty_slots,
                        f->summaries, f->header_slabs };
    if (!restore) {
        *c = now;
        return;
    }
    f->stale = c->stale, f->corrupt_headers = c->corrupt_headers, f->corrupt_payloads = c->corrupt_payloads;
    f->torn = c->torn;
    f->deleted = c->deleted, f->empty_slots = c->empty_slots, f->summaries = c->summaries;
    f->header_slabs = c->header_slabs;
}

/* The slabs a pass reads: used, on a device given. */
static uint32_t *slabs_to_check(fsck *f, size_t *n)
{
    uint32_t *slabs = malloc((f->geo.num_slabs ? f->geo.num_slabs : 1) * sizeof *slabs);
    *n = 0;
    for (uint32_t i = 0; slabs && i < f->geo.num_slabs; i++)
        if (fsck_slab_present(f, i) && l3_slab_in_use(&f->table[i], i, f->sb.epoch))
            slabs[(*n)++] = i;
    return slabs;
}

/* A pass's summaries, read ahead on a thread into two buffers
 * (readahead.h): the slabs, and each read's result beside its buffer (0,
 * 1 for zeros past the end, or -errno): a summary that does not read is
 * judged by its headers, it does not end the reading. */
typedef struct summary_reads {
    fsck *f;
    const uint32_t *slabs;
    int rc[2];
} summary_reads;

/* Read the j-th slab's summary into buf (none when every header is read:
 * --headers reads the summary after them). */
static l3_status read_summary(void *arg, size_t j, void *buf, l3_error *err)
{
    summary_reads *r = arg;
    fsck *f = r->f;
    uint32_t i = r->slabs[j], pb = f->table[i].payload_blocks;
    (void)err;
    r->rc[j % 2] = f->headers || !f->geo.summaries
                       ? 0
                       : fsck_read_bulk(f, buf, l3_summary_len(&f->geo, pb), l3_summary_offset(&f->geo, i, pb));
    return L3_OK;
}

/* Judge slab i by its headers (no summary a crash scan uses, or every
 * header asked for); *done counts slots for the progress line. */
static void check_headers(fsck *f, slab_view *v, uint8_t **whole, uint32_t i, uint64_t *done, uint64_t total)
{
    const l3_geometry *g = &f->geo;
    v->slab = i;
    v->r = &f->table[i];
    uint32_t nslots = l3_slots_per_slab(g, v->r->payload_blocks);
    const uint8_t *verdicts = NULL;
    uint8_t *summary = usable_summary(f, i, &verdicts);
    v->by_headers = !summary && (f->scans || fsck_slab_behind(f, i));
    f->header_slabs++;
    /* Payloads to check, or headers a quarter of the slab or more: read it whole. */
    bool read_whole = f->verify || v->by_headers || (uint64_t)nslots * g->header_bytes * 4 >= g->slab_size;
    if (read_whole && !*whole) /* huge pages where the kernel gives them: fewer DMA segments */
        *whole = l3_pool_alloc(g->slab_size, NULL);
    v->whole = read_whole && *whole &&
                       fsck_read_bulk(f, *whole, g->slab_size, l3_slot_offset(g, i, v->r->payload_blocks, 0)) >= 0
                   ? *whole : NULL;
    size_t first = f->num_objects;
    for (uint32_t k = 0; k < nslots; k++, (*done)++) {
        if ((*done & 4095) == 0)
            progress(f, *done, total);
        check_slot(f, v, k);
    }
    if (summary)
        check_summary(f, i, first, summary, verdicts);
    free(summary);
}

void fsck_objects(fsck *f)
{
    const l3_geometry *g = &f->geo;
    for (size_t i = 0; i < f->num_objects; i++)
        free(f->objects[i].key);
    f->num_objects = 0;
    fsck_open_direct(f);
    size_t n;
    uint32_t *slabs = slabs_to_check(f, &n);
    slab_view v = { .hdr = l3_aligned_alloc(4096, g->header_bytes, false) };
    summary_reads reads = { .f = f, .slabs = slabs };
    size_t room = l3_image_summary_room(g);
    l3_readahead_spec spec = { .items = n, .buf_bytes = room ? room : 4096, .ring = 2, .threads = 1,
                               .read = read_summary, .arg = &reads };
    l3_readahead *ra = NULL;
    bool reading = slabs && v.hdr && l3_readahead_start(&spec, &ra, NULL) == L3_OK;
    uint8_t *whole = NULL;
    uint64_t total = fsck_used_slots(f), done = 0;
    for (size_t j = 0; reading && j < n; j++) {
        uint8_t *buf = l3_readahead_get(ra, j);
        int rc = buf ? reads.rc[j % 2] : -1;
        if (!f->headers && take_summary(f, slabs[j], rc == 0 ? buf : NULL))
            done += l3_slots_per_slab(g, f->table[slabs[j]].payload_blocks);
        else /* judged as a crash scan would: --headers reads them too */
            check_headers(f, &v, &whole, slabs[j], &done, total);
        l3_readahead_release(ra, j);
    }
    l3_readahead_free(ra, false);
    if (!reading)
        fsck_problem(f, false, "out of memory reading the slabs");
    progress(f, total, total);
    free(slabs);
    free(v.hdr);
    free(v.payload);
    l3_pool_free(whole, g->slab_size);
    save_counts(f, &f->first, f->part > 0); /* the slabs were counted by the first pass */
    f->superseded += fsck_supersede(f);
}
