/* l3cache: the read-first gate's shared state (internal; types only). Its
 * one writer is gate.c (ARCHITECTURE.md, "Who writes the shared state"). */
#ifndef L3_GATE_STATE_H
#define L3_GATE_STATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "procs_state.h"

/* Reads and background writes in flight in every process of a store, and
 * each process's share (given back when it dies). */
typedef struct l3_gate {
    _Atomic uint32_t reads;   /* get batches in flight */
    _Atomic uint32_t writes;  /* put waves with their I/O in flight */
    _Atomic uint32_t seq;     /* a futex word: moved on when either falls while a writer waits */
    _Atomic uint32_t waiters; /* writers waiting for the gate */
    _Atomic uint64_t waits;   /* put waves that waited for reads (stats) */
    _Atomic uint64_t forced;  /* of them, waves that went through after the longest wait */
    _Atomic uint32_t proc_reads[L3_MAX_PROCS];
    _Atomic uint32_t proc_writes[L3_MAX_PROCS];
} l3_gate;

#endif
