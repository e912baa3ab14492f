/* l3cache: an asynchronous key-level API over a store, for engines that
 * hand it (key, buffer, length) batches rather than a Host block layout
 * (LMCache's native connector contract, python/l3cache/lmcache.py).
 *
 * Batches of get / set / exists / delete are submitted with the caller's
 * id into a bounded queue; worker threads run them against the store (the
 * I/O is O_DIRECT, fixed buffers where a buffer lies in the registered
 * region); each finished batch becomes a completion, and an eventfd
 * becomes readable. l3_async_drain takes the completions without blocking
 * (and resets the eventfd). Every call is thread-safe. */
#ifndef L3_ASYNC_H
#define L3_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_status.h"
#include "l3_store.h"

typedef enum l3_async_kind { L3_ASYNC_GET, L3_ASYNC_SET, L3_ASYNC_EXISTS, L3_ASYNC_DELETE } l3_async_kind;

/* Worker threads, the bound on batches queued or running, and the read
 * lease an exists batch takes on what it finds (l3_store_batch_lease: kept
 * from eviction, in any process, until the get that follows). */
typedef struct l3_async_options {
    unsigned workers;     /* default 4 */
    size_t max_pending;   /* default 256 */
    double lease_seconds; /* 0 (default): exists takes no lease; at most 3600 */
} l3_async_options;

/* One finished batch. `results[i]`: key i was read whole (get), stored
 * (set), found (exists) or deleted (delete); all false when !ok. */
typedef struct l3_async_completion {
    uint64_t id;
    l3_async_kind kind;
    bool ok;             /* the batch ran; false: `error` says why */
    char error[L3_ERROR_MSG_MAX];
    size_t n;
    bool *results;       /* n entries; freed by l3_async_completion_release */
} l3_async_completion;

/* Counters. */
typedef struct l3_async_stats {
    uint64_t submitted, completed, rejected_full;
    uint64_t bounced_keys;   /* buffers moved through an aligned copy (misaligned) */
    uint64_t pending;        /* batches queued or running now */
} l3_async_stats;

typedef struct l3_async l3_async;

/* Start workers over `store` (not taken over: close it after
 * l3_async_free). Zero options take the defaults. */
l3_status l3_async_open(l3_store *store, const l3_async_options *options, l3_async **out, l3_error *err);

/* The eventfd that is readable while completions wait to be drained. */
int l3_async_event_fd(const l3_async *a);

/* Register [base, base + len) with the store for fixed-buffer I/O (an
 * engine's whole L1 pool), replacing what was registered; NULL base
 * unregisters. */
l3_status l3_async_register(l3_async *a, void *base, size_t len, l3_error *err);

/* Register several regions at once (l3_store_register_hosts), replacing
 * what was registered; a batch's buffers may lie in any of them. */
l3_status l3_async_register_hosts(l3_async *a, const l3_host_buffer *regions, size_t n, l3_error *err);

/* Submit a batch of n keys (copied) with their buffers and lengths (get,
 * set; NULL for exists and delete), which must stay valid until its
 * completion is drained. L3_EBUSY when max_pending batches are queued or
 * running, L3_ECLOSED after close; nothing is queued then. */
l3_status l3_async_submit(l3_async *a, l3_async_kind kind, uint64_t id, const char *const *keys, size_t n,
                          void *const *bufs, const size_t *lens, l3_error *err);

/* l3_async_submit with what the engine knows of a set batch (l3_put_hints,
 * docs/admission.md: each key's page group, the objects of a whole group,
 * a partial last page), which the store's put then acts on
 * (l3_store_batch_put_hinted: a page's objects admitted, kept and evicted
 * together). `hints` and its groups (n of them) are copied; NULL hints is
 * l3_async_submit. L3_EINVAL for hints on a batch other than a set. */
l3_status l3_async_submit_hinted(l3_async *a, l3_async_kind kind, uint64_t id, const char *const *keys,
                                 size_t n, void *const *bufs, const size_t *lens, const l3_put_hints *hints,
                                 l3_error *err);

/* Move up to `max` completions into `out` without blocking, resetting the
 * eventfd first; returns how many. Release each with
 * l3_async_completion_release. */
size_t l3_async_drain(l3_async *a, l3_async_completion *out, size_t max);

/* Free a drained completion's results. */
void l3_async_completion_release(l3_async_completion *c);

/* The counters. */
void l3_async_get_stats(l3_async *a, l3_async_stats *out);

/* Refuse new batches, run every queued one and wait until all have
 * finished (their completions stay drainable), then stop the workers. */
void l3_async_close(l3_async *a);

/* Close if needed and free (undrained completions are released). */
void l3_async_free(l3_async *a);

#endif
