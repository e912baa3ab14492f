/* Slab summaries (summary.h). */
#include "summary.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "index.h"
#include "meta.h"

bool l3_summary_due(const l3_slabstore *s, uint32_t slab)
{
    const slab_info *sl = &s->slabs[slab];
    return s->geo.summaries && sl->disk_used && sl->record_gen == sl->gen && sl->summary_gen != sl->gen &&
           sl->inflight == 0 && (sl->state == S_SEALED || (sl->state == S_OPEN && sl->next_slot >= sl->nslots));
}

/* The head's number for index namespace `ns` (added if new): 0 for none,
 * -1 when the head names L3_SUMMARY_NS others already. */
static int head_ns(const l3_slabstore *s, l3_summary_head *h, uint16_t ns)
{
    if (!ns)
        return 0;
    const ns_info *n = &s->ns[ns - 1];
    for (uint32_t j = 0; j < h->num_ns; j++)
        if (h->ns_len[j] == n->len && memcmp(h->ns_text[j], n->text, n->len) == 0)
            return (int)j + 1;
    if (h->num_ns == L3_SUMMARY_NS)
        return -1;
    h->ns_len[h->num_ns] = n->len;
    memcpy(h->ns_text[h->num_ns], n->text, n->len);
    return (int)++h->num_ns;
}

/* Slab i's summary from the index into `buf` (under the lock); false when
 * its objects span more namespaces than a head names. */
static bool build(l3_slabstore *s, uint32_t i, uint8_t *buf)
{
    const slab_info *sl = &s->slabs[i];
    memset(buf, 0, l3_summary_bytes(&s->geo, s->geo.max_slots));
    l3_summary_head *h = (l3_summary_head *)buf;
    l3_summary_entry *ents = (l3_summary_entry *)(buf + L3_SUMMARY_ENTRIES_AT);
    const uint32_t *ids = l3_slab_slot_ids(s, i);
    h->slab = i;
    h->payload_blocks = sl->payload_blocks;
    h->gen = sl->gen;
    h->epoch = s->table[i].epoch;
    h->nslots = sl->nslots;
    L3_ASSERT(sl->next_slot <= sl->nslots); /* the allocator's (l3_alloc_restore_fill, reservations) */
    for (uint32_t k = 0; k < sl->next_slot; k++) {
        const l3_index_entry *e = ids[k] ? l3_index_find_at(&s->index, ids[k], i, k) : NULL;
        if (!e)
            continue;
        int j = head_ns(s, h, e->ns);
        if (j < 0)
            return false;
        ents[k] = (l3_summary_entry){ .hash = e->hash, .seq = e->seq, .check = 0, .crc = e->crc, /* (sealed) */
                                      .size = e->size, .key_len = e->key_len, .ns = (uint8_t)j,
                                      .flags = e->flags & L3_ENTRY_SEGMENTED ? L3_SUMMARY_SEGMENTED : 0 };
        l3_summary_entry_seal(&ents[k], i, k, sl->gen);
    }
    l3_summary_head_seal(h);
    return true;
}

void l3_summary_settle(l3_slabstore *s, uint32_t slab)
{
    if (!s->geo.summaries)
        return;
    slab_info *sl = &s->slabs[slab];
    l3_slab_lock(s);
    bool due = l3_summary_due(s, slab); /* (checked again below, under summary_mu) */
    l3_slab_unlock(s);
    if (!due)
        return;
    uint8_t *buf = l3_meta_alloc(s->geo.block_size, l3_summary_bytes(&s->geo, s->geo.max_slots));
    l3_shm_lock(&s->shm, &s->sh->summary_mu);
    l3_slab_lock(s);
    bool built = false;
    uint32_t pb = sl->payload_blocks;
    if (l3_summary_due(s, slab)) {
        sl->summary_gen = sl->gen; /* claimed: written once per generation, or not at all */
        built = buf && build(s, slab, buf);
    }
    l3_slab_unlock(s);
    l3_error err;
    if (built &&
        l3_meta_io(s, true, buf, l3_summary_len(&s->geo, pb), l3_summary_offset(&s->geo, slab, pb), &err) != L3_OK)
        l3_log("warning", "%s: writing slab %u's summary: %s (a crash scan reads its headers instead)", s->path,
               slab, err.msg);
    l3_shm_unlock(&s->sh->summary_mu);
    free(buf);
}

l3_status l3_summary_forget(l3_slabstore *s, uint32_t slab, uint32_t slot, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    if (!g->summaries)
        return L3_OK;
    uint32_t b = g->block_size;
    uint64_t at = L3_SUMMARY_ENTRIES_AT + (uint64_t)slot * sizeof(l3_summary_entry);
    uint64_t first = at / b * b, len = l3_round_up(at + sizeof(l3_summary_entry), b) - first;
    uint8_t *buf = l3_meta_alloc(b, (size_t)len);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a summary block");
    uint64_t off = l3_summary_offset(g, slab, s->slabs[slab].payload_blocks) + first; /* (pinned: stable) */
    l3_shm_lock(&s->shm, &s->sh->summary_mu);
    l3_status st = l3_meta_io(s, false, buf, (size_t)len, off, err);
    if (st == L3_OK) {
        memset(buf + (at - first), 0, sizeof(l3_summary_entry));
        st = l3_meta_io(s, true, buf, (size_t)len, off, err);
    }
    l3_shm_unlock(&s->sh->summary_mu);
    free(buf);
    return st;
}
