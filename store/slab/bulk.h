/* l3cache: what the slab store's bulk loaders share (internal; not
 * installed): a count one thread advances while another waits on it (the
 * checkpoint's bytes read, a scan's slabs read and judged), and faulting
 * the shared mapping's big tables in on threads. */
#ifndef L3_BULK_H
#define L3_BULK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "entries.h"

/* A count that one thread advances and another waits on, and whether its
 * thread has stopped advancing it. */
typedef struct l3_progress {
    uint64_t count;
    bool stopped;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} l3_progress;

#define L3_PROGRESS_INIT { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER }

/* Advance to `count`, or say that no more will come (stop); what the
 * thread wrote before is seen by whoever waits on it after. */
void l3_progress_set(l3_progress *p, uint64_t count, bool stop);

/* Wait until the count reaches `at_least` or its thread stops; the count. */
uint64_t l3_progress_wait(l3_progress *p, uint64_t at_least);

/* Threads faulting in the index and the slot table (the index in two
 * halves), started when `entries` will touch nearly all their pages
 * anyway (a page holds 85 index slots: at a load of 1/20, 98% of pages
 * have one). */
typedef struct l3_populate {
    struct { void *start; size_t len; } job[3];
    pthread_t thread[3];
    int started;
} l3_populate;

/* Start them (none for a small load). */
void l3_populate_start(l3_slabstore *s, uint64_t entries, l3_populate *p);

/* Wait for them to finish. */
void l3_populate_join(l3_populate *p);

#endif
