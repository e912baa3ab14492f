/* l3bench --compare's plot: GB/s by object size, gets and puts, of fio
 * (one job and l3cache's shape), l3cache and the file-per-key baseline,
 * drawn by gnuplot. */
#ifndef L3_COMPARE_PLOT_H
#define L3_COMPARE_PLOT_H

#include <stddef.h>

#include "compare_rounds.h"

/* Draw the `n` rows into the PNG `png`, through a data file and a gnuplot
 * script left in `dir` (said on stderr if gnuplot fails or is missing). */
void cmp_plot(const char *png, const char *dir, const cmp_row *rows, size_t n);

#endif
