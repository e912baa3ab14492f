/* Submission (l3_executor.h): an operation frozen into a job (its object
 * names under the current namespace, this rank's Host ranges), given a
 * slot and queued for its kind's workers, or completed at once as
 * rejected; a cancel. */
#include "completion.h"
#include "jobs.h"
#include "namespace.h"
#include "invariant.h"

#include <stdlib.h>
#include <string.h>

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
        st = l3_exec_key_of(e, prefix, &op->keys[i], key, sizeof key, err);
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
    l3_exec_job_free(j);
    return st;
}

static l3_status submit_job(l3_executor *e, job *j, l3_error *err)
{
    if (j->num_keys == 0 || j->num_keys > e->config.max_keys_per_operation) {
        l3_exec_job_free(j);
        return l3_fail(err, L3_EINVAL, "invalid L3 job: its key count");
    }
    pthread_mutex_lock(&e->mu);
    if (j->op_id <= e->last_submitted) {
        pthread_mutex_unlock(&e->mu);
        l3_exec_job_free(j);
        return l3_fail(err, L3_EINVAL, "invalid L3 job: its operation id does not increase");
    }
    e->last_submitted = j->op_id;
    if (e->num_jobs >= e->config.max_operations) {
        /* The scheduler bounds every accepted operation: exceeding it is a
         * protocol fault, not a completion to drop silently. */
        pthread_mutex_unlock(&e->mu);
        l3_exec_job_free(j);
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
        l3_exec_finish_rejected(e, op_id, num_keys);
        l3_exec_unlock(e);
        return L3_OK;
    }
    l3_exec_queue_push(&e->queues[kind], op_id);
    pthread_mutex_unlock(&e->mu);
    l3_exec_kick(e, kind, false);
    return L3_OK;
}

static void cancel(l3_executor *e, uint64_t op_id)
{
    pthread_mutex_lock(&e->mu);
    job_state *js = l3_exec_job_find(e, op_id);
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
            l3_exec_finish_rejected(e, op_id, js->job->num_keys);
        }
    }
    l3_exec_unlock(e);
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
