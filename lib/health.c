#include "l3_health.h"

void l3_health_init(l3_health *health, uint32_t threshold, double interval, l3_clock clock)
{
    *health = (l3_health){ .threshold = threshold, .interval = interval, .clock = clock };
    pthread_mutex_init(&health->mu, NULL);
}

void l3_health_destroy(l3_health *health) { pthread_mutex_destroy(&health->mu); }

bool l3_health_begin(l3_health *health, l3_health_token *token)
{
    bool allowed = true;
    pthread_mutex_lock(&health->mu);
    if (!health->open) {
        *token = (l3_health_token){ .term = health->term, .recovery = false };
    } else if (l3_clock_now(health->clock) < health->unavailable_until || health->probe_inflight) {
        allowed = false;
    } else {
        health->probe_inflight = true;
        *token = (l3_health_token){ .term = health->term, .recovery = true };
    }
    pthread_mutex_unlock(&health->mu);
    return allowed;
}

void l3_health_failure(l3_health *health, l3_health_token token)
{
    pthread_mutex_lock(&health->mu);
    if (token.term == health->term) {
        health->failures++;
        if (token.recovery || health->failures >= health->threshold) {
            health->term++;
            health->open = true;
            health->unavailable_until = l3_clock_now(health->clock) + health->interval;
            health->probe_inflight = false;
        }
    }
    pthread_mutex_unlock(&health->mu);
}

void l3_health_success(l3_health *health, l3_health_token token)
{
    pthread_mutex_lock(&health->mu);
    if (token.term == health->term) {
        health->failures = 0;
        if (token.recovery) {
            health->term++;
            health->open = false;
            health->probe_inflight = false;
        }
    }
    pthread_mutex_unlock(&health->mu);
}

const char *l3_health_snapshot(l3_health *health, uint64_t *term)
{
    pthread_mutex_lock(&health->mu);
    const char *name = !health->open ? "healthy" : health->probe_inflight ? "half_open" : "open";
    if (term)
        *term = health->term;
    pthread_mutex_unlock(&health->mu);
    return name;
}
