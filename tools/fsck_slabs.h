/* l3fsck's slab pass (fsck_slabs.c): the objects the rules call live,
 * once per pass (f->part), on the objects of that pass's keys. */
#ifndef L3_FSCK_SLABS_H
#define L3_FSCK_SLABS_H

#include "fsck.h"

/* Every used slab on a device given: its summary (a crash scan's rule),
 * or its headers (--headers, --verify, --list, -y, or no summary a crash
 * scan would use); this pass's live objects into f->objects, of two of
 * one key the rules' winner live (fsck_supersede). Each problem reported
 * through fsck_problem (the first pass's; its counts stand). */
void fsck_objects(fsck *f);

#endif
