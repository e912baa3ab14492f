/* l3bench --compare: for each object size, on one file system:
 *   fio (io_uring, O_DIRECT, fixed buffers, huge-page buffers) on laid-out
 *   files in the same directory: the device limit; l3cache through the
 *   executor, checksums on and off; and a file-per-key buffered baseline
 *   (pread/pwrite, a file per object, as simple disk KV-cache backends
 *   do). Rounds of puts, then rounds of gets, each system in turn in a
 *   rotating order; ratios are paired per round. Then exists() keys/s,
 *   recovery time (clean checkpoint and crash scan) and puts under
 *   eviction. */
#include "compare.h"
#include "mixed.h"
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "invariant.h"
#include "l3_clock.h"
#include "l3_crc32c.h"
#include "l3_pool.h"
#include "workload.h"

#define MIB (1ull << 20)

typedef struct result {
    bool ok;
    double gbs, p50_ms, p99_ms, cpu_per_gb;
    double dev_queue, dev_kib; /* the device's mean queue and request size during the run */
} result;

void l3_compare_defaults(l3_compare_options *o)
{
    memset(o, 0, sizeof *o);
    o->dir = ".";
    o->total = 1ull << 30;
    const uint64_t sizes[] = { 64 << 10, 256 << 10, 1 << 20, 4 << 20 };
    memcpy(o->sizes, sizes, sizeof sizes);
    o->num_sizes = 4;
    o->keys = 16;
    o->qd = 16;
    o->recovery_objects = 1000000;
    o->repeat = 5;
    o->plot = "l3bench-compare.png";
}

bool l3_compare_parse_sizes(const char *text, l3_compare_options *o)
{
    char *copy = strdup(text), *save = NULL;
    o->num_sizes = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t b;
        char unit[8];
        snprintf(unit, sizeof unit, "%s", t);
        size_t n = strlen(unit);
        /* Accept 64K / 1M as binary units. */
        char with[16];
        snprintf(with, sizeof with, "%s%s", t, (n && (unit[n - 1] == 'K' || unit[n - 1] == 'M')) ? "iB" : "");
        if (o->num_sizes == 8 || l3_parse_size(with, &b, NULL) != L3_OK || b < 4096 || b > (64ull << 20)) {
            free(copy);
            return false;
        }
        o->sizes[o->num_sizes++] = b;
    }
    free(copy);
    return o->num_sizes > 0;
}

static double cpu_now(void) { return wl_cpu_seconds(NULL); }

static const char *const *settle_dirs;
static size_t num_settle_dirs;

/* Let the devices finish the last run's writes (syncfs sends the flush a
 * virtual disk's host cache needs) before the next run is timed. */
static void settle(void)
{
    for (size_t i = 0; i < num_settle_dirs; i++) {
        int fd = open(settle_dirs[i], O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            syncfs(fd);
            close(fd);
        }
    }
    usleep(500000);
}

/* The block devices under the benchmark's directories, as the kernel
 * counts them (/sys/dev/block/MAJ:MIN/stat), to tell what each system
 * asked of them (summed over distinct devices). */
static char devstat_paths[L3_COMPARE_MAX_DIRS][128];
static size_t num_devstats;

typedef struct devstat {
    bool ok;
    double ios, sectors, ticks_ms, in_queue_ms;
} devstat;

static devstat devstat_one(const char *path)
{
    devstat d = { 0 };
    FILE *f = fopen(path, "r");
    if (!f)
        return d;
    unsigned long long v[11] = { 0 };
    int got = 0;
    for (int i = 0; i < 11 && fscanf(f, "%llu", &v[i]) == 1; i++)
        got++;
    fclose(f);
    if (got < 11)
        return d;
    /* reads: v[0] ios, v[2] sectors; writes: v[4], v[6]; v[9] busy ms, v[10] weighted ms */
    d = (devstat){ true, (double)(v[0] + v[4]), (double)(v[2] + v[6]), (double)v[9], (double)v[10] };
    return d;
}

static devstat devstat_now(void)
{
    devstat sum = { .ok = num_devstats > 0 };
    for (size_t i = 0; i < num_devstats; i++) {
        devstat d = devstat_one(devstat_paths[i]);
        sum.ok = sum.ok && d.ok;
        sum.ios += d.ios;
        sum.sectors += d.sectors;
        sum.ticks_ms += d.ticks_ms;
        sum.in_queue_ms += d.in_queue_ms;
    }
    return sum;
}

static void devstat_find(const char *dir)
{
    struct stat st;
    char path[128];
    if (stat(dir, &st) != 0)
        return;
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
    for (size_t i = 0; i < num_devstats; i++)
        if (strcmp(devstat_paths[i], path) == 0)
            return;
    L3_ASSERT(num_devstats < L3_COMPARE_MAX_DIRS); /* a device per --dir at most */
    snprintf(devstat_paths[num_devstats++], sizeof devstat_paths[0], "%s", path);
}

/* ---- fio: the device limit ---- */

/* fio on `file`: `jobs` jobs of iodepth `depth`, each over its own
 * 1/jobs of `total` (jobs = 1: one sequential stream). fio's buffers come
 * from malloc; the glibc tunable makes them transparent huge pages, as
 * l3cache's pool is (l3_pool_alloc), so that neither system's requests
 * are split at the device's segment limit. */
static bool run_fio(const char *file, size_t nfiles, uint64_t total, uint64_t bs, size_t depth, size_t jobs,
                    bool write, result *r)
{
    char cmd[20000];
    /* Several files (a:b): each job's `size` is spread over them, and its
     * offset moves by its share of each. */
    /* NOLINTNEXTLINE(clang-analyzer-core.DivideZero): nfiles is compare_init's ndirs, at least 1 */
    uint64_t share = total / jobs / bs / nfiles * bs * nfiles;
    snprintf(cmd, sizeof cmd,
             "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 fio --name=l3 --filename=%s --filesize=%llu --size=%llu --offset_increment=%llu --bs=%llu "
             "--iodepth=%zu --ioengine=io_uring --direct=1 --fixedbufs --registerfiles --rw=%s "
             "--numjobs=%zu --group_reporting --output-format=json 2>/dev/null",
             file, (unsigned long long)(total / nfiles), (unsigned long long)share,
             (unsigned long long)(share / nfiles), (unsigned long long)bs, depth, write ? "write" : "read", jobs);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0)
        len += n;
    buf[len] = '\0';
    int rc = pclose(p);
    json_t *root = json_loads(buf, 0, NULL);
    free(buf);
    if (rc != 0 || !root)
        return false;
    json_t *job = json_array_get(json_object_get(root, "jobs"), 0);
    json_t *side = json_object_get(job, write ? "write" : "read");
    double bw = (double)json_integer_value(json_object_get(side, "bw_bytes"));
    double bytes = (double)json_integer_value(json_object_get(side, "io_bytes"));
    json_t *pcts = json_object_get(json_object_get(side, "clat_ns"), "percentile");
    double runtime = (double)json_integer_value(json_object_get(job, "job_runtime")) / 1e3;
    double cpu = (json_number_value(json_object_get(job, "usr_cpu")) +
                  json_number_value(json_object_get(job, "sys_cpu"))) / 100.0 * runtime;
    *r = (result){ .ok = bw > 0, .gbs = bw / 1e9,
                   .p50_ms = json_number_value(json_object_get(pcts, "50.000000")) / 1e6,
                   .p99_ms = json_number_value(json_object_get(pcts, "99.000000")) / 1e6,
                   .cpu_per_gb = bytes > 0 ? cpu / (bytes / 1e9) : 0 };
    json_decref(root);
    return r->ok;
}

/* ---- l3cache through the executor ---- */

/* A store and executor config: `qd` operations of `keys` keys in flight,
 * with a worker per operation up to the executor's 64. */
static void config_text(char *out, size_t len, const char *paths, uint64_t capacity, size_t keys, size_t qd,
                        bool verify, uint64_t max_objects, uint32_t block)
{
    /* `paths`: the store's files as JSON strings, comma separated. */
    size_t workers = qd < 64 ? qd : 64;
    snprintf(out, len,
             "{\"store\": {\"paths\": [%s], \"capacity\": %llu, \"verify_checksums\": %s,"
             " \"max_objects\": %llu, \"block_size\": %u, \"slab_size\": \"64MiB\"},"
             " \"executor\": {\"max_operations\": %zu, \"max_keys_per_operation\": %zu,"
             " \"query_workers\": 2, \"read_workers\": %zu, \"write_workers\": %zu},"
             " \"namespace\": {\"deployment_id\": \"l3bench-compare\"}}",
             paths, (unsigned long long)capacity, verify ? "true" : "false",
             (unsigned long long)max_objects, block, qd, keys, workers, workers);
}

static result of_phase(const wl_phase *p)
{
    return (result){ .ok = p->hits == p->keys && p->keys > 0,
                     .gbs = p->seconds > 0 ? (double)p->bytes / p->seconds / 1e9 : 0,
                     .p50_ms = wl_pct(p, 0.5) * 1e3, .p99_ms = wl_pct(p, 0.99) * 1e3,
                     .cpu_per_gb = p->bytes ? p->cpu / ((double)p->bytes / 1e9) : 0 };
}

typedef struct exists_result {
    double store_keys_per_s, executor_keys_per_s;
} exists_result;

/* An l3cache store with its executor, kept open from its put round to
 * the get rounds that read it back. */
typedef struct l3_sys {
    bool open, verify;
    char file[L3_COMPARE_MAX_DIRS][1000]; /* its file in each directory */
    size_t nfiles;
    l3_config cfg;
    workload w;
    size_t n;
} l3_sys;

static void l3_sys_close(l3_sys *l)
{
    if (l->open) {
        l3_error err;
        if (wl_stop(&l->w, &err) != L3_OK)
            fprintf(stderr, "l3bench: closing %s: %s\n", l->file[0], err.msg);
        l3_config_free(&l->cfg);
        l->open = false;
    }
    for (size_t i = 0; i < l->nfiles; i++)
        unlink(l->file[i]);
}


/* A put round: a new store on a laid-out file, `total` bytes of
 * `size`-byte pages put. */
static bool l3_put_round(l3_sys *l, uint64_t total, uint64_t size, size_t keys, size_t qd, result *put)
{
    l3_sys_close(l);
    size_t n = (size_t)(total / size);
    /* Each file its share of the pages (the store stripes them evenly). */
    uint64_t capacity =
        ((uint64_t)((double)n / (double)l->nfiles * (double)(size + 4096) * 1.1) + 256 * MIB) / MIB * MIB;
    char paths[L3_COMPARE_MAX_DIRS * 1010] = "";
    for (size_t i = 0; i < l->nfiles; i++) {
        if (!l3_probe_lay_out(l->file[i], capacity)) {
            fprintf(stderr, "l3bench: laying out %s: %s\n", l->file[i], strerror(errno));
            return false;
        }
        snprintf(paths + strlen(paths), sizeof paths - strlen(paths), "%s\"%s\"", i ? ", " : "", l->file[i]);
    }
    settle();
    char text[L3_COMPARE_MAX_DIRS * 1010 + 1024];
    config_text(text, sizeof text, paths, capacity, keys, qd, l->verify, 2 * n + 1024, 4096);
    l3_error err;
    if (l3_config_parse(text, &l->cfg, &err) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", err.msg);
        return false;
    }
    if (wl_start(&l->w, &l->cfg, size, keys, qd, n, &err) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", err.msg);
        l3_config_free(&l->cfg);
        return false;
    }
    l->open = true;
    l->n = n;
    wl_phase pp = { .name = "put" };
    bool ok = wl_run(&l->w, L3_OP_PUT, n, 0, &pp);
    *put = of_phase(&pp);
    free(pp.lat);
    return ok && put->ok;
}

/* A get round over what the last put round wrote (every page checked). */
static bool l3_get_round(l3_sys *l, result *get)
{
    if (!l->open)
        return false;
    wl_phase gp = { .name = "get" };
    bool ok = wl_run(&l->w, L3_OP_GET, l->n, 0, &gp);
    *get = of_phase(&gp);
    free(gp.lat);
    return ok && get->ok;
}

/* exists(): through the executor, and on the store directly. */
static void l3_exists(l3_sys *l, exists_result *ex)
{
    size_t n = l->n;
    wl_phase qp = { .name = "exists" };
    wl_run(&l->w, L3_OP_QUERY, n, 0, &qp);
    ex->executor_keys_per_s = qp.seconds > 0 ? (double)qp.keys / qp.seconds : 0;
    free(qp.lat);
    char (*names)[256] = calloc(n, sizeof *names);
    const char **ptrs = calloc(n, sizeof *ptrs);
    for (size_t i = 0; i < n; i++) {
        l3_storage_key k = { 0, l->w.hashes[i], 0 };
        l3_executor_object_key(l->w.ex, &k, names[i], sizeof names[i], NULL);
        ptrs[i] = names[i];
    }
    bool flags[256];
    size_t done = 0;
    double t0 = l3_monotonic_seconds();
    while (l3_monotonic_seconds() - t0 < 1.0)
        for (size_t base = 0; base < n; base += 256) {
            size_t m = n - base < 256 ? n - base : 256;
            l3_store_batch_exists(l3_slabstore_store(l->w.store), ptrs + base, m, flags, NULL);
            done += m;
        }
    ex->store_keys_per_s = (double)done / (l3_monotonic_seconds() - t0);
    free(names);
    free(ptrs);
}

/* ---- the file-per-key baseline ---- */

typedef struct files_job {
    const char *dir;
    uint64_t size;
    size_t n, first, step;
    bool write;
    double *lat;
    bool failed;
} files_job;

static void *files_thread(void *arg)
{
    files_job *j = arg;
    uint8_t *buf = malloc(j->size);
    memset(buf, 0x5a, j->size);
    char path[1200];
    for (size_t i = j->first; i < j->n; i += j->step) {
        snprintf(path, sizeof path, "%s/page%08zu", j->dir, i);
        double t0 = l3_monotonic_seconds();
        int fd = j->write ? open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644) : open(path, O_RDONLY);
        ssize_t got = fd < 0 ? -1
                    : j->write ? pwrite(fd, buf, j->size, 0) : pread(fd, buf, j->size, 0);
        if (fd >= 0)
            close(fd);
        if (got != (ssize_t)j->size)
            j->failed = true;
        j->lat[i] = l3_monotonic_seconds() - t0;
    }
    free(buf);
    return NULL;
}

static bool files_phase(const char *dir, uint64_t size, size_t n, size_t threads, bool write, result *r)
{
    double *lat = calloc(n, sizeof *lat);
    pthread_t *t = calloc(threads, sizeof *t);
    files_job *jobs = calloc(threads, sizeof *jobs);
    if (!lat || !t || !jobs) {
        free(lat);
        free(t);
        free(jobs);
        return false;
    }
    double t0 = l3_monotonic_seconds(), c0 = cpu_now();
    for (size_t i = 0; i < threads; i++) {
        jobs[i] = (files_job){ dir, size, n, i, threads, write, lat, false };
        pthread_create(&t[i], NULL, files_thread, &jobs[i]);
    }
    bool ok = true;
    for (size_t i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        ok = ok && !jobs[i].failed;
    }
    free(t);
    free(jobs);
    if (write) {
        /* Until durable: what the others promise when their write returns. */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        syncfs(dfd);
        close(dfd);
    }
    double secs = l3_monotonic_seconds() - t0, cpu = cpu_now() - c0;
    wl_sort(lat, n);
    double bytes = (double)n * (double)size;
    *r = (result){ .ok = ok, .gbs = bytes / secs / 1e9, .p50_ms = lat[n / 2] * 1e3,
                   .p99_ms = lat[(size_t)(0.99 * (double)(n - 1))] * 1e3, .cpu_per_gb = cpu / (bytes / 1e9) };
    free(lat);
    return ok;
}

static void drop_cache(const char *dir, size_t n)
{
    char path[1200];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/page%08zu", dir, i);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            close(fd);
        }
    }
}

static void files_clear(const char *dir, size_t n)
{
    char path[1200];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/page%08zu", dir, i);
        unlink(path);
    }
    rmdir(dir);
}

/* A put round of the baseline: a file per page, durable at the end. */
static bool files_put_round(const char *dir, uint64_t total, uint64_t size, size_t threads, result *put)
{
    size_t n = (size_t)(total / size);
    files_clear(dir, n);
    mkdir(dir, 0755);
    return files_phase(dir, size, n, threads, true, put);
}

/* A get round: the page cache dropped first, so the reads reach the device. */
static bool files_get_round(const char *dir, uint64_t total, uint64_t size, size_t threads, result *get)
{
    size_t n = (size_t)(total / size);
    drop_cache(dir, n);
    return files_phase(dir, size, n, threads, false, get);
}

/* ---- recovery and steady state ---- */

typedef struct recovery {
    size_t objects;
    double populate_s, clean_open_s, scan_open_s;
    uint64_t clean_objects, scan_objects;
    uint64_t scan_summaries, scan_slabs; /* slabs the crash scan read from their summary, of all used */
    double fsck_s, verify_s, verify_gbs; /* l3fsck -n, and -n --verify (0: no l3fsck) */
    uint64_t fsck_objects;
} recovery;

/* l3fsck's rates on the recovery store (closed cleanly). */
static void fsck_rates(const char *file, recovery *r)
{
    double bytes = 0;
    if (!l3_probe_time_fsck(file, false, &r->fsck_s, &r->fsck_objects, &bytes, NULL)) {
        r->fsck_s = 0;
        return;
    }
    uint64_t objects;
    if (l3_probe_time_fsck(file, true, &r->verify_s, &objects, &bytes, NULL) && r->verify_s > 0)
        r->verify_gbs = bytes / r->verify_s / 1e9;
}

static bool run_recovery(const char *file, size_t n, recovery *r)
{
    unlink(file);
    r->objects = n;
    uint64_t capacity = (uint64_t)((double)n * 8192 * 1.05) + 256 * MIB;
    char text[2048];
    char quoted[1100];
    snprintf(quoted, sizeof quoted, "\"%s\"", file);
    config_text(text, sizeof text, quoted, capacity, 256, 1, true, n, 4096);
    l3_config cfg;
    l3_error err;
    if (l3_config_parse(text, &cfg, &err) != L3_OK)
        return false;
    l3_slab_options so = l3_config_store_options(&cfg);
    so.io_contexts = 4;
    l3_slabstore *s;
    if (l3_slabstore_open(&so, &s, &err) != L3_OK) {
        fprintf(stderr, "l3bench: recovery store: %s\n", err.msg);
        l3_config_free(&cfg);
        return false;
    }
    double t0 = l3_monotonic_seconds();
    l3_probe_fill(s, n, 4096, 256, "rec_"); /* a shortfall shows in the counts below */
    r->populate_s = l3_monotonic_seconds() - t0;
    l3_slabstore_free(s);
    l3_slab_stats st;
    bool good = l3_slabstore_open(&so, &s, &err) == L3_OK;
    if (good) {
        l3_slabstore_stats(s, &st);
        r->clean_open_s = st.open_seconds;
        r->clean_objects = st.objects;
        good = st.opened_from_checkpoint;
        l3_slabstore_free(s);
        fsck_rates(file, r);
    }
    good = good && l3_probe_crash_open(&so) && l3_slabstore_open(&so, &s, &err) == L3_OK;
    if (good) {
        l3_slabstore_stats(s, &st);
        r->scan_open_s = st.open_seconds;
        r->scan_objects = st.objects;
        r->scan_summaries = st.recovered_summaries;
        r->scan_slabs = st.slabs_open + st.slabs_sealed;
        good = !st.opened_from_checkpoint;
        l3_slabstore_free(s);
    }
    l3_config_free(&cfg);
    unlink(file);
    return good;
}

typedef struct steady {
    double gbs, fill_gbs; /* third round under eviction; first fill of a fresh (fallocated) store */
    uint64_t evictions, rejected;
} steady;

static bool run_steady(const char *file, size_t keys, size_t qd, steady *r)
{
    unlink(file);
    char text[2048];
    char quoted[1100];
    snprintf(quoted, sizeof quoted, "\"%s\"", file);
    config_text(text, sizeof text, quoted, 1ull << 30, keys, qd, true, 0, 4096);
    l3_config cfg;
    l3_error err;
    if (l3_config_parse(text, &cfg, &err) != L3_OK)
        return false;
    size_t n = 900; /* 1 MiB pages: 0.9 GiB per round into a 1 GiB store */
    workload w;
    if (wl_start(&w, &cfg, MIB, keys, qd, 3 * n, &err) != L3_OK) {
        l3_config_free(&cfg);
        return false;
    }
    wl_phase ph[3] = { { .name = "fill" }, { .name = "evict" }, { .name = "steady" } };
    bool ok = true;
    for (int i = 0; i < 3 && ok; i++)
        ok = wl_run(&w, L3_OP_PUT, n, (uint64_t)i * n, &ph[i]);
    r->gbs = of_phase(&ph[2]).gbs;
    r->fill_gbs = of_phase(&ph[0]).gbs;
    l3_slab_stats st;
    l3_slabstore_stats(w.store, &st);
    r->evictions = st.evictions;
    r->rejected = st.put_keys_rejected;
    for (int i = 0; i < 3; i++)
        free(ph[i].lat);
    ok = wl_stop(&w, &err) == L3_OK && ok;
    l3_config_free(&cfg);
    unlink(file);
    return ok;
}

/* ---- the report ---- */

enum { SYS_FIO, SYS_FIO_JOBS, SYS_L3, SYS_L3_NOCRC, SYS_FILES, NSYS };

/* l3cache's throughput over another system's, round by round: the median
 * of the per-round ratios, and the lowest and highest. */
typedef struct ratio {
    double median, lo, hi;
} ratio;

typedef struct row {
    uint64_t size;
    ratio vs_fio[2], vs_jobs[2]; /* [0] put, [1] get */
    ratio vs_nocrc;              /* gets: l3cache over its own no-crc gets, round by round */
    result fio_put, fio_get, l3_put, l3_get, l3_put_nc, l3_get_nc, files_put, files_get;
    result fiow_put, fiow_get; /* fio with l3cache's shape: qd jobs of depth keys */
} row;

static int cmp_gbs(const void *a, const void *b)
{
    double x = ((const result *)a)->gbs, y = ((const result *)b)->gbs;
    return x < y ? -1 : x > y;
}

/* The round with the median throughput (its latencies and CPU with it). */
static result median(result *runs, size_t n)
{
    qsort(runs, n, sizeof *runs, cmp_gbs);
    return runs[n / 2];
}

static void paired(const result *l3, const result *other, size_t n, ratio *out)
{
    double v[L3_COMPARE_MAX_ROUNDS];
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (l3[k].ok && other[k].ok && other[k].gbs > 0)
            v[m++] = l3[k].gbs / other[k].gbs;
    *out = (ratio){ 0, 0, 0 };
    if (!m)
        return;
    wl_sort(v, m);
    *out = (ratio){ m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2, v[0], v[m - 1] };
}

static const char *met(bool yes) { return yes ? "met" : "NOT met"; }

static void plot(const char *png, const char *dir, const row *rows, size_t n)
{
    char dat[1024], gp[1024];
    snprintf(dat, sizeof dat, "%s/l3bench-compare.dat", dir);
    snprintf(gp, sizeof gp, "%s/l3bench-compare.gp", dir);
    FILE *f = fopen(dat, "w");
    if (!f)
        return;
    fprintf(f, "# size_kib fio_get l3_get files_get fio_put l3_put files_put fio_jobs_get fio_jobs_put (GB/s)\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%llu %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f\n", (unsigned long long)(rows[i].size >> 10),
                rows[i].fio_get.gbs, rows[i].l3_get.gbs, rows[i].files_get.gbs, rows[i].fio_put.gbs,
                rows[i].l3_put.gbs, rows[i].files_put.gbs, rows[i].fiow_get.gbs, rows[i].fiow_put.gbs);
    fclose(f);
    f = fopen(gp, "w");
    if (!f)
        return;
    fprintf(f,
            "set terminal pngcairo size 1200,480 font ',11'\n"
            "set output '%s'\n"
            "set multiplot layout 1,2 title 'l3cache vs fio (device limit) vs file-per-key, GB/s by object size'\n"
            "set termoption noenhanced\n"
            "set logscale x 2\nset xlabel 'object size (KiB)'\nset ylabel 'GB/s'\nset grid\nset key below\n"
            "set yrange [0:*]\nset xrange [48:5600]\nset xtics (64, 256, 1024, 4096)\n"
            "set title 'get'\n"
            "plot '%s' u 1:2 w lp lw 2 t 'fio, 1 job', '' u 1:8 w lp lw 2 dt 2 t 'fio, l3cache shape', "
            "'' u 1:3 w lp lw 2 t 'l3cache', '' u 1:4 w lp lw 2 t 'file per key'\n"
            "set title 'put'\n"
            "plot '%s' u 1:5 w lp lw 2 t 'fio, 1 job', '' u 1:9 w lp lw 2 dt 2 t 'fio, l3cache shape', "
            "'' u 1:6 w lp lw 2 t 'l3cache', '' u 1:7 w lp lw 2 t 'file per key'\n"
            "unset multiplot\n",
            png, dat, dat);
    fclose(f);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "gnuplot %s 2>/dev/null", gp);
    if (system(cmd) != 0)
        fprintf(stderr, "l3bench: gnuplot failed or is missing; the data is in %s\n", dat);
}

/* One --compare run: the options and what every round shares. */
typedef struct compare {
    const l3_compare_options *o;
    char file[900], files_dir[900];
    char fio_file[2][L3_COMPARE_MAX_DIRS][1000]; /* fio's file in each directory, for 1 job and for jobs */
    char fio_list[2][L3_COMPARE_MAX_DIRS * 1001]; /* the same joined by ':' (fio's list) */
    const char *dirs[L3_COMPARE_MAX_DIRS];
    size_t ndirs;
    bool have_fio, all_ok;
    size_t depth, reps;
    l3_sys l3[2];
} compare;

static const char *const sys_names[NSYS] = { "fio", "fio-jobs", "l3cache", "no-crc", "files" };

/* fio's turn: its file laid out (and settled) before its timed writes, as
 * fio would do itself, untimed but right before them. */
static bool fio_turn(compare *cx, const row *r, int sys, int op, result *res)
{
    int k = sys == SYS_FIO ? 0 : 1;
    for (size_t i = 0; i < cx->ndirs && op == 0; i++)
        if (!l3_probe_lay_out(cx->fio_file[k][i], cx->o->total / cx->ndirs)) {
            fprintf(stderr, "l3bench: laying out %s: %s\n", cx->fio_file[k][i], strerror(errno));
            return false;
        }
    if (op == 0)
        settle();
    if (sys == SYS_FIO)
        return run_fio(cx->fio_list[k], cx->ndirs, cx->o->total, r->size, cx->depth, 1, op == 0, res);
    return run_fio(cx->fio_list[k], cx->ndirs, cx->o->total, r->size, cx->o->keys, cx->o->qd, op == 0, res);
}

/* One system's put (op 0) or get (op 1) turn, with the device's view. */
static void run_turn(compare *cx, const row *r, int sys, int op, result *res)
{
    const l3_compare_options *o = cx->o;
    devstat d0 = devstat_now();
    if (sys == SYS_FIO || sys == SYS_FIO_JOBS) {
        if (!cx->have_fio)
            return;
        cx->all_ok &= fio_turn(cx, r, sys, op, res);
    } else if (sys == SYS_L3 || sys == SYS_L3_NOCRC) {
        l3_sys *l = &cx->l3[sys - SYS_L3];
        cx->all_ok &= op == 0 ? l3_put_round(l, o->total, r->size, o->keys, o->qd, res) : l3_get_round(l, res);
    } else {
        cx->all_ok &= op == 0 ? files_put_round(cx->files_dir, o->total, r->size, o->qd, res)
                              : files_get_round(cx->files_dir, o->total, r->size, o->qd, res);
    }
    devstat d1 = devstat_now();
    if (d0.ok && d1.ok && d1.ios > d0.ios && d1.ticks_ms > d0.ticks_ms) {
        res->dev_queue = (d1.in_queue_ms - d0.in_queue_ms) / (d1.ticks_ms - d0.ticks_ms);
        res->dev_kib = (d1.sectors - d0.sectors) * 512 / 1024 / (d1.ios - d0.ios);
    }
    settle();
}

/* Every round's GB/s, device queue and request size, on stderr. */
static void print_rounds(const compare *cx, const row *r, int op, result (*runs)[2][L3_COMPARE_MAX_ROUNDS])
{
    for (size_t k = 0; k < cx->reps && !cx->o->json; k++) {
        char line[512];
        int len = snprintf(line, sizeof line, "l3bench: %lluK %s round %zu, GB/s (device queue, KiB per request):",
                           (unsigned long long)(r->size >> 10), op ? "get" : "put", k + 1);
        for (int sys = 0; sys < NSYS && len < (int)sizeof line; sys++) {
            const result *x = &runs[sys][op][k];
            len += snprintf(line + len, sizeof line - (size_t)len, " %s %.3f (%.0f, %.0f)", sys_names[sys],
                            x->gbs, x->dev_queue, x->dev_kib);
        }
        fprintf(stderr, "%s\n", line);
    }
}

/* Reduce one size's rounds to its row: paired ratios, then medians. */
static void reduce(compare *cx, row *r, result (*runs)[2][L3_COMPARE_MAX_ROUNDS])
{
    result *cells[NSYS][2] = {
        { &r->fio_put, &r->fio_get }, { &r->fiow_put, &r->fiow_get }, { &r->l3_put, &r->l3_get },
        { &r->l3_put_nc, &r->l3_get_nc }, { &r->files_put, &r->files_get } };
    for (int op = 0; op < 2; op++) {
        paired(runs[SYS_L3][op], runs[SYS_FIO][op], cx->reps, &r->vs_fio[op]);
        paired(runs[SYS_L3][op], runs[SYS_FIO_JOBS][op], cx->reps, &r->vs_jobs[op]);
    }
    paired(runs[SYS_L3][1], runs[SYS_L3_NOCRC][1], cx->reps, &r->vs_nocrc);
    for (int sys = 0; sys < NSYS; sys++)
        for (int op = 0; op < 2; op++)
            *cells[sys][op] = median(runs[sys][op], cx->reps); /* sorts: after the pairing */
}

/* Each round, every system takes its turn, first for puts and then (over
 * what its last put round wrote) for gets, in an order that rotates from
 * round to round. A write leaves the device busy for a while after it
 * returns (a virtual disk's host flushes behind it), so reads are never
 * timed right after another system's writes: all put rounds come first,
 * then all get rounds. */
static void run_size(compare *cx, row *r)
{
    static result runs[NSYS][2][L3_COMPARE_MAX_ROUNDS];
    memset(runs, 0, sizeof runs);
    for (int op = 0; op < 2; op++) {
        for (size_t k = 0; k < cx->reps; k++)
            for (size_t t = 0; t < NSYS; t++) {
                int sys = (int)((t + k) % NSYS);
                run_turn(cx, r, sys, op, &runs[sys][op][k]);
            }
        print_rounds(cx, r, op, runs);
        if (op == 0)
            settle(); /* a longer pause before the first read */
    }
    reduce(cx, r, runs);
}

static json_t *row_json(const row *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "size", json_integer((json_int_t)r->size));
    const struct { const char *name; const result *res; } cols[] = {
        { "fio_get", &r->fio_get }, { "fio_put", &r->fio_put }, { "l3_get", &r->l3_get },
        { "l3_put", &r->l3_put }, { "l3_get_no_crc", &r->l3_get_nc }, { "l3_put_no_crc", &r->l3_put_nc },
        { "files_get", &r->files_get }, { "files_put", &r->files_put },
        { "fio_jobs_get", &r->fiow_get }, { "fio_jobs_put", &r->fiow_put } };
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
        json_object_set_new(j, cols[c].name, json_pack("{s:f,s:f,s:f,s:f}", "gb_per_s", cols[c].res->gbs, "p50_ms",
                                                       cols[c].res->p50_ms, "p99_ms", cols[c].res->p99_ms,
                                                       "cpu_s_per_gb", cols[c].res->cpu_per_gb));
    const char *ops[2] = { "put", "get" };
    for (int op = 0; op < 2; op++) {
        char name[32];
        snprintf(name, sizeof name, "l3_over_fio_%s", ops[op]);
        json_object_set_new(j, name, json_pack("{s:f,s:f,s:f}", "median", r->vs_fio[op].median, "lowest",
                                               r->vs_fio[op].lo, "highest", r->vs_fio[op].hi));
        snprintf(name, sizeof name, "l3_over_fio_jobs_%s", ops[op]);
        json_object_set_new(j, name, json_pack("{s:f,s:f,s:f}", "median", r->vs_jobs[op].median, "lowest",
                                               r->vs_jobs[op].lo, "highest", r->vs_jobs[op].hi));
    }
    json_object_set_new(j, "l3_over_no_crc_get", json_pack("{s:f,s:f,s:f}", "median", r->vs_nocrc.median, "lowest",
                                                           r->vs_nocrc.lo, "highest", r->vs_nocrc.hi));
    return j;
}

/* What every report shows besides the rows. */
typedef struct extras {
    double crc_s_per_gb; /* crc32c of data not in any cache, one core */
    exists_result ex;
    recovery rec;
    steady sty;
    l3_mixed_result mix;
    bool rec_ok, sty_ok;
} extras;

/* CPU seconds per GB of crc32c over data no cache holds (as a get's
 * freshly read pages): 256 MiB, more than any last-level cache, in 64 KiB
 * pieces, the second pass timed. The part of l3cache's CPU per GB that
 * fio has no counterpart for. 0 when the buffer cannot be had. */
static double crc_cost(void)
{
    const size_t len = 256 * MIB, piece = (size_t)64 << 10;
    uint8_t *buf = malloc(len);
    if (!buf)
        return 0;
    for (size_t i = 0; i < len; i += 64)
        buf[i] = (uint8_t)(i >> 6);
    volatile uint32_t sink = 0; /* (the crcs are used: not optimised away) */
    double t0 = 0;
    for (int pass = 0; pass < 2; pass++) {
        t0 = l3_monotonic_seconds();
        for (size_t off = 0; off < len; off += piece)
            sink ^= l3_crc32c(0, buf + off, piece);
    }
    double secs = l3_monotonic_seconds() - t0;
    free(buf);
    return secs / ((double)len / 1e9);
}

static void print_json_report(const compare *cx, const row *rows, const extras *x)
{
    json_t *root = json_object(), *arr = json_array();
    for (size_t i = 0; i < cx->o->num_sizes; i++)
        json_array_append_new(arr, row_json(&rows[i]));
    json_object_set_new(root, "rounds", json_integer((json_int_t)cx->reps));
    json_object_set_new(root, "crc32c_cold_s_per_gb", json_real(x->crc_s_per_gb));
    json_t *dirs = json_array();
    for (size_t i = 0; i < cx->ndirs; i++)
        json_array_append_new(dirs, json_string(cx->dirs[i]));
    json_object_set_new(root, "dirs", dirs);
    json_object_set_new(root, "sizes", arr);
    json_object_set_new(root, "exists", json_pack("{s:f,s:f}", "store_keys_per_s", x->ex.store_keys_per_s,
                                                  "executor_keys_per_s", x->ex.executor_keys_per_s));
    json_object_set_new(root, "recovery", json_pack("{s:I,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:f}", "objects",
                                                    (json_int_t)x->rec.objects, "clean_open_s", x->rec.clean_open_s,
                                                    "scan_open_s", x->rec.scan_open_s, "clean_objects",
                                                    (json_int_t)x->rec.clean_objects, "scan_objects",
                                                    (json_int_t)x->rec.scan_objects, "scan_summaries",
                                                    (json_int_t)x->rec.scan_summaries, "fsck_s", x->rec.fsck_s,
                                                    "fsck_verify_s", x->rec.verify_s, "fsck_verify_gb_per_s",
                                                    x->rec.verify_gbs));
    const l3_mixed_result *m = &x->mix;
    json_object_set_new(root, "mixed", json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "page", (json_int_t)m->page,
                                                 "rounds", (json_int_t)m->rounds, "get_alone_gb_per_s", m->alone_gbs,
                                                 "get_alone_p99_ms", m->alone_p99_ms, "get_mixed_gb_per_s", m->mixed_gbs,
                                                 "get_mixed_p99_ms", m->mixed_p99_ms, "put_gb_per_s", m->put_gbs,
                                                 "p99_ratio", m->p99_ratio, "gb_per_s_ratio", m->gbs_ratio));
    json_object_set_new(root, "steady_put", json_pack("{s:f,s:f,s:I}", "gb_per_s", x->sty.gbs, "first_fill_gb_per_s",
                                                      x->sty.fill_gbs, "evictions", (json_int_t)x->sty.evictions));
    char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
    puts(text);
    free(text);
    json_decref(root);
}

static void print_table(const compare *cx, const row *rows)
{
    printf("\n%-8s %-4s %9s %9s %9s %7s %7s %9s %9s   %-23s %-23s %s\n", "size", "op", "fio GB/s", "fio-jobs",
           "l3 GB/s", "l3/fio", "l3/jobs", "no-crc", "files", "p50/p99 ms fio", "p50/p99 ms l3",
           "CPU s/GB fio l3 files");
    for (size_t i = 0; i < cx->o->num_sizes; i++) {
        const row *r = &rows[i];
        for (int op = 0; op < 2; op++) {
            const result *f = op ? &r->fio_put : &r->fio_get, *l = op ? &r->l3_put : &r->l3_get,
                         *nc = op ? &r->l3_put_nc : &r->l3_get_nc, *fl = op ? &r->files_put : &r->files_get,
                         *fw = op ? &r->fiow_put : &r->fiow_get;
            char size[24];
            snprintf(size, sizeof size, "%lluK", (unsigned long long)(r->size >> 10));
            const ratio *vf = &r->vs_fio[op ? 0 : 1], *vj = &r->vs_jobs[op ? 0 : 1];
            printf("%-8s %-4s %9.3f %9.3f %9.3f %7.2f %7.2f %9.3f %9.3f   %7.2f / %-7.2f       %7.2f / %-7.2f"
                   "       %.2f %.2f %.2f\n", size, op ? "put" : "get", f->gbs, fw->gbs, l->gbs, vf->median,
                   vj->median, nc->gbs, fl->gbs, f->p50_ms, f->p99_ms, l->p50_ms, l->p99_ms, f->cpu_per_gb,
                   l->cpu_per_gb, fl->cpu_per_gb);
        }
    }
    const l3_compare_options *o = cx->o;
    printf("\nGB/s, latency and CPU: the median of %zu rounds; l3/fio and l3/jobs: the median of the "
           "per-round ratios (l3cache and fio in the same round).\n"
           "fio: one job of iodepth %zu; fio-jobs: %zu jobs of iodepth %zu (l3cache's shape: %zu operations "
           "of %zu keys in flight); l3cache latency is per\noperation of %zu keys, fio's per I/O of one "
           "object. Puts of all systems run first, then gets of what each wrote.\n",
           cx->reps, cx->depth, o->qd, o->keys, o->qd, o->keys, o->keys);
}

/* The mixed phase's lines and targets. */
static void print_mixed(const l3_mixed_result *m, bool targets)
{
    if (!m->ok) {
        printf("%s", targets ? "" : "mixed phase: failed\n");
        return;
    }
    if (targets) {
        printf("  get p99 under a put stream <= 1.5x alone: %s (%.2fx)\n", met(m->p99_ratio <= 1.5), m->p99_ratio);
        printf("  get GB/s under a put stream >= 0.8x alone: %s (%.2fx; puts %.2f GB/s)\n", met(m->gbs_ratio >= 0.8),
               m->gbs_ratio, m->put_gbs);
        return;
    }
    printf("mixed (%llu KiB pages, %zu rounds, medians): gets alone %.3f GB/s p99 %.1f ms; under a put stream "
           "%.3f GB/s (%.2fx) p99 %.1f ms (%.2fx), the stream's puts %.3f GB/s\n",
           (unsigned long long)(m->page >> 10), m->rounds, m->alone_gbs, m->alone_p99_ms, m->mixed_gbs, m->gbs_ratio,
           m->mixed_p99_ms, m->p99_ratio, m->put_gbs);
}

static void print_extras(const compare *cx, const extras *x)
{
    if (x->crc_s_per_gb > 0)
        printf("crc32c (%s) of data in no cache, one core: %.1f GB/s, %.3f CPU s/GB\n", l3_crc32c_engine(),
               1.0 / x->crc_s_per_gb, x->crc_s_per_gb);
    printf("exists(): %.2f M keys/s on the store, %.2f M keys/s through the executor\n",
           x->ex.store_keys_per_s / 1e6, x->ex.executor_keys_per_s / 1e6);
    if (x->rec_ok)
        printf("recovery of %zu objects: clean reopen %.3f s (%llu objects, checkpoint), crash scan %.3f s "
               "(%llu objects; %llu of %llu slabs from their summary, the rest from headers); populating took "
               "%.1f s\n", x->rec.objects, x->rec.clean_open_s, (unsigned long long)x->rec.clean_objects,
               x->rec.scan_open_s, (unsigned long long)x->rec.scan_objects,
               (unsigned long long)x->rec.scan_summaries, (unsigned long long)x->rec.scan_slabs, x->rec.populate_s);
    else if (cx->o->recovery_objects)
        printf("recovery: failed\n");
    if (x->rec_ok && x->rec.fsck_s > 0)
        printf("l3fsck of those %llu objects: -n %.2f s (%.2f M objects/s); -n --verify %.2f s (%.2f GB/s of "
               "used slabs)\n", (unsigned long long)x->rec.fsck_objects, x->rec.fsck_s,
               (double)x->rec.fsck_objects / x->rec.fsck_s / 1e6, x->rec.verify_s, x->rec.verify_gbs);
    else if (x->rec_ok)
        printf("l3fsck: not found beside l3bench nor on the PATH\n");
    print_mixed(&x->mix, false);
    if (x->sty_ok)
        printf("steady-state puts under eviction (1 GiB store, 1 MiB pages, third round): %.3f GB/s, "
               "%llu slabs evicted, %llu puts rejected;\nthe first fill of that fresh, fallocated store "
               "(ext4 converts unwritten extents as it goes): %.3f GB/s\n", x->sty.gbs,
               (unsigned long long)x->sty.evictions, (unsigned long long)x->sty.rejected, x->sty.fill_gbs);
}

static void print_targets(const compare *cx, const row *rows, const extras *x)
{
    printf("\ntargets:\n");
    for (size_t i = 0; i < cx->o->num_sizes; i++) {
        const row *r = &rows[i];
        double want = 0.95; /* issue 16: every size, gets and puts */
        if (!cx->have_fio)
            continue;
        for (int op = 1; op >= 0; op--) {
            const ratio *v = &r->vs_fio[op];
            printf("  %lluK %s >= %.2fx fio: %s (%.2fx; rounds %.2f to %.2f; %.2fx of fio-jobs)\n",
                   (unsigned long long)(r->size >> 10), op ? "get" : "put", want, met(v->median >= want),
                   v->median, v->lo, v->hi, r->vs_jobs[op].median);
        }
    }
    for (size_t i = 0; i < cx->o->num_sizes; i++) {
        const row *r = &rows[i];
        const ratio *nc = &r->vs_nocrc;
        printf("  %lluK get >= 0.97x its no-crc gets: %s (%.2fx; rounds %.2f to %.2f)\n",
               (unsigned long long)(r->size >> 10), met(nc->median >= 0.97), nc->median, nc->lo, nc->hi);
    }
    for (size_t i = 0; i < cx->o->num_sizes && cx->have_fio; i++) {
        const row *r = &rows[i];
        for (int op = 1; op >= 0; op--) {
            const result *l = op ? &r->l3_get : &r->l3_put, *f = op ? &r->fio_get : &r->fio_put;
            /* fio's own CPU for the same I/O plus the crc: below that no
             * store that checks every byte can go on this machine. */
            printf("  %lluK %s CPU <= 0.06 s/GB: %s (%.3f; floor fio %.3f + crc32c %.3f = %.3f)\n",
                   (unsigned long long)(r->size >> 10), op ? "get" : "put", met(l->cpu_per_gb <= 0.06),
                   l->cpu_per_gb, f->cpu_per_gb, x->crc_s_per_gb, f->cpu_per_gb + x->crc_s_per_gb);
        }
    }
    print_mixed(&x->mix, true);
    printf("  exists >= 5M keys/s: %s (%.2fM on the store)\n", met(x->ex.store_keys_per_s >= 5e6),
           x->ex.store_keys_per_s / 1e6);
    const char *of = x->rec.objects >= 1000000 ? "" : " (the target is for 1000000)";
    if (x->rec_ok) {
        printf("  clean reopen of %zu objects <= 0.3 s: %s (%.3f s)%s\n", x->rec.objects,
               met(x->rec.clean_open_s <= 0.3), x->rec.clean_open_s, of);
        printf("  crash scan of %zu objects <= 2 s: %s (%.3f s)%s\n", x->rec.objects,
               met(x->rec.scan_open_s <= 2.0), x->rec.scan_open_s, of);
    }
    if (x->rec_ok && x->rec.fsck_s > 0)
        printf("  l3fsck -n of %llu objects < 10 s: %s (%.2f s)\n", (unsigned long long)x->rec.fsck_objects,
               met(x->rec.fsck_objects >= 1000000 && x->rec.fsck_s < 10.0), x->rec.fsck_s);
}

/* Each directory's files: l3cache's (with and without crc) and fio's. */
static void name_files(compare *cx)
{
    for (size_t i = 0; i < cx->ndirs; i++) {
        const char *d = cx->dirs[i];
        snprintf(cx->l3[0].file[i], sizeof cx->l3[0].file[i], "%s/l3bench-compare.store", d);
        snprintf(cx->l3[1].file[i], sizeof cx->l3[1].file[i], "%s/l3bench-compare-nocrc.store", d);
        snprintf(cx->fio_file[0][i], sizeof cx->fio_file[0][i], "%s/l3bench-compare.fio", d);
        snprintf(cx->fio_file[1][i], sizeof cx->fio_file[1][i], "%s/l3bench-compare.fio-jobs", d);
        for (int k = 0; k < 2; k++)
            snprintf(cx->fio_list[k] + strlen(cx->fio_list[k]), sizeof cx->fio_list[k] - strlen(cx->fio_list[k]),
                     "%s%s", i ? ":" : "", cx->fio_file[k][i]);
        devstat_find(d);
    }
    cx->l3[0].nfiles = cx->l3[1].nfiles = cx->ndirs;
}

static void compare_init(compare *cx, const l3_compare_options *o)
{
    memset(cx, 0, sizeof *cx);
    cx->o = o;
    cx->all_ok = true;
    cx->ndirs = o->num_dirs ? o->num_dirs : 1;
    for (size_t i = 0; i < cx->ndirs; i++)
        cx->dirs[i] = o->num_dirs ? o->dirs[i] : o->dir;
    snprintf(cx->file, sizeof cx->file, "%s/l3bench-compare.store", cx->dirs[0]);
    snprintf(cx->files_dir, sizeof cx->files_dir, "%s/l3bench-compare.files", cx->dirs[0]);
    cx->l3[0].verify = true;
    num_devstats = 0;
    name_files(cx);
    settle_dirs = cx->dirs;
    num_settle_dirs = cx->ndirs;
    cx->have_fio = system("fio --version >/dev/null 2>&1") == 0;
    if (!cx->have_fio)
        fprintf(stderr, "l3bench: fio not found (apt-get install fio): no device limit, no ratios\n");
    cx->depth = o->keys * o->qd;
    L3_ASSERT(o->repeat >= 1 && o->repeat <= L3_COMPARE_MAX_ROUNDS); /* l3bench refuses others */
    cx->reps = o->repeat;
}

int l3_compare_run(const l3_compare_options *o)
{
    compare cx;
    compare_init(&cx, o);
    if (!o->json)
        printf("l3cache vs fio vs file-per-key: %llu MiB per run, %zu keys per operation, %zu in flight "
               "(fio iodepth %zu), crc32c on %s\n", (unsigned long long)(o->total >> 20), o->keys, o->qd,
               cx.depth, l3_crc32c_engine());
    if (!o->json && cx.ndirs > 1)
        printf("%zu directories: l3cache's store over a file in each (store.paths), fio over the same files "
               "(%s); the file-per-key baseline, recovery, steady state and the mixed phase use the first\n",
               cx.ndirs, cx.fio_list[0]);
    row rows[8] = { 0 };
    extras x = { 0 };
    for (size_t i = 0; i < o->num_sizes; i++) {
        rows[i].size = o->sizes[i];
        run_size(&cx, &rows[i]);
        if (i == 0 && cx.l3[0].open)
            l3_exists(&cx.l3[0], &x.ex);
        for (int j = 0; j < 2; j++) {
            l3_sys_close(&cx.l3[j]);
            for (size_t d = 0; d < cx.ndirs; d++)
                unlink(cx.fio_file[j][d]);
        }
        files_clear(cx.files_dir, (size_t)(o->total / rows[i].size));
        if (!o->json)
            fprintf(stderr, "l3bench: %lluK done\n", (unsigned long long)(rows[i].size >> 10));
    }
    x.rec_ok = o->recovery_objects ? run_recovery(cx.file, o->recovery_objects, &x.rec) : false;
    x.sty_ok = run_steady(cx.file, o->keys, o->qd, &x.sty);
    x.crc_s_per_gb = crc_cost();
    if (!o->no_mixed)
        l3_mixed_run(o->dir, o->total, MIB, o->keys, o->qd, 3, &x.mix);
    if (o->json) {
        print_json_report(&cx, rows, &x);
    } else {
        print_table(&cx, rows);
        print_extras(&cx, &x);
        print_targets(&cx, rows, &x);
    }
    if (o->plot && o->num_sizes > 1)
        plot(o->plot, o->dir, rows, o->num_sizes);
    return cx.all_ok && (x.rec_ok || !o->recovery_objects) && x.sty_ok && (x.mix.ok || o->no_mixed) ? 0 : 1;
}
