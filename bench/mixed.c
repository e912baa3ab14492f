/* The mixed phase (mixed.h). */
#include "mixed.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare_space.h"
#include "invariant.h"
#include "l3_clock.h"
#include "workload.h"


/* The put stream: new pages, chunk after chunk, until told to stop. */
typedef struct stream {
    workload *w;
    size_t first, pages, chunk; /* pages [first, first + pages) */
    atomic_bool stop;
    uint64_t bytes;
    double seconds;
    bool ok;
} stream;

static void *stream_main(void *arg)
{
    stream *st = arg;
    double t0 = l3_monotonic_seconds();
    st->ok = true;
    for (size_t base = 0; st->ok && !atomic_load(&st->stop) && base + st->chunk <= st->pages; base += st->chunk) {
        wl_phase p = { .name = "stream" };
        st->ok = wl_run(st->w, L3_OP_PUT, st->chunk, st->first + base, &p);
        st->bytes += p.bytes;
        free(p.lat);
    }
    st->seconds = l3_monotonic_seconds() - t0;
    return NULL;
}

/* Open one side: the same store file, its own namespace (weight version). */
static bool open_side(workload *w, l3_config *cfg, const char *text, const char *version, uint64_t page,
                      size_t keys, size_t qd, size_t count)
{
    l3_error err;
    if (l3_config_parse(text, cfg, &err) != L3_OK) {
        fprintf(stderr, "l3bench: mixed: %s\n", err.msg);
        return false;
    }
    free(cfg->weight_version);
    cfg->weight_version = strdup(version);
    if (wl_start(w, cfg, page, keys, qd, count, &err) != L3_OK) {
        fprintf(stderr, "l3bench: mixed: %s\n", err.msg);
        l3_config_free(cfg);
        return false;
    }
    return true;
}

static double median_of(double *v, size_t n)
{
    wl_sort(v, n);
    return n ? v[n / 2] : 0;
}

/* One get pass: GB/s and p99 (ms), false on a miss or wrong bytes. */
static bool get_pass(workload *w, size_t n, double *gbs, double *p99)
{
    wl_phase p = { .name = "get" };
    bool ok = wl_run(w, L3_OP_GET, n, 0, &p) && p.hits == p.keys;
    *gbs = p.seconds > 0 ? (double)p.bytes / p.seconds / 1e9 : 0;
    *p99 = wl_pct(&p, 0.99) * 1e3;
    free(p.lat);
    return ok;
}

/* The rounds, once both sides are open and the gets' pages are in. */
static bool run_rounds(workload *reader, workload *writer, size_t n, size_t stream_pages, size_t rounds,
                       l3_mixed_result *out)
{
    double ag[L3_MIXED_MAX_ROUNDS], ap[L3_MIXED_MAX_ROUNDS], mg[L3_MIXED_MAX_ROUNDS], mp[L3_MIXED_MAX_ROUNDS],
        pg[L3_MIXED_MAX_ROUNDS], rg[L3_MIXED_MAX_ROUNDS], rp[L3_MIXED_MAX_ROUNDS];
    L3_ASSERT(rounds >= 1 && rounds <= L3_MIXED_MAX_ROUNDS); /* the caller's constant */
    bool ok = true;
    size_t r = 0, per_round = stream_pages / rounds;
    for (; r < rounds && ok; r++) {
        ok = get_pass(reader, n, &ag[r], &ap[r]);
        stream st = { .w = writer, .first = r * per_round, .pages = per_round, .chunk = writer->keys * writer->qd };
        pthread_t t;
        ok = ok && pthread_create(&t, NULL, stream_main, &st) == 0;
        if (!ok)
            break;
        usleep(100 * 1000); /* the stream at full speed first */
        ok = get_pass(reader, n, &mg[r], &mp[r]);
        atomic_store(&st.stop, true);
        pthread_join(t, NULL);
        ok = ok && st.ok;
        pg[r] = st.seconds > 0 ? (double)st.bytes / st.seconds / 1e9 : 0;
        rg[r] = ag[r] > 0 ? mg[r] / ag[r] : 0;
        rp[r] = ap[r] > 0 ? mp[r] / ap[r] : 0;
    }
    out->rounds = r;
    out->alone_gbs = median_of(ag, r);
    out->alone_p99_ms = median_of(ap, r);
    out->mixed_gbs = median_of(mg, r);
    out->mixed_p99_ms = median_of(mp, r);
    out->put_gbs = median_of(pg, r);
    out->gbs_ratio = median_of(rg, r);
    out->p99_ratio = median_of(rp, r);
    return ok;
}

bool l3_mixed_run(const char *dir, uint64_t total, uint64_t page, size_t keys, size_t qd, size_t rounds,
                  l3_mixed_result *out)
{
    memset(out, 0, sizeof *out);
    out->page = page;
    size_t n = (size_t)(total / page), stream_pages = 4 * n * rounds;
    uint64_t capacity = cmp_space_mixed(total, page, rounds);
    char file[1100], text[2048];
    snprintf(file, sizeof file, "%s/l3bench-mixed.store", dir);
    unlink(file);
    size_t workers = qd < 64 ? qd : 64;
    snprintf(text, sizeof text,
             "{\"store\": {\"path\": \"%s\", \"capacity\": %llu, \"slab_size\": \"64MiB\","
             " \"expected_object_size\": %llu},"
             " \"executor\": {\"max_operations\": %zu, \"max_keys_per_operation\": %zu,"
             " \"read_workers\": %zu, \"write_workers\": %zu},"
             " \"namespace\": {\"deployment_id\": \"l3bench-mixed\"}}",
             file, (unsigned long long)capacity, (unsigned long long)page, qd, keys, workers, workers);
    workload reader, writer;
    l3_config rc, wc;
    if (!open_side(&reader, &rc, text, "reads", page, keys, qd, n))
        return false;
    bool writer_open = open_side(&writer, &wc, text, "stream", page, keys, qd, stream_pages), ok = writer_open;
    wl_phase fill = { .name = "fill" };
    ok = ok && wl_run(&reader, L3_OP_PUT, n, 0, &fill) && fill.hits == fill.keys;
    free(fill.lat);
    ok = ok && run_rounds(&reader, &writer, n, stream_pages, rounds, out);
    l3_error err;
    if (writer_open) {
        ok = wl_stop(&writer, &err) == L3_OK && ok;
        l3_config_free(&wc);
    }
    ok = wl_stop(&reader, &err) == L3_OK && ok;
    l3_config_free(&rc);
    unlink(file);
    out->ok = ok;
    return ok;
}
