/* l3cache: slab summaries (internal; not installed; FORMAT.md "Slab
 * summaries"). A slab that is full, with every write into it published,
 * gets its summary written from the index: one entry per slot, so that a
 * crash scan reads the summary instead of every object's header. A
 * single-key delete zeroes its slot's entry as it zeroes the header. Every
 * summary write holds the mapping's summary_mu, so that a delete's entry
 * update is never overwritten by a summary built before it. Above alloc.c
 * (it reads the index and slot ids) and meta.c (its I/O). */
#ifndef L3_SUMMARY_H
#define L3_SUMMARY_H

#include "entries.h"

/* Whether slab `slab`'s summary is due (under the lock): the store has
 * summaries, the slab is full or sealed, nothing is in flight in it, and
 * none was written for its generation. */
bool l3_summary_due(const l3_slabstore *s, uint32_t slab);

/* Write slab `slab`'s summary if it is due: the store has summaries, the
 * slab is full or sealed, nothing is in flight in it, and none was written
 * for its generation. Called after a put wave or a delete released it. A
 * failed write is logged (a crash scan then reads the slab's headers). */
void l3_summary_settle(l3_slabstore *s, uint32_t slab);

/* Zero the summary entry of slot `slot` of slab `slab` (pinned by the
 * caller): a deleted object must not come back from its summary. */
l3_status l3_summary_forget(l3_slabstore *s, uint32_t slab, uint32_t slot, l3_error *err);

#endif
