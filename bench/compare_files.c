/* l3bench --compare's file-per-key baseline (compare_files.h). */
#include "compare_files.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "l3_clock.h"
#include "workload.h"

static double cpu_now(void) { return wl_cpu_seconds(NULL); }

typedef struct files_job {
    const char *dir;
    uint64_t size;
    size_t n, first, step;
    bool write;
    double *lat;
    bool failed;
} files_job;

static void *files_thread(void *arg)
{
    files_job *j = arg;
    uint8_t *buf = malloc(j->size);
    memset(buf, 0x5a, j->size);
    char path[1200];
    for (size_t i = j->first; i < j->n; i += j->step) {
        snprintf(path, sizeof path, "%s/page%08zu", j->dir, i);
        double t0 = l3_monotonic_seconds();
        int fd = j->write ? open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644) : open(path, O_RDONLY);
        ssize_t got = fd < 0 ? -1
                    : j->write ? pwrite(fd, buf, j->size, 0) : pread(fd, buf, j->size, 0);
        if (fd >= 0)
            close(fd);
        if (got != (ssize_t)j->size)
            j->failed = true;
        j->lat[i] = l3_monotonic_seconds() - t0;
    }
    free(buf);
    return NULL;
}

static bool files_phase(const char *dir, uint64_t size, size_t n, size_t threads, bool write, cmp_result *r)
{
    double *lat = calloc(n, sizeof *lat);
    pthread_t *t = calloc(threads, sizeof *t);
    files_job *jobs = calloc(threads, sizeof *jobs);
    if (!lat || !t || !jobs) {
        free(lat);
        free(t);
        free(jobs);
        return false;
    }
    uint64_t x0 = wl_context_switches();
    double t0 = l3_monotonic_seconds(), c0 = cpu_now();
    for (size_t i = 0; i < threads; i++) {
        jobs[i] = (files_job){ dir, size, n, i, threads, write, lat, false };
        pthread_create(&t[i], NULL, files_thread, &jobs[i]);
    }
    bool ok = true;
    for (size_t i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        ok = ok && !jobs[i].failed;
    }
    free(t);
    free(jobs);
    if (write) {
        /* Until durable: what the others promise when their write returns. */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);
        syncfs(dfd);
        close(dfd);
    }
    double secs = l3_monotonic_seconds() - t0, cpu = cpu_now() - c0;
    wl_sort(lat, n);
    double bytes = (double)n * (double)size, ctx = (double)(wl_context_switches() - x0);
    *r = (cmp_result){ .ok = ok, .gbs = bytes / secs / 1e9, .p50_ms = lat[n / 2] * 1e3,
                       .p99_ms = lat[(size_t)(0.99 * (double)(n - 1))] * 1e3, .cpu_per_gb = cpu / (bytes / 1e9),
                       .ctx_per_gb = ctx / (bytes / 1e9) };
    free(lat);
    return ok;
}

static void drop_cache(const char *dir, size_t n)
{
    char path[1200];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/page%08zu", dir, i);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            close(fd);
        }
    }
}

void cmp_files_clear(const char *dir, size_t n)
{
    char path[1200];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/page%08zu", dir, i);
        unlink(path);
    }
    rmdir(dir);
}

bool cmp_files_put_round(const char *dir, uint64_t total, uint64_t size, size_t threads, cmp_result *put)
{
    size_t n = (size_t)(total / size);
    cmp_files_clear(dir, n);
    mkdir(dir, 0755);
    return files_phase(dir, size, n, threads, true, put);
}

bool cmp_files_get_round(const char *dir, uint64_t total, uint64_t size, size_t threads, cmp_result *get)
{
    size_t n = (size_t)(total / size);
    drop_cache(dir, n);
    return files_phase(dir, size, n, threads, false, get);
}
