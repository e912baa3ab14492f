/* The executor's snapshot (l3_executor.h): each kind's counters and its
 * jobs by phase, the breaker's state, and lookups by name. */
#include "exec_internal.h"
#include "jobs.h"

#include <math.h>
#include <string.h>

const char *const l3_event_names[L3_NUM_EVENTS] = {
    "accepted", "backend_calls", "completed", "cancelled_queued",
    "cancelled_running", "rejected", "unretired",
};
const char *const l3_phase_names[L3_NUM_PHASES] = { "queued", "running", "completed" };

void l3_executor_snapshot(l3_executor *e, l3_snapshot *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&e->mu);
    for (int k = 0; k < NUM_KINDS; k++) {
        l3_operation_snapshot *row = &out->operations[k];
        const counters *c = &e->counters[k];
        row->kind = l3_exec_kind_names[k];
        for (int v = 0; v < L3_NUM_EVENTS; v++)
            row->events[v] = (double)c->events[v];
        row->events[EV_BACKEND_CALLS] = (double)atomic_load_explicit(&e->backend_calls[k], memory_order_relaxed);
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
    out->health_state = l3_health_snapshot(&e->health, &out->health_term);
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
