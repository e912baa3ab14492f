/* l3bench --compare's fio runs (compare_fio.h). */
#include "compare_fio.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare_dev.h"
#include "probe.h"

void cmp_fio_init(cmp_fio *f, const char *const *dirs, size_t n, const char *name, size_t depth, size_t jobs)
{
    f->list[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        snprintf(f->file[i], sizeof f->file[i], "%s/%s", dirs[i], name);
        snprintf(f->list + strlen(f->list), sizeof f->list - strlen(f->list), "%s%s", i ? ":" : "",
                 f->file[i]);
    }
    f->nfiles = n;
    f->depth = depth;
    f->jobs = jobs;
}

/* fio on `file`: `jobs` jobs of iodepth `depth`, each over its own
 * 1/jobs of `total` (jobs = 1: one sequential stream). fio's buffers come
 * from malloc; the glibc tunable makes them transparent huge pages, as
 * l3cache's pool is (l3_pool_alloc), so that neither system's requests
 * are split at the device's segment limit. */
static bool run_fio(const char *file, size_t nfiles, uint64_t total, uint64_t bs, size_t depth, size_t jobs,
                    bool write, cmp_result *r)
{
    char cmd[20000];
    /* Several files (a:b): each job's `size` is spread over them, and its
     * offset moves by its share of each. */
    /* NOLINTNEXTLINE(clang-analyzer-core.DivideZero): nfiles is cmp_fio_init's n, at least 1 */
    uint64_t share = total / jobs / bs / nfiles * bs * nfiles;
    snprintf(cmd, sizeof cmd,
             "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 fio --name=l3 --filename=%s --filesize=%llu --size=%llu --offset_increment=%llu --bs=%llu "
             "--iodepth=%zu --ioengine=io_uring --direct=1 --fixedbufs --registerfiles --rw=%s "
             "--numjobs=%zu --group_reporting --output-format=json 2>/dev/null",
             file, (unsigned long long)(total / nfiles), (unsigned long long)share,
             (unsigned long long)(share / nfiles), (unsigned long long)bs, depth, write ? "write" : "read", jobs);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0)
        len += n;
    buf[len] = '\0';
    int rc = pclose(p);
    json_t *root = json_loads(buf, 0, NULL);
    free(buf);
    if (rc != 0 || !root)
        return false;
    json_t *job = json_array_get(json_object_get(root, "jobs"), 0);
    json_t *side = json_object_get(job, write ? "write" : "read");
    double bw = (double)json_integer_value(json_object_get(side, "bw_bytes"));
    double bytes = (double)json_integer_value(json_object_get(side, "io_bytes"));
    json_t *pcts = json_object_get(json_object_get(side, "clat_ns"), "percentile");
    double runtime = (double)json_integer_value(json_object_get(job, "job_runtime")) / 1e3;
    double cpu = (json_number_value(json_object_get(job, "usr_cpu")) +
                  json_number_value(json_object_get(job, "sys_cpu"))) / 100.0 * runtime;
    double ctx = (double)json_integer_value(json_object_get(job, "ctx")); /* the jobs' sum (group_reporting) */
    *r = (cmp_result){ .ok = bw > 0, .gbs = bw / 1e9,
                       .p50_ms = json_number_value(json_object_get(pcts, "50.000000")) / 1e6,
                       .p99_ms = json_number_value(json_object_get(pcts, "99.000000")) / 1e6,
                       .cpu_per_gb = bytes > 0 ? cpu / (bytes / 1e9) : 0,
                       .ctx_per_gb = bytes > 0 ? ctx / (bytes / 1e9) : 0 };
    json_decref(root);
    return r->ok;
}

bool cmp_fio_round(const cmp_fio *f, uint64_t total, uint64_t bs, bool write, cmp_result *r)
{
    for (size_t i = 0; i < f->nfiles && write; i++)
        if (!l3_probe_lay_out(f->file[i], total / f->nfiles)) {
            fprintf(stderr, "l3bench: laying out %s: %s\n", f->file[i], strerror(errno));
            return false;
        }
    if (write)
        cmp_settle();
    return run_fio(f->list, f->nfiles, total, bs, f->depth, f->jobs, write, r);
}

void cmp_fio_remove(const cmp_fio *f)
{
    for (size_t i = 0; i < f->nfiles; i++)
        unlink(f->file[i]);
}
