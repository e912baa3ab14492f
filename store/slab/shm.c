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

#include "slab.h"

static void init_robust(pthread_mutex_t *mu)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
}

void l3_shm_lock(l3_slabstore *s, pthread_mutex_t *mu)
{
    int rc = pthread_mutex_lock(mu);
    if (rc == EOWNERDEAD) {
        /* Updates under these locks publish last (an index entry's hash,
         * a slab record's crc) and every read re-checks generation and
         * checksum, so what a dead holder left half-done cannot serve
         * wrong bytes; counters may be off until the next rebuild. */
        l3_log("warning", "%s: a process died holding the store's shared lock; continuing", s->path);
        pthread_mutex_consistent(mu);
        if (s->sh && mu == &s->sh->lock)
            s->sh->repair_needed = 1; /* the index may hold a half-done update: l3_slab_lock repairs it */
    }
}

void l3_shm_unlock(pthread_mutex_t *mu) { pthread_mutex_unlock(mu); }

static size_t page_round(size_t x) { return (x + 4095) & ~(size_t)4095; }

/* The areas' offsets and the mapping's size for this geometry. */
static size_t layout(const l3_geometry *g, shared *h)
{
    uint32_t max_pb = l3_max_payload_blocks(g);
    uint32_t max_slots = g->max_slots;
    size_t off = page_round(sizeof(shared));
    h->off_slabs = off;
    off += page_round((size_t)g->num_slabs * sizeof(slab_info));
    h->off_class_open = off;
    off += page_round(2 * ((size_t)max_pb + 1) * g->num_devices * sizeof(int32_t)); /* open, standby */
    h->off_slot_ids = off;
    off += page_round((size_t)g->num_slabs * max_slots * sizeof(uint32_t));
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
    return layout(g, &h);
}

static void set_views(l3_slabstore *s)
{
    uint8_t *base = (uint8_t *)s->sh;
    s->slabs = (slab_info *)(base + s->sh->off_slabs);
    s->class_open = (int32_t *)(base + s->sh->off_class_open);
    s->slot_ids = (uint32_t *)(base + s->sh->off_slot_ids);
    s->table = (l3_slab_record *)(base + s->sh->off_table);
    s->journal = (l3_journal_record *)(base + s->sh->off_journal);
    s->index = (l3_index){ .table = (l3_index_entry *)(base + s->sh->off_index), .meta = &s->sh->index };
    s->ns = s->sh->ns;
}

/* 1 alive, 0 dead or unused (then the slot's mutex is ours to reset). */
static int probe(proc_slot *p)
{
    int rc = pthread_mutex_trylock(&p->alive);
    if (rc == EBUSY)
        return 1;
    if (rc == EOWNERDEAD)
        pthread_mutex_consistent(&p->alive);
    if (rc == 0 || rc == EOWNERDEAD)
        pthread_mutex_unlock(&p->alive);
    return 0;
}

/* Give back what a dead process held: its reserved slots (under lock). */
static void release_proc(l3_slabstore *s, int p)
{
    shared *h = s->sh;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        slab_info *sl = &s->slabs[i];
        uint32_t n = sl->proc_inflight[p];
        sl->inflight = sl->inflight >= n ? sl->inflight - n : 0;
        sl->proc_inflight[p] = 0;
    }
    h->reserved = h->reserved >= h->procs[p].reserved ? h->reserved - h->procs[p].reserved : 0;
    h->procs[p].reserved = 0;
    h->procs[p].used = 0;
    if (h->attached)
        h->attached--;
}

int l3_shm_reap_dead(l3_slabstore *s)
{
    int reaped = 0;
    for (int p = 0; p < L3_MAX_PROCS; p++) {
        if (p == s->me || !s->sh->procs[p].used || probe(&s->sh->procs[p]))
            continue;
        l3_log("warning", "%s: process %d died attached to the store; its %llu reserved slots are "
                          "reclaimed", s->path, s->sh->procs[p].pid,
               (unsigned long long)s->sh->procs[p].reserved);
        release_proc(s, p);
        reaped++;
    }
    return reaped;
}

int l3_shm_attached(l3_slabstore *s, int32_t *pids, int max)
{
    int n = 0;
    l3_slab_lock(s);
    for (int p = 0; p < L3_MAX_PROCS; p++)
        if (s->sh->procs[p].used && (p == s->me || probe(&s->sh->procs[p]))) {
            if (n < max)
                pids[n] = s->sh->procs[p].pid;
            n++;
        }
    l3_slab_unlock(s);
    return n;
}

/* The liveness thread: holds this process's `alive` mutex until detach. */
static void *alive_main(void *arg)
{
    l3_slabstore *s = arg;
    pthread_mutex_lock(&s->sh->procs[s->me].alive);
    pthread_mutex_lock(&s->alive_mu);
    s->alive_started = true;
    pthread_cond_broadcast(&s->alive_cv);
    while (!s->alive_stop)
        pthread_cond_wait(&s->alive_cv, &s->alive_mu);
    pthread_mutex_unlock(&s->alive_mu);
    pthread_mutex_unlock(&s->sh->procs[s->me].alive);
    return NULL;
}

static bool start_alive(l3_slabstore *s)
{
    pthread_mutex_init(&s->alive_mu, NULL);
    pthread_cond_init(&s->alive_cv, NULL);
    if (pthread_create(&s->alive_thread, NULL, alive_main, s) != 0)
        return false;
    pthread_mutex_lock(&s->alive_mu);
    while (!s->alive_started)
        pthread_cond_wait(&s->alive_cv, &s->alive_mu);
    pthread_mutex_unlock(&s->alive_mu);
    return true;
}

static void stop_alive(l3_slabstore *s)
{
    pthread_mutex_lock(&s->alive_mu);
    s->alive_stop = true;
    pthread_cond_broadcast(&s->alive_cv);
    pthread_mutex_unlock(&s->alive_mu);
    pthread_join(s->alive_thread, NULL);
    pthread_mutex_destroy(&s->alive_mu);
    pthread_cond_destroy(&s->alive_cv);
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
static l3_status untrusted(const l3_slabstore *s, const struct stat *st, l3_error *err)
{
    return l3_fail(err, L3_EPERM, "the shared object /dev/shm%s is owned by uid %u (gid %u) with mode %04o; "
                   "%s expects one of its own (uid %u%s, at most mode %04o). Refusing to attach: it may be "
                   "another user's attempt to read or steer this cache. If no l3cache process uses %s, "
                   "remove it: rm /dev/shm%s", s->shm_name, (unsigned)st->st_uid, (unsigned)st->st_gid,
                   (unsigned)(st->st_mode & 07777u), s->path, (unsigned)geteuid(),
                   s->opt.mode & 0060u ? ", or the store file's owner and group" : "", s->opt.mode,
                   s->path, s->shm_name);
}

/* Open the store's shared object: an existing one (checked by the caller),
 * or a new one, created exclusively with exactly the store's mode. */
static int open_object(l3_slabstore *s)
{
    for (int tries = 0; tries < 100; tries++) {
        int fd = shm_open(s->shm_name, O_RDWR | O_CLOEXEC, 0);
        if (fd >= 0 || errno != ENOENT)
            return fd;
        fd = shm_open(s->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, s->opt.mode);
        if (fd >= 0 && fchmod(fd, s->opt.mode) == 0)
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
static l3_status open_trusted(l3_slabstore *s, const struct stat *file, l3_error *err)
{
    char path[160];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm%s", s->shm_name);
    s->shm_fd = open_object(s);
    if (s->shm_fd < 0) {
        int e = errno;
        if (e == EACCES && stat(path, &st) == 0)
            return untrusted(s, &st, err);
        return l3_fail(err, L3_EIO, "shm_open %s: %s", s->shm_name, strerror(e));
    }
    if (fstat(s->shm_fd, &st) != 0 || !l3_shm_trusted(&st, file, s->opt.mode)) {
        l3_status rc = untrusted(s, &st, err);
        close(s->shm_fd);
        s->shm_fd = -1;
        return rc;
    }
    return L3_OK;
}

l3_status l3_shm_open_locked(l3_slabstore *s, l3_error *err)
{
    struct stat st;
    if (fstat(s->fd, &st) != 0)
        return l3_fail(err, L3_EIO, "%s: %s", s->path, strerror(errno));
    l3_shm_name_of(&st, s->shm_name, sizeof s->shm_name);
    reclaim_stale(s->shm_name);
    for (int tries = 0;; tries++) {
        l3_status rc = open_trusted(s, &st, err);
        if (rc != L3_OK)
            return rc;
        /* Opening, attaching and detaching take turns. */
        while (flock(s->shm_fd, LOCK_EX) != 0 && errno == EINTR)
            ;
        /* Unlinked while we waited (a last detach, a reclaim): start over. */
        if (still_named(s->shm_fd, s->shm_name) || tries == 100)
            return L3_OK;
        close(s->shm_fd);
    }
}

void l3_shm_open_unlock(l3_slabstore *s, bool failed)
{
    if (s->shm_fd < 0)
        return;
    if (failed && !s->sh) {
        struct stat st;
        if (fstat(s->shm_fd, &st) == 0 && st.st_size == 0)
            shm_unlink(s->shm_name); /* never initialised: leave no name behind */
    }
    flock(s->shm_fd, LOCK_UN);
    if (failed && !s->sh) {
        close(s->shm_fd);
        s->shm_fd = -1;
    }
}

/* An existing object of another size: rebuilt only when it is not an
 * l3cache mapping anyone alive might use (another build's layout, or this
 * one's with a process attached, is refused). */
static l3_status other_layout(l3_slabstore *s, size_t size, size_t need, l3_error *err)
{
    if (size < sizeof(uint64_t) + sizeof(uint32_t))
        return L3_OK;
    shared *h = mmap(NULL, size < sizeof(shared) ? size : sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED,
                     s->shm_fd, 0);
    if (h == MAP_FAILED)
        return l3_fail(err, L3_EIO, "mapping %s: %s", s->shm_name, strerror(errno));
    bool ours = h->magic == L3_SHM_MAGIC, same = ours && h->version == L3_SHM_VERSION && size >= sizeof(shared);
    int alive = 0;
    for (int p = 0; same && p < L3_MAX_PROCS; p++)
        alive += h->procs[p].used && probe(&h->procs[p]);
    uint32_t version = ours ? h->version : 0;
    munmap(h, size < sizeof(shared) ? size : sizeof(shared));
    if (!ours || (same && !alive))
        return L3_OK; /* nobody's, or nobody alive: rebuilt */
    return l3_fail(err, L3_EBUSY, "the shared object /dev/shm%s is %zu bytes of layout version %u, not the %zu "
                   "bytes of version %u this store needs%s; if no l3cache process uses %s, remove it: "
                   "rm /dev/shm%s", s->shm_name, size, version, need, L3_SHM_VERSION,
                   same ? " and a live process is attached to it" : " (another l3cache build?)", s->path,
                   s->shm_name);
}

/* Map an existing mapping of `need` bytes if it is this store's, loaded,
 * and someone alive is attached to it: *joined then says so. */
static l3_status join_existing(l3_slabstore *s, size_t need, bool formatted, bool *joined, l3_error *err)
{
    struct stat mst;
    *joined = false;
    if (fstat(s->shm_fd, &mst) != 0 || mst.st_size == 0)
        return L3_OK;
    if ((size_t)mst.st_size != need)
        return other_layout(s, (size_t)mst.st_size, need, err);
    void *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd, 0);
    if (m == MAP_FAILED)
        return L3_OK;
    shared *h = m;
    int alive = 0;
    if (h->magic == L3_SHM_MAGIC && h->version == L3_SHM_VERSION && h->ready &&
        memcmp(h->uuid, s->geo_uuid, 16) == 0)
        for (int p = 0; p < L3_MAX_PROCS; p++)
            alive += h->procs[p].used && probe(&h->procs[p]);
    if (!alive) {
        munmap(m, need);
        return L3_OK;
    }
    if (formatted) {
        munmap(m, need);
        return l3_fail(err, L3_EBUSY, "%s is open in another process: cannot format it", s->path);
    }
    s->sh = h;
    s->sh_size = need;
    *joined = true;
    return L3_OK;
}

/* Nobody alive is attached: (re)build an empty mapping laid out as `hdr`. */
static l3_status build_fresh(l3_slabstore *s, const shared *hdr, size_t need, l3_error *err)
{
    if (ftruncate(s->shm_fd, 0) != 0 || ftruncate(s->shm_fd, (off_t)need) != 0)
        return l3_fail(err, L3_ENOMEM, "sizing the %zu-byte shared mapping %s: %s", need, s->shm_name,
                       strerror(errno));
    void *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd, 0);
    if (m == MAP_FAILED)
        return l3_fail(err, L3_ENOMEM, "mapping %zu bytes of %s: %s", need, s->shm_name, strerror(errno));
    s->sh = m;
    s->sh_size = need;
    shared *h = s->sh;
    *h = *hdr;
    h->magic = L3_SHM_MAGIC;
    h->version = L3_SHM_VERSION;
    h->size = need;
    memcpy(h->uuid, s->geo_uuid, 16);
    h->sb = s->disk_sb;
    init_robust(&h->lock);
    init_robust(&h->table_mu);
    init_robust(&h->summary_mu);
    init_robust(&h->journal_mu);
    init_robust(&h->sb_mu);
    for (int p = 0; p < L3_MAX_PROCS; p++)
        init_robust(&h->procs[p].alive);
    l3_index_format(&h->index, s->geo.max_objects);
    set_views(s);
    for (uint32_t c = 0; c < 2 * (h->max_payload_blocks + 1) * h->num_devices; c++)
        s->class_open[c] = -1; /* (open and standby) */
    for (uint32_t d = 0; d < s->ndev; d++)
        h->dev_state[d] = s->dev[d].fd < 0 ? DEV_MISSING : DEV_OK;
    atomic_store(&h->seq, s->disk_sb.next_seq ? s->disk_sb.next_seq : 1);
    return L3_OK;
}

/* Take a free process slot (reaping dead processes if none is free). */
static l3_status take_proc_slot(l3_slabstore *s, l3_error *err)
{
    l3_slab_lock(s);
    s->me = -1;
    for (int pass = 0; pass < 2 && s->me < 0; pass++) {
        if (pass == 1)
            l3_shm_reap_dead(s);
        for (int p = 0; p < L3_MAX_PROCS && s->me < 0; p++)
            if (!s->sh->procs[p].used)
                s->me = p;
    }
    if (s->me >= 0) {
        proc_slot *me = &s->sh->procs[s->me];
        me->used = 1;
        me->pid = (int32_t)getpid();
        me->reserved = 0;
        me->attached_at = (uint64_t)time(NULL);
        s->sh->attached++;
    }
    l3_slab_unlock(s);
    if (s->me < 0)
        return l3_fail(err, L3_EBUSY, "%s: %d processes are attached already", s->path, L3_MAX_PROCS);
    return L3_OK;
}

/* Undo a failed attach. */
static void attach_failed(l3_slabstore *s, bool fresh)
{
    if (s->alive_started)
        stop_alive(s);
    if (fresh) {
        s->sh->ready = 0;
        shm_unlink(s->shm_name);
    } else if (s->me >= 0) {
        l3_slab_lock(s);
        s->sh->procs[s->me].used = 0;
        s->sh->attached--;
        l3_slab_unlock(s);
    }
    munmap(s->sh, s->sh_size);
    s->sh = NULL;
}

l3_status l3_shm_attach(l3_slabstore *s, bool formatted, l3_status (*load)(l3_slabstore *, l3_error *),
                        l3_error *err)
{
    /* The caller holds the open lock (l3_shm_open_locked). */
    shared hdr;
    memset(&hdr, 0, sizeof hdr);
    size_t need = layout(&s->geo, &hdr);
    bool joined = false;
    l3_status rc = join_existing(s, need, formatted, &joined, err);
    if (rc == L3_OK && !joined)
        rc = build_fresh(s, &hdr, need, err);
    else if (rc == L3_OK)
        set_views(s);
    for (uint32_t d = 0; rc == L3_OK && joined && d < s->ndev; d++)
        if (s->dev[d].fd < 0 && s->sh->dev_state[d] == DEV_OK)
            rc = l3_fail(err, L3_EIO, "store %s: device %u (%s) is missing here, but the processes already "
                                      "attached have it", s->path, d, s->dev[d].path);
    if (rc == L3_OK)
        rc = take_proc_slot(s, err);
    if (rc == L3_OK && !start_alive(s))
        rc = l3_fail(err, L3_ENOMEM, "starting the liveness thread");
    if (rc == L3_OK && !joined) {
        rc = load(s, err);
        if (rc == L3_OK)
            s->sh->ready = 1;
    } else if (rc == L3_OK) {
        l3_slab_lock(s);
        l3_shm_reap_dead(s);
        l3_slab_unlock(s);
    }
    if (rc != L3_OK && s->sh)
        attach_failed(s, !joined);
    return rc;
}

l3_status l3_shm_detach(l3_slabstore *s, l3_status (*last)(l3_slabstore *, l3_error *), l3_error *err)
{
    if (!s->sh)
        return L3_OK;
    while (flock(s->shm_fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    stop_alive(s);
    l3_slab_lock(s);
    release_proc(s, s->me);
    int others = 0;
    for (int p = 0; p < L3_MAX_PROCS; p++)
        if (s->sh->procs[p].used && probe(&s->sh->procs[p]))
            others++;
    l3_slab_unlock(s);
    l3_status rc = L3_OK;
    if (!others) {
        if (last)
            rc = last(s, err);
        s->sh->ready = 0;
        shm_unlink(s->shm_name);
    }
    munmap(s->sh, s->sh_size);
    s->sh = NULL;
    flock(s->shm_fd, LOCK_UN);
    close(s->shm_fd);
    s->shm_fd = -1;
    return rc;
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
