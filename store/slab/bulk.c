/* What the slab store's bulk loaders share (bulk.h). */
#include "bulk.h"

#include <sys/mman.h>

#include "index.h"

void l3_progress_set(l3_progress *p, uint64_t count, bool stop)
{
    pthread_mutex_lock(&p->mu);
    p->count = count;
    p->stopped = p->stopped || stop;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

uint64_t l3_progress_wait(l3_progress *p, uint64_t at_least)
{
    pthread_mutex_lock(&p->mu);
    while (p->count < at_least && !p->stopped)
        pthread_cond_wait(&p->cv, &p->mu);
    uint64_t count = p->count;
    pthread_mutex_unlock(&p->mu);
    return count;
}

/* Fault one range in: one call instead of a fault per page. */
static void *populate(void *arg)
{
#ifdef MADV_POPULATE_WRITE
    const struct { void *start; size_t len; } *j = arg;
    uintptr_t page = 4096, start = (uintptr_t)j->start & ~(page - 1);
    uintptr_t end = ((uintptr_t)j->start + j->len + page - 1) & ~(page - 1);
    (void)madvise((void *)start, end - start, MADV_POPULATE_WRITE); /* a hint: failure costs only time */
#else
    (void)arg;
#endif
    return NULL;
}

void l3_populate_start(l3_slabstore *s, uint64_t entries, l3_populate *p)
{
    p->started = 0;
    if (entries < l3_index_capacity(&s->index) / 20)
        return; /* a small load: the faults are few, the memory not all needed */
    size_t index_bytes = l3_index_capacity(&s->index) * sizeof(l3_index_entry), half = index_bytes / 2;
    p->job[0].start = s->index.table;
    p->job[0].len = half;
    p->job[1].start = (uint8_t *)s->index.table + half;
    p->job[1].len = index_bytes - half;
    p->job[2].start = s->slot_ids;
    p->job[2].len = (size_t)s->geo.num_slabs * s->sh->max_slots * sizeof(uint32_t);
    for (int k = 0; k < 3; k++)
        if (pthread_create(&p->thread[p->started], NULL, populate, &p->job[k]) == 0)
            p->started++;
}

void l3_populate_join(l3_populate *p)
{
    for (int k = 0; k < p->started; k++)
        pthread_join(p->thread[k], NULL);
    p->started = 0;
}
