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

#endif
