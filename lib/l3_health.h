/* l3cache: the backend's circuit breaker, with terms.
 *
 * After `threshold` failures it opens for the recovery interval, then
 * admits one probe whose outcome closes it again or reopens it. Reports
 * from an older term change nothing. */
#ifndef L3_HEALTH_H
#define L3_HEALTH_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "l3_clock.h"

/* A permission to call the backend, from one health term. */
typedef struct l3_health_token {
    uint64_t term;
    bool recovery;
} l3_health_token;

/* The breaker; initialise with l3_health_init. */
typedef struct l3_health {
    uint32_t threshold;
    double interval;
    l3_clock clock;
    pthread_mutex_t mu;
    uint64_t term;
    uint32_t failures;
    bool open;           /* unavailable_until is set */
    double unavailable_until;
    bool probe_inflight;
} l3_health;

/* Start a healthy breaker that opens after `threshold` failures for
 * `interval` seconds of `clock`. */
void l3_health_init(l3_health *health, uint32_t threshold, double interval, l3_clock clock);

/* Release the breaker's mutex. */
void l3_health_destroy(l3_health *health);

/* Ask to call the backend: true with a token when healthy, or when open
 * past the interval and no probe is out (the token is then the probe). */
bool l3_health_begin(l3_health *health, l3_health_token *token);

/* Report a failed call; opens the breaker at the threshold or on a failed
 * probe. Ignored when the token's term is over. */
void l3_health_failure(l3_health *health, l3_health_token token);

/* Report a successful call; a successful probe closes the breaker. Ignored
 * when the token's term is over. */
void l3_health_success(l3_health *health, l3_health_token token);

/* "healthy", "open" or "half_open", and the term in *term (may be NULL),
 * without taking the probe permission. */
const char *l3_health_snapshot(l3_health *health, uint64_t *term);

#endif
