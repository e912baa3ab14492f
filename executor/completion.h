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

/* Facts of a finished job: arrays of the job's key count. */
typedef struct facts {
    bool *success;
    bool *object_failures;
    bool retired;
} facts;

/* Allocate `f`'s arrays for `n` keys (at least one byte each), every
 * success set to `success`, no object failure, retired; false when out
 * of memory (nothing is left allocated). */
bool l3_exec_facts_alloc(facts *f, size_t n, bool success);

/* Complete `op_id` with `result` (under the state lock); takes the arrays. */
void l3_exec_finish(l3_executor *e, uint64_t op_id, facts result);

/* A retired failure of every key: the job never ran (under the state
 * lock). Out of memory, the job keeps its slot with no completion, and
 * the error is logged. */
void l3_exec_finish_rejected(l3_executor *e, uint64_t op_id, size_t keys);

/* CLOCK_MONOTONIC `timeout` seconds from now (condvars here use it). */
struct timespec l3_exec_deadline_after(double timeout);

#endif
