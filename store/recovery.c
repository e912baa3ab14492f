/* The slab store's recovery: the index checkpoint written at a clean close
 * and read at the next open, and the scan of object headers that rebuilds
 * the index after a crash. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "l3_crc32c.h"
#include "slab_internal.h"

#define OPEN_FLAG 0x80000000u
#define FREE_FLAG 0x40000000u

/* Adopt every slab whose record is valid, used and of this epoch. */
static l3_status adopt_slabs(l3_slabstore *s, l3_error *err)
{
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        const l3_slab_record *r = &s->table[i];
        slab *sl = &s->slabs[i];
        if (l3_slab_record_valid(r, i))
            sl->gen = r->gen; /* a reopened slab's generation keeps growing */
        if (!l3_slab_record_valid(r, i) || r->state != L3_SLAB_USED || r->epoch != s->sh->sb.epoch) {
            sl->state = S_FREE;
            continue;
        }
        l3_status st = l3_slab_adopt(s, i, r, err);
        if (st == L3_ECORRUPT) {
            sl->state = S_FREE; /* a record we cannot use: its objects are lost */
            continue;
        }
        if (st != L3_OK)
            return st;
    }
    return L3_OK;
}

l3_status l3_slab_write_checkpoint(l3_slabstore *s, uint32_t *crc_out, uint64_t *bytes_out,
                                   l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size;
    l3_slab_lock(s);
    uint64_t ns_bytes = (uint64_t)s->sh->num_ns * sizeof(l3_ns_record);
    uint64_t fill_bytes = (uint64_t)g->num_slabs * 4;
    uint64_t body = ns_bytes + fill_bytes + s->index.meta->count * sizeof(l3_index_entry);
    uint64_t total = b + l3_round_up(body, b);
    if (total > g->checkpoint_len) {
        l3_slab_unlock(s);
        return l3_fail(err, L3_ENOSPC, "the checkpoint (%llu bytes) exceeds its area",
                       (unsigned long long)total);
    }
    uint8_t *buf = l3_slab_alloc_aligned(b, total);
    if (!buf) {
        l3_slab_unlock(s);
        return l3_fail(err, L3_ENOMEM, "allocating a %llu-byte checkpoint", (unsigned long long)total);
    }
    uint8_t *p = buf + b;
    for (uint32_t i = 0; i < s->sh->num_ns; i++) {
        l3_ns_record rec;
        memset(&rec, 0, sizeof rec);
        rec.len = s->ns[i].objects ? s->ns[i].len : 0;
        memcpy(rec.text, s->ns[i].text, rec.len);
        memcpy(p, &rec, sizeof rec);
        p += sizeof rec;
    }
    for (uint32_t i = 0; i < g->num_slabs; i++) {
        const slab *sl = &s->slabs[i];
        uint32_t fill = sl->next_slot;
        if (sl->state == S_OPEN)
            fill |= OPEN_FLAG;
        if (sl->state == S_FREE)
            fill |= FREE_FLAG;
        memcpy(p, &fill, 4);
        p += 4;
    }
    uint64_t entries = 0;
    for (uint64_t i = 0; i <= s->index.meta->mask; i++) {
        if (s->index.table[i].hash) {
            memcpy(p, &s->index.table[i], sizeof(l3_index_entry));
            p += sizeof(l3_index_entry);
            entries++;
        }
    }
    l3_checkpoint_header *h = (l3_checkpoint_header *)buf;
    h->body_bytes = body;
    h->body_crc = l3_crc32c(0, buf + b, body);
    h->sequence = s->sh->sb.sequence + 1; /* the superblock write that follows */
    h->num_namespaces = s->sh->num_ns;
    h->num_slabs = g->num_slabs;
    h->num_entries = entries;
    l3_slab_unlock(s);
    l3_checkpoint_header_seal(h);
    l3_status st = l3_slab_rw_all(s->fd, s->path, true, buf, total, g->checkpoint_off, err);
    if (st == L3_OK && fdatasync(s->fd) != 0)
        st = l3_fail(err, L3_EIO, "fdatasync: %s", strerror(errno));
    *crc_out = h->body_crc;
    *bytes_out = body;
    free(buf);
    return st;
}

l3_status l3_slab_load_checkpoint(l3_slabstore *s, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size;
    uint8_t *head = l3_slab_alloc_aligned(b, b);
    if (!head)
        return l3_fail(err, L3_ENOMEM, "allocating a checkpoint buffer");
    l3_status st = l3_slab_rw_all(s->fd, s->path, false, head, b, g->checkpoint_off, err);
    l3_checkpoint_header h;
    memcpy(&h, head, sizeof h);
    free(head);
    if (st != L3_OK)
        return st;
    if (!l3_checkpoint_header_valid(&h))
        return l3_fail(err, L3_ECORRUPT, "the checkpoint header does not check");
    if (h.sequence != s->sh->sb.sequence || h.body_crc != s->sh->sb.ckpt_crc ||
        h.body_bytes != s->sh->sb.ckpt_bytes || h.num_slabs != g->num_slabs ||
        h.num_namespaces > L3_MAX_NAMESPACES || h.num_entries > g->max_objects ||
        b + h.body_bytes > g->checkpoint_len ||
        h.body_bytes != (uint64_t)h.num_namespaces * sizeof(l3_ns_record) +
                            (uint64_t)h.num_slabs * 4 + h.num_entries * sizeof(l3_index_entry))
        return l3_fail(err, L3_ECORRUPT, "the checkpoint does not belong to this superblock");
    uint64_t len = l3_round_up(h.body_bytes, b);
    uint8_t *body = l3_slab_alloc_aligned(b, len);
    if (!body)
        return l3_fail(err, L3_ENOMEM, "allocating a %llu-byte checkpoint buffer",
                       (unsigned long long)len);
    st = l3_slab_rw_all(s->fd, s->path, false, body, len, g->checkpoint_off + b, err);
    if (st == L3_OK && l3_crc32c(0, body, h.body_bytes) != h.body_crc)
        st = l3_fail(err, L3_ECORRUPT, "the checkpoint body does not check");
    l3_slab_lock(s);
    if (st == L3_OK)
        st = adopt_slabs(s, err);
    const uint8_t *p = body;
    if (st == L3_OK) {
        s->sh->num_ns = h.num_namespaces;
        for (uint32_t i = 0; i < h.num_namespaces; i++, p += sizeof(l3_ns_record)) {
            l3_ns_record rec;
            memcpy(&rec, p, sizeof rec);
            if (rec.len > L3_NS_TEXT_MAX) {
                st = l3_fail(err, L3_ECORRUPT, "checkpoint namespace %u is malformed", i);
                break;
            }
            s->ns[i].len = rec.len;
            memcpy(s->ns[i].text, rec.text, rec.len);
            s->ns[i].text[rec.len] = '\0';
            s->ns[i].objects = s->ns[i].bytes = 0;
        }
    }
    for (uint32_t i = 0; st == L3_OK && i < g->num_slabs; i++, p += 4) {
        uint32_t fill;
        memcpy(&fill, p, 4);
        slab *sl = &s->slabs[i];
        if (!sl->disk_used)
            continue;
        uint32_t next = fill & ~(OPEN_FLAG | FREE_FLAG);
        if (next > sl->nslots) {
            st = l3_fail(err, L3_ECORRUPT, "checkpoint: slab %u's fill %u is past its %u slots", i,
                         next, sl->nslots);
            break;
        }
        sl->next_slot = next;
        if (fill & FREE_FLAG) {
            sl->state = S_FREE;
        } else if ((fill & OPEN_FLAG) && s->class_open[sl->payload_blocks] < 0) {
            sl->state = S_OPEN;
            s->class_open[sl->payload_blocks] = (int32_t)i;
        }
    }
    for (uint64_t k = 0; st == L3_OK && k < h.num_entries; k++, p += sizeof(l3_index_entry)) {
        l3_index_entry e;
        memcpy(&e, p, sizeof e);
        slab *sl = e.slab < g->num_slabs ? &s->slabs[e.slab] : NULL;
        l3_key_id id = { .hash = e.hash, .check = e.check, .len = e.key_len };
        if (!sl || !sl->disk_used || sl->state == S_FREE || e.slot >= sl->next_slot ||
            e.size > (uint64_t)sl->payload_blocks * b || e.ns > s->sh->num_ns || !e.hash ||
            e.gen != (uint32_t)sl->gen || l3_index_find(&s->index, id) ||
            l3_slab_slot_ids(s, e.slab)[e.slot]) {
            st = l3_fail(err, L3_ECORRUPT, "checkpoint entry %llu is inconsistent",
                         (unsigned long long)k);
            break;
        }
        if (!l3_slab_publish(s, &e)) {
            st = l3_fail(err, L3_ECORRUPT, "the checkpoint has more entries than the index holds");
            break;
        }
    }
    if (st != L3_OK) {
        /* Start over clean for the scan. */
        l3_index_clear(&s->index);
        for (uint32_t i = 0; i < g->num_slabs; i++) {
            s->slabs[i].state = S_FREE;
            s->slabs[i].disk_used = 0;
            s->slabs[i].live = 0;
            s->slabs[i].live_bytes = 0;
        }
        for (uint32_t c = 0; c <= s->sh->max_payload_blocks; c++)
            s->class_open[c] = -1;
        s->sh->num_ns = 0;
    } else {
        s->sh->recovered_objects = s->index.meta->count;
    }
    l3_slab_unlock(s);
    free(body);
    return st;
}

/* Index one slot's header if it is live (recovery's rules, FORMAT.md). */
static l3_status scan_header(l3_slabstore *s, uint32_t i, uint32_t k, const l3_object_header *h,
                             uint64_t slot_off, uint64_t *max_seq, uint64_t *dropped, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t b = g->block_size, hb = g->header_bytes;
    slab *sl = &s->slabs[i];
    if (!l3_object_header_valid(h, hb) || h->epoch != s->sh->sb.epoch || h->slab != i || h->slot != k ||
        h->slab_gen != sl->gen || (h->size + b - 1) / b > sl->payload_blocks) {
        *dropped += h->magic == L3_OBJECT_MAGIC;
        return L3_OK;
    }
    if (l3_slab_journal_kills(s, h->key, h->key_len, h->seq))
        return L3_OK;
    if (s->opt.no_verify_checksums) {
        /* Nothing checks the payload later: check it now. */
        uint32_t len = (uint32_t)l3_round_up(h->size, b);
        uint8_t *tmp = l3_slab_alloc_aligned(b, len);
        if (!tmp)
            return l3_fail(err, L3_ENOMEM, "allocating a payload buffer");
        l3_error perr;
        bool ok = l3_slab_rw_all(s->fd, s->path, false, tmp, len, slot_off + hb, &perr) == L3_OK &&
                  l3_crc32c(0, tmp, h->size) == h->payload_crc;
        free(tmp);
        if (!ok) {
            (*dropped)++;
            return L3_OK;
        }
    }
    l3_key_id id = l3_key_identity(h->key, h->key_len);
    l3_slab_lock(s);
    l3_index_entry *old = l3_index_find(&s->index, id);
    if (old && old->seq > h->seq) {
        l3_slab_unlock(s);
        return L3_OK;
    }
    if (old)
        l3_slab_unpublish(s, old);
    int ns = l3_slab_ns_intern(s, h->key, h->key_len);
    l3_index_entry e = { .hash = id.hash, .seq = h->seq, .check = id.check, .crc = h->payload_crc,
                         .slab = i, .slot = k, .size = h->size, .gen = (uint32_t)h->slab_gen,
                         .ns = (uint16_t)(ns < 0 ? 0 : ns), .key_len = id.len };
    if (ns >= 0 && l3_slab_publish(s, &e)) {
        if (h->seq > *max_seq)
            *max_seq = h->seq;
    } else {
        (*dropped)++;
    }
    l3_slab_unlock(s);
    return L3_OK;
}

#define SCAN_CHUNK (1u << 20)

l3_status l3_slab_scan(l3_slabstore *s, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    uint32_t hb = g->header_bytes;
    l3_slab_lock(s);
    l3_status st = adopt_slabs(s, err);
    l3_slab_unlock(s);
    if (st != L3_OK)
        return st;
    size_t w = s->wave_keys, chunks = (size_t)(g->slab_size / SCAN_CHUNK);
    l3_io_req *reqs = calloc(w > chunks ? w : chunks, sizeof *reqs);
    uint8_t *whole = NULL; /* a slab's image, for slabs dense with headers */
    if (!reqs)
        return l3_fail(err, L3_ENOMEM, "allocating a scan batch");
    uint64_t max_seq = 0, dropped = 0;
    l3_io_ctx *ctx = l3_io_acquire(s->engine);
    uint8_t *bounce = l3_io_bounce(ctx, NULL);
    for (uint32_t i = 0; i < g->num_slabs && st == L3_OK; i++) {
        slab *sl = &s->slabs[i];
        if (!sl->disk_used)
            continue;
        bool retired = true;
        if ((uint64_t)sl->nslots * hb * 4 >= g->slab_size) {
            /* Headers are a quarter of the slab or more: one sequential
             * read of the whole slab beats a read per header. */
            if (!whole && !(whole = l3_slab_alloc_aligned(4096, g->slab_size))) {
                st = l3_fail(err, L3_ENOMEM, "allocating a %llu-byte scan buffer",
                             (unsigned long long)g->slab_size);
                break;
            }
            uint64_t base_off = l3_slot_offset(g, i, sl->payload_blocks, 0);
            for (size_t c = 0; c < chunks; c++)
                reqs[c] = (l3_io_req){ .write = false, .offset = base_off + c * SCAN_CHUNK,
                                       .buf = whole + c * SCAN_CHUNK, .len = SCAN_CHUNK };
            st = l3_io_run(s->engine, ctx, reqs, chunks, s->opt.io_timeout, &retired, err);
            for (size_t c = 0; c < chunks && st == L3_OK; c++)
                if (reqs[c].res != (int32_t)SCAN_CHUNK)
                    st = l3_fail(err, L3_EIO, "reading slab %u: %s", i,
                                 strerror(reqs[c].res < 0 ? -reqs[c].res : EIO));
            uint64_t slot_bytes = l3_slot_bytes(g, sl->payload_blocks);
            for (uint32_t k = 0; k < sl->nslots && st == L3_OK; k++)
                st = scan_header(s, i, k, (const l3_object_header *)(whole + k * slot_bytes),
                                 base_off + k * slot_bytes, &max_seq, &dropped, err);
        } else {
            for (uint32_t base = 0; base < sl->nslots && st == L3_OK; base += (uint32_t)w) {
                uint32_t m = sl->nslots - base < w ? sl->nslots - base : (uint32_t)w;
                for (uint32_t k = 0; k < m; k++)
                    reqs[k] = (l3_io_req){ .write = false,
                                           .offset = l3_slot_offset(g, i, sl->payload_blocks, base + k),
                                           .buf = bounce + (size_t)k * hb, .len = hb };
                st = l3_io_run(s->engine, ctx, reqs, m, s->opt.io_timeout, &retired, err);
                for (uint32_t k = 0; k < m && st == L3_OK; k++) {
                    if (reqs[k].res != (int32_t)hb) {
                        st = l3_fail(err, L3_EIO, "reading slab %u's headers: %s", i,
                                     strerror(reqs[k].res < 0 ? -reqs[k].res : EIO));
                        break;
                    }
                    st = scan_header(s, i, base + k, (const l3_object_header *)(bounce + (size_t)k * hb),
                                     reqs[k].offset, &max_seq, &dropped, err);
                }
            }
        }
        if (!retired)
            atomic_store(&s->fatal, true);
    }
    l3_io_release(s->engine, ctx);
    free(reqs);
    free(whole);
    if (st == L3_OK) {
        s->sh->recovered_objects = s->index.meta->count;
        if (max_seq + 1 > atomic_load(&s->sh->seq))
            atomic_store(&s->sh->seq, max_seq + 1);
        if (dropped)
            l3_log("info", "%s: recovery dropped %llu torn, stale or unverifiable objects", s->path,
                   (unsigned long long)dropped);
    }
    return st;
}
