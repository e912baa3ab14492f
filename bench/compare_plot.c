/* l3bench --compare's plot (compare_plot.h). */
#include "compare_plot.h"

#include <stdio.h>
#include <stdlib.h>

void cmp_plot(const char *png, const char *dir, const cmp_row *rows, size_t n)
{
    char dat[1024], gp[1024];
    snprintf(dat, sizeof dat, "%s/l3bench-compare.dat", dir);
    snprintf(gp, sizeof gp, "%s/l3bench-compare.gp", dir);
    FILE *f = fopen(dat, "w");
    if (!f)
        return;
    fprintf(f, "# size_kib fio_get l3_get files_get fio_put l3_put files_put fio_jobs_get fio_jobs_put (GB/s)\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%llu %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f\n", (unsigned long long)(rows[i].size >> 10),
                rows[i].fio_get.gbs, rows[i].l3_get.gbs, rows[i].files_get.gbs, rows[i].fio_put.gbs,
                rows[i].l3_put.gbs, rows[i].files_put.gbs, rows[i].fiow_get.gbs, rows[i].fiow_put.gbs);
    fclose(f);
    f = fopen(gp, "w");
    if (!f)
        return;
    fprintf(f,
            "set terminal pngcairo size 1200,480 font ',11'\n"
            "set output '%s'\n"
            "set multiplot layout 1,2 title 'l3cache vs fio (device limit) vs file-per-key, GB/s by object size'\n"
            "set termoption noenhanced\n"
            "set logscale x 2\nset xlabel 'object size (KiB)'\nset ylabel 'GB/s'\nset grid\nset key below\n"
            "set yrange [0:*]\nset xrange [48:5600]\nset xtics (64, 256, 1024, 4096)\n"
            "set title 'get'\n"
            "plot '%s' u 1:2 w lp lw 2 t 'fio, 1 job', '' u 1:8 w lp lw 2 dt 2 t 'fio, l3cache shape', "
            "'' u 1:3 w lp lw 2 t 'l3cache', '' u 1:4 w lp lw 2 t 'file per key'\n"
            "set title 'put'\n"
            "plot '%s' u 1:5 w lp lw 2 t 'fio, 1 job', '' u 1:9 w lp lw 2 dt 2 t 'fio, l3cache shape', "
            "'' u 1:6 w lp lw 2 t 'l3cache', '' u 1:7 w lp lw 2 t 'file per key'\n"
            "unset multiplot\n",
            png, dat, dat);
    fclose(f);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "gnuplot %s 2>/dev/null", gp);
    if (system(cmd) != 0)
        fprintf(stderr, "l3bench: gnuplot failed or is missing; the data is in %s\n", dat);
}
