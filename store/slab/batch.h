/* l3cache: the slab store's batch paths (internal; not installed): what
 * exists, get and put share (batch.c), and the store operations that
 * get.c, put.c and remove.c implement. */
#ifndef L3_BATCH_H
#define L3_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entries.h"

/* Refuse a batch the store cannot run (closed, fatal) or whose arrays,
 * keys or ranges are missing or malformed (l3_check_batch_args); an
 * existence batch needs no ranges. */
l3_status l3_batch_check(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                         const l3_range *ranges, size_t k, const void *per_key, bool need_ranges,
                         l3_error *err);

/* The same for a get or put of `k` ranges per key (1 to
 * L3_MAX_RANGES_PER_KEY): its ranges and both result arrays are required
 * (none for an empty batch). */
l3_status l3_batch_check_io(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                            const l3_range *ranges, size_t k, const l3_io_result *res, l3_error *err);

/* The on-disk payload length of an object of `k` ranges (format.h: each
 * but the last padded to the block). */
uint64_t l3_ranges_disk_len(const l3_range *ranges, size_t k, uint32_t block);

/* The payload crc32c of an object of `k` ranges of `base`: over its disk
 * image, padding as zeros. */
uint32_t l3_ranges_crc(const uint8_t *base, const l3_range *ranges, size_t k, uint32_t block);

/* Record the shape of `k` ranges in a header (nothing for one range), and
 * whether a header has that shape. */
void l3_header_set_shape(l3_object_header *h, const l3_range *ranges, size_t k);
bool l3_header_has_shape(const l3_object_header *h, const l3_range *ranges, size_t k);

/* Every key failed (not an object failure), all retired: what a batch
 * reports until a key proves otherwise. */
void l3_batch_result_clear(l3_io_result *res, size_t n);

/* How a key's payload moves: straight to or from the pool for the aligned
 * part, through a bounce block for a partial tail, or all through a
 * temporary aligned buffer when the pool address is misaligned. */
typedef struct l3_plan {
    uint64_t dev;       /* device offset of the payload */
    uint8_t *host;      /* its Host range */
    uint32_t size;
    uint32_t direct;    /* bytes read/written in place */
    uint32_t tail;      /* bytes through the bounce block */
    uint8_t *tail_buf;  /* the bounce block */
    uint8_t *temp;      /* misaligned: the whole payload's buffer */
    uint8_t *own_tail;  /* a bounce block of its own (a later segment's) */
    int first_req, num_reqs;
} l3_plan;

/* Append a header request and the payload's requests for plan `p` at
 * reqs[r]: the header at p->dev - header_bytes from `header`. Returns the
 * next free request index, or -1 when a temporary buffer cannot be had. */
int l3_plan_slot(l3_slabstore *s, l3_plan *p, bool write, uint8_t *header, l3_io_req *reqs, int r);

/* Plan an object of `k` ranges of `base` whose payload starts at `dev`:
 * plans[0..k), one per segment, the header (when not NULL) with the
 * first; `tail_buf` is the first segment's bounce block, later ones get
 * their own. Returns the next request index, or -1. */
int l3_plan_object(l3_slabstore *s, l3_plan *plans, size_t k, uint64_t dev, uint8_t *base,
                   const l3_range *ranges, bool write, uint8_t *header, uint8_t *tail_buf, l3_io_req *reqs,
                   int r);

/* Whether every request of a plan moved all its bytes; the first error
 * goes into *error. */
bool l3_plan_ok(const l3_io_req *reqs, const l3_plan *p, int *error);

/* The same for an object's `k` plans. */
bool l3_plans_ok(const l3_io_req *reqs, const l3_plan *plans, size_t k, int *error);

/* Free the plans' temporary buffers. */
void l3_plan_free(l3_plan *plans, size_t n);

/* A reinsertion: the object `header` describes (its copy of sequence
 * `old_seq`) is written anew and replaces that copy if it is still the
 * current one. */
typedef struct l3_move {
    uint64_t old_seq;
    const l3_object_header *header;
    bool early; /* an early keep (policy.h: L3_KEEP_EARLY) */
} l3_move;

/* How long a driven job (a get's or a put's) waits before it looks again
 * for what it could not take: a free context, or a closed gate. */
#define L3_JOB_RETRY 0.001

/* A put batch (put.c) as a job, run in waves of the store's batch_keys
 * keys: each wave reserves slots, writes its headers and payloads and
 * publishes what was written. With `moves` (one per key) the keys are
 * reinsertions (reinsert.c) rather than create-only puts, and the batch
 * is not checked. `hints` (NULL: none) must outlive the job; its writes
 * signal eventfd `notify_fd` (or -1). NULL when even the job cannot be
 * had. */
l3_store_put_job *l3_put_job_new(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                                 const l3_range *ranges, size_t k, const l3_move *moves, const l3_put_hints *hints,
                                 l3_io_result *res, int notify_fd);

/* Take a job as far as it goes: true once it is done. When `block`, it
 * sleeps on what it waits for; else it comes back when it must wait,
 * *wake_by the latest time to call again (0: its eventfd says when).
 * Before each wave of a put (not a move) it comes back with *room, the
 * bytes to make room for (l3_reinsert_make_room: put.c does not call
 * reinsert.c, which calls it), and goes on when called again. */
bool l3_put_job_step(l3_store_put_job *j, bool block, double *wake_by, uint64_t *room);

/* The store a job writes to. */
l3_slabstore *l3_put_job_store(const l3_store_put_job *j);

/* End a job that l3_put_job_step found done, and free it: the batch's
 * status (one device's write error fails the batch,
 * several devices' fail their keys alone). */
l3_status l3_put_job_end(l3_store_put_job *j, l3_error *err);

/* A whole batch of moves, wave after wave, making no room (reinsert.c). */
l3_status l3_put_run(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                     const l3_range *ranges, size_t k, const l3_move *moves, l3_io_result *res, l3_error *err);

/* The store operations (l3_store.h). */
l3_status l3_slab_exists(l3_store *st, const char *const *keys, size_t n, bool *flags, l3_error *err);
l3_status l3_slab_lease(l3_store *st, const char *const *keys, size_t n, double seconds, bool *flags,
                        l3_error *err);
l3_status l3_slab_get(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                      const l3_range *ranges, l3_io_result *res, l3_error *err);
l3_status l3_slab_get_v(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                        const l3_range *ranges, size_t k, l3_io_result *res, l3_error *err);
l3_status l3_slab_get_begin(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                            const l3_range *ranges, l3_io_result *res, int notify_fd, l3_store_job **job,
                            l3_error *err);
bool l3_slab_get_poll(l3_store_job *job, double *wake_by);
l3_status l3_slab_get_end(l3_store_job *job, l3_error *err);
void l3_slab_forget_notify(l3_store *st, int notify_fd);
/* The store op driver_start: the engine's l3_io_own. */
void l3_slab_driver_start(l3_store *st, int notify_fd, size_t ops);
/* The store op driver_wait: the engine's l3_io_wait_owned. */
bool l3_slab_driver_wait(l3_store *st, int notify_fd, double until);
bool l3_slab_remove(l3_store *st, const char *prefix);
l3_status l3_slab_delete(l3_store *st, const char *const *keys, size_t n, bool *deleted, l3_error *err);

#endif
