/* l3cache: the drivers (internal; not installed): one thread per kind
 * (gets, puts) that owns each of its operations from the submission of its
 * I/O to its verified completion, many at once, sleeping on one eventfd
 * that the I/O's completions and newly queued operations signal. It takes
 * the kind's workers' place when the store runs that kind in three calls
 * (l3_store_ops.get_begin, put_begin). */
#ifndef L3_EXEC_DRIVER_H
#define L3_EXEC_DRIVER_H

/* A driver, a pthread start routine over its executor and kind (`arg`):
 * it runs up to read_workers queued gets (or write_workers puts) at once,
 * in queue order, until shutdown drains the queue and its operations, then
 * counts itself out of the workers. */
void *l3_exec_driver(void *arg);

#endif
