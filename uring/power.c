/* The device model for power-cut tests (power.h): per device, the units
 * (L3_IO_POWER_UNIT bytes) written since its last flush, each with its
 * durable bytes (read before the first such write) and every version a
 * completed write left; at the cut, one of them per unit is written back
 * and the process _exits. */
#include "power.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aligned.h"

#define UNIT L3_IO_POWER_UNIT
#define MAX_DEVS 16
#define DEFAULT_MAX_BYTES (256ull << 20)

/* One unit written since its device's last flush. */
typedef struct pw_unit {
    uint64_t unit;     /* its number + 1 (0: an empty slot of the table) */
    uint8_t *pre;      /* its durable bytes */
    uint8_t **ver;     /* the versions completed writes left, in order */
    uint32_t nver, cap;
    uint32_t inflight; /* writes over it not yet completed */
} pw_unit;

typedef struct pw_dev {
    dev_t dev;
    ino_t ino;
    int fd;            /* a dup of the first descriptor seen: the cut writes through it */
    pw_unit *units;    /* open addressing by unit number, a power of two */
    size_t n, cap;
} pw_dev;

atomic_bool l3_io_power_installed;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static l3_io_power model;
static pw_dev devs[MAX_DEVS];
static unsigned ndevs;
static uint64_t writes, held_bytes, inflight;
static bool dying;

static void unit_free(pw_unit *u)
{
    free(u->pre);
    for (uint32_t i = 0; i < u->nver; i++)
        free(u->ver[i]);
    free(u->ver);
    held_bytes -= (uint64_t)(u->nver + (u->pre != NULL)) * UNIT;
    memset(u, 0, sizeof *u);
}

static void dev_drop(pw_dev *d)
{
    for (size_t i = 0; i < d->cap; i++)
        if (d->units[i].unit)
            unit_free(&d->units[i]);
    free(d->units);
    if (d->fd >= 0)
        close(d->fd);
    memset(d, 0, sizeof *d);
}

void l3_io_power_set(const l3_io_power *p)
{
    pthread_mutex_lock(&mu);
    for (unsigned i = 0; i < ndevs; i++)
        dev_drop(&devs[i]);
    ndevs = 0;
    writes = held_bytes = inflight = 0;
    dying = false;
    model = p ? *p : (l3_io_power){ 0 };
    if (p && !model.max_bytes)
        model.max_bytes = DEFAULT_MAX_BYTES;
    if (p && !model.exit_code)
        model.exit_code = L3_IO_POWER_EXIT;
    atomic_store(&l3_io_power_installed, p != NULL);
    pthread_mutex_unlock(&mu);
}

uint64_t l3_io_power_writes(void)
{
    pthread_mutex_lock(&mu);
    uint64_t n = writes;
    pthread_mutex_unlock(&mu);
    return n;
}

/* The model's device of `fd` (added at its first write), or NULL. */
static pw_dev *dev_of(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return NULL;
    for (unsigned i = 0; i < ndevs; i++)
        if (devs[i].dev == st.st_dev && devs[i].ino == st.st_ino)
            return &devs[i];
    if (ndevs == MAX_DEVS)
        return NULL;
    pw_dev *d = &devs[ndevs];
    *d = (pw_dev){ .dev = st.st_dev, .ino = st.st_ino, .fd = dup(fd) };
    if (d->fd < 0)
        return NULL;
    ndevs++;
    return d;
}

static size_t slot_of(const pw_dev *d, uint64_t unit)
{
    size_t i = (size_t)((unit * 0x9e3779b97f4a7c15ull) >> 7) & (d->cap - 1);
    while (d->units[i].unit && d->units[i].unit != unit + 1)
        i = (i + 1) & (d->cap - 1);
    return i;
}

/* Make room for one more unit (a load of at most a half). */
static bool grow(pw_dev *d)
{
    if (2 * (d->n + 1) <= d->cap)
        return true;
    size_t old_cap = d->cap, cap = old_cap ? 2 * old_cap : 1024;
    pw_unit *old = d->units, *units = calloc(cap, sizeof *units);
    if (!units)
        return false;
    d->units = units;
    d->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].unit)
            d->units[slot_of(d, old[i].unit - 1)] = old[i];
    free(old);
    return true;
}

/* Unit `unit` of device d, its durable bytes read if it is new (before
 * the write that touches it is submitted); NULL out of memory. */
static pw_unit *unit_get(pw_dev *d, uint64_t unit)
{
    if (!grow(d))
        return NULL;
    pw_unit *u = &d->units[slot_of(d, unit)];
    if (u->unit)
        return u;
    u->pre = l3_aligned_alloc(UNIT, UNIT, true);
    if (!u->pre)
        return NULL;
    ssize_t got = pread(d->fd, u->pre, UNIT, (off_t)(unit * UNIT));
    if (got < (ssize_t)UNIT)
        memset(u->pre + (got > 0 ? got : 0), 0, UNIT - (size_t)(got > 0 ? got : 0));
    u->unit = unit + 1;
    d->n++;
    held_bytes += UNIT;
    return u;
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* The bytes unit u keeps at the cut: its durable bytes or one version,
 * by `style` (0: any, 1: the newest, 2: none of the unflushed, 3: the
 * newest or any). */
static const uint8_t *choose(const pw_unit *u, unsigned style, uint64_t *rng)
{
    uint64_t r = rng_next(rng);
    if (style == 1 || (style == 3 && r % 2 == 0))
        return u->ver[u->nver - 1];
    if (style == 2)
        return u->pre;
    uint64_t k = rng_next(rng) % (u->nver + 1);
    return k == 0 ? u->pre : u->ver[k - 1];
}

/* The cut: every unit with unflushed versions is left as `choose` says,
 * then the process ends at once (mu held; nothing in flight). */
static void cut(void)
{
    uint64_t rng = (model.seed ? model.seed : 0x9e3779b97f4a7c15ull) | 1;
    unsigned style = (unsigned)(rng_next(&rng) % 4);
    for (unsigned i = 0; i < ndevs; i++) {
        pw_dev *d = &devs[i];
        for (size_t k = 0; k < d->cap; k++) {
            const pw_unit *u = &d->units[k];
            if (!u->unit || !u->nver)
                continue;
            const uint8_t *keep = choose(u, style, &rng);
            if (pwrite(d->fd, keep, UNIT, (off_t)((u->unit - 1) * UNIT)) != (ssize_t)UNIT)
                _exit(model.exit_code + 1); /* the test sees it: the cut could not be made */
        }
        (void)fdatasync(d->fd);
    }
    _exit(model.exit_code);
}

/* The cut is due (mu held): it comes now when nothing is in flight, else
 * at the completion of the last write in flight. */
static void cut_due(void)
{
    dying = true;
    if (inflight == 0)
        cut();
}

bool l3_io_power_write_start(int fd, uint64_t off, uint64_t len)
{
    pthread_mutex_lock(&mu);
    writes++;
    if (!dying && model.cut_at && writes >= model.cut_at)
        cut_due();
    pw_dev *d = dying ? NULL : dev_of(fd);
    bool held = d != NULL;
    for (uint64_t n = off / UNIT; held && n * UNIT < off + len; n++) {
        pw_unit *u = unit_get(d, n);
        if (u)
            u->inflight++;
        else
            cut_due(); /* out of memory: the cut comes now rather than a model that lies */
        held = u != NULL;
    }
    inflight += held;
    pthread_mutex_unlock(&mu);
    return held;
}

/* Add the version unit u has after `len` bytes of `buf` landed at byte
 * `at` of it: its last version (or durable bytes), overwritten there. */
static bool add_version(pw_unit *u, const uint8_t *buf, size_t at, size_t len)
{
    if (u->nver == u->cap) {
        uint32_t cap = u->cap ? 2 * u->cap : 2;
        uint8_t **v = realloc(u->ver, cap * sizeof *v);
        if (!v)
            return false;
        u->ver = v;
        u->cap = cap;
    }
    uint8_t *copy = l3_aligned_alloc(UNIT, UNIT, false);
    if (!copy)
        return false;
    memcpy(copy, u->nver ? u->ver[u->nver - 1] : u->pre, UNIT);
    memcpy(copy + at, buf, len);
    u->ver[u->nver++] = copy;
    held_bytes += UNIT;
    return true;
}

void l3_io_power_write_done(int fd, const void *buf, uint64_t off, uint64_t len, bool ok)
{
    pthread_mutex_lock(&mu);
    pw_dev *d = dev_of(fd);
    bool fits = d != NULL;
    for (uint64_t n = off / UNIT; d && n * UNIT < off + len; n++) {
        pw_unit *u = &d->units[slot_of(d, n)];
        if (!u->unit)
            continue;
        uint64_t from = n * UNIT > off ? n * UNIT : off, to = (n + 1) * UNIT < off + len ? (n + 1) * UNIT : off + len;
        if (ok)
            fits = add_version(u, (const uint8_t *)buf + (from - off), (size_t)(from - n * UNIT),
                               (size_t)(to - from)) && fits;
        u->inflight--;
    }
    inflight--;
    if (!fits || held_bytes > model.max_bytes)
        dying = true; /* past the bound: the cut comes now */
    if (dying && inflight == 0)
        cut();
    pthread_mutex_unlock(&mu);
}

/* After a flush of device d: what completed is durable. A unit with a
 * write still in flight stays, its newest version its durable bytes; the
 * rest go (the table is rebuilt: a slot emptied in place would break its
 * probe run). False out of memory. */
static bool flushed(pw_dev *d)
{
    pw_unit *units = calloc(d->cap ? d->cap : 1, sizeof *units), *old = d->units;
    if (!units)
        return false;
    d->units = units;
    d->n = 0;
    for (size_t i = 0; i < d->cap; i++) {
        pw_unit *u = &old[i];
        if (!u->unit)
            continue;
        if (!u->inflight) {
            unit_free(u);
            continue;
        }
        if (u->nver) {
            free(u->pre);
            u->pre = u->ver[--u->nver];
            for (uint32_t k = 0; k < u->nver; k++)
                free(u->ver[k]);
            held_bytes -= (uint64_t)(u->nver + 1) * UNIT;
            u->nver = 0;
        }
        d->units[slot_of(d, u->unit - 1)] = *u;
        d->n++;
    }
    free(old);
    return true;
}

int l3_io_sync(int fd)
{
    if (!l3_io_power_on())
        return fdatasync(fd);
    pthread_mutex_lock(&mu);
    while (dying) {
        /* A flush after the cut never returns: the cut comes as soon as
         * the writes in flight complete (in their reaping thread). */
        if (inflight == 0)
            cut();
        pthread_mutex_unlock(&mu);
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
        pthread_mutex_lock(&mu);
    }
    int rc = fdatasync(fd);
    int saved = errno;
    pw_dev *d = rc == 0 ? dev_of(fd) : NULL;
    if (d && !flushed(d))
        cut_due(); /* out of memory: the cut comes now rather than a model that lies */
    pthread_mutex_unlock(&mu);
    errno = saved;
    return rc;
}
