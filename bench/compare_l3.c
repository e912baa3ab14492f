/* l3bench --compare's l3cache cells (compare_l3.h). */
#include "compare_l3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare_dev.h"
#include "compare_space.h"
#include "probe.h"


static const char *flush_mode = "interval"; /* store.flush of every store this run opens */

static const char *gets_mode = "driver", *puts_mode = "driver"; /* executor.gets and .puts of every executor */

void cmp_set_flush(const char *mode) { flush_mode = mode; }
void cmp_set_modes(const char *gets, const char *puts)
{
    gets_mode = gets;
    puts_mode = puts;
}

void cmp_config_text(char *out, size_t len, const char *paths, uint64_t capacity, size_t keys, size_t qd,
                     bool verify, uint64_t max_objects, uint32_t block)
{
    size_t workers = qd < 64 ? qd : 64;
    snprintf(out, len,
             "{\"store\": {\"paths\": [%s], \"capacity\": %llu, \"verify_checksums\": %s,"
             " \"max_objects\": %llu, \"block_size\": %u, \"slab_size\": \"64MiB\", \"flush\": \"%s\"},"
             " \"executor\": {\"max_operations\": %zu, \"max_keys_per_operation\": %zu,"
             " \"query_workers\": 2, \"read_workers\": %zu, \"write_workers\": %zu, \"gets\": \"%s\","
             " \"puts\": \"%s\"},"
             " \"namespace\": {\"deployment_id\": \"l3bench-compare\"}}",
             paths, (unsigned long long)capacity, verify ? "true" : "false",
             (unsigned long long)max_objects, block, flush_mode, qd, keys, workers, workers, gets_mode,
             puts_mode);
}

cmp_result cmp_of_phase(const wl_phase *p)
{
    return (cmp_result){ .ok = p->hits == p->keys && p->keys > 0,
                         .gbs = p->seconds > 0 ? (double)p->bytes / p->seconds / 1e9 : 0,
                         .p50_ms = wl_pct(p, 0.5) * 1e3, .p99_ms = wl_pct(p, 0.99) * 1e3,
                         .cpu_per_gb = p->bytes ? p->cpu / ((double)p->bytes / 1e9) : 0,
                         .ctx_per_gb = p->bytes ? (double)p->ctx / ((double)p->bytes / 1e9) : 0 };
}

void cmp_l3_close(cmp_l3 *l)
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

bool cmp_l3_put_round(cmp_l3 *l, uint64_t total, uint64_t size, size_t keys, size_t qd, cmp_result *put)
{
    cmp_l3_close(l);
    size_t n = (size_t)(total / size);
    /* Each file its share of the pages (the store stripes them evenly). */
    uint64_t capacity = cmp_space_l3_store(n, l->nfiles, size);
    char paths[L3_COMPARE_MAX_DIRS * 1010] = "";
    for (size_t i = 0; i < l->nfiles; i++) {
        if (!l3_probe_lay_out(l->file[i], capacity)) {
            fprintf(stderr, "l3bench: laying out %s: %s\n", l->file[i], strerror(errno));
            return false;
        }
        snprintf(paths + strlen(paths), sizeof paths - strlen(paths), "%s\"%s\"", i ? ", " : "", l->file[i]);
    }
    cmp_settle();
    char text[L3_COMPARE_MAX_DIRS * 1010 + 1024];
    cmp_config_text(text, sizeof text, paths, capacity, keys, qd, l->verify, 2 * n + 1024, 4096);
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
    *put = cmp_of_phase(&pp);
    free(pp.lat);
    return ok && put->ok;
}

bool cmp_l3_get_round(cmp_l3 *l, cmp_result *get)
{
    if (!l->open)
        return false;
    wl_phase gp = { .name = "get" };
    bool ok = wl_run(&l->w, L3_OP_GET, l->n, 0, &gp);
    *get = cmp_of_phase(&gp);
    free(gp.lat);
    return ok && get->ok;
}
