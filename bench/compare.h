/* l3bench --compare: l3cache against fio (the device limit) and a
 * file-per-key buffered baseline, on the same file system, same sizes. */
#ifndef L3_COMPARE_H
#define L3_COMPARE_H

#include <stdbool.h>

#include "compare_types.h"

/* The defaults: the working directory, 1 GiB per run, 64 KiB to 4 MiB. */
void l3_compare_defaults(l3_compare_options *o);

/* Parse "64K,256K,1M,4M" into o->sizes. */
bool l3_compare_parse_sizes(const char *text, l3_compare_options *o);

/* Run everything, sized to the directories' free space (what was asked
 * shrunk where it does not fit), and print the report; the exit code. */
int l3_compare_run(const l3_compare_options *asked);

#endif
