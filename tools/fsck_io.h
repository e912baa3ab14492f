/* l3fsck's reads and writes of the image (fsck_io.c), and the report's
 * two kinds of lines every pass writes: a problem found, a repair made. */
#ifndef L3_FSCK_IO_H
#define L3_FSCK_IO_H

#include "fsck.h"

/* Record a problem. One that is not `fixable`, or found without -y, is
 * left; with -y the caller repairs a fixable one, and a repair whose write
 * fails leaves it too. */
void fsck_problem(fsck *f, bool fixable, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Report a repair that was written. */
void fsck_fixed(fsck *f, const char *what);

/* Read (zero-filled past the end: 1) or write an image range; -errno.
 * The offset names its device in the bits from 48 up (l3_slot_offset);
 * a store of one device has plain offsets. */
int fsck_read(fsck *f, void *buf, size_t len, uint64_t off);
int fsck_write(fsck *f, const void *buf, size_t len, uint64_t off);

/* Read like fsck_read, for bulk reads (slabs, summaries, the checkpoint):
 * O_DIRECT where the image allows it (the device's speed, no page cache
 * to fill), so `buf` 4096-aligned and `len` whole blocks. */
int fsck_read_bulk(fsck *f, void *buf, size_t len, uint64_t off);

/* Open each given device's O_DIRECT descriptor for fsck_read_bulk, where
 * it is not open yet and the image allows it (else bulk reads go through
 * the page cache). */
void fsck_open_direct(fsck *f);

/* Make device d's writes durable (fsync); false when it fails or the
 * device was not given. */
bool fsck_sync(fsck *f, uint32_t d);

/* Whether slab i's device was given (its slots can be read). */
bool fsck_slab_present(const fsck *f, uint32_t i);

/* Whether present device d missed the store's last session (its newest
 * superblock older than the store's): a store opens it by its rules, not
 * its checkpoint (FORMAT.md "Several devices"). */
bool fsck_dev_behind(const fsck *f, uint32_t d);

/* Whether slab i's device, given, missed the store's last session: a clean
 * store opens that device's slabs by the rules, not from the checkpoint. */
bool fsck_slab_behind(const fsck *f, uint32_t i);

/* Write a repair (`len` bytes at I/O offset `off`) and report it (`what`)
 * once it is written; a write that fails leaves the problem (f->left). */
void fsck_repair(fsck *f, const void *buf, size_t len, uint64_t off, const char *what);

/* The same for a metadata block (slab table, journal) at byte `off` of
 * every device. */
void fsck_repair_all(fsck *f, const void *buf, size_t len, uint64_t off, const char *what);

/* Zero a slot's header at I/O offset `offset` (-y; nothing without it):
 * the object is gone for good. */
void fsck_zero_header(fsck *f, uint64_t offset, const char *what);

#endif
