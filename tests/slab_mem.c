/* A slab store's state in memory (slab_mem.h). */
#include "slab_mem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "aligned.h"
#include "alloc.h"
#include "l3_keys.h"

l3_slabstore *slab_mem_new(uint32_t num_slabs, uint64_t slab_size, uint64_t max_objects)
{
    l3_slabstore *s = calloc(1, sizeof *s);
    char why[256];
    uint64_t capacity = (uint64_t)num_slabs * slab_size;
    if (!s)
        return NULL;
    /* Plan a store a little larger (room for its metadata), then keep the
     * slabs asked for. */
    if (!l3_geometry_plan(capacity + (64u << 20), slab_size, 4096, max_objects, 65536, &s->geo, why, sizeof why)) {
        free(s);
        return NULL;
    }
    s->geo.num_slabs = num_slabs;
    s->opt.eviction = L3_EVICT_FIFO_REINSERT;
    s->path = "memory";
    s->ndev = 1;
    l3_shm_init(&s->shm, s->path, 0600);
    shared hdr;
    memset(&hdr, 0, sizeof hdr);
    size_t size = l3_shm_layout(&s->geo, &hdr);
    shared *sh = l3_aligned_alloc(4096, size, true);
    if (!sh) {
        free(s);
        return NULL;
    }
    *sh = hdr;
    pthread_mutex_init(&sh->lock, NULL);
    l3_shm_format_areas(sh, &s->geo);
    l3_admit_format(&sh->admit, L3_ADMISSION_ALL, L3_LADDER_LEN - 1);
    s->shm.sh = s->sh = sh;
    s->shm.size = size;
    l3_shm_views v = l3_shm_views_of(sh);
    s->slabs = v.slabs;
    s->class_open = v.class_open;
    s->slot_ids = v.slot_ids;
    s->ghost = (l3_ghost){ .head = &sh->ghost, .words = v.ghost };
    s->shadows = v.shadows;
    s->feed = (l3_feed){ .head = &sh->feed, .slots = v.feed };
    s->groups = (l3_groups){ .meta = &sh->groups, .table = v.groups };
    s->table = v.table;
    s->journal = v.journal;
    s->index = (l3_index){ .table = v.index, .meta = &sh->index };
    s->ns = sh->ns;
    atomic_store(&sh->seq, 1);
    l3_alloc_reset(s); /* every slab free, every class without an open slab */
    l3_shm_claim_slot(&s->shm);
    return s;
}

void slab_mem_free(l3_slabstore *s)
{
    free(s->sh);
    free(s);
}

l3_index_entry slab_mem_publish(l3_slabstore *s, const char *name, uint32_t slab, uint32_t slot, uint32_t size)
{
    l3_key_id id = l3_key_identity(name, strlen(name));
    l3_index_entry e = { .hash = id.hash, .key_len = id.len, .slab = slab, .slot = slot,
                         .size = size, .seq = atomic_fetch_add(&s->sh->seq, 1),
                         .gen = (uint32_t)s->slabs[slab].gen };
    l3_entry_publish(s, &e);
    return e;
}
