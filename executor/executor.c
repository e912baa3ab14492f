#include "l3_executor.h"
#include "invariant.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { KIND_QUERY, KIND_GET, KIND_PUT, NUM_KINDS };
static const char *const kind_names[NUM_KINDS] = { "query", "get", "put" };

const char *const l3_event_names[L3_NUM_EVENTS] = {
    "accepted", "backend_calls", "completed", "cancelled_queued",
    "cancelled_running", "rejected", "unretired",
};
const char *const l3_phase_names[L3_NUM_PHASES] = { "queued", "running", "completed" };

/* A job as the workers run it: object keys and, for a get or put, this
 * rank's Host range per key (has_range false where another rank owns the
 * block). Freed by the poll that delivers its completion: a worker uses it
 * only before it finishes the job, under the state lock. */
typedef struct job {
    uint64_t op_id;
    int kind;
    size_t num_keys;
    char **keys;
    char *key_arena;
    l3_range *ranges;
    bool *has_range;
    uint64_t num_bytes;
} job;

typedef struct job_state {
    bool used;
    job *job;
    double submitted_at;
    bool started;
    bool cancelled;
    bool completed;
} job_state;

typedef struct counters {
    uint64_t events[L3_NUM_EVENTS];
    uint64_t success_keys, failed_keys, success_bytes;
    double queue_seconds, backend_seconds;
} counters;

enum { EV_ACCEPTED, EV_BACKEND_CALLS, EV_COMPLETED, EV_CANCELLED_QUEUED, EV_CANCELLED_RUNNING,
       EV_REJECTED, EV_UNRETIRED };

/* A FIFO of operation ids with a fixed capacity. */
typedef struct id_ring {
    uint64_t *ids;
    size_t cap, head, len;
} id_ring;

typedef struct worker_arg {
    l3_executor *executor;
    int kind;
} worker_arg;

struct l3_executor {
    l3_store *store;
    l3_host_buffer host; /* the span of every region: batches' ranges are offsets in it */
    l3_host_buffer regions[L3_MAX_REGIONS];
    size_t num_regions;
    l3_host_layout layout;
    char *deployment_id;
    bool has_draft;
    l3_executor_config config;
    l3_clock clock;
    l3_health health;

    pthread_mutex_t mu;
    pthread_cond_t work[NUM_KINDS]; /* per kind: a job was queued, or shutdown began */
    pthread_cond_t exited;          /* a worker exited */
    pthread_cond_t finished;        /* a completion was queued for poll */
    job_state *jobs;                /* max_operations slots */
    size_t num_jobs;
    l3_completion *results; /* a ring of max_operations completions */
    size_t results_head, results_len;
    id_ring queues[NUM_KINDS];
    counters counters[NUM_KINDS];
    bool stopping;
    bool unsafe_io;
    uint64_t last_submitted;
    size_t running_workers;

    pthread_mutex_t prefix_mu;
    char prefix[L3_KEY_PREFIX_LEN + 1];

    pthread_t *threads;
    worker_arg *args;
    size_t num_threads;
    bool closed;
    l3_executor *next_leaked;
};

/* Executors whose close could not prove retirement: kept reachable for the
 * rest of the process, as their workers may still use them. */
static pthread_mutex_t leaked_mu = PTHREAD_MUTEX_INITIALIZER;
static l3_executor *leaked;

static void job_free(job *j)
{
    if (!j)
        return;
    free(j->keys);
    free(j->key_arena);
    free(j->ranges);
    free(j->has_range);
    free(j);
}

/* Queue an id; the caller has checked that the ring has room. */
static void ring_push(id_ring *r, uint64_t id)
{
    L3_ASSERT(r->len < r->cap && r->head < r->cap);
    r->ids[(r->head + r->len) % r->cap] = id;
    r->len++;
}

static bool ring_pop(id_ring *r, uint64_t *id)
{
    if (r->len == 0)
        return false;
    *id = r->ids[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    return true;
}

static job_state *find_job(l3_executor *e, uint64_t op_id)
{
    for (size_t i = 0; i < e->config.max_operations; i++)
        if (e->jobs[i].used && e->jobs[i].job->op_id == op_id)
            return &e->jobs[i];
    return NULL;
}

/* The positions with native work on this rank. */
static bool is_local(const job *j, size_t i) { return j->kind == KIND_QUERY || j->has_range[i]; }

/* Facts of a finished job: arrays of the job's key count. */
typedef struct facts {
    bool *success;
    bool *object_failures;
    bool retired;
} facts;

static bool facts_alloc(facts *f, size_t n, bool success)
{
    f->success = malloc(n ? n : 1);
    f->object_failures = calloc(n ? n : 1, 1);
    f->retired = true;
    if (!f->success || !f->object_failures) {
        free(f->success);
        free(f->object_failures);
        return false;
    }
    memset(f->success, success, n ? n : 1);
    return true;
}

/* Complete `op_id` with `result` (under the state lock); takes the arrays. */
static void finish(l3_executor *e, uint64_t op_id, facts result)
{
    double now = l3_clock_now(e->clock);
    job_state *js = find_job(e, op_id);
    if (!js) {
        free(result.success);
        free(result.object_failures);
        return;
    }
    js->completed = true;
    job *j = js->job;
    counters *c = &e->counters[j->kind];
    c->events[EV_COMPLETED]++;
    for (size_t i = 0; i < j->num_keys; i++) {
        if (!is_local(j, i))
            continue;
        if (result.success[i]) {
            c->success_keys++;
            if (j->kind != KIND_QUERY)
                c->success_bytes += j->ranges[i].size;
        } else {
            c->failed_keys++;
        }
    }
    if (!js->started)
        c->queue_seconds += now - js->submitted_at;
    if (!result.retired) {
        c->events[EV_UNRETIRED]++;
        e->unsafe_io = true;
    }
    L3_ASSERT(e->results_len < e->config.max_operations); /* a completion per job, a job per slot */
    l3_completion *out = &e->results[(e->results_head + e->results_len) % e->config.max_operations];
    e->results_len++;
    pthread_cond_broadcast(&e->finished);
    *out = (l3_completion){ .op_id = op_id, .num_keys = j->num_keys, .success = result.success,
                            .object_failures = result.object_failures, .retired = result.retired };
}

/* A retired failure of every key: the job never ran. NULL arrays when out
 * of memory are replaced by a static all-false fallback in finish's caller. */
static void finish_rejected(l3_executor *e, uint64_t op_id, size_t keys)
{
    facts f;
    if (!facts_alloc(&f, keys, false)) {
        /* Out of memory: the completion cannot be built; keep the job's
         * slot so that the scheduler sees the operation stuck rather than
         * a fabricated fact, and say so. */
        l3_log("error", "out of memory completing L3 operation %llu", (unsigned long long)op_id);
        return;
    }
    finish(e, op_id, f);
}

static l3_status submit_job(l3_executor *e, job *j, l3_error *err)
{
    if (j->num_keys == 0 || j->num_keys > e->config.max_keys_per_operation) {
        job_free(j);
        return l3_fail(err, L3_EINVAL, "invalid L3 job: its key count");
    }
    pthread_mutex_lock(&e->mu);
    if (j->op_id <= e->last_submitted) {
        pthread_mutex_unlock(&e->mu);
        job_free(j);
        return l3_fail(err, L3_EINVAL, "invalid L3 job: its operation id does not increase");
    }
    e->last_submitted = j->op_id;
    if (e->num_jobs >= e->config.max_operations) {
        /* The scheduler bounds every accepted operation: exceeding it is a
         * protocol fault, not a completion to drop silently. */
        pthread_mutex_unlock(&e->mu);
        job_free(j);
        return l3_fail(err, L3_ECREDITS, "the scheduler exceeded the L3 operation credits");
    }
    int kind = j->kind;
    uint64_t op_id = j->op_id;
    size_t num_keys = j->num_keys;
    e->counters[kind].events[EV_ACCEPTED]++;
    job_state *slot = NULL;
    for (size_t i = 0; i < e->config.max_operations; i++)
        if (!e->jobs[i].used) {
            slot = &e->jobs[i];
            break;
        }
    L3_ASSERT(slot != NULL); /* fewer jobs than slots: one is free */
    *slot = (job_state){ .used = true, .job = j, .submitted_at = l3_clock_now(e->clock) };
    e->num_jobs++;
    if (e->stopping || e->unsafe_io || e->queues[kind].len >= e->config.max_operations) {
        e->counters[kind].events[EV_REJECTED]++;
        finish_rejected(e, op_id, num_keys);
        pthread_mutex_unlock(&e->mu);
        return L3_OK;
    }
    ring_push(&e->queues[kind], op_id);
    pthread_mutex_unlock(&e->mu);
    pthread_cond_signal(&e->work[kind]);
    return L3_OK;
}

static void cancel(l3_executor *e, uint64_t op_id)
{
    pthread_mutex_lock(&e->mu);
    job_state *js = find_job(e, op_id);
    if (js && !js->completed && !js->cancelled) {
        js->cancelled = true;
        counters *c = &e->counters[js->job->kind];
        if (js->started) {
            c->events[EV_CANCELLED_RUNNING]++;
        } else {
            c->events[EV_CANCELLED_QUEUED]++;
            /* Retire at once, even with every worker blocked in native I/O:
             * the queue entry cannot start after this, and its worker skips
             * it. */
            finish_rejected(e, op_id, js->job->num_keys);
        }
    }
    pthread_mutex_unlock(&e->mu);
}

static bool result_valid(int kind, const l3_io_result *r, size_t n)
{
    if (r->success_len != n || r->object_failures_len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (r->success[i] && r->object_failures[i])
            return false;
        if (kind != KIND_GET && r->object_failures[i])
            return false;
    }
    return true;
}

/* Run `j` against the store, outside the state lock. */
static facts run(l3_executor *e, const job *j)
{
    size_t n = j->num_keys, num_local = 0;
    facts out;
    if (!facts_alloc(&out, n, true)) {
        out.success = out.object_failures = NULL;
        return out;
    }
    for (size_t i = 0; i < n; i++)
        num_local += is_local(j, i);
    if (num_local == 0) {
        /* No native work on this owner: it neither probes the backend's
         * health nor charges bytes it did not move. */
        return out;
    }
    const char **keys = malloc(num_local * sizeof *keys);
    l3_range *ranges = malloc(num_local * sizeof *ranges);
    bool *success = calloc(num_local, 1), *failures = calloc(num_local, 1);
    size_t *pos = malloc(num_local * sizeof *pos);
    if (!keys || !ranges || !success || !failures || !pos) {
        free(keys); free(ranges); free(success); free(failures); free(pos);
        l3_log("error", "out of memory running L3 operation %llu", (unsigned long long)j->op_id);
        memset(out.success, 0, n);
        return out;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!is_local(j, i))
            continue;
        pos[k] = i;
        keys[k] = j->keys[i];
        if (j->kind != KIND_QUERY)
            ranges[k] = j->ranges[i];
        k++;
    }
    l3_io_result r = { .success = success, .object_failures = failures, .retired = true };
    l3_health_token token;
    if (!l3_health_begin(&e->health, &token)) {
        pthread_mutex_lock(&e->mu);
        e->counters[j->kind].events[EV_REJECTED]++;
        pthread_mutex_unlock(&e->mu);
        memset(success, 0, num_local);
        memset(failures, 0, num_local);
        r.retired = true;
    } else {
        pthread_mutex_lock(&e->mu);
        e->counters[j->kind].events[EV_BACKEND_CALLS]++;
        pthread_mutex_unlock(&e->mu);
        double started = l3_clock_now(e->clock);
        l3_error err;
        l3_error_clear(&err);
        l3_status st;
        switch (j->kind) {
        case KIND_QUERY:
            st = e->store->ops->batch_exists(e->store, keys, num_local, success, &err);
            r.success_len = r.object_failures_len = num_local;
            break;
        case KIND_GET:
            st = e->store->ops->batch_get_into(e->store, keys, num_local, e->host, ranges, &r, &err);
            break;
        default:
            st = e->store->ops->batch_put_from(e->store, keys, num_local, e->host, ranges, &r, &err);
            break;
        }
        if (st == L3_OK && !result_valid(j->kind, &r, num_local)) {
            st = L3_EINVAL;
            l3_fail(&err, st, "malformed L3 result");
        }
        if (st == L3_OK) {
            /* A retired failure is an object or capacity fact, never
             * backend unavailability. */
            if (j->kind == KIND_QUERY || r.retired)
                l3_health_success(&e->health, token);
            else
                l3_health_failure(&e->health, token);
        } else {
            l3_log("error", "L3 operation failed: kind=%s op_id=%llu: %s", kind_names[j->kind],
                   (unsigned long long)j->op_id, err.msg[0] ? err.msg : l3_status_name(st));
            l3_health_failure(&e->health, token);
            memset(success, 0, num_local);
            memset(failures, 0, num_local);
            r.retired = j->kind == KIND_QUERY || e->store->ops->failures_retire(e->store);
        }
        double took = l3_clock_now(e->clock) - started;
        pthread_mutex_lock(&e->mu);
        e->counters[j->kind].backend_seconds += took;
        pthread_mutex_unlock(&e->mu);
    }
    /* Keys without native work here are neutral successes. */
    for (size_t k = 0; k < num_local; k++) {
        out.success[pos[k]] = success[k];
        out.object_failures[pos[k]] = failures[k];
    }
    out.retired = r.retired;
    free(keys); free(ranges); free(success); free(failures); free(pos);
    return out;
}

/* One worker of `kind`'s queue, until shutdown drains it. */
static void *work(void *arg)
{
    l3_executor *e = ((worker_arg *)arg)->executor;
    int kind = ((worker_arg *)arg)->kind;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        uint64_t op_id;
        while (!ring_pop(&e->queues[kind], &op_id)) {
            if (e->stopping) {
                L3_ASSERT(e->running_workers > 0);
                e->running_workers--;
                pthread_cond_broadcast(&e->exited);
                pthread_mutex_unlock(&e->mu);
                return NULL;
            }
            pthread_cond_wait(&e->work[kind], &e->mu);
        }
        job_state *js = find_job(e, op_id);
        if (!js || js->completed)
            continue;
        job *j = js->job;
        if (js->cancelled || e->stopping || e->unsafe_io) {
            e->counters[kind].events[EV_REJECTED]++;
            finish_rejected(e, op_id, j->num_keys);
            continue;
        }
        double now = l3_clock_now(e->clock);
        e->counters[kind].queue_seconds += now - js->submitted_at;
        js->started = true;
        pthread_mutex_unlock(&e->mu);
        facts result = run(e, j);
        pthread_mutex_lock(&e->mu);
        if (!result.success) {
            l3_log("error", "out of memory finishing L3 operation %llu", (unsigned long long)op_id);
            continue;
        }
        finish(e, op_id, result);
    }
}

l3_status l3_executor_config_validate(const l3_executor_config *c, l3_error *err)
{
    if (!c)
        return l3_fail(err, L3_EINVAL, "the executor config is NULL");
    if (c->max_operations == 0 || c->max_operations > 1u << 20)
        return l3_fail(err, L3_EINVAL, "max_operations must be 1 to %u", 1u << 20);
    if (c->max_keys_per_operation == 0 || c->max_keys_per_operation > 1u << 20)
        return l3_fail(err, L3_EINVAL, "max_keys_per_operation must be 1 to %u", 1u << 20);
    if (c->query_workers == 0 || c->read_workers == 0 || c->write_workers == 0)
        return l3_fail(err, L3_EINVAL, "query, read and write workers must each be at least 1");
    if (c->query_workers + c->read_workers + c->write_workers > 1024)
        return l3_fail(err, L3_EINVAL, "more than 1024 workers");
    if (c->failure_threshold == 0)
        return l3_fail(err, L3_EINVAL, "failure_threshold must be at least 1");
    if (!(c->recovery_interval >= 0) || !isfinite(c->recovery_interval))
        return l3_fail(err, L3_EINVAL, "recovery_interval must be a finite, non-negative number");
    return L3_OK;
}

static l3_status namespace_prefix(const char *deployment_id, bool has_draft,
                                  const char *weight_version, char out[L3_KEY_PREFIX_LEN + 1],
                                  l3_error *err)
{
    if (!weight_version)
        return l3_fail(err, L3_EINVAL, "the weight version is NULL");
    return l3_key_prefix(deployment_id, weight_version, has_draft ? weight_version : "", out, err);
}

static void executor_free_parts(l3_executor *e)
{
    for (int k = 0; k < NUM_KINDS; k++) {
        free(e->queues[k].ids);
        pthread_cond_destroy(&e->work[k]);
    }
    if (e->jobs)
        for (size_t i = 0; i < e->config.max_operations; i++)
            if (e->jobs[i].used)
                job_free(e->jobs[i].job);
    if (e->results) {
        L3_ASSERT(e->results_len <= e->config.max_operations);
        for (size_t i = 0; i < e->results_len; i++) {
            l3_completion *c = &e->results[(e->results_head + i) % e->config.max_operations];
            free(c->success);
            free(c->object_failures);
        }
    }
    free(e->jobs);
    free(e->results);
    free(e->threads);
    free(e->args);
    free(e->deployment_id);
    pthread_cond_destroy(&e->exited);
    pthread_cond_destroy(&e->finished);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->prefix_mu);
    l3_health_destroy(&e->health);
    free(e);
}

static void stop_and_join(l3_executor *e)
{
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    for (int k = 0; k < NUM_KINDS; k++)
        pthread_cond_broadcast(&e->work[k]);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < e->num_threads; i++)
        pthread_join(e->threads[i], NULL);
    e->num_threads = 0;
}

/* Check the Host regions against the layout, and their span into *span. */
static l3_status check_regions(const l3_host_buffer *regions, size_t n, const l3_host_layout *layout,
                               l3_host_buffer *span, l3_error *err)
{
    if (n != l3_layout_regions(layout))
        return l3_fail(err, L3_EINVAL, "%zu Host regions for a layout of %zu", n, l3_layout_regions(layout));
    if (!regions)
        return l3_fail(err, L3_EINVAL, "no Host pool");
    for (size_t r = 0; r < n; r++)
        if (regions[r].len != l3_layout_region_bytes(layout, (uint32_t)r))
            return l3_fail(err, L3_EINVAL, "Host region %zu (the pool, if 0: %zu bytes) and its layout "
                           "(%llu bytes) disagree", r, regions[r].len,
                           (unsigned long long)l3_layout_region_bytes(layout, (uint32_t)r));
    l3_status st = l3_check_host_regions(regions, n, err);
    if (st != L3_OK)
        return st;
    uint8_t *lo = regions[0].base, *hi = regions[0].base + regions[0].len;
    for (size_t r = 1; r < n; r++) {
        lo = regions[r].base < lo ? regions[r].base : lo;
        hi = regions[r].base + regions[r].len > hi ? regions[r].base + regions[r].len : hi;
    }
    *span = (l3_host_buffer){ lo, (size_t)(hi - lo) };
    return L3_OK;
}

l3_status l3_executor_start(l3_store *store, l3_host_buffer host, const l3_host_layout *layout,
                            const l3_namespace *ns, const char *weight_version,
                            const l3_executor_config *config, l3_clock clock, l3_executor **out,
                            l3_error *err)
{
    return l3_executor_start_regions(store, &host, 1, layout, ns, weight_version, config, clock, out, err);
}

l3_status l3_executor_start_regions(l3_store *store, const l3_host_buffer *regions, size_t n,
                                    const l3_host_layout *layout, const l3_namespace *ns,
                                    const char *weight_version, const l3_executor_config *config,
                                    l3_clock clock, l3_executor **out, l3_error *err)
{
    l3_status st;
    *out = NULL;
    if (!store || !store->ops)
        return l3_fail(err, L3_EINVAL, "the store is NULL");
    if (!ns || !ns->deployment_id)
        return l3_fail(err, L3_EINVAL, "the namespace has no deployment id");
    if ((st = l3_layout_validate(layout, err)) != L3_OK)
        return st;
    if ((st = l3_executor_config_validate(config, err)) != L3_OK)
        return st;
    l3_host_buffer host;
    if ((st = check_regions(regions, n, layout, &host, err)) != L3_OK)
        return st;
    if (!clock.now)
        return l3_fail(err, L3_EINVAL, "the clock is NULL");
    char prefix[L3_KEY_PREFIX_LEN + 1];
    if ((st = namespace_prefix(ns->deployment_id, ns->has_draft, weight_version, prefix, err)) != L3_OK)
        return st;

    l3_executor *e = calloc(1, sizeof *e);
    if (!e)
        return l3_fail(err, L3_ENOMEM, "allocating the executor");
    e->store = store;
    e->host = host;
    memcpy(e->regions, regions, n * sizeof *regions);
    e->num_regions = n;
    e->layout = *layout;
    e->has_draft = ns->has_draft;
    e->config = *config;
    e->clock = clock;
    memcpy(e->prefix, prefix, sizeof prefix);
    l3_health_init(&e->health, config->failure_threshold, config->recovery_interval, clock);
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->prefix_mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->exited, &attr);
    pthread_cond_init(&e->finished, &attr);
    pthread_condattr_destroy(&attr);
    size_t workers = config->query_workers + config->read_workers + config->write_workers;
    bool ok = true;
    for (int k = 0; k < NUM_KINDS; k++) {
        pthread_cond_init(&e->work[k], NULL);
        e->queues[k].cap = config->max_operations;
        e->queues[k].ids = calloc(config->max_operations, sizeof(uint64_t));
        ok = ok && e->queues[k].ids;
    }
    e->deployment_id = strdup(ns->deployment_id);
    e->jobs = calloc(config->max_operations, sizeof *e->jobs);
    e->results = calloc(config->max_operations, sizeof *e->results);
    e->threads = calloc(workers, sizeof *e->threads);
    e->args = calloc(workers, sizeof *e->args);
    if (!ok || !e->deployment_id || !e->jobs || !e->results || !e->threads || !e->args) {
        executor_free_parts(e);
        return l3_fail(err, L3_ENOMEM, "allocating the executor");
    }
    const size_t counts[NUM_KINDS] = { config->query_workers, config->read_workers,
                                       config->write_workers };
    e->running_workers = workers;
    for (int k = 0; k < NUM_KINDS; k++) {
        for (size_t i = 0; i < counts[k]; i++) {
            worker_arg *arg = &e->args[e->num_threads];
            *arg = (worker_arg){ .executor = e, .kind = k };
            int rc = pthread_create(&e->threads[e->num_threads], NULL, work, arg);
            if (rc != 0) {
                pthread_mutex_lock(&e->mu);
                e->running_workers = e->num_threads;
                pthread_mutex_unlock(&e->mu);
                stop_and_join(e);
                executor_free_parts(e);
                return l3_fail(err, L3_ENOMEM, "spawning an L3 worker: %s", strerror(rc));
            }
            char name[16];
            snprintf(name, sizeof name, "l3-%s-%u", kind_names[k], (unsigned)(i % 1000));
            pthread_setname_np(e->threads[e->num_threads], name);
            e->num_threads++;
        }
    }
    l3_error rerr;
    if (l3_store_register_hosts(store, regions, n, &rerr) != L3_OK)
        l3_log("warning", "registering the Host pool with the store: %s", rerr.msg);
    *out = e;
    return L3_OK;
}

l3_executor_config l3_executor_get_config(const l3_executor *e) { return e->config; }

void l3_executor_key_prefix(l3_executor *e, char out[L3_KEY_PREFIX_LEN + 1])
{
    pthread_mutex_lock(&e->prefix_mu);
    memcpy(out, e->prefix, L3_KEY_PREFIX_LEN + 1);
    pthread_mutex_unlock(&e->prefix_mu);
}

static l3_status key_of(l3_executor *e, const char *prefix, const l3_storage_key *key, char *out,
                        size_t out_size, l3_error *err)
{
    uint32_t rank;
    l3_status st = l3_layout_key_rank(&e->layout, key->group, &rank, err);
    if (st != L3_OK)
        return st;
    if (!key->content_hash)
        return l3_fail(err, L3_EINVAL, "invalid L3 job: a key has no content hash");
    return l3_object_key(prefix, key->content_hash, key->group, key->page_offset, rank, out,
                         out_size, err);
}

l3_status l3_executor_object_key(l3_executor *e, const l3_storage_key *key, char *out,
                                 size_t out_size, l3_error *err)
{
    char prefix[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, prefix);
    return key_of(e, prefix, key, out, out_size, err);
}

/* Freeze the operation's object names and this rank's Host ranges. */
static l3_status build_job(l3_executor *e, const l3_operation *op, int kind, job **out,
                           l3_error *err)
{
    *out = NULL;
    if (kind != KIND_QUERY && op->num_keys != op->num_host_blocks)
        return l3_fail(err, L3_EINVAL, "invalid L3 job: a Host block per key");
    if (op->num_keys && !op->keys)
        return l3_fail(err, L3_EINVAL, "invalid L3 job: its keys are NULL");
    if (kind != KIND_QUERY && op->num_keys && !op->host_blocks)
        return l3_fail(err, L3_EINVAL, "invalid L3 job: its Host blocks are NULL");
    job *j = calloc(1, sizeof *j);
    if (!j)
        return l3_fail(err, L3_ENOMEM, "allocating a job");
    j->op_id = op->op_id;
    j->kind = kind;
    j->num_keys = op->num_keys;
    size_t n = op->num_keys ? op->num_keys : 1;
    j->keys = calloc(n, sizeof *j->keys);
    j->ranges = calloc(n, sizeof *j->ranges);
    j->has_range = calloc(n, 1);
    size_t *offsets = calloc(n, sizeof *offsets);
    l3_status st = L3_OK;
    if (!j->keys || !j->ranges || !j->has_range || !offsets) {
        st = l3_fail(err, L3_ENOMEM, "allocating a job");
        goto fail;
    }
    if (kind != KIND_QUERY) {
        for (size_t i = 0; i < op->num_keys; i++) {
            st = l3_layout_owned_range(&e->layout, op->keys[i].group, op->host_blocks[i],
                                       &j->has_range[i], &j->ranges[i], err);
            if (st != L3_OK)
                goto fail;
            if (j->has_range[i]) /* from its region to the span the store is given */
                j->ranges[i].offset += (uint64_t)(e->regions[e->layout.groups[op->keys[i].group].region].base -
                                                  e->host.base);
            if (j->has_range[i])
                j->num_bytes += j->ranges[i].size;
        }
    }
    char prefix[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(e, prefix);
    size_t used = 0, cap = 0;
    char key[L3_OBJECT_KEY_MAX + 1];
    for (size_t i = 0; i < op->num_keys; i++) {
        st = key_of(e, prefix, &op->keys[i], key, sizeof key, err);
        if (st != L3_OK)
            goto fail;
        size_t len = strlen(key) + 1;
        if (used + len > cap) {
            size_t ncap = cap ? cap * 2 : 128 * n;
            while (ncap < used + len)
                ncap *= 2;
            char *arena = realloc(j->key_arena, ncap);
            if (!arena) {
                st = l3_fail(err, L3_ENOMEM, "allocating a job");
                goto fail;
            }
            j->key_arena = arena;
            cap = ncap;
        }
        memcpy(j->key_arena + used, key, len);
        offsets[i] = used;
        used += len;
    }
    for (size_t i = 0; i < op->num_keys; i++)
        j->keys[i] = j->key_arena + offsets[i];
    free(offsets);
    *out = j;
    return L3_OK;
fail:
    free(offsets);
    job_free(j);
    return st;
}

l3_status l3_executor_submit(l3_executor *e, const l3_operation *ops, size_t n, l3_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const l3_operation *op = &ops[i];
        int kind;
        switch (op->kind) {
        case L3_OP_CANCEL:
            cancel(e, op->op_id);
            continue;
        case L3_OP_QUERY: kind = KIND_QUERY; break;
        case L3_OP_GET: kind = KIND_GET; break;
        case L3_OP_PUT: kind = KIND_PUT; break;
        default:
            return l3_fail(err, L3_EINVAL, "invalid L3 job: unknown operation kind %d", (int)op->kind);
        }
        job *j;
        l3_status st = build_job(e, op, kind, &j, err);
        if (st == L3_OK)
            st = submit_job(e, j, err);
        if (st != L3_OK)
            return st;
    }
    return L3_OK;
}

l3_status l3_executor_poll(l3_executor *e, l3_poll *out, l3_error *err)
{
    *out = (l3_poll){ 0 };
    pthread_mutex_lock(&e->mu);
    if (e->results_len) {
        out->completions = malloc(e->results_len * sizeof *out->completions);
        if (!out->completions) {
            pthread_mutex_unlock(&e->mu);
            return l3_fail(err, L3_ENOMEM, "allocating a poll");
        }
    }
    while (e->results_len) {
        l3_completion *c = &e->results[e->results_head];
        out->completions[out->num_completions++] = *c;
        e->results_head = (e->results_head + 1) % e->config.max_operations;
        e->results_len--;
        job_state *js = find_job(e, c->op_id);
        if (js) {
            L3_ASSERT(js->completed && e->num_jobs > 0);
            job *done = js->job;
            memset(js, 0, sizeof *js);
            job_free(done);
            e->num_jobs--;
        }
    }
    double now = l3_clock_now(e->clock), oldest = now;
    for (size_t i = 0; i < e->config.max_operations; i++) {
        job_state *js = &e->jobs[i];
        if (!js->used || js->completed)
            continue;
        if (js->submitted_at < oldest)
            oldest = js->submitted_at;
        if (!js->started) {
            out->pressure.queued_operations++;
            out->pressure.queued_bytes += (int64_t)js->job->num_bytes;
        }
    }
    pthread_mutex_unlock(&e->mu);
    double age = (now - oldest) * 1e6;
    out->pressure.oldest_operation_us = age > 0 ? (int64_t)age : 0;
    out->now_us = (int64_t)(now * 1e6);
    return L3_OK;
}

/* CLOCK_MONOTONIC `timeout` seconds from now (condvars here use it). */
static struct timespec deadline_after(double timeout)
{
    struct timespec d;
    clock_gettime(CLOCK_MONOTONIC, &d);
    if (timeout > 0) {
        double whole = floor(timeout);
        d.tv_sec += (time_t)whole;
        d.tv_nsec += (long)((timeout - whole) * 1e9);
        if (d.tv_nsec >= 1000000000L) {
            d.tv_sec++;
            d.tv_nsec -= 1000000000L;
        }
    }
    return d;
}

bool l3_executor_wait(l3_executor *e, double timeout)
{
    struct timespec deadline = deadline_after(timeout);
    pthread_mutex_lock(&e->mu);
    while (e->results_len == 0)
        if (pthread_cond_timedwait(&e->finished, &e->mu, &deadline) == ETIMEDOUT)
            break;
    bool ready = e->results_len > 0;
    pthread_mutex_unlock(&e->mu);
    return ready;
}

void l3_poll_release(l3_poll *poll)
{
    for (size_t i = 0; i < poll->num_completions; i++) {
        free(poll->completions[i].success);
        free(poll->completions[i].object_failures);
    }
    free(poll->completions);
    *poll = (l3_poll){ 0 };
}

bool l3_executor_is_idle(l3_executor *e)
{
    pthread_mutex_lock(&e->mu);
    bool idle = e->num_jobs == 0 && !e->unsafe_io;
    pthread_mutex_unlock(&e->mu);
    return idle;
}

void l3_executor_snapshot(l3_executor *e, l3_snapshot *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&e->mu);
    for (int k = 0; k < NUM_KINDS; k++) {
        l3_operation_snapshot *row = &out->operations[k];
        const counters *c = &e->counters[k];
        row->kind = kind_names[k];
        for (int v = 0; v < L3_NUM_EVENTS; v++)
            row->events[v] = (double)c->events[v];
        row->success_keys = (double)c->success_keys;
        row->failed_keys = (double)c->failed_keys;
        row->success_bytes = (double)c->success_bytes;
        row->queue_seconds = c->queue_seconds;
        row->backend_seconds = c->backend_seconds;
    }
    for (size_t i = 0; i < e->config.max_operations; i++) {
        job_state *js = &e->jobs[i];
        if (!js->used)
            continue;
        int phase = js->completed ? 2 : js->started ? 1 : 0;
        l3_operation_snapshot *row = &out->operations[js->job->kind];
        row->operations[phase] += 1;
        row->bytes[phase] += (double)js->job->num_bytes;
    }
    pthread_mutex_unlock(&e->mu);
    out->health_state = l3_health_snapshot(&e->health, &out->health_epoch);
    pthread_mutex_lock(&e->mu);
    out->unsafe_io = e->unsafe_io;
    pthread_mutex_unlock(&e->mu);
}

double l3_snapshot_event(const l3_operation_snapshot *row, const char *name)
{
    for (int i = 0; i < L3_NUM_EVENTS; i++)
        if (strcmp(l3_event_names[i], name) == 0)
            return row->events[i];
    return NAN;
}

double l3_snapshot_phase(const double values[L3_NUM_PHASES], const char *name)
{
    for (int i = 0; i < L3_NUM_PHASES; i++)
        if (strcmp(l3_phase_names[i], name) == 0)
            return values[i];
    return NAN;
}

const l3_operation_snapshot *l3_snapshot_row(const l3_snapshot *snap, const char *kind)
{
    for (int k = 0; k < NUM_KINDS; k++)
        if (strcmp(snap->operations[k].kind, kind) == 0)
            return &snap->operations[k];
    return NULL;
}

l3_status l3_executor_set_weight_version(l3_executor *e, const char *weight_version, l3_error *err)
{
    if (!l3_executor_is_idle(e))
        return l3_fail(err, L3_EBUSY, "L3 operations must retire before the namespace changes");
    char prefix[L3_KEY_PREFIX_LEN + 1];
    l3_status st = namespace_prefix(e->deployment_id, e->has_draft, weight_version, prefix, err);
    if (st != L3_OK)
        return st;
    pthread_mutex_lock(&e->prefix_mu);
    memcpy(e->prefix, prefix, sizeof prefix);
    pthread_mutex_unlock(&e->prefix_mu);
    return L3_OK;
}

bool l3_executor_delete_namespace(l3_executor *e)
{
    if (!l3_executor_is_idle(e))
        return false;
    char ns[L3_KEY_PREFIX_LEN + 1], prefix[L3_KEY_PREFIX_LEN + 2];
    l3_executor_key_prefix(e, ns);
    snprintf(prefix, sizeof prefix, "%s_", ns);
    return e->store->ops->remove_by_prefix(e->store, prefix);
}

l3_status l3_executor_close(l3_executor *e, double timeout, l3_error *err)
{
    if (e->closed)
        return L3_OK;
    e->closed = true;
    struct timespec deadline = deadline_after(timeout);
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    for (int k = 0; k < NUM_KINDS; k++)
        pthread_cond_broadcast(&e->work[k]);
    while (e->running_workers > 0) {
        if (pthread_cond_timedwait(&e->exited, &e->mu, &deadline) == ETIMEDOUT)
            break;
    }
    bool retired = e->running_workers == 0 && !e->unsafe_io;
    pthread_mutex_unlock(&e->mu);
    if (!retired) {
        /* Only process exit releases an unretired native transport: the
         * store, and with it the registration of the pool, stay. */
        for (size_t i = 0; i < e->num_threads; i++)
            pthread_detach(e->threads[i]);
        e->num_threads = 0;
        pthread_mutex_lock(&leaked_mu);
        e->next_leaked = leaked;
        leaked = e;
        pthread_mutex_unlock(&leaked_mu);
        return l3_fail(err, L3_EUNRETIRED,
                       "L3 I/O retirement is unproven; the Host pool is retained; restart required");
    }
    for (size_t i = 0; i < e->num_threads; i++)
        pthread_join(e->threads[i], NULL);
    e->num_threads = 0;
    l3_store_register_hosts(e->store, NULL, 0, NULL);
    e->store->ops->close(e->store);
    return L3_OK;
}

void l3_executor_free(l3_executor *e)
{
    if (!e)
        return;
    if (!e->closed) {
        l3_error err;
        if (l3_executor_close(e, 5.0, &err) != L3_OK) {
            l3_log("error", "closing the L3 executor: %s", err.msg);
            return;
        }
    }
    pthread_mutex_lock(&leaked_mu);
    for (l3_executor *l = leaked; l; l = l->next_leaked)
        if (l == e) {
            pthread_mutex_unlock(&leaked_mu);
            return;
        }
    pthread_mutex_unlock(&leaked_mu);
    l3_store *store = e->store;
    executor_free_parts(e);
    if (store->ops->destroy)
        store->ops->destroy(store);
}

l3_health *l3_executor_health(l3_executor *e) { return &e->health; }
