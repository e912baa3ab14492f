/* l3fsck: inspect, verify and repair an l3cache store image or device.
 *
 *   l3fsck [-n|-y] [--headers] [--verify] [--list [--prefix P]] [--json] [--slabs] PATH [PATH...]
 *
 * A store over several devices is checked with all its paths (in any
 * order: each device's superblock names its place), or read-only with
 * some of them (their slabs alone).
 *
 * Read-only unless -y. Exit codes as e2fsck: 0 clean, 1 errors corrected,
 * 4 errors left uncorrected, 8 operational error. The checks are the
 * passes' rooms (fsck_*.c, ARCHITECTURE.md); this file opens the image,
 * runs them in order and reports. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsck.h"
#include "fsck_checkpoint.h"
#include "fsck_io.h"
#include "fsck_journal.h"
#include "fsck_pass.h"
#include "fsck_perms.h"
#include "fsck_slabs.h"
#include "fsck_super.h"
#include "fsck_tables.h"
#include "invariant.h"
#include "l3_config.h"
#include "l3_slabstore.h"

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

static int usage(void)
{
    fprintf(stderr,
            "usage: l3fsck [-n | -y] [--headers] [--verify] [--list [--prefix P]] [--slabs] [--memory M] [--json]\n"
            "              PATH [PATH...]\n"
            "  PATH...     the store's file or device; a store over several devices: all of\n"
            "              them (or, read-only, some of them: only their slabs are checked)\n"
            "  -n          never write (the default); a slab with a summary is judged by\n"
            "              it, as a crash scan would, without reading its headers\n"
            "  -y          repair: drop corrupt objects, rewrite a broken superblock copy,\n"
            "              zero broken slab and journal records, extend a truncated image,\n"
            "              drop a summary its headers contradict (reads every header)\n"
            "  --headers   read every object's header, and check summaries against them\n"
            "  --verify    --headers, and read every object's payload and check its crc32c\n"
            "  --list      list the objects the store serves (--prefix P: keys starting with P)\n"
            "  --memory M  what one pass's objects may take (default 512MiB): a store with\n"
            "              more is checked in passes, each over one range of keys (-n without\n"
            "              --headers and what implies it, which keep every object at once)\n"
            "  --slabs     print every used slab\n"
            "  --json      machine-readable output\n"
            "exit: 0 clean, 1 errors corrected, 4 errors left, 8 operational error\n");
    return EXIT_OPERATIONAL;
}

/* Parse the command line into f; false on a usage error. */
static bool parse_args(fsck *f, int argc, char **argv)
{
    static const struct option longs[] = {
        { "verify", no_argument, 0, 'v' }, { "list", no_argument, 0, 'l' }, { "headers", no_argument, 0, 'H' },
        { "prefix", required_argument, 0, 'p' }, { "json", no_argument, 0, 'j' },
        { "slabs", no_argument, 0, 's' }, { "memory", required_argument, 0, 'm' }, { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    bool no_write = false;
    for (int c; (c = getopt_long(argc, argv, "nyh", longs, NULL)) != -1;) {
        switch (c) {
        case 'n': no_write = true; break;
        case 'y': f->repair = true; break;
        case 'v': f->verify = true; break;
        case 'H': f->headers = true; break;
        case 'l': f->list = true; break;
        case 'p': f->prefix = optarg; break;
        case 'j': f->json = true; break;
        case 's': f->slabs_verbose = true; break;
        case 'm':
            if (l3_parse_size(optarg, &f->memory, NULL) != L3_OK || f->memory == 0)
                return false;
            break;
        default: return false;
        }
    }
    if (optind >= argc || argc - optind > (int)L3_MAX_DEVICES || (no_write && f->repair))
        return false;
    f->headers = f->headers || f->verify || f->list || f->repair;
    f->given = (uint32_t)(argc - optind);
    for (uint32_t i = 0; i < f->given; i++)
        f->paths[i] = argv[optind + (int)i];
    f->path = f->paths[0];
    f->tty = isatty(2);
    return true;
}

/* Note the attached processes (a repair needs the store to itself). */
static int note_attached(fsck *f)
{
    int32_t pids[L3_IMAGE_MAX_PROCS];
    int attached = l3_slabstore_attached_at(f->path, pids, L3_IMAGE_MAX_PROCS);
    if (attached <= 0)
        return attached;
    L3_ASSERT(attached <= L3_IMAGE_MAX_PROCS); /* a slot of the process table each */
    f->attached = json_array();
    char list[L3_IMAGE_MAX_PROCS * 12] = ""; /* " " and an int32 each */
    for (int i = 0; i < attached; i++) {
        json_array_append_new(f->attached, json_integer(pids[i]));
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? " " : "", pids[i]);
    }
    if (!f->json)
        printf("attached processes: %d (pid %s)\n", attached, list);
    return attached;
}

/* flock(fd, op | LOCK_NB), retried for up to `wait_ms`: a process killed
 * with its rings registered on the store keeps its lock until the
 * kernel's asynchronous ring teardown drops the file, a moment after it
 * died. True when taken. */
static bool lock_within(int fd, int op, int wait_ms)
{
    for (int waited = 0;; waited += 50) {
        if (flock(fd, op | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK || waited >= wait_ms)
            return false;
        usleep(50 * 1000);
    }
}

/* Open one given path (exclusively for -y) into v and learn its size. */
static bool open_one(fsck *f, fsck_dev *v, const char *path)
{
    struct stat st;
    *v = (fsck_dev){ .path = path, .fd = -1, .dfd = -1 };
    if (stat(path, &st) != 0) {
        fprintf(stderr, "l3fsck: %s: %s\n", path, strerror(errno));
        return false;
    }
    v->blockdev = S_ISBLK(st.st_mode);
    v->fd = open(path, (f->repair ? O_RDWR : O_RDONLY) | (v->blockdev && f->repair ? O_EXCL : 0));
    if (v->fd < 0) {
        fprintf(stderr, "l3fsck: %s: %s%s\n", path, strerror(errno),
                errno == EBUSY ? " (the store is open in another process: not repairing)" : "");
        return false;
    }
    bool in_use = !lock_within(v->fd, f->repair ? LOCK_EX : LOCK_SH, f->repair ? 3000 : 0);
    if (in_use && f->repair) {
        fprintf(stderr, "l3fsck: %s is open in another process: refusing to repair\n", path);
        return false;
    }
    if (in_use)
        fprintf(stderr, "l3fsck: warning: %s is open in another process; what it writes meanwhile "
                        "may show as errors\n", path);
    if (!v->blockdev)
        v->size = (uint64_t)st.st_size;
    else if (ioctl(v->fd, BLKGETSIZE64, &v->size) != 0)
        v->size = 0;
    if (!f->json)
        printf("l3fsck: %s (%s, %llu bytes)%s\n", path, v->blockdev ? "block device" : "file",
               (unsigned long long)v->size, f->repair ? "" : " read-only");
    return true;
}

/* Open the given paths; the first is the image the one-device passes use. */
static bool open_image(fsck *f)
{
    int attached = note_attached(f);
    if (attached > 0 && f->repair) {
        fprintf(stderr, "l3fsck: %s is open in attached processes: refusing to repair\n", f->path);
        return false;
    }
    for (uint32_t i = 0; i < f->given; i++)
        if (!open_one(f, &f->dev[i], f->paths[i]))
            return false;
    f->fd = f->dev[0].fd;
    return true;
}

static void print_store(const fsck *f)
{
    char slab[32], data[32], cap[32], uuid[33];
    human(f->geo.slab_size, slab, sizeof slab);
    human((uint64_t)f->geo.num_slabs * f->geo.slab_size, data, sizeof data);
    human(f->geo.capacity * f->geo.num_devices, cap, sizeof cap);
    for (size_t i = 0; i < 16; i++)
        sprintf(uuid + 2 * i, "%02x", f->sb.uuid[i]);
    printf("store %s: format %u, capacity %s, %u slabs of %s (%s of data), block %u, max objects %llu\n",
           uuid, f->sb.version, cap, f->geo.num_slabs, slab, data, f->geo.block_size,
           (unsigned long long)f->geo.max_objects);
    uint64_t ram = l3_image_mapping_bytes(&f->geo);
    char ram_text[32];
    human(ram, ram_text, sizeof ram_text);
    printf("memory: a shared mapping of %s (%.0f bytes per object of the bound; %.1f MB per TB of store)\n",
           ram_text, (double)ram / (double)f->geo.max_objects,
           (double)ram / ((double)(f->geo.capacity * f->geo.num_devices) / 1e12) / 1e6);
    if (f->geo.num_devices > 1) {
        human(f->geo.capacity, cap, sizeof cap);
        printf("devices: %u, slabs striped over them (slab i on device i %% %u), %s each\n", f->geo.num_devices,
               f->geo.num_devices, cap);
    }
}

/* The RAM a process that opens the store maps, as JSON. */
static json_t *memory_json(const fsck *f)
{
    uint64_t ram = l3_image_mapping_bytes(&f->geo);
    return json_pack("{s:I,s:I,s:f}", "shared_bytes", (json_int_t)ram, "max_objects",
                     (json_int_t)f->geo.max_objects, "bytes_per_tb", (double)ram / ((double)(f->geo.capacity * f->geo.num_devices) / 1e12));
}

/* What the store serves: per size class, per namespace, per slab, listed. */
typedef struct summary {
    uint64_t live, live_bytes, *per_slab;
    json_t *classes, *namespaces, *list, *slabs;
} summary;

/* Add `objects` objects of `bytes` to a {name: {objects, bytes}} row. */
static void tally(json_t *rows, const char *name, uint64_t objects, uint64_t bytes)
{
    json_t *row = json_object_get(rows, name);
    if (!row) {
        row = json_pack("{s:I,s:I}", "objects", (json_int_t)0, "bytes", (json_int_t)0);
        json_object_set_new(rows, name, row);
    }
    json_object_set_new(row, "objects",
                        json_integer(json_integer_value(json_object_get(row, "objects")) + (json_int_t)objects));
    json_object_set_new(row, "bytes", json_integer(json_integer_value(json_object_get(row, "bytes")) + (json_int_t)bytes));
}

/* Objects of one size class and namespace in a row, tallied at once (a
 * tally per object cost more than the rest of a check). */
typedef struct run {
    uint32_t payload_blocks;
    const char *ns;          /* its namespace's text (a key's first bytes, or an interned text) */
    size_t ns_len;
    uint64_t objects, bytes;
} run;

static void run_flush(const fsck *f, summary *sm, run *r)
{
    if (r->objects) {
        char cls[32], ns[L3_NS_TEXT_MAX + 8];
        snprintf(cls, sizeof cls, "%u", r->payload_blocks * f->geo.block_size);
        snprintf(ns, sizeof ns, r->ns_len ? "%.*s" : "(none)", (int)r->ns_len, r->ns);
        tally(sm->classes, cls, r->objects, r->bytes);
        tally(sm->namespaces, ns, r->objects, r->bytes);
    }
    r->objects = r->bytes = 0;
}

/* Add object o to the run, flushing the run when o starts another. */
static void run_add(const fsck *f, summary *sm, run *r, const fsck_object *o)
{
    uint32_t pb = f->table[o->slab].payload_blocks;
    size_t nl = o->key ? l3_key_namespace_len(o->key, o->key_len) : o->ns ? strlen(o->ns) : 0;
    const char *ns = o->key ? o->key : o->ns;
    if (pb != r->payload_blocks || nl != r->ns_len || (nl && memcmp(ns, r->ns, nl) != 0)) {
        run_flush(f, sm, r);
        r->payload_blocks = pb;
        r->ns = ns;
        r->ns_len = nl;
    }
    r->objects++;
    r->bytes += o->size;
}

static void list_object(const fsck *f, summary *sm, const fsck_object *o)
{
    if (!f->list || (f->prefix && strncmp(o->key, f->prefix, strlen(f->prefix)) != 0))
        return;
    if (f->json)
        json_array_append_new(sm->list, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "key", o->key, "size",
                                                  (json_int_t)o->size, "slab", (json_int_t)o->slab, "slot",
                                                  (json_int_t)o->slot, "seq", (json_int_t)o->seq, "offset",
                                                  (json_int_t)o->offset));
    else
        printf("%s\t%u\tslab %u\tslot %u\tseq %llu\toffset %llu\n", o->key, o->size, o->slab, o->slot,
               (unsigned long long)o->seq, (unsigned long long)o->offset);
}

static void summarize_begin(const fsck *f, summary *sm)
{
    *sm = (summary){ .per_slab = calloc(f->geo.num_slabs, sizeof(uint64_t)), .classes = json_object(),
                     .namespaces = json_object(), .list = json_array(), .slabs = json_array() };
}

/* Tally this pass's served objects. */
static void summarize_pass(const fsck *f, summary *sm)
{
    run r = { .objects = 0 };
    for (size_t i = 0; i < f->num_objects; i++) {
        const fsck_object *o = &f->objects[i];
        if (!o->live)
            continue;
        sm->live++;
        sm->live_bytes += o->size;
        if (sm->per_slab)
            sm->per_slab[o->slab]++;
        run_add(f, sm, &r, o);
        list_object(f, sm, o);
    }
    run_flush(f, sm, &r);
}

/* The per-slab rows, after the last pass. */
static void summarize_slabs(const fsck *f, summary *sm)
{
    for (uint32_t i = 0; i < f->geo.num_slabs; i++) {
        const l3_slab_record *r = &f->table[i];
        if (!l3_slab_in_use(r, i, f->sb.epoch))
            continue;
        uint64_t n = sm->per_slab ? sm->per_slab[i] : 0;
        json_array_append_new(sm->slabs, json_pack("{s:I,s:I,s:I,s:I}", "slab", (json_int_t)i, "class",
                                                   (json_int_t)r->payload_blocks * f->geo.block_size, "gen",
                                                   (json_int_t)r->gen, "objects", (json_int_t)n));
        if (!f->json && f->slabs_verbose)
            printf("slab %u: class %u bytes, generation %llu, %llu objects\n", i,
                   r->payload_blocks * f->geo.block_size, (unsigned long long)r->gen, (unsigned long long)n);
    }
}

static void print_rows(const char *indent, const char *suffix, json_t *rows)
{
    const char *k;
    json_t *v;
    char b[32];
    json_object_foreach(rows, k, v) {
        human((uint64_t)json_integer_value(json_object_get(v, "bytes")), b, sizeof b);
        printf("%s%s%s%lld objects, %s\n", indent, k, suffix,
               (long long)json_integer_value(json_object_get(v, "objects")), b);
    }
}

static void print_text(const fsck *f, const summary *sm)
{
    char b[32];
    printf("checkpoint: %s\n", f->checkpoint_why);
    size_t used = json_array_size(sm->slabs);
    printf("slabs: %zu used, %zu free\n", used, (size_t)f->geo.num_slabs - used);
    print_rows("  class ", " bytes: ", sm->classes);
    printf("namespaces:\n");
    print_rows("  ", "  ", sm->namespaces);
    human(sm->live_bytes, b, sizeof b);
    printf("objects: %llu served (%s), %llu stale, %llu deleted, %llu torn, %llu corrupt headers, %llu corrupt "
           "payloads%s\n", (unsigned long long)sm->live, b, (unsigned long long)f->stale,
           (unsigned long long)f->deleted, (unsigned long long)f->torn, (unsigned long long)f->corrupt_headers,
           (unsigned long long)f->corrupt_payloads, f->verify ? "" : " (summaries' payloads not read: --verify)");
    printf("slabs judged by their summary: %llu; by their headers: %llu%s\n", (unsigned long long)f->summaries,
           (unsigned long long)f->header_slabs, f->headers ? "" : " (--headers reads every header)");
    if (f->parts > 1)
        printf("objects checked in %u passes, a range of keys each (--memory)\n", f->parts);
}

static json_t *sb_json(const l3_superblock *sb)
{
    char uuid[33];
    for (size_t i = 0; i < 16; i++)
        sprintf(uuid + 2 * i, "%02x", sb->uuid[i]);
    return json_pack("{s:I,s:s,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "sequence", (json_int_t)sb->sequence,
                     "uuid", uuid, "epoch", (json_int_t)sb->epoch, "clean", sb->clean != 0, "block_size",
                     (json_int_t)sb->block_size, "slab_size", (json_int_t)sb->slab_size, "num_slabs",
                     (json_int_t)sb->num_slabs, "capacity", (json_int_t)sb->capacity, "data_off",
                     (json_int_t)sb->data_off, "max_objects", (json_int_t)sb->max_objects, "next_seq",
                     (json_int_t)sb->next_seq, "version", (json_int_t)sb->version);
}

static int exit_code(const fsck *f)
{
    return !f->found ? EXIT_CLEAN : !f->left ? EXIT_FIXED : EXIT_UNFIXED;
}

/* The whole report as one JSON document (takes the summary's rows). */
static void print_json(const fsck *f, summary *sm)
{
    json_t *root = json_object(), *copies = json_array();
    json_object_set_new(root, "path", json_string(f->path));
    if (f->ndev > 1) { /* a store over several devices: each by its place, null where not given */
        json_t *devs = json_array();
        for (uint32_t d = 0; d < f->ndev; d++)
            json_array_append_new(devs, f->dev[d].path ? json_string(f->dev[d].path) : json_null());
        json_object_set_new(root, "devices", devs);
    }
    for (int k = 0; k < L3_SB_COPIES; k++) {
        json_t *cj = f->sbs.valid[k] ? sb_json(&f->sbs.copy[k]) : json_object();
        json_object_set_new(cj, "copy", json_integer(k));
        json_object_set_new(cj, "status", json_string(f->sbs.why[k]));
        json_array_append_new(copies, cj);
    }
    json_object_set_new(root, "superblocks", copies);
    json_object_set_new(root, "attached", f->attached ? json_incref(f->attached) : json_array());
    json_object_set_new(root, "checkpoint", json_pack("{s:b,s:s,s:I}", "valid", f->checkpoint_valid, "status",
                                                      f->checkpoint_why, "entries", (json_int_t)f->checkpoint_entries));
    json_object_set_new(root, "memory", memory_json(f));
    json_object_set_new(root, "slabs", sm->slabs);
    json_object_set_new(root, "classes", sm->classes);
    json_object_set_new(root, "namespaces", sm->namespaces);
    json_object_set_new(root, "objects", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b}", "served", (json_int_t)sm->live,
                                                   "bytes", (json_int_t)sm->live_bytes, "stale", (json_int_t)f->stale,
                                                   "deleted", (json_int_t)f->deleted, "torn", (json_int_t)f->torn,
                                                   "corrupt_headers",
                                                   (json_int_t)f->corrupt_headers, "corrupt_payloads",
                                                   (json_int_t)f->corrupt_payloads, "verified", f->verify));
    json_object_set_new(root, "summaries", json_integer((json_int_t)f->summaries));
    json_object_set_new(root, "header_slabs", json_integer((json_int_t)f->header_slabs));
    json_object_set_new(root, "passes", json_integer((json_int_t)f->parts));
    json_object_set_new(root, "list", sm->list);
    if (!f->list)
        json_object_del(root, "list");
    sm->slabs = sm->classes = sm->namespaces = sm->list = NULL;
    json_object_set(root, "errors", f->errors);
    json_object_set(root, "repairs", f->repairs);
    json_object_set_new(root, "exit", json_integer(exit_code(f)));
    char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
    puts(text);
    free(text);
    json_decref(root);
}

/* Check the store on the open image; returns the exit code. */
static int check(fsck *f)
{
    if (!fsck_superblocks(f)) {
        /* As e2fsck with a bad magic: nothing to check, an operational error. */
        fsck_problem(f, false, "no valid superblock: this is not an l3cache store, or both copies are lost");
        if (f->json)
            printf("{\"path\": \"%s\", \"errors\": [\"no valid superblock\"], \"exit\": 8}\n", f->path);
        else
            printf("result: not an l3cache store\n");
        return EXIT_OPERATIONAL;
    }
    if (f->partial && f->repair) {
        fsck_problem(f, false, "a repair needs all %u of the store's devices", f->ndev);
        return EXIT_OPERATIONAL;
    }
    char why[256];
    uint64_t size = f->dev[f->ref].size;
    if (!l3_geometry_from_sb(&f->sb, size, &f->geo, why, sizeof why)) {
        fsck_problem(f, false, "superblock geometry: %s", why);
        if (!f->json)
            printf("result: errors left uncorrected\n");
        return EXIT_UNFIXED;
    }
    if (!f->json)
        print_store(f);
    fsck_tables(f);
    summary sm;
    summarize_begin(f, &sm);
    if (!fsck_plan_passes(f))
        f->parts = 0;
    f->scans = !fsck_checkpoint_opens(f); /* (a slab without a summary is then judged with its payloads) */
    /* Each pass the objects of one range of keys; the last one's stay for
     * the repairs below (-y has one pass: all of them). */
    for (f->part = 0; f->part < f->parts; f->part++) {
        f->quiet = f->part > 0;
        fsck_objects(f);
        fsck_checkpoint(f);
        fsck_journal_verdict(f);
        if (f->part + 1 < f->parts)
            summarize_pass(f, &sm);
    }
    f->quiet = false;
    f->stale += f->superseded;
    fsck_checkpoint_verdict(f);
    fsck_journal_verdict(f);
    fsck_journal_repair(f);
    fsck_permissions(f);
    if (f->repair && (f->found || f->mark_dirty || f->sync_copies))
        fsck_write_superblocks(f);
    summarize_pass(f, &sm);
    summarize_slabs(f, &sm);
    if (f->json) {
        print_json(f, &sm);
    } else {
        print_text(f, &sm);
        int code = exit_code(f);
        printf("result: %s\n", code == EXIT_CLEAN ? "clean" : code == EXIT_FIXED ? "errors corrected"
                                                                                 : "errors left uncorrected");
    }
    json_decref(sm.slabs);
    json_decref(sm.classes);
    json_decref(sm.namespaces);
    json_decref(sm.list);
    free(sm.per_slab);
    return exit_code(f);
}

int main(int argc, char **argv)
{
    fsck f = { .fd = -1, .ndev = 1, .errors = json_array(), .repairs = json_array(), .memory = 512ull << 20 };
    for (uint32_t d = 0; d < L3_MAX_DEVICES; d++)
        f.dev[d] = (fsck_dev){ .fd = -1, .dfd = -1 };
    int code = !parse_args(&f, argc, argv) ? usage() : !open_image(&f) ? EXIT_OPERATIONAL : check(&f);
    for (size_t i = 0; i < f.num_objects; i++)
        free(f.objects[i].key);
    free(f.objects);
    free(f.by_key);
    free(f.by_slot);
    for (size_t i = 0; i < f.num_ns_texts; i++)
        free(f.ns_texts[i]);
    free(f.ns_texts);
    free(f.table);
    free(f.journal);
    json_decref(f.errors);
    json_decref(f.repairs);
    json_decref(f.attached);
    for (uint32_t d = 0; d < L3_MAX_DEVICES; d++) {
        if (f.dev[d].fd >= 0 && f.dev[d].fd != f.fd)
            close(f.dev[d].fd);
        if (f.dev[d].dfd >= 0)
            close(f.dev[d].dfd);
    }
    if (f.fd >= 0)
        close(f.fd);
    return code;
}
