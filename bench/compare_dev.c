/* l3bench --compare's devices (compare_dev.h). */
#include "compare_dev.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "compare_types.h"
#include "invariant.h"

static const char *settle_dirs[L3_COMPARE_MAX_DIRS];
static size_t num_settle_dirs;

/* The block devices under the benchmark's directories, as the kernel
 * counts them (/sys/dev/block/MAJ:MIN/stat), to tell what each system
 * asked of them (summed over distinct devices). */
static char devstat_paths[L3_COMPARE_MAX_DIRS][128];
static size_t num_devstats;

void cmp_settle(void)
{
    for (size_t i = 0; i < num_settle_dirs; i++) {
        int fd = open(settle_dirs[i], O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            syncfs(fd);
            close(fd);
        }
    }
    usleep(500000);
}

static cmp_devstat devstat_one(const char *path)
{
    cmp_devstat d = { 0 };
    FILE *f = fopen(path, "r");
    if (!f)
        return d;
    unsigned long long v[11] = { 0 };
    int got = 0;
    for (int i = 0; i < 11 && fscanf(f, "%llu", &v[i]) == 1; i++)
        got++;
    fclose(f);
    if (got < 11)
        return d;
    /* reads: v[0] ios, v[2] sectors; writes: v[4], v[6]; v[9] busy ms, v[10] weighted ms */
    d = (cmp_devstat){ true, (double)(v[0] + v[4]), (double)(v[2] + v[6]), (double)v[9], (double)v[10] };
    return d;
}

cmp_devstat cmp_devstat_now(void)
{
    cmp_devstat sum = { .ok = num_devstats > 0 };
    for (size_t i = 0; i < num_devstats; i++) {
        cmp_devstat d = devstat_one(devstat_paths[i]);
        sum.ok = sum.ok && d.ok;
        sum.ios += d.ios;
        sum.sectors += d.sectors;
        sum.ticks_ms += d.ticks_ms;
        sum.in_queue_ms += d.in_queue_ms;
    }
    return sum;
}

static void devstat_find(const char *dir)
{
    struct stat st;
    char path[128];
    if (stat(dir, &st) != 0)
        return;
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
    for (size_t i = 0; i < num_devstats; i++)
        if (strcmp(devstat_paths[i], path) == 0)
            return;
    L3_ASSERT(num_devstats < L3_COMPARE_MAX_DIRS); /* a device per --dir at most */
    snprintf(devstat_paths[num_devstats++], sizeof devstat_paths[0], "%s", path);
}

void cmp_devices_watch(const char *const *dirs, size_t n)
{
    L3_ASSERT(n <= L3_COMPARE_MAX_DIRS); /* l3bench refuses more --dir */
    num_devstats = 0;
    for (size_t i = 0; i < n; i++) {
        devstat_find(dirs[i]);
        settle_dirs[i] = dirs[i];
    }
    num_settle_dirs = n;
}
