/* l3cache: the slab store's image read without the store (internal; not
 * installed). What a reader of a store's files or devices needs, through
 * descriptors, buffers and plain types: never the store struct
 * (l3_slabstore), its shared mapping's state or its index.
 *
 * Its first part is the descriptor-level half of the metadata I/O: aligned
 * reads and writes, both superblock copies read for the rulebook's choice
 * (the store's open and l3fsck's), a blank image told. The rest is the
 * reader interface l3fsck (tools/) checks a store through, and the one
 * header of the store it includes: the format (format.h) and the rulebook
 * (rules.h), which this header includes, and below them where the
 * format's pieces lie, what the store would make of them, and the repair
 * writes' bytes. The store's own metadata I/O (meta.h) includes it too. */
#ifndef L3_IMAGE_H
#define L3_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "l3_status.h"
#include "rules.h"

/* ---- a descriptor's aligned I/O ---- */

/* A zeroed buffer aligned for O_DIRECT (to `align`, at least 4096; a `len`
 * of 0 is one such block): l3_aligned_alloc's; free() it. */
void *l3_meta_alloc(size_t align, size_t len);

/* Read or write all `len` bytes at `off` of `fd` (O_DIRECT aligned); a
 * file that ends first is L3_ECORRUPT, an error L3_EIO. */
l3_status l3_meta_rw(int fd, const char *path, bool write, void *buf, size_t len, uint64_t off,
                     l3_error *err);

/* Whether the image's first 8 KiB are zero (a blank device or file). */
bool l3_meta_blank_head(int fd, const char *path, uint64_t size);

/* ---- superblocks ---- */

/* Read both superblock copies' places from the image `fd` of `size`
 * bytes (may be O_DIRECT; l3_sb_place says where), each place's first
 * 4096 bytes until one cannot be read, and choose by the rulebook
 * (l3_sb_choose) into `out`. Returns how many copies are valid. The store
 * and l3fsck both read them here. */
int l3_sb_read_copies(int fd, uint64_t size, l3_sb_copies *out);

/* The bytes of one superblock copy's slot for `sb`'s block size: copy c
 * starts at c times this on each device. */
size_t l3_image_sb_slot(const l3_superblock *sb);

/* Fill `slot` (l3_image_sb_slot bytes) with `sb` as copy `copy` of device
 * `device`, sealed, zeros after it; returns the slot's I/O offset (the
 * device in the bits from 48 up, l3_io_offset). */
uint64_t l3_image_sb_copy(const l3_superblock *sb, uint32_t device, uint32_t copy, void *slot);

/* ---- the slab table and the journal ---- */

/* Whether slab `slab`'s record in `table` is broken: neither valid nor
 * blank (all zero). Its slab's objects are lost. */
bool l3_image_record_broken(const l3_slab_record *table, uint32_t slab);

/* The block of the slab table holding slab `slab`'s record: its offset in
 * the table (as read into memory) is returned, its byte offset on each
 * device goes into *dev_off. Records are written a block at a time. */
uint64_t l3_image_record_block(const l3_geometry *g, uint32_t slab, uint64_t *dev_off);

/* The same for journal record `j` in the journal. */
uint64_t l3_image_journal_block(const l3_geometry *g, uint32_t j, uint64_t *dev_off);

/* ---- slabs: summaries ---- */

/* The bytes of a buffer that holds any slab's summary and a verdict byte
 * per slot after it (l3_image_summary_verdicts). */
size_t l3_image_summary_room(const l3_geometry *g);

/* Whether a crash scan would index slab `slab` from the summary read into
 * `buf` (l3_image_summary_room bytes; l3_summary_len of them read from
 * l3_summary_offset): its entries' verdicts (l3_slot_verdict, a byte per
 * slot, placed in `buf` after the summary's bytes), or NULL when the store
 * has no summaries or a crash scan would not use this one (then its
 * headers decide). By the rulebook (l3_summary_usable). */
const uint8_t *l3_image_summary_verdicts(const l3_geometry *g, uint8_t *buf, uint32_t slab,
                                         const l3_slab_record *table, const l3_journal_record *journal);

/* The I/O offset of summary entry `slot` of slab `slab` (class
 * `payload_blocks`): a delete zeroes it, as the store's does. */
uint64_t l3_image_summary_entry_offset(const l3_geometry *g, uint32_t slab, uint32_t payload_blocks,
                                       uint32_t slot);

/* ---- the checkpoint ---- */

/* A checkpoint record as a reader matches it against the objects on disk:
 * the object it names (its key's hash, sequence, sealed crc (format.h,
 * l3_crc_seal) and bytes) and where it lies. */
typedef struct l3_image_ckpt_entry {
    uint64_t hash, seq;
    uint32_t crc, slab, slot, size;
} l3_image_ckpt_entry;

/* The byte offset of the checkpoint's body on a device: one block after
 * its header (at g->checkpoint_off). */
uint64_t l3_image_ckpt_body(const l3_geometry *g);

/* Where the records start in the body of the checkpoint whose header is
 * `h` (an index table sized by g->max_objects); there are h->num_entries,
 * L3_CKPT_RECORD bytes each. */
uint64_t l3_image_ckpt_records_at(const l3_checkpoint_header *h, const l3_geometry *g);

/* The entry of the record at `record`. */
void l3_image_ckpt_entry_at(const uint8_t *record, l3_image_ckpt_entry *e);

/* ---- the shared mapping, from outside ---- */

/* The most processes attached to one store at once. */
#define L3_IMAGE_MAX_PROCS 64

/* The bytes of the shared mapping a process that opens a store of
 * geometry `g` maps (its RAM cost). */
size_t l3_image_mapping_bytes(const l3_geometry *g);

/* The name of the shared object of the store file `st` describes. */
void l3_image_mapping_name(const struct stat *st, char *name, size_t len);

#endif
