/* l3bench --scale N[,N...]: what a store of N small objects costs in RAM
 * and how fast it comes back, at each N. A test tool: it writes the store
 * file with zeros (so that puts are overwrites, as on a device: ext4
 * converts a fresh file's extents one write at a time), formats it with
 * 512-byte blocks and an index for N objects, fills it with N objects of
 * 512 bytes through the real put path (headers, slab records, checkpoint
 * as any put writes them), then times a clean reopen (the checkpoint),
 * l3fsck -n and a crash scan (the headers), and reads the shared
 * mapping's size and the process's resident memory. */
#ifndef L3_SCALE_H
#define L3_SCALE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct l3_scale_options {
    const char *dir;      /* where the store file goes: about 3.4 KiB per object */
    uint64_t counts[8];   /* object counts, one store each */
    size_t num_counts;
    bool json;
    bool keep;            /* leave the last count's store behind (closed cleanly) */
} l3_scale_options;

/* Parse "1000000,3000000" into o->counts; false if it is not such a list. */
bool l3_scale_parse_counts(const char *text, l3_scale_options *o);

/* Run every count and print a row each (or one JSON document); the exit
 * code: 0 when every store came back whole. */
int l3_scale_run(const l3_scale_options *o);

#endif
