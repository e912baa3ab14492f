/* The slab store's index checkpoint (checkpoint.h; FORMAT.md
 * "Checkpoint"). Two layouts of one body: namespaces and slab fills, then
 * either the index's entries (a list, published one by one at the next
 * open) or the index table and slot table as they lie in the shared
 * mapping (an image, read straight back into it and checked as it lands). */
#include "checkpoint.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "bulk.h"
#include "l3_crc32c.h"
#include "meta.h"
#include "rules.h"

#define OPEN_FLAG 0x80000000u
#define FREE_FLAG 0x40000000u
#define BODY_CHUNK (16u << 20)

/* ---- writing ---- */

/* Serialise namespaces and slab fills at p (under lock); the bytes. */
static uint64_t fill_head(l3_slabstore *s, uint8_t *p)
{
    uint8_t *start = p;
    for (uint32_t i = 0; i < s->sh->num_ns; i++, p += sizeof(l3_ns_record)) {
        l3_ns_record rec;
        memset(&rec, 0, sizeof rec);
        rec.len = s->ns[i].objects ? s->ns[i].len : 0;
        memcpy(rec.text, s->ns[i].text, rec.len);
        memcpy(p, &rec, sizeof rec);
    }
    for (uint32_t i = 0; i < s->geo.num_slabs; i++, p += 4) {
        const slab *sl = &s->slabs[i];
        uint32_t fill = sl->next_slot | (sl->state == S_OPEN ? OPEN_FLAG : 0) |
                        (sl->state == S_FREE ? FREE_FLAG : 0);
        memcpy(p, &fill, 4);
    }
    return (uint64_t)(p - start);
}

/* Serialise the index's entries at p in table order (under lock); the
 * entries written. */
static uint64_t fill_entries(l3_slabstore *s, uint8_t *p)
{
    uint64_t entries = 0;
    for (uint64_t i = 0; i <= s->index.meta->mask; i++) {
        if (s->index.table[i].hash) {
            memcpy(p, &s->index.table[i], sizeof(l3_index_entry));
            p += sizeof(l3_index_entry);
            entries++;
        }
    }
    L3_ASSERT(entries == s->index.meta->count);
    return entries;
}

/* Fill in, seal and write header h (in a block of its own at buf's start)
 * with the body's numbers. */
static void seal_header(l3_slabstore *s, l3_checkpoint_header *h, uint32_t version, uint64_t body, uint32_t crc)
{
    h->version = version;
    h->num_entries = s->index.meta->count;
    h->body_bytes = body;
    h->body_crc = crc;
    h->sequence = s->sh->sb.sequence + 1; /* the superblock write that follows */
    h->num_namespaces = s->sh->num_ns;
    h->num_slabs = s->geo.num_slabs;
    l3_checkpoint_header_seal(h);
}

/* The list layout: header and body from one buffer. */
static l3_status save_list(l3_slabstore *s, uint32_t *crc_out, uint64_t *bytes_out, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size;
    uint64_t body = (uint64_t)s->sh->num_ns * sizeof(l3_ns_record) + (uint64_t)g->num_slabs * 4 +
                    s->index.meta->count * sizeof(l3_index_entry);
    uint64_t total = b + l3_round_up(body, b);
    uint8_t *buf = total <= g->checkpoint_len ? l3_meta_alloc(b, total) : NULL;
    if (!buf)
        return total > g->checkpoint_len
                   ? l3_fail(err, L3_ENOSPC, "the checkpoint (%llu bytes) exceeds its area",
                             (unsigned long long)total)
                   : l3_fail(err, L3_ENOMEM, "allocating a %llu-byte checkpoint", (unsigned long long)total);
    uint64_t head = fill_head(s, buf + b);
    fill_entries(s, buf + b + head);
    seal_header(s, (l3_checkpoint_header *)buf, L3_CKPT_LIST, body, l3_crc32c(0, buf + b, body));
    *crc_out = ((l3_checkpoint_header *)buf)->body_crc;
    *bytes_out = body;
    l3_status st = l3_meta_write_all(s, buf, total, g->checkpoint_off, err);
    free(buf);
    return st;
}

/* The image layout: header, namespaces and fills from a buffer, then the
 * index table and slot table straight from the mapping. */
static l3_status save_image(l3_slabstore *s, const l3_ckpt_image *im, uint32_t *crc_out, uint64_t *bytes_out,
                            l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size;
    uint8_t *buf = l3_meta_alloc(b, b + im->table_at);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a checkpoint buffer");
    fill_head(s, buf + b);
    /* The sections' rounding lies in the mapping's page padding: zeros. */
    uint32_t crc = l3_crc32c(0, buf + b, im->table_at);
    crc = l3_crc32c(crc, s->index.table, im->table_bytes);
    crc = l3_crc32c(crc, s->slot_ids, im->slots_bytes);
    seal_header(s, (l3_checkpoint_header *)buf, L3_CKPT_IMAGE, im->bytes, crc);
    *crc_out = crc;
    *bytes_out = im->bytes;
    uint64_t at = g->checkpoint_off + b;
    l3_status st = l3_meta_write_all(s, buf, b + im->table_at, g->checkpoint_off, err);
    if (st == L3_OK)
        st = l3_meta_write_all(s, s->index.table, im->table_bytes, at + im->table_at, err);
    if (st == L3_OK)
        st = l3_meta_write_all(s, s->slot_ids, im->slots_bytes, at + im->slots_at, err);
    free(buf);
    return st;
}

/* Whether the image layout is used: it fits the area (stores made before
 * it have a smaller one), sections round to no more than a page, and it
 * is at most twice the list (a store mostly empty writes the list). */
static bool image_chosen(const l3_slabstore *s, const l3_ckpt_image *im)
{
    const l3_geometry *g = &s->geo;
    return g->block_size <= 4096 && g->block_size + im->bytes <= g->checkpoint_len &&
           im->bytes <= 2 * s->index.meta->count * sizeof(l3_index_entry);
}

l3_status l3_checkpoint_save(l3_slabstore *s, uint32_t *crc, uint64_t *bytes, l3_error *err)
{
    l3_slab_lock(s); /* through the writes: the image is written from the mapping */
    l3_ckpt_image im = l3_checkpoint_image(&s->geo, s->sh->num_ns);
    l3_status st = image_chosen(s, &im) ? save_image(s, &im, crc, bytes, err) : save_list(s, crc, bytes, err);
    l3_slab_unlock(s);
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

/* The body, read by a thread in chunks into up to three places in turn
 * (its crc computed as they land) while the loader uses what has landed. */
typedef struct body_reader {
    l3_slabstore *s;
    struct { uint8_t *dst; uint64_t len; } part[3];
    int parts;
    uint64_t bytes, len;    /* the bytes the crc covers, and all the parts' */
    uint64_t off;           /* the body's device offset */
    l3_progress landed;     /* bytes read */
    bool stop;              /* the loader gave up: read no more (atomic) */
    l3_status st;           /* a read's failure, and how (set before it stops) */
    l3_error read_err;
    uint32_t crc;
} body_reader;

/* Add a part of `len` bytes (whole blocks), read into dst. */
static void add_part(body_reader *r, void *dst, uint64_t len)
{
    r->part[r->parts].dst = dst;
    r->part[r->parts++].len = len;
    r->len += len;
}

/* Where body byte `at` lands. */
static uint8_t *body_at(const body_reader *r, uint64_t at)
{
    int k = 0;
    for (; k + 1 < r->parts && at >= r->part[k].len; k++)
        at -= r->part[k].len;
    return r->part[k].dst + at;
}

static void *read_body(void *arg)
{
    body_reader *r = arg;
    uint64_t at = 0, part_end = 0;
    for (int k = 0; k < r->parts && r->st == L3_OK; k++) {
        part_end += r->part[k].len;
        while (at < part_end && r->st == L3_OK && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
            uint64_t n = part_end - at < BODY_CHUNK ? part_end - at : BODY_CHUNK;
            uint8_t *dst = body_at(r, at);
            r->st = l3_meta_io(r->s, false, dst, n, l3_io_offset(r->s->ref_dev, r->off + at), &r->read_err);
            if (r->st == L3_OK && at < r->bytes)
                r->crc = l3_crc32c(r->crc, dst, at + n <= r->bytes ? n : r->bytes - at);
            at += r->st == L3_OK ? n : 0;
            l3_progress_set(&r->landed, at, false);
        }
    }
    l3_progress_set(&r->landed, at, true);
    return NULL;
}

/* Wait until `bytes` of the body have landed: false when they never will. */
static bool body_wait(body_reader *r, uint64_t bytes) { return l3_progress_wait(&r->landed, bytes) >= bytes; }

/* Why the body did not land (after body_wait fell short): the read's own
 * failure (an I/O error, or a file that ends first: corrupt). */
static l3_status read_failure(const body_reader *r, l3_error *err)
{
    bool failed = r->st != L3_OK;
    return l3_fail(err, failed ? r->st : L3_ECORRUPT, "%s", failed ? r->read_err.msg : "the checkpoint ends early");
}

/* Namespaces, then slab fills, from the body (under lock). */
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
        slab *sl = &s->slabs[i];
        if (!sl->disk_used)
            continue;
        uint32_t next = fill & ~(OPEN_FLAG | FREE_FLAG);
        if (next > sl->nslots)
            return l3_fail(err, L3_ECORRUPT, "checkpoint: slab %u's fill %u is past its %u slots", i,
                           next, sl->nslots);
        sl->next_slot = next;
        if (fill & FREE_FLAG) {
            sl->state = S_FREE;
        } else if ((fill & OPEN_FLAG) && *l3_class_open(s, sl->payload_blocks, l3_slab_device(&s->geo, i)) < 0) {
            sl->state = S_OPEN;
            *l3_class_open(s, sl->payload_blocks, l3_slab_device(&s->geo, i)) = (int32_t)i;
        }
    }
    return L3_OK;
}

/* Whether entry e fits its slab as loaded: a used slab of its generation,
 * a slot below its fill, a size its class holds, a known namespace. */
static bool entry_fits(const l3_slabstore *s, const l3_index_entry *e)
{
    const slab *sl = e->slab < s->geo.num_slabs ? &s->slabs[e->slab] : NULL;
    return sl && sl->disk_used && sl->state != S_FREE && e->slot < sl->next_slot &&
           e->size <= (uint64_t)sl->payload_blocks * s->geo.block_size && e->ns <= s->sh->num_ns && e->hash &&
           e->gen == (uint32_t)sl->gen;
}

/* Publish one listed entry, checked against its slab (under lock). */
static l3_status load_entry(l3_slabstore *s, const uint8_t *p, uint64_t k, l3_error *err)
{
    l3_index_entry e;
    memcpy(&e, p, sizeof e);
    l3_key_id id = { .hash = e.hash, .check = e.check, .len = e.key_len };
    if (e.slab < s->geo.num_slabs && (s->ckpt_skip >> l3_slab_device(&s->geo, e.slab) & 1))
        return L3_OK; /* its device is offline, or is scanned instead */
    if (!entry_fits(s, &e) || l3_index_find(&s->index, id) || l3_slab_slot_ids(s, e.slab)[e.slot])
        return l3_fail(err, L3_ECORRUPT, "checkpoint entry %llu is inconsistent", (unsigned long long)k);
    if (!l3_alloc_publish(s, &e))
        return l3_fail(err, L3_ECORRUPT, "the checkpoint has more entries than the index holds");
    return L3_OK;
}

/* Start fetching what publishing the listed entry at p touches: its
 * index slot and its slab's slot id. */
static void prefetch_entry(l3_slabstore *s, const uint8_t *p)
{
    l3_index_entry e;
    memcpy(&e, p, sizeof e);
    l3_index_prefetch(&s->index, e.hash);
    if (e.slab < s->geo.num_slabs && e.slot < s->sh->max_slots)
        __builtin_prefetch(&l3_slab_slot_ids(s, e.slab)[e.slot], 1);
}

/* Publish the `n` entries from body byte `at` as they land (`sparse`: an
 * image's table read aside, its empty slots passed over), a few entries'
 * memory fetched ahead (under lock). */
static l3_status load_entries(l3_slabstore *s, body_reader *r, uint64_t at, uint64_t n, bool sparse,
                              l3_error *err)
{
    const uint64_t es = sizeof(l3_index_entry), ahead = 16;
    uint64_t k = 0, published = 0;
    while (k < n) {
        if (!body_wait(r, at + (k + 1) * es))
            return read_failure(r, err);
        uint64_t have = (l3_progress_wait(&r->landed, 0) - at) / es;
        have = have < n ? have : n;
        for (; k < have; k++) {
            const uint8_t *p = body_at(r, at + k * es);
            if (k + ahead < have)
                prefetch_entry(s, body_at(r, at + (k + ahead) * es));
            uint64_t hash;
            memcpy(&hash, p, sizeof hash);
            if (!hash && sparse)
                continue;
            l3_status st = load_entry(s, p, published++, err);
            if (st != L3_OK)
                return st;
        }
    }
    return L3_OK;
}

/* Check and count the image's table as it lands in place: every entry
 * fits its slab and lies where a probe finds it (under lock). */
static l3_status adopt_table(l3_slabstore *s, const l3_checkpoint_header *h, const l3_ckpt_image *im,
                             body_reader *r, l3_error *err)
{
    const uint64_t es = sizeof(l3_index_entry), cap = l3_index_capacity(&s->index);
    l3_index_walk w = { 0 };
    uint64_t i = 0, n = 0;
    while (i < cap) {
        if (!body_wait(r, im->table_at + (i + 1) * es))
            return read_failure(r, err);
        uint64_t have = (l3_progress_wait(&r->landed, 0) - im->table_at) / es;
        for (have = have < cap ? have : cap; i < have; i++) {
            l3_index_walk_slot(&s->index, &w, i);
            const l3_index_entry *e = &s->index.table[i];
            if (!e->hash)
                continue;
            if (!entry_fits(s, e))
                return l3_fail(err, L3_ECORRUPT, "checkpoint: the entry at index slot %llu is inconsistent",
                               (unsigned long long)i);
            l3_alloc_count(s, e);
            n++;
        }
    }
    if (!l3_index_walk_end(&w) || n != h->num_entries || !l3_index_adopt(&s->index, n))
        return l3_fail(err, L3_ECORRUPT, "checkpoint: the index image is inconsistent (%llu entries)",
                       (unsigned long long)n);
    return L3_OK;
}

/* The image's slot table, landed in place, names exactly the entries. */
static l3_status adopt_slot_ids(l3_slabstore *s, const l3_ckpt_image *im, body_reader *r, l3_error *err)
{
    if (!body_wait(r, im->slots_at + im->slots_bytes))
        return read_failure(r, err);
    uint64_t ids = (uint64_t)s->geo.num_slabs * s->sh->max_slots, named = 0;
    for (uint64_t k = 0; k < ids; k++)
        named += s->slot_ids[k] != 0;
    if (named != s->index.meta->count)
        return l3_fail(err, L3_ECORRUPT, "checkpoint: the slot table names %llu objects, the index %llu",
                       (unsigned long long)named, (unsigned long long)s->index.meta->count);
    return L3_OK;
}

/* Load the body's entries as it lands: in place, or one by one. */
static l3_status load_index(l3_slabstore *s, const l3_checkpoint_header *h, body_reader *r, bool in_place,
                            l3_error *err)
{
    if (h->version == L3_CKPT_LIST)
        return load_entries(s, r, l3_checkpoint_entries_at(h), h->num_entries, false, err);
    l3_ckpt_image im = l3_checkpoint_image(&s->geo, h->num_namespaces);
    if (!in_place)
        return load_entries(s, r, im.table_at, l3_index_capacity(&s->index), true, err);
    l3_status st = adopt_table(s, h, &im, r, err);
    return st == L3_OK ? adopt_slot_ids(s, &im, r, err) : st;
}

/* Load namespaces, fills and the index as the body lands, then check its
 * crc: a body that does not check undoes the load (under lock). */
static l3_status load_body(l3_slabstore *s, const l3_checkpoint_header *h, body_reader *r, bool in_place,
                           l3_error *err)
{
    l3_status st = l3_alloc_adopt_slabs(s, UINT32_MAX, err);
    uint64_t head = l3_checkpoint_entries_at(h);
    if (st == L3_OK && !body_wait(r, head))
        return read_failure(r, err);
    if (st == L3_OK)
        st = load_ns_and_fills(s, h, body_at(r, 0), err);
    if (st == L3_OK)
        st = load_index(s, h, r, in_place, err);
    if (st == L3_OK && !body_wait(r, r->len))
        return read_failure(r, err);
    if (st == L3_OK && r->crc != h->body_crc)
        st = l3_fail(err, L3_ECORRUPT, "the checkpoint body does not check");
    return st;
}

/* Where the body is read: an image in place into the index and slot
 * tables when every device's entries are loaded (none offline or
 * scanned instead), else into a buffer (*buf, to free). */
static bool plan_reads(l3_slabstore *s, const l3_checkpoint_header *h, body_reader *r, uint8_t **buf)
{
    uint32_t b = s->geo.block_size, devices = (uint32_t)((1ull << s->geo.num_devices) - 1);
    bool in_place = h->version == L3_CKPT_IMAGE && !(s->ckpt_skip & devices);
    l3_ckpt_image im = l3_checkpoint_image(&s->geo, h->num_namespaces);
    uint64_t buffered = in_place ? im.table_at : l3_round_up(h->body_bytes, b);
    /* Not zeroed: the reads fill it whole. (Not huge pages either: right
     * after a fill, finding them cost more than the reads saved.) */
    if (posix_memalign((void **)buf, 4096, buffered ? buffered : b) != 0)
        return *buf = NULL, false;
    add_part(r, *buf, buffered);
    if (in_place) {
        add_part(r, s->index.table, im.table_bytes);
        add_part(r, s->slot_ids, im.slots_bytes);
    }
    return in_place;
}

l3_status l3_checkpoint_load(l3_slabstore *s, l3_error *err)
{
    l3_checkpoint_header h;
    l3_status st = read_header(s, &h, err);
    if (st != L3_OK)
        return st;
    body_reader r = { .s = s, .bytes = h.body_bytes, .off = s->geo.checkpoint_off + s->geo.block_size,
                      .landed = L3_PROGRESS_INIT };
    uint8_t *buf;
    bool in_place = plan_reads(s, &h, &r, &buf);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a %llu-byte checkpoint buffer", (unsigned long long)h.body_bytes);
    pthread_t reader;
    l3_populate pop;
    bool reading = pthread_create(&reader, NULL, read_body, &r) == 0;
    l3_populate_start(s, h.num_entries, &pop);
    if (!in_place)
        l3_populate_join(&pop); /* before entries land at random: a fault each costs more */
    if (!reading)
        read_body(&r); /* no thread: read it all first */
    l3_slab_lock(s);
    st = load_body(s, &h, &r, in_place, err);
    l3_slab_unlock(s);
    __atomic_store_n(&r.stop, true, __ATOMIC_RELAXED);
    if (reading)
        pthread_join(reader, NULL); /* before an undo: nothing lands after it */
    l3_populate_join(&pop);
    l3_slab_lock(s);
    if (st != L3_OK) {
        l3_alloc_reset(s); /* start over clean for the scan */
        s->sh->num_ns = 0;
    } else {
        s->sh->recovered_objects = s->index.meta->count;
    }
    l3_slab_unlock(s);
    free(buf);
    return st;
}
