/* l3cache: the executor's completions (internal; not installed): a
 * finished job's per-key facts counted and queued in the completion ring
 * (under the state lock), from which a poll takes them and frees their
 * jobs' slots; the deadlines its condition variables wait by. */
#ifndef L3_EXEC_COMPLETION_H
#define L3_EXEC_COMPLETION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "exec_internal.h"

/* Facts of a finished job: arrays of the job's key count, and what its
 * run met at the backend (counted when the job finishes, under the state
 * lock the finish holds anyway: no lock taken during the run; the calls
 * themselves are counted as they begin, in `backend_calls`). */
typedef struct facts {
    bool *success;
    bool *object_failures;
    bool retired;
    bool breaker_refused;  /* the circuit breaker refused the call */
    double backend_seconds; /* the call's time */
} facts;

/* Allocate `f`'s arrays for `n` keys (at least one byte each), every
 * success set to `success`, no object failure, retired; false when out
 * of memory (nothing is left allocated). */
bool l3_exec_facts_alloc(facts *f, size_t n, bool success);

/* Complete `op_id` with `result` (under the state lock); takes the arrays.
 * A poll waiting for it is woken by l3_exec_unlock, after the lock is
 * released (so that it does not wake only to block on the lock). */
void l3_exec_finish(l3_executor *e, uint64_t op_id, facts result);

/* Release the state lock, then wake the waits for a completion if a
 * finish asked for it while it was held. */
void l3_exec_unlock(l3_executor *e);

/* A retired failure of every key: the job never ran (under the state
 * lock). Out of memory, the job keeps its slot with no completion, and
 * the error is logged. */
void l3_exec_finish_rejected(l3_executor *e, uint64_t op_id, size_t keys);

#endif
