/* The executor's start and close (l3_executor.h): the config checked, the
 * state built, the workers started, the Host regions registered with the
 * store; close stops the workers and releases the store, or, when
 * retirement is unproven, keeps the executor for the rest of the process. */
#include "completion.h"
#include "exec_internal.h"
#include "invariant.h"
#include "jobs.h"
#include "monotonic.h"
#include "namespace.h"
#include "worker.h"
#include "driver.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

/* Executors whose close could not prove retirement: kept reachable for the
 * rest of the process, as their workers may still use them. */
static pthread_mutex_t leaked_mu = PTHREAD_MUTEX_INITIALIZER;
static l3_executor *leaked;

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

static void executor_free_parts(l3_executor *e)
{
    for (int k = 0; k < NUM_KINDS; k++) {
        free(e->queues[k].ids);
        pthread_cond_destroy(&e->work[k]);
    }
    if (e->jobs)
        for (size_t i = 0; i < e->config.max_operations; i++)
            if (e->jobs[i].used)
                l3_exec_job_free(e->jobs[i].job);
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
    for (int k = 0; k < NUM_KINDS; k++)
        if (e->drive_fd[k] >= 0)
            close(e->drive_fd[k]);
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
    pthread_mutex_unlock(&e->mu);
    for (int k = 0; k < NUM_KINDS; k++)
        l3_exec_kick(e, k, true);
    for (size_t i = 0; i < e->num_threads; i++)
        pthread_join(e->threads[i], NULL);
    e->num_threads = 0;
}

/* Start counts[k] threads of each kind (a kind's driver alone where it
 * drives them), named; 0, or the error that stopped it. */
static int spawn(l3_executor *e, const size_t counts[NUM_KINDS])
{
    for (int k = 0; k < NUM_KINDS; k++) {
        for (size_t i = 0; i < counts[k]; i++) {
            worker_arg *arg = &e->args[e->num_threads];
            *arg = (worker_arg){ .executor = e, .kind = k };
            bool drives = e->drive_fd[k] >= 0;
            pthread_t *t = &e->threads[e->num_threads];
            int rc = drives ? pthread_create(t, NULL, l3_exec_driver, arg) : pthread_create(t, NULL, l3_exec_worker, arg);
            if (rc != 0)
                return rc;
            char name[16];
            snprintf(name, sizeof name, "l3-%s%s-%u", drives ? "drive-" : "", l3_exec_kind_names[k],
                     (unsigned)(i % 1000));
            pthread_setname_np(*t, name);
            e->num_threads++;
        }
    }
    return 0;
}

/* A driver for `kind` where `driven` (the store runs it in three calls,
 * and the config does not ask for a thread per operation): its eventfd. */
static void open_driver(l3_executor *e, int kind, bool driven)
{
    e->drive_fd[kind] = driven ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
    if (driven && e->drive_fd[kind] < 0)
        l3_log("warning", "eventfd for the %s driver: %s; %ss run on a thread each", l3_exec_kind_names[kind],
               strerror(errno), l3_exec_kind_names[kind]);
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
    st = l3_exec_namespace_prefix(ns->deployment_id, ns->has_draft, weight_version, prefix, err);
    if (st != L3_OK)
        return st;

    l3_executor *e = calloc(1, sizeof *e);
    if (!e)
        return l3_fail(err, L3_ENOMEM, "allocating the executor");
    for (int k = 0; k < NUM_KINDS; k++)
        e->drive_fd[k] = -1;
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
    const l3_store_ops *ops = store->ops;
    open_driver(e, KIND_GET, ops->get_begin && ops->get_poll && ops->get_end && !config->gets_on_workers);
    open_driver(e, KIND_PUT, ops->put_begin && ops->put_poll && ops->put_end && !config->puts_on_workers);
    size_t readers = e->drive_fd[KIND_GET] >= 0 ? 1 : config->read_workers;
    size_t writers = e->drive_fd[KIND_PUT] >= 0 ? 1 : config->write_workers;
    size_t workers = config->query_workers + readers + writers;
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
    const size_t counts[NUM_KINDS] = { config->query_workers, readers, writers };
    l3_error rerr; /* (before the drivers start: they register it on their rings as they do) */
    if (l3_store_register_hosts(store, regions, n, &rerr) != L3_OK)
        l3_log("warning", "registering the Host pool with the store: %s", rerr.msg);
    e->running_workers = workers;
    e->drivers_preparing = (e->drive_fd[KIND_GET] >= 0) + (e->drive_fd[KIND_PUT] >= 0);
    int rc = spawn(e, counts);
    if (rc != 0) {
        pthread_mutex_lock(&e->mu);
        e->running_workers = e->num_threads;
        pthread_mutex_unlock(&e->mu);
        stop_and_join(e);
        l3_store_register_hosts(store, NULL, 0, NULL);
        executor_free_parts(e);
        return l3_fail(err, L3_ENOMEM, "spawning an L3 worker: %s", strerror(rc));
    }
    pthread_mutex_lock(&e->mu); /* (its first operations then pay for no ring's making) */
    while (e->drivers_preparing > 0)
        pthread_cond_wait(&e->exited, &e->mu);
    pthread_mutex_unlock(&e->mu);
    *out = e;
    return L3_OK;
}

l3_executor_config l3_executor_get_config(const l3_executor *e) { return e->config; }

l3_status l3_executor_close(l3_executor *e, double timeout, l3_error *err)
{
    if (e->closed)
        return L3_OK;
    e->closed = true;
    struct timespec deadline = l3_deadline_after(timeout);
    pthread_mutex_lock(&e->mu);
    e->stopping = true;
    pthread_mutex_unlock(&e->mu);
    for (int k = 0; k < NUM_KINDS; k++)
        l3_exec_kick(e, k, true);
    pthread_mutex_lock(&e->mu);
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
