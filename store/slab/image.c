/* The slab store's image read without the store (image.h). */
#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aligned.h"
#include "index.h"
#include "shm.h"

_Static_assert(L3_IMAGE_MAX_PROCS == L3_MAX_PROCS, "the process table's size, as readers see it");

l3_status l3_meta_rw(int fd, const char *path, bool write, void *buf, size_t len, uint64_t off,
                     l3_error *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
                          : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return l3_fail(err, n == 0 && !write ? L3_ECORRUPT : L3_EIO, "%s %zu bytes at %llu of %s: %s",
                           write ? "writing" : "reading", len, (unsigned long long)off, path,
                           n < 0 ? strerror(errno) : write ? "no progress" : "the file ends first");
        done += (size_t)n;
    }
    return L3_OK;
}

void *l3_meta_alloc(size_t align, size_t len)
{
    return l3_aligned_alloc(align < 4096 ? 4096 : align, len, true);
}

bool l3_meta_blank_head(int fd, const char *path, uint64_t size)
{
    uint8_t *buf = l3_meta_alloc(4096, 8192);
    bool zero = false;
    l3_error err;
    if (buf && size >= 8192 && l3_meta_rw(fd, path, false, buf, 8192, 0, &err) == L3_OK) {
        zero = true;
        for (size_t i = 0; i < 8192 && zero; i++)
            zero = buf[i] == 0;
    }
    free(buf);
    return zero;
}

/* ---- superblocks ---- */

int l3_sb_read_copies(int fd, uint64_t size, l3_sb_copies *out)
{
    l3_sb_reads r;
    memset(&r, 0, sizeof r);
    uint8_t *buf = l3_meta_alloc(4096, 4096);
    for (uint32_t c = 0; c < L3_SB_COPIES; c++) {
        uint64_t off;
        for (uint32_t k = 0; l3_sb_place(c, k, size, &off); k++) {
            l3_error err;
            if (!buf) {
                snprintf(r.at[c][k].why, sizeof r.at[c][k].why, "out of memory");
                break;
            }
            if (l3_meta_rw(fd, "the image", false, buf, 4096, off, &err) != L3_OK) {
                snprintf(r.at[c][k].why, sizeof r.at[c][k].why, "%.127s", err.msg);
                break;
            }
            memcpy(&r.at[c][k].sb, buf, sizeof r.at[c][k].sb);
            r.at[c][k].read = true;
        }
    }
    free(buf);
    return l3_sb_choose(&r, out);
}

size_t l3_image_sb_slot(const l3_superblock *sb)
{
    return (size_t)l3_round_up(L3_SB_BYTES, sb->block_size);
}

uint64_t l3_image_sb_copy(const l3_superblock *sb, uint32_t device, uint32_t copy, void *slot)
{
    size_t len = l3_image_sb_slot(sb);
    l3_superblock c = *sb;
    c.device = device;
    c.copy = copy;
    l3_sb_seal(&c);
    memset(slot, 0, len);
    memcpy(slot, &c, sizeof c);
    return l3_io_offset(device, (uint64_t)copy * len);
}

/* ---- the slab table and the journal ---- */

bool l3_image_record_broken(const l3_slab_record *table, uint32_t slab)
{
    const l3_slab_record *r = &table[slab];
    if (l3_slab_record_valid(r, slab))
        return false;
    const uint8_t *b = (const uint8_t *)r;
    for (size_t i = 0; i < sizeof *r; i++)
        if (b[i])
            return true;
    return false; /* blank */
}

/* The block holding record `i` of `bytes` bytes of an area at `area_off`. */
static uint64_t block_of(const l3_geometry *g, uint64_t area_off, uint32_t i, uint32_t bytes, uint64_t *dev_off)
{
    uint32_t b = g->block_size;
    uint64_t blk = (uint64_t)i * bytes / b * b;
    *dev_off = area_off + blk;
    return blk;
}

uint64_t l3_image_record_block(const l3_geometry *g, uint32_t slab, uint64_t *dev_off)
{
    return block_of(g, g->slab_table_off, slab, L3_SLAB_RECORD_BYTES, dev_off);
}

uint64_t l3_image_journal_block(const l3_geometry *g, uint32_t j, uint64_t *dev_off)
{
    return block_of(g, g->journal_off, j, L3_JOURNAL_RECORD_BYTES, dev_off);
}

/* ---- slabs: summaries ---- */

size_t l3_image_summary_room(const l3_geometry *g)
{
    return l3_summary_bytes(g, g->max_slots) + g->max_slots;
}

const uint8_t *l3_image_summary_verdicts(const l3_geometry *g, uint8_t *buf, uint32_t slab,
                                         const l3_slab_record *table, const l3_journal_record *journal)
{
    uint8_t *verdicts = buf + l3_summary_len(g, table[slab].payload_blocks);
    return g->summaries && l3_summary_usable(g, buf, slab, &table[slab], journal, verdicts) ? verdicts : NULL;
}

uint64_t l3_image_summary_entry_offset(const l3_geometry *g, uint32_t slab, uint32_t payload_blocks,
                                       uint32_t slot)
{
    return l3_summary_offset(g, slab, payload_blocks) + L3_SUMMARY_ENTRIES_AT +
           (uint64_t)slot * sizeof(l3_summary_entry);
}

/* ---- the checkpoint ---- */

uint64_t l3_image_ckpt_body(const l3_geometry *g)
{
    return g->checkpoint_off + g->block_size;
}

uint64_t l3_image_ckpt_records_at(const l3_checkpoint_header *h, const l3_geometry *g)
{
    return l3_checkpoint_records_at(h, l3_index_capacity_for(g->max_objects));
}

void l3_image_ckpt_entry_at(const uint8_t *record, l3_image_ckpt_entry *e)
{
    /* The record's own numbers, not an entry's narrower fields: l3fsck
     * judges what is on disk. */
    l3_index_entry x;
    (void)l3_ckpt_record_unpack(record, &x);
    *e = (l3_image_ckpt_entry){ .hash = x.hash, .crc = x.crc, .size = x.size };
    memcpy(&e->seq, record + 8, 8);
    memcpy(&e->slab, record + 24, 4);
    memcpy(&e->slot, record + 28, 4);
}

/* ---- the shared mapping, from outside ---- */

size_t l3_image_mapping_bytes(const l3_geometry *g)
{
    return l3_shm_bytes(g);
}

void l3_image_mapping_name(const struct stat *st, char *name, size_t len)
{
    l3_shm_name_of(st, name, len);
}
