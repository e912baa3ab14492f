/* l3cache: the slab store's calls for tests only (internal; not installed,
 * not exported): the tests link the static library and include this. */
#ifndef L3_SLABSTORE_INTERNAL_H
#define L3_SLABSTORE_INTERNAL_H

#include "io_types.h"
#include "l3_slabstore.h"

/* Inject I/O faults into the store's engine (l3_io_fault, io_types.h);
 * NULL clears. */
void l3_slabstore_set_fault(l3_slabstore *s, const l3_io_fault *fault);

#endif
