/* l3bench: a prefix-cache workload through the executor on a real store.
 *
 * With no arguments it creates (or reopens) l3cache.store in the working
 * directory and runs: a warm check of the previous run's pages, puts of
 * pages, existence queries, gets (verified), and a namespace change. It
 * prints throughput, latency percentiles and hit rates. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "l3_clock.h"
#include "l3_config.h"
#include "l3_executor.h"
#include "l3_slabstore.h"

/* The embedded default: a 1 GiB store file in the working directory. */
static const char *const default_config =
    "{ \"store\": { \"path\": \"l3cache.store\", \"capacity\": \"1GiB\" },"
    "  \"executor\": { \"max_operations\": 64, \"max_keys_per_operation\": 64,"
    "                  \"read_workers\": 2, \"write_workers\": 2 },"
    "  \"namespace\": { \"deployment_id\": \"l3bench\", \"weight_version\": \"v1\" } }";

typedef struct opts {
    const char *config_file, *path, *engine;
    uint64_t capacity, size;
    size_t count, keys, qd;
    bool json, no_verify, fresh;
} opts;

typedef struct phase {
    const char *name;
    bool no_bytes; /* create-only re-puts move no bytes */
    size_t ops, keys, hits, misses, failures;
    uint64_t bytes;
    double seconds, cpu;
    double *lat;
    size_t nlat;
} phase;

typedef struct bench {
    opts o;
    l3_config cfg;
    l3_slabstore *store;
    l3_executor *ex;
    uint8_t *pool;
    size_t pool_len, pool_pages;
    uint64_t next_op;
    char (*hashes)[48];
} bench;

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(phase *p, double q)
{
    if (!p->nlat)
        return 0;
    size_t i = (size_t)(q * (double)(p->nlat - 1) + 0.5);
    return p->lat[i];
}

/* A page's stamp: its index at both ends, so a get can prove it got the
 * right page (the store's crc32c proves the rest). */
static void stamp(uint8_t *page, size_t size, uint64_t index)
{
    memcpy(page, &index, 8);
    if (size >= 16)
        memcpy(page + size - 8, &index, 8);
}

static bool stamped(const uint8_t *page, size_t size, uint64_t index)
{
    uint64_t a, b = index;
    memcpy(&a, page, 8);
    if (size >= 16)
        memcpy(&b, page + size - 8, 8);
    return a == index && b == index;
}

/* Run `kind` over pages [0, count) in operations of o.keys keys, o.qd in
 * flight. `index_base` offsets the page identities (another namespace's
 * pages). Returns false on a protocol error. */
static bool run_phase(bench *b, l3_op_kind kind, size_t count, uint64_t index_base, phase *p)
{
    size_t k = b->o.keys, qd = b->o.qd, nops = (count + k - 1) / k;
    p->lat = calloc(nops ? nops : 1, sizeof *p->lat);
    typedef struct slot {
        bool busy;
        uint64_t op_id;
        size_t first, n;
        double started;
        l3_storage_key keys[256];
        int32_t blocks[256];
    } slot;
    slot *slots = calloc(qd, sizeof *slots);
    size_t next = 0, done = 0;
    double t0 = l3_monotonic_seconds(), c0 = cpu_seconds();
    bool ok = true;
    while (done < nops && ok) {
        for (size_t s = 0; s < qd && next < nops; s++) {
            slot *sl = &slots[s];
            if (sl->busy)
                continue;
            sl->first = next * k;
            sl->n = count - sl->first < k ? count - sl->first : k;
            for (size_t i = 0; i < sl->n; i++) {
                size_t page = sl->first + i;
                sl->keys[i] = (l3_storage_key){ .group = 0, .content_hash = b->hashes[page + index_base],
                                                .page_offset = 0 };
                /* Slot s owns pool pages [s*k, (s+1)*k): no sharing in flight. */
                sl->blocks[i] = (int32_t)(s * k + i + 1);
                if (kind == L3_OP_PUT)
                    stamp(b->pool + (size_t)(sl->blocks[i] - 1) * b->o.size, b->o.size, page + index_base);
            }
            sl->op_id = ++b->next_op;
            l3_operation op = { .kind = kind, .op_id = sl->op_id, .keys = sl->keys, .num_keys = sl->n,
                                .host_blocks = sl->blocks, .num_host_blocks = sl->n };
            l3_error err;
            if (l3_executor_submit(b->ex, &op, 1, &err) != L3_OK) {
                fprintf(stderr, "l3bench: submit: %s\n", err.msg);
                ok = false;
                break;
            }
            sl->busy = true;
            sl->started = l3_monotonic_seconds();
            next++;
        }
        l3_poll poll;
        if (l3_executor_poll(b->ex, &poll, NULL) != L3_OK)
            break;
        double now = l3_monotonic_seconds();
        for (size_t c = 0; c < poll.num_completions; c++) {
            l3_completion *cp = &poll.completions[c];
            for (size_t s = 0; s < qd; s++) {
                slot *sl = &slots[s];
                if (!sl->busy || sl->op_id != cp->op_id)
                    continue;
                sl->busy = false;
                p->lat[p->nlat++] = now - sl->started;
                p->ops++;
                for (size_t i = 0; i < cp->num_keys; i++) {
                    p->keys++;
                    if (cp->success[i]) {
                        p->hits++;
                        if (kind != L3_OP_QUERY && !p->no_bytes)
                            p->bytes += b->o.size;
                        if (kind == L3_OP_GET &&
                            !stamped(b->pool + (size_t)(sl->blocks[i] - 1) * b->o.size, b->o.size,
                                     sl->first + i + index_base)) {
                            fprintf(stderr, "l3bench: page %zu came back with the wrong bytes\n",
                                    sl->first + i);
                            ok = false;
                        }
                    } else if (cp->object_failures[i] || kind == L3_OP_QUERY) {
                        p->misses++; /* a query's false is a miss, not a failure */
                    } else {
                        p->failures++;
                    }
                }
                if (!cp->retired) {
                    fprintf(stderr, "l3bench: operation %llu did not retire its I/O\n",
                            (unsigned long long)cp->op_id);
                    ok = false;
                }
                done++;
            }
        }
        bool idle = poll.num_completions == 0;
        l3_poll_release(&poll);
        if (idle)
            usleep(20);
    }
    p->seconds = l3_monotonic_seconds() - t0;
    p->cpu = cpu_seconds() - c0;
    qsort(p->lat, p->nlat, sizeof *p->lat, cmp_double);
    free(slots);
    return ok;
}

static void print_phase(bench *b, phase *p, json_t *out)
{
    double gbs = p->seconds > 0 ? (double)p->bytes / p->seconds / 1e9 : 0;
    double kps = p->seconds > 0 ? (double)p->keys / p->seconds : 0;
    double hit = p->keys ? 100.0 * (double)p->hits / (double)p->keys : 0;
    if (b->o.json) {
        json_array_append_new(out, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                                             "phase", p->name, "operations", (json_int_t)p->ops, "keys",
                                             (json_int_t)p->keys, "hits", (json_int_t)p->hits,
                                             "misses", (json_int_t)p->misses, "failures",
                                             (json_int_t)p->failures, "seconds", p->seconds, "gb_per_s",
                                             gbs, "keys_per_s", kps, "p50_ms", pct(p, 0.5) * 1e3,
                                             "p99_ms", pct(p, 0.99) * 1e3, "p999_ms", pct(p, 0.999) * 1e3,
                                             "cpu_s_per_gb", p->bytes ? p->cpu / ((double)p->bytes / 1e9) : 0));
        return;
    }
    printf("%-16s %6zu ops %8zu keys  %7.3f GB/s %10.0f keys/s  p50 %7.3f ms  p99 %7.3f ms  hit %5.1f%%",
           p->name, p->ops, p->keys, gbs, kps, pct(p, 0.5) * 1e3, pct(p, 0.99) * 1e3, hit);
    if (p->failures)
        printf("  failed %zu", p->failures);
    printf("\n");
}

static int usage(void)
{
    fprintf(stderr,
            "usage: l3bench [--config FILE] [--path PATH] [--capacity SIZE] [--size SIZE]\n"
            "               [--count N] [--keys K] [--qd N] [--engine auto|io_uring|libaio]\n"
            "               [--no-verify] [--json]\n"
            "  default: l3cache.store (1 GiB) in the working directory, 1024 pages of 256 KiB,\n"
            "  16 keys per operation, 8 operations in flight\n");
    return 2;
}

int main(int argc, char **argv)
{
    bench b = { .o = { .size = 256 * 1024, .count = 1024, .keys = 16, .qd = 8 } };
    static const struct option longs[] = {
        { "config", required_argument, 0, 'c' }, { "path", required_argument, 0, 'p' },
        { "capacity", required_argument, 0, 'C' }, { "size", required_argument, 0, 's' },
        { "count", required_argument, 0, 'n' }, { "keys", required_argument, 0, 'k' },
        { "qd", required_argument, 0, 'q' }, { "engine", required_argument, 0, 'e' },
        { "no-verify", no_argument, 0, 'V' }, { "json", no_argument, 0, 'j' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
    };
    int c;
    l3_error err;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 'c': b.o.config_file = optarg; break;
        case 'p': b.o.path = optarg; break;
        case 'C':
            if (l3_parse_size(optarg, &b.o.capacity, &err) != L3_OK) {
                fprintf(stderr, "l3bench: --capacity: %s\n", err.msg);
                return 2;
            }
            break;
        case 's':
            if (l3_parse_size(optarg, &b.o.size, &err) != L3_OK || b.o.size < 16) {
                fprintf(stderr, "l3bench: --size: expected a size of at least 16 bytes\n");
                return 2;
            }
            break;
        case 'n': b.o.count = strtoul(optarg, NULL, 10); break;
        case 'k': b.o.keys = strtoul(optarg, NULL, 10); break;
        case 'q': b.o.qd = strtoul(optarg, NULL, 10); break;
        case 'e': b.o.engine = optarg; break;
        case 'V': b.o.no_verify = true; break;
        case 'j': b.o.json = true; break;
        default: return usage();
        }
    }
    if (optind != argc || b.o.count == 0 || b.o.keys == 0 || b.o.keys > 256 || b.o.qd == 0 ||
        b.o.qd > 1024)
        return usage();
    l3_status st = b.o.config_file ? l3_config_load(b.o.config_file, &b.cfg, &err)
                                   : l3_config_parse(default_config, &b.cfg, &err);
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: config: %s\n", err.msg);
        return 2;
    }
    if (b.o.path)
        l3_config_set_path(&b.cfg, b.o.path, NULL);
    if (b.o.capacity)
        b.cfg.store.capacity = b.o.capacity;
    if (b.o.engine && !l3_engine_parse(b.o.engine, &b.cfg.store.engine)) {
        fprintf(stderr, "l3bench: --engine: expected auto, io_uring or libaio\n");
        return 2;
    }
    if (b.o.no_verify)
        b.cfg.store.no_verify_checksums = true;
    if (b.cfg.executor.max_keys_per_operation < b.o.keys)
        b.cfg.executor.max_keys_per_operation = b.o.keys;
    if (b.cfg.executor.max_operations < b.o.qd)
        b.cfg.executor.max_operations = b.o.qd;
    l3_slab_options so = l3_config_store_options(&b.cfg);
    st = l3_slabstore_open(&so, &b.store, &err);
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", err.msg);
        return 1;
    }
    l3_slab_stats stats;
    l3_slabstore_stats(b.store, &stats);
    if (!b.o.json)
        printf("store %s: %s, %llu objects %s in %.1f ms; engine %s, %u slabs of %llu MiB\n",
               so.path, stats.opened_from_checkpoint ? "reopened" : "opened",
               (unsigned long long)stats.objects,
               stats.opened_from_checkpoint ? "from its checkpoint" : "from its headers",
               stats.open_seconds * 1e3, stats.engine, stats.slabs_total,
               (unsigned long long)(stats.slab_size >> 20));
    /* The Host pool: one group of pages of the object size, page-aligned. */
    b.pool_pages = b.o.qd * b.o.keys;
    b.pool_len = b.pool_pages * b.o.size;
    if (posix_memalign((void **)&b.pool, 4096, b.pool_len) != 0) {
        fprintf(stderr, "l3bench: cannot allocate a %zu-byte Host pool\n", b.pool_len);
        return 1;
    }
    for (size_t i = 0; i < b.pool_len; i += 8) {
        uint64_t x = i * 0x9e3779b97f4a7c15ull;
        memcpy(b.pool + i, &x, b.pool_len - i < 8 ? b.pool_len - i : 8);
    }
    l3_host_layout layout = { 0 };
    layout.groups[0] = (l3_group_layout){ .packing = 1, .block_bytes = b.o.size, .shard_count = 1 };
    layout.num_groups = 1;
    layout.lcm_block_bytes = b.o.size;
    layout.num_lcm_blocks = b.pool_pages;
    l3_namespace ns = { .deployment_id = b.cfg.deployment_id, .has_draft = b.cfg.has_draft };
    st = l3_executor_start(l3_slabstore_store(b.store), (l3_host_buffer){ b.pool, b.pool_len }, &layout,
                           &ns, b.cfg.weight_version, &b.cfg.executor, l3_monotonic_clock(), &b.ex, &err);
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", err.msg);
        l3_slabstore_free(b.store);
        return 1;
    }
    /* Page identities: twice the count (a second namespace's pages too). */
    b.hashes = calloc(2 * b.o.count, sizeof *b.hashes);
    for (size_t i = 0; i < 2 * b.o.count; i++)
        snprintf(b.hashes[i], sizeof b.hashes[i], "page%06zu-%llu", i, (unsigned long long)b.o.size);
    json_t *phases = json_array();
    bool ok = true;
    phase warm = { .name = "warm check" }, put = { .name = "put" }, query = { .name = "exists" },
          get = { .name = "get" }, again = { .name = "put existing", .no_bytes = true }, other = { .name = "new namespace" };
    /* 1. What the previous run left (the cache survives restarts). */
    ok = ok && run_phase(&b, L3_OP_QUERY, b.o.count, 0, &warm);
    if (!b.o.json)
        printf("warm from the previous run: %zu of %zu pages\n", warm.hits, warm.keys);
    /* Start fresh so that the puts below write. */
    if (ok && !l3_executor_delete_namespace(b.ex)) {
        fprintf(stderr, "l3bench: clearing the namespace failed\n");
        ok = false;
    }
    ok = ok && run_phase(&b, L3_OP_PUT, b.o.count, 0, &put);
    ok = ok && run_phase(&b, L3_OP_QUERY, b.o.count, 0, &query);
    ok = ok && run_phase(&b, L3_OP_GET, b.o.count, 0, &get);
    ok = ok && run_phase(&b, L3_OP_PUT, b.o.count, 0, &again);
    /* A weight update: the new namespace starts cold. */
    l3_error nerr;
    if (ok && l3_executor_set_weight_version(b.ex, "v2-bench", &nerr) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", nerr.msg);
        ok = false;
    }
    ok = ok && run_phase(&b, L3_OP_QUERY, b.o.count, 0, &other);
    if (ok && !l3_executor_delete_namespace(b.ex))
        ok = false;
    if (ok && l3_executor_set_weight_version(b.ex, b.cfg.weight_version, &nerr) != L3_OK)
        ok = false;
    phase *all[] = { &warm, &put, &query, &get, &again, &other };
    if (!b.o.json)
        printf("%zu pages of %llu bytes, %zu keys per operation, %zu in flight:\n", b.o.count,
               (unsigned long long)b.o.size, b.o.keys, b.o.qd);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        print_phase(&b, all[i], phases);
    l3_snapshot snap;
    l3_executor_snapshot(b.ex, &snap);
    char *snap_json = l3_snapshot_to_json(&snap);
    double t0 = l3_monotonic_seconds();
    st = l3_executor_close(b.ex, 30.0, &err);
    double close_s = l3_monotonic_seconds() - t0;
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: close: %s\n", err.msg);
        ok = false;
    } else {
        l3_slabstore_stats(b.store, &stats);
        l3_executor_free(b.ex);
    }
    if (b.o.json) {
        json_t *root = json_object();
        json_object_set_new(root, "path", json_string(so.path));
        json_object_set_new(root, "object_size", json_integer((json_int_t)b.o.size));
        json_object_set_new(root, "count", json_integer((json_int_t)b.o.count));
        json_object_set_new(root, "phases", phases);
        json_object_set_new(root, "close_seconds", json_real(close_s));
        json_object_set_new(root, "executor", json_loads(snap_json, 0, NULL));
        char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
        puts(text);
        free(text);
        json_decref(root);
    } else {
        json_decref(phases);
        printf("closed in %.1f ms (checkpoint written); the store keeps the pages for the next run\n",
               close_s * 1e3);
        printf("hit rates: exists %.1f%%, get %.1f%%, after the namespace change %.1f%%\n",
               query.keys ? 100.0 * query.hits / query.keys : 0, get.keys ? 100.0 * get.hits / get.keys : 0,
               other.keys ? 100.0 * other.hits / other.keys : 0);
    }
    free(snap_json);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]->lat);
    free(b.hashes);
    free(b.pool);
    l3_config_free(&b.cfg);
    if (get.hits != get.keys || put.hits != put.keys) {
        fprintf(stderr, "l3bench: %zu of %zu puts and %zu of %zu gets succeeded\n", put.hits, put.keys,
                get.hits, get.keys);
        ok = false;
    }
    return ok ? 0 : 1;
}
