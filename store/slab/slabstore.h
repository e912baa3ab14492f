/* l3cache: the slab store's calls for tests only (internal; not installed,
 * not exported): the tests link the static library and include this. */
#ifndef L3_SLABSTORE_INTERNAL_H
#define L3_SLABSTORE_INTERNAL_H

#include "io_types.h"
#include "l3_slabstore.h"

/* Inject I/O faults into the store's engine (l3_io_fault, io_types.h);
 * NULL clears. */
void l3_slabstore_set_fault(l3_slabstore *s, const l3_io_fault *fault);

/* Install the device model of power-cut tests (l3_io_power, io_types.h;
 * NULL removes it) for every store this process opens or has open: each
 * device's unflushed writes held as a volatile write cache, and a seeded
 * cut at the model's `cut_at`-th write, after which the process _exits
 * (L3_IO_POWER_EXIT). Process-wide: install it before the open whose
 * recovery it is to cover. */
void l3_slabstore_set_power(const l3_io_power *power);

/* Writes the device model saw since its installation. */
uint64_t l3_slabstore_power_writes(void);

#endif
