/* l3cache: the slab store's batch paths (internal; not installed): what
 * exists, get and put share (batch.c), and the store operations that
 * get.c, put.c and remove.c implement. */
#ifndef L3_BATCH_H
#define L3_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slab.h"

/* Refuse a batch the store cannot run (closed, fatal) or whose arrays,
 * keys or ranges are missing or malformed (l3_check_batch_args); an
 * existence batch needs no ranges. */
l3_status l3_batch_check(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                         const l3_range *ranges, const void *per_key, bool need_ranges, l3_error *err);

/* The same for a get or put: its ranges and both result arrays are
 * required (none for an empty batch). */
l3_status l3_batch_check_io(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                            const l3_range *ranges, const l3_io_result *res, l3_error *err);

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
    int first_req, num_reqs;
} l3_plan;

/* Append a header request and the payload's requests for plan `p` at
 * reqs[r]: the header at p->dev - header_bytes from `header`. Returns the
 * next free request index, or -1 when a temporary buffer cannot be had. */
int l3_plan_slot(l3_slabstore *s, l3_plan *p, bool write, uint8_t *header, l3_io_req *reqs, int r);

/* Whether every request of a plan moved all its bytes; the first error
 * goes into *error. */
bool l3_plan_ok(const l3_io_req *reqs, const l3_plan *p, int *error);

/* Free the plans' temporary buffers. */
void l3_plan_free(l3_plan *plans, size_t n);

/* The store operations (l3_store.h). */
l3_status l3_slab_exists(l3_store *st, const char *const *keys, size_t n, bool *flags, l3_error *err);
l3_status l3_slab_get(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                      const l3_range *ranges, l3_io_result *res, l3_error *err);
l3_status l3_slab_put(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                      const l3_range *ranges, l3_io_result *res, l3_error *err);
bool l3_slab_remove(l3_store *st, const char *prefix);
l3_status l3_slab_delete(l3_store *st, const char *const *keys, size_t n, bool *deleted, l3_error *err);

#endif
