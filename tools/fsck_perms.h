/* l3fsck's permissions pass (fsck_perms.c). */
#ifndef L3_FSCK_PERMS_H
#define L3_FSCK_PERMS_H

#include "fsck.h"

/* The store's files (or devices) and its shared object: no access for
 * other users (-y takes it away); a shared object another user owns is a
 * problem no repair fixes. */
void fsck_permissions(fsck *f);

#endif
