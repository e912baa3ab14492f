/* The slab store's shared mapping: every process that opens a store maps
 * one POSIX shared memory object named after the store file (device and
 * inode), holding the index and all allocator state. The first process
 * in loads it from disk; the last one out writes the checkpoint and
 * removes it. Locks are robust and process-shared: a process that dies
 * holding one does not wedge the others. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

#include "invariant.h"
#include "l3_slabstore.h"

void l3_shm_init_robust(pthread_mutex_t *mu)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
}

void l3_shm_init(l3_shm *m, const char *path, uint32_t mode)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
    m->me = -1;
    m->path = path;
    m->mode = mode;
}

/* After a lock of `mu` returned `rc`: a dead previous owner is logged and
 * the mutex made consistent. True when the owner had died. */
static bool owner_died(l3_shm *m, pthread_mutex_t *mu, int rc)
{
    if (rc != EOWNERDEAD)
        return false;
    /* Updates under these locks publish last (an index entry's hash, a
     * slab record's crc) and every read re-checks generation and
     * checksum, so what a dead holder left half-done cannot serve wrong
     * bytes; counters may be off until the next rebuild. */
    l3_log("warning", "%s: a process died holding the store's %s lock; continuing", m->path,
           m->sh && mu == &m->sh->lock ? "shared" : m->sh && mu == &m->sh->room_mu ? "room" : "other");
    pthread_mutex_consistent(mu);
    if (m->sh && mu == &m->sh->lock)
        m->sh->repair_needed = 1; /* the index may hold a half-done update: l3_slab_lock repairs it */
    return true;
}

void l3_shm_lock(l3_shm *m, pthread_mutex_t *mu) { (void)owner_died(m, mu, pthread_mutex_lock(mu)); }

int l3_shm_lock_within(l3_shm *m, pthread_mutex_t *mu, double seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* (pthread_mutex_timedlock's clock) */
    time_t whole = seconds > 0 ? (time_t)seconds : 0;
    until.tv_sec += whole;
    until.tv_nsec += seconds > 0 ? (long)((seconds - (double)whole) * 1e9) : 0;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    int rc = pthread_mutex_timedlock(mu, &until);
    if (rc != 0 && rc != EOWNERDEAD)
        return -1;
    return owner_died(m, mu, rc) ? 1 : 0;
}

void l3_shm_unlock(pthread_mutex_t *mu) { pthread_mutex_unlock(mu); }

static size_t page_round(size_t x) { return (x + 4095) & ~(size_t)4095; }

size_t l3_shm_layout(const l3_geometry *g, shared *h)
{
    uint32_t max_pb = l3_max_payload_blocks(g);
    uint32_t max_slots = g->max_slots;
    size_t off = page_round(sizeof(shared));
    h->off_slabs = off;
    off += page_round((size_t)g->num_slabs * sizeof(slab_info));
    h->off_class_open = off;
    off += page_round((size_t)2 * L3_LOGS * ((size_t)max_pb + 1) * g->num_devices * sizeof(int32_t)); /* open, standby */
    h->off_slot_ids = off;
    off += page_round((size_t)g->num_slabs * max_slots * sizeof(uint32_t));
    h->off_ghost = off;
    off += page_round(l3_ghost_bytes(g->max_objects));
    h->off_shadows = off;
    off += page_round(L3_LADDER_LEN * sizeof(l3_shadow));
    h->off_groups = off;
    off += page_round(l3_groups_slots_for(g->max_objects) * sizeof(l3_group));
    h->off_feed = off;
    off += page_round(l3_feed_bytes(l3_feed_slots_for(g->max_objects)));
    h->off_table = off;
    off += page_round(g->slab_table_len);
    h->off_journal = off;
    off += page_round(g->journal_len);
    h->off_index = off;
    off += page_round(l3_index_capacity_for(g->max_objects) * sizeof(l3_index_entry));
    h->max_payload_blocks = max_pb;
    h->max_slots = max_slots;
    h->num_devices = g->num_devices;
    return off;
}

size_t l3_shm_bytes(const l3_geometry *g)
{
    shared h;
    return l3_shm_layout(g, &h);
}

void l3_shm_format_areas(shared *h, const l3_geometry *g)
{
    l3_index_format(&h->index, g->max_objects);
    l3_shm_views v = l3_shm_views_of(h);
    memset(v.class_open, 0xff, (size_t)2 * L3_LOGS * ((size_t)h->max_payload_blocks + 1) * h->num_devices *
                                   sizeof(int32_t)); /* -1 */
    l3_ghost_format(&h->ghost, l3_ghost_words_for(g->max_objects));
    l3_groups_format(&h->groups, l3_groups_slots_for(g->max_objects));
    l3_feed_format(&h->feed, l3_feed_slots_for(g->max_objects));
}

l3_shm_views l3_shm_views_of(shared *h)
{
    uint8_t *base = (uint8_t *)h;
    return (l3_shm_views){ .slabs = (slab_info *)(base + h->off_slabs),
                           .class_open = (int32_t *)(base + h->off_class_open),
                           .slot_ids = (uint32_t *)(base + h->off_slot_ids),
                           .ghost = (_Atomic uint64_t *)(base + h->off_ghost),
                           .shadows = (l3_shadow *)(base + h->off_shadows),
                           .groups = (l3_group *)(base + h->off_groups),
                           .feed = (l3_feed_slot *)(base + h->off_feed),
                           .table = (l3_slab_record *)(base + h->off_table),
                           .journal = (l3_journal_record *)(base + h->off_journal),
                           .index = (l3_index_entry *)(base + h->off_index) };
}

/* Of process `pid` (from /proc/<pid>/stat): its state, its threads and
 * its start (clock ticks after boot). False when it cannot be read: no
 * such process (it was reaped), or no procfs. */
static bool proc_stat(int32_t pid, char *state, long *threads, unsigned long long *started)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* (after the command, which may hold spaces) */
    /* Fields 3 (state), 4-19, 20 (threads), 21, 22 (start). */
    return p && sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %ld %*s %llu",
                       state, threads, started) == 3;
}

/* Whether the process of a slot whose liveness thread is gone has ended
 * whole: every thread exited. Until then one of its threads may still
 * have writes in flight (a thread's io_uring requests are waited for as
 * it exits, libaio's as the last one does; the liveness thread dies
 * first), so its reservations are not yet ours to reuse. Reaped, its pid
 * taken by another process, or no procfs to ask (started 0): ended. */
static bool process_ended(const proc_slot *p)
{
    char state;
    long threads;
    unsigned long long started;
    if (!p->started || !proc_stat(p->pid, &state, &threads, &started) || started != p->started)
        return true;
    return (state == 'Z' || state == 'X') && threads <= 1;
}

/* 1 alive, 0 dead or unused (then the slot's mutex is ours to reset).
 * Dead: its liveness thread died holding `alive` (or let it go without
 * detaching), and the whole process has ended (process_ended). */
static int probe(proc_slot *p)
{
    int rc = pthread_mutex_trylock(&p->alive);
    if (rc == EBUSY)
        return 1;
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(&p->alive);
    if (rc == 0 || rc == EOWNERDEAD)
        pthread_mutex_unlock(&p->alive);
    return process_ended(p) ? 0 : 1;
}

uint64_t l3_shm_dead_slots(l3_shm *m)
{
    _Static_assert(L3_MAX_PROCS <= 64, "a slot a bit");
    uint64_t dead = 0;
    for (int p = 0; p < L3_MAX_PROCS; p++) {
        if (p == m->me || !m->sh->procs[p].used || probe(&m->sh->procs[p]))
            continue;
        l3_log("warning", "%s: process %d died attached to the store; its %llu reserved slots are "
                          "reclaimed", m->path, m->sh->procs[p].pid, (unsigned long long)m->sh->alloc.procs[p].reserved);
        dead |= 1ull << p;
    }
    return dead;
}

void l3_shm_free_slot(l3_shm *m, int p)
{
    L3_ASSERT(p >= 0 && p < L3_MAX_PROCS && m->sh->procs[p].used);
    L3_ASSERT(m->sh->alloc.procs[p].reserved == 0); /* the allocator gave them back first */
    m->sh->procs[p].used = 0;
    if (m->sh->attached)
        m->sh->attached--;
}

bool l3_shm_claim_slot(l3_shm *m)
{
    m->me = -1;
    for (int p = 0; p < L3_MAX_PROCS && m->me < 0; p++)
        if (!m->sh->procs[p].used)
            m->me = p;
    if (m->me < 0)
        return false;
    proc_slot *me = &m->sh->procs[m->me];
    me->used = 1;
    me->pid = (int32_t)getpid();
    me->attached_at = (uint64_t)time(NULL);
    char state;
    long threads;
    unsigned long long started;
    me->started = proc_stat(me->pid, &state, &threads, &started) ? started : 0;
    m->sh->attached++;
    return true;
}

int l3_shm_others(l3_shm *m)
{
    int others = 0;
    for (int p = 0; p < L3_MAX_PROCS; p++)
        others += p != m->me && m->sh->procs[p].used && probe(&m->sh->procs[p]);
    return others;
}

int l3_shm_attached(l3_shm *m, int32_t *pids, int max)
{
    int n = 0;
    l3_shm_lock(m, &m->sh->lock);
    for (int p = 0; p < L3_MAX_PROCS; p++)
        if (m->sh->procs[p].used && (p == m->me || probe(&m->sh->procs[p]))) {
            if (n < max)
                pids[n] = m->sh->procs[p].pid;
            n++;
        }
    l3_shm_unlock(&m->sh->lock);
    return n;
}

/* The liveness thread: holds this process's `alive` mutex until detach. */
static void *alive_main(void *arg)
{
    l3_shm *m = arg;
    pthread_mutex_lock(&m->sh->procs[m->me].alive);
    pthread_mutex_lock(&m->alive_mu);
    m->alive_started = true;
    pthread_cond_broadcast(&m->alive_cv);
    while (!m->alive_stop)
        pthread_cond_wait(&m->alive_cv, &m->alive_mu);
    pthread_mutex_unlock(&m->alive_mu);
    pthread_mutex_unlock(&m->sh->procs[m->me].alive);
    return NULL;
}

bool l3_shm_start_alive(l3_shm *m)
{
    pthread_mutex_init(&m->alive_mu, NULL);
    pthread_cond_init(&m->alive_cv, NULL);
    if (pthread_create(&m->alive_thread, NULL, alive_main, m) != 0)
        return false;
    pthread_mutex_lock(&m->alive_mu);
    while (!m->alive_started)
        pthread_cond_wait(&m->alive_cv, &m->alive_mu);
    pthread_mutex_unlock(&m->alive_mu);
    return true;
}

void l3_shm_stop_alive(l3_shm *m)
{
    if (!m->alive_started)
        return;
    pthread_mutex_lock(&m->alive_mu);
    m->alive_stop = true;
    pthread_cond_broadcast(&m->alive_cv);
    pthread_mutex_unlock(&m->alive_mu);
    pthread_join(m->alive_thread, NULL);
    pthread_mutex_destroy(&m->alive_mu);
    pthread_cond_destroy(&m->alive_cv);
    m->alive_started = false;
    m->alive_stop = false;
}

void l3_shm_name_of(const struct stat *st, char *name, size_t len)
{
    snprintf(name, len, "/l3cache-%llx-%llx",
             (unsigned long long)(S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev),
             (unsigned long long)st->st_ino);
}

/* Whether nobody alive is attached to the shared object open at `fd`
 * (whose lock the caller holds): empty, or of this version with no live
 * process. Another version's layout is not read: not stale to us. */
static bool nobody_attached(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 0007u))
        return false; /* not ours to judge (nor to map) */
    if (st.st_size == 0)
        return true;
    if ((size_t)st.st_size < sizeof(shared))
        return false;
    shared *h = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return false;
    bool stale = h->magic == L3_SHM_MAGIC && h->version == L3_SHM_VERSION;
    for (int p = 0; p < L3_MAX_PROCS && stale; p++)
        stale = !(h->procs[p].used && probe(&h->procs[p]));
    munmap(h, sizeof(shared));
    return stale;
}

/* Remove the shared objects of l3cache stores that nobody alive is attached
 * to (their last users crashed, and their files may be gone): each is
 * unlinked under its own lock, which an opener re-checks (open_locked). */
static void reclaim_stale(const char *self)
{
    DIR *d = opendir("/dev/shm");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        char name[300];
        if (strncmp(e->d_name, "l3cache-", 8) != 0 || strcmp(e->d_name, self + 1) == 0)
            continue;
        snprintf(name, sizeof name, "/%s", e->d_name);
        int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && nobody_attached(fd)) {
            l3_log("info", "removing the stale shared object %s (nobody alive is attached)", name);
            shm_unlink(name);
        }
        close(fd); /* (and its lock) */
    }
    closedir(d);
}

/* Whether `fd` is still the object named `name` (not unlinked meanwhile). */
static bool still_named(int fd, const char *name)
{
    char path[160];
    struct stat a, b;
    snprintf(path, sizeof path, "/dev/shm%s", name);
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

bool l3_shm_trusted(const struct stat *object, const struct stat *file, uint32_t mode)
{
    bool group = (mode & 0060u) != 0;
    bool owner = object->st_uid == geteuid() ||
                 (group && object->st_uid == file->st_uid && object->st_gid == file->st_gid);
    return owner && (object->st_mode & 07777u & ~mode) == 0;
}

/* Refuse an object that is not the store's own: it may be another user's
 * attempt to read or steer this cache. Names it, its owner and mode. */
static l3_status untrusted(const l3_shm *m, const struct stat *st, l3_error *err)
{
    return l3_fail(err, L3_EPERM, "the shared object /dev/shm%s is owned by uid %u (gid %u) with mode %04o; "
                   "%s expects one of its own (uid %u%s, at most mode %04o). Refusing to attach: it may be "
                   "another user's attempt to read or steer this cache. If no l3cache process uses %s, "
                   "remove it: rm /dev/shm%s", m->name, (unsigned)st->st_uid, (unsigned)st->st_gid,
                   (unsigned)(st->st_mode & 07777u), m->path, (unsigned)geteuid(),
                   m->mode & 0060u ? ", or the store file's owner and group" : "", m->mode, m->path, m->name);
}

/* Open the store's shared object: an existing one (checked by the caller),
 * or a new one, created exclusively with exactly the store's mode. */
static int open_object(const l3_shm *m)
{
    for (int tries = 0; tries < 100; tries++) {
        int fd = shm_open(m->name, O_RDWR | O_CLOEXEC, 0);
        if (fd >= 0 || errno != ENOENT)
            return fd;
        fd = shm_open(m->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, m->mode);
        if (fd >= 0 && fchmod(fd, m->mode) == 0)
            return fd;
        if (fd >= 0 || errno != EEXIST) {
            if (fd >= 0)
                close(fd);
            return -1;
        }
    }
    errno = EAGAIN;
    return -1;
}

/* Open the store's shared object and check it is the store's own. */
static l3_status open_trusted(l3_shm *m, const struct stat *file, l3_error *err)
{
    char path[160];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm%s", m->name);
    m->fd = open_object(m);
    if (m->fd < 0) {
        int e = errno;
        if (e == EACCES && stat(path, &st) == 0)
            return untrusted(m, &st, err);
        return l3_fail(err, L3_EIO, "shm_open %s: %s", m->name, strerror(e));
    }
    if (fstat(m->fd, &st) != 0 || !l3_shm_trusted(&st, file, m->mode)) {
        l3_status rc = untrusted(m, &st, err);
        close(m->fd);
        m->fd = -1;
        return rc;
    }
    return L3_OK;
}

l3_status l3_shm_open_locked(l3_shm *m, int file_fd, l3_error *err)
{
    struct stat st;
    if (fstat(file_fd, &st) != 0)
        return l3_fail(err, L3_EIO, "%s: %s", m->path, strerror(errno));
    l3_shm_name_of(&st, m->name, sizeof m->name);
    reclaim_stale(m->name);
    for (int tries = 0;; tries++) {
        l3_status rc = open_trusted(m, &st, err);
        if (rc != L3_OK)
            return rc;
        /* Opening, attaching and detaching take turns. */
        while (flock(m->fd, LOCK_EX) != 0 && errno == EINTR)
            ;
        /* Unlinked while we waited (a last detach, a reclaim): start over. */
        if (still_named(m->fd, m->name) || tries == 100)
            return L3_OK;
        close(m->fd);
    }
}

void l3_shm_open_unlock(l3_shm *m, bool failed)
{
    if (m->fd < 0)
        return;
    if (failed && !m->sh) {
        struct stat st;
        if (fstat(m->fd, &st) == 0 && st.st_size == 0)
            shm_unlink(m->name); /* never initialised: leave no name behind */
    }
    flock(m->fd, LOCK_UN);
    if (failed && !m->sh) {
        close(m->fd);
        m->fd = -1;
    }
}

/* An existing object of another size: rebuilt only when it is not an
 * l3cache mapping anyone alive might use (another build's layout, or this
 * one's with a process attached, is refused). */
static l3_status other_layout(l3_shm *m, size_t size, size_t need, l3_error *err)
{
    if (size < sizeof(uint64_t) + sizeof(uint32_t))
        return L3_OK;
    size_t head = size < sizeof(shared) ? size : sizeof(shared);
    shared *h = mmap(NULL, head, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (h == MAP_FAILED)
        return l3_fail(err, L3_EIO, "mapping %s: %s", m->name, strerror(errno));
    bool ours = h->magic == L3_SHM_MAGIC, same = ours && h->version == L3_SHM_VERSION && size >= sizeof(shared);
    int alive = 0;
    for (int p = 0; same && p < L3_MAX_PROCS; p++)
        alive += h->procs[p].used && probe(&h->procs[p]);
    uint32_t version = ours ? h->version : 0;
    munmap(h, head);
    if (!ours || (same && !alive))
        return L3_OK; /* nobody's, or nobody alive: rebuilt */
    return l3_fail(err, L3_EBUSY, "the shared object /dev/shm%s is %zu bytes of layout version %u, not the %zu "
                   "bytes of version %u this store needs%s; if no l3cache process uses %s, remove it: "
                   "rm /dev/shm%s", m->name, size, version, need, L3_SHM_VERSION,
                   same ? " and a live process is attached to it" : " (another l3cache build?)", m->path, m->name);
}

/* Map an existing mapping of `need` bytes if it is this store's (`uuid`),
 * loaded, and someone alive is attached to it: *joined then says so. */
static l3_status join_existing(l3_shm *m, size_t need, const uint8_t *uuid, bool formatted, bool *joined,
                               l3_error *err)
{
    struct stat mst;
    *joined = false;
    if (fstat(m->fd, &mst) != 0 || mst.st_size == 0)
        return L3_OK;
    if ((size_t)mst.st_size != need)
        return other_layout(m, (size_t)mst.st_size, need, err);
    shared *h = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (h == MAP_FAILED)
        return L3_OK;
    int alive = 0;
    if (h->magic == L3_SHM_MAGIC && h->version == L3_SHM_VERSION && h->ready && memcmp(h->uuid, uuid, 16) == 0)
        for (int p = 0; p < L3_MAX_PROCS; p++)
            alive += h->procs[p].used && probe(&h->procs[p]);
    if (!alive) {
        munmap(h, need);
        return L3_OK;
    }
    if (formatted) {
        munmap(h, need);
        return l3_fail(err, L3_EBUSY, "%s is open in another process: cannot format it", m->path);
    }
    m->sh = h;
    m->size = need;
    *joined = true;
    return L3_OK;
}

/* Nobody alive is attached: (re)build an empty mapping laid out as `hdr`. */
static l3_status build_fresh(l3_shm *m, const shared *hdr, size_t need, const l3_shm_spec *spec, l3_error *err)
{
    if (ftruncate(m->fd, 0) != 0 || ftruncate(m->fd, (off_t)need) != 0)
        return l3_fail(err, L3_ENOMEM, "sizing the %zu-byte shared mapping %s: %s", need, m->name, strerror(errno));
    shared *h = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
    if (h == MAP_FAILED)
        return l3_fail(err, L3_ENOMEM, "mapping %zu bytes of %s: %s", need, m->name, strerror(errno));
    m->sh = h;
    m->size = need;
    *h = *hdr;
    h->magic = L3_SHM_MAGIC;
    h->version = L3_SHM_VERSION;
    h->size = need;
    memcpy(h->uuid, spec->uuid, 16);
    l3_shm_init_robust(&h->lock);
    l3_shm_init_robust(&h->table_mu);
    l3_shm_init_robust(&h->summary_mu);
    l3_shm_init_robust(&h->room_mu);
    l3_shm_init_robust(&h->journal_mu);
    l3_shm_init_robust(&h->sb_mu);
    for (int p = 0; p < L3_MAX_PROCS; p++)
        l3_shm_init_robust(&h->procs[p].alive);
    l3_shm_format_areas(h, spec->geo);
    for (uint32_t d = 0; d < spec->ndev; d++)
        h->dev_state[d] = spec->missing_mask & (1u << d) ? DEV_MISSING : DEV_OK;
    atomic_store(&h->seq, spec->sb->next_seq ? spec->sb->next_seq : 1);
    return L3_OK;
}

l3_status l3_shm_map(l3_shm *m, const l3_shm_spec *spec, bool formatted, bool *fresh, l3_error *err)
{
    /* The caller holds the open lock (l3_shm_open_locked). */
    shared hdr;
    memset(&hdr, 0, sizeof hdr);
    size_t need = l3_shm_layout(spec->geo, &hdr);
    bool joined = false;
    l3_status rc = join_existing(m, need, spec->uuid, formatted, &joined, err);
    if (rc == L3_OK && !joined)
        rc = build_fresh(m, &hdr, need, spec, err);
    *fresh = !joined;
    return rc;
}

void l3_shm_ready(l3_shm *m) { m->sh->ready = 1; }

void l3_shm_leave_lock(l3_shm *m)
{
    while (flock(m->fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

void l3_shm_abandon(l3_shm *m, bool fresh)
{
    if (!m->sh)
        return;
    if (fresh) {
        m->sh->ready = 0;
        shm_unlink(m->name);
    }
    munmap(m->sh, m->size);
    m->sh = NULL;
}

void l3_shm_unmap(l3_shm *m, bool last)
{
    if (!m->sh)
        return;
    if (last) {
        m->sh->ready = 0;
        shm_unlink(m->name);
    }
    munmap(m->sh, m->size);
    m->sh = NULL;
    if (m->fd >= 0) {
        flock(m->fd, LOCK_UN);
        close(m->fd);
    }
    m->fd = -1;
}

int l3_slabstore_attached_at(const char *path, int32_t *pids, int max)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    char name[96];
    l3_shm_name_of(&st, name, sizeof name);
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct stat mst;
    int n = 0;
    /* Only an object of the store's owner (or ours) is mapped and read. */
    bool owned = fstat(fd, &mst) == 0 && (mst.st_uid == geteuid() || mst.st_uid == st.st_uid);
    if (!owned)
        n = -1;
    else if ((size_t)mst.st_size >= sizeof(shared)) {
        shared *h = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (h != MAP_FAILED) {
            if (h->magic == L3_SHM_MAGIC && h->version == L3_SHM_VERSION)
                for (int p = 0; p < L3_MAX_PROCS; p++)
                    if (h->procs[p].used && probe(&h->procs[p])) {
                        if (n < max)
                            pids[n] = h->procs[p].pid;
                        n++;
                    }
            munmap(h, sizeof(shared));
        }
    }
    close(fd);
    return n;
}
