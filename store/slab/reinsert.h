/* l3cache: reinsertion (internal; not installed): before the policy's
 * victim slab is reused, the objects it keeps (policy.h: read since they
 * were written) are moved to the head of the log, as new copies that
 * replace the old ones only if those are still current. */
#ifndef L3_REINSERT_H
#define L3_REINSERT_H

#include <stdint.h>

#include "entries.h"

/* Free room ahead of a put wave of `bytes`: while the free slabs and the
 * open slabs' free slots hold less than the waves waiting for room (this
 * one's, published until its slots are reserved, and other processes')
 * and a slab for what reinsertion moves, take the policy's victim, move
 * what it keeps, then free it. One thread of one process makes room at a
 * time; the others wait for it, up to an I/O timeout (a put that has room
 * enough waits for no one). Outside the lock; never fails the caller
 * (what cannot be moved is evicted, as it would have been). */
void l3_reinsert_make_room(l3_slabstore *s, uint64_t bytes);

#endif
