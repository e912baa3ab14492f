/* The executor's completions (completion.h): a finished job's facts
 * counted and queued, polls that take them and free their jobs, a wait for
 * one, and whether anything is in flight. */
#include "completion.h"
#include "invariant.h"
#include "jobs.h"
#include "monotonic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool l3_exec_facts_alloc(facts *f, size_t n, bool success)
{
    f->success = malloc(n ? n : 1);
    f->object_failures = calloc(n ? n : 1, 1);
    f->retired = true;
    f->breaker_refused = false;
    f->backend_seconds = 0;
    if (!f->success || !f->object_failures) {
        free(f->success);
        free(f->object_failures);
        return false;
    }
    memset(f->success, success, n ? n : 1);
    return true;
}

void l3_exec_finish(l3_executor *e, uint64_t op_id, facts result)
{
    double now = l3_clock_now(e->clock);
    job_state *js = l3_exec_job_find(e, op_id);
    if (!js) {
        free(result.success);
        free(result.object_failures);
        return;
    }
    js->completed = true;
    job *j = js->job;
    counters *c = &e->counters[j->kind];
    c->events[EV_COMPLETED]++;
    c->events[EV_REJECTED] += result.breaker_refused;
    c->backend_seconds += result.backend_seconds;
    for (size_t i = 0; i < j->num_keys; i++) {
        if (!l3_exec_is_local(j, i))
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
    e->wake_waiters |= e->waiters > 0;
    *out = (l3_completion){ .op_id = op_id, .num_keys = j->num_keys, .success = result.success,
                            .object_failures = result.object_failures, .retired = result.retired };
}

void l3_exec_finish_rejected(l3_executor *e, uint64_t op_id, size_t keys)
{
    facts f;
    if (!l3_exec_facts_alloc(&f, keys, false)) {
        /* Out of memory: the completion cannot be built; keep the job's
         * slot so that the scheduler sees the operation stuck rather than
         * a fabricated fact, and say so. */
        l3_log("error", "out of memory completing L3 operation %llu", (unsigned long long)op_id);
        return;
    }
    l3_exec_finish(e, op_id, f);
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
        job_state *js = l3_exec_job_find(e, c->op_id);
        if (js) {
            L3_ASSERT(js->completed && e->num_jobs > 0);
            job *done = js->job;
            memset(js, 0, sizeof *js);
            l3_exec_job_free(done);
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

void l3_exec_unlock(l3_executor *e)
{
    bool wake = e->wake_waiters;
    e->wake_waiters = false;
    pthread_mutex_unlock(&e->mu);
    if (wake)
        pthread_cond_broadcast(&e->finished);
}

bool l3_executor_wait(l3_executor *e, double timeout)
{
    struct timespec deadline = l3_deadline_after(timeout);
    pthread_mutex_lock(&e->mu);
    e->waiters++;
    while (e->results_len == 0)
        if (pthread_cond_timedwait(&e->finished, &e->mu, &deadline) == ETIMEDOUT)
            break;
    e->waiters--;
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
