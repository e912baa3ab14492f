/* The slab store's background thread (background.h). */
#include "background.h"

#include <errno.h>
#include <time.h>

#include "meta.h"
#include "summary.h"

/* Write one deferred item (outside the queue's lock). */
static void write_deferred(l3_slabstore *s, l3_deferred d)
{
    if (!d.record) {
        l3_summary_settle(s, d.slab);
        return;
    }
    l3_error e;
    if (l3_meta_ensure_record(s, d.slab, d.gen, &e) != L3_OK)
        l3_log("warning", "writing standby slab %u's record: %s (its first writer writes it)", d.slab, e.msg);
}

/* Write everything deferred so far (the queue's lock held, released
 * around each write). */
static void drain(l3_slabstore *s)
{
    while (s->num_deferred > 0) {
        l3_deferred d = s->deferred[--s->num_deferred];
        pthread_mutex_unlock(&s->flusher_mu);
        if (!atomic_load(&s->fatal))
            write_deferred(s, d);
        pthread_mutex_lock(&s->flusher_mu);
    }
}

/* Whether the periodic flush is due: store.flush "interval", and `until`
 * (its next time) has passed, or is set now when not yet set. */
static bool flush_due(const l3_slabstore *s, struct timespec *until)
{
    if (s->opt.flush != L3_FLUSH_INTERVAL)
        return false;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (until->tv_sec == 0 || now.tv_sec > until->tv_sec ||
        (now.tv_sec == until->tv_sec && now.tv_nsec >= until->tv_nsec)) {
        bool due = until->tv_sec != 0;
        double at = (double)now.tv_sec + (double)now.tv_nsec / 1e9 + s->opt.flush_interval;
        until->tv_sec = (time_t)at;
        until->tv_nsec = (long)((at - (double)until->tv_sec) * 1e9);
        return due;
    }
    return false;
}

static void *background_main(void *arg)
{
    l3_slabstore *s = arg;
    struct timespec until = { 0 };
    pthread_mutex_lock(&s->flusher_mu);
    (void)flush_due(s, &until); /* (its first time) */
    while (!s->flusher_stop) {
        drain(s);
        if (flush_due(s, &until)) {
            pthread_mutex_unlock(&s->flusher_mu);
            if (!atomic_load(&s->fatal))
                l3_meta_flush_dirty(s, "the device cache");
            pthread_mutex_lock(&s->flusher_mu);
            continue;
        }
        if (s->num_deferred || s->flusher_stop)
            continue;
        if (s->opt.flush == L3_FLUSH_INTERVAL)
            (void)pthread_cond_timedwait(&s->flusher_cv, &s->flusher_mu, &until);
        else
            pthread_cond_wait(&s->flusher_cv, &s->flusher_mu);
    }
    drain(s);
    pthread_mutex_unlock(&s->flusher_mu);
    return NULL;
}

/* Create the thread (the queue's lock held); whether it runs. */
static bool spawn(l3_slabstore *s)
{
    if (!s->flusher_running && !s->flusher_stop)
        s->flusher_running = pthread_create(&s->flusher, NULL, background_main, s) == 0;
    return s->flusher_running;
}

l3_status l3_background_start(l3_slabstore *s, l3_error *err)
{
    if (s->opt.read_only)
        return L3_OK;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->flusher_mu, NULL);
    pthread_cond_init(&s->flusher_cv, &ca);
    pthread_condattr_destroy(&ca);
    s->flusher_ready = true;
    if (s->opt.flush != L3_FLUSH_INTERVAL)
        return L3_OK; /* (started by the first deferred write) */
    pthread_mutex_lock(&s->flusher_mu);
    bool running = spawn(s);
    pthread_mutex_unlock(&s->flusher_mu);
    return running ? L3_OK : l3_fail(err, L3_ENOMEM, "starting the store's background thread");
}

void l3_background_stop(l3_slabstore *s)
{
    if (s->flusher_ready) {
        pthread_mutex_lock(&s->flusher_mu);
        s->flusher_stop = true;
        bool running = s->flusher_running;
        pthread_cond_signal(&s->flusher_cv);
        pthread_mutex_unlock(&s->flusher_mu);
        if (running)
            pthread_join(s->flusher, NULL);
        pthread_mutex_destroy(&s->flusher_mu);
        pthread_cond_destroy(&s->flusher_cv);
        s->flusher_running = s->flusher_ready = false;
    }
    if (!atomic_load(&s->fatal))
        l3_meta_flush_dirty(s, "the device cache at close");
}

void l3_background_defer(l3_slabstore *s, uint32_t slab, uint64_t gen, bool record)
{
    l3_deferred d = { .slab = slab, .gen = gen, .record = record };
    bool queued = false;
    if (s->flusher_ready) {
        pthread_mutex_lock(&s->flusher_mu);
        queued = s->num_deferred < L3_DEFERRED_MAX && spawn(s);
        if (queued) {
            s->deferred[s->num_deferred++] = d;
            pthread_cond_signal(&s->flusher_cv);
        }
        pthread_mutex_unlock(&s->flusher_mu);
    }
    if (!queued)
        write_deferred(s, d);
}
