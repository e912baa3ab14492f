/* l3bench --compare's sizing to the free space (compare_space.h). */
#include "compare_space.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include "invariant.h"

#define MIB (1ull << 20)

enum { PH_ROUNDS, PH_MIXED, PH_RECOVERY, PH_STEADY };

uint64_t cmp_space_l3_store(size_t n, size_t nfiles, uint64_t size)
{
    return ((uint64_t)((double)n / (double)nfiles * (double)(size + 4096) * 1.1) + 256 * MIB) / MIB * MIB;
}

uint64_t cmp_space_mixed(uint64_t total, uint64_t page, size_t rounds)
{
    uint64_t n = total / page, stream_pages = 4 * n * rounds;
    return ((n + stream_pages) * (page + 4096) / 10 * 11 + 256 * MIB) / MIB * MIB;
}

uint64_t cmp_space_recovery(size_t n) { return (uint64_t)((double)n * 8192 * 1.05) + 256 * MIB; }

uint64_t cmp_space_margin(uint64_t free) { return free / 20 > 256 * MIB ? free / 20 : 256 * MIB; }

/* The bytes free a file system needs for `need` of them to fit with the
 * margin. */
static uint64_t free_for(uint64_t need)
{
    uint64_t x = need + 256 * MIB;
    return x / 20 > 256 * MIB ? (need * 20 + 18) / 19 : x;
}

/* The rounds' most at once on file system f at `total` bytes a run: at
 * each size, each of its directories' two store files (crc32c on and
 * off) and two fio files (its two shapes), and on the first directory's
 * the file-per-key baseline (a file per object, whole blocks). */
static uint64_t rounds_need(const cmp_space_ask *a, size_t ndirs, const cmp_space_fs *f, uint64_t total)
{
    uint64_t most = 0;
    for (size_t i = 0; i < a->num_sizes; i++) {
        uint64_t size = a->sizes[i], n = total / size;
        uint64_t dir = 2 * cmp_space_l3_store((size_t)n, ndirs, size) + 2 * (ndirs ? total / ndirs : 0);
        uint64_t need = f->dirs * dir + (f->first ? n * ((size + 4095) / 4096 * 4096) : 0);
        most = need > most ? need : most;
    }
    return most;
}

/* Phase ph's bytes on file system f at `v` (the rounds' and the mixed
 * phase's bytes, recovery's objects; 0: not run). The phases beside the
 * rounds run in the first directory alone. */
static uint64_t need_on(const cmp_space_ask *a, size_t ndirs, const cmp_space_fs *f, int ph, uint64_t v)
{
    if (ph == PH_ROUNDS)
        return rounds_need(a, ndirs, f, v);
    if (!f->first || !v)
        return 0;
    if (ph == PH_MIXED)
        return cmp_space_mixed(v, a->mixed_page, a->mixed_rounds);
    return ph == PH_RECOVERY ? cmp_space_recovery((size_t)v) : CMP_SPACE_STEADY;
}

/* The run's directories, over its file systems. */
static size_t dirs_of(const cmp_space_fs *fs, size_t nfs)
{
    size_t n = 0;
    for (size_t i = 0; i < nfs; i++)
        n += fs[i].dirs;
    return n;
}

static uint64_t room_of(const cmp_space_fs *f)
{
    uint64_t m = cmp_space_margin(f->free);
    return f->free > m ? f->free - m : 0;
}

/* Whether phase ph at `v` fits every file system with its margin; if
 * not, the first it does not fit on in *short_fs. */
static bool fits(const cmp_space_ask *a, const cmp_space_fs *fs, size_t nfs, int ph, uint64_t v, size_t *short_fs)
{
    size_t ndirs = dirs_of(fs, nfs);
    for (size_t i = 0; i < nfs; i++)
        if (need_on(a, ndirs, &fs[i], ph, v) > room_of(&fs[i])) {
            *short_fs = i;
            return false;
        }
    return true;
}

/* The most of phase ph, up to `want` in steps of `step`, that fits
 * (want itself if it does; 0 if not even one step does). Each phase's
 * bytes grow with what it is given, so the largest that fits is found
 * by halving. */
static uint64_t most_that_fits(const cmp_space_ask *a, const cmp_space_fs *fs, size_t nfs, int ph, uint64_t want,
                               uint64_t step)
{
    size_t s;
    if (fits(a, fs, nfs, ph, want, &s))
        return want;
    uint64_t lo = 0, hi = step ? want / step : 0; /* lo * step fits (or lo is 0); no more than hi does */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (fits(a, fs, nfs, ph, mid * step, &s))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo * step;
}

/* One phase's share of the plan: the most that fits of `want`; under
 * `least` (or want, if less) the plan fails, naming it, unless an
 * earlier phase failed first. */
static uint64_t plan_phase(cmp_space_plan *p, const cmp_space_ask *a, const cmp_space_fs *fs, size_t nfs, int ph,
                           uint64_t want, uint64_t step, uint64_t least, const char *name)
{
    uint64_t got = most_that_fits(a, fs, nfs, ph, want, step), floor = want < least ? want : least;
    size_t s = 0;
    if (got >= floor || !p->ok)
        return got;
    (void)fits(a, fs, nfs, ph, floor, &s);
    *p = (cmp_space_plan){ .ok = false, .short_of = name, .short_fs = s,
                           .short_need = free_for(need_on(a, dirs_of(fs, nfs), &fs[s], ph, floor)) };
    return got;
}

cmp_space_plan cmp_space_fit(const cmp_space_ask *a, const cmp_space_fs *fs, size_t nfs)
{
    L3_ASSERT(nfs >= 1 && dirs_of(fs, nfs) >= 1 && (a->mixed_page || !a->mixed_total)); /* the caller's */
    cmp_space_plan p = { .ok = true };
    uint64_t largest = 4096;
    for (size_t i = 0; i < a->num_sizes; i++)
        largest = a->sizes[i] > largest ? a->sizes[i] : largest;
    uint64_t total = plan_phase(&p, a, fs, nfs, PH_ROUNDS, a->total, largest, CMP_SPACE_MIN_TOTAL, "the rounds");
    uint64_t mixed = plan_phase(&p, a, fs, nfs, PH_MIXED, a->mixed_total, a->mixed_page, CMP_SPACE_MIN_MIXED,
                                "the mixed phase");
    uint64_t objects = plan_phase(&p, a, fs, nfs, PH_RECOVERY, a->recovery_objects, 1000, CMP_SPACE_MIN_RECOVERY,
                                  "the recovery phase");
    plan_phase(&p, a, fs, nfs, PH_STEADY, 1, 1, 1, "the steady-state phase");
    if (!p.ok)
        return p;
    p.total = total;
    p.mixed_total = mixed;
    p.recovery_objects = (size_t)objects;
    const uint64_t v[4] = { total, mixed, objects, 1 };
    for (size_t i = 0; i < nfs; i++) {
        if (!fs[i].first)
            continue;
        p.free = fs[i].free;
        p.room = room_of(&fs[i]);
        for (int ph = PH_ROUNDS; ph <= PH_STEADY; ph++) {
            uint64_t need = need_on(a, dirs_of(fs, nfs), &fs[i], ph, v[ph]);
            p.need = need > p.need ? need : p.need;
        }
    }
    return p;
}

size_t cmp_space_measure(const char *const *dirs, size_t n, cmp_space_fs *fs, size_t *bad)
{
    L3_ASSERT(n <= CMP_SPACE_MAX_FS); /* l3bench refuses more --dir */
    dev_t devs[CMP_SPACE_MAX_FS];
    size_t nfs = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        struct statvfs sv;
        if (stat(dirs[i], &st) != 0 || statvfs(dirs[i], &sv) != 0) {
            *bad = i;
            return 0;
        }
        size_t j = 0;
        while (j < nfs && devs[j] != st.st_dev)
            j++;
        if (j == nfs) {
            devs[nfs] = st.st_dev;
            fs[nfs++] = (cmp_space_fs){ .free = (uint64_t)sv.f_bavail * sv.f_frsize, .dir = i, .first = i == 0 };
        }
        fs[j].dirs++;
    }
    return nfs;
}
