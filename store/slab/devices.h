/* l3cache: the slab store's devices (internal; not installed): the files
 * or block devices a store spans, named from the options, opened
 * O_DIRECT (created for a new store), sized, shared with the other
 * processes (LOCK_SH; formatting and l3fsck -y take them exclusively),
 * and closed. */
#ifndef L3_DEVICES_H
#define L3_DEVICES_H

#include "entries.h"

/* The store's devices from the options: `paths`, or `path` alone; s->path
 * names the first. */
l3_status l3_devices_name(l3_slabstore *s, const l3_slab_options *opt, l3_error *err);

/* Open every device. One alone must open. Of several, the missing are
 * created only when none exists (a new store); otherwise a device that
 * does not open is missing (the store opens degraded, or is refused later
 * if it must be formatted). */
l3_status l3_devices_open(l3_slabstore *s, l3_error *err);

/* Size every present device and share it (LOCK_SH), waiting up to the
 * lock timeout for a process killed with rings on it to let go. */
l3_status l3_devices_share(l3_slabstore *s, l3_error *err);

/* The smallest present device's bytes (what each gives a new store). */
uint64_t l3_devices_smallest(const l3_slabstore *s);

/* Say loudly which devices a store opens without. */
void l3_devices_say_degraded(l3_slabstore *s);

/* Close the devices (and remove the files this open created, on failure). */
void l3_devices_close(l3_slabstore *s, bool failed);

/* flock `fd` (`how`: LOCK_SH or LOCK_EX) within `timeout` seconds; 0 on
 * success. */
int l3_devices_lock_file(int fd, int how, double timeout);

/* The block device's DMA segments per request (its queue's max_segments),
 * from sysfs; 0 when it cannot be told. A partition's queue is its disk's. */
unsigned l3_devices_max_segments(int fd, bool blockdev);

/* The largest request the device's queue takes (max_sectors_kb), in
 * bytes; 0 when it cannot be told. */
uint64_t l3_devices_max_request(int fd, bool blockdev);

#endif
