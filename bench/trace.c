/* l3bench --trace (trace.h): the replay through the real store. */
#include "trace.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format.h"
#include "l3_clock.h"
#include "l3_config.h"
#include "l3_pool.h"
#include "l3_slabstore.h"
#include "admitsim.h"
#include "simtable.h"
#include "tracesim.h"

/* One replay's outcome. */
typedef struct replay {
    uint64_t hits, accesses, admitted, declined, failed_puts, bad_bytes;
    uint64_t declined_room; /* declined in batches of more than half the store: no room, not a fault */
    uint64_t dev_bytes, reinserted, slab_size;
    uint32_t slabs;
    double seconds;
} replay;

/* The store for `objects` slots of `block` bytes: its options, with the
 * capacity that gives that many slots. */
static bool store_options(const l3_trace_options *o, uint64_t objects, const char *path, l3_slab_options *so)
{
    l3_slab_options_default(so, path);
    uint64_t slot = l3_round_up(L3_OBJ_HEADER_FIXED + L3_OBJECT_KEY_MAX, 4096) + l3_round_up(o->block_bytes, 4096);
    uint64_t slab = o->slab_size ? o->slab_size : l3_default_slab_size(objects * slot, o->block_bytes);
    uint64_t per_slab = slab / slot, slabs = per_slab ? (objects + per_slab / 2) / per_slab : 0;
    if (slabs < L3_MIN_SLABS)
        slabs = L3_MIN_SLABS;
    l3_geometry g;
    char why[256];
    so->max_objects = 2 * objects + 1024; /* the slots bound the store, not the index */
    if (!l3_geometry_plan(slabs * slab + (64u << 20), slab, 4096, so->max_objects, 0, &g, why, sizeof why)) {
        fprintf(stderr, "l3bench: --trace: %s\n", why);
        return false;
    }
    so->capacity = g.data_off + slabs * slab;
    so->slab_size = slab;
    so->format = true;
    so->admission = (l3_admission)o->store_admission;
    so->admission_rung = o->store_rung;
    return true;
}

/* The request's keys ("tr_<id>", or "tr_<id>_r<rank>" for a rank's
 * shard) into `keys`. */
static void request_keys(const uint32_t *ids, size_t n, int rank, char (*buf)[24], const char **keys)
{
    for (size_t i = 0; i < n; i++) {
        if (rank < 0)
            snprintf(buf[i], sizeof buf[i], "tr_%u", ids[i]);
        else
            snprintf(buf[i], sizeof buf[i], "tr_%u_r%d", ids[i], rank);
        keys[i] = buf[i];
    }
}

/* Stamp block `id` into its Host range (its first 8 bytes: the id). */
static void stamp(uint8_t *p, uint32_t id)
{
    uint64_t v = 0x9e3779b97f4a7c15ull * (id + 1);
    memcpy(p, &v, sizeof v);
}

/* --pools: a hybrid model's objects per block and rank, as SGLang's
 * HiCache stores them: the KV ("tr_<id>_r<rank>"), a sidecar of the same
 * page ("..._x", a DSA indexer's, say) and, for a request's last full page
 * only, its state ("..._s", a Mamba/SWA state: TRAILING). In io's key and
 * flag arrays the KV keys come first, then the sidecars, then the states. */
enum { POOL_KV, POOL_SIDECAR, POOL_STATE, NUM_POOLS };

/* Scratch for one request. */
typedef struct req_io {
    char (*kbuf)[24];
    const char **keys;
    bool *flags, *ok, *fail;
    l3_range *ranges;
    uint8_t *pool;
    size_t pool_len;
    int admit;
    bool *seen;         /* per id: in an earlier request (second-sight admission) */
    uint64_t *groups;   /* per key of a put: its page's group (ranks), or NULL */
    uint32_t group_objects;
    bool pools;         /* --pools: a KV, a sidecar and a state key per block */
    size_t cap;         /* keys the arrays hold: the longest request's blocks, x NUM_POOLS with pools */
    uint64_t slots;     /* the store's slots (0: not known) */
    const char **batch; /* with pools: a get's or put's keys, gathered */
    uint32_t *batch_obj; /* their objects: block id x NUM_POOLS + pool */
    uint64_t now_ns;    /* the trace's clock at the request replayed (the write budget's) */
} req_io;

/* The store's write-budget clock during a replay: the trace's time. */
static double trace_clock(void *arg) { return (double)((const req_io *)arg)->now_ns * 1e-9; }

/* Request q's time on that clock: from one second, as the trace's
 * milliseconds since its first request (a clock of 0 is no clock). */
static uint64_t trace_ns(const tr_trace *t, size_t q)
{
    uint64_t ms = t->time[q] > t->time[0] ? t->time[q] - t->time[0] : 0; /* (a request out of order: the start) */
    return ms * 1000000ull + 1000000000ull;
}

/* Read the hit prefix, at most `limit` blocks: how many from the start
 * arrived whole. */
static size_t read_prefix(l3_store *st, req_io *io, const uint32_t *ids, size_t limit, replay *r)
{
    size_t i = 0;
    while (i < limit && io->flags[i])
        i++;
    if (!i)
        return 0;
    l3_io_result res = { .success = io->ok, .object_failures = io->fail };
    if (l3_store_batch_get_into(st, io->keys, i, (l3_host_buffer){ io->pool, io->pool_len }, io->ranges, &res,
                                NULL) != L3_OK)
        return 0;
    size_t got = 0;
    while (got < i && io->ok[got])
        got++;
    for (size_t k = 0; k < got; k++) {
        uint8_t want[8];
        stamp(want, ids[k]);
        r->bad_bytes += memcmp(io->pool + io->ranges[k].offset, want, 8) != 0;
    }
    return got;
}

/* Put `m` keys (their bytes stamped at io's ranges, their groups in
 * io->groups), the last a prompt's partial page when `tail`; counted. */
static void put_batch(l3_store *st, req_io *io, const char **keys, size_t m, bool tail, replay *r)
{
    if (!m)
        return;
    l3_io_result res = { .success = io->ok, .object_failures = io->fail };
    l3_put_hints hints = { .groups = io->groups, .group_objects = io->group_objects, .last_is_partial = tail,
                           .whole = io->pools }; /* (a pools batch carries its last page's state) */
    if (l3_store_batch_put_hinted(st, keys, m, (l3_host_buffer){ io->pool, io->pool_len }, io->ranges, 1, &hints,
                                  &res, NULL) != L3_OK)
        r->failed_puts += m;
    for (size_t k = 0; k < m; k++) {
        r->admitted += io->ok[k];
        r->declined += !io->ok[k]; /* (a store's admission declines; a failure is an object failure) */
        r->declined_room += !io->ok[k] && io->slots && 2 * m > io->slots;
        r->failed_puts += io->fail[k];
    }
}

/* Store the blocks after the hit prefix that are absent. */
static void store_rest(l3_store *st, req_io *io, const uint32_t *ids, size_t n, size_t hit, replay *r)
{
    size_t m = 0;
    bool tail = false; /* the request's last block is offered: a prompt's partial page */
    for (size_t j = hit; j < n; j++) {
        if (j > hit && io->flags[j])
            continue; /* present after the first miss: left alone */
        if ((io->admit == L3_ADMIT_NO_TAIL && j + 1 == n) || (io->admit == L3_ADMIT_SECOND_SIGHT && !io->seen[ids[j]]))
            continue; /* the engine's admission rule declines it */
        stamp(io->pool + io->ranges[m].offset, ids[j]);
        io->keys[m] = io->kbuf[j];
        if (io->groups)
            io->groups[m] = (uint64_t)ids[j] + 1;
        m++;
        tail = j + 1 == n;
    }
    put_batch(st, io, io->keys, m, tail, r);
}

static void req_io_free(req_io *io)
{
    free(io->kbuf);
    free(io->keys);
    free(io->flags);
    free(io->ok);
    free(io->fail);
    free(io->ranges);
    free(io->seen);
    free(io->groups);
    free(io->batch);
    free(io->batch_obj);
    if (io->pool)
        l3_pool_free(io->pool, io->pool_len);
}

static bool req_io_alloc(req_io *io, const tr_trace *t, uint64_t block, int admit, bool pools)
{
    size_t n = (size_t)(t->longest ? t->longest : 1) * (pools ? NUM_POOLS : 1);
    *io = (req_io){ .admit = admit, .pools = pools, .cap = n, .batch = calloc(n, sizeof(char *)),
                    .batch_obj = calloc(n, sizeof(uint32_t)), .seen = calloc(t->num_ids ? t->num_ids : 1, 1),
                    .kbuf = calloc(n, sizeof *io->kbuf), .keys = calloc(n, sizeof *io->keys),
                    .flags = calloc(n, 1), .ok = calloc(n, 1), .fail = calloc(n, 1),
                    .ranges = calloc(n, sizeof *io->ranges), .pool_len = n * l3_round_up(block, 4096) };
    io->pool = l3_pool_alloc(io->pool_len, NULL);
    for (size_t i = 0; io->ranges && i < n; i++)
        io->ranges[i] = (l3_range){ i * l3_round_up(block, 4096), block };
    return io->seen && io->kbuf && io->keys && io->flags && io->ok && io->fail && io->ranges && io->pool &&
           io->batch && io->batch_obj;
}

/* Replay every request through the store. */
static bool replay_all(const tr_trace *t, l3_store *st, req_io *io, replay *r, bool progress)
{
    for (size_t q = 0; q < t->num_requests; q++) {
        const uint32_t *ids = t->ids + t->start[q];
        size_t n = t->start[q + 1] - t->start[q];
        request_keys(ids, n, -1, io->kbuf, io->keys);
        uint64_t now = trace_ns(t, q);
        io->now_ns = now > io->now_ns ? now : io->now_ns; /* never back */
        if (l3_store_batch_exists(st, io->keys, n, io->flags, NULL) != L3_OK)
            return false;
        size_t hit = read_prefix(st, io, ids, n, r);
        r->hits += hit;
        r->accesses += n;
        store_rest(st, io, ids, n, hit, r);
        for (size_t j = 0; j < n; j++)
            io->seen[ids[j]] = true;
        if (progress && (q % 256 == 0 || q + 1 == t->num_requests))
            fprintf(stderr, "\r  request %zu/%zu, hit rate %.4f ", q + 1, t->num_requests,
                    r->accesses ? (double)r->hits / (double)r->accesses : 0.0);
    }
    if (progress)
        fprintf(stderr, "\r%60s\r", "");
    return true;
}

/* One capacity, one policy: a fresh store, the replay, its counters; with
 * `dwpd` > 0 a write budget of that many drive writes a day, on the
 * trace's clock. */
static bool run_store(const l3_trace_options *o, const tr_trace *t, uint64_t objects, l3_eviction ev, double dwpd,
                      replay *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/l3trace-%d.store", o->dir, (int)getpid());
    l3_slab_options so;
    if (!store_options(o, objects, path, &so))
        return false;
    so.eviction = ev;
    req_io io;
    bool ok = req_io_alloc(&io, t, o->block_bytes, o->admit, false);
    if (dwpd > 0) {
        so.write_budget_dwpd = dwpd;
        so.budget_clock = (l3_clock){ trace_clock, &io };
        io.now_ns = trace_ns(t, 0);
    }
    l3_slabstore *s;
    l3_error err;
    if (!ok || l3_slabstore_open(&so, &s, &err) != L3_OK) {
        fprintf(stderr, "l3bench: --trace: %s\n", ok ? err.msg : "out of memory");
        req_io_free(&io);
        return false;
    }
    io.slots = objects;
    ok = l3_slabstore_register_host(s, (l3_host_buffer){ io.pool, io.pool_len }, &err) == L3_OK;
    double t0 = l3_monotonic_seconds();
    ok = ok && replay_all(t, l3_slabstore_store(s), &io, r, !o->json && isatty(2));
    r->seconds = l3_monotonic_seconds() - t0;
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    r->dev_bytes = stats.bytes_written;
    r->reinserted = stats.reinserted_objects;
    r->slabs = stats.slabs_total;
    r->slab_size = stats.slab_size;
    l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL);
    l3_slabstore_free(s);
    req_io_free(&io);
    unlink(path);
    return ok;
}

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0; }

/* --ranks R through the store: what the R processes of one tensor-
 * parallel group share (a MAP_SHARED mapping made before they fork): a
 * barrier that keeps them in lockstep, request by request, and each
 * rank's present prefix (by request parity: a slot is written again only
 * after every rank passed the next barrier); `got`, after it, holds per
 * request and rank the blocks read whole. */
typedef struct rank_shared {
    pthread_barrier_t step;
    uint32_t prefix[2][64];
    uint64_t bad_bytes, failed_puts;
    uint64_t written, dropped; /* over the ranks: objects put, objects dropped with their group */
} rank_shared;

static void pool_keys(const uint32_t *ids, size_t n, int rank, req_io *io)
{
    static const char *const suffix[NUM_POOLS] = { "", "_x", "_s" };
    for (size_t p = 0; p < NUM_POOLS; p++)
        for (size_t i = 0; i < n; i++) {
            size_t k = p * n + i;
            snprintf(io->kbuf[k], sizeof io->kbuf[k], "tr_%u_r%d%s", ids[i], rank, suffix[p]);
            io->keys[k] = io->kbuf[k];
        }
}

/* A rank's usable prefix from its exists flags: the run of pages whose KV
 * and sidecar are there, cut back to the last of them with a state. */
static size_t pool_prefix(const req_io *io, size_t n)
{
    size_t h = 0;
    while (h < n && io->flags[h] && io->flags[n + h])
        h++;
    while (h > 0 && !io->flags[2 * n + h - 1])
        h--;
    return h;
}

/* An object's stamp: its block and pool. */
static void pool_stamp(uint8_t *p, uint32_t obj)
{
    uint64_t v = 0x9e3779b97f4a7c15ull * ((uint64_t)obj + 1);
    memcpy(p, &v, sizeof v);
}

/* Gather key `k` of the request (pool k / n, block k % n) into the batch. */
static void pool_gather(req_io *io, const uint32_t *ids, size_t n, size_t k, size_t *m)
{
    io->batch[*m] = io->keys[k];
    io->batch_obj[*m] = ids[k % n] * NUM_POOLS + (uint32_t)(k / n);
    (*m)++;
}

/* Read the usable prefix `u` (its pages' KV and sidecars, the state of its
 * last page): u when all of it arrived whole, else 0 (no other state is
 * known to be there). */
static size_t pool_read(l3_store *st, req_io *io, const uint32_t *ids, size_t n, size_t u, replay *r)
{
    if (!u)
        return 0;
    size_t m = 0;
    for (size_t j = 0; j < u; j++) {
        pool_gather(io, ids, n, POOL_KV * n + j, &m);
        pool_gather(io, ids, n, POOL_SIDECAR * n + j, &m);
    }
    pool_gather(io, ids, n, POOL_STATE * n + u - 1, &m);
    l3_io_result res = { .success = io->ok, .object_failures = io->fail };
    if (l3_store_batch_get_into(st, io->batch, m, (l3_host_buffer){ io->pool, io->pool_len }, io->ranges, &res,
                                NULL) != L3_OK)
        return 0;
    bool whole = true;
    for (size_t k = 0; k < m; k++) {
        if (!io->ok[k]) {
            whole = false;
            continue;
        }
        uint8_t want[8];
        pool_stamp(want, io->batch_obj[k]);
        r->bad_bytes += memcmp(io->pool + io->ranges[k].offset, want, 8) != 0;
    }
    return whole ? u : 0;
}

/* Store what the rank lacks after the usable prefix `u`: each page's KV
 * and sidecar in chain order, the state of the last full page before the
 * prompt's partial last page (offered last, as the batch's partial page). */
static void pool_store(l3_store *st, req_io *io, const uint32_t *ids, size_t n, size_t u, replay *r)
{
    size_t m = 0;
    bool tail = false;
    for (size_t j = u; j < n; j++) {
        if (j + 1 == n && n >= 2 && !io->flags[POOL_STATE * n + n - 2])
            pool_gather(io, ids, n, POOL_STATE * n + n - 2, &m);
        for (size_t p = POOL_KV; p <= POOL_SIDECAR; p++)
            if (!io->flags[p * n + j]) {
                pool_gather(io, ids, n, p * n + j, &m);
                tail = j + 1 == n;
            }
    }
    for (size_t k = 0; k < m; k++) {
        pool_stamp(io->pool + io->ranges[k].offset, io->batch_obj[k]);
        if (io->groups)
            io->groups[k] = (uint64_t)(io->batch_obj[k] / NUM_POOLS) + 1;
    }
    put_batch(st, io, io->batch, m, tail, r);
}

/* One rank's replay of every request on the shared store: its own shard
 * of each block, the hit the group's minimum (SGLang's all_reduce(min)),
 * the rest of the request stored with its page's group when `groups`. */
static bool rank_replay(const tr_trace *t, l3_store *st, req_io *io, int rank, uint32_t ranks, rank_shared *sh,
                        uint32_t *got)
{
    replay r = { 0 };
    for (size_t q = 0; q < t->num_requests; q++) {
        const uint32_t *ids = t->ids + t->start[q];
        size_t n = t->start[q + 1] - t->start[q], p = 0, nkeys = io->pools ? NUM_POOLS * n : n;
        if (io->pools)
            pool_keys(ids, n, rank, io);
        else
            request_keys(ids, n, rank, io->kbuf, io->keys);
        if (l3_store_batch_exists(st, io->keys, nkeys, io->flags, NULL) != L3_OK) {
            memset(io->flags, 0, nkeys); /* (a miss, and counted: the others wait at the barrier) */
            r.failed_puts++;
        }
        if (io->pools)
            p = pool_prefix(io, n);
        else
            while (p < n && io->flags[p])
                p++;
        sh->prefix[q & 1][rank] = (uint32_t)p;
        pthread_barrier_wait(&sh->step);
        size_t hit = p;
        for (uint32_t k = 0; k < ranks; k++)
            hit = sh->prefix[q & 1][k] < hit ? sh->prefix[q & 1][k] : hit;
        if (io->pools) {
            got[q * ranks + (size_t)rank] = (uint32_t)pool_read(st, io, ids, n, hit, &r);
            pool_store(st, io, ids, n, hit, &r);
            continue;
        }
        got[q * ranks + (size_t)rank] = (uint32_t)read_prefix(st, io, ids, hit, &r);
        store_rest(st, io, ids, n, hit, &r);
    }
    __atomic_fetch_add(&sh->bad_bytes, r.bad_bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&sh->failed_puts, r.failed_puts, __ATOMIC_RELAXED);
    return r.failed_puts == 0;
}

/* The child process of rank `rank`: attach to the store at `path`, replay,
 * exit 0 (or 1). */
static int rank_child(const l3_trace_options *o, const tr_trace *t, const l3_slab_options *base, int rank,
                      rank_shared *sh, uint32_t *got, bool groups)
{
    l3_slab_options so = *base;
    so.format = false;
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(&so, &s, &err) != L3_OK) {
        fprintf(stderr, "l3bench: --trace: rank %d: %s\n", rank, err.msg);
        return 1;
    }
    req_io io;
    bool ok = req_io_alloc(&io, t, o->block_bytes, L3_ADMIT_ALL, o->pools);
    io.groups = groups ? calloc(io.cap, sizeof *io.groups) : NULL;
    /* as SGLang's adapter counts a page: its KV, sidecar and state on every rank */
    io.group_objects = groups ? o->ranks * (o->pools ? NUM_POOLS : 1) : 0;
    ok = ok && (!groups || io.groups) &&
         l3_slabstore_register_host(s, (l3_host_buffer){ io.pool, io.pool_len }, &err) == L3_OK;
    ok = ok && rank_replay(t, l3_slabstore_store(s), &io, rank, o->ranks, sh, got);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats); /* (this process's counts) */
    __atomic_fetch_add(&sh->written, stats.put_keys_written, __ATOMIC_RELAXED);
    __atomic_fetch_add(&sh->dropped, stats.group_dropped, __ATOMIC_RELAXED);
    l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL);
    l3_slabstore_free(s);
    req_io_free(&io);
    return ok ? 0 : 1;
}

/* The usable hit rate over `ranks` (per request the minimum over ranks of
 * the blocks read whole) and the ranks' own mean. */
static void rank_rates(const tr_trace *t, uint32_t ranks, const uint32_t *got, double *usable, double *own)
{
    uint64_t min_sum = 0, all = 0;
    for (size_t q = 0; q < t->num_requests; q++) {
        uint32_t m = UINT32_MAX;
        for (uint32_t k = 0; k < ranks; k++) {
            uint32_t g = got[q * ranks + k];
            m = g < m ? g : m;
            all += g;
        }
        min_sum += m;
    }
    *usable = ratio(min_sum, t->num_accesses);
    *own = ratio(all, (uint64_t)t->num_accesses * ranks);
}

/* The R rank processes at one capacity (`cap` shards a rank, each a
 * block's 1/R), with or without groups; prints the usable hit rate beside
 * one rank's (`single`, the store's row above). */
static bool run_ranks(const l3_trace_options *o, const tr_trace *t, uint64_t cap, bool groups, double single,
                      const tr_sim_result *lru)
{
    l3_trace_options ro = *o;
    ro.ranks = o->ranks ? o->ranks : 1;
    o = &ro; /* (the rank count made explicit: --pools alone is one rank) */
    uint32_t per_page = o->pools ? 2 : 1; /* KV and sidecar; the states share that room */
    ro.block_bytes = (o->block_bytes + o->ranks - 1) / o->ranks;
    char path[4096];
    snprintf(path, sizeof path, "%s/l3trace-ranks-%d.store", o->dir, (int)getpid());
    l3_slab_options so;
    if (!store_options(&ro, cap * o->ranks * per_page, path, &so))
        return false;
    so.eviction = L3_EVICT_FIFO_REINSERT;
    size_t got_bytes = t->num_requests * o->ranks * sizeof(uint32_t);
    rank_shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint32_t *got = mmap(NULL, got_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    l3_slabstore *s = NULL;
    l3_error err;
    bool ok = sh != MAP_FAILED && got != MAP_FAILED && l3_slabstore_open(&so, &s, &err) == L3_OK;
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    ok = ok && pthread_barrier_init(&sh->step, &ba, o->ranks) == 0;
    pid_t pids[64];
    uint32_t started = 0;
    double t0 = l3_monotonic_seconds();
    for (; ok && started < o->ranks; started++) {
        fflush(NULL);
        pids[started] = fork();
        if (pids[started] == 0)
            _exit(rank_child(&ro, t, &so, (int)started, sh, got, groups));
        ok = pids[started] > 0;
    }
    for (uint32_t k = 0; k < started; k++) {
        int status;
        ok = waitpid(pids[k], &status, 0) == pids[k] && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
    }
    double usable = 0, own = 0, hl = ratio(lru->hits, lru->accesses);
    if (ok)
        rank_rates(t, o->ranks, got, &usable, &own);
    if (ok && (sh->bad_bytes || sh->failed_puts))
        fprintf(stderr, "l3bench: --trace: ranks: %llu reads served wrong bytes, %llu puts failed\n",
                (unsigned long long)sh->bad_bytes, (unsigned long long)sh->failed_puts);
    if (ok && !o->json)
        printf("%8s  %u ranks%s, %-9s usable %.4f (%.3f x one rank's %.4f; %.3f x LRU); the ranks' own %.4f; %.1f s; "
               "%llu objects written, %llu dropped with their group\n",
               "", o->ranks, o->pools ? " with pools" : "", groups ? "groups:" : "no groups:", usable, single > 0 ? usable / single : 0, single,
               hl > 0 ? usable / hl : 0, own, l3_monotonic_seconds() - t0, (unsigned long long)sh->written,
               (unsigned long long)sh->dropped);
    ok = ok && !sh->bad_bytes && !sh->failed_puts;
    if (s)
        l3_slabstore_free(s);
    unlink(path);
    if (sh != MAP_FAILED) {
        pthread_barrier_destroy(&sh->step);
        munmap(sh, sizeof *sh);
    }
    if (got != MAP_FAILED)
        munmap(got, got_bytes);
    return ok;
}

/* The capacities of the list: blocks, or bytes with a unit. */
static size_t parse_capacities(const l3_trace_options *o, uint64_t *out, size_t max)
{
    char text[256];
    snprintf(text, sizeof text, "%s", o->capacity);
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return 0; /* more than the list may hold */
        char *end;
        errno = 0;
        unsigned long long v = strtoull(tok, &end, 10);
        uint64_t bytes;
        if (*end == '\0' && !errno && v > 0)
            out[n++] = v;
        else if (l3_parse_size(tok, &bytes, NULL) == L3_OK && bytes >= o->block_bytes)
            out[n++] = bytes / o->block_bytes;
        else
            return 0;
    }
    return n;
}


/* One row of the table (or of the JSON array). */
static void print_row(const l3_trace_options *o, uint64_t cap, const char *policy, const tr_sim_result *lru,
                      const tr_sim_result *bel, const replay *r, json_t *rows)
{
    double h = ratio(r->hits, r->accesses), hl = ratio(lru->hits, lru->accesses), hb = ratio(bel->hits, bel->accesses);
    double wa_dev = ratio(r->dev_bytes, r->admitted * o->block_bytes);
    double wa_pol = ratio(r->admitted + r->reinserted, r->admitted);
    if (rows) {
        json_array_append_new(rows, json_pack("{s:I,s:s,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:o,s:f,s:f,s:f}",
                                              "capacity_blocks", (json_int_t)cap, "policy", policy, "slabs",
                                              (json_int_t)r->slabs, "slab_size", (json_int_t)r->slab_size, "lru", hl,
                                              "belady", hb, "l3cache", h, "vs_lru", hl > 0 ? h / hl : 0, "vs_belady",
                                              hb > 0 ? h / hb : 0, "g", l3_trace_g_json(r->hits, lru->hits, bel->hits),
                                              "wa_device", wa_dev, "wa_policy", wa_pol, "seconds", r->seconds));
        return;
    }
    char g[16];
    printf("%8llu  %-23s %5u x %4llu MiB  %.4f  %.4f  %.4f  %6.3f  %6.3f  %s  %8.2f  %8.2f  %6.1f\n",
           (unsigned long long)cap, policy, r->slabs, (unsigned long long)(r->slab_size >> 20), hl, hb, h,
           hl > 0 ? h / hl : 0, hb > 0 ? h / hb : 0, l3_trace_g_text(r->hits, lru->hits, bel->hits, 6, g, sizeof g),
           wa_dev, wa_pol, r->seconds);
    fflush(stdout);
}

/* Beside a store replay with admission: the simulator's figure for the
 * same policy over the object LRU (admitsim.c) and its G, and the store's
 * writes against the LRU's (every miss once). */
static void print_sim(const l3_trace_options *o, const tr_trace *t, uint64_t cap, const tr_sim_result *lru,
                      const tr_sim_result *bel, const replay *r, json_t *rows)
{
    tr_admit_config c;
    tr_admit_defaults(&c, o->store_admission == L3_ADMISSION_ADAPTIVE ? TR_ADAPTIVE : TR_RUNG);
    if (o->store_admission == L3_ADMISSION_RUNG)
        c.rung = l3_ladder[o->store_rung];
    tr_admit_result a = tr_sim_admit(t, (uint32_t)cap, &c);
    double hs = ratio(a.hits, a.accesses), h = ratio(r->hits, r->accesses), hl = ratio(lru->hits, lru->accesses);
    uint64_t lru_writes = lru->admitted;
    if (rows) {
        json_t *last = json_array_get(rows, json_array_size(rows) - 1);
        json_object_set_new(last, "sim", json_real(hs));
        json_object_set_new(last, "sim_g", l3_trace_g_json(a.hits, lru->hits, bel->hits));
        json_object_set_new(last, "vs_sim", json_real(hs > 0 ? h / hs : 0));
        json_object_set_new(last, "writes_vs_lru", json_real(ratio(r->admitted, lru_writes)));
        return;
    }
    char g[16];
    printf("%8s  simulated: %.4f (%.3f x LRU, G %s); the store %.3f x of it; writes %.3f x the LRU's, the "
           "simulator's %.3f\n",
           "", hs, hl > 0 ? hs / hl : 0, l3_trace_g_text(a.hits, lru->hits, bel->hits, 0, g, sizeof g),
           hs > 0 ? h / hs : 0, ratio(r->admitted, lru_writes), ratio(a.written, lru_writes));
    fflush(stdout);
}

/* The simulator's policy that matches the store's admission under a
 * budget: the store's ghost knows first sightings (the graceful gate)
 * unless it admits everything; both scale their shadows' budgets to
 * their sampling. */
static tr_admit_config sim_budgeted(const l3_trace_options *o, uint64_t cap, double dwpd)
{
    tr_admit_config c;
    int kind = o->store_admission == L3_ADMISSION_ADAPTIVE ? TR_ADAPTIVE
             : o->store_admission == L3_ADMISSION_RUNG   ? TR_RUNG
                                                          : TR_ALL;
    tr_admit_defaults(&c, kind);
    if (kind == TR_RUNG)
        c.rung = l3_ladder[o->store_rung];
    c.budget = dwpd * (double)cap / 86400000.0; /* objects a millisecond of trace time */
    c.graceful = kind != TR_ALL;
    return c;
}

/* --budget through the store, at one capacity: per budget a fresh store
 * with that write budget on the trace's clock; its hit rate against the
 * unbudgeted object LRU's, the drive writes a day it made (device bytes
 * over the slabs' bytes), and the simulator's figure for the same policy
 * and budget. False when a replay failed or served wrong bytes. */
static bool budget_rows(const l3_trace_options *o, const tr_trace *t, uint64_t cap, const tr_sim_result *lru,
                        json_t *rows)
{
    double hours = l3_trace_hours(t), days = hours / 24.0;
    double lru_dwpd = l3_trace_dwpd(hours, lru->admitted, cap);
    double list[L3_TRACE_MAX_BUDGETS], hl = ratio(lru->hits, lru->accesses);
    size_t m = l3_trace_budgets(o, lru_dwpd, list);
    for (size_t k = 0; k < m; k++) {
        replay r = { 0 };
        if (list[k] <= 0)
            continue; /* a share of an LRU rate of 0 (a trace of one instant) */
        if (!run_store(o, t, cap, L3_EVICT_FIFO_REINSERT, list[k], &r) || r.bad_bytes || r.failed_puts) {
            fprintf(stderr, "l3bench: --trace --budget: %llu reads served wrong bytes, %llu puts failed\n",
                    (unsigned long long)r.bad_bytes, (unsigned long long)r.failed_puts);
            return false;
        }
        tr_admit_config c = sim_budgeted(o, cap, list[k]);
        tr_admit_result a = tr_sim_admit(t, (uint32_t)cap, &c);
        double h = ratio(r.hits, r.accesses), hs = ratio(a.hits, a.accesses);
        double written = days > 0 ? (double)r.dev_bytes / ((double)r.slabs * (double)r.slab_size) / days : 0;
        if (rows) {
            json_array_append_new(rows, json_pack("{s:s,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "table", "budget",
                                                  "capacity_blocks", (json_int_t)cap, "dwpd", list[k], "of_lru_rate",
                                                  lru_dwpd > 0 ? list[k] / lru_dwpd : 0, "l3cache", h, "vs_lru",
                                                  hl > 0 ? h / hl : 0, "dwpd_written", written, "sim", hs, "vs_sim",
                                                  hs > 0 ? h / hs : 0));
            continue;
        }
        if (k == 0)
            printf("%8s  under a write budget on the trace's clock (%.2f h; DWPD of the slabs' bytes):\n"
                   "%8s  %8s  %6s  %7s  %6s  %12s  %9s  %s\n",
                   "", hours, "", "DWPD", "of LRU", "l3cache", "vs LRU", "DWPD written", "simulated", "the store x of it");
        printf("%8s  %8.1f  %6.3f  %7.4f  %6.3f  %12.1f  %9.4f  %.3f\n", "", list[k],
               lru_dwpd > 0 ? list[k] / lru_dwpd : 0, h, hl > 0 ? h / hl : 0, written, hs, hs > 0 ? h / hs : 0);
        fflush(stdout);
    }
    return true;
}

/* --targets and --target-g: whether the fifo-reinsert replay `r` at this
 * capacity meets its targets (tr_target_met: writes, the store's objects
 * written, reinsertions included, at most the LRU's, which writes every
 * miss once); said. */
static bool check_target(const tr_target *target, const tr_sim_result *lru, const tr_sim_result *bel,
                         const replay *r, json_t *rows)
{
    json_t *last = rows ? json_array_get(rows, json_array_size(rows) - 1) : NULL;
    return l3_trace_judge(target, r->hits, lru->hits, bel->hits, ratio(r->admitted + r->reinserted, lru->admitted),
                          "writes (reinsertions too)", last);
}

/* Every policy asked for, at one capacity (with a target, checked against
 * it: *met); false when a replay failed or served wrong bytes. */
static bool run_capacity(const l3_trace_options *o, const tr_trace *t, uint64_t cap, const tr_target *target,
                         int *met, json_t *rows)
{
    tr_sim_result lru = tr_sim_lru(t, (uint32_t)cap), bel = tr_sim_belady(t, (uint32_t)cap);
    static const char *const names[] = { "fifo-reinsert", "lru-slab" };
    bool ok = true;
    for (int ev = 0; ev < 2 && ok; ev++) {
        if (o->eviction >= 0 && o->eviction != ev)
            continue;
        replay r = { 0 };
        ok = run_store(o, t, cap, (l3_eviction)ev, 0, &r);
        if (o->store_admission == L3_ADMISSION_ALL)
            r.failed_puts += r.declined - r.declined_room; /* a store that admits everything declines
                                                              nothing that has room */
        if (ok && (r.bad_bytes || r.failed_puts)) {
            fprintf(stderr, "l3bench: --trace: %llu reads served wrong bytes, %llu puts failed\n",
                    (unsigned long long)r.bad_bytes, (unsigned long long)r.failed_puts);
            ok = false;
        }
        static const char *const admits[] = { "", "+no-tail", "+2nd-sight" };
        char name[48];
        if (o->store_admission == L3_ADMISSION_ADAPTIVE)
            snprintf(name, sizeof name, "%s+adaptive", names[ev]);
        else if (o->store_admission == L3_ADMISSION_RUNG)
            snprintf(name, sizeof name, "%s+rung:%u", names[ev], o->store_rung);
        else
            snprintf(name, sizeof name, "%s%s", names[ev], admits[o->admit]);
        if (ok)
            print_row(o, cap, name, &lru, &bel, &r, rows);
        if (ok && o->store_admission != L3_ADMISSION_ALL)
            print_sim(o, t, cap, &lru, &bel, &r, rows);
        if (ok && (target->ratio > 0 || !isnan(target->g)) && ev == L3_EVICT_FIFO_REINSERT)
            *met = check_target(target, &lru, &bel, &r, rows); /* (-1: not checked, under lru-slab alone) */
        if (ok && o->budget[0] && ev == L3_EVICT_FIFO_REINSERT)
            ok = budget_rows(o, t, cap, &lru, rows);
        if (ok && (o->ranks > 1 || o->pools) && ev == L3_EVICT_FIFO_REINSERT)
            ok = run_ranks(o, t, cap, true, ratio(r.hits, r.accesses), &lru) &&
                 run_ranks(o, t, cap, false, ratio(r.hits, r.accesses), &lru);
    }
    return ok;
}

int l3_trace_run(const l3_trace_options *o)
{
    uint64_t caps[L3_TRACE_MAX_CAPACITIES];
    size_t ncaps = parse_capacities(o, caps, L3_TRACE_MAX_CAPACITIES);
    if (!ncaps || caps[0] > UINT32_MAX) {
        fprintf(stderr, "l3bench: --capacity: expected blocks (1000,5859) or a size (1GiB), a list of at most %d\n",
                L3_TRACE_MAX_CAPACITIES);
        return 2;
    }
    tr_trace t;
    if (!tr_load(o->trace, &t))
        return 1;
    if (o->sim || o->sim_all) {
        int rc = l3_trace_sim(o, &t, caps, ncaps);
        tr_free(&t);
        return rc;
    }
    json_t *rows = o->json ? json_array() : NULL;
    if (!o->json) {
        printf("trace %s: %zu requests, %zu block accesses, %u distinct blocks; objects of %llu bytes\n", o->trace,
               t.num_requests, t.num_accesses, t.num_ids, (unsigned long long)o->block_bytes);
        printf("capacity  policy                    slabs x size     LRU     Belady  l3cache  vs LRU  vs MIN       G  "
               "WA device  WA policy  seconds\n");
    }
    bool ok = true;
    size_t met = 0, checked = 0;
    for (size_t i = 0; i < ncaps && ok; i++) {
        int m = -1;
        tr_target target = l3_trace_target(o, i);
        ok = run_capacity(o, &t, caps[i], &target, &m, rows);
        met += m == 1;
        checked += m >= 0;
    }
    if (ok && checked && !rows)
        printf("targets: %zu of %zu met\n", met, checked);
    if (rows) {
        char *text = json_dumps(rows, JSON_INDENT(2));
        puts(text);
        free(text);
        json_decref(rows);
    }
    tr_free(&t);
    return ok ? 0 : 1;
}
