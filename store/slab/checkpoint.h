/* l3cache: the slab store's index checkpoint (internal; not installed):
 * written by the last process out of a quiescent store, read by the first
 * one in after a clean close (FORMAT.md "Checkpoint"). */
#ifndef L3_CHECKPOINT_H
#define L3_CHECKPOINT_H

#include "entries.h"

/* Write the checkpoint of the quiescent store (every device's copy): the
 * image layout where it fits and is at most twice the entry list, else
 * the list; its body's crc and length out, for the superblock. */
l3_status l3_checkpoint_save(l3_slabstore *s, uint32_t *crc, uint64_t *bytes, l3_error *err);

/* Rebuild the index of a fresh mapping from the checkpoint (the store
 * closed cleanly; its slab table and journal read): an image read in
 * place, or entries published one by one. L3_ECORRUPT when it is unusable:
 * the mapping is then left empty for a scan. */
l3_status l3_checkpoint_load(l3_slabstore *s, l3_error *err);

#endif
