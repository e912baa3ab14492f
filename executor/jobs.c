/* The executor's jobs, their slots and the kinds' queues (jobs.h). */
#include "jobs.h"
#include "invariant.h"

#include <stdlib.h>
#include <sys/eventfd.h>

const char *const l3_exec_kind_names[NUM_KINDS] = { "query", "get", "put" };

void l3_exec_job_free(job *j)
{
    if (!j)
        return;
    free(j->keys);
    free(j->key_arena);
    free(j->ranges);
    free(j->has_range);
    free(j);
}

job_state *l3_exec_job_find(l3_executor *e, uint64_t op_id)
{
    for (size_t i = 0; i < e->config.max_operations; i++)
        if (e->jobs[i].used && e->jobs[i].job->op_id == op_id)
            return &e->jobs[i];
    return NULL;
}

void l3_exec_queue_push(id_ring *r, uint64_t id)
{
    L3_ASSERT(r->len < r->cap && r->head < r->cap);
    r->ids[(r->head + r->len) % r->cap] = id;
    r->len++;
}

bool l3_exec_queue_pop(id_ring *r, uint64_t *id)
{
    if (r->len == 0)
        return false;
    *id = r->ids[r->head];
    r->head = (r->head + 1) % r->cap;
    r->len--;
    return true;
}

void l3_exec_kick(l3_executor *e, int kind, bool all)
{
    if (all)
        pthread_cond_broadcast(&e->work[kind]);
    else
        pthread_cond_signal(&e->work[kind]);
    if (e->drive_fd[kind] >= 0 && atomic_load(&e->driver_asleep[kind]))
        (void)eventfd_write(e->drive_fd[kind], 1); /* (a full counter wakes it as well) */
}
