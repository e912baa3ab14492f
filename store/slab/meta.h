/* l3cache: the slab store's metadata I/O (internal; not installed):
 * synchronous, aligned writes and reads of the superblock, the slab
 * table, the namespace journal, and formatting, through the store; what
 * they hold is judged by the rulebook (rules.h), which does no I/O of its
 * own. What takes a descriptor and no store (aligned reads and writes,
 * the superblock copies read, a blank image) is image.h's, included here.
 * Object I/O goes through the engine (get.c, put.c, recovery.c), never
 * through here. */
#ifndef L3_META_H
#define L3_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "entries.h"
#include "image.h"
#include "rules.h"

/* Whether device d is present and not failed. */
bool l3_meta_dev_ok(const l3_slabstore *s, uint32_t d);

/* Say loudly that device d failed (`why`) and mark it so: nothing is
 * placed there again, and its slabs go offline at the next allocation.
 * A store of one device has nothing to fail over to: a no-op there. */
void l3_meta_dev_failed(l3_slabstore *s, uint32_t d, const char *why);

/* Requests failing in a row, none completing, that fail a device. */
#define L3_DEV_FAIL_RUN 8u

/* Look at a finished engine batch by device: a device with errors and no
 * completion adds them to its run of errors (at L3_DEV_FAIL_RUN it
 * fails); one that completed something ends its run. */
void l3_meta_note_io(l3_slabstore *s, const l3_io_req *reqs, size_t n);

/* Read or write `len` bytes at I/O offset `ioff` (device and byte, as
 * l3_slot_offset gives it) synchronously; a write failure fails the
 * device. */
l3_status l3_meta_io(l3_slabstore *s, bool write, void *buf, size_t len, uint64_t ioff, l3_error *err);

/* Flush the online devices in `mask` (a bit per device): every write to
 * them completed before is durable (fdatasync, through the device model
 * of power-cut tests: l3_io_sync). Counted in the stats (`flushes`); a
 * device whose flush fails fails (several devices), and the first error
 * is returned. */
l3_status l3_meta_flush(l3_slabstore *s, uint32_t mask, l3_error *err);

/* Flush every device this process wrote to since its last flush
 * (l3_slabstore.dirty); a failure is logged as flushing `what`. */
void l3_meta_flush_dirty(l3_slabstore *s, const char *what);

/* Write `len` bytes at `off` of every online device, each made durable;
 * with several devices, one that takes it is enough. */
l3_status l3_meta_write_all(l3_slabstore *s, const void *buf, size_t len, uint64_t off, l3_error *err);

/* Write the superblock (the mapping's, or before it exists the one read
 * or formatted), both copies in turn, each followed by fdatasync, to every
 * online device (each copy naming its device's place). The caller holds
 * sb_mu once the mapping exists. */
l3_status l3_meta_write_sb(l3_slabstore *s, l3_error *err);

/* The shared superblock, this room's alone to change (ARCHITECTURE.md,
 * "Who writes the shared state"). A fresh mapping takes the superblock
 * the store was opened with. */
void l3_meta_adopt_sb(l3_slabstore *s);

/* Bump the store's epoch, every object of an older one dead, and write
 * the superblock, dirty, with the next object sequence (under sb_mu, taken
 * here; in memory alone when read-only); a failed write leaves the epoch
 * as it was. */
l3_status l3_meta_bump_epoch(l3_slabstore *s, l3_error *err);

/* Write the superblock dirty (a crash from here on rebuilds) with the
 * next object sequence (sb_mu taken here). */
l3_status l3_meta_mark_dirty(l3_slabstore *s, l3_error *err);

/* Write the superblock clean, naming the checkpoint just written (its
 * bytes, crc and entries) and the next object sequence (sb_mu taken
 * here). */
l3_status l3_meta_mark_clean(l3_slabstore *s, uint64_t ckpt_bytes, uint32_t ckpt_crc, uint32_t ckpt_entries,
                             l3_error *err);

/* Object sequence numbers a dirty superblock reserves ahead (its
 * next_seq): after a crash the sequence continues above every one used,
 * seen by the scan or not (a header a power cut's reverted slab record
 * brings back included), so that a later removal's journal record is
 * always above the objects it must kill. */
#define L3_SEQ_LEASE (1ull << 20)

/* Make sure the superblock's next_seq lies above the sequence plus
 * `need` (and a margin): else reserve another lease (a superblock write,
 * under sb_mu). The caller holds no lock. */
l3_status l3_meta_seq_lease(l3_slabstore *s, uint64_t need, l3_error *err);

/* Make slab `slab`'s record of generation `gen` durable: write the table
 * block holding it, from the image, unless it is on disk already (another
 * writer's write, waited for) or the slab has another generation by now;
 * then mark it (slab.record_gen). */
l3_status l3_meta_ensure_record(l3_slabstore *s, uint32_t slab, uint64_t gen, l3_error *err);

/* Slab `slab` was evacuated (reinsertion moved what it kept, flushed):
 * write its record as free (its generation kept), durably, unless it was
 * reopened meanwhile (then its new record is written so). Its old copies
 * of moved objects then never come back, so that a delete of the moved
 * copy is not undone by them after a crash or a power cut. */
l3_status l3_meta_retire_record(l3_slabstore *s, uint32_t slab, l3_error *err);

/* Put `rec` into journal slot `slot` and make it durable (write and
 * fdatasync); on failure the image keeps the slot's old record. The
 * caller holds journal_mu. */
l3_status l3_meta_write_journal(l3_slabstore *s, uint32_t slot, const l3_journal_record *rec,
                                l3_error *err);

/* Zero every damaged journal record (l3_journal_record_damaged), on every
 * device, under journal_mu: after an epoch bump it covers nothing. */
l3_status l3_meta_clear_damaged_journal(l3_slabstore *s, l3_error *err);

/* Lay out and format a store of `capacity` bytes per device: allocate
 * the files, zero the slab tables and journals, write the superblocks. */
l3_status l3_meta_format(l3_slabstore *s, uint64_t capacity, l3_error *err);

/* Read the slab table and the journal into the mapping's images: each
 * slab's record from its own device, each journal slot's newest record
 * of any device. */
l3_status l3_meta_read_tables(l3_slabstore *s, l3_error *err);

#endif
