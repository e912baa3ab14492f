/* l3cache: a monotonic clock in seconds that tests can replace. */
#ifndef L3_CLOCK_H
#define L3_CLOCK_H

/* A clock: `now(ctx)` returns monotonic seconds. */
typedef struct l3_clock {
    double (*now)(void *ctx);
    void *ctx;
} l3_clock;

/* The process's monotonic clock, in seconds since its first reading. */
l3_clock l3_monotonic_clock(void);

/* Read a clock. */
static inline double l3_clock_now(l3_clock clock) { return clock.now(clock.ctx); }

/* CLOCK_MONOTONIC in seconds (not relative); for deadlines and benchmarks. */
double l3_monotonic_seconds(void);

#endif
