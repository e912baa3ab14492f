/* l3bench --compare's devices: settling them between timed runs and
 * reading what the kernel counted of them, for the directories a run
 * uses. */
#ifndef L3_COMPARE_DEV_H
#define L3_COMPARE_DEV_H

#include <stdbool.h>
#include <stddef.h>

/* A device's counters (/sys/dev/block/MAJ:MIN/stat), summed over the
 * distinct devices watched. */
typedef struct cmp_devstat {
    bool ok;
    double ios, sectors, ticks_ms, in_queue_ms;
} cmp_devstat;

/* Watch the devices under `dirs` (n of them, at most L3_COMPARE_MAX_DIRS):
 * the directories cmp_settle syncs, the devices cmp_devstat_now sums (each
 * distinct one once); forgets what was watched before. */
void cmp_devices_watch(const char *const *dirs, size_t n);

/* Let the devices finish the last run's writes (syncfs sends the flush a
 * virtual disk's host cache needs) before the next run is timed. */
void cmp_settle(void);

/* The watched devices' counters now (ok false if any cannot be read). */
cmp_devstat cmp_devstat_now(void);

#endif
