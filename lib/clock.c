#include "l3_clock.h"

#include <pthread.h>
#include <time.h>

double l3_monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double start_seconds;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;

static void read_start(void) { start_seconds = l3_monotonic_seconds(); }

static double monotonic_now(void *ctx)
{
    (void)ctx;
    pthread_once(&start_once, read_start);
    return l3_monotonic_seconds() - start_seconds;
}

l3_clock l3_monotonic_clock(void)
{
    pthread_once(&start_once, read_start);
    return (l3_clock){ .now = monotonic_now, .ctx = 0 };
}
