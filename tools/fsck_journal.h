/* l3fsck's verdict on a damaged journal record, and its repair
 * (fsck_journal.c). */
#ifndef L3_FSCK_JOURNAL_H
#define L3_FSCK_JOURNAL_H

#include "fsck.h"

/* A damaged journal record: nothing of this pass is live unless the
 * checkpoint the store opens from proves it (each pass, and after the
 * checkpoint's verdict). */
void fsck_journal_verdict(fsck *f);

/* -y: what a damaged journal record removed stays removed: with the
 * checkpoint the store opens from, the objects live by their headers but
 * not in it dropped (header and summary entry zeroed); without one, the
 * epoch bumped. Then the damaged records are zeroed on every device. */
void fsck_journal_repair(fsck *f);

#endif
