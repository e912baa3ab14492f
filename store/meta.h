/* l3cache: the slab store's metadata I/O (internal; not installed):
 * synchronous, aligned writes and reads of the superblock, the slab
 * table, the namespace journal, and formatting. Object I/O goes through
 * the engine (get.c, put.c, recovery.c), never through here. */
#ifndef L3_META_H
#define L3_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slab.h"

/* A zeroed buffer aligned for O_DIRECT (at least 4096); free() it. */
void *l3_meta_alloc(size_t align, size_t len);

/* Read or write all `len` bytes at `off` of `fd` (O_DIRECT aligned); a
 * file that ends first is L3_ECORRUPT, an error L3_EIO. */
l3_status l3_meta_rw(int fd, const char *path, bool write, void *buf, size_t len, uint64_t off,
                     l3_error *err);

/* Write the superblock (the mapping's, or before it exists the one read
 * or formatted), both copies in turn, each followed by fdatasync. The
 * caller holds sb_mu once the mapping exists. */
l3_status l3_meta_write_sb(l3_slabstore *s, l3_error *err);

/* Write the table block holding slab `slab`'s record, from the image. */
l3_status l3_meta_write_record(l3_slabstore *s, uint32_t slab, l3_error *err);

/* Put `rec` into journal slot `slot` and make it durable (write and
 * fdatasync); on failure the image keeps the slot's old record. The
 * caller holds journal_mu. */
l3_status l3_meta_write_journal(l3_slabstore *s, uint32_t slot, const l3_journal_record *rec,
                                l3_error *err);

/* Lay out and format a store of `capacity` bytes: allocate the file,
 * zero the slab table and journal, write the superblock. */
l3_status l3_meta_format(l3_slabstore *s, uint64_t capacity, l3_error *err);

/* Read the slab table and the journal into the mapping's images. */
l3_status l3_meta_read_tables(l3_slabstore *s, l3_error *err);

/* Whether the image's first 8 KiB are zero (a blank device or file). */
bool l3_meta_blank_head(int fd, const char *path, uint64_t size);

#endif
