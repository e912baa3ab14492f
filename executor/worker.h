/* l3cache: the executor's workers (internal; not installed): threads
 * that each take their kind's queued jobs in order and run them. */
#ifndef L3_EXEC_WORKER_H
#define L3_EXEC_WORKER_H

/* One worker of `arg`'s kind (a worker_arg: its executor and kind), a
 * pthread start routine: runs the queue's jobs (skipping the completed,
 * rejecting the cancelled and any while stopping or after unproven
 * retirement) until shutdown drains it, then counts itself out. */
void *l3_exec_worker(void *arg);

#endif
