/* The slab store's namespace removal (batch.h): a prefix's objects leave
 * the index at once, after a journal record (or, for everything, an epoch
 * bump) has made the removal durable (FORMAT.md "Namespace journal"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "background.h"
#include "batch.h"
#include "meta.h"
#include "rules.h"
#include "summary.h"

/* A journal slot to reuse: blank, of another epoch, or older than every
 * used slab (it covers nothing on disk any more); -1 when none. A damaged
 * record is kept: it is all that says a removal happened (rules.h,
 * l3_journal_lost_removal). */
static int free_journal_slot(l3_slabstore *s)
{
    uint64_t oldest = UINT64_MAX;
    l3_slab_lock(s);
    for (uint32_t i = 0; i < s->geo.num_slabs; i++)
        if (s->slabs[i].disk_used && s->slabs[i].first_seq < oldest)
            oldest = s->slabs[i].first_seq;
    l3_slab_unlock(s);
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &s->journal[j];
        if (l3_journal_record_damaged(r))
            continue;
        if (!l3_journal_record_valid(r) || r->epoch != s->sh->sb.epoch || r->seq <= oldest)
            return (int)j;
    }
    return -1;
}

/* Make the removal of `prefix` durable: a journal record. */
static l3_status journal_append(l3_slabstore *s, const char *prefix, size_t len, l3_error *err)
{
    if (len > L3_JOURNAL_PREFIX_MAX)
        return l3_fail(err, L3_EINVAL, "a prefix of %zu bytes is longer than the journal's %u", len,
                       L3_JOURNAL_PREFIX_MAX);
    l3_status st = l3_meta_seq_lease(s, 1, err);
    if (st != L3_OK)
        return st;
    l3_shm_lock(&s->shm, &s->sh->journal_mu);
    int slot = free_journal_slot(s);
    if (slot < 0) {
        st = l3_fail(err, L3_ENOSPC, "the namespace journal is full (%u deletions still cover "
                                     "objects on disk)", L3_JOURNAL_RECORDS);
    } else {
        l3_journal_record rec;
        memset(&rec, 0, sizeof rec);
        rec.seq = atomic_fetch_add(&s->sh->seq, 1);
        rec.epoch = s->sh->sb.epoch;
        rec.prefix_len = (uint32_t)len;
        memcpy(rec.prefix, prefix, len);
        l3_journal_record_seal(&rec);
        st = l3_meta_write_journal(s, (uint32_t)slot, &rec, err);
    }
    l3_shm_unlock(&s->sh->journal_mu);
    return st;
}

/* Remove everything: one epoch bump kills every object at once. */
static bool remove_all(l3_slabstore *s)
{
    l3_error err;
    if (l3_meta_bump_epoch(s, &err) != L3_OK) {
        l3_log("error", "remove_by_prefix(\"\"): %s; nothing was removed", err.msg);
        return false;
    }
    l3_slab_lock(s);
    l3_entries_announce_all(s, L3_REMOVED_NAMESPACE);
    l3_alloc_reset(s);
    l3_slab_unlock(s);
    /* A damaged record predates the bump: it covers nothing now. */
    if (l3_meta_clear_damaged_journal(s, &err) != L3_OK)
        l3_log("warning", "remove_by_prefix(\"\"): zeroing a damaged journal record: %s (a crash scan "
                          "before it is zeroed serves nothing)", err.msg);
    return true;
}

/* Mark in `match` (by namespace id) the namespaces `prefix` covers, by
 * their text alone (under the lock): a namespace's object count is not
 * trusted to say that none of its keys is indexed (a slot of the table
 * without objects matches harmlessly). False when the index cannot decide
 * it: the prefix ends inside a namespace with keys indexed, or keys
 * without a namespace, which might start with it, are indexed. */
static bool match_namespaces(l3_slabstore *s, const char *prefix, size_t plen, bool *match, bool *any)
{
    const char *u = memchr(prefix, '_', plen < L3_NS_TEXT_MAX ? plen : L3_NS_TEXT_MAX);
    size_t nl = u ? (size_t)(u - prefix) + 1 : 0;
    uint32_t inside = 0; /* the namespace the prefix ends inside (its id; 0: none known) */
    for (uint32_t i = 0; i < s->sh->num_ns; i++) {
        const ns_info *ns = &s->ns[i];
        if (u && ns->len == nl && memcmp(ns->text, prefix, nl) == 0) {
            if (plen != nl)
                inside = i + 1;
            else
                match[i + 1] = *any = true;
        } else if (!u && ns->len >= plen && memcmp(ns->text, prefix, plen) == 0) {
            match[i + 1] = *any = true;
        }
    }
    if (u && !inside)
        return true;
    /* From the index itself: keys of the namespace it ends inside, or
     * (no '_' in it) keys without a namespace. */
    for (uint64_t i = 0; i <= s->index.meta->mask; i++) {
        const l3_index_entry *e = &s->index.table[i];
        if (e->hash && e->ns == inside)
            return false;
    }
    return true;
}

/* Drop every entry of the matched namespaces (under the lock). */
static void drop_namespaces(l3_slabstore *s, const bool *match)
{
    for (uint64_t i = 0; i <= s->index.meta->mask;) {
        l3_index_entry *e = &s->index.table[i];
        if (e->hash && match[e->ns])
            l3_entry_remove(s, e, L3_REMOVED_NAMESPACE); /* the run shifts back: look at this slot again */
        else
            i++;
    }
}

/* Whether puts are in flight in any process (a dead one's are reaped). */
static bool puts_in_flight(l3_slabstore *s)
{
    l3_slab_lock(s);
    l3_alloc_reap_dead(s);
    bool busy = s->sh->alloc.reserved > 0;
    l3_slab_unlock(s);
    return busy;
}

bool l3_slab_remove(l3_store *st, const char *prefix)
{
    l3_slabstore *s = (l3_slabstore *)st;
    if (s->closed || atomic_load(&s->fatal) || s->opt.read_only || !prefix) {
        l3_log("error", "remove_by_prefix: the store is closed, read-only or refuses I/O");
        return false;
    }
    if (puts_in_flight(s)) {
        l3_log("error", "remove_by_prefix(%.80s): puts are in flight; nothing was removed", prefix);
        return false;
    }
    size_t plen = strlen(prefix);
    if (plen == 0)
        return remove_all(s);
    bool *match = calloc(L3_MAX_NAMESPACES + 1, 1), any = false;
    if (!match)
        return false;
    l3_slab_lock(s);
    bool decidable = match_namespaces(s, prefix, plen, match, &any);
    l3_slab_unlock(s);
    l3_error err;
    /* Journalled even when the index holds none of it: objects of the
     * prefix evicted from the index may still be on disk, and a crash
     * scan (or a power cut's) would find them. */
    bool ok = decidable && journal_append(s, prefix, plen, &err) == L3_OK;
    if (!decidable)
        l3_log("error", "remove_by_prefix(%.80s): the prefix must end at a namespace boundary "
                        "(its first '_') to be removed from the index; nothing was removed", prefix);
    else if (!ok)
        l3_log("error", "remove_by_prefix(%.80s): %s; nothing was removed", prefix, err.msg);
    if (ok && any) {
        l3_slab_lock(s);
        drop_namespaces(s, match);
        l3_slab_unlock(s);
    }
    free(match);
    return ok;
}

/* One wave of a delete: unpublish the keys found (their slabs pinned, so
 * that no slot is reused under the header write), then zero their headers
 * on disk (and their summary entries) and flush those devices, so that
 * they come back neither after a crash nor after a power cut. */
static l3_status delete_wave(l3_slabstore *s, const char *const *keys, size_t n, bool *deleted, uint8_t *zero,
                             l3_io_req *reqs, uint32_t *pinned, uint32_t *slots, l3_error *err)
{
    size_t r = 0;
    l3_slab_lock(s);
    for (size_t i = 0; i < n; i++) {
        l3_index_entry *e = l3_index_find(&s->index, l3_key_identity(keys[i], strlen(keys[i])));
        deleted[i] = e != NULL;
        if (!e)
            continue;
        uint32_t slab = e->slab;
        reqs[r] = (l3_io_req){ .write = true, .buf = zero, .len = s->geo.header_bytes,
                               .offset = l3_slot_offset(&s->geo, slab, s->slabs[slab].payload_blocks, e->slot) };
        slots[r] = e->slot;
        pinned[r++] = slab;
        l3_alloc_pin(s, slab);
        l3_entry_remove(s, e, L3_REMOVED_DELETED);
    }
    l3_slab_unlock(s);
    l3_io_ctx *ctx = l3_io_acquire(s->engine);
    bool retired = true;
    l3_status st = l3_io_run(s->engine, ctx, reqs, r, s->opt.io_timeout, &retired, err);
    l3_io_release(s->engine, ctx);
    for (size_t k = 0; k < r && st == L3_OK; k++)
        if (reqs[k].res != (int32_t)reqs[k].len)
            st = l3_fail(err, L3_EIO, "zeroing a deleted object's header in %s: %s", s->path,
                         strerror(reqs[k].res < 0 ? -reqs[k].res : EIO));
    uint32_t mask = 0;
    for (size_t k = 0; k < r && st == L3_OK && retired; k++) {
        st = l3_summary_forget(s, pinned[k], slots[k], err);
        mask |= 1u << l3_slab_device(&s->geo, pinned[k]);
    }
    if (st == L3_OK && retired && mask)
        st = l3_meta_flush(s, mask, err);
    if (!retired)
        atomic_store(&s->fatal, true); /* (the zero block stays allocated) */
    l3_slab_lock(s);
    for (size_t k = 0; k < r; k++)
        l3_alloc_release(s, pinned[k]);
    l3_slab_unlock(s);
    for (size_t k = 0; k < r && retired; k++)
        l3_background_settle(s, pinned[k], false); /* (a put into it may have landed since the flush) */
    return retired ? st : l3_fail(err, L3_ETIMEDOUT, "deleting in %s: I/O not reaped", s->path);
}

l3_status l3_slab_delete(l3_store *st, const char *const *keys, size_t n, bool *deleted, l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_status rc = l3_batch_check(s, keys, n, (l3_host_buffer){ 0 }, NULL, 1, deleted, false, err);
    if (rc == L3_OK && s->opt.read_only)
        rc = l3_fail(err, L3_ECLOSED, "the store is open read-only");
    if (rc != L3_OK)
        return rc;
    size_t w = s->wave_keys;
    uint8_t *zero = l3_meta_alloc(s->geo.block_size, s->geo.header_bytes);
    l3_io_req *reqs = calloc(w, sizeof *reqs);
    uint32_t *pinned = calloc(w, sizeof *pinned), *slots = calloc(w, sizeof *slots);
    if (!zero || !reqs || !pinned || !slots)
        rc = l3_fail(err, L3_ENOMEM, "allocating a delete batch");
    for (size_t base = 0; base < n && rc == L3_OK; base += w)
        rc = delete_wave(s, keys + base, n - base < w ? n - base : w, deleted + base, zero, reqs, pinned, slots,
                         err);
    if (rc != L3_ETIMEDOUT)
        free(zero);
    free(reqs);
    free(pinned);
    free(slots);
    return rc;
}
