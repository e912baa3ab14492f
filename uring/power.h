/* l3cache: the device model for power-cut tests (internal to the library;
 * not installed): each device's volatile write cache, flushes, and a
 * seeded cut (l3_io_power, io_types.h). A test installs it through the
 * store (store/slab/slabstore.h) before it opens one; the backends (at a
 * write's first submission and at its completion) and the store's
 * synchronous metadata writes tell it what they write, and every flush of
 * the store goes through l3_io_sync. Nothing here runs unless a model is
 * installed (one relaxed atomic load per write submission). */
#ifndef L3_POWER_H
#define L3_POWER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io_types.h"

/* Whether a model is installed (l3_io_power_on reads it). */
extern atomic_bool l3_io_power_installed;

/* Install the model (or with NULL remove it, dropping what it holds),
 * process-wide. */
void l3_io_power_set(const l3_io_power *power);

/* Whether a model is installed: the hot path's check. */
static inline bool l3_io_power_on(void)
{
    return atomic_load_explicit(&l3_io_power_installed, memory_order_relaxed);
}

/* Writes the model saw since its installation (a test sizes its cut
 * points by a run without a cut). */
uint64_t l3_io_power_writes(void);

/* A write of [off, off + len) of `fd` is about to be submitted: counted
 * (the cut may come here, and then this never returns), and each unit it
 * touches for the first time since the last flush has its durable bytes
 * read first. Returns false when the cut is pending (the write is to be
 * acknowledged without reaching the device: it is lost), true when it is
 * held in flight until l3_io_power_write_done. */
bool l3_io_power_write_start(int fd, uint64_t off, uint64_t len);

/* A write l3_io_power_write_start held completed (`ok`: all of it, from
 * `buf`) or failed: it is unflushed now. The cut may come here. */
void l3_io_power_write_done(int fd, const void *buf, uint64_t off, uint64_t len, bool ok);

/* Flush `fd`'s device: fdatasync, after which every write completed
 * before it is durable (with a model installed, its unflushed writes are
 * dropped from the cut's choices; with the cut pending, it never
 * returns). Returns fdatasync's result (0, or -1 and errno). */
int l3_io_sync(int fd);

#endif
