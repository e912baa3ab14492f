#include "workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "l3_clock.h"
#include "l3_pool.h"

double wl_cpu_seconds(double *user)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double u = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
    if (user)
        *user = u;
    return u + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

uint64_t wl_context_switches(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void wl_sort(double *v, size_t n) { qsort(v, n, sizeof *v, cmp_double); }

double wl_pct(const wl_phase *p, double q)
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

l3_status wl_start(workload *w, l3_config *cfg, size_t page, size_t keys, size_t qd, size_t count,
                   l3_error *err)
{
    memset(w, 0, sizeof *w);
    w->page = page;
    w->keys = keys;
    w->qd = qd;
    if (cfg->executor.max_keys_per_operation < keys)
        cfg->executor.max_keys_per_operation = keys;
    if (cfg->executor.max_operations < qd)
        cfg->executor.max_operations = qd;
    l3_slab_options so = l3_config_store_options(cfg);
    l3_status st = l3_slabstore_open(&so, &w->store, err);
    if (st != L3_OK)
        return st;
    l3_slabstore_stats(w->store, &w->open_stats);
    w->pool_len = qd * keys * page;
    w->pool = l3_pool_alloc(w->pool_len, err);
    if (!w->pool) {
        l3_slabstore_free(w->store);
        return L3_ENOMEM;
    }
    for (size_t i = 0; i < w->pool_len; i += 8) {
        uint64_t x = i * 0x9e3779b97f4a7c15ull;
        memcpy(w->pool + i, &x, w->pool_len - i < 8 ? w->pool_len - i : 8);
    }
    l3_host_layout layout = { 0 };
    layout.groups[0] = (l3_group_layout){ .packing = 1, .block_bytes = page, .shard_count = 1 };
    layout.num_groups = 1;
    layout.lcm_block_bytes = page;
    layout.num_lcm_blocks = qd * keys;
    l3_namespace ns = { .deployment_id = cfg->deployment_id, .has_draft = cfg->has_draft };
    st = l3_executor_start(l3_slabstore_store(w->store), (l3_host_buffer){ w->pool, w->pool_len },
                           &layout, &ns, cfg->weight_version, &cfg->executor, l3_monotonic_clock(),
                           &w->ex, err);
    if (st != L3_OK) {
        l3_slabstore_free(w->store);
        l3_pool_free(w->pool, w->pool_len);
        return st;
    }
    w->num_hashes = 2 * count;
    w->hashes = calloc(w->num_hashes, sizeof *w->hashes);
    for (size_t i = 0; i < w->num_hashes; i++)
        snprintf(w->hashes[i], sizeof w->hashes[i], "page%06zu-%zu", i, page);
    return L3_OK;
}

bool wl_run(workload *w, l3_op_kind kind, size_t count, uint64_t base, wl_phase *p)
{
    size_t k = w->keys, qd = w->qd, nops = (count + k - 1) / k;
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
    uint64_t x0 = wl_context_switches();
    double u0, t0 = l3_monotonic_seconds(), c0 = wl_cpu_seconds(&u0);
    bool ok = true;
    while (done < nops && ok) {
        for (size_t s = 0; s < qd && next < nops; s++) {
            slot *sl = &slots[s];
            if (sl->busy)
                continue;
            sl->first = next * k;
            sl->n = count - sl->first < k ? count - sl->first : k;
            for (size_t i = 0; i < sl->n; i++) {
                size_t page = sl->first + i + base;
                sl->keys[i] = (l3_storage_key){ .group = 0, .content_hash = w->hashes[page % w->num_hashes],
                                                .page_offset = 0 };
                /* Slot s owns pool pages [s*k, (s+1)*k): no sharing in flight. */
                sl->blocks[i] = (int32_t)(s * k + i + 1);
                if (kind == L3_OP_PUT)
                    stamp(w->pool + (size_t)(sl->blocks[i] - 1) * w->page, w->page, page);
            }
            sl->op_id = ++w->next_op;
            l3_operation op = { .kind = kind, .op_id = sl->op_id, .keys = sl->keys, .num_keys = sl->n,
                                .host_blocks = sl->blocks, .num_host_blocks = sl->n };
            l3_error err;
            if (l3_executor_submit(w->ex, &op, 1, &err) != L3_OK) {
                fprintf(stderr, "l3bench: submit: %s\n", err.msg);
                ok = false;
                break;
            }
            sl->busy = true;
            sl->started = l3_monotonic_seconds();
            next++;
        }
        l3_poll poll;
        if (l3_executor_poll(w->ex, &poll, NULL) != L3_OK)
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
                            p->bytes += w->page;
                        if (kind == L3_OP_GET &&
                            !stamped(w->pool + (size_t)(sl->blocks[i] - 1) * w->page, w->page,
                                     sl->first + i + base)) {
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
            l3_executor_wait(w->ex, 0.05); /* sleep until a completion, not spin */
    }
    p->seconds = l3_monotonic_seconds() - t0;
    double u1;
    p->cpu = wl_cpu_seconds(&u1) - c0;
    p->cpu_user = u1 - u0;
    p->ctx = wl_context_switches() - x0;
    wl_sort(p->lat, p->nlat);
    free(slots);
    return ok;
}

l3_status wl_stop(workload *w, l3_error *err)
{
    l3_status st = l3_executor_close(w->ex, 30.0, err);
    if (st == L3_OK)
        l3_executor_free(w->ex);
    free(w->hashes);
    if (st == L3_OK)
        l3_pool_free(w->pool, w->pool_len); /* else the pool must outlive unretired I/O */
    return st;
}
