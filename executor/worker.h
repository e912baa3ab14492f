/* l3cache: the executor's workers (internal; not installed): threads
 * that each take their kind's queued jobs in order and run them; what
 * they share with the get driver (driver.h). */
#ifndef L3_EXEC_WORKER_H
#define L3_EXEC_WORKER_H

#include "exec_internal.h"

/* One worker of `arg`'s kind (a worker_arg: its executor and kind), a
 * pthread start routine: runs the queue's jobs (skipping the completed,
 * rejecting the cancelled and any while stopping or after unproven
 * retirement) until shutdown drains it, then counts itself out. */
void *l3_exec_worker(void *arg);

/* The next job of `kind`'s queue to run, its id into *op_id, marked
 * started and its queue time counted; NULL when the queue is empty. The
 * cancelled, and every one while stopping or after unproven retirement,
 * are rejected on the way. The state lock is held (and may be released
 * and taken back to wake a poll). */
job *l3_exec_take(l3_executor *e, int kind, uint64_t *op_id);

/* A finish that owes a poll a wake-up: the lock released for it (the
 * woken poll does not then block on it), and taken back. */
void l3_exec_wake_outside(l3_executor *e);

/* Count the calling thread out of the running workers and release the
 * state lock (held on entry). */
void l3_exec_worker_exit(l3_executor *e);

#endif
