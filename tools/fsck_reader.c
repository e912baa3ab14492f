/* l3fsck's read-ahead (fsck_reader.h). */
#include "fsck_reader.h"

#include <stdlib.h>

/* Read item j into its buffer. */
static void read_item(fsck_reader *r, size_t j)
{
    uint64_t off = 0;
    size_t len = r->range(r->f, r->ctx, j, &off);
    r->rc[j % 2] = len ? fsck_read_bulk(r->f, r->buf[j % 2], len, off) : 0;
}

static void *read_items(void *arg)
{
    fsck_reader *r = arg;
    size_t j = 0;
    for (; j < r->n && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED); j++) {
        l3_progress_wait(&r->used, j < 2 ? 0 : j - 1); /* item j - 2 is done with its buffer */
        if (__atomic_load_n(&r->stop, __ATOMIC_RELAXED))
            break;
        read_item(r, j);
        l3_progress_set(&r->read, j + 1, false);
    }
    l3_progress_set(&r->read, j, true);
    return NULL;
}

bool fsck_reader_start(fsck_reader *r, fsck *f, size_t n, size_t cap, fsck_range_fn range, void *ctx)
{
    *r = (fsck_reader){ .f = f, .range = range, .ctx = ctx, .n = n, .read = L3_PROGRESS_INIT,
                        .used = L3_PROGRESS_INIT };
    for (int b = 0; b < 2; b++)
        if (posix_memalign((void **)&r->buf[b], 4096, cap ? cap : 4096) != 0)
            r->buf[b] = NULL;
    if (!r->buf[0] || !r->buf[1]) {
        fsck_reader_stop(r);
        return false;
    }
    r->threaded = pthread_create(&r->thread, NULL, read_items, r) == 0;
    return true;
}

uint8_t *fsck_reader_get(fsck_reader *r, size_t j, int *rc)
{
    if (!r->threaded)
        read_item(r, j);
    else if (l3_progress_wait(&r->read, j + 1) < j + 1) {
        *rc = -1; /* stopped before it */
        return NULL;
    }
    *rc = r->rc[j % 2];
    return r->buf[j % 2];
}

void fsck_reader_done(fsck_reader *r, size_t j)
{
    if (r->threaded)
        l3_progress_set(&r->used, j + 1, false);
}

void fsck_reader_stop(fsck_reader *r)
{
    if (r->threaded) {
        __atomic_store_n(&r->stop, true, __ATOMIC_RELAXED);
        l3_progress_set(&r->used, r->n, true); /* wake it if it waits for a buffer */
        pthread_join(r->thread, NULL);
        r->threaded = false;
    }
    free(r->buf[0]);
    free(r->buf[1]);
    r->buf[0] = r->buf[1] = NULL;
}
