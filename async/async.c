/* The asynchronous key-level API (l3_async.h): a bounded queue of batches,
 * worker threads that run them against the store, completions behind an
 * eventfd. */
#include "l3_async.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "invariant.h"

typedef struct job {
    struct job *next;
    l3_async_kind kind;
    uint64_t id;
    size_t n;
    char **keys;
    void **bufs;
    size_t *lens;
    bool hinted;          /* a set batch with put hints: the store's hinted put */
    l3_put_hints hints;   /* its groups point at `groups` (copied) */
    uint64_t *groups;
} job;

struct l3_async {
    l3_store *store;
    int efd;
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    job *head, *tail;
    size_t pending;          /* queued or running */
    size_t max_pending;
    double lease_seconds;    /* exists batches lease what they find (0: no lease) */
    bool closing, closed;
    pthread_t *threads;
    unsigned nthreads;
    l3_async_completion *done;
    size_t ndone, cap;
    l3_async_stats stats;
};

static void job_free(job *j)
{
    if (!j)
        return;
    for (size_t i = 0; j->keys && i < j->n; i++)
        free(j->keys[i]);
    free(j->keys);
    free(j->bufs);
    free(j->lens);
    free(j->groups);
    free(j);
}

/* Copy a set batch's hints into its job (NULL: none); false when out of
 * memory. */
static bool copy_hints(job *j, const l3_put_hints *h)
{
    if (!h)
        return true;
    j->hinted = true;
    j->hints = *h;
    j->hints.groups = NULL;
    if (!h->groups || j->n == 0)
        return true;
    j->groups = malloc(j->n * sizeof *j->groups);
    if (!j->groups)
        return false;
    memcpy(j->groups, h->groups, j->n * sizeof *j->groups);
    j->hints.groups = j->groups;
    return true;
}

/* A copy of the batch (keys and hints copied, buffers referenced). */
static job *job_new(l3_async_kind kind, uint64_t id, const char *const *keys, size_t n, void *const *bufs,
                    const size_t *lens, const l3_put_hints *hints)
{
    job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    *j = (job){ .kind = kind, .id = id, .n = n, .keys = calloc(n ? n : 1, sizeof(char *)) };
    bool io = kind == L3_ASYNC_GET || kind == L3_ASYNC_SET;
    if (io) {
        j->bufs = calloc(n ? n : 1, sizeof(void *));
        j->lens = calloc(n ? n : 1, sizeof(size_t));
    }
    bool ok = j->keys && (!io || (j->bufs && j->lens)) && copy_hints(j, hints);
    for (size_t i = 0; ok && i < n; i++) {
        ok = (j->keys[i] = strdup(keys[i])) != NULL;
        if (ok && io) {
            j->bufs[i] = bufs[i];
            j->lens[i] = lens[i];
        }
    }
    if (!ok) {
        job_free(j);
        return NULL;
    }
    return j;
}

/* The store call of a get or set over `host`. */
static l3_status store_io(l3_async *a, const job *j, l3_host_buffer host, const l3_range *ranges,
                          l3_io_result *r, l3_error *err)
{
    const char *const *keys = (const char *const *)j->keys;
    if (j->kind == L3_ASYNC_GET)
        return l3_store_batch_get_into(a->store, keys, j->n, host, ranges, r, err);
    if (j->hinted)
        return l3_store_batch_put_hinted(a->store, keys, j->n, host, ranges, 1, &j->hints, r, err);
    return l3_store_batch_put_from(a->store, keys, j->n, host, ranges, r, err);
}

/* A get or set: one store call over the span of the batch's buffers, so
 * that buffers in any registered region go as fixed buffers (the store
 * bounces misaligned ones itself). */
static l3_status run_io(l3_async *a, job *j, bool *results, l3_error *err)
{
    uint8_t *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < j->n; i++) {
        uint8_t *b = j->bufs[i];
        if (!lo || b < lo)
            lo = b;
        if (!hi || b + j->lens[i] > hi)
            hi = b + j->lens[i];
    }
    l3_range *ranges = calloc(j->n ? j->n : 1, sizeof *ranges);
    bool *failures = calloc(j->n ? j->n : 1, 1);
    l3_status st = ranges && failures ? L3_OK : l3_fail(err, L3_ENOMEM, "allocating a batch");
    size_t misaligned = 0;
    for (size_t i = 0; st == L3_OK && i < j->n; i++) {
        ranges[i] = (l3_range){ (uint64_t)((uint8_t *)j->bufs[i] - lo), j->lens[i] };
        misaligned += ((uintptr_t)j->bufs[i] & 4095) != 0;
    }
    l3_io_result r = { .success = results, .object_failures = failures };
    l3_host_buffer host = { lo, (size_t)(hi - lo) };
    if (st == L3_OK)
        st = store_io(a, j, host, ranges, &r, err);
    if (st == L3_OK && !r.retired)
        st = l3_fail(err, L3_EUNRETIRED, "the batch's I/O was not reaped in time; its buffers may still be "
                     "written, and the store refuses I/O until restart");
    __atomic_add_fetch(&a->stats.bounced_keys, misaligned, __ATOMIC_RELAXED);
    free(ranges);
    free(failures);
    return st;
}

/* Run one batch into its completion. */
static void run_job(l3_async *a, job *j, l3_async_completion *c)
{
    *c = (l3_async_completion){ .id = j->id, .kind = j->kind, .n = j->n, .results = calloc(j->n ? j->n : 1, 1) };
    l3_error err;
    l3_error_clear(&err);
    const char *const *keys = (const char *const *)j->keys;
    l3_status st = L3_OK;
    if (!c->results)
        st = l3_fail(&err, L3_ENOMEM, "allocating a completion");
    else if (j->kind == L3_ASYNC_EXISTS && a->lease_seconds > 0)
        st = l3_store_batch_lease(a->store, keys, j->n, a->lease_seconds, c->results, &err);
    else if (j->kind == L3_ASYNC_EXISTS)
        st = l3_store_batch_exists(a->store, keys, j->n, c->results, &err);
    else if (j->kind == L3_ASYNC_DELETE)
        st = l3_store_batch_delete(a->store, keys, j->n, c->results, &err);
    else
        st = run_io(a, j, c->results, &err);
    c->ok = st == L3_OK;
    if (!c->ok) {
        snprintf(c->error, sizeof c->error, "%s", err.msg[0] ? err.msg : l3_status_name(st));
        if (c->results)
            memset(c->results, 0, j->n);
    }
}

/* Append a completion (under the lock); false when out of memory. */
static bool push_done(l3_async *a, const l3_async_completion *c)
{
    if (a->ndone == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        l3_async_completion *d = realloc(a->done, cap * sizeof *d);
        if (!d)
            return false;
        a->done = d;
        a->cap = cap;
    }
    a->done[a->ndone++] = *c;
    return true;
}

static void wake(l3_async *a)
{
    uint64_t one = 1;
    while (write(a->efd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

static void *worker(void *arg)
{
    l3_async *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->head && !a->closing)
            pthread_cond_wait(&a->work, &a->mu);
        job *j = a->head;
        if (!j)
            break; /* closing, and nothing left to run */
        a->head = j->next;
        if (!a->head)
            a->tail = NULL;
        pthread_mutex_unlock(&a->mu);
        l3_async_completion c;
        run_job(a, j, &c);
        job_free(j);
        pthread_mutex_lock(&a->mu);
        if (!push_done(a, &c)) {
            l3_log("error", "l3_async: out of memory keeping completion %llu", (unsigned long long)c.id);
            free(c.results);
        }
        L3_ASSERT(a->pending > 0);
        a->pending--;
        a->stats.completed++;
        pthread_cond_broadcast(&a->idle);
        pthread_mutex_unlock(&a->mu);
        wake(a);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

l3_status l3_async_open(l3_store *store, const l3_async_options *o, l3_async **out, l3_error *err)
{
    *out = NULL;
    l3_async *a = calloc(1, sizeof *a);
    if (!a)
        return l3_fail(err, L3_ENOMEM, "allocating the async API");
    a->store = store;
    a->nthreads = o && o->workers ? o->workers : 4;
    a->max_pending = o && o->max_pending ? o->max_pending : 256;
    a->lease_seconds = o ? o->lease_seconds : 0;
    bool bad_lease = !(a->lease_seconds >= 0 && a->lease_seconds <= 3600);
    if (a->nthreads > 256 || bad_lease) {
        free(a);
        return l3_fail(err, L3_EINVAL, bad_lease ? "lease_seconds must be 0 to 3600" : "workers must be 1 to 256");
    }
    a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    a->threads = calloc(a->nthreads, sizeof *a->threads);
    if (a->efd < 0 || !a->threads) {
        if (a->efd >= 0)
            close(a->efd);
        free(a->threads);
        free(a);
        return l3_fail(err, L3_ENOMEM, "creating the completion eventfd: %s", strerror(errno));
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work, NULL);
    pthread_cond_init(&a->idle, NULL);
    for (unsigned i = 0; i < a->nthreads; i++) {
        if (pthread_create(&a->threads[i], NULL, worker, a) != 0) {
            a->nthreads = i;
            l3_async_free(a);
            return l3_fail(err, L3_ENOMEM, "starting worker %u", i);
        }
    }
    *out = a;
    return L3_OK;
}

int l3_async_event_fd(const l3_async *a) { return a->efd; }

l3_status l3_async_register(l3_async *a, void *base, size_t len, l3_error *err)
{
    return l3_store_register_host(a->store, (l3_host_buffer){ base, base ? len : 0 }, err);
}

l3_status l3_async_register_hosts(l3_async *a, const l3_host_buffer *regions, size_t n, l3_error *err)
{
    return l3_store_register_hosts(a->store, regions, n, err);
}

l3_status l3_async_submit(l3_async *a, l3_async_kind kind, uint64_t id, const char *const *keys, size_t n,
                          void *const *bufs, const size_t *lens, l3_error *err)
{
    return l3_async_submit_hinted(a, kind, id, keys, n, bufs, lens, NULL, err);
}

l3_status l3_async_submit_hinted(l3_async *a, l3_async_kind kind, uint64_t id, const char *const *keys,
                                 size_t n, void *const *bufs, const size_t *lens, const l3_put_hints *hints,
                                 l3_error *err)
{
    bool io = kind == L3_ASYNC_GET || kind == L3_ASYNC_SET;
    if ((unsigned)kind > L3_ASYNC_DELETE || (n && (!keys || (io && (!bufs || !lens)))))
        return l3_fail(err, L3_EINVAL, "a batch of %zu keys needs its keys%s", n, io ? ", buffers and lengths" : "");
    if (hints && kind != L3_ASYNC_SET)
        return l3_fail(err, L3_EINVAL, "put hints are for set batches");
    job *j = job_new(kind, id, keys, n, bufs, lens, hints);
    if (!j)
        return l3_fail(err, L3_ENOMEM, "allocating a batch of %zu keys", n);
    pthread_mutex_lock(&a->mu);
    l3_status st = L3_OK;
    if (a->closing)
        st = l3_fail(err, L3_ECLOSED, "the async API is closed");
    else if (a->pending >= a->max_pending)
        st = l3_fail(err, L3_EBUSY, "the queue is full: %zu batches queued or running (max_pending)", a->pending);
    if (st == L3_OK) {
        if (a->tail)
            a->tail->next = j;
        else
            a->head = j;
        a->tail = j;
        a->pending++;
        a->stats.submitted++;
        pthread_cond_signal(&a->work);
    } else {
        a->stats.rejected_full += st == L3_EBUSY;
    }
    pthread_mutex_unlock(&a->mu);
    if (st != L3_OK)
        job_free(j);
    return st;
}

size_t l3_async_drain(l3_async *a, l3_async_completion *out, size_t max)
{
    uint64_t count;
    while (read(a->efd, &count, sizeof count) < 0 && errno == EINTR)
        ; /* reset first: a completion pushed after this wakes the fd again */
    pthread_mutex_lock(&a->mu);
    size_t n = a->ndone < max ? a->ndone : max;
    memcpy(out, a->done, n * sizeof *out);
    memmove(a->done, a->done + n, (a->ndone - n) * sizeof *out);
    a->ndone -= n;
    bool more = a->ndone > 0;
    pthread_mutex_unlock(&a->mu);
    if (more)
        wake(a); /* more left than the caller took */
    return n;
}

void l3_async_completion_release(l3_async_completion *c)
{
    free(c->results);
    c->results = NULL;
}

void l3_async_get_stats(l3_async *a, l3_async_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = a->stats;
    out->bounced_keys = __atomic_load_n(&a->stats.bounced_keys, __ATOMIC_RELAXED);
    out->pending = a->pending;
    pthread_mutex_unlock(&a->mu);
}

void l3_async_close(l3_async *a)
{
    pthread_mutex_lock(&a->mu);
    bool first = !a->closing;
    a->closing = true;
    pthread_cond_broadcast(&a->work);
    while (a->pending)
        pthread_cond_wait(&a->idle, &a->mu);
    pthread_mutex_unlock(&a->mu);
    if (!first || a->closed)
        return;
    for (unsigned i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    a->closed = true;
}

void l3_async_free(l3_async *a)
{
    if (!a)
        return;
    l3_async_close(a);
    for (size_t i = 0; i < a->ndone; i++)
        free(a->done[i].results);
    free(a->done);
    free(a->threads);
    close(a->efd);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->work);
    pthread_cond_destroy(&a->idle);
    free(a);
}
