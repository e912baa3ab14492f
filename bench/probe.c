/* Measuring a store file from outside (probe.h). */
#include "probe.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aligned.h"
#include "l3_clock.h"
#include "l3_pool.h"

/* Leave the store as a crash would: a child opens it (writing clean = 0)
 * and exits without closing, so the next open finds nobody alive
 * attached and rebuilds the index from the headers. */
bool l3_probe_crash_open(const l3_slab_options *so)
{
    pid_t pid = fork();
    if (pid == 0) {
        l3_slabstore *s;
        _exit(l3_slabstore_open(so, &s, NULL) == L3_OK ? 0 : 1);
    }
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* l3fsck beside this l3bench (the build tree's tools/, or the same bin/),
 * else on the PATH. */
static void find_fsck(char *out, size_t len)
{
    char self[900];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    const char *tries[] = { "/../tools/l3fsck", "/l3fsck" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(out, len, "%s%s", self, tries[i]);
        if (access(out, X_OK) == 0)
            return;
    }
    snprintf(out, len, "l3fsck");
}

/* Run `argv` with its stdout into a pipe: the parsed JSON it printed, its
 * exit status and its peak resident set. */
static json_t *run_json(char *const argv[], int *status, uint64_t *max_rss)
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = pid > 0 ? fdopen(fds[0], "r") : NULL;
    json_t *root = f ? json_loadf(f, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
    if (f)
        fclose(f);
    else
        close(fds[0]);
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    *status = -1;
    if (pid > 0)
        wait4(pid, status, 0, &ru);
    *max_rss = (uint64_t)ru.ru_maxrss * 1024;
    return root;
}

bool l3_probe_time_fsck(const char *file, bool verify, double *seconds, uint64_t *objects, double *slab_bytes,
                        uint64_t *max_rss)
{
    char fsck[1000];
    find_fsck(fsck, sizeof fsck);
    char *argv[6] = { fsck, "-n", "--json", verify ? "--verify" : NULL, NULL, NULL };
    argv[verify ? 4 : 3] = (char *)file;
    double t0 = l3_monotonic_seconds();
    int status;
    uint64_t rss = 0;
    json_t *root = run_json(argv, &status, &rss);
    *seconds = l3_monotonic_seconds() - t0;
    bool ok = root && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (max_rss)
        *max_rss = rss;
    if (ok) {
        json_t *sb = json_array_get(json_object_get(root, "superblocks"), 0);
        *objects = (uint64_t)json_integer_value(json_object_get(json_object_get(root, "objects"), "served"));
        *slab_bytes = (double)json_array_size(json_object_get(root, "slabs")) *
                      (double)json_integer_value(json_object_get(sb, "slab_size"));
    }
    json_decref(root);
    return ok;
}

bool l3_probe_lay_out(const char *path, uint64_t len)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT, 0600);
    if (fd < 0)
        return false;
    size_t chunk = 8u << 20;
    void *zero = l3_pool_alloc(chunk, NULL); /* zeroed */
    bool ok = zero != NULL;
    for (uint64_t off = 0; ok && off < len; off += chunk) {
        size_t n = len - off < chunk ? (size_t)(len - off) : chunk;
        ok = pwrite(fd, zero, n, (off_t)off) == (ssize_t)n;
    }
    ok = ok && fsync(fd) == 0;
    l3_pool_free(zero, chunk);
    close(fd);
    return ok;
}

bool l3_probe_fill(l3_slabstore *s, uint64_t n, uint32_t obj_bytes, size_t batch, const char *prefix)
{
    size_t pool_len = batch * obj_bytes;
    const char **ptrs = calloc(batch, sizeof *ptrs);
    char *names = calloc(batch, 32);
    l3_range *ranges = calloc(batch, sizeof *ranges);
    bool *ok = calloc(batch, sizeof *ok), *fail = calloc(batch, sizeof *fail);
    uint8_t *pool = l3_aligned_alloc(4096, pool_len, false);
    bool good = ptrs && names && ranges && ok && fail && pool;
    l3_host_buffer host = { pool, pool_len };
    if (good) {
        memset(pool, 0x5a, pool_len);
        l3_slabstore_register_host(s, host, NULL);
    }
    l3_error err = { 0 };
    for (uint64_t base = 0; base < n && good; base += batch) {
        size_t m = n - base < batch ? (size_t)(n - base) : batch;
        for (size_t i = 0; i < m; i++) {
            snprintf(names + i * 32, 32, "%s%llu", prefix, (unsigned long long)(base + i));
            ptrs[i] = names + i * 32;
            ranges[i] = (l3_range){ i * obj_bytes, obj_bytes };
        }
        l3_io_result res = { .success = ok, .object_failures = fail };
        good = l3_store_batch_put_from(l3_slabstore_store(s), ptrs, m, host, ranges, &res, &err) == L3_OK;
        for (size_t i = 0; i < m && good; i++)
            good = ok[i];
        if (!good)
            fprintf(stderr, "l3bench: a put failed at object %llu: %s\n", (unsigned long long)base,
                    err.msg[0] ? err.msg : "an object failed");
    }
    if (pool)
        l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL);
    free(pool);
    free(ptrs);
    free(names);
    free(ranges);
    free(ok);
    free(fail);
    return good;
}

void l3_probe_rss(uint64_t *rss, uint64_t *peak)
{
    *rss = *peak = 0;
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
            *rss = kb * 1024;
        else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            *peak = kb * 1024;
    }
    if (f)
        fclose(f);
}
