/* l3cache: fault injection into the I/O engine, for tests (internal to
 * the library; not installed). A test installs a fault (io_types.h)
 * through the store (store/slab/slabstore.h); the backends ask, at each request's first submission, whether
 * it is hit. Nothing here runs unless a fault is installed (the backends'
 * check in backend.h costs one relaxed atomic load). */
#ifndef L3_FAULT_H
#define L3_FAULT_H

#include "io_types.h"

/* Install (or with NULL, remove) a fault (io_types.h); resets its counters.
 * With none installed, submissions never look at the fault state. */
void l3_io_engine_set_fault(l3_io_engine *engine, const l3_io_fault *fault);

/* Whether the next synchronous metadata write of the store to device
 * `dev` is to fail (an installed L3_FAULT_EIO with ops 3, or aimed at that
 * device with ops 0: a dead device); free when no fault is installed. */
bool l3_io_engine_meta_fault(l3_io_engine *engine, unsigned dev);

/* Whether a fault is installed (tests). */
bool l3_io_engine_fault_on(l3_io_engine *engine);

/* Requests a fault was applied to so far. */
uint64_t l3_io_engine_faults(l3_io_engine *engine);

/* The fault to apply to a request at its first submission (the backends,
 * through l3_io_fault_check in backend.h). */
l3_fault_kind l3_io_fault_decide(l3_io_engine *e, const l3_io_req *r);

/* How many microseconds a request L3_FAULT_DELAY hit waits before its
 * submission (the installed fault's shift; 0 once it is removed). The
 * backends hold it back that long while the requests before it go on. */
uint64_t l3_io_fault_delay(l3_io_engine *e);

/* Whether this wait for completions is to fail (L3_FAULT_WAIT_ERROR). */
bool l3_io_fault_wait(l3_io_engine *e);

/* Release what fault injection holds (the engine's close). */
void l3_io_fault_free(l3_io_engine *e);

#endif
