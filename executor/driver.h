/* l3cache: the get driver (internal; not installed): one thread that owns
 * each get from the submission of its reads to its verified completion,
 * many at once, sleeping on one eventfd that the reads' completions and
 * newly queued gets signal. It takes the read workers' place when the
 * store runs gets in three calls (l3_store_ops.get_begin). */
#ifndef L3_EXEC_DRIVER_H
#define L3_EXEC_DRIVER_H

/* The driver, a pthread start routine over its executor (`arg`): it runs
 * up to read_workers queued gets at once, in queue order, until shutdown
 * drains the queue and its gets, then counts itself out of the workers. */
void *l3_exec_driver(void *arg);

#endif
