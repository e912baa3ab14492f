/* The executor's workers (worker.h): each takes its kind's next queued
 * job, runs it outside the state lock (run.h) and finishes it. */
#include "worker.h"
#include "completion.h"
#include "invariant.h"
#include "jobs.h"
#include "run.h"

/* A finish that owes a poll a wake-up: the lock released for it (the
 * woken poll does not then block on it), and taken back. */
static void wake_outside(l3_executor *e)
{
    if (e->wake_waiters) {
        l3_exec_unlock(e);
        pthread_mutex_lock(&e->mu);
    }
}

void *l3_exec_worker(void *arg)
{
    l3_executor *e = ((worker_arg *)arg)->executor;
    int kind = ((worker_arg *)arg)->kind;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        uint64_t op_id;
        while (!l3_exec_queue_pop(&e->queues[kind], &op_id)) {
            if (e->stopping) {
                L3_ASSERT(e->running_workers > 0);
                e->running_workers--;
                pthread_cond_broadcast(&e->exited);
                pthread_mutex_unlock(&e->mu);
                return NULL;
            }
            pthread_cond_wait(&e->work[kind], &e->mu);
        }
        job_state *js = l3_exec_job_find(e, op_id);
        if (!js || js->completed)
            continue;
        job *j = js->job;
        if (js->cancelled || e->stopping || e->unsafe_io) {
            e->counters[kind].events[EV_REJECTED]++;
            l3_exec_finish_rejected(e, op_id, j->num_keys);
            wake_outside(e);
            continue;
        }
        double now = l3_clock_now(e->clock);
        e->counters[kind].queue_seconds += now - js->submitted_at;
        js->started = true;
        pthread_mutex_unlock(&e->mu);
        facts result = l3_exec_run(e, j);
        pthread_mutex_lock(&e->mu);
        if (!result.success) {
            l3_log("error", "out of memory finishing L3 operation %llu", (unsigned long long)op_id);
            continue;
        }
        l3_exec_finish(e, op_id, result);
        wake_outside(e);
    }
}
