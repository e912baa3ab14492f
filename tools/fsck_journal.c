/* l3fsck's verdict on a damaged journal record and its repair
 * (fsck_journal.h), by the rulebook's rule for it (l3_journal_lost_removal),
 * as the store's open judges and repairs it. */
#include "fsck_journal.h"

#include <stdio.h>
#include <string.h>

#include "fsck_io.h"

/* Drop object o (-y) as the store's delete does: its header zeroed, then
 * its slab summary's entry (a summary written before names it, and a
 * crash scan, or the next check, would take the summary's word). */
static void drop_object(fsck *f, const fsck_object *o, const char *what)
{
    const l3_geometry *g = &f->geo;
    int left = f->left;
    fsck_zero_header(f, o->offset, what);
    if (!f->repair || f->left != left || !g->summaries)
        return;
    static const uint8_t zero[sizeof(l3_summary_entry)];
    uint64_t at = l3_image_summary_entry_offset(g, o->slab, f->table[o->slab].payload_blocks, o->slot);
    int rc = fsck_write(f, zero, sizeof zero, at);
    if (rc != 0) {
        fprintf(stderr, "l3fsck: zeroing a summary entry at %llu: %s\n", (unsigned long long)at, strerror(-rc));
        f->left++; /* its summary still names it */
    }
}

/* Whether a present device missed the store's last session: a store opens
 * it by its rules, not its checkpoint (FORMAT.md "Several devices"). */
static bool device_behind(const fsck *f)
{
    for (uint32_t d = 0; d < f->ndev; d++)
        if (fsck_dev_behind(f, d))
            return true;
    return false;
}

/* Whether the store opens from its checkpoint, every device with it, as
 * far as the passes so far know (after the last one: the verdict). */
static bool checkpoint_used(const fsck *f)
{
    return f->sb.clean && f->checkpoint_read && f->checkpoint_checks && !f->checkpoint_missing && !device_behind(f);
}

void fsck_journal_verdict(fsck *f)
{
    if (!l3_journal_lost_removal(f->journal, checkpoint_used(f)))
        return;
    for (size_t i = 0; i < f->num_objects; i++)
        f->objects[i].live = false;
}

/* Its prefix and sequence are lost, so what it removed cannot be told
 * from the rest (rules.h, l3_journal_lost_removal). With the checkpoint
 * the store opens from, the objects that are live by their headers but
 * not in it are exactly those the store no longer serves: they are
 * dropped. Without one, the epoch is bumped and the store starts empty,
 * as the store's own open does: a cache may lose pages, never serve
 * removed ones. */
void fsck_journal_repair(fsck *f)
{
    if (!f->bad_journal || !f->repair)
        return;
    if (!l3_journal_lost_removal(f->journal, checkpoint_used(f))) {
        for (size_t i = 0; i < f->num_objects; i++)
            if (!f->objects[i].live)
                drop_object(f, &f->objects[i], "an object a lost removal covered dropped");
    } else {
        f->sb.epoch++;
        f->mark_dirty = true;
        fsck_fixed(f, "the store emptied (epoch bumped): a removal it cannot read is kept");
    }
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        l3_journal_record *r = &f->journal[j];
        if (!l3_journal_record_damaged(r))
            continue;
        memset(r, 0, sizeof *r);
        uint64_t at, blk = l3_image_journal_block(&f->geo, j, &at);
        fsck_repair_all(f, (uint8_t *)f->journal + blk, f->geo.block_size, at,
                        "a corrupt journal record zeroed");
    }
}
