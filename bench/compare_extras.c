/* l3bench --compare's measurements beside the rows (compare_extras.h). */
#include "compare_extras.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compare_space.h"
#include "l3_clock.h"
#include "l3_crc32c.h"
#include "probe.h"

#define MIB (1ull << 20)

void cmp_exists_run(cmp_l3 *l, cmp_exists *ex)
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

/* l3fsck's rates on the recovery store (closed cleanly). */
static void fsck_rates(const char *file, cmp_recovery *r)
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

bool cmp_recovery_run(const char *file, size_t n, cmp_recovery *r)
{
    unlink(file);
    r->objects = n;
    uint64_t capacity = cmp_space_recovery(n);
    char text[2048];
    char quoted[1100];
    snprintf(quoted, sizeof quoted, "\"%s\"", file);
    cmp_config_text(text, sizeof text, quoted, capacity, 256, 1, true, n, 4096);
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

bool cmp_steady_run(const char *file, size_t keys, size_t qd, cmp_steady *r)
{
    unlink(file);
    char text[2048];
    char quoted[1100];
    snprintf(quoted, sizeof quoted, "\"%s\"", file);
    cmp_config_text(text, sizeof text, quoted, CMP_SPACE_STEADY, keys, qd, true, 0, 4096);
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
    r->gbs = cmp_of_phase(&ph[2]).gbs;
    r->fill_gbs = cmp_of_phase(&ph[0]).gbs;
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

double cmp_crc_cost(void)
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
