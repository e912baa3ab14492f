/* l3fsck's superblock pass (fsck_super.c): the first pass, and the last
 * write of a repair. */
#ifndef L3_FSCK_SUPER_H
#define L3_FSCK_SUPER_H

#include "fsck.h"

/* Read every given device's superblock copies (printed), take the newest
 * device's good copy as the store's (f->sb, f->sbs), put each path at its
 * place among the store's devices and judge each device's copies against
 * it. False when there is no store to check (no valid copy, or a path
 * that is not one of its devices). */
bool fsck_superblocks(fsck *f);

/* -y: both copies of every device from the good one (marked dirty when
 * the checkpoint no longer tells the truth), each device synced. */
void fsck_write_superblocks(fsck *f);

#endif
