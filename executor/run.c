/* One operation's I/O (run.h): the store's batch call for this rank's
 * keys, through the circuit breaker, its result checked and its time counted. */
#include "run.h"
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

facts l3_exec_run(l3_executor *e, const job *j)
{
    size_t n = j->num_keys, num_local = 0;
    facts out;
    if (!l3_exec_facts_alloc(&out, n, true)) {
        out.success = out.object_failures = NULL;
        return out;
    }
    for (size_t i = 0; i < n; i++)
        num_local += l3_exec_is_local(j, i);
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
        if (!l3_exec_is_local(j, i))
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
        out.breaker_refused = true;
        memset(success, 0, num_local);
        memset(failures, 0, num_local);
        r.retired = true;
    } else {
        atomic_fetch_add_explicit(&e->backend_calls[j->kind], 1, memory_order_relaxed);
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
            l3_log("error", "L3 operation failed: kind=%s op_id=%llu: %s", l3_exec_kind_names[j->kind],
                   (unsigned long long)j->op_id, err.msg[0] ? err.msg : l3_status_name(st));
            l3_health_failure(&e->health, token);
            memset(success, 0, num_local);
            memset(failures, 0, num_local);
            r.retired = j->kind == KIND_QUERY || e->store->ops->failures_retire(e->store);
        }
        out.backend_seconds = l3_clock_now(e->clock) - started;
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
