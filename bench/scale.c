/* l3bench --scale (scale.h). */
#include "scale.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aligned.h"
#include "l3_clock.h"
#include "l3_slabstore.h"
#include "format.h"
#include "probe.h"

#define OBJ 512u          /* payload bytes per object: one 512-byte block */
#define BATCH 1024u       /* keys per put batch */
#define SLOT_GUESS 3072u  /* a 2560-byte header (the longest key) and the payload */

typedef struct scale_row {
    uint64_t objects;
    double fill_s, clean_s, scan_s, fsck_s;
    uint64_t ckpt_bytes;  /* the checkpoint (header block and body) */
    double ckpt_read_s;   /* its bytes read alone, as fio would: the device's time for them */
    uint64_t clean_objects, scan_objects, fsck_objects;
    uint64_t shared_bytes, rss_bytes, fsck_rss;
    bool ok;
} scale_row;

bool l3_scale_parse_counts(const char *text, l3_scale_options *o)
{
    o->num_counts = 0;
    for (const char *p = text; *p;) {
        char *end;
        unsigned long long n = strtoull(p, &end, 10);
        if (end == p || n == 0 || o->num_counts == 8 || (*end && *end != ','))
            return false;
        o->counts[o->num_counts++] = n;
        p = *end ? end + 1 : end;
    }
    return o->num_counts > 0;
}

/* The store's options: sparse, 512-byte blocks, an index for n objects. */
static l3_slab_options scale_options(const char *file, uint64_t n)
{
    l3_slab_options so;
    l3_slab_options_default(&so, file);
    so.capacity = (uint64_t)((double)n * SLOT_GUESS * 1.1) + (64u << 20);
    so.block_size = 512;
    so.expected_object_size = OBJ; /* (the payload: the index bound counts each header) */
    so.create = true;
    so.batch_keys = BATCH;
    so.io_contexts = 4;
    return so;
}



/* Open the store and read how it came back: seconds, objects, whether
 * from the checkpoint, the shared mapping, the resident memory. */
static bool reopen(const l3_slab_options *so, double *seconds, uint64_t *objects, bool *from_checkpoint,
                   uint64_t *shared, uint64_t *rss)
{
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(so, &s, &err) != L3_OK) {
        fprintf(stderr, "l3bench: --scale: reopen: %s\n", err.msg);
        return false;
    }
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    *seconds = st.open_seconds;
    *objects = st.objects;
    *from_checkpoint = st.opened_from_checkpoint;
    *shared = st.shared_bytes;
    uint64_t peak;
    l3_probe_rss(rss, &peak);
    l3_slabstore_free(s);
    return true;
}

/* Time reading the clean store's checkpoint alone (O_DIRECT, 8 MiB reads
 * one after another, as fio's sequential read): the device's share of a
 * clean reopen, measured in the same run. */
static void time_checkpoint_read(const char *file, scale_row *r)
{
    l3_superblock sb;
    int fd = open(file, O_RDONLY | O_DIRECT | O_CLOEXEC);
    const size_t chunk = 8u << 20;
    uint8_t *buf = fd < 0 ? NULL : l3_aligned_alloc(4096, chunk, false);
    if (!buf || pread(fd, buf, 4096, 0) != 4096) {
        free(buf);
        if (fd >= 0)
            close(fd);
        return;
    }
    memcpy(&sb, buf, sizeof sb);
    uint64_t len = (sb.block_size + sb.ckpt_bytes + 4095) / 4096 * 4096;
    double t0 = l3_monotonic_seconds();
    uint64_t at = 0;
    for (ssize_t got = 1; at < len && got > 0; at += (uint64_t)got)
        got = pread(fd, buf, len - at < chunk ? len - at : chunk, (off_t)(sb.checkpoint_off + at));
    r->ckpt_read_s = l3_monotonic_seconds() - t0;
    r->ckpt_bytes = at;
    free(buf);
    close(fd);
}

static bool run_one(const char *file, uint64_t n, bool keep, scale_row *r)
{
    memset(r, 0, sizeof *r);
    r->objects = n;
    unlink(file);
    l3_slab_options so = scale_options(file, n);
    l3_slabstore *s;
    l3_error err;
    memset(&err, 0, sizeof err);
    errno = 0;
    double t0 = l3_monotonic_seconds();
    so.format = true; /* over the zeros */
    if (!l3_probe_lay_out(file, so.capacity) || l3_slabstore_open(&so, &s, &err) != L3_OK) {
        fprintf(stderr, "l3bench: --scale: %s\n", errno && !err.msg[0] ? strerror(errno) : err.msg);
        return false;
    }
    so.format = false;
    bool ok = l3_probe_fill(s, n, OBJ, BATCH, "s");
    r->fill_s = l3_monotonic_seconds() - t0;
    l3_slabstore_free(s);
    bool cp = false, scanned = true;
    uint64_t shared2, rss2;
    double bytes;
    if (ok)
        time_checkpoint_read(file, r);
    ok = ok && reopen(&so, &r->clean_s, &r->clean_objects, &cp, &r->shared_bytes, &r->rss_bytes);
    ok = ok && l3_probe_time_fsck(file, false, &r->fsck_s, &r->fsck_objects, &bytes, &r->fsck_rss);
    ok = ok && l3_probe_crash_open(&so) && reopen(&so, &r->scan_s, &r->scan_objects, &scanned, &shared2, &rss2);
    r->ok = ok && cp && !scanned && r->clean_objects == n && r->scan_objects == n && r->fsck_objects == n;
    if (!keep)
        unlink(file);
    return r->ok;
}

static double rate(uint64_t n, double s) { return s > 0 ? (double)n / s / 1e6 : 0; }

static void print_row(const scale_row *r)
{
    printf("%10llu objects: shared mapping %7.1f MB (%.0f B/object), RSS %7.1f MB; fill %.1f s; "
           "clean reopen %.3f s (%.1f M/s; its %.0f MB checkpoint read alone %.3f s); crash scan %.3f s (%.1f M/s); "
           "l3fsck -n %.3f s (%.1f M/s, RSS %.1f MB)%s\n",
           (unsigned long long)r->objects, (double)r->shared_bytes / 1e6, (double)r->shared_bytes / (double)r->objects,
           (double)r->rss_bytes / 1e6, r->fill_s, r->clean_s, rate(r->objects, r->clean_s),
           (double)r->ckpt_bytes / 1e6, r->ckpt_read_s, r->scan_s,
           rate(r->objects, r->scan_s), r->fsck_s, rate(r->objects, r->fsck_s), (double)r->fsck_rss / 1e6,
           r->ok ? "" : "  FAILED: not every object came back");
    fflush(stdout);
}

static json_t *row_json(const scale_row *r)
{
    return json_pack("{s:I,s:I,s:I,s:f,s:f,s:I,s:f,s:I,s:f,s:I,s:f,s:I,s:I,s:b}", "objects", (json_int_t)r->objects,
                     "shared_bytes", (json_int_t)r->shared_bytes, "rss_bytes", (json_int_t)r->rss_bytes, "fill_s",
                     r->fill_s, "clean_reopen_s", r->clean_s, "checkpoint_bytes", (json_int_t)r->ckpt_bytes,
                     "checkpoint_read_s", r->ckpt_read_s, "clean_objects", (json_int_t)r->clean_objects,
                     "crash_scan_s", r->scan_s, "scan_objects", (json_int_t)r->scan_objects, "fsck_s", r->fsck_s,
                     "fsck_objects", (json_int_t)r->fsck_objects, "fsck_rss_bytes", (json_int_t)r->fsck_rss,
                     "ok", r->ok);
}

int l3_scale_run(const l3_scale_options *o)
{
    char file[1100];
    snprintf(file, sizeof file, "%s/l3bench-scale.store", o->dir ? o->dir : ".");
    json_t *rows = json_array();
    bool all = true;
    for (size_t i = 0; i < o->num_counts; i++) {
        scale_row r;
        all = run_one(file, o->counts[i], o->keep && i + 1 == o->num_counts, &r) && all;
        if (o->json)
            json_array_append_new(rows, row_json(&r));
        else
            print_row(&r);
    }
    if (o->json) {
        json_t *root = json_pack("{s:o}", "scale", rows);
        char *text = json_dumps(root, JSON_INDENT(2));
        puts(text);
        free(text);
        json_decref(root);
    } else {
        json_decref(rows);
    }
    return all ? 0 : 1;
}
