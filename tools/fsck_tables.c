/* l3fsck's table pass (fsck_tables.h): a truncated image, the slab table
 * and the journal read (several devices: merged by the rulebook, as the
 * store reads them), broken slab records, damaged journal records. */
#include "fsck_tables.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsck_io.h"

/* A truncated image: extend a file (its objects past the end are lost). */
static void check_truncation(fsck *f)
{
    for (uint32_t d = 0; d < f->ndev; d++) {
        fsck_dev *v = &f->dev[d];
        if (v->fd < 0 || v->size >= f->geo.capacity)
            continue;
        bool can = !v->blockdev;
        const char *path = v->path;
        fsck_problem(f, can, "%s is truncated: %llu of %llu bytes%s", path, (unsigned long long)v->size,
                     (unsigned long long)f->geo.capacity, can ? "; objects past the end are lost" : "");
        if (!can || !f->repair)
            continue;
        if (ftruncate(v->fd, (off_t)f->geo.capacity) != 0) {
            fprintf(stderr, "l3fsck: extending %s: %s\n", path, strerror(errno));
            f->left++;
            continue;
        }
        f->mark_dirty = true;
        fsck_fixed(f, "the image extended to its capacity");
    }
}

/* Corrupt slab records (not all zero, not valid): their objects are lost. */
static void check_records(fsck *f)
{
    for (uint32_t i = 0; i < f->geo.num_slabs; i++) {
        if (!fsck_slab_present(f, i) || !l3_image_record_broken(f->table, i))
            continue;
        fsck_problem(f, true, "slab %u: its record is corrupt (its objects are lost)", i);
        if (!f->repair)
            continue;
        memset(&f->table[i], 0, sizeof f->table[i]);
        uint64_t at, blk = l3_image_record_block(&f->geo, i, &at);
        fsck_repair_all(f, (uint8_t *)f->table + blk, f->geo.block_size, at, "a corrupt slab record zeroed");
    }
}

/* Journal records that do not check: a removal that may be forgotten. */
static void check_journal(fsck *f)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        if (!l3_journal_record_damaged(&f->journal[j]))
            continue;
        fsck_problem(f, true, "namespace journal record %u is corrupt: a removal that cannot be read (only a "
                        "checkpoint proves what it left live; without one, no object is)", j);
        f->bad_journal = true;
    }
}

/* Several devices: merged by the rulebook, as the store reads them. */
static void read_device_tables(fsck *f)
{
    l3_slab_record *tbl = calloc(1, f->geo.slab_table_len);
    l3_journal_record *jr = calloc(1, f->geo.journal_len);
    for (uint32_t d = 0; d < f->ndev && tbl && jr; d++) {
        if (!(f->present >> d & 1))
            continue;
        fsck_read(f, tbl, f->geo.slab_table_len, l3_io_offset(d, f->geo.slab_table_off));
        fsck_read(f, jr, f->geo.journal_len, l3_io_offset(d, f->geo.journal_off));
        l3_merge_device_tables(&f->geo, d, tbl, jr, f->table, f->journal);
    }
    free(tbl);
    free(jr);
}

void fsck_tables(fsck *f)
{
    check_truncation(f);
    f->table = calloc(1, f->geo.slab_table_len);
    f->journal = calloc(1, f->geo.journal_len);
    if (!f->table || !f->journal) {
        fsck_problem(f, false, "out of memory reading the slab table");
        return;
    }
    if (f->ndev <= 1) {
        fsck_read(f, f->table, f->geo.slab_table_len, f->geo.slab_table_off);
        fsck_read(f, f->journal, f->geo.journal_len, f->geo.journal_off);
    } else {
        read_device_tables(f);
    }
    check_records(f);
    check_journal(f);
}
