/* l3fsck's passes (fsck.h): superblocks, tables, objects, checkpoint. Each
 * slot is judged by the library's rulebook, as at the store's recovery. */
#include "fsck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aligned.h"
#include "hash.h"
#include "index.h"
#include "l3_crc32c.h"
#include "l3_pool.h"
#include "meta.h"
#include "readahead.h"
#include "shm.h"

void fsck_problem(fsck *f, bool fixable, const char *fmt, ...)
{
    char buf[512];
    if (f->quiet)
        return; /* a later pass: the first reported it */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    f->found++;
    f->left += !fixable || !f->repair;
    json_array_append_new(f->errors, json_string(buf));
    if (!f->json)
        printf("error: %s%s\n", buf, fixable && !f->repair ? " (fixable with -y)" : "");
}

void fsck_fixed(fsck *f, const char *what)
{
    json_array_append_new(f->repairs, json_string(what));
    if (!f->json)
        printf("fixed: %s\n", what);
}

/* The descriptor for I/O offset *off (its device's; direct: the O_DIRECT
 * one where there is one), *off made the byte offset there; -1 when the
 * device was not given. */
static int fd_of(const fsck *f, uint64_t *off, bool direct)
{
    uint32_t d = l3_io_dev_of(*off);
    *off = l3_io_byte_of(*off);
    if (d >= f->ndev)
        return -1;
    return direct && f->dev[d].dfd >= 0 ? f->dev[d].dfd : f->dev[d].fd;
}

bool fsck_slab_present(const fsck *f, uint32_t i)
{
    return f->present >> l3_slab_device(&f->geo, i) & 1;
}

static int read_fd(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    if (fd < 0)
        return -EBADF;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0) {
            memset((char *)buf + done, 0, len - done); /* past the end: zeros */
            return 1;
        }
        done += (size_t)n;
    }
    return 0;
}

int fsck_read(fsck *f, void *buf, size_t len, uint64_t off)
{
    int fd = fd_of(f, &off, false);
    return read_fd(fd, buf, len, off);
}

int fsck_read_bulk(fsck *f, void *buf, size_t len, uint64_t off)
{
    int fd = fd_of(f, &off, true);
    return read_fd(fd, buf, len, off);
}

int fsck_write(fsck *f, const void *buf, size_t len, uint64_t off)
{
    int fd = fd_of(f, &off, false);
    size_t done = 0;
    if (fd < 0)
        return -EBADF;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
}

/* Write a repair and count it only once it is written. */
static void repair(fsck *f, const void *buf, size_t len, uint64_t off, const char *what)
{
    int rc = fsck_write(f, buf, len, off);
    if (rc != 0) {
        fprintf(stderr, "l3fsck: writing at %llu: %s\n", (unsigned long long)off, strerror(-rc));
        f->left++; /* the problem it was to fix is still there */
        return;
    }
    f->mark_dirty = true;
    fsck_fixed(f, what);
}

/* A metadata block (slab table, journal) at `off` of every device. */
static void repair_all(fsck *f, const void *buf, size_t len, uint64_t off, const char *what)
{
    for (uint32_t d = 0; d < f->ndev; d++)
        repair(f, buf, len, l3_io_offset(d, off), what);
}

/* ---- superblocks ---- */

/* Print a device's superblock copies. */
static void print_copies(const fsck *f, const char *path, const l3_sb_copies *c)
{
    if (f->json)
        return;
    for (int k = 0; k < L3_SB_COPIES; k++) {
        const l3_superblock *sb = &c->copy[k];
        if (f->given > 1)
            printf("%s: ", path);
        if (c->valid[k])
            printf("superblock copy %d: valid, sequence %llu, %s, epoch %llu\n", k, (unsigned long long)sb->sequence,
                   sb->clean ? "clean" : "dirty", (unsigned long long)sb->epoch);
        else
            printf("superblock copy %d: %s\n", k, c->why[k]);
    }
}

/* A device's copies against the good one: a broken copy is a fixable
 * problem, an older one an interrupted write. */
static void judge_copies(fsck *f, const char *path, const l3_sb_copies *c)
{
    for (int k = 0; k < L3_SB_COPIES; k++) {
        if (c->valid[k] && c->copy[k].sequence == f->sb.sequence)
            continue;
        if (!c->valid[k]) {
            fsck_problem(f, true, "%s: superblock copy %d is broken (%s)", path, k, c->why[k]);
            continue;
        }
        /* An interrupted superblock write (normal after a crash), or a
         * device that missed a session: both copies are rewritten. */
        f->sync_copies = true;
        if (!f->json)
            printf("note: %s: superblock copy %d is older (sequence %llu) than the store's (%llu)%s\n", path, k,
                   (unsigned long long)c->copy[k].sequence, (unsigned long long)f->sb.sequence,
                   f->repair ? "; rewritten" : "; the next open rewrites it");
    }
}

/* Put each given path at its place in the store (by its superblock);
 * false when one does not belong to it. */
static bool place_devices(fsck *f, const l3_sb_copies *got, uint32_t n)
{
    fsck_dev given[L3_MAX_DEVICES];
    memcpy(given, f->dev, sizeof given);
    for (uint32_t d = 0; d < L3_MAX_DEVICES; d++)
        f->dev[d] = (fsck_dev){ .fd = -1, .dfd = -1 };
    f->ndev = n;
    f->present = 0;
    for (uint32_t i = 0; i < f->given; i++) {
        const l3_superblock *sb = got[i].best >= 0 ? &got[i].copy[got[i].best] : NULL;
        uint32_t d = sb ? sb->device : 0;
        if (!sb || memcmp(sb->uuid, f->sb.uuid, 16) != 0 || (sb->num_devices ? sb->num_devices : 1) != n ||
            d >= n || (f->present >> d & 1)) {
            fsck_problem(f, false, "%s is not a device of this store (%s)", given[i].path,
                         !sb ? "no valid superblock" : memcmp(sb->uuid, f->sb.uuid, 16) ? "another store's uuid"
                                                                                     : "its place is taken or out of range");
            return false;
        }
        f->dev[d] = given[i];
        f->dev[d].sbs = got[i];
        f->present |= 1u << d;
        if (got[i].best >= 0 && sb->sequence == f->sb.sequence)
            f->ref = d;
    }
    f->partial = f->present != (n >= 32 ? UINT32_MAX : (1u << n) - 1);
    if (f->partial && !f->json)
        printf("note: %u of the store's %u devices given: checked read-only, the others' slabs skipped\n",
               f->given, n);
    return true;
}

bool fsck_superblocks(fsck *f)
{
    l3_sb_copies got[L3_MAX_DEVICES];
    int best = -1;
    for (uint32_t i = 0; i < f->given; i++) {
        l3_sb_read_copies(f->dev[i].fd, f->dev[i].size, &got[i]);
        print_copies(f, f->dev[i].path, &got[i]);
        if (got[i].best >= 0 &&
            (best < 0 || got[i].copy[got[i].best].sequence > got[best].copy[got[best].best].sequence))
            best = (int)i;
    }
    if (best < 0)
        return false;
    f->sbs = got[best];
    f->sb = got[best].copy[got[best].best];
    uint32_t n = f->sb.num_devices ? f->sb.num_devices : 1;
    if (n > 1 || f->given > 1) {
        if (!place_devices(f, got, n))
            return false;
    } else {
        f->dev[0].sbs = got[0]; /* one device, given alone */
        f->present = 1;
    }
    for (uint32_t d = 0; d < f->ndev; d++)
        if (f->present >> d & 1)
            judge_copies(f, f->dev[d].path, &f->dev[d].sbs);
    return true;
}

void fsck_write_superblocks(fsck *f)
{
    l3_superblock sb = f->sb;
    if (f->mark_dirty) {
        /* The checkpoint no longer tells the truth: rebuild from headers. */
        sb.clean = 0;
        sb.sequence++;
    }
    /* Else the good copy, verbatim (its sequence keeps the checkpoint). */
    uint32_t slot = (uint32_t)l3_round_up(L3_SB_BYTES, sb.block_size);
    uint8_t *buf = calloc(1, slot);
    int broken = 0;
    for (uint32_t d = 0; d < f->ndev && buf; d++) {
        const l3_sb_copies *c = &f->dev[d].sbs;
        sb.device = d;
        for (int k = 0; k < L3_SB_COPIES; k++) {
            sb.copy = (uint32_t)k;
            l3_sb_seal(&sb);
            memcpy(buf, &sb, sizeof sb);
            int rc = fsck_write(f, buf, slot, l3_io_offset(d, (uint64_t)k * slot));
            if (rc != 0)
                fprintf(stderr, "l3fsck: writing superblock copy %d of device %u: %s\n", k, d, strerror(-rc));
            f->left += rc != 0;
            broken += rc != 0;
            if (rc == 0 && !c->valid[k])
                fsck_fixed(f, "a broken superblock copy rewritten from the good one");
        }
        uint64_t at = l3_io_offset(d, 0);
        int fd = fd_of(f, &at, false);
        if (fd < 0 || fsync(fd) != 0)
            broken++;
    }
    free(buf);
    if (broken)
        fprintf(stderr, "l3fsck: the superblocks may not be durable\n");
}

/* ---- tables ---- */

/* A truncated image: extend a file (its objects past the end are lost). */
static void check_truncation(fsck *f)
{
    for (uint32_t d = 0; d < f->ndev; d++) {
        fsck_dev *v = &f->dev[d];
        if (v->fd < 0 || v->size >= f->geo.capacity)
            continue;
        bool can = !v->blockdev;
        const char *path = v->path;
        fsck_problem(f, can, "%s is truncated: %llu of %llu bytes%s", path, (unsigned long long)v->size,
                     (unsigned long long)f->geo.capacity, can ? "; objects past the end are lost" : "");
        if (!can || !f->repair)
            continue;
        if (ftruncate(v->fd, (off_t)f->geo.capacity) != 0) {
            fprintf(stderr, "l3fsck: extending %s: %s\n", path, strerror(errno));
            f->left++;
            continue;
        }
        f->mark_dirty = true;
        fsck_fixed(f, "the image extended to its capacity");
    }
}

static bool all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++)
        if (b[i])
            return false;
    return true;
}

/* Corrupt slab records (not all zero, not valid): their objects are lost. */
static void check_records(fsck *f)
{
    uint32_t b = f->geo.block_size;
    for (uint32_t i = 0; i < f->geo.num_slabs; i++) {
        l3_slab_record *r = &f->table[i];
        if (!fsck_slab_present(f, i) || l3_slab_record_valid(r, i) || all_zero(r, sizeof *r))
            continue;
        fsck_problem(f, true, "slab %u: its record is corrupt (its objects are lost)", i);
        if (!f->repair)
            continue;
        memset(r, 0, sizeof *r);
        uint64_t blk = (uint64_t)i * L3_SLAB_RECORD_BYTES / b * b;
        repair_all(f, (uint8_t *)f->table + blk, b, f->geo.slab_table_off + blk, "a corrupt slab record zeroed");
    }
}

/* Journal records that do not check: a removal that may be forgotten. */
static void check_journal(fsck *f)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        if (!l3_journal_record_damaged(&f->journal[j]))
            continue;
        fsck_problem(f, true, "namespace journal record %u is corrupt: a removal that cannot be read (only a "
                        "checkpoint proves what it left live; without one, no object is)", j);
        f->bad_journal = true;
    }
}

/* Several devices: merged by the rulebook, as the store reads them. */
static void read_device_tables(fsck *f)
{
    l3_slab_record *tbl = calloc(1, f->geo.slab_table_len);
    l3_journal_record *jr = calloc(1, f->geo.journal_len);
    for (uint32_t d = 0; d < f->ndev && tbl && jr; d++) {
        if (!(f->present >> d & 1))
            continue;
        fsck_read(f, tbl, f->geo.slab_table_len, l3_io_offset(d, f->geo.slab_table_off));
        fsck_read(f, jr, f->geo.journal_len, l3_io_offset(d, f->geo.journal_off));
        l3_merge_device_tables(&f->geo, d, tbl, jr, f->table, f->journal);
    }
    free(tbl);
    free(jr);
}

void fsck_tables(fsck *f)
{
    check_truncation(f);
    f->table = calloc(1, f->geo.slab_table_len);
    f->journal = calloc(1, f->geo.journal_len);
    if (!f->table || !f->journal) {
        fsck_problem(f, false, "out of memory reading the slab table");
        return;
    }
    if (f->ndev <= 1) {
        fsck_read(f, f->table, f->geo.slab_table_len, f->geo.slab_table_off);
        fsck_read(f, f->journal, f->geo.journal_len, f->geo.journal_off);
    } else {
        read_device_tables(f);
    }
    check_records(f);
    check_journal(f);
}

/* ---- objects ---- */

/* Room for more objects; false (a problem reported) when out of memory. */
static bool grow_objects(fsck *f)
{
    size_t cap = f->cap_objects ? 2 * f->cap_objects : 1024;
    fsck_object *o = realloc(f->objects, cap * sizeof *o);
    if (o)
        f->objects = o;
    /* The tables keep a load of at most 1/2 (rebuilt each pass: nothing to keep). */
    size_t tcap = f->table_cap < 1024 ? 1024 : f->table_cap;
    while (tcap < 2 * cap)
        tcap <<= 1;
    uint32_t *k = tcap > f->table_cap ? realloc(f->by_key, tcap * sizeof *k) : f->by_key;
    f->by_key = k ? k : f->by_key;
    uint32_t *sl = tcap > f->table_cap ? realloc(f->by_slot, tcap * sizeof *sl) : f->by_slot;
    f->by_slot = sl ? sl : f->by_slot;
    if (!o || !k || !sl) {
        fsck_problem(f, false, "out of memory listing objects");
        return false;
    }
    f->cap_objects = cap;
    f->table_cap = tcap;
    return true;
}

static const char *intern_ns(fsck *f, const char *text, uint16_t len);

/* Add the object live by header h, if its key is this pass's: its key
 * kept for --list and -y, else its namespace's text. */
static void add_object(fsck *f, const l3_object_header *h, uint64_t offset)
{
    uint64_t hash = l3_hash64(h->key, h->key_len);
    if (!fsck_in_part(f, hash) || (f->num_objects == f->cap_objects && !grow_objects(f)))
        return;
    bool keep = f->list || f->repair;
    uint16_t nl = keep ? 0 : (uint16_t)l3_key_namespace_len(h->key, h->key_len);
    f->objects[f->num_objects++] = (fsck_object){
        .key = keep ? strndup(h->key, h->key_len) : NULL, .ns = nl ? intern_ns(f, h->key, nl) : NULL,
        .key_len = h->key_len, .slab = h->slab, .slot = h->slot, .size = h->size, .crc = h->payload_crc,
        .seq = h->seq, .offset = offset, .hash = hash, .check = l3_crc32c(0, h->key, h->key_len), .live = true };
}

/* Zero a slot's header (-y): the object is gone for good. */
static void zero_header(fsck *f, uint64_t offset, const char *what)
{
    if (!f->repair)
        return;
    uint8_t *z = calloc(1, f->geo.header_bytes);
    if (z)
        repair(f, z, f->geo.header_bytes, offset, what);
    free(z);
}

/* Where one slab's slots are read from: the whole slab in memory, or a
 * header buffer filled slot by slot. */
typedef struct slab_view {
    uint32_t slab;
    const l3_slab_record *r;
    uint8_t *whole;       /* the slab's bytes, or NULL */
    uint8_t *hdr;         /* one header (when not whole) */
    uint8_t *payload;     /* a payload buffer (verify, not whole) */
    size_t payload_cap;
} slab_view;

/* Whether a live object's payload checks (--verify). */
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
        zero_header(f, off, "a corrupt object header zeroed");
        return;
    case L3_SLOT_LIVE: break;
    }
    if (f->verify && !payload_ok(f, v, h, off, in_slab)) {
        f->corrupt_payloads++;
        fsck_problem(f, true, "object %.*s (slab %u slot %u, payload at offset %llu): payload checksum mismatch",
                     (int)(h->key_len > 120 ? 120 : h->key_len), h->key, v->slab, k,
                     (unsigned long long)(off + g->header_bytes));
        zero_header(f, off, "an object with a corrupt payload dropped");
        return;
    }
    add_object(f, h, off);
}

/* Whether summary entry k (live by the rules) names the object whose
 * header is live at its slot: x, or NULL when no header is. */
static bool entry_names(const l3_summary_entry *e, const fsck_object *x)
{
    return x && x->seq == e->seq && x->hash == e->hash && x->size == e->size && x->crc == e->crc;
}

/* Whether slab i's summary, read into buf, is one a crash scan would use
 * (l3_summary_usable); its entries' verdicts then follow its bytes (buf
 * holds l3_summary_len and a byte per slot). */
static bool summary_usable(fsck *f, uint32_t i, uint8_t *buf)
{
    const l3_geometry *g = &f->geo;
    return g->summaries && l3_summary_usable(g, buf, i, &f->table[i], f->journal,
                                             buf + l3_summary_len(g, f->table[i].payload_blocks));
}

/* Room for any slab's summary and its verdicts. */
static size_t summary_room(const fsck *f)
{
    return l3_summary_bytes(&f->geo, f->geo.max_slots) + f->geo.max_slots;
}

/* Slab i's summary into a buffer (free() it), its entries' verdicts
 * after the summary's bytes (*verdicts), or NULL when a crash scan would
 * not use it: then its headers decide, as in a crash scan. */
static uint8_t *usable_summary(fsck *f, uint32_t i, const uint8_t **verdicts)
{
    const l3_geometry *g = &f->geo;
    uint32_t pb = f->table[i].payload_blocks;
    size_t len = l3_summary_len(g, pb);
    uint8_t *buf = g->summaries ? l3_aligned_alloc(4096, summary_room(f), false) : NULL;
    if (!buf || fsck_read_bulk(f, buf, len, l3_summary_offset(g, i, pb)) < 0 || !summary_usable(f, i, buf)) {
        free(buf);
        return NULL;
    }
    *verdicts = buf + len;
    return buf;
}

/* fsck's own copy of a namespace's text (NULL when out of memory). */
static const char *intern_ns(fsck *f, const char *text, uint16_t len)
{
    size_t last = f->ns_last; /* the one asked for last: objects come in runs of one namespace */
    if (last < f->num_ns_texts && strlen(f->ns_texts[last]) == len && memcmp(f->ns_texts[last], text, len) == 0)
        return f->ns_texts[last];
    for (size_t j = 0; j < f->num_ns_texts; j++)
        if (strlen(f->ns_texts[j]) == len && memcmp(f->ns_texts[j], text, len) == 0)
            return f->ns_texts[f->ns_last = j];
    char **grown = realloc(f->ns_texts, (f->num_ns_texts + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    f->ns_texts = grown;
    f->ns_last = f->num_ns_texts;
    return f->ns_texts[f->num_ns_texts++] = strndup(text, len);
}

/* Take slab i's objects of this pass's keys from its summary, read into
 * buf, as a crash scan would, without reading its headers; false when it
 * has no summary a crash scan uses. */
static bool take_summary(fsck *f, uint32_t i, uint8_t *buf)
{
    if (!buf || !summary_usable(f, i, buf))
        return false;
    const l3_summary_head *h = (const l3_summary_head *)buf;
    const l3_summary_entry *ents = (const l3_summary_entry *)(buf + L3_SUMMARY_ENTRIES_AT);
    const uint8_t *verdicts = buf + l3_summary_len(&f->geo, f->table[i].payload_blocks);
    for (uint32_t k = 0; k < h->nslots; k++) {
        const l3_summary_entry *e = &ents[k];
        if (verdicts[k] != L3_SLOT_LIVE || !fsck_in_part(f, e->hash))
            continue;
        if (f->num_objects == f->cap_objects && !grow_objects(f))
            break;
        f->objects[f->num_objects++] = (fsck_object){
            .ns = e->ns ? intern_ns(f, h->ns_text[e->ns - 1], h->ns_len[e->ns - 1]) : NULL, .key_len = e->key_len,
            .slab = i, .slot = k, .size = e->size, .crc = e->crc, .check = e->check, .seq = e->seq,
            .offset = l3_slot_offset(&f->geo, i, h->payload_blocks, k), .hash = e->hash, .live = true };
    }
    f->summaries++;
    return true;
}

/* Check slab i's summary, where a crash scan would use it, against its
 * headers (its objects live by header are objects[first...], in slot
 * order): every live entry must name the live object at its slot, and an
 * object no entry names (written, never published: its put did not
 * complete) is not served, as a crash scan would not serve it. */
static void check_summary(fsck *f, uint32_t i, size_t first)
{
    const uint8_t *verdicts;
    uint8_t *buf = usable_summary(f, i, &verdicts);
    if (!buf)
        return;
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
            repair(f, buf, f->geo.block_size, l3_summary_offset(&f->geo, i, f->table[i].payload_blocks),
                   "a summary that disagrees with its headers dropped (a crash scan reads them)");
        }
    }
    free(buf);
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

/* Slots of every slab in use, for the progress line. */
static uint64_t used_slots(fsck *f)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < f->geo.num_slabs; i++)
        if (l3_slab_in_use(&f->table[i], i, f->sb.epoch))
            n += l3_slots_per_slab(&f->geo, f->table[i].payload_blocks);
    return n;
}

/* Whether an object's payload matches its crc (read from the image). */
static bool object_checks(fsck *f, const fsck_object *o)
{
    size_t len = l3_round_up(o->size, f->geo.block_size);
    uint8_t *buf = malloc(len ? len : 1);
    bool ok = buf && fsck_read(f, buf, len, o->offset + f->geo.header_bytes) == 0 &&
              l3_crc32c(0, buf, o->size) == o->crc;
    free(buf);
    return ok;
}

/* Of two live objects x (indexed) and o of one key, the one the rules
 * serve: the higher sequence unless its payload is torn. */
static bool o_beats_x(fsck *f, const fsck_object *o, const fsck_object *x)
{
    return l3_dup_wins(o->seq, x->seq, object_checks(f, o->seq > x->seq ? o : x));
}

size_t fsck_table_home(const fsck *f, uint64_t key)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (f->table_cap - 1);
}

size_t fsck_table_slot(const fsck *f, const uint32_t *t, uint64_t key, size_t i,
                       bool (*same)(const fsck *, size_t, size_t))
{
    size_t p = fsck_table_home(f, key);
    while (t[p] != UINT32_MAX && !same(f, t[p], i))
        p = (p + 1) & (f->table_cap - 1);
    return p;
}

static bool same_key(const fsck *f, size_t a, size_t b)
{
    const fsck_object *x = &f->objects[a], *o = &f->objects[b];
    return x->hash == o->hash && x->check == o->check && x->key_len == o->key_len;
}

/* Of two live objects of one key, the rules' winner stays live (a key is
 * its hash, crc and length, as in the store's index). O(objects). */
static void supersede(fsck *f)
{
    memset(f->by_key, 0xff, f->table_cap * sizeof *f->by_key);
    for (size_t i = 0; i < f->num_objects; i++) {
        fsck_object *o = &f->objects[i];
        size_t p = fsck_table_slot(f, f->by_key, o->hash, i, same_key);
        if (f->by_key[p] == UINT32_MAX) {
            f->by_key[p] = (uint32_t)i;
            continue;
        }
        fsck_object *x = &f->objects[f->by_key[p]];
        fsck_object *loser = o_beats_x(f, o, x) ? x : o;
        loser->live = false;
        f->superseded++;
        if (loser == x)
            f->by_key[p] = (uint32_t)i;
    }
}

static void save_counts(fsck *f, fsck_counts *c, bool restore)
{
    fsck_counts now = { f->stale, f->corrupt_headers, f->corrupt_payloads, f->deleted, f->empty_slots,
                        f->summaries, f->header_slabs };
    if (!restore) {
        *c = now;
        return;
    }
    f->stale = c->stale, f->corrupt_headers = c->corrupt_headers, f->corrupt_payloads = c->corrupt_payloads;
    f->deleted = c->deleted, f->empty_slots = c->empty_slots, f->summaries = c->summaries;
    f->header_slabs = c->header_slabs;
}

bool fsck_plan_passes(fsck *f)
{
    /* A pass's object and its two table slots (at a load of at most 1/2). */
    uint64_t slots = used_slots(f), per = sizeof(fsck_object) + 4 * sizeof(uint32_t);
    uint64_t need = slots * per;
    f->parts = f->headers || need <= f->memory ? 1 : (uint32_t)((need + f->memory - 1) / f->memory);
    f->cap_objects = (size_t)(slots / f->parts + slots / f->parts / 16 + 1024); /* a hash range's skew */
    f->table_cap = 1024;
    while (f->table_cap < 2 * f->cap_objects)
        f->table_cap <<= 1;
    f->objects = malloc(f->cap_objects * sizeof *f->objects);
    f->by_key = malloc(f->table_cap * sizeof *f->by_key);
    f->by_slot = malloc(f->table_cap * sizeof *f->by_slot);
    if (!f->objects || !f->by_key || !f->by_slot) {
        fsck_problem(f, false, "out of memory for %zu objects a pass", f->cap_objects);
        return false;
    }
    return true;
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
    f->header_slabs++;
    /* Verifying, or headers a quarter of the slab or more: read it whole. */
    bool read_whole = f->verify || (uint64_t)nslots * g->header_bytes * 4 >= g->slab_size;
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
    check_summary(f, i, first);
}

void fsck_objects(fsck *f)
{
    const l3_geometry *g = &f->geo;
    for (size_t i = 0; i < f->num_objects; i++)
        free(f->objects[i].key);
    f->num_objects = 0;
    for (uint32_t d = 0; d < f->ndev; d++)
        if (f->dev[d].dfd < 0 && f->dev[d].path)
            f->dev[d].dfd = open(f->dev[d].path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    size_t n;
    uint32_t *slabs = slabs_to_check(f, &n);
    slab_view v = { .hdr = l3_aligned_alloc(4096, g->header_bytes, false) };
    summary_reads reads = { .f = f, .slabs = slabs };
    size_t room = summary_room(f);
    l3_readahead_spec spec = { .items = n, .buf_bytes = room ? room : 4096, .ring = 2, .threads = 1,
                               .read = read_summary, .arg = &reads };
    l3_readahead *ra = NULL;
    bool reading = slabs && v.hdr && l3_readahead_start(&spec, &ra, NULL) == L3_OK;
    uint8_t *whole = NULL;
    uint64_t total = used_slots(f), done = 0;
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
    supersede(f);
}

/* ---- a corrupt journal record ---- */

/* Drop object o (-y) as the store's delete does: its header zeroed, then
 * its slab summary's entry (a summary written before names it, and a
 * crash scan, or the next check, would take the summary's word). */
static void drop_object(fsck *f, const fsck_object *o, const char *what)
{
    const l3_geometry *g = &f->geo;
    int left = f->left;
    zero_header(f, o->offset, what);
    if (!f->repair || f->left != left || !g->summaries)
        return;
    static const uint8_t zero[sizeof(l3_summary_entry)];
    uint64_t at = l3_summary_offset(g, o->slab, f->table[o->slab].payload_blocks) + L3_SUMMARY_ENTRIES_AT +
                  (uint64_t)o->slot * sizeof(l3_summary_entry);
    int rc = fsck_write(f, zero, sizeof zero, at);
    if (rc != 0) {
        fprintf(stderr, "l3fsck: zeroing a summary entry at %llu: %s\n", (unsigned long long)at, strerror(-rc));
        f->left++; /* its summary still names it */
    }
}

/* Whether a present device missed the store's last session: a store opens
 * it by its rules, not its checkpoint (FORMAT.md "Several devices"). */
static bool device_behind(const fsck *f)
{
    for (uint32_t d = 0; d < f->ndev; d++) {
        const l3_sb_copies *c = &f->dev[d].sbs;
        if ((f->present >> d & 1) && c->best >= 0 && c->copy[c->best].sequence < f->sb.sequence)
            return true;
    }
    return false;
}

/* Whether the store opens from its checkpoint, every device with it, as
 * far as the passes so far know (after the last one: the verdict). */
static bool checkpoint_used(const fsck *f)
{
    return f->sb.clean && f->checkpoint_read && f->checkpoint_checks && !f->checkpoint_missing && !device_behind(f);
}

void fsck_journal_verdict(fsck *f)
{
    if (!l3_journal_lost_removal(f->journal, checkpoint_used(f)))
        return;
    for (size_t i = 0; i < f->num_objects; i++)
        f->objects[i].live = false;
}

/* Its prefix and sequence are lost, so what it removed cannot be told
 * from the rest (rules.h, l3_journal_lost_removal). With the checkpoint
 * the store opens from, the objects that are live by their headers but
 * not in it are exactly those the store no longer serves: they are
 * dropped. Without one, the epoch is bumped and the store starts empty,
 * as the store's own open does: a cache may lose pages, never serve
 * removed ones. */
void fsck_journal_repair(fsck *f)
{
    if (!f->bad_journal || !f->repair)
        return;
    if (!l3_journal_lost_removal(f->journal, checkpoint_used(f))) {
        for (size_t i = 0; i < f->num_objects; i++)
            if (!f->objects[i].live)
                drop_object(f, &f->objects[i], "an object a lost removal covered dropped");
    } else {
        f->sb.epoch++;
        f->mark_dirty = true;
        fsck_fixed(f, "the store emptied (epoch bumped): a removal it cannot read is kept");
    }
    uint32_t b = f->geo.block_size;
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        l3_journal_record *r = &f->journal[j];
        if (!l3_journal_record_damaged(r))
            continue;
        memset(r, 0, sizeof *r);
        uint64_t blk = (uint64_t)j * L3_JOURNAL_RECORD_BYTES / b * b;
        repair_all(f, (uint8_t *)f->journal + blk, b, f->geo.journal_off + blk, "a corrupt journal record zeroed");
    }
}

/* ---- permissions ---- */

/* One file's mode: anything for other users is an error (a KV cache holds
 * what reconstructs its prompts); -y takes it away. */
static void check_mode(fsck *f, const char *what, const char *path, int fd)
{
    struct stat st;
    if ((fd >= 0 ? fstat(fd, &st) : stat(path, &st)) != 0 || !(st.st_mode & 0007u))
        return;
    fsck_problem(f, true, "%s %s is open to other users (mode %04o)", what, path, (unsigned)(st.st_mode & 07777u));
    if (!f->repair)
        return;
    mode_t tight = st.st_mode & 0770u;
    if ((fd >= 0 ? fchmod(fd, tight) : chmod(path, tight)) != 0) {
        fprintf(stderr, "l3fsck: chmod %s: %s\n", path, strerror(errno));
        f->left++;
        return;
    }
    fsck_fixed(f, "permissions for other users removed");
}

void fsck_permissions(fsck *f)
{
    struct stat file, shm;
    char name[96], path[160];
    if (fstat(f->fd, &file) != 0)
        return;
    for (uint32_t d = 0; d < f->ndev; d++)
        if (f->dev[d].fd >= 0)
            check_mode(f, f->ndev > 1 ? "the store's device" : "the store", f->dev[d].path,
                       f->dev[d].blockdev ? -1 : f->dev[d].fd);
    l3_shm_name_of(&file, name, sizeof name);
    snprintf(path, sizeof path, "/dev/shm%s", name);
    if (stat(path, &shm) != 0)
        return;
    if (shm.st_uid != file.st_uid && shm.st_uid != geteuid())
        fsck_problem(f, false, "the shared object %s is owned by uid %u, not the store's owner (uid %u): it may be "
                     "another user's; with no l3cache process running, remove it: rm %s", path,
                     (unsigned)shm.st_uid, (unsigned)file.st_uid, path);
    else
        check_mode(f, "the shared object", path, -1);
}
