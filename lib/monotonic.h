/* l3cache: CLOCK_MONOTONIC in nanoseconds, one clock for every process
 * (internal; not installed): leases, decisions and budgets in the shared
 * mapping are stamped with it. */
#ifndef L3_MONOTONIC_H
#define L3_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline uint64_t l3_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC `seconds` from now (0 or less: now): a deadline for
 * pthread_cond_timedwait on a condition variable of that clock. */
static inline struct timespec l3_deadline_after(double seconds)
{
    struct timespec d;
    clock_gettime(CLOCK_MONOTONIC, &d);
    if (seconds > 0) {
        time_t whole = (time_t)seconds;
        d.tv_sec += whole;
        d.tv_nsec += (long)((seconds - (double)whole) * 1e9);
        if (d.tv_nsec >= 1000000000L) {
            d.tv_sec++;
            d.tv_nsec -= 1000000000L;
        }
    }
    return d;
}

#endif
