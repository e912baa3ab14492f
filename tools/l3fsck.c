/* l3fsck: inspect, verify and repair an l3cache store image or device.
 *
 *   l3fsck [-n|-y] [--verify] [--list [--prefix P]] [--json] [--slabs] PATH
 *
 * Read-only unless -y. Exit codes as e2fsck: 0 clean, 1 errors corrected,
 * 4 errors left uncorrected, 8 operational error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "l3_crc32c.h"
#include "format.h"
#include "hash.h"
#include "index.h"
#include "l3_slabstore.h"

#define EXIT_CLEAN 0
#define EXIT_FIXED 1
#define EXIT_UNFIXED 4
#define EXIT_OPERATIONAL 8

typedef struct object {
    char *key;
    uint16_t key_len;
    uint32_t slab, slot, size, crc;
    uint64_t seq, offset;
    bool live;
} object;

typedef struct fsck {
    const char *path;
    int fd;
    bool repair, verify, list, json, slabs_verbose, tty;
    const char *prefix;
    uint64_t size;
    bool blockdev;
    l3_superblock copies[L3_SB_COPIES];
    bool copy_valid[L3_SB_COPIES];
    char copy_why[L3_SB_COPIES][128];
    l3_superblock sb;
    int best;
    l3_geometry geo;
    l3_slab_record *table;
    l3_journal_record *journal;
    object *objects;
    size_t num_objects, cap_objects;
    uint64_t stale, corrupt_headers, corrupt_payloads, deleted, empty_slots;
    json_t *errors, *repairs, *attached;
    int found, fixed;
    bool mark_dirty;
    bool sync_copies; /* a valid copy is older: rewrite both, not an error */
    bool checkpoint_valid;
    uint64_t checkpoint_entries;
    char checkpoint_why[128];
} fsck;

static void problem(fsck *f, bool fixable, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void problem(fsck *f, bool fixable, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    f->found++;
    json_array_append_new(f->errors, json_string(buf));
    if (fixable && f->repair) {
        f->fixed++;
        json_array_append_new(f->repairs, json_string(buf));
    }
    if (!f->json)
        printf("%s: %s%s\n", f->repair && fixable ? "fixed" : "error", buf,
               fixable && !f->repair ? " (fixable with -y)" : "");
}

static int read_at(fsck *f, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
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

static int write_at(fsck *f, const void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(f->fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -errno;
        done += (size_t)n;
    }
    return 0;
}

static void human(uint64_t bytes, char *out, size_t len)
{
    const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void check_superblocks(fsck *f)
{
    uint32_t slot_sizes[] = { 4096, 8192, 16384, 32768, 65536 };
    f->best = -1;
    for (int c = 0; c < L3_SB_COPIES; c++) {
        f->copy_valid[c] = false;
        snprintf(f->copy_why[c], sizeof f->copy_why[c], "not found");
        for (size_t k = 0; k < 5 && !f->copy_valid[c]; k++) {
            uint64_t off = (uint64_t)c * slot_sizes[k];
            if (c == 0 && k > 0)
                break;
            l3_superblock sb;
            if (read_at(f, &sb, sizeof sb, off) != 0)
                continue;
            char why[128];
            if (!l3_sb_valid(&sb, why, sizeof why)) {
                if (k == 0 || c == 0)
                    snprintf(f->copy_why[c], sizeof f->copy_why[c], "%s", why);
                continue;
            }
            if (sb.copy != (uint32_t)c || l3_round_up(L3_SB_BYTES, sb.block_size) != slot_sizes[k])
                continue;
            f->copies[c] = sb;
            f->copy_valid[c] = true;
            snprintf(f->copy_why[c], sizeof f->copy_why[c], "valid");
            if (f->best < 0 || sb.sequence > f->copies[f->best].sequence)
                f->best = c;
        }
    }
    if (f->best >= 0)
        f->sb = f->copies[f->best];
}

static void add_object(fsck *f, const l3_object_header *h, uint64_t offset)
{
    if (f->num_objects == f->cap_objects) {
        f->cap_objects = f->cap_objects ? 2 * f->cap_objects : 1024;
        f->objects = realloc(f->objects, f->cap_objects * sizeof *f->objects);
    }
    object *o = &f->objects[f->num_objects++];
    o->key = strndup(h->key, h->key_len);
    o->key_len = h->key_len;
    o->slab = h->slab;
    o->slot = h->slot;
    o->size = h->size;
    o->crc = h->payload_crc;
    o->seq = h->seq;
    o->offset = offset;
    o->live = true;
}

static bool journal_kills(fsck *f, const l3_object_header *h)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &f->journal[j];
        if (l3_journal_record_valid(r) && r->epoch == f->sb.epoch && h->seq < r->seq &&
            r->prefix_len <= h->key_len && memcmp(h->key, r->prefix, r->prefix_len) == 0)
            return true;
    }
    return false;
}

static void zero_header(fsck *f, uint64_t offset)
{
    if (!f->repair)
        return;
    uint8_t *z = calloc(1, f->geo.header_bytes);
    if (write_at(f, z, f->geo.header_bytes, offset) != 0)
        fprintf(stderr, "l3fsck: writing at %llu: %s\n", (unsigned long long)offset, strerror(errno));
    free(z);
    f->mark_dirty = true;
}

static uint64_t total_used_slots(fsck *f)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < f->geo.num_slabs; i++) {
        const l3_slab_record *r = &f->table[i];
        if (l3_slab_record_valid(r, i) && r->state == L3_SLAB_USED && r->epoch == f->sb.epoch)
            n += l3_slots_per_slab(&f->geo, r->payload_blocks);
    }
    return n;
}

static void progress(fsck *f, uint64_t done, uint64_t total)
{
    if (!f->tty || f->json || !total)
        return;
    fprintf(stderr, "\r%s: %llu/%llu slots (%llu%%)", f->verify ? "verifying" : "scanning",
            (unsigned long long)done, (unsigned long long)total,
            (unsigned long long)(done * 100 / total));
    if (done == total)
        fputc('\n', stderr);
}

static void scan_objects(fsck *f)
{
    const l3_geometry *g = &f->geo;
    uint32_t hb = g->header_bytes, b = g->block_size;
    uint8_t *hdr = malloc(hb);
    uint8_t *payload = NULL;
    size_t payload_cap = 0;
    uint64_t total = total_used_slots(f), done = 0;
    for (uint32_t i = 0; i < g->num_slabs; i++) {
        const l3_slab_record *r = &f->table[i];
        if (!l3_slab_record_valid(r, i) || r->state != L3_SLAB_USED || r->epoch != f->sb.epoch)
            continue;
        uint32_t nslots = l3_slots_per_slab(g, r->payload_blocks);
        for (uint32_t k = 0; k < nslots; k++, done++) {
            if ((done & 1023) == 0)
                progress(f, done, total);
            uint64_t off = l3_slot_offset(g, i, r->payload_blocks, k);
            if (read_at(f, hdr, hb, off) < 0) {
                problem(f, false, "slab %u slot %u: unreadable header at offset %llu", i, k,
                        (unsigned long long)off);
                continue;
            }
            const l3_object_header *h = (const l3_object_header *)hdr;
            if (h->magic != L3_OBJECT_MAGIC) {
                f->empty_slots++;
                continue;
            }
            if (!l3_object_header_valid(h, hb)) {
                f->corrupt_headers++;
                problem(f, true, "slab %u slot %u: corrupt object header at offset %llu", i, k,
                        (unsigned long long)off);
                zero_header(f, off);
                continue;
            }
            if (h->epoch != f->sb.epoch || h->slab != i || h->slot != k || h->slab_gen != r->gen ||
                (h->size + b - 1) / b > r->payload_blocks) {
                f->stale++;
                continue;
            }
            if (journal_kills(f, h)) {
                f->deleted++;
                continue;
            }
            if (f->verify) {
                size_t len = l3_round_up(h->size, b);
                if (len > payload_cap) {
                    payload = realloc(payload, len);
                    payload_cap = len;
                }
                if (read_at(f, payload, len, off + hb) != 0 ||
                    l3_crc32c(0, payload, h->size) != h->payload_crc) {
                    f->corrupt_payloads++;
                    problem(f, true, "object %.*s (slab %u slot %u, payload at offset %llu): "
                                     "payload checksum mismatch",
                            (int)(h->key_len > 120 ? 120 : h->key_len), h->key, i, k,
                            (unsigned long long)(off + hb));
                    zero_header(f, off);
                    continue;
                }
            }
            add_object(f, h, off);
        }
    }
    progress(f, total, total);
    free(hdr);
    free(payload);
    /* The same key twice: the higher sequence wins, as at recovery. */
    for (size_t a = 0; a < f->num_objects; a++) {
        for (size_t c = a + 1; c < f->num_objects; c++) {
            object *x = &f->objects[a], *y = &f->objects[c];
            if (x->live && y->live && x->key_len == y->key_len && memcmp(x->key, y->key, x->key_len) == 0) {
                object *loser = x->seq < y->seq ? x : y;
                loser->live = false;
                f->stale++;
            }
        }
        if (f->num_objects > 200000)
            break; /* quadratic; large images trust the index's dedupe */
    }
}

/* When clean, the store serves the checkpoint: check it and keep only the
 * objects it lists. */
static void check_checkpoint(fsck *f)
{
    const l3_geometry *g = &f->geo;
    uint32_t b = g->block_size;
    f->checkpoint_valid = false;
    if (!f->sb.clean) {
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "not used: the store was not closed cleanly");
        return;
    }
    l3_checkpoint_header h;
    if (read_at(f, &h, sizeof h, g->checkpoint_off) != 0 || !l3_checkpoint_header_valid(&h) ||
        h.sequence != f->sb.sequence || h.body_crc != f->sb.ckpt_crc ||
        h.body_bytes != f->sb.ckpt_bytes || b + h.body_bytes > g->checkpoint_len) {
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "header invalid or stale");
        problem(f, true, "checkpoint: the header is invalid or does not match the superblock");
        f->mark_dirty = true;
        return;
    }
    uint8_t *body = malloc(h.body_bytes ? h.body_bytes : 1);
    if (read_at(f, body, h.body_bytes, g->checkpoint_off + b) != 0 ||
        l3_crc32c(0, body, h.body_bytes) != h.body_crc) {
        free(body);
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "body checksum mismatch");
        problem(f, true, "checkpoint: body checksum mismatch");
        f->mark_dirty = true;
        return;
    }
    const uint8_t *p = body + (uint64_t)h.num_namespaces * sizeof(l3_ns_record) + (uint64_t)h.num_slabs * 4;
    for (size_t i = 0; i < f->num_objects; i++)
        f->objects[i].live = false;
    uint64_t missing = 0;
    for (uint64_t k = 0; k < h.num_entries; k++) {
        l3_index_entry e;
        memcpy(&e, p + k * sizeof e, sizeof e);
        bool found = false;
        for (size_t i = 0; i < f->num_objects && !found; i++) {
            object *o = &f->objects[i];
            if (o->slab == e.slab && o->slot == e.slot && o->seq == e.seq && o->size == e.size &&
                o->crc == e.crc && l3_hash64(o->key, o->key_len) == e.hash) {
                o->live = true;
                found = true;
            }
        }
        missing += !found;
    }
    free(body);
    f->checkpoint_entries = h.num_entries;
    if (missing) {
        snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "%llu entries without a valid object",
                 (unsigned long long)missing);
        problem(f, true, "checkpoint: %llu entries name no valid object on disk",
                (unsigned long long)missing);
        f->mark_dirty = true;
        return;
    }
    f->checkpoint_valid = true;
    snprintf(f->checkpoint_why, sizeof f->checkpoint_why, "valid");
}

static json_t *sb_json(const l3_superblock *sb)
{
    char uuid[33];
    for (int i = 0; i < 16; i++)
        sprintf(uuid + 2 * i, "%02x", sb->uuid[i]);
    return json_pack("{s:I,s:s,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "sequence",
                     (json_int_t)sb->sequence, "uuid", uuid, "epoch", (json_int_t)sb->epoch, "clean",
                     sb->clean != 0, "block_size", (json_int_t)sb->block_size, "slab_size",
                     (json_int_t)sb->slab_size, "num_slabs", (json_int_t)sb->num_slabs, "capacity",
                     (json_int_t)sb->capacity, "data_off", (json_int_t)sb->data_off, "max_objects",
                     (json_int_t)sb->max_objects, "next_seq", (json_int_t)sb->next_seq, "version",
                     (json_int_t)sb->version);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: l3fsck [-n | -y] [--verify] [--list [--prefix P]] [--slabs] [--json] PATH\n"
            "  -n          never write (the default)\n"
            "  -y          repair: drop corrupt objects, rewrite a broken superblock copy,\n"
            "              zero broken slab records, extend a truncated image\n"
            "  --verify    read every object's payload and check its crc32c\n"
            "  --list      list the objects the store serves (--prefix P: keys starting with P)\n"
            "  --slabs     print every used slab\n"
            "  --json      machine-readable output\n"
            "exit: 0 clean, 1 errors corrected, 4 errors left, 8 operational error\n");
    return EXIT_OPERATIONAL;
}

int main(int argc, char **argv)
{
    fsck f = { .fd = -1, .best = -1 };
    int code = EXIT_CLEAN;
    static const struct option longs[] = {
        { "verify", no_argument, 0, 'v' }, { "list", no_argument, 0, 'l' },
        { "prefix", required_argument, 0, 'p' }, { "json", no_argument, 0, 'j' },
        { "slabs", no_argument, 0, 's' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
    };
    int c;
    bool no_write = false;
    while ((c = getopt_long(argc, argv, "nyh", longs, NULL)) != -1) {
        switch (c) {
        case 'n': no_write = true; break;
        case 'y': f.repair = true; break;
        case 'v': f.verify = true; break;
        case 'l': f.list = true; break;
        case 'p': f.prefix = optarg; break;
        case 'j': f.json = true; break;
        case 's': f.slabs_verbose = true; break;
        default: { code = usage(); goto out; }
        }
    }
    if (optind != argc - 1 || (no_write && f.repair))
        { code = usage(); goto out; }
    f.path = argv[optind];
    f.tty = isatty(2);
    f.errors = json_array();
    f.repairs = json_array();
    struct stat st;
    if (stat(f.path, &st) != 0) {
        fprintf(stderr, "l3fsck: %s: %s\n", f.path, strerror(errno));
        { code = EXIT_OPERATIONAL; goto out; }
    }
    f.blockdev = S_ISBLK(st.st_mode);
    f.fd = open(f.path, (f.repair ? O_RDWR : O_RDONLY) | (f.blockdev && f.repair ? O_EXCL : 0));
    if (f.fd < 0) {
        fprintf(stderr, "l3fsck: %s: %s%s\n", f.path, strerror(errno),
                errno == EBUSY ? " (the store is open in another process: not repairing)" : "");
        { code = EXIT_OPERATIONAL; goto out; }
    }
    int32_t pids[64];
    int attached = l3_slabstore_attached_at(f.path, pids, 64);
    if (attached > 0) {
        char list[512] = "";
        for (int i = 0; i < attached && i < 64; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? " " : "", pids[i]);
        if (!f.json)
            printf("attached processes: %d (pid %s)\n", attached, list);
        f.attached = json_array();
        for (int i = 0; i < attached && i < 64; i++)
            json_array_append_new(f.attached, json_integer(pids[i]));
    }
    bool in_use = attached > 0 || flock(f.fd, (f.repair ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0;
    if (in_use && f.repair) {
        fprintf(stderr, "l3fsck: %s is open in %s: refusing to repair\n", f.path,
                attached > 0 ? "attached processes" : "another process");
        { code = EXIT_OPERATIONAL; goto out; }
    }
    if (in_use)
        fprintf(stderr, "l3fsck: warning: %s is open in another process; what it writes meanwhile "
                        "may show as errors\n", f.path);
    if (f.blockdev) {
        if (ioctl(f.fd, BLKGETSIZE64, &f.size) != 0)
            f.size = 0;
    } else {
        f.size = (uint64_t)st.st_size;
    }
    check_superblocks(&f);
    if (!f.json) {
        printf("l3fsck: %s (%s, %llu bytes)%s\n", f.path, f.blockdev ? "block device" : "file",
               (unsigned long long)f.size, f.repair ? "" : " read-only");
        for (int k = 0; k < L3_SB_COPIES; k++) {
            if (f.copy_valid[k])
                printf("superblock copy %d: valid, sequence %llu, %s, epoch %llu\n", k,
                       (unsigned long long)f.copies[k].sequence, f.copies[k].clean ? "clean" : "dirty",
                       (unsigned long long)f.copies[k].epoch);
            else
                printf("superblock copy %d: %s\n", k, f.copy_why[k]);
        }
    }
    if (f.best < 0) {
        /* As e2fsck with a bad magic: nothing to check, an operational error. */
        problem(&f, false, "no valid superblock: this is not an l3cache store, or both copies are lost");
        if (!f.json)
            printf("result: not an l3cache store\n");
        else
            printf("{\"path\": \"%s\", \"errors\": [\"no valid superblock\"], \"exit\": 8}\n", f.path);
        { code = EXIT_OPERATIONAL; goto out; }
    }
    char why[256];
    if (!l3_geometry_from_sb(&f.sb, &f.geo, why, sizeof why)) {
        problem(&f, false, "superblock geometry: %s", why);
        goto report;
    }
    for (int k = 0; k < L3_SB_COPIES; k++) {
        if (!f.copy_valid[k] || f.copies[k].sequence != f.sb.sequence) {
            if (f.copy_valid[k]) {
                /* An interrupted superblock write: normal after a crash,
                 * and the store's next superblock write rewrites both. */
                f.sync_copies = true;
                if (!f.json)
                    printf("note: superblock copy %d is older (sequence %llu) than copy %d: an "
                           "interrupted superblock write%s\n",
                           k, (unsigned long long)f.copies[k].sequence, f.best,
                           f.repair ? "; rewritten" : "; the next open rewrites it");
            } else
                problem(&f, true, "superblock copy %d is broken (%s); copy %d is good", k,
                        f.copy_why[k], f.best);
        }
    }
    if (!f.json) {
        char slab[32], data[32], cap[32];
        human(f.geo.slab_size, slab, sizeof slab);
        human((uint64_t)f.geo.num_slabs * f.geo.slab_size, data, sizeof data);
        human(f.geo.capacity, cap, sizeof cap);
        char uuid[33];
        for (int i = 0; i < 16; i++)
            sprintf(uuid + 2 * i, "%02x", f.sb.uuid[i]);
        printf("store %s: format %u, capacity %s, %u slabs of %s (%s of data), block %u, "
               "max objects %llu\n",
               uuid, f.sb.version, cap, f.geo.num_slabs, slab, data, f.geo.block_size,
               (unsigned long long)f.geo.max_objects);
    }
    if (f.size < f.geo.capacity) {
        bool can = !f.blockdev;
        problem(&f, can, "the image is truncated: %llu of %llu bytes%s", (unsigned long long)f.size,
                (unsigned long long)f.geo.capacity, can ? "; objects past the end are lost" : "");
        if (can && f.repair) {
            if (ftruncate(f.fd, (off_t)f.geo.capacity) != 0)
                fprintf(stderr, "l3fsck: extending: %s\n", strerror(errno));
            f.mark_dirty = true;
        }
    }
    f.table = calloc(1, f.geo.slab_table_len);
    f.journal = calloc(1, f.geo.journal_len);
    read_at(&f, f.table, f.geo.slab_table_len, f.geo.slab_table_off);
    read_at(&f, f.journal, f.geo.journal_len, f.geo.journal_off);
    static const uint8_t zeros[L3_SLAB_RECORD_BYTES];
    for (uint32_t i = 0; i < f.geo.num_slabs; i++) {
        l3_slab_record *r = &f.table[i];
        if (!l3_slab_record_valid(r, i) && memcmp(r, zeros, sizeof zeros) != 0) {
            problem(&f, true, "slab %u: its record is corrupt (its objects are lost)", i);
            if (f.repair) {
                memset(r, 0, sizeof *r);
                uint64_t blk = (uint64_t)i * L3_SLAB_RECORD_BYTES / f.geo.block_size * f.geo.block_size;
                write_at(&f, (uint8_t *)f.table + blk, f.geo.block_size, f.geo.slab_table_off + blk);
                f.mark_dirty = true;
            }
        }
    }
    scan_objects(&f);
    check_checkpoint(&f);

    /* Summaries over the objects the store serves. */
    uint64_t live = 0, live_bytes = 0;
    json_t *classes = json_object(), *namespaces = json_object(), *list = json_array();
    for (size_t i = 0; i < f.num_objects; i++) {
        object *o = &f.objects[i];
        if (!o->live)
            continue;
        live++;
        live_bytes += o->size;
        char cls[32];
        snprintf(cls, sizeof cls, "%u", f.table[o->slab].payload_blocks * f.geo.block_size);
        json_t *row = json_object_get(classes, cls);
        if (!row) {
            row = json_pack("{s:I,s:I}", "objects", (json_int_t)0, "bytes", (json_int_t)0);
            json_object_set_new(classes, cls, row);
        }
        json_object_set_new(row, "objects", json_integer(json_integer_value(json_object_get(row, "objects")) + 1));
        json_object_set_new(row, "bytes", json_integer(json_integer_value(json_object_get(row, "bytes")) + o->size));
        size_t nl = l3_key_namespace_len(o->key, o->key_len);
        char ns[L3_NS_TEXT_MAX + 8];
        snprintf(ns, sizeof ns, "%.*s", (int)nl, o->key);
        if (!nl)
            snprintf(ns, sizeof ns, "(none)");
        row = json_object_get(namespaces, ns);
        if (!row) {
            row = json_pack("{s:I,s:I}", "objects", (json_int_t)0, "bytes", (json_int_t)0);
            json_object_set_new(namespaces, ns, row);
        }
        json_object_set_new(row, "objects", json_integer(json_integer_value(json_object_get(row, "objects")) + 1));
        json_object_set_new(row, "bytes", json_integer(json_integer_value(json_object_get(row, "bytes")) + o->size));
        if (f.list && (!f.prefix || strncmp(o->key, f.prefix, strlen(f.prefix)) == 0)) {
            if (f.json)
                json_array_append_new(list, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "key", o->key, "size",
                                                      (json_int_t)o->size, "slab", (json_int_t)o->slab,
                                                      "slot", (json_int_t)o->slot, "seq", (json_int_t)o->seq,
                                                      "offset", (json_int_t)o->offset));
            else
                printf("%s\t%u\tslab %u\tslot %u\tseq %llu\toffset %llu\n", o->key, o->size, o->slab,
                       o->slot, (unsigned long long)o->seq, (unsigned long long)o->offset);
        }
    }
    uint32_t slab_used_table = 0;
    json_t *slabs = json_array();
    for (uint32_t i = 0; i < f.geo.num_slabs; i++) {
        const l3_slab_record *r = &f.table[i];
        if (!l3_slab_record_valid(r, i) || r->state != L3_SLAB_USED || r->epoch != f.sb.epoch)
            continue;
        slab_used_table++;
        uint64_t n = 0;
        for (size_t k = 0; k < f.num_objects; k++)
            n += f.objects[k].live && f.objects[k].slab == i;
        json_array_append_new(slabs, json_pack("{s:I,s:I,s:I,s:I}", "slab", (json_int_t)i, "class",
                                               (json_int_t)r->payload_blocks * f.geo.block_size, "gen",
                                               (json_int_t)r->gen, "objects", (json_int_t)n));
        if (!f.json && f.slabs_verbose)
            printf("slab %u: class %u bytes, generation %llu, %llu objects\n", i,
                   r->payload_blocks * f.geo.block_size, (unsigned long long)r->gen,
                   (unsigned long long)n);
    }
    if (!f.json) {
        char b1[32];
        printf("checkpoint: %s\n", f.checkpoint_why);
        printf("slabs: %u used, %u free\n", slab_used_table, f.geo.num_slabs - slab_used_table);
        const char *k;
        json_t *v;
        json_object_foreach(classes, k, v) {
            human((uint64_t)json_integer_value(json_object_get(v, "bytes")), b1, sizeof b1);
            printf("  class %s bytes: %lld objects, %s\n", k,
                   (long long)json_integer_value(json_object_get(v, "objects")), b1);
        }
        printf("namespaces:\n");
        json_object_foreach(namespaces, k, v) {
            human((uint64_t)json_integer_value(json_object_get(v, "bytes")), b1, sizeof b1);
            printf("  %s  %lld objects, %s\n", k,
                   (long long)json_integer_value(json_object_get(v, "objects")), b1);
        }
        human(live_bytes, b1, sizeof b1);
        printf("objects: %llu served (%s), %llu stale, %llu deleted, %llu corrupt headers, "
               "%llu corrupt payloads%s\n",
               (unsigned long long)live, b1, (unsigned long long)f.stale,
               (unsigned long long)f.deleted, (unsigned long long)f.corrupt_headers,
               (unsigned long long)f.corrupt_payloads, f.verify ? "" : " (payloads not read: --verify)");
    }
    if (f.repair && (f.fixed || f.mark_dirty || f.sync_copies)) {
        /* Rewrite both superblock copies from the good one; a repaired
         * object set is rebuilt from headers at the next open. */
        l3_superblock sb = f.sb;
        if (f.mark_dirty) {
            /* The checkpoint no longer tells the truth: rebuild from headers. */
            sb.clean = 0;
            sb.sequence++;
        }
        /* Else the good copy, verbatim (its sequence keeps the checkpoint). */
        uint32_t slot = (uint32_t)l3_round_up(L3_SB_BYTES, sb.block_size);
        uint8_t *buf = calloc(1, slot);
        for (int k = 0; k < L3_SB_COPIES; k++) {
            sb.copy = (uint32_t)k;
            l3_sb_seal(&sb);
            memcpy(buf, &sb, sizeof sb);
            if (write_at(&f, buf, slot, (uint64_t)k * slot) != 0) {
                fprintf(stderr, "l3fsck: writing superblock copy %d: %s\n", k, strerror(errno));
                f.fixed = 0;
            }
        }
        free(buf);
        fsync(f.fd);
    }
    if (f.json) {
        json_t *root = json_object();
        json_object_set_new(root, "path", json_string(f.path));
        json_t *copies = json_array();
        for (int k = 0; k < L3_SB_COPIES; k++) {
            json_t *cj = f.copy_valid[k] ? sb_json(&f.copies[k]) : json_object();
            json_object_set_new(cj, "copy", json_integer(k));
            json_object_set_new(cj, "status", json_string(f.copy_why[k]));
            json_array_append_new(copies, cj);
        }
        json_object_set_new(root, "superblocks", copies);
        if (f.attached)
            json_object_set(root, "attached", f.attached);
        else
            json_object_set_new(root, "attached", json_array());
        json_object_set_new(root, "checkpoint", json_pack("{s:b,s:s,s:I}", "valid", f.checkpoint_valid,
                                                          "status", f.checkpoint_why, "entries",
                                                          (json_int_t)f.checkpoint_entries));
        json_object_set_new(root, "slabs", slabs);
        json_object_set_new(root, "classes", classes);
        json_object_set_new(root, "namespaces", namespaces);
        json_object_set_new(root, "objects", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "served",
                                                       (json_int_t)live, "bytes", (json_int_t)live_bytes,
                                                       "stale", (json_int_t)f.stale, "deleted",
                                                       (json_int_t)f.deleted, "corrupt_headers",
                                                       (json_int_t)f.corrupt_headers, "corrupt_payloads",
                                                       (json_int_t)f.corrupt_payloads, "verified", f.verify));
        if (f.list)
            json_object_set_new(root, "list", list);
        else
            json_decref(list);
        slabs = classes = namespaces = NULL;
        json_object_set(root, "errors", f.errors);
        json_object_set(root, "repairs", f.repairs);
        code = !f.found ? EXIT_CLEAN : f.fixed == f.found ? EXIT_FIXED : EXIT_UNFIXED;
        json_object_set_new(root, "exit", json_integer(code));
        char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
        puts(text);
        free(text);
        json_decref(root);
        goto out;
    }
    json_decref(slabs);
    json_decref(classes);
    json_decref(namespaces);
    json_decref(list);
report:;
    code = !f.found ? EXIT_CLEAN : f.fixed == f.found ? EXIT_FIXED : EXIT_UNFIXED;
    if (!f.json) {
        printf("result: %s\n", code == EXIT_CLEAN ? "clean" : code == EXIT_FIXED ? "errors corrected"
                                                                                 : "errors left uncorrected");
    }
    goto out;
out:
    for (size_t i = 0; i < f.num_objects; i++)
        free(f.objects[i].key);
    free(f.objects);
    free(f.table);
    free(f.journal);
    json_decref(f.errors);
    json_decref(f.repairs);
    json_decref(f.attached);
    if (f.fd >= 0)
        close(f.fd);
    return code;
}
