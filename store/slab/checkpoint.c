/* The slab store's index checkpoint (checkpoint.h; FORMAT.md
 * "Checkpoint"). Its body: namespaces and slab fills, a bitmap of the
 * index table's used slots, then one packed record per entry in table
 * order. A load puts each entry back at its own slot (no probing: the
 * writer's table, slot for slot), checked as it lands, while a thread
 * reads the body through a ring of chunk buffers. */
#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bulk.h"
#include "l3_crc32c.h"
#include "meta.h"
#include "readahead.h"
#include "rules.h"

#define OPEN_FLAG 0x80000000u
#define FREE_FLAG 0x40000000u
#define BODY_CHUNK (8u << 20)

/* ---- writing ---- */

/* A slab's fill word: its next slot, and whether it is open or free. */
static uint32_t fill_of(const slab_info *sl)
{
    return sl->next_slot | (sl->state == S_OPEN ? OPEN_FLAG : 0) | (sl->state == S_FREE ? FREE_FLAG : 0);
}

/* The slot ids a slab's fill word puts in the checkpoint: its slots below
 * the fill, unless it is free. */
static uint32_t ids_of_fill(uint32_t fill) { return fill & FREE_FLAG ? 0 : fill & ~(OPEN_FLAG | FREE_FLAG); }

/* Serialise namespaces and slab fills at p (under lock). Every slot's
 * text, with objects or not: an object count is not trusted to say that
 * no entry names the slot. */
static void fill_head(l3_slabstore *s, uint8_t *p)
{
    for (uint32_t i = 0; i < s->sh->num_ns; i++, p += sizeof(l3_ns_record)) {
        l3_ns_record rec;
        memset(&rec, 0, sizeof rec);
        rec.len = s->ns[i].len;
        memcpy(rec.text, s->ns[i].text, rec.len);
        memcpy(p, &rec, sizeof rec);
    }
    for (uint32_t i = 0; i < s->geo.num_slabs; i++, p += 4) {
        uint32_t fill = fill_of(&s->slabs[i]);
        memcpy(p, &fill, 4);
    }
}

/* Serialise the table's bitmap at `bitmap` (zeroed) and its entries'
 * records at `records` (under lock); the entries. */
static uint64_t fill_entries(l3_slabstore *s, uint8_t *bitmap, uint8_t *records)
{
    uint64_t entries = 0;
    for (uint64_t i = 0; i <= s->index.meta->mask; i++) {
        if (s->index.table[i].hash) {
            bitmap[i / 8] |= (uint8_t)(1u << (i % 8));
            l3_ckpt_record_pack(records + entries++ * L3_CKPT_RECORD, &s->index.table[i]);
        }
    }
    L3_ASSERT(entries == s->index.meta->count);
    return entries;
}

/* Serialise each slab's slot ids below its fill at p, unless p is NULL
 * (under lock); how many. */
static uint64_t fill_slot_ids(l3_slabstore *s, uint8_t *p)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        uint32_t ids = ids_of_fill(fill_of(&s->slabs[i]));
        if (p)
            memcpy(p + n * 4, l3_slab_slot_ids(s, i), (size_t)ids * 4);
        n += ids;
    }
    return n;
}

l3_status l3_checkpoint_save(l3_slabstore *s, uint32_t *crc_out, uint64_t *bytes_out, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size;
    l3_slab_lock(s);
    l3_checkpoint_header *h, head = { .version = L3_CKPT_PACKED, .num_namespaces = s->sh->num_ns,
                                      .num_slabs = g->num_slabs, .num_entries = s->index.meta->count,
                                      .num_slot_ids = (uint32_t)fill_slot_ids(s, NULL) };
    uint64_t records = l3_checkpoint_records_at(&head, l3_index_capacity(&s->index));
    uint64_t ids = records + head.num_entries * L3_CKPT_RECORD;
    uint64_t body = ids + (uint64_t)head.num_slot_ids * 4, total = b + l3_round_up(body, b);
    uint8_t *buf = total <= g->checkpoint_len ? l3_meta_alloc(b, total) : NULL; /* zeroed */
    if (!buf) {
        l3_slab_unlock(s);
        return total > g->checkpoint_len
                   ? l3_fail(err, L3_ENOSPC, "the checkpoint (%llu bytes) exceeds its area",
                             (unsigned long long)total)
                   : l3_fail(err, L3_ENOMEM, "allocating a %llu-byte checkpoint", (unsigned long long)total);
    }
    fill_head(s, buf + b);
    fill_entries(s, buf + b + l3_checkpoint_bitmap_at(&head), buf + b + records);
    fill_slot_ids(s, buf + b + ids);
    head.body_bytes = body;
    head.body_crc = l3_crc32c(0, buf + b, body);
    head.sequence = s->sh->sb.sequence + 1; /* the superblock write that follows */
    l3_slab_unlock(s);
    h = (l3_checkpoint_header *)buf;
    *h = head;
    l3_checkpoint_header_seal(h);
    *crc_out = h->body_crc;
    *bytes_out = body;
    l3_status st = l3_meta_write_all(s, buf, total, g->checkpoint_off, err);
    free(buf);
    return st;
}

/* ---- reading ---- */

/* Read and check the checkpoint's header (against the superblock). */
static l3_status read_header(l3_slabstore *s, l3_checkpoint_header *h, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size;
    uint8_t *head = l3_meta_alloc(b, b);
    if (!head)
        return l3_fail(err, L3_ENOMEM, "allocating a checkpoint buffer");
    l3_status st = l3_meta_io(s, false, head, b, l3_io_offset(s->ref_dev, g->checkpoint_off), err);
    memcpy(h, head, sizeof *h);
    free(head);
    if (st != L3_OK)
        return st;
    char why[128];
    if (!l3_checkpoint_matches(h, &s->sh->sb, g, why, sizeof why))
        return l3_fail(err, L3_ECORRUPT, "%s", why);
    return L3_OK;
}

/* The body, read by two threads in chunks (alternate ones: a read is
 * always queued at the device) into a ring of buffers (readahead.h) while
 * the loader takes what has landed, its crc computed as it goes: memory
 * for RING chunks whatever the store's size. */
#define RING 4
#define READERS 2
typedef struct body_reader {
    l3_slabstore *s;
    uint64_t bytes, len;    /* the body's bytes, and rounded up to blocks */
    uint64_t off;           /* its device offset */
} body_reader;

/* Read chunk c of the body into buf (a reader thread's). */
static l3_status read_chunk(void *arg, size_t c, void *buf, l3_error *err)
{
    const body_reader *r = arg;
    uint64_t at = (uint64_t)c * BODY_CHUNK, n = r->len - at < BODY_CHUNK ? r->len - at : BODY_CHUNK;
    return l3_meta_io(r->s, false, buf, n, l3_io_offset(r->s->ref_dev, r->off + at), err);
}

/* Why the body did not land: a read's failure (an I/O error, or a file
 * that ends first: corrupt). */
static l3_status read_failure(l3_readahead *ra, l3_error *err)
{
    l3_error e;
    l3_status st = l3_readahead_failure(ra, &e);
    bool failed = st != L3_OK;
    return l3_fail(err, failed ? st : L3_ECORRUPT, "%s", failed ? e.msg : "the checkpoint ends early");
}

/* The loader's place in the body, the chunk it entered last (and how many
 * it entered), the crc of the chunks it entered, and whether a take found
 * that its bytes will never land. */
typedef struct cursor {
    const body_reader *r;
    l3_readahead *ra;
    const uint8_t *chunk;
    uint64_t at, entered;
    uint32_t crc;
    bool starved;
} cursor;

/* Enter the chunk at c->at once it landed: release the one before, and
 * add the new one's body bytes to the crc; false when it never lands. */
static bool enter_chunk(cursor *c)
{
    uint64_t k = c->at / BODY_CHUNK, at = k * BODY_CHUNK;
    uint64_t n = c->r->bytes - at < BODY_CHUNK ? c->r->bytes - at : BODY_CHUNK;
    const uint8_t *buf = l3_readahead_get(c->ra, (size_t)k);
    if (!buf)
        return false;
    if (k)
        l3_readahead_release(c->ra, (size_t)k - 1);
    c->crc = l3_crc32c(c->crc, buf, n);
    c->chunk = buf;
    c->entered = k + 1;
    return true;
}

/* Copy the body's next `len` bytes to dst, waiting for them to land;
 * false when they never will. */
static bool take(cursor *c, void *dst, size_t len)
{
    uint8_t *d = dst;
    while (len) {
        if (c->at >= c->r->len || (c->at / BODY_CHUNK >= c->entered && !enter_chunk(c))) {
            c->starved = true;
            return false;
        }
        uint64_t chunk_end = (c->at / BODY_CHUNK + 1) * BODY_CHUNK, end = c->r->len < chunk_end ? c->r->len : chunk_end;
        size_t n = end - c->at < len ? (size_t)(end - c->at) : len;
        memcpy(d, c->chunk + c->at % BODY_CHUNK, n);
        d += n, c->at += n, len -= n;
    }
    return true;
}

/* Namespaces, then slab fills, from the body's head (under lock). */
static l3_status load_ns_and_fills(l3_slabstore *s, const l3_checkpoint_header *h, const uint8_t *body,
                                   l3_error *err)
{
    const uint8_t *p = body;
    s->sh->num_ns = h->num_namespaces;
    for (uint32_t i = 0; i < h->num_namespaces; i++, p += sizeof(l3_ns_record)) {
        l3_ns_record rec;
        memcpy(&rec, p, sizeof rec);
        if (rec.len > L3_NS_TEXT_MAX)
            return l3_fail(err, L3_ECORRUPT, "checkpoint namespace %u is malformed", i);
        s->ns[i].len = rec.len;
        memcpy(s->ns[i].text, rec.text, rec.len);
        s->ns[i].text[rec.len] = '\0';
        s->ns[i].objects = s->ns[i].bytes = 0;
    }
    for (uint32_t i = 0; i < s->geo.num_slabs; i++, p += 4) {
        uint32_t fill;
        memcpy(&fill, p, 4);
        const slab_info *sl = &s->slabs[i];
        if (!sl->disk_used)
            continue;
        uint32_t next = fill & ~(OPEN_FLAG | FREE_FLAG);
        if (next > sl->nslots)
            return l3_fail(err, L3_ECORRUPT, "checkpoint: slab %u's fill %u is past its %u slots", i,
                           next, sl->nslots);
        l3_alloc_restore_fill(s, i, next, (fill & FREE_FLAG) != 0, (fill & OPEN_FLAG) != 0);
    }
    return L3_OK;
}

/* Complete a record into entry e with its slab's generation; whether it
 * fits the slab as loaded: a used slab, a slot below its fill, a size its
 * class holds, a known namespace (none, or a slot of the table with its
 * text). */
static bool entry_fits(l3_slabstore *s, l3_index_entry *e)
{
    const slab_info *sl = e->slab < s->geo.num_slabs ? &s->slabs[e->slab] : NULL;
    if (!sl)
        return false;
    e->gen = l3_index_gen(sl->gen);
    return sl->disk_used && sl->state != S_FREE && e->slot < sl->next_slot &&
           e->size <= (uint64_t)sl->payload_blocks * s->geo.block_size && e->ns <= s->sh->num_ns &&
           (e->ns == 0 || s->ns[e->ns - 1].len > 0) && e->hash;
}

/* Put slot i's entry back (the bitmap says it has one): at slot i, or
 * (`in_place` false: some device's entries are passed over, and the holes
 * they leave would hide the entries after them from a probe) published
 * by a probe, unless its device is passed over (offline, or scanned
 * instead); false when it is inconsistent (under lock). */
static bool restore_entry(l3_slabstore *s, cursor *c, uint64_t i, bool in_place, uint64_t *n)
{
    uint8_t rec[L3_CKPT_RECORD];
    l3_index_entry e;
    if (!take(c, rec, sizeof rec))
        return false;
    if (!l3_ckpt_record_unpack(rec, &e))
        return false;
    if (e.slab < s->geo.num_slabs && (s->ckpt_skip >> l3_slab_device(&s->geo, e.slab) & 1))
        return true;
    if (!entry_fits(s, &e))
        return false;
    (*n)++;
    if (!in_place) /* its slot id too: the slot table's section is passed over */
        return !l3_index_find(&s->index, (l3_key_id){ .hash = e.hash, .len = e.key_len }) &&
               !l3_slab_slot_ids(s, e.slab)[e.slot] && l3_entry_publish(s, &e);
    s->index.table[i] = e;
    l3_entry_count(s, &e);
    return true;
}

/* Whether the entries go back at their own slots: unless some device's
 * entries are passed over. */
static bool in_place(const l3_slabstore *s)
{
    return !(s->ckpt_skip & (uint32_t)((1ull << s->geo.num_devices) - 1));
}

/* Put every entry back as the records land, checking each and (in place)
 * that a probe for its key finds it there (under lock). */
static l3_status restore_index(l3_slabstore *s, const l3_checkpoint_header *h, cursor *c, const uint64_t *bitmap,
                               l3_error *err)
{
    const uint64_t cap = l3_index_capacity(&s->index);
    bool place = in_place(s);
    l3_index_walk w = { 0 };
    uint64_t n = 0, listed = 0;
    for (uint64_t i = 0; i < cap; i++) {
        if (bitmap[i / 64] >> (i % 64) & 1) {
            listed++;
            if (!restore_entry(s, c, i, place, &n))
                return !c->starved || l3_readahead_failure(c->ra, NULL) == L3_OK
                           ? l3_fail(err, L3_ECORRUPT, "checkpoint: the entry of index slot %llu is inconsistent",
                                     (unsigned long long)i)
                           : read_failure(c->ra, err);
        }
        if (place)
            l3_index_walk_slot(&s->index, &w, i);
    }
    if (listed != h->num_entries || (place && (!l3_index_walk_end(&w) || !l3_index_adopt(&s->index, n))))
        return l3_fail(err, L3_ECORRUPT, "checkpoint: the index it lists is inconsistent (%llu entries)",
                       (unsigned long long)listed);
    return L3_OK;
}

/* Each slab's slot ids below its fill, into the slot table (in place; else
 * passed over: publishing set them): they must name exactly the index's
 * entries (under lock). */
static l3_status restore_slot_ids(l3_slabstore *s, const l3_checkpoint_header *h, cursor *c, const uint8_t *fills,
                                  l3_error *err)
{
    bool place = in_place(s);
    uint32_t *scratch = place ? NULL : malloc((size_t)s->sh->max_slots * 4);
    uint64_t named = 0, total = 0;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        uint32_t fill, ids;
        memcpy(&fill, fills + (size_t)i * 4, 4);
        ids = ids_of_fill(fill);
        uint32_t *dst = place ? l3_slab_slot_ids(s, i) : scratch;
        if (ids > s->sh->max_slots || !dst || !take(c, dst, (size_t)ids * 4)) {
            free(scratch);
            return ids > s->sh->max_slots || !dst ? l3_fail(err, L3_ECORRUPT, "checkpoint: slab %u's fill", i)
                                                  : read_failure(c->ra, err);
        }
        for (uint32_t k = 0; place && k < ids; k++)
            named += dst[k] != 0;
        total += ids;
    }
    free(scratch);
    if (total != h->num_slot_ids || (place && named != s->index.meta->count))
        return l3_fail(err, L3_ECORRUPT, "checkpoint: its slot ids name %llu objects, its index %llu",
                       (unsigned long long)named, (unsigned long long)s->index.meta->count);
    return L3_OK;
}

/* Load namespaces, fills and the index as the body lands, then check its
 * crc: a body that does not check is undone by the caller (under lock). */
static l3_status load_body(l3_slabstore *s, const l3_checkpoint_header *h, cursor *c, l3_error *err)
{
    uint64_t head = l3_checkpoint_bitmap_at(h), cap = l3_index_capacity(&s->index);
    size_t words = (size_t)((cap + 63) / 64);
    uint8_t *fills = malloc(head ? head : 1);
    uint64_t *bitmap = malloc(words * 8);
    l3_status st = fills && bitmap ? l3_alloc_adopt_slabs(s, UINT32_MAX, err)
                                   : l3_fail(err, L3_ENOMEM, "allocating the checkpoint's bitmap");
    if (st == L3_OK && (!take(c, fills, head) || !take(c, bitmap, words * 8)))
        st = read_failure(c->ra, err);
    if (st == L3_OK)
        st = load_ns_and_fills(s, h, fills, err);
    if (st == L3_OK)
        st = restore_index(s, h, c, bitmap, err);
    if (st == L3_OK)
        st = restore_slot_ids(s, h, c, fills + l3_checkpoint_fills_at(h), err);
    free(fills);
    free(bitmap);
    if (st == L3_OK && (c->at != h->body_bytes || c->crc != h->body_crc))
        st = l3_fail(err, L3_ECORRUPT, "the checkpoint body does not check");
    return st;
}

l3_status l3_checkpoint_load(l3_slabstore *s, l3_error *err)
{
    l3_checkpoint_header h;
    l3_status st = read_header(s, &h, err);
    if (st != L3_OK)
        return st;
    body_reader r = { .s = s, .bytes = h.body_bytes, .len = l3_round_up(h.body_bytes, s->geo.block_size),
                      .off = s->geo.checkpoint_off + s->geo.block_size };
    l3_readahead_spec spec = { .items = (size_t)((r.len + BODY_CHUNK - 1) / BODY_CHUNK), .buf_bytes = BODY_CHUNK,
                               .ring = RING, .threads = READERS, .read = read_chunk, .arg = &r };
    l3_readahead *ra = NULL;
    l3_populate pop = { .started = 0 };
    if (l3_readahead_start(&spec, &ra, NULL) == L3_OK) {
        l3_populate_start(s, h.num_entries, &pop); /* faults taken off the loader's thread */
        cursor c = { .r = &r, .ra = ra };
        l3_slab_lock(s);
        st = load_body(s, &h, &c, err);
        l3_slab_unlock(s);
        l3_populate_join(&pop);
    } else {
        st = l3_fail(err, L3_ENOMEM, "allocating the checkpoint's buffers or threads");
    }
    l3_readahead_free(ra, false); /* (stops the readers first when the loader gave up early) */
    l3_slab_lock(s);
    if (st != L3_OK) {
        l3_alloc_reset(s); /* start over clean for the scan */
        s->sh->num_ns = 0;
    } else {
        s->sh->recovered_objects = s->index.meta->count;
    }
    l3_slab_unlock(s);
    return st;
}
