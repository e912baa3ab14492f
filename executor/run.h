/* l3cache: one operation's I/O (internal; not installed): a job's keys
 * with native work on this rank, run as one batch call of the store
 * through the executor's circuit breaker, outside the state lock; a get
 * or a put also as three calls, for the driver that runs many at once
 * (driver.h). */
#ifndef L3_EXEC_RUN_H
#define L3_EXEC_RUN_H

#include "completion.h"

/* One operation's call under way: its keys with native work here, their
 * result, the breaker's token, the store's job (a get begun), and its
 * facts once settled. */
typedef struct run_state {
    facts out;
    size_t num_local;
    const char **keys;
    l3_range *ranges;
    bool *success, *failures;
    size_t *pos;
    l3_io_result r;
    l3_health_token token;
    bool called;           /* the breaker let the call through */
    double started;
    l3_store_job *job;     /* a get begun (l3_exec_run_begin), or NULL */
    l3_store_put_job *put_job; /* a put begun, or NULL */
    l3_status st;
    l3_error err;
} run_state;

/* Run `j` against the store, outside the state lock: its facts (keys
 * without native work here are neutral successes). The breaker refusing
 * the call fails every key, retired; a call that fails, or a get or put
 * that does not retire, counts against the backend. Out of memory for
 * the facts: their arrays are NULL. */
facts l3_exec_run(l3_executor *e, const job *j);

/* Gather `j`'s keys and ask the breaker; false when rs->out is already
 * final (no native work here, or out of memory), else the call is due
 * (rs->called: the breaker let it through) and l3_exec_run_settle ends it. */
bool l3_exec_run_prepare(l3_executor *e, const job *j, run_state *rs);

/* The facts of a call that returned `st` with rs->r its result: the
 * breaker told, the result checked, its time counted, rs's arrays freed. */
facts l3_exec_run_settle(l3_executor *e, const job *j, run_state *rs, l3_status st);

/* A get or put job begun on the store (get_begin, put_begin), its I/O
 * signalling eventfd `notify_fd`; false when rs->out is already final
 * (as prepare). */
bool l3_exec_run_begin(l3_executor *e, const job *j, run_state *rs, int notify_fd);

/* Poll a begun job without sleeping: true once it is done, else *wake_by
 * is the latest time (monotonic seconds) to poll it again. */
bool l3_exec_run_poll(l3_executor *e, run_state *rs, double *wake_by);

/* The facts of a done job (its store job ended). */
facts l3_exec_run_end(l3_executor *e, const job *j, run_state *rs);

#endif
