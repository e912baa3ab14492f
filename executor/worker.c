/* The executor's workers (worker.h): each takes its kind's next queued
 * job, runs it outside the state lock (run.h) and finishes it. */
#include "worker.h"
#include "completion.h"
#include "invariant.h"
#include "jobs.h"
#include "run.h"

void l3_exec_wake_outside(l3_executor *e)
{
    if (e->wake_waiters) {
        l3_exec_unlock(e);
        pthread_mutex_lock(&e->mu);
    }
}

job *l3_exec_take(l3_executor *e, int kind, uint64_t *op_id)
{
    while (l3_exec_queue_pop(&e->queues[kind], op_id)) {
        job_state *js = l3_exec_job_find(e, *op_id);
        if (!js || js->completed)
            continue;
        job *j = js->job;
        if (js->cancelled || e->stopping || e->unsafe_io) {
            e->counters[kind].events[EV_REJECTED]++;
            l3_exec_finish_rejected(e, *op_id, j->num_keys);
            l3_exec_wake_outside(e);
            continue;
        }
        e->counters[kind].queue_seconds += l3_clock_now(e->clock) - js->submitted_at;
        js->started = true;
        return j;
    }
    return NULL;
}

void l3_exec_worker_exit(l3_executor *e)
{
    L3_ASSERT(e->running_workers > 0);
    e->running_workers--;
    pthread_cond_broadcast(&e->exited);
    pthread_mutex_unlock(&e->mu);
}

void *l3_exec_worker(void *arg)
{
    l3_executor *e = ((worker_arg *)arg)->executor;
    int kind = ((worker_arg *)arg)->kind;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        uint64_t op_id;
        job *j;
        while (!(j = l3_exec_take(e, kind, &op_id))) {
            if (e->stopping) {
                l3_exec_worker_exit(e);
                return NULL;
            }
            pthread_cond_wait(&e->work[kind], &e->mu);
        }
        pthread_mutex_unlock(&e->mu);
        facts result = l3_exec_run(e, j);
        pthread_mutex_lock(&e->mu);
        if (!result.success) {
            l3_log("error", "out of memory finishing L3 operation %llu", (unsigned long long)op_id);
            continue;
        }
        l3_exec_finish(e, op_id, result);
        l3_exec_wake_outside(e);
    }
}
