/* l3bench --compare: for each object size, on one file system:
 *   fio (io_uring, O_DIRECT, fixed buffers, huge-page buffers) on laid-out
 *   files in the same directory: the device limit; l3cache through the
 *   executor, checksums on and off; and a file-per-key buffered baseline
 *   (pread/pwrite, a file per object, as simple disk KV-cache backends
 *   do). Rounds of puts, then rounds of gets, each system in turn in a
 *   rotating order; ratios are paired per round. Then exists() keys/s,
 *   recovery time (clean checkpoint and crash scan) and puts under
 *   eviction.
 *
 * This room sizes the run to its directories' free space, runs them in
 * that order and reports (with --ram-device, in a child on a RAM-backed
 * device it makes and takes down); each job is a room below it: the
 * sizing (compare_space.c), the devices settled and watched
 * (compare_dev.c), the RAM-backed device (compare_ram.c), fio
 * (compare_fio.c), the file-per-key baseline (compare_files.c), l3cache's
 * cells (compare_l3.c), exists, recovery, steady state and crc32c's cost
 * (compare_extras.c), the rotated rounds, medians and paired ratios
 * (compare_rounds.c), the report (compare_report.c), the plot
 * (compare_plot.c). */
#include "compare.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compare_extras.h"
#include "compare_plot.h"
#include "compare_ram.h"
#include "compare_report.h"
#include "compare_rounds.h"
#include "compare_space.h"
#include "l3_crc32c.h"
#include "mixed.h"

#define MIB (1ull << 20)

void l3_compare_defaults(l3_compare_options *o)
{
    memset(o, 0, sizeof *o);
    o->dir = ".";
    o->total = 1ull << 30;
    const uint64_t sizes[] = { 64 << 10, 256 << 10, 1 << 20, 4 << 20 };
    memcpy(o->sizes, sizes, sizeof sizes);
    o->num_sizes = 4;
    o->keys = 16;
    o->qd = 16;
    o->recovery_objects = 1000000;
    o->repeat = 5;
    o->plot = "l3bench-compare.png";
}

bool l3_compare_parse_sizes(const char *text, l3_compare_options *o)
{
    char *copy = strdup(text), *save = NULL;
    o->num_sizes = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t b;
        char unit[8];
        snprintf(unit, sizeof unit, "%s", t);
        size_t n = strlen(unit);
        /* Accept 64K / 1M as binary units. */
        char with[16];
        snprintf(with, sizeof with, "%s%s", t, (n && (unit[n - 1] == 'K' || unit[n - 1] == 'M')) ? "iB" : "");
        if (o->num_sizes == 8 || l3_parse_size(with, &b, NULL) != L3_OK || b < 4096 || b > (64ull << 20)) {
            free(copy);
            return false;
        }
        o->sizes[o->num_sizes++] = b;
    }
    free(copy);
    return o->num_sizes > 0;
}

#define MIXED_PAGE MIB /* the mixed phase's pages */
#define MIXED_ROUNDS 3

static double gb(uint64_t bytes) { return (double)bytes / 1e9; }

/* The sizing's line: what the plan chose of each phase, and why. */
static void print_space(const l3_compare_options *asked, const cmp_space_plan *p, FILE *out)
{
    char rounds[128], mixed[192], rec[160];
    int n = snprintf(rounds, sizeof rounds, "the rounds %llu MiB a run", (unsigned long long)(p->total >> 20));
    if (p->total < asked->total)
        snprintf(rounds + n, sizeof rounds - (size_t)n, ", shrunk from %llu MiB to fit",
                 (unsigned long long)(asked->total >> 20));
    n = snprintf(mixed, sizeof mixed, "%s", "no mixed phase");
    if (p->mixed_total)
        n = snprintf(mixed, sizeof mixed, "the mixed phase's gets %llu MiB (its store %.1f GB)",
                     (unsigned long long)(p->mixed_total >> 20), gb(cmp_space_mixed(p->mixed_total, MIXED_PAGE,
                                                                                      MIXED_ROUNDS)));
    if (p->mixed_total && p->mixed_total < asked->total)
        snprintf(mixed + n, sizeof mixed - (size_t)n, ", shrunk from %llu MiB (%.1f GB) to fit",
                 (unsigned long long)(asked->total >> 20),
                 gb(cmp_space_mixed(asked->total, MIXED_PAGE, MIXED_ROUNDS)));
    n = snprintf(rec, sizeof rec, "%s", "no recovery phase");
    if (p->recovery_objects)
        n = snprintf(rec, sizeof rec, "recovery of %zu objects (%.1f GB)", p->recovery_objects,
                     gb(cmp_space_recovery(p->recovery_objects)));
    if (p->recovery_objects && p->recovery_objects < asked->recovery_objects)
        snprintf(rec + n, sizeof rec - (size_t)n, ", shrunk from %zu to fit", asked->recovery_objects);
    fprintf(out, "space: %.1f GB free in %s, %.1f GB of it left free: %s; %s; %s; the steady-state store "
            "%.1f GB; at most %.1f GB at once\n", gb(p->free), asked->num_dirs ? asked->dirs[0] : asked->dir,
            gb(p->free - p->room), rounds, mixed, rec, gb(CMP_SPACE_STEADY), gb(p->need));
}

/* Fit the run into its directories' free space (compare_space.c): o's
 * total and recovery objects as the plan chose them, the plan (with the
 * mixed phase's gets) in *p. False, said on stderr, when a directory
 * cannot be read or a phase does not fit even at its least. */
static bool size_to_space(l3_compare_options *o, cmp_space_plan *p)
{
    const char *const *dirs = o->num_dirs ? o->dirs : &o->dir;
    size_t ndirs = o->num_dirs ? o->num_dirs : 1, bad = 0;
    cmp_space_fs fs[CMP_SPACE_MAX_FS];
    size_t nfs = cmp_space_measure(dirs, ndirs, fs, &bad);
    if (!nfs) {
        fprintf(stderr, "l3bench: --compare: %s: %s\n", dirs[bad], strerror(errno));
        return false;
    }
    cmp_space_ask ask = { .total = o->total, .sizes = o->sizes, .num_sizes = o->num_sizes,
                          .mixed_total = o->no_mixed ? 0 : o->total, .mixed_page = MIXED_PAGE,
                          .mixed_rounds = MIXED_ROUNDS, .recovery_objects = o->recovery_objects };
    *p = cmp_space_fit(&ask, fs, nfs);
    if (!p->ok) {
        const cmp_space_fs *f = &fs[p->short_fs];
        fprintf(stderr, "l3bench: --compare: not enough free space for %s: at the least the sizing rule "
                "shrinks it to, it needs %.1f GB free in %s, which has %.1f GB (docs/performance.md, \"Sizing to the "
                "free space\"); %s\n", p->short_of, gb(p->short_need), dirs[f->dir], gb(f->free),
                o->on_ram ? "give --ram-device more (ext4 keeps a few per cent of it)"
                          : "free some space, or give --dir another file system");
        return false;
    }
    o->total = p->total;
    o->recovery_objects = p->recovery_objects;
    return true;
}

/* The run here, in `asked`'s directories, sized to their free space;
 * the exit code. */
static int run_here(const l3_compare_options *asked)
{
    l3_compare_options sized = *asked;
    const l3_compare_options *o = &sized;
    cmp_space_plan space;
    if (!size_to_space(&sized, &space))
        return 1;
    cmp_run cx;
    cmp_set_flush(o->flush ? o->flush : "interval");
    const char *gets = o->gets ? o->gets : "driver", *puts = o->puts ? o->puts : "driver";
    cmp_set_modes(gets, puts);
    cmp_run_init(&cx, o);
    if (!o->json)
        printf("l3cache vs fio vs file-per-key: %llu MiB per run, %zu keys per operation, %zu in flight "
               "(fio iodepth %zu), crc32c on %s, store.flush %s, executor.gets %s, puts %s\n",
               (unsigned long long)(o->total >> 20), o->keys, o->qd, cx.depth, l3_crc32c_engine(),
               o->flush ? o->flush : "interval", gets, puts);
    print_space(asked, &space, o->json ? stderr : stdout);
    if (!o->json && cx.ndirs > 1)
        printf("%zu directories: l3cache's store over a file in each (store.paths), fio over the same files "
               "(%s); the file-per-key baseline, recovery, steady state and the mixed phase use the first\n",
               cx.ndirs, cx.fio[0].list);
    cmp_row rows[8] = { 0 };
    cmp_extras x = { .crc_s_per_gb = cx.crc_s_per_gb, .space = space };
    for (size_t i = 0; i < o->num_sizes; i++) {
        rows[i].size = o->sizes[i];
        cmp_run_size(&cx, &rows[i]);
        if (i == 0 && cx.l3[0].open)
            cmp_exists_run(&cx.l3[0], &x.ex);
        cmp_size_done(&cx, &rows[i]);
        if (!o->json)
            fprintf(stderr, "l3bench: %lluK done\n", (unsigned long long)(rows[i].size >> 10));
    }
    x.rec_ok = o->recovery_objects ? cmp_recovery_run(cx.file, o->recovery_objects, &x.rec) : false;
    x.sty_ok = cmp_steady_run(cx.file, o->keys, o->qd, &x.sty);
    if (!o->no_mixed)
        l3_mixed_run(o->dir, space.mixed_total, MIXED_PAGE, o->keys, o->qd, MIXED_ROUNDS, &x.mix);
    if (o->json)
        cmp_report_json(&cx, rows, &x);
    else
        cmp_report_text(&cx, rows, &x);
    if (o->plot && o->num_sizes > 1)
        cmp_plot(o->plot, o->on_ram ? "." : o->dir, rows, o->num_sizes);
    return cx.all_ok && (x.rec_ok || !o->recovery_objects) && x.sty_ok && (x.mix.ok || o->no_mixed) ? 0 : 1;
}

/* The signals a run on the RAM-backed device is stopped by. */
static const int stop_signals[3] = { SIGINT, SIGTERM, SIGHUP };

static volatile sig_atomic_t signalled; /* a signal the parent of a run on a RAM-backed device took */
static volatile sig_atomic_t ram_child; /* that run's pid */

/* Pass a signal on to the run on the RAM-backed device, which ends by it,
 * so that the parent lives to take the device down. */
static void forward(int sig)
{
    signalled = sig;
    if (ram_child > 0)
        kill(ram_child, sig);
}

/* The run on the device (in the child): its directory the device's mount,
 * the plot's data in the working directory (the device goes after the
 * run); the exit code. */
static int run_child(const l3_compare_options *o, const cmp_ram *r)
{
    for (size_t i = 0; i < 3; i++)
        signal(stop_signals[i], SIG_DFL);
    l3_compare_options on = *o;
    on.dir = r->mnt;
    on.on_ram = true;
    int rc = run_here(&on);
    fflush(NULL);
    return rc;
}

/* While the device is up, stop_signals are passed on (`on`), or as they
 * were before (`old`, restored). */
static void forward_signals(bool on, struct sigaction *old)
{
    struct sigaction sa = { .sa_handler = forward };
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 3; i++)
        sigaction(stop_signals[i], on ? &sa : &old[i], on ? &old[i] : NULL);
}

/* The run in a child on the device; its exit code, 128 + the signal that
 * ended it, or 1 if it could not start. */
static int run_forked(const l3_compare_options *o, const cmp_ram *r)
{
    int status = 0;
    pid_t pid = signalled ? -1 : fork();
    if (pid == 0)
        _exit(run_child(o, r)); /* the child's end: the parent takes the device down */
    if (pid < 0 && !signalled)
        fprintf(stderr, "l3bench: --ram-device: fork: %s\n", strerror(errno));
    ram_child = pid;
    if (pid > 0 && signalled)
        kill(pid, signalled); /* taken before ram_child was set */
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    ram_child = 0;
    if (pid < 0)
        return signalled ? 128 + signalled : 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* --ram-device: the device made, the run in a child on it, and the device
 * taken down however the child ends (done, failed, killed; a SIGINT,
 * SIGTERM or SIGHUP to this process, while the device is made too, is
 * passed on to it and waited out). The exit code: the run's, 128 + a
 * signal's that ended it, or 1 if the device could not be made or wholly
 * taken down. */
static int run_on_ram(const l3_compare_options *o)
{
    char why[512];
    cmp_ram r;
    if (!cmp_ram_usable(o->ram_device, why, sizeof why)) {
        fprintf(stderr, "l3bench: --ram-device: %s\n", why);
        return 1;
    }
    struct sigaction old[3];
    forward_signals(true, old);
    if (!cmp_ram_make(&r, o->ram_device, why, sizeof why)) {
        forward_signals(false, old);
        fprintf(stderr, "l3bench: --ram-device: %s\n", why);
        return 1;
    }
    fprintf(o->json ? stderr : stdout, "RAM-backed device: a %.1f GB file in a tmpfs (%s), %s over it, ext4 at "
            "%s: the run's directory, taken down after it\n", gb(o->ram_device), r.ram, r.loop, r.mnt);
    fflush(NULL);
    int rc = run_forked(o, &r);
    if (signalled)
        fprintf(stderr, "l3bench: --ram-device: signal %d: the run stopped; taking the device down\n",
                (int)signalled);
    bool removed = cmp_ram_remove(&r);
    forward_signals(false, old);
    return removed || rc ? rc : 1;
}

int l3_compare_run(const l3_compare_options *asked)
{
    return asked->ram_device && !asked->on_ram ? run_on_ram(asked) : run_here(asked);
}
