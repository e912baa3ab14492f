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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "l3_slabstore.h"
#include "trace.h"
#include "l3_clock.h"
#include "scale.h"
#include "workload.h"

/* The embedded default: a 1 GiB store file in the working directory. */
static const char *const default_config =
    "{ \"store\": { \"path\": \"l3cache.store\", \"capacity\": \"1GiB\","
    "               \"expected_object_size\": \"256KiB\" },"
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
    if (p->bytes)
        printf("  cpu %.3f s/GB (user %.3f)", p->cpu / ((double)p->bytes / 1e9),
               p->cpu_user / ((double)p->bytes / 1e9));
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
            "       l3bench --compare [--dir DIR [--dir DIR...]] [--total SIZE] [--sizes 64K,256K,1M,4M]\n"
            "               [--keys K] [--qd N] [--repeat N] [--recovery-objects N] [--plot FILE]\n"
            "               [--flush interval|batch] [--gets driver|workers] [--puts driver|workers]\n"
            "               [--ram-device SIZE] [--json]\n"
            "               (--ram-device, as root:\n"
            "               on ext4 over a loop device over a file of SIZE in a tmpfs, made for the run and\n"
            "               taken down after it)\n"
            "       l3bench --scale N[,N...] [--dir DIR] [--keep] [--json]   (a test tool: RAM and restart\n"
            "               times of a sparse store of N small objects)\n"
            "       l3bench --trace FILE.jsonl [--capacity 1000,5859|1GiB] [--block-bytes 64K]\n"
            "               [--slab-size SIZE] [--eviction fifo-reinsert|lru-slab|both]\n"
            "               [--admit all|no-tail|second-sight|adaptive|rung:N] [--ranks R] [--pools] [--dir DIR]\n"
            "               [--budget DWPD|SHAREx[,...]] [--targets R[,R...]] [--target-g G[,G...]] [--json]\n"
            "               (--ranks: R processes of one TP group on one store, in lockstep; --pools: a KV, a\n"
            "               sidecar and a TRAILING state per page and rank; --budget: rows under a write budget\n"
            "               on the trace's clock, 0.5x = half the LRU's rate; --targets: per capacity the least\n"
            "               hit rate over the LRU's, writes at most its own, said met or missed; --target-g: per\n"
            "               capacity the least G = (hits - LRU) / (MIN - LRU), - for none, the ratio alone where\n"
            "               MIN = LRU; --admit: the store's adaptive admission unless told, as the store's own\n"
            "               default)\n"
            "       l3bench --trace FILE.jsonl --sim|--sim-all [--capacity ...] [--ranks R] [--pools]\n"
            "               [--budget DWPD|SHAREx[,...]] [--targets ...] [--target-g ...] [--plot PNG] [--json]\n"
            "               (the simulators alone; targets judge the adaptive admission's simulator)\n"
            "       l3bench --trace FILE.jsonl --capacities [--json]   (the trace's four capacities by\n"
            "               bench/traces/README.md's rule, by bisection; then --sim at them, rounded)\n"
            "  default: l3cache.store (1 GiB) in the working directory, 1024 pages of 256 KiB,\n"
            "  16 keys per operation, 8 operations in flight\n");
    return 2;
}

/* The command line. */
typedef struct args {
    const char *config_file, *path, *engine;
    uint64_t capacity, size;
    size_t count, keys, qd;
    bool json, no_verify, compare;
    const char *capacity_text;
    l3_compare_options co;
    l3_trace_options tr;
    l3_scale_options sc;
} args;

/* A size option's value; false (said on stderr) when it is not one. */
static bool size_arg(const char *name, const char *text, uint64_t min, uint64_t *out)
{
    l3_error err;
    if (l3_parse_size(text, out, &err) != L3_OK || *out < min) {
        fprintf(stderr, "l3bench: --%s: %s\n", name, *out < min ? "too small" : err.msg);
        return false;
    }
    return true;
}

/* A comma-separated list of 1 to `max` positive numbers (with `shares`,
 * each may end in "x"), into `out` when not NULL; how many, 0 if it is
 * not one. */
static size_t number_list(const char *v, bool shares, size_t max, double *out)
{
    size_t m = 0;
    for (const char *p = v; *p; m++) {
        char *end;
        double d = strtod(p, &end);
        if (shares && end != p && *end == 'x')
            end++;
        if (end == p || !(d > 0) || (*end != ',' && *end != '\0') || m >= max)
            return 0;
        if (out)
            out[m] = d;
        p = *end ? end + 1 : end;
    }
    return m;
}

/* --budget: 1 to L3_TRACE_MAX_BUDGETS drive writes per day, or shares of
 * the object LRU's own rate ("0.5x"), comma-separated; false (said on
 * stderr) otherwise. */
static bool budget_arg(args *a, const char *v)
{
    if (strlen(v) >= sizeof a->tr.budget || !number_list(v, true, L3_TRACE_MAX_BUDGETS, NULL)) {
        fprintf(stderr, "l3bench: --budget: expected 1 to %d drive writes per day (0.5,1,3) or shares of the "
                        "LRU's rate (1x,0.5x)\n",
                L3_TRACE_MAX_BUDGETS);
        return false;
    }
    snprintf(a->tr.budget, sizeof a->tr.budget, "%s", v);
    return true;
}

/* A list of 1 to `max` per-capacity targets, comma-separated: a number
 * (with `positive`, above 0), or "-" for none at that capacity (`none` in
 * `out`); how many, 0 if it is not one. */
static size_t target_list(const char *v, bool positive, double none, size_t max, double *out)
{
    size_t m = 0;
    for (const char *p = v; *p; m++) {
        double d = none;
        const char *next = p + 1;
        if (*p != '-' || (p[1] != ',' && p[1] != '\0')) {
            char *end;
            d = strtod(p, &end);
            if (end == p || !isfinite(d) || (positive && !(d > 0)))
                return 0;
            next = end;
        }
        if ((*next != ',' && *next != '\0') || m >= max)
            return 0;
        out[m] = d;
        p = *next ? next + 1 : next;
    }
    return m;
}

/* --targets: per capacity, in its order, the least hit rate over the
 * object LRU's ("-": none there); false (said on stderr) unless 1 to
 * L3_TRACE_MAX_CAPACITIES positive ratios. */
static bool targets_arg(args *a, const char *v)
{
    a->tr.num_targets = target_list(v, true, 0, L3_TRACE_MAX_CAPACITIES, a->tr.targets);
    if (!a->tr.num_targets)
        fprintf(stderr, "l3bench: --targets: expected 1 to %d ratios over the LRU's hits, one per capacity "
                        "(1.0,1.1,1.1,1.0; - for none)\n", L3_TRACE_MAX_CAPACITIES);
    return a->tr.num_targets > 0;
}

/* --target-g: per capacity, in its order, the least G = (hits - LRU) /
 * (MIN - LRU) ("-": none there); false (said on stderr) unless 1 to
 * L3_TRACE_MAX_CAPACITIES numbers. */
static bool target_g_arg(args *a, const char *v)
{
    a->tr.num_targets_g = target_list(v, false, NAN, L3_TRACE_MAX_CAPACITIES, a->tr.targets_g);
    if (!a->tr.num_targets_g)
        fprintf(stderr, "l3bench: --target-g: expected 1 to %d shares of the LRU-to-MIN gap, one per capacity "
                        "(-,0.20,0.16,-; - for none)\n", L3_TRACE_MAX_CAPACITIES);
    return a->tr.num_targets_g > 0;
}

/* --repeat: 1 to L3_COMPARE_MAX_ROUNDS; false (said on stderr) otherwise. */
static bool repeat_arg(args *a, const char *v)
{
    char *end;
    unsigned long r = strtoul(v, &end, 10);
    if (end == v || *end || r < 1 || r > L3_COMPARE_MAX_ROUNDS) {
        fprintf(stderr, "l3bench: --repeat: expected 1 to %d rounds\n", L3_COMPARE_MAX_ROUNDS);
        return false;
    }
    a->co.repeat = r;
    return true;
}

/* The --trace options; false on a usage error. */
static bool parse_trace_arg(args *a, int c, const char *v)
{
    switch (c) {
    case 't': a->tr.trace = v; return true;
    case 'b': return size_arg("block-bytes", v, 1, &a->tr.block_bytes);
    case 'z': return size_arg("slab-size", v, 1u << 20, &a->tr.slab_size);
    case 'E':
        a->tr.eviction = strcmp(v, "both") == 0 ? -1 : strcmp(v, "lru-slab") == 0 ? 1 : strcmp(v, "fifo-reinsert") == 0 ? 0 : -2;
        if (a->tr.eviction == -2)
            fprintf(stderr, "l3bench: --eviction: expected fifo-reinsert, lru-slab or both\n");
        return a->tr.eviction != -2;
    case 'M': a->tr.sim = true; return true;
    case 'a': a->tr.sim = a->tr.sim_all = true; return true;
    case 'O': a->tr.pools = true; return true;
    case 'N':
        a->tr.ranks = (uint32_t)strtoul(v, NULL, 10);
        if (a->tr.ranks < 1 || a->tr.ranks > 64)
            fprintf(stderr, "l3bench: --ranks: expected 1 to 64\n");
        return a->tr.ranks >= 1 && a->tr.ranks <= 64;
    case 'B': return budget_arg(a, v);
    case 'G': return targets_arg(a, v);
    case 'g': return target_g_arg(a, v);
    case 'Q': a->tr.capacities = a->tr.sim = true; return true;
    case 'A':
        a->tr.admit = strcmp(v, "all") == 0 ? L3_ADMIT_ALL : strcmp(v, "no-tail") == 0 ? L3_ADMIT_NO_TAIL
                    : strcmp(v, "second-sight") == 0 ? L3_ADMIT_SECOND_SIGHT : -1;
        a->tr.store_admission = L3_ADMISSION_ALL; /* an engine's rule: the store writes what it is given */
        if (strcmp(v, "adaptive") == 0) {
            a->tr.admit = L3_ADMIT_ALL; /* the engine offers every absent block; the store decides */
            a->tr.store_admission = L3_ADMISSION_ADAPTIVE;
        } else if (strncmp(v, "rung:", 5) == 0 && v[5] >= '0' && v[5] <= '6' && !v[6]) {
            a->tr.admit = L3_ADMIT_ALL;
            a->tr.store_admission = L3_ADMISSION_RUNG;
            a->tr.store_rung = (uint32_t)(v[5] - '0');
        }
        if (a->tr.admit < 0)
            fprintf(stderr, "l3bench: --admit: expected all, no-tail, second-sight (the engine's rules), "
                            "adaptive or rung:0 to rung:6 (the store's)\n");
        return a->tr.admit >= 0;
    default: return false;
    }
}

/* Parse the command line; false on a usage error. */
static bool parse_args(args *a, int argc, char **argv)
{
    static const struct option longs[] = {
        { "config", required_argument, 0, 'c' }, { "path", required_argument, 0, 'p' },
        { "capacity", required_argument, 0, 'C' }, { "size", required_argument, 0, 's' },
        { "count", required_argument, 0, 'n' }, { "keys", required_argument, 0, 'k' },
        { "qd", required_argument, 0, 'q' }, { "engine", required_argument, 0, 'e' },
        { "no-verify", no_argument, 0, 'V' }, { "json", no_argument, 0, 'j' },
        { "compare", no_argument, 0, 'X' }, { "dir", required_argument, 0, 'D' },
        { "total", required_argument, 0, 'T' }, { "sizes", required_argument, 0, 'S' },
        { "recovery-objects", required_argument, 0, 'R' }, { "plot", required_argument, 0, 'P' },
        { "flush", required_argument, 0, 'F' }, { "ram-device", required_argument, 0, 'Y' },
        { "repeat", required_argument, 0, 'r' }, { "trace", required_argument, 0, 't' },
        { "block-bytes", required_argument, 0, 'b' }, { "slab-size", required_argument, 0, 'z' },
        { "eviction", required_argument, 0, 'E' }, { "admit", required_argument, 0, 'A' },
        { "scale", required_argument, 0, 'L' }, { "keep", no_argument, 0, 'K' }, { "help", no_argument, 0, 'h' },
        { "sim", no_argument, 0, 'M' }, { "sim-all", no_argument, 0, 'a' }, { "ranks", required_argument, 0, 'N' },
        { "pools", no_argument, 0, 'O' }, { "budget", required_argument, 0, 'B' },
        { "targets", required_argument, 0, 'G' }, { "target-g", required_argument, 0, 'g' },
        { "capacities", no_argument, 0, 'Q' }, { "gets", required_argument, 0, 'H' },
        { "puts", required_argument, 0, 'I' }, { 0, 0, 0, 0 },
    };
    bool ok = true;
    for (int c; ok && (c = getopt_long(argc, argv, "h", longs, NULL)) != -1;) {
        switch (c) {
        case 'c': a->config_file = optarg; break;
        case 'p': a->path = optarg; break;
        case 'C': a->capacity_text = optarg; break;
        case 's': ok = size_arg("size", optarg, 16, &a->size); break;
        case 'n': a->count = strtoul(optarg, NULL, 10); break;
        case 'k': a->keys = a->co.keys = strtoul(optarg, NULL, 10); break;
        case 'q': a->qd = a->co.qd = strtoul(optarg, NULL, 10); break;
        case 'e': a->engine = optarg; break;
        case 'V': a->no_verify = true; break;
        case 'j': a->json = a->co.json = a->tr.json = a->sc.json = true; break;
        case 'X': a->compare = true; break;
        case 'D':
            if (a->co.num_dirs == L3_COMPARE_MAX_DIRS) {
                fprintf(stderr, "l3bench: at most %d --dir\n", L3_COMPARE_MAX_DIRS);
                ok = false;
                break;
            }
            a->co.dirs[a->co.num_dirs++] = optarg;
            a->co.dir = a->tr.dir = a->sc.dir = a->co.dirs[0];
            break;
        case 'K': a->sc.keep = true; break;
        case 'L':
            ok = l3_scale_parse_counts(optarg, &a->sc);
            if (!ok)
                fprintf(stderr, "l3bench: --scale: expected a list of object counts like 1000000,3000000\n");
            break;
        case 'T': ok = size_arg("total", optarg, 1, &a->co.total); break;
        case 'S':
            ok = l3_compare_parse_sizes(optarg, &a->co);
            if (!ok)
                fprintf(stderr, "l3bench: --sizes: expected a list like 64K,256K,1M,4M\n");
            break;
        case 'R': a->co.recovery_objects = strtoul(optarg, NULL, 10); break;
        case 'F': a->co.flush = optarg; break;
        case 'H': a->co.gets = optarg; ok = ok && (!strcmp(optarg, "driver") || !strcmp(optarg, "workers")); break;
        case 'I': a->co.puts = optarg; ok = ok && (!strcmp(optarg, "driver") || !strcmp(optarg, "workers")); break;
        case 'Y': ok = size_arg("ram-device", optarg, 1ull << 30, &a->co.ram_device); break;
        case 'P': a->co.plot = a->tr.plot = optarg[0] ? optarg : NULL; break;
        case 'r': ok = repeat_arg(a, optarg); break;
        default: ok = parse_trace_arg(a, c, optarg);
        }
    }
    if (ok && a->co.ram_device && a->co.num_dirs) {
        fprintf(stderr, "l3bench: --ram-device makes the run's directory itself: no --dir with it\n");
        ok = false;
    }
    if (ok && a->capacity_text && a->tr.trace && strlen(a->capacity_text) >= sizeof a->tr.capacity) {
        fprintf(stderr, "l3bench: --capacity: a list of at most %zu characters\n", sizeof a->tr.capacity - 1);
        ok = false;
    } else if (ok && a->capacity_text && a->tr.trace)
        snprintf(a->tr.capacity, sizeof a->tr.capacity, "%s", a->capacity_text);
    else if (ok && a->capacity_text)
        ok = size_arg("capacity", a->capacity_text, 0, &a->capacity);
    return ok && optind == argc && a->count && a->keys && a->keys <= 256 && a->qd && a->qd <= 1024;
}

/* The config: a file, or the embedded default; then the options over it. */
static bool load_config(const args *a, l3_config *cfg)
{
    l3_error err;
    l3_status st = a->config_file ? l3_config_load(a->config_file, cfg, &err)
                                  : l3_config_parse(default_config, cfg, &err);
    if (st != L3_OK) {
        fprintf(stderr, "l3bench: config: %s\n", err.msg);
        return false;
    }
    if (a->path)
        l3_config_set_path(cfg, a->path, NULL);
    if (a->capacity)
        cfg->store.capacity = a->capacity;
    if (a->engine && !l3_engine_parse(a->engine, &cfg->store.engine)) {
        fprintf(stderr, "l3bench: --engine: expected auto, io_uring or libaio\n");
        l3_config_free(cfg);
        return false;
    }
    if (a->no_verify)
        cfg->store.no_verify_checksums = true;
    return true;
}

enum { WARM, PUT, QUERY, GET, AGAIN, OTHER, NPHASES };

/* The job: what the previous run left, puts, existence queries, gets,
 * re-puts, and a weight update whose new namespace starts cold. */
static bool run_job(workload *w, const args *a, const char *weight_version, wl_phase *ph)
{
    size_t n = a->count;
    bool ok = wl_run(w, L3_OP_QUERY, n, 0, &ph[WARM]); /* the cache survives restarts */
    if (!a->json)
        printf("warm from the previous run: %zu of %zu pages\n", ph[WARM].hits, ph[WARM].keys);
    /* Start fresh so that the puts below write. */
    if (ok && !l3_executor_delete_namespace(w->ex)) {
        fprintf(stderr, "l3bench: clearing the namespace failed\n");
        ok = false;
    }
    ok = ok && wl_run(w, L3_OP_PUT, n, 0, &ph[PUT]);
    ok = ok && wl_run(w, L3_OP_QUERY, n, 0, &ph[QUERY]);
    ok = ok && wl_run(w, L3_OP_GET, n, 0, &ph[GET]);
    ok = ok && wl_run(w, L3_OP_PUT, n, 0, &ph[AGAIN]);
    l3_error nerr;
    if (ok && l3_executor_set_weight_version(w->ex, "v2-bench", &nerr) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", nerr.msg);
        ok = false;
    }
    ok = ok && wl_run(w, L3_OP_QUERY, n, 0, &ph[OTHER]);
    ok = ok && l3_executor_delete_namespace(w->ex);
    return ok && l3_executor_set_weight_version(w->ex, weight_version, &nerr) == L3_OK;
}

static void print_json_report(const args *a, const char *path, json_t *phases, double close_s,
                              const char *snap_json)
{
    json_t *root = json_object();
    json_object_set_new(root, "path", json_string(path));
    json_object_set_new(root, "object_size", json_integer((json_int_t)a->size));
    json_object_set_new(root, "count", json_integer((json_int_t)a->count));
    json_object_set_new(root, "phases", phases);
    json_object_set_new(root, "close_seconds", json_real(close_s));
    json_object_set_new(root, "executor", json_loads(snap_json, 0, NULL));
    char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
    puts(text);
    free(text);
    json_decref(root);
}

static double pct(size_t part, size_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0; }

/* Run the main job on an open workload, report it, and close. */
static bool job_and_report(const args *a, l3_config *cfg, workload *w)
{
    wl_phase ph[NPHASES] = { { .name = "warm check" }, { .name = "put" }, { .name = "exists" },
                             { .name = "get" }, { .name = "put existing", .no_bytes = true },
                             { .name = "new namespace" } };
    bool ok = run_job(w, a, cfg->weight_version, ph);
    json_t *phases = json_array();
    if (!a->json)
        printf("%zu pages of %llu bytes, %zu keys per operation, %zu in flight:\n", a->count,
               (unsigned long long)a->size, a->keys, a->qd);
    for (size_t i = 0; i < NPHASES; i++)
        print_phase(&ph[i], a->json, phases);
    char *snap_json = l3_executor_snapshot_json(w->ex);
    double t0 = l3_monotonic_seconds();
    l3_error err;
    if (wl_stop(w, &err) != L3_OK) {
        fprintf(stderr, "l3bench: close: %s\n", err.msg);
        ok = false;
    }
    double close_s = l3_monotonic_seconds() - t0;
    if (a->json) {
        print_json_report(a, cfg->store.path, phases, close_s, snap_json);
    } else {
        json_decref(phases);
        printf("closed in %.1f ms (checkpoint written); the store keeps the pages for the next run\n", close_s * 1e3);
        printf("hit rates: exists %.1f%%, get %.1f%%, after the namespace change %.1f%%\n",
               pct(ph[QUERY].hits, ph[QUERY].keys), pct(ph[GET].hits, ph[GET].keys), pct(ph[OTHER].hits, ph[OTHER].keys));
    }
    free(snap_json);
    for (size_t i = 0; i < NPHASES; i++)
        free(ph[i].lat);
    if (ph[GET].hits != ph[GET].keys || ph[PUT].hits != ph[PUT].keys) {
        fprintf(stderr, "l3bench: %zu of %zu puts and %zu of %zu gets succeeded\n", ph[PUT].hits,
                ph[PUT].keys, ph[GET].hits, ph[GET].keys);
        ok = false;
    }
    return ok;
}

int main(int argc, char **argv)
{
    args a = { .size = 256 * 1024ull, .count = 1024, .keys = 16, .qd = 8,
               .tr = { .dir = ".", .block_bytes = 64 * 1024ull, .capacity = "1000,5859,10000,50000",
                       .plot = "l3bench-trace.png", .store_admission = L3_ADMISSION_ADAPTIVE } };
    l3_compare_defaults(&a.co);
    if (!parse_args(&a, argc, argv))
        return usage();
    if (a.compare)
        return l3_compare_run(&a.co);
    if (a.tr.trace)
        return l3_trace_run(&a.tr);
    if (a.sc.num_counts)
        return l3_scale_run(&a.sc);
    l3_config cfg;
    if (!load_config(&a, &cfg))
        return 2;
    workload w;
    l3_error err;
    if (wl_start(&w, &cfg, a.size, a.keys, a.qd, a.count, &err) != L3_OK) {
        fprintf(stderr, "l3bench: %s\n", err.msg);
        l3_config_free(&cfg);
        return 1;
    }
    const l3_slab_stats *os = &w.open_stats;
    if (!a.json)
        printf("store %s: %s, %llu objects %s in %.1f ms; engine %s, %u slabs of %llu MiB\n", cfg.store.path,
               os->opened_from_checkpoint ? "reopened" : "opened", (unsigned long long)os->objects,
               os->opened_from_checkpoint ? "from its checkpoint" : "from its headers", os->open_seconds * 1e3,
               os->engine, os->slabs_total, (unsigned long long)(os->slab_size >> 20));
    bool ok = job_and_report(&a, &cfg, &w);
    l3_config_free(&cfg);
    return ok ? 0 : 1;
}
