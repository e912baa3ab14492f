/* l3cache: reading ahead (internal; not installed).
 *
 * A consumer that walks a sequence of items in order (a crash scan's
 * slabs, a checkpoint's chunks, l3fsck's summaries), each read from a
 * device into a buffer, need not wait for each read: reader threads read
 * the next items into a ring of buffers while it uses the ones that
 * landed, so that reading and using overlap.
 *
 * Items are numbered 0 to items - 1. Item j goes to buffer j % ring, read
 * once the consumer released item j - ring: at most `ring` items are read
 * and not yet released. Reader thread t of `threads` reads items t,
 * t + threads, t + 2 * threads, ...: with more than one, that many reads
 * are queued at the device at once. The consumer takes items in order
 * (l3_readahead_get) and releases each when done with it.
 *
 * The first read that fails (by item, the lowest) ends the reading: the
 * items before it are still delivered, it and the ones after it are not,
 * and its status and message are kept (l3_readahead_failure). The
 * consumer may stop at any time (l3_readahead_stop): readers waiting for
 * a buffer wake and end, a read under way finishes first; after the stop
 * the failure, if any, is final. */
#ifndef L3_READAHEAD_H
#define L3_READAHEAD_H

#include <stdbool.h>
#include <stddef.h>

#include "l3_status.h"

/* Read item `item` into `buf` (spec.buf_bytes long); runs on a reader
 * thread, possibly on several at once. L3_OK delivers the item; any other
 * status ends the reading (`err` says why). */
typedef l3_status (*l3_readahead_fn)(void *arg, size_t item, void *buf, l3_error *err);

/* What to read, and how far ahead. */
typedef struct l3_readahead_spec {
    size_t items;         /* items to read (0: none) */
    size_t buf_bytes;     /* each buffer's bytes: the largest item */
    unsigned ring;        /* buffers (>= 1): items read ahead of the consumer, at most */
    unsigned threads;     /* reader threads (>= 1; no more than items are started) */
    l3_readahead_fn read; /* reads one item */
    void *arg;            /* its first argument */
} l3_readahead_spec;

typedef struct l3_readahead l3_readahead;

/* Allocate the ring (min(ring, items) buffers, at least one, of buf_bytes
 * each: zeroed, 2 MiB aligned, advised as huge pages: l3_pool_alloc) and
 * start the readers. L3_EINVAL for a spec without a reader, buffer or
 * thread; L3_ENOMEM when the buffers or the threads cannot be had
 * (nothing is left running). */
l3_status l3_readahead_start(const l3_readahead_spec *spec, l3_readahead **out, l3_error *err);

/* Item `item`'s buffer once it landed, waiting for it; NULL when it never
 * will: past the last item, a read at or before it failed, or the reading
 * was stopped. Items come in order: fewer than `ring` items before `item`
 * may be unreleased (else its buffer would never be free). */
void *l3_readahead_get(l3_readahead *ra, size_t item);

/* Done with `item` and every item before it: their buffers may take the
 * items `ring` after them. */
void l3_readahead_release(l3_readahead *ra, size_t item);

/* The failed read's status (of the lowest item that failed; L3_OK: none
 * failed so far), and then its message in *err (when not NULL; else *err
 * is left as it was). */
l3_status l3_readahead_failure(l3_readahead *ra, l3_error *err);

/* Stop reading and wait for the readers to end (a read under way
 * finishes first); the items that landed stay got until it is freed. */
void l3_readahead_stop(l3_readahead *ra);

/* Stop it (if it was not) and free it. The buffers are unmapped unless
 * `keep_buffers`: a read whose I/O was not reaped (an engine's timeout)
 * may still land in them, so they must stay mapped (a buffer got before
 * stays valid then). NULL is a no-op. */
void l3_readahead_free(l3_readahead *ra, bool keep_buffers);

#endif
