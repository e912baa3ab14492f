/* Measuring a store file from outside (probe.h). */
#include "probe.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "l3_clock.h"

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
    const char *tries[] = { "%s/../tools/l3fsck", "%s/l3fsck" };
    for (size_t i = 0; i < 2; i++) {
        snprintf(out, len, tries[i], self);
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
