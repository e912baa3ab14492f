/* l3bench: a prefix-cache workload through the executor on a real store.
 *
 * With no arguments it creates (or reopens) l3cache.store in the working
 * directory and runs: a warm check of the previous run's pages, puts of
 * pages, existence queries, gets (verified), re-puts and a namespace
 * change, and prints throughput, latency percentiles and hit rates.
 * --compare runs the comparison against fio and a file-per-key baseline
 * (compare.c). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "l3_clock.h"
#include "workload.h"

/* The embedded default: a 1 GiB store file in the working directory. */
static const char *const default_config =
    "{ \"store\": { \"path\": \"l3cache.store\", \"capacity\": \"1GiB\" },"
    "  \"executor\": { \"max_operations\": 64, \"max_keys_per_operation\": 64,"
    "                  \"read_workers\": 2, \"write_workers\": 2 },"
    "  \"namespace\": { \"deployment_id\": \"l3bench\", \"weight_version\": \"v1\" } }";

static void print_phase(const wl_phase *p, bool json, json_t *out)
{
    double gbs = p->seconds > 0 ? (double)p->bytes / p->seconds / 1e9 : 0;
    double kps = p->seconds > 0 ? (double)p->keys / p->seconds : 0;
    double hit = p->keys ? 100.0 * (double)p->hits / (double)p->keys : 0;
    if (json) {
        json_array_append_new(out, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                                             "phase", p->name, "operations", (json_int_t)p->ops, "keys",
                                             (json_int_t)p->keys, "hits", (json_int_t)p->hits,
                                             "misses", (json_int_t)p->misses, "failures",
                                             (json_int_t)p->failures, "seconds", p->seconds, "gb_per_s",
                                             gbs, "keys_per_s", kps, "p50_ms", wl_pct(p, 0.5) * 1e3,
                                             "p99_ms", wl_pct(p, 0.99) * 1e3, "p999_ms",
                                             wl_pct(p, 0.999) * 1e3, "cpu_s_per_gb",
                                             p->bytes ? p->cpu / ((double)p->bytes / 1e9) : 0));
        return;
    }
    printf("%-16s %6zu ops %8zu keys  %7.3f GB/s %10.0f keys/s  p50 %7.3f ms  p99 %7.3f ms  hit %5.1f%%",
           p->name, p->ops, p->keys, gbs, kps, wl_pct(p, 0.5) * 1e3, wl_pct(p, 0.99) * 1e3, hit);
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
            "       l3bench --compare [--dir DIR] [--total SIZE] [--sizes 64K,256K,1M,4M]\n"
            "               [--keys K] [--qd N] [--repeat N] [--recovery-objects N] [--plot FILE]\n"
            "               [--json]\n"
            "  default: l3cache.store (1 GiB) in the working directory, 1024 pages of 256 KiB,\n"
            "  16 keys per operation, 8 operations in flight\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *config_file = NULL, *path = NULL, *engine = NULL;
    uint64_t capacity = 0, size = 256 * 1024;
    size_t count = 1024, keys = 16, qd = 8;
    bool json = false, no_verify = false, compare = false;
    l3_compare_options co;
    l3_compare_defaults(&co);
    static const struct option longs[] = {
        { "config", required_argument, 0, 'c' }, { "path", required_argument, 0, 'p' },
        { "capacity", required_argument, 0, 'C' }, { "size", required_argument, 0, 's' },
        { "count", required_argument, 0, 'n' }, { "keys", required_argument, 0, 'k' },
        { "qd", required_argument, 0, 'q' }, { "engine", required_argument, 0, 'e' },
        { "no-verify", no_argument, 0, 'V' }, { "json", no_argument, 0, 'j' },
        { "compare", no_argument, 0, 'X' }, { "dir", required_argument, 0, 'D' },
        { "total", required_argument, 0, 'T' }, { "sizes", required_argument, 0, 'S' },
        { "recovery-objects", required_argument, 0, 'R' }, { "plot", required_argument, 0, 'P' },
        { "repeat", required_argument, 0, 'r' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
    };
    int c;
    l3_error err;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
        case 'c': config_file = optarg; break;
        case 'p': path = optarg; break;
        case 'C':
            if (l3_parse_size(optarg, &capacity, &err) != L3_OK) {
                fprintf(stderr, "l3bench: --capacity: %s\n", err.msg);
                return 2;
            }
            break;
        case 's':
            if (l3_parse_size(optarg, &size, &err) != L3_OK || size < 16) {
                fprintf(stderr, "l3bench: --size: expected a size of at least 16 bytes\n");
                return 2;
            }
            break;
        case 'n': count = strtoul(optarg, NULL, 10); break;
        case 'k': keys = co.keys = strtoul(optarg, NULL, 10); break;
        case 'q': qd = co.qd = strtoul(optarg, NULL, 10); break;
        case 'e': engine = optarg; break;
        case 'V': no_verify = true; break;
        case 'j': json = co.json = true; break;
        case 'X': compare = true; break;
        case 'D': co.dir = optarg; break;
        case 'T':
            if (l3_parse_size(optarg, &co.total, &err) != L3_OK) {
                fprintf(stderr, "l3bench: --total: %s\n", err.msg);
                return 2;
            }
            break;
        case 'S':
            if (!l3_compare_parse_sizes(optarg, &co)) {
                fprintf(stderr, "l3bench: --sizes: expected a list like 64K,256K,1M,4M\n");
                return 2;
            }
            break;
        case 'R': co.recovery_objects = strtoul(optarg, NULL, 10); break;
        case 'P': co.plot = optarg[0] ? optarg : NULL; break;
        case 'r': co.repeat = strtoul(optarg, NULL, 10); break;
        default: return usage();
        }
    }
    if (optind != argc || count == 0 || keys == 0 || keys > 256 || qd == 0 || qd > 1024)
        return usage();
    if (compare)
        return l3_compare_run(&co);
    l3_config cfg;
    l3_status st = config_file ? l3_config_load(config_file, &cfg, &err) : l3_config_parse(default_config, &cfg, &err);
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: config: %s\n", err.msg);
        return 2;
    }
    if (path)
        l3_config_set_path(&cfg, path, NULL);
    if (capacity)
        cfg.store.capacity = capacity;
    if (engine && !l3_engine_parse(engine, &cfg.store.engine)) {
        fprintf(stderr, "l3bench: --engine: expected auto, io_uring or libaio\n");
        return 2;
    }
    if (no_verify)
        cfg.store.no_verify_checksums = true;
    workload w;
    if ((st = wl_start(&w, &cfg, size, keys, qd, count, &err)) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", err.msg);
        l3_config_free(&cfg);
        return 1;
    }
    l3_slab_stats *os = &w.open_stats;
    if (!json)
        printf("store %s: %s, %llu objects %s in %.1f ms; engine %s, %u slabs of %llu MiB\n",
               cfg.store.path, os->opened_from_checkpoint ? "reopened" : "opened",
               (unsigned long long)os->objects,
               os->opened_from_checkpoint ? "from its checkpoint" : "from its headers",
               os->open_seconds * 1e3, os->engine, os->slabs_total,
               (unsigned long long)(os->slab_size >> 20));
    json_t *phases = json_array();
    bool ok = true;
    wl_phase warm = { .name = "warm check" }, put = { .name = "put" }, query = { .name = "exists" },
             get = { .name = "get" }, again = { .name = "put existing", .no_bytes = true },
             other = { .name = "new namespace" };
    /* 1. What the previous run left (the cache survives restarts). */
    ok = ok && wl_run(&w, L3_OP_QUERY, count, 0, &warm);
    if (!json)
        printf("warm from the previous run: %zu of %zu pages\n", warm.hits, warm.keys);
    /* Start fresh so that the puts below write. */
    if (ok && !l3_executor_delete_namespace(w.ex)) {
        fprintf(stderr, "l3bench: clearing the namespace failed\n");
        ok = false;
    }
    ok = ok && wl_run(&w, L3_OP_PUT, count, 0, &put);
    ok = ok && wl_run(&w, L3_OP_QUERY, count, 0, &query);
    ok = ok && wl_run(&w, L3_OP_GET, count, 0, &get);
    ok = ok && wl_run(&w, L3_OP_PUT, count, 0, &again);
    /* A weight update: the new namespace starts cold. */
    l3_error nerr;
    if (ok && l3_executor_set_weight_version(w.ex, "v2-bench", &nerr) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", nerr.msg);
        ok = false;
    }
    ok = ok && wl_run(&w, L3_OP_QUERY, count, 0, &other);
    if (ok && !l3_executor_delete_namespace(w.ex))
        ok = false;
    if (ok && l3_executor_set_weight_version(w.ex, cfg.weight_version, &nerr) != L3_OK)
        ok = false;
    wl_phase *all[] = { &warm, &put, &query, &get, &again, &other };
    if (!json)
        printf("%zu pages of %llu bytes, %zu keys per operation, %zu in flight:\n", count,
               (unsigned long long)size, keys, qd);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        print_phase(all[i], json, phases);
    char *snap_json = l3_executor_snapshot_json(w.ex);
    double t0 = l3_monotonic_seconds();
    st = wl_stop(&w, &err);
    double close_s = l3_monotonic_seconds() - t0;
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: close: %s\n", err.msg);
        ok = false;
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "path", json_string(cfg.store.path));
        json_object_set_new(root, "object_size", json_integer((json_int_t)size));
        json_object_set_new(root, "count", json_integer((json_int_t)count));
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
    l3_config_free(&cfg);
    if (get.hits != get.keys || put.hits != put.keys) {
        fprintf(stderr, "l3bench: %zu of %zu puts and %zu of %zu gets succeeded\n", put.hits, put.keys,
                get.hits, get.keys);
        ok = false;
    }
    return ok ? 0 : 1;
}
