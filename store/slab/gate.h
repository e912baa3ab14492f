/* l3cache: the read-first gate (internal; not installed): gets are on an
 * engine's time to first token, puts are background copies, so while any
 * get of the store is in flight (in any process) at most one put wave at a
 * time has its I/O in flight; the others wait at the gate, holding no
 * lock. A driven wave keeps a window of its writes in flight
 * (l3_gate_write_window), and one that went in before a get holds the
 * rest while the get is in flight (put.c). Without gets, puts pass at the
 * cost of two atomic adds. A wave
 * never waits longer than L3_GATE_WAIT_MS in all: a count a dead process
 * left cannot stop puts (and the process's counts are given back when it
 * is found dead, l3_gate_release_proc).
 *
 * Over its state in the shared mapping (gate_state.h; this room is its one
 * writer); a waiting writer sleeps on a futex in the mapping, so a writer
 * of another process wakes it. */
#ifndef L3_GATE_H
#define L3_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "gate_state.h"

/* Put waves with I/O in flight at once while a get is in flight. */
#define L3_GATE_WRITES_UNDER_READS 1u
/* Write requests a put wave has in flight at once while a get is in
 * flight (a wave's requests are submitted this many at a time then). */
#define L3_GATE_REQUESTS_UNDER_READS 2u
/* Write requests the driven put waves of a store keep in flight, shared
 * among the waves in the gate, while no get is (each a window: one more as
 * one ends), so that a get that begins finds about this many ahead of it
 * in the device's queue. */
#define L3_GATE_REQUESTS_ALONE 32u
/* A wave's share of them at least: adjacent slots' writes sent together
 * merge into larger requests. */
#define L3_GATE_REQUESTS_A_WAVE 8u
/* The longest a put wave waits at the gate, in all. */
#define L3_GATE_WAIT_MS 100u

/* A get batch of process slot `me` begins its reads. */
void l3_gate_read_begin(l3_gate *g, int me);

/* That get batch has finished: wakes writers waiting when it was the last. */
void l3_gate_read_end(l3_gate *g, int me);

/* How many of `n` write requests a wave submits at once now: all of them,
 * or L3_GATE_REQUESTS_UNDER_READS while a get is in flight. */
static inline size_t l3_gate_write_step(l3_gate *g, size_t n)
{
    return atomic_load(&g->reads) && n > L3_GATE_REQUESTS_UNDER_READS ? L3_GATE_REQUESTS_UNDER_READS : n;
}

/* How many write requests a driven put wave keeps in flight now:
 * L3_GATE_REQUESTS_UNDER_READS while a get is in flight, else its share of
 * L3_GATE_REQUESTS_ALONE (at least L3_GATE_REQUESTS_A_WAVE). */
static inline size_t l3_gate_write_window(const l3_gate *g)
{
    uint32_t waves = atomic_load(&g->writes);
    size_t share = L3_GATE_REQUESTS_ALONE / (waves ? waves : 1u);
    if (atomic_load(&g->reads))
        return L3_GATE_REQUESTS_UNDER_READS;
    return share < L3_GATE_REQUESTS_A_WAVE ? L3_GATE_REQUESTS_A_WAVE : share;
}

/* A put wave of process slot `me` is about to write: waits while reads are
 * in flight and L3_GATE_WRITES_UNDER_READS waves are writing, then counts
 * it in. False when it went through only because it had waited
 * L3_GATE_WAIT_MS (a dead process's counts may hold the gate: the caller
 * reaps dead processes). */
bool l3_gate_write_begin(l3_gate *g, int me);

/* l3_gate_write_begin for a thread that never sleeps here: true once the
 * wave is counted in (*open: without waiting it out), false while it must
 * come back. *until is the wave's deadline (ms), 0 before its first try. */
bool l3_gate_write_try(l3_gate *g, int me, uint64_t *until, bool *open);

/* That put wave's I/O has ended: wakes a writer waiting for its turn. */
void l3_gate_write_end(l3_gate *g, int me);

/* Give back what dead process slot `p` had in flight. */
void l3_gate_release_proc(l3_gate *g, int p);

#endif
