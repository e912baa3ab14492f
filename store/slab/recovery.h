/* l3cache: the slab store's recovery (internal; not installed): what the
 * last process out writes (the index checkpoint, then a clean superblock)
 * and what the first process in reads (the checkpoint when the store was
 * closed cleanly, else a crash scan: each slab's summary where it has a
 * usable one, the object headers of the others), by the rules of
 * rules.h. */
#ifndef L3_RECOVERY_H
#define L3_RECOVERY_H

#include "entries.h"

/* Load the store into a fresh mapping (the first process attached): the
 * slab table and journal, then the checkpoint or a crash scan (summaries
 * first, headers where a slab has no usable summary); then mark the
 * superblock dirty before any change (unless read-only). */
l3_status l3_recovery_load(l3_slabstore *s, l3_error *err);

/* Write the checkpoint and a clean superblock (the last process out; the
 * store is quiescent). */
l3_status l3_recovery_save(l3_slabstore *s, l3_error *err);

#endif
