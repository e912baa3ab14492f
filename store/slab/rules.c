/* The rulebook: what is live on a store image (rules.h). */
#include "rules.h"

#include <stdio.h>
#include <string.h>

#include "index.h"
#include "l3_crc32c.h"

bool l3_sb_place(uint32_t c, uint32_t k, uint64_t size, uint64_t *off)
{
    *off = (uint64_t)c * (4096ull << k);
    return c < L3_SB_COPIES && k < L3_SB_PLACES && (c > 0 || k == 0) && *off + 4096 <= size;
}

/* Judge copy `c` at its places, in order: the first valid one at its own
 * place; fills out's copy, verdict and why for it. */
static void choose_copy(const l3_sb_reads *r, uint32_t c, l3_sb_copies *out)
{
    out->verdict[c] = L3_SB_MISSING;
    snprintf(out->why[c], sizeof out->why[c], "not found");
    for (uint32_t k = 0; k < (c == 0 ? 1u : L3_SB_PLACES); k++) {
        const l3_sb_read *at = &r->at[c][k];
        if (!at->read) {
            if (at->why[0]) {
                out->verdict[c] = L3_SB_UNREADABLE;
                snprintf(out->why[c], sizeof out->why[c], "%s", at->why);
            }
            return;
        }
        char why[128];
        if (!l3_sb_valid(&at->sb, why, sizeof why)) {
            if (k == 0) {
                out->verdict[c] = L3_SB_BROKEN;
                snprintf(out->why[c], sizeof out->why[c], "%s", why);
            }
            continue;
        }
        /* Copy c sits at c x round_up(4096, B): copy 0 at 0 for every B. */
        uint64_t off = (uint64_t)c * (4096ull << k);
        if (at->sb.copy != c || (uint64_t)c * l3_round_up(L3_SB_BYTES, at->sb.block_size) != off) {
            out->verdict[c] = L3_SB_MISPLACED;
            snprintf(out->why[c], sizeof out->why[c], "copy %u found at offset %llu", at->sb.copy,
                     (unsigned long long)off);
            continue;
        }
        out->copy[c] = at->sb;
        out->valid[c] = true;
        out->verdict[c] = L3_SB_VALID;
        snprintf(out->why[c], sizeof out->why[c], "valid");
        return;
    }
}

int l3_sb_choose(const l3_sb_reads *r, l3_sb_copies *out)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    int valid = 0;
    for (uint32_t c = 0; c < L3_SB_COPIES; c++) {
        choose_copy(r, c, out);
        if (!out->valid[c])
            continue;
        valid++;
        if (out->best < 0 || out->copy[c].sequence > out->copy[out->best].sequence)
            out->best = (int)c;
    }
    return valid;
}

void l3_merge_device_tables(const l3_geometry *g, uint32_t d, const l3_slab_record *tbl, const l3_journal_record *jr,
                            l3_slab_record *table, l3_journal_record *journal)
{
    for (uint32_t i = d; i < g->num_slabs; i += g->num_devices)
        table[i] = tbl[i];
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        bool have = l3_journal_record_valid(&journal[j]);
        if (l3_journal_record_valid(&jr[j]) ? !have || jr[j].seq > journal[j].seq
                                            : !have && l3_journal_record_damaged(&jr[j]) &&
                                                  !l3_journal_record_damaged(&journal[j]))
            journal[j] = jr[j];
    }
}

bool l3_slab_in_use(const l3_slab_record *r, uint32_t slab, uint64_t epoch)
{
    return l3_slab_record_valid(r, slab) && r->state == L3_SLAB_USED && r->epoch == epoch;
}

bool l3_journal_kills(const l3_journal_record *journal, uint64_t epoch, const char *key, size_t len,
                      uint64_t seq)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &journal[j];
        if (!l3_journal_record_valid(r) || r->epoch != epoch)
            continue;
        if (seq < r->seq && r->prefix_len <= len && memcmp(key, r->prefix, r->prefix_len) == 0)
            return true;
    }
    return false;
}

bool l3_journal_record_damaged(const l3_journal_record *r)
{
    if (l3_journal_record_valid(r))
        return false;
    const uint8_t *b = (const uint8_t *)r;
    for (size_t i = 0; i < sizeof *r; i++)
        if (b[i])
            return true;
    return false;
}

bool l3_journal_damaged(const l3_journal_record *journal)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++)
        if (l3_journal_record_damaged(&journal[j]))
            return true;
    return false;
}

bool l3_journal_lost_removal(const l3_journal_record *journal, bool checkpoint_used)
{
    return !checkpoint_used && l3_journal_damaged(journal);
}

uint64_t l3_journal_next_seq(const l3_journal_record *journal, uint64_t epoch)
{
    uint64_t next = 0;
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++)
        if (l3_journal_record_valid(&journal[j]) && journal[j].epoch == epoch && journal[j].seq >= next)
            next = journal[j].seq + 1;
    return next;
}

l3_slot_verdict l3_slot_judge(const l3_geometry *g, uint64_t epoch, const l3_slab_record *r,
                              uint32_t slab, uint32_t slot, const l3_object_header *h,
                              const l3_journal_record *journal)
{
    uint32_t b = g->block_size;
    if (h->magic != L3_OBJECT_MAGIC)
        return L3_SLOT_EMPTY;
    if (!l3_object_header_valid(h, g->header_bytes))
        return L3_SLOT_CORRUPT;
    if (h->epoch != epoch || h->slab != slab || h->slot != slot || h->slab_gen != r->gen ||
        (h->size + (uint64_t)b - 1) / b > r->payload_blocks)
        return L3_SLOT_STALE;
    if (l3_journal_kills(journal, epoch, h->key, h->key_len, h->seq))
        return L3_SLOT_DELETED;
    return L3_SLOT_LIVE;
}

bool l3_summary_decidable(const l3_journal_record *journal, uint64_t epoch, uint64_t first_seq)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &journal[j];
        if (l3_journal_record_valid(r) && r->epoch == epoch && r->seq > first_seq &&
            !memchr(r->prefix, '_', r->prefix_len))
            return false;
    }
    return true;
}

l3_slot_verdict l3_summary_judge(const l3_geometry *g, const l3_summary_head *h, uint32_t slab, uint32_t slot,
                                 const l3_summary_entry *e, const l3_journal_record *journal)
{
    uint32_t b = g->block_size;
    if (e->flags == 0)
        return L3_SLOT_EMPTY;
    if (!l3_summary_entry_valid(e, slab, slot, h->gen) || e->ns > h->num_ns || e->key_len == 0 ||
        e->key_len > L3_OBJECT_KEY_MAX || (e->size + (uint64_t)b - 1) / b > h->payload_blocks)
        return L3_SLOT_CORRUPT;
    if (e->ns && l3_journal_kills(journal, h->epoch, h->ns_text[e->ns - 1], h->ns_len[e->ns - 1], e->seq))
        return L3_SLOT_DELETED;
    return L3_SLOT_LIVE;
}

bool l3_summary_usable(const l3_geometry *g, const uint8_t *buf, uint32_t slab, const l3_slab_record *r,
                       const l3_journal_record *journal, uint8_t *verdicts)
{
    const l3_summary_head *h = (const l3_summary_head *)buf;
    const l3_summary_entry *ents = (const l3_summary_entry *)(buf + L3_SUMMARY_ENTRIES_AT);
    if (!l3_summary_head_valid(h, slab, r) || h->nslots != l3_slots_per_slab(g, r->payload_blocks) ||
        !l3_summary_decidable(journal, h->epoch, r->first_seq))
        return false;
    for (uint32_t k = 0; k < h->nslots; k++)
        if ((verdicts[k] = (uint8_t)l3_summary_judge(g, h, slab, k, &ents[k], journal)) == L3_SLOT_CORRUPT)
            return false;
    return true;
}

bool l3_checkpoint_matches(const l3_checkpoint_header *h, const l3_superblock *sb,
                           const l3_geometry *g, char *why, size_t why_len)
{
    if (!l3_checkpoint_header_valid(h)) {
        snprintf(why, why_len, "the checkpoint header does not check");
        return false;
    }
    if (h->version != L3_CKPT_PACKED && h->version != L3_CKPT_PACKED_UNSEALED) {
        snprintf(why, why_len, "the checkpoint has an earlier build's layout");
        return false;
    }
    uint64_t body = l3_checkpoint_records_at(h, l3_index_capacity_for(g->max_objects)) +
                    h->num_entries * L3_CKPT_RECORD + (uint64_t)h->num_slot_ids * 4;
    if (!sb->clean || h->sequence != sb->sequence || h->body_crc != sb->ckpt_crc ||
        h->body_bytes != sb->ckpt_bytes || h->num_slabs != g->num_slabs ||
        h->num_namespaces > L3_MAX_NAMESPACES || h->num_entries > g->max_objects ||
        g->block_size + h->body_bytes > g->checkpoint_len || h->body_bytes != body) {
        snprintf(why, why_len, "the checkpoint does not belong to this superblock");
        return false;
    }
    return true;
}

bool l3_object_image_checks(const uint8_t *img, uint32_t header_bytes, uint32_t size, uint32_t crc)
{
    const l3_object_header *h = (const l3_object_header *)img;
    return l3_object_header_valid(h, header_bytes) && h->size == size &&
           l3_crc_seal(l3_crc32c(0, img + header_bytes, size), l3_crc32c(0, h->key, h->key_len)) == crc;
}
