/* l3cache: the executor's jobs (internal; not installed): a job's memory,
 * its slot in the table of max_operations slots, the kinds' FIFO queues of
 * operation ids, the kinds' names. Callers hold the state lock (mu) for
 * the table and the queues. */
#ifndef L3_EXEC_JOBS_H
#define L3_EXEC_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exec_internal.h"

/* The kinds' names, by KIND_*: "query", "get", "put". */
extern const char *const l3_exec_kind_names[NUM_KINDS];

/* Free a job and everything it holds (NULL does nothing). */
void l3_exec_job_free(job *j);

/* The slot of operation `op_id`, or NULL when none holds it. */
job_state *l3_exec_job_find(l3_executor *e, uint64_t op_id);

/* Whether key `i` of `j` has native work on this rank (a query's always
 * does; a get's or put's where this rank owns its Host range). */
static inline bool l3_exec_is_local(const job *j, size_t i)
{
    return j->kind == KIND_QUERY || j->has_range[i];
}

/* Queue an id; the caller has checked that the ring has room. */
void l3_exec_queue_push(id_ring *r, uint64_t id);

/* Wake `kind`'s workers (or all, `all`) after a job was queued or
 * shutdown began; a get driver asleep on its eventfd too. Called without
 * the state lock. */
void l3_exec_kick(l3_executor *e, int kind, bool all);

/* Take the oldest id into *id; false when the ring is empty. */
bool l3_exec_queue_pop(id_ring *r, uint64_t *id);

#endif
