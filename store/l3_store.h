/* l3cache: the store interface (docs/SEMANTICS.md, "Store rules").
 *
 * A store is a small vtable. The executor calls it from its worker threads,
 * so every store must be thread-safe. Keys are NUL-terminated object keys
 * (see l3_keys.h); ranges are byte ranges of the Host buffer. */
#ifndef L3_STORE_H
#define L3_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_layout.h"
#include "l3_status.h"

/* The Host KV pool (or any buffer) that a batch reads or writes. */
typedef struct l3_host_buffer {
    uint8_t *base;
    size_t len;
} l3_host_buffer;

/* Per-key facts of a get or put batch. The caller provides `success` and
 * `object_failures` arrays of the batch's length and sets both *_len to 0;
 * the store fills them and sets each length to the count it filled. */
typedef struct l3_io_result {
    bool *success;
    size_t success_len;
    bool *object_failures;
    size_t object_failures_len;
    /* No native I/O still touches the Host memory. */
    bool retired;
} l3_io_result;

typedef struct l3_store l3_store;

/* A get batch under way (l3_store_ops.get_begin), private to its store. */
typedef struct l3_store_job l3_store_job;

/* A put batch under way (l3_store_ops.put_begin), private to its store. */
typedef struct l3_store_put_job l3_store_put_job;

/* What an engine knows about a put batch that a cache can use
 * (docs/admission.md). Zero: nothing known. */
typedef struct l3_put_hints {
    /* Per key, or NULL: the id of its page's group, the objects that are
     * of use only together (every tensor-parallel rank's shard of a page,
     * every pool's object of it: KV, an indexer's sidecar, a state); 0 for
     * a key of no group. A group is admitted, kept and evicted whole. */
    const uint64_t *groups;
    /* Objects in a whole group (ranks x pools), so that the write budget
     * charges a group once, whole; 0: unknown (each object is charged);
     * 1: each object is its own group (the groups are not tracked). */
    uint32_t group_objects;
    /* The batch's last key is a prompt's partial last page (rarely read
     * again; written only on admission's top rung); with groups, every
     * key of its group is of that page. */
    bool last_is_partial;
    /* The batch is of use only whole: its prefix is usable only with the
     * state of its last page (a Mamba or SWA pool's trailing pages), so a
     * head written without the rest is wasted. It is admitted as its last
     * page would be, and once admission takes one of its keys it takes
     * the rest (neither the rung's depth nor first sight cuts it); a
     * partial tail, the write budget or a group's refusal still can. */
    bool whole;
} l3_put_hints;

/* The operations of a store. A non-L3_OK return is a backend failure of
 * the whole call (with a message in *err); per-key facts go in the result. */
typedef struct l3_store_ops {
    /* flags[i]: the store holds keys[i]. */
    l3_status (*batch_exists)(l3_store *store, const char *const *keys, size_t n, bool *flags,
                              l3_error *err);
    /* Copy each object into its Host range. A key succeeds only with a
     * full-size copy of an object whose size equals its range; a missing,
     * wrong-size or corrupt object is success=false, object_failure=true. */
    l3_status (*batch_get_into)(l3_store *store, const char *const *keys, size_t n,
                                l3_host_buffer host, const l3_range *ranges, l3_io_result *result,
                                l3_error *err);
    /* Store each Host range under its key, create-only: an existing key is
     * a success without overwrite. Never reports object failures; a full
     * store fails that key alone, retired. */
    l3_status (*batch_put_from)(l3_store *store, const char *const *keys, size_t n,
                                l3_host_buffer host, const l3_range *ranges, l3_io_result *result,
                                l3_error *err);
    /* Delete every object whose key starts with `prefix`; false must mean
     * nothing irreversible happened. */
    bool (*remove_by_prefix)(l3_store *store, const char *prefix);
    /* Release the backend's connection; idempotent. */
    void (*close)(l3_store *store);
    /* Whether an error return still proves no I/O touches the Host memory. */
    bool (*failures_retire)(l3_store *store);
    /* Free the store (after close). */
    void (*destroy)(l3_store *store);
    /* Optional (may be NULL): the Host regions (n of them, checked by
     * l3_check_host_regions; 0 clears them) that later batches use and
     * that stay mapped until they are replaced; a disk store registers
     * them for zero-copy fixed-buffer I/O, finding a range's region by its
     * address. */
    l3_status (*register_hosts)(l3_store *store, const l3_host_buffer *regions, size_t n,
                                l3_error *err);
    /* Optional (may be NULL): delete each key's object; deleted[i] says it
     * was there. A disk store makes the deletion durable (the object does
     * not come back after a crash). */
    l3_status (*batch_delete)(l3_store *store, const char *const *keys, size_t n, bool *deleted,
                              l3_error *err);
    /* Optional (may be NULL): batch_get_into and batch_put_from for
     * multi-range objects. Key i's object is the concatenation of its
     * `per_key` ranges, ranges[i * per_key] to ranges[i * per_key +
     * per_key - 1]; a get succeeds only into ranges of the same sizes, in
     * the same order, as the put that stored it. */
    l3_status (*batch_get_into_v)(l3_store *store, const char *const *keys, size_t n, l3_host_buffer host,
                                  const l3_range *ranges, size_t per_key, l3_io_result *result,
                                  l3_error *err);
    l3_status (*batch_put_from_v)(l3_store *store, const char *const *keys, size_t n, l3_host_buffer host,
                                  const l3_range *ranges, size_t per_key, l3_io_result *result,
                                  l3_error *err);
    /* Optional (may be NULL): batch_exists that also leases each found
     * object for `seconds`: until then eviction keeps it (an expired lease
     * is simply gone). */
    l3_status (*batch_lease)(l3_store *store, const char *const *keys, size_t n, double seconds,
                             bool *flags, l3_error *err);
    /* Optional (may be NULL): batch_put_from_v with what the engine knows
     * of the batch (`hints` may be NULL). Keys are in chain order, a
     * prefix's head first. */
    l3_status (*batch_put_hinted)(l3_store *store, const char *const *keys, size_t n, l3_host_buffer host,
                                  const l3_range *ranges, size_t per_key, const l3_put_hints *hints,
                                  l3_io_result *result, l3_error *err);
    /* Optional (all three, or none): batch_get_into in three calls, for
     * one thread that drives many batches from submission to verified
     * completion. get_begin checks the batch and makes its job, whose
     * reads signal eventfd `notify_fd` (or -1) as they finish (at least
     * once for those that finish between two polls; once the caller
     * has slept in driver_wait, not at all); its
     * arguments stay put until get_end. It fails only when it cannot make
     * the job (nothing then to end). get_poll never sleeps: it looks keys
     * up and submits their reads, takes the reads that finished, verifies
     * their keys; true once the batch is done, else *wake_by is the latest
     * time (monotonic seconds) to poll again. get_end waits out what is
     * left, frees the job and returns what batch_get_into would have. A
     * job is polled and ended on the thread that began it. */
    l3_status (*get_begin)(l3_store *store, const char *const *keys, size_t n, l3_host_buffer host,
                           const l3_range *ranges, l3_io_result *result, int notify_fd, l3_store_job **job,
                           l3_error *err);
    bool (*get_poll)(l3_store_job *job, double *wake_by);
    l3_status (*get_end)(l3_store_job *job, l3_error *err);
    /* Optional (all three, or none): batch_put_from in three calls, as
     * get_begin, get_poll and get_end for gets. put_poll never sleeps on
     * the batch's own writes, on the read-first gate or for a context: it
     * makes room, reserves, submits the writes, takes those that finished
     * and publishes what was written. Some steps still do synchronous I/O
     * or wait on locks: room made by moving objects, a slab's record, the
     * flush of store.flush "batch". */
    l3_status (*put_begin)(l3_store *store, const char *const *keys, size_t n, l3_host_buffer host,
                           const l3_range *ranges, l3_io_result *result, int notify_fd, l3_store_put_job **job,
                           l3_error *err);
    bool (*put_poll)(l3_store_put_job *job, double *wake_by);
    l3_status (*put_end)(l3_store_put_job *job, l3_error *err);
    /* Optional: the caller no longer sleeps on `notify_fd` (it may close
     * it), so nothing of the store signals it any more. */
    void (*forget_notify)(l3_store *store, int notify_fd);
    /* Optional: for the thread that begins and polls jobs with
     * `notify_fd`, a sleep between its rounds that wakes once for many of
     * its jobs' completions, not once each: until much of one job's I/O
     * in flight has finished, `notify_fd` is written by anything else (a
     * new operation queued), or `until` (monotonic seconds; 0: none).
     * False at once when its jobs have no I/O in flight on which to sleep:
     * the caller sleeps on `notify_fd` itself. */
    bool (*driver_wait)(l3_store *store, int notify_fd, double until);
    /* Optional: the thread that will begin and poll up to `ops` jobs at
     * once with `notify_fd` makes ready what they will use (the slab
     * store: rings of its own, the Host regions registered on them), so
     * that its first jobs do not pay for it. */
    void (*driver_start)(l3_store *store, int notify_fd, size_t ops);
} l3_store_ops;

/* The most ranges one object may have. The slab store's on-disk segment
 * table is sized by it (store/slab/format.h, FORMAT.md: 2 to 64 sizes), so
 * raising it changes that format. */
#define L3_MAX_RANGES_PER_KEY 64u

/* A store: embed this as the first member of a concrete store. */
struct l3_store {
    const l3_store_ops *ops;
};

/* Call a store's operation (for bindings that cannot call through the
 * vtable); each forwards to store->ops. */
l3_status l3_store_batch_exists(l3_store *store, const char *const *keys, size_t n, bool *flags,
                                l3_error *err);
l3_status l3_store_batch_get_into(l3_store *store, const char *const *keys, size_t n,
                                  l3_host_buffer host, const l3_range *ranges, l3_io_result *result,
                                  l3_error *err);
l3_status l3_store_batch_put_from(l3_store *store, const char *const *keys, size_t n,
                                  l3_host_buffer host, const l3_range *ranges, l3_io_result *result,
                                  l3_error *err);
bool l3_store_remove_by_prefix(l3_store *store, const char *prefix);
/* Delete keys (see batch_delete); L3_EUNSUPPORTED for stores without it. */
l3_status l3_store_batch_delete(l3_store *store, const char *const *keys, size_t n, bool *deleted,
                                l3_error *err);
/* Multi-range gets and puts (see batch_get_into_v): `per_key` ranges per
 * key, 1 to L3_MAX_RANGES_PER_KEY; with 1 they are batch_get_into and
 * batch_put_from. L3_EUNSUPPORTED for a store without them. */
l3_status l3_store_batch_get_into_v(l3_store *store, const char *const *keys, size_t n,
                                    l3_host_buffer host, const l3_range *ranges, size_t per_key,
                                    l3_io_result *result, l3_error *err);
l3_status l3_store_batch_put_from_v(l3_store *store, const char *const *keys, size_t n,
                                    l3_host_buffer host, const l3_range *ranges, size_t per_key,
                                    l3_io_result *result, l3_error *err);
/* batch_put_from_v with hints (see batch_put_hinted); a store without
 * them stores the batch as batch_put_from_v does. */
l3_status l3_store_batch_put_hinted(l3_store *store, const char *const *keys, size_t n, l3_host_buffer host,
                                    const l3_range *ranges, size_t per_key, const l3_put_hints *hints,
                                    l3_io_result *result, l3_error *err);
/* batch_exists that leases what it finds for `seconds` (see batch_lease);
 * a store without leases answers as batch_exists. */
l3_status l3_store_batch_lease(l3_store *store, const char *const *keys, size_t n, double seconds,
                               bool *flags, l3_error *err);
/* The most Host regions a store registers at once. */
#define L3_MAX_HOST_REGIONS 64u

/* Register the Host regions that later batches read and write (an
 * engine's pools: K and V in two allocations, or one pool per kind of
 * state), replacing the ones before; n = 0 clears them. Each must be
 * non-empty, and no two may overlap. A batch's ranges may lie in any of
 * them (its `host` spans them). L3_OK for stores without registration. */
l3_status l3_store_register_hosts(l3_store *store, const l3_host_buffer *regions, size_t n,
                                  l3_error *err);
/* Register one Host region, as l3_store_register_hosts with it alone (a
 * NULL base clears them). */
l3_status l3_store_register_host(l3_store *store, l3_host_buffer host, l3_error *err);

/* Check Host regions: at most L3_MAX_HOST_REGIONS, none empty or NULL,
 * none overlapping another; L3_EINVAL naming the first that is not. */
l3_status l3_check_host_regions(const l3_host_buffer *regions, size_t n, l3_error *err);
/* Close, then free, a store. */
void l3_store_close(l3_store *store);
void l3_store_destroy(l3_store *store);

/* Check a batch's arrays: with n >= 1, keys (none NULL), `per_key` (the
 * flags or the result's arrays) and, when `need_ranges`, ranges must be
 * given; L3_EINVAL otherwise. The l3_store_batch_* calls check it. */
l3_status l3_check_batch_args(const char *const *keys, size_t n, const void *per_key, const l3_range *ranges,
                              bool need_ranges, l3_error *err);

/* Check that every range lies inside `host`; L3_EINVAL naming the first
 * that does not. Stores call it before any I/O. */
l3_status l3_check_ranges(l3_host_buffer host, const l3_range *ranges, size_t n, l3_error *err);

#endif
