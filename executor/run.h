/* l3cache: one operation's I/O (internal; not installed): a job's keys
 * with native work on this rank, run as one batch call of the store
 * through the executor's circuit breaker, outside the state lock. */
#ifndef L3_EXEC_RUN_H
#define L3_EXEC_RUN_H

#include "completion.h"

/* Run `j` against the store, outside the state lock: its facts (keys
 * without native work here are neutral successes). The breaker refusing
 * the call fails every key, retired; a call that fails, or a get or put
 * that does not retire, counts against the backend. Out of memory for
 * the facts: their arrays are NULL. */
facts l3_exec_run(l3_executor *e, const job *j);

#endif
