/* l3fsck's checkpoint pass (fsck_checkpoint.c): a clean store serves
 * exactly its checkpoint's entries, so each must name an object live by
 * the rules. It runs after fsck_objects in each pass, on that pass's
 * objects, and judges the checkpoint after the last. */
#ifndef L3_FSCK_CHECKPOINT_H
#define L3_FSCK_CHECKPOINT_H

#include "fsck.h"

/* Whether the store's next open loads its checkpoint (clean, its header
 * valid and this build's) rather than scanning its slabs. */
bool fsck_checkpoint_opens(fsck *f);

/* A clean store serves only its checkpoint: match its entries against
 * this pass's objects (the first pass also reads its header and checks
 * its body's crc). */
void fsck_checkpoint(fsck *f);

/* After the last pass: whether the checkpoint may be used (a problem, and
 * with -y the superblock marked dirty, when it may not). */
void fsck_checkpoint_verdict(fsck *f);

#endif
