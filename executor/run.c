/* One operation's I/O (run.h): the store's batch call for this rank's
 * keys, through the circuit breaker, its result checked and its time
 * counted; a get or a put in three calls for the driver (l3_exec_run_begin). */
#include "run.h"
#include "invariant.h"
#include "jobs.h"

#include <stdlib.h>
#include <string.h>

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

static void run_free(run_state *rs)
{
    free(rs->keys);
    free(rs->ranges);
    free(rs->success);
    free(rs->failures);
    free(rs->pos);
    rs->keys = NULL;
    rs->ranges = NULL;
    rs->success = rs->failures = NULL;
    rs->pos = NULL;
}

/* Gather the job's keys with native work here; false when there are none
 * or no memory (rs->out is then final, or its arrays NULL). */
static bool gather(const job *j, run_state *rs)
{
    size_t n = j->num_keys, num_local = 0;
    if (!l3_exec_facts_alloc(&rs->out, n, true)) {
        rs->out.success = rs->out.object_failures = NULL;
        return false;
    }
    for (size_t i = 0; i < n; i++)
        num_local += l3_exec_is_local(j, i);
    if (num_local == 0)
        return false; /* no native work on this owner: it neither probes the backend's health nor charges bytes */
    rs->keys = malloc(num_local * sizeof *rs->keys);
    rs->ranges = malloc(num_local * sizeof *rs->ranges);
    rs->success = calloc(num_local, 1);
    rs->failures = calloc(num_local, 1);
    rs->pos = malloc(num_local * sizeof *rs->pos);
    if (!rs->keys || !rs->ranges || !rs->success || !rs->failures || !rs->pos) {
        run_free(rs);
        l3_log("error", "out of memory running L3 operation %llu", (unsigned long long)j->op_id);
        memset(rs->out.success, 0, n);
        return false;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!l3_exec_is_local(j, i))
            continue;
        rs->pos[k] = i;
        rs->keys[k] = j->keys[i];
        if (j->kind != KIND_QUERY)
            rs->ranges[k] = j->ranges[i];
        k++;
    }
    rs->num_local = num_local;
    return true;
}

bool l3_exec_run_prepare(l3_executor *e, const job *j, run_state *rs)
{
    memset(rs, 0, sizeof *rs);
    l3_error_clear(&rs->err);
    if (!gather(j, rs))
        return false;
    rs->r = (l3_io_result){ .success = rs->success, .object_failures = rs->failures, .retired = true };
    if (!l3_health_begin(&e->health, &rs->token)) {
        rs->out.breaker_refused = true;
        return true; /* the call refused: settled with every key failed, retired */
    }
    rs->called = true;
    atomic_fetch_add_explicit(&e->backend_calls[j->kind], 1, memory_order_relaxed);
    rs->started = l3_clock_now(e->clock);
    return true;
}

facts l3_exec_run_settle(l3_executor *e, const job *j, run_state *rs, l3_status st)
{
    l3_io_result *r = &rs->r;
    size_t num_local = rs->num_local;
    if (!rs->called) {
        memset(rs->success, 0, num_local);
        memset(rs->failures, 0, num_local);
        r->retired = true;
    } else {
        if (j->kind == KIND_QUERY && st == L3_OK)
            r->success_len = r->object_failures_len = num_local;
        if (st == L3_OK && !result_valid(j->kind, r, num_local))
            st = l3_fail(&rs->err, L3_EINVAL, "malformed L3 result");
        if (st == L3_OK) {
            /* A retired failure is an object or capacity fact, never
             * backend unavailability. */
            if (j->kind == KIND_QUERY || r->retired)
                l3_health_success(&e->health, rs->token);
            else
                l3_health_failure(&e->health, rs->token);
        } else {
            l3_log("error", "L3 operation failed: kind=%s op_id=%llu: %s", l3_exec_kind_names[j->kind],
                   (unsigned long long)j->op_id, rs->err.msg[0] ? rs->err.msg : l3_status_name(st));
            l3_health_failure(&e->health, rs->token);
            memset(rs->success, 0, num_local);
            memset(rs->failures, 0, num_local);
            r->retired = j->kind == KIND_QUERY || e->store->ops->failures_retire(e->store);
        }
        rs->out.backend_seconds = l3_clock_now(e->clock) - rs->started;
    }
    /* Keys without native work here are neutral successes. */
    for (size_t k = 0; k < num_local; k++) {
        rs->out.success[rs->pos[k]] = rs->success[k];
        rs->out.object_failures[rs->pos[k]] = rs->failures[k];
    }
    rs->out.retired = r->retired;
    run_free(rs);
    return rs->out;
}

facts l3_exec_run(l3_executor *e, const job *j)
{
    run_state rs;
    if (!l3_exec_run_prepare(e, j, &rs))
        return rs.out;
    l3_status st = L3_OK;
    if (rs.called) {
        switch (j->kind) {
        case KIND_QUERY:
            st = e->store->ops->batch_exists(e->store, rs.keys, rs.num_local, rs.success, &rs.err);
            break;
        case KIND_GET:
            st = e->store->ops->batch_get_into(e->store, rs.keys, rs.num_local, e->host, rs.ranges, &rs.r,
                                               &rs.err);
            break;
        default:
            st = e->store->ops->batch_put_from(e->store, rs.keys, rs.num_local, e->host, rs.ranges, &rs.r,
                                               &rs.err);
            break;
        }
    }
    return l3_exec_run_settle(e, j, &rs, st);
}

bool l3_exec_run_begin(l3_executor *e, const job *j, run_state *rs, int notify_fd)
{
    L3_ASSERT(j->kind == KIND_GET || j->kind == KIND_PUT);
    if (!l3_exec_run_prepare(e, j, rs))
        return false;
    l3_store *st = e->store;
    if (rs->called && j->kind == KIND_GET) /* (no job, and rs->st L3_OK from prepare otherwise) */
        rs->st = st->ops->get_begin(st, rs->keys, rs->num_local, e->host, rs->ranges, &rs->r, notify_fd, &rs->job,
                                    &rs->err);
    else if (rs->called)
        rs->st = st->ops->put_begin(st, rs->keys, rs->num_local, e->host, rs->ranges, &rs->r, notify_fd,
                                    &rs->put_job, &rs->err);
    return true;
}

bool l3_exec_run_poll(l3_executor *e, run_state *rs, double *wake_by)
{
    *wake_by = 0;
    if (rs->job)
        return e->store->ops->get_poll(rs->job, wake_by);
    return !rs->put_job || e->store->ops->put_poll(rs->put_job, wake_by);
}

facts l3_exec_run_end(l3_executor *e, const job *j, run_state *rs)
{
    if (rs->job)
        rs->st = e->store->ops->get_end(rs->job, &rs->err);
    if (rs->put_job)
        rs->st = e->store->ops->put_end(rs->put_job, &rs->err);
    rs->job = NULL;
    rs->put_job = NULL;
    return l3_exec_run_settle(e, j, rs, rs->st);
}
