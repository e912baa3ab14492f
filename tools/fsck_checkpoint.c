/* l3fsck's checkpoint pass (fsck_checkpoint.h): a clean store serves
 * exactly its checkpoint's entries, so each must name an object live by
 * the rules. The body is streamed in chunks (its crc on the first pass)
 * and each pass matches the entries of its keys: memory stays one chunk
 * and one pass's objects, whatever the store's size. */
#include "fsck_checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsck_io.h"
#include "fsck_pass.h"
#include "l3_crc32c.h"
#include "readahead.h"

#define CHUNK (16u << 20)

static bool same_slot(const fsck *f, size_t a, size_t b)
{
    return f->objects[a].slab == f->objects[b].slab && f->objects[a].slot == f->objects[b].slot;
}

/* The by_slot table's home for (slab, slot). */
static size_t slot_home(const fsck *f, uint32_t slab, uint32_t slot)
{
    return fsck_table_home(f, (uint64_t)slab << 32 | slot);
}

/* Index this pass's objects by their slot (one object a slot). */
static void map_slots(fsck *f)
{
    memset(f->by_slot, 0xff, f->table_cap * sizeof *f->by_slot);
    for (size_t i = 0; i < f->num_objects; i++) {
        const fsck_object *o = &f->objects[i];
        f->by_slot[fsck_table_slot(f, f->by_slot, (uint64_t)o->slab << 32 | o->slot, i, same_slot)] = (uint32_t)i;
    }
}

/* The object at entry e's slot, or NULL. */
static fsck_object *object_at(fsck *f, const l3_image_ckpt_entry *e)
{
    for (size_t p = slot_home(f, e->slab, e->slot); f->by_slot[p] != UINT32_MAX; p = (p + 1) & (f->table_cap - 1)) {
        fsck_object *o = &f->objects[f->by_slot[p]];
        if (o->slab == e->slab && o->slot == e->slot)
            return o;
    }
    return NULL;
}

/* Match the entry of record p, if its key is this pass's: the object live
 * by the rules at its slot must be the one it names. */
static void match(fsck *f, const uint8_t *p)
{
    l3_image_ckpt_entry e;
    l3_image_ckpt_entry_at(p, &e);
    if (!fsck_in_part(f, e.hash))
        return;
    if (e.slab < f->geo.num_slabs && (!fsck_slab_present(f, e.slab) || fsck_slab_behind(f, e.slab)))
        return; /* a device not given, or opened by the rules: its entries are not checked */
    fsck_object *o = e.slab < f->geo.num_slabs ? object_at(f, &e) : NULL;
    bool found = o && o->seq == e.seq && o->size == e.size && o->crc == e.crc && o->hash == e.hash;
    if (found)
        o->listed = true;
    f->checkpoint_missing += !found;
}

/* Start fetching what matching the entry at p will touch: its slot's
 * table word (far ahead) and the object that word names (near). */
static void fetch_ahead(const fsck *f, const uint8_t *far, const uint8_t *near)
{
    l3_image_ckpt_entry e;
    if (far) {
        l3_image_ckpt_entry_at(far, &e);
        __builtin_prefetch(&f->by_slot[slot_home(f, e.slab, e.slot)]);
    }
    if (near) {
        l3_image_ckpt_entry_at(near, &e);
        uint32_t at = f->by_slot[slot_home(f, e.slab, e.slot)];
        if (at != UINT32_MAX)
            __builtin_prefetch(&f->objects[at]);
    }
}

/* The record `ahead` records after the one at body byte `next`, if it
 * lies whole in the chunk at body byte pos of n bytes. */
static const uint8_t *in_chunk(const uint8_t *buf, uint64_t pos, uint64_t n, uint64_t next, uint64_t ahead)
{
    uint64_t at = next + ahead * L3_CKPT_RECORD;
    return at >= pos && at + L3_CKPT_RECORD <= pos + n ? buf + (at - pos) : NULL;
}

/* The body being streamed: where it is, and its bytes rounded up to blocks. */
typedef struct body {
    fsck *f;
    uint64_t off, len;
} body;

/* Read the body's chunk j into buf (the read-ahead's thread): a read
 * that fails, or that runs past the image's end, ends the stream. */
static l3_status read_chunk(void *arg, size_t j, void *buf, l3_error *err)
{
    const body *b = arg;
    uint64_t pos = (uint64_t)j * CHUNK;
    int rc = fsck_read_bulk(b->f, buf, (size_t)(b->len - pos < CHUNK ? b->len - pos : CHUNK), b->off + pos);
    return rc == 0 ? L3_OK
                   : l3_fail(err, L3_EIO, "reading the checkpoint's chunk %zu: %s", j,
                             rc > 0 ? "past the image's end" : strerror(-rc));
}

/* Match the records that lie in the chunk at body byte pos (n bytes) from
 * record *k on (of `count` from body byte `at`); one that straddles two
 * chunks is put together in `carry`. */
static void match_chunk(fsck *f, const uint8_t *buf, uint64_t pos, uint64_t n, uint64_t at, uint64_t count,
                        uint64_t *k, uint8_t *carry)
{
    const uint64_t es = L3_CKPT_RECORD;
    for (uint64_t next = at + *k * es; *k < count && next < pos + n; (*k)++, next += es) {
        if (next >= pos && next + es <= pos + n) {
            fetch_ahead(f, in_chunk(buf, pos, n, next, 16), in_chunk(buf, pos, n, next, 8));
            match(f, buf + (next - pos));
            continue;
        }
        uint64_t from = next > pos ? next : pos, to = next + es < pos + n ? next + es : pos + n;
        memcpy(carry + (from - next), buf + (from - pos), to - from);
        if (next + es > pos + n)
            break; /* its end is in the next chunk */
        match(f, carry);
    }
}

/* Stream the body (its crc into *crc when asked), read ahead by a thread,
 * matching its entries as they pass; false when a read fails. */
static bool stream_body(fsck *f, l3_checkpoint_header *h, uint32_t *crc)
{
    uint64_t at = l3_image_ckpt_records_at(h, &f->geo), count = h->num_entries;
    uint64_t k = 0, len = l3_round_up(h->body_bytes, f->geo.block_size);
    bool ok = true;
    uint8_t carry[L3_CKPT_RECORD];
    size_t chunks = (size_t)((len + CHUNK - 1) / CHUNK);
    body b = { .f = f, .off = l3_io_offset(f->ref, l3_image_ckpt_body(&f->geo)), .len = len };
    l3_readahead_spec spec = { .items = chunks, .buf_bytes = CHUNK, .ring = 2, .threads = 1, .read = read_chunk,
                               .arg = &b };
    l3_readahead *ra;
    if (l3_readahead_start(&spec, &ra, NULL) != L3_OK)
        return false;
    for (size_t j = 0; ok && j < chunks; j++) {
        const uint8_t *buf = l3_readahead_get(ra, j);
        uint64_t pos = (uint64_t)j * CHUNK, n = len - pos < CHUNK ? len - pos : CHUNK;
        ok = buf != NULL;
        if (ok && crc && pos < h->body_bytes)
            *crc = l3_crc32c(*crc, buf, pos + n <= h->body_bytes ? n : h->body_bytes - pos);
        if (ok)
            match_chunk(f, buf, pos, n, at, count, &k, carry);
        l3_readahead_release(ra, j);
    }
    l3_readahead_free(ra, false);
    return ok && k == count;
}

/* Read and judge the header (the first pass): whether it belongs to the
 * superblock. */
static bool read_header(fsck *f, l3_checkpoint_header *h)
{
    char why[128];
    bool read = fsck_read(f, h, sizeof *h, l3_io_offset(f->ref, f->geo.checkpoint_off)) == 0;
    f->checkpoint_earlier = read && l3_checkpoint_header_valid(h) && h->version == L3_CKPT_LIST;
    return read && l3_checkpoint_matches(h, &f->sb, &f->geo, why, sizeof why);
}

bool fsck_checkpoint_opens(fsck *f)
{
    l3_checkpoint_header h;
    return f->sb.clean && read_header(f, &h);
}

void fsck_checkpoint(fsck *f)
{
    l3_checkpoint_header *h = &f->checkpoint;
    if (!f->sb.clean || (f->part == 0 && !(f->checkpoint_read = read_header(f, h))) ||
        (f->part > 0 && !f->checkpoint_checks))
        return;
    for (size_t i = 0; i < f->num_objects; i++)
        f->objects[i].listed = false;
    map_slots(f);
    uint32_t crc = 0;
    bool read = stream_body(f, h, f->part == 0 ? &crc : NULL);
    if (f->part == 0 || !read) /* (a later pass's read failure: it cannot be matched whole) */
        f->checkpoint_checks = read && (f->part > 0 || crc == h->body_crc);
    f->checkpoint_entries = h->num_entries;
    /* Keep live only the objects the checkpoint lists (a clean store
     * serves exactly those: of two headers of one key, the one a put
     * published, which need not be the one with the higher sequence);
     * a device that missed the last session is opened by the rules
     * instead: its objects live by them are offered against those, as
     * its scan's are against the checkpoint's entries. */
    bool behind = false;
    for (size_t i = 0; f->checkpoint_checks && i < f->num_objects; i++) {
        fsck_object *o = &f->objects[i];
        bool by_rules = fsck_slab_behind(f, o->slab);
        o->live = by_rules || o->listed; /* (every object here is live by the rules) */
        behind = behind || by_rules;
    }
    if (f->checkpoint_checks && behind)
        (void)fsck_supersede(f);
}

/* The checkpoint is stale or broken: the store must rebuild from headers. */
static void checkpoint_unusable(fsck *f, const char *why, const char *problem)
{
    snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "%s", why);
    fsck_problem(f, true, "checkpoint: %s", problem);
    if (f->repair) {
        f->mark_dirty = true; /* written by fsck_write_superblocks */
        fsck_fixed(f, "the store marked dirty: its next open rebuilds the index from the headers");
    }
}

void fsck_checkpoint_verdict(fsck *f)
{
    f->checkpoint_valid = false;
    if (!f->sb.clean) {
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "not used: the store was not closed cleanly");
    } else if (f->checkpoint_earlier) { /* not an error: the store scans, as after a crash */
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "not used: an earlier build's layout (the next "
                 "open rebuilds the index from summaries and headers)");
    } else if (!f->checkpoint_read) {
        checkpoint_unusable(f, "header invalid or stale", "the header is invalid or does not match the superblock");
    } else if (!f->checkpoint_checks) {
        checkpoint_unusable(f, "body checksum mismatch", "body checksum mismatch");
    } else if (f->checkpoint_missing) {
        char w[128], p[128];
        snprintf(w, sizeof w, "%llu entries without a valid object", (unsigned long long)f->checkpoint_missing);
        snprintf(p, sizeof p, "%llu entries name no valid object on disk", (unsigned long long)f->checkpoint_missing);
        checkpoint_unusable(f, w, p);
    } else {
        f->checkpoint_valid = true;
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "valid");
    }
}
