/* l3fsck's table pass (fsck_tables.c), after the superblocks'. */
#ifndef L3_FSCK_TABLES_H
#define L3_FSCK_TABLES_H

#include "fsck.h"

/* A truncated image (-y: a file extended), then the slab table and the
 * journal read into f->table and f->journal, each broken slab record a
 * problem (-y: zeroed on every device), each damaged journal record one
 * (f->bad_journal: fsck_journal.h judges and repairs it). */
void fsck_tables(fsck *f);

#endif
