/* Reading ahead into a ring of buffers (readahead.h). */
#include "readahead.h"

#include <pthread.h>
#include <stdlib.h>

#include "invariant.h"
#include "l3_pool.h"

typedef struct reader {
    l3_readahead *ra;
    unsigned first; /* its first item; then every threads-th */
    pthread_t thread;
} reader;

struct l3_readahead {
    l3_readahead_spec spec;
    unsigned nbuf; /* buffers: min(ring, items), at least one */
    void **buf;
    bool *landed_in; /* per buffer: its item was read, not yet counted in `landed` */
    reader *readers;
    unsigned started;   /* reader threads started */
    unsigned running;   /* of them, not yet ended */
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;  /* any change below */
    size_t landed;      /* items read, in order: 0 .. landed - 1 */
    size_t released;    /* items the consumer is done with */
    size_t failed;      /* the lowest item whose read failed (spec.items: none) */
    l3_status st;       /* that read's status and message */
    l3_error err;
    bool stop; /* the consumer stopped: read no more */
};

/* Wait until item j's buffer is free (item j - nbuf released); whether to
 * read it: not stopped, and no item before it failed. */
static bool wait_for_buffer(l3_readahead *ra, size_t j)
{
    pthread_mutex_lock(&ra->mu);
    while (!ra->stop && j < ra->failed && j >= ra->released + ra->nbuf)
        pthread_cond_wait(&ra->cv, &ra->mu);
    bool go = !ra->stop && j < ra->failed;
    pthread_mutex_unlock(&ra->mu);
    return go;
}

/* Item j was read (st: how): count the items read in order as landed, or
 * keep the failure of the lowest item. */
static void item_read(l3_readahead *ra, size_t j, l3_status st, const l3_error *e)
{
    pthread_mutex_lock(&ra->mu);
    if (st != L3_OK) {
        if (j < ra->failed) {
            ra->failed = j;
            ra->st = st;
            ra->err = *e;
            ra->err.code = st;
        }
    } else {
        ra->landed_in[j % ra->nbuf] = true;
        while (ra->landed < ra->spec.items && ra->landed_in[ra->landed % ra->nbuf])
            ra->landed_in[ra->landed++ % ra->nbuf] = false;
    }
    pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
}

static void *read_items(void *arg)
{
    reader *r = arg;
    l3_readahead *ra = r->ra;
    for (size_t j = r->first; j < ra->spec.items && wait_for_buffer(ra, j); j += ra->spec.threads) {
        l3_error e;
        l3_error_clear(&e);
        l3_status st = ra->spec.read(ra->spec.arg, j, ra->buf[j % ra->nbuf], &e);
        item_read(ra, j, st, &e);
        if (st != L3_OK)
            break;
    }
    pthread_mutex_lock(&ra->mu);
    ra->running--;
    pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
    return NULL;
}

/* Free the buffers (unless kept) and the read-ahead itself. */
static void ra_free(l3_readahead *ra, bool keep_buffers)
{
    for (unsigned b = 0; b < ra->nbuf && ra->buf && !keep_buffers; b++)
        l3_pool_free(ra->buf[b], ra->spec.buf_bytes);
    free(ra->buf);
    free(ra->landed_in);
    free(ra->readers);
    pthread_mutex_destroy(&ra->mu);
    pthread_cond_destroy(&ra->cv);
    free(ra);
}

l3_status l3_readahead_start(const l3_readahead_spec *spec, l3_readahead **out, l3_error *err)
{
    *out = NULL;
    if (!spec || !spec->read || !spec->buf_bytes || !spec->ring || !spec->threads)
        return l3_fail(err, L3_EINVAL, "read-ahead: a reader, buffer bytes, a ring and a thread are needed");
    l3_readahead *ra = calloc(1, sizeof *ra);
    if (!ra)
        return l3_fail(err, L3_ENOMEM, "allocating a read-ahead");
    ra->spec = *spec;
    ra->nbuf = spec->items < spec->ring ? (unsigned)(spec->items ? spec->items : 1) : spec->ring;
    ra->failed = spec->items;
    pthread_mutex_init(&ra->mu, NULL);
    pthread_cond_init(&ra->cv, NULL);
    ra->buf = calloc(ra->nbuf, sizeof *ra->buf);
    ra->landed_in = calloc(ra->nbuf, sizeof *ra->landed_in);
    unsigned threads = spec->items < spec->threads ? (unsigned)spec->items : spec->threads;
    ra->readers = calloc(threads ? threads : 1, sizeof *ra->readers);
    bool ok = ra->buf && ra->landed_in && ra->readers;
    for (unsigned b = 0; ok && b < ra->nbuf; b++) /* mapped: freed back whole */
        ok = (ra->buf[b] = l3_pool_alloc(spec->buf_bytes, NULL)) != NULL;
    if (!ok) {
        unsigned nbuf = ra->nbuf;
        ra_free(ra, false);
        return l3_fail(err, L3_ENOMEM, "allocating %u read-ahead buffers of %zu bytes", nbuf,
                       spec->buf_bytes);
    }
    for (unsigned t = 0; t < threads; t++) {
        ra->readers[t] = (reader){ .ra = ra, .first = t };
        pthread_mutex_lock(&ra->mu);
        ra->running++;
        pthread_mutex_unlock(&ra->mu);
        if (pthread_create(&ra->readers[t].thread, NULL, read_items, &ra->readers[t]) != 0) {
            pthread_mutex_lock(&ra->mu);
            ra->running--;
            pthread_mutex_unlock(&ra->mu);
            l3_readahead_free(ra, false);
            return l3_fail(err, L3_ENOMEM, "starting a read-ahead thread");
        }
        ra->started++;
    }
    *out = ra;
    return L3_OK;
}

void *l3_readahead_get(l3_readahead *ra, size_t item)
{
    if (item >= ra->spec.items)
        return NULL;
    pthread_mutex_lock(&ra->mu);
    L3_ASSERT(item < ra->released + ra->nbuf);
    while (ra->landed <= item && item < ra->failed && !ra->stop && ra->running)
        pthread_cond_wait(&ra->cv, &ra->mu);
    void *buf = ra->landed > item ? ra->buf[item % ra->nbuf] : NULL;
    pthread_mutex_unlock(&ra->mu);
    return buf;
}

void l3_readahead_release(l3_readahead *ra, size_t item)
{
    pthread_mutex_lock(&ra->mu);
    size_t done = item + 1 < ra->landed ? item + 1 : ra->landed; /* (what landed alone) */
    if (done > ra->released) {
        ra->released = done;
        pthread_cond_broadcast(&ra->cv);
    }
    pthread_mutex_unlock(&ra->mu);
}

l3_status l3_readahead_failure(l3_readahead *ra, l3_error *err)
{
    pthread_mutex_lock(&ra->mu);
    l3_status st = ra->st;
    if (err && st != L3_OK)
        *err = ra->err;
    pthread_mutex_unlock(&ra->mu);
    return st;
}

void l3_readahead_stop(l3_readahead *ra)
{
    pthread_mutex_lock(&ra->mu);
    ra->stop = true;
    pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
    for (unsigned t = 0; t < ra->started; t++)
        pthread_join(ra->readers[t].thread, NULL);
    ra->started = 0;
}

void l3_readahead_free(l3_readahead *ra, bool keep_buffers)
{
    if (!ra)
        return;
    l3_readahead_stop(ra);
    ra_free(ra, keep_buffers);
}
