/* The slab store's background thread (background.h). */
#include "background.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "l3_clock.h"
#include "meta.h"
#include "monotonic.h"
#include "summary.h"

/* Flush the devices this process wrote and those of the first n held
 * slabs, then write their summaries (outside the queue's lock): a
 * summary lands only once what it names is durable, so that after a
 * power cut it never names a payload the cut lost (a later put of that
 * key would take it for stored and skip its write). */
static void flush_then_settle(l3_slabstore *s, const uint32_t *slabs, uint32_t n, const char *what)
{
    uint32_t mask = atomic_load(&s->dirty);
    for (uint32_t k = 0; k < n; k++)
        mask |= 1u << l3_slab_device(&s->geo, slabs[k]);
    l3_error err;
    if (mask && l3_meta_flush(s, mask, &err) != L3_OK) {
        l3_log("error", "%s: flushing %s: %s (%u summaries not written: a crash scan reads their headers)", s->path,
               what, err.msg, n);
        return;
    }
    for (uint32_t k = 0; k < n; k++)
        l3_summary_settle(s, slabs[k]);
}

/* Write one deferred item (outside the queue's lock). */
static void write_deferred(l3_slabstore *s, l3_deferred d)
{
    if (!d.record) {
        if (s->opt.flush == L3_FLUSH_INTERVAL)
            flush_then_settle(s, &d.slab, 1, "a filled slab's device"); /* (not held: now) */
        else
            l3_summary_settle(s, d.slab); /* (batch: its puts were flushed before they were published) */
        return;
    }
    l3_error e;
    if (l3_meta_ensure_record(s, d.slab, d.gen, &e) != L3_OK)
        l3_log("warning", "writing standby slab %u's record: %s (its first writer writes it)", d.slab, e.msg);
}

/* Flush, then write the summaries held so far (the queue's lock held,
 * released around them). */
static void settle_held(l3_slabstore *s, const char *what)
{
    uint32_t slabs[L3_HELD_MAX], n = s->num_held;
    memcpy(slabs, s->held, n * sizeof *slabs);
    s->num_held = 0;
    pthread_mutex_unlock(&s->flusher_mu);
    if (!atomic_load(&s->fatal))
        flush_then_settle(s, slabs, n, what);
    pthread_mutex_lock(&s->flusher_mu);
}

/* Write everything deferred so far (the queue's lock held, released
 * around each write); with store.flush "interval" a summary is held for
 * the next flush instead (flushed early when L3_HELD_MAX wait). */
static void drain(l3_slabstore *s)
{
    while (s->num_deferred > 0) {
        l3_deferred d = s->deferred[--s->num_deferred];
        if (!d.record && s->opt.flush == L3_FLUSH_INTERVAL) {
            s->held[s->num_held++] = d.slab;
            if (s->num_held == L3_HELD_MAX)
                settle_held(s, "the device cache early (summaries waiting)");
            continue;
        }
        pthread_mutex_unlock(&s->flusher_mu);
        if (!atomic_load(&s->fatal))
            write_deferred(s, d);
        pthread_mutex_lock(&s->flusher_mu);
    }
}

static void *background_main(void *arg)
{
    l3_slabstore *s = arg;
    bool interval = s->opt.flush == L3_FLUSH_INTERVAL;
    double next_flush = l3_monotonic_seconds() + s->opt.flush_interval;
    pthread_mutex_lock(&s->flusher_mu);
    while (!s->flusher_stop) {
        drain(s);
        if (interval && l3_monotonic_seconds() >= next_flush) {
            settle_held(s, "the device cache"); /* (the summaries held before it began) */
            next_flush = l3_monotonic_seconds() + s->opt.flush_interval;
            continue;
        }
        if (s->num_deferred || s->flusher_stop)
            continue;
        struct timespec until = l3_deadline_after(next_flush - l3_monotonic_seconds());
        if (interval)
            (void)pthread_cond_timedwait(&s->flusher_cv, &s->flusher_mu, &until);
        else
            pthread_cond_wait(&s->flusher_cv, &s->flusher_mu);
    }
    drain(s);
    if (s->num_held)
        settle_held(s, "the device cache at close");
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

void l3_background_settle(l3_slabstore *s, uint32_t slab, bool driven)
{
    if (driven || s->opt.flush == L3_FLUSH_INTERVAL)
        l3_background_defer(s, slab, 0, false);
    else
        l3_summary_settle(s, slab);
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
