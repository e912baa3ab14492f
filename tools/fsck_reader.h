/* l3fsck's read-ahead: a thread reads a list of ranges in turn into two
 * buffers while the checker uses the other, so that reading and checking
 * overlap (the summaries of a store's slabs, the chunks of its checkpoint). */
#ifndef L3_FSCK_READER_H
#define L3_FSCK_READER_H

#include <pthread.h>

#include "bulk.h"
#include "fsck.h"

/* Where item j lies: its bytes (whole blocks, at most the buffers' size)
 * and image offset; 0 bytes for nothing to read. */
typedef size_t (*fsck_range_fn)(fsck *f, void *ctx, size_t j, uint64_t *off);

typedef struct fsck_reader {
    fsck *f;
    fsck_range_fn range;
    void *ctx;
    size_t n;
    uint8_t *buf[2];
    int rc[2];               /* item j's read: 0, 1 (zeros past the end) or -errno */
    bool stop;               /* the checker is done early (atomic) */
    l3_progress read, used;  /* items read (the thread's), items used (the checker's) */
    pthread_t thread;
    bool threaded;
} fsck_reader;

/* Start reading n items into buffers of `cap` bytes; false when out of
 * memory (then items are read as they are asked for). */
bool fsck_reader_start(fsck_reader *r, fsck *f, size_t n, size_t cap, fsck_range_fn range, void *ctx);

/* Item j's buffer once read (items in order), its read's result in *rc. */
uint8_t *fsck_reader_get(fsck_reader *r, size_t j, int *rc);

/* Done with item j: its buffer may take item j + 2. */
void fsck_reader_done(fsck_reader *r, size_t j);

/* Stop the thread and free the buffers. */
void fsck_reader_stop(fsck_reader *r);

#endif
