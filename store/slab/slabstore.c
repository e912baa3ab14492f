/* The slab store's lifecycle: options, open (create, format or attach),
 * close, stats. The batch paths are in batch.c, get.c, put.c and
 * remove.c; the rooms below them are listed in slab.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "alloc.h"
#include "background.h"
#include "devices.h"
#include "batch.h"
#include "l3_clock.h"
#include "l3_pool.h"
#include "meta.h"
#include "recovery.h"
#include "reinsert.h"
#include "rules.h"
#include "slabstore.h"

#define MIB (1ull << 20)

unsigned l3_slab_queue_depth(unsigned batch_keys)
{
    unsigned d = 1;
    while (d < 3 * batch_keys && d < 4096)
        d <<= 1;
    return d;
}

bool l3_slab_mode_valid(uint32_t mode) { return !(mode & ~0660u) && (mode & 0600u) == 0600u; }

void l3_slab_options_default(l3_slab_options *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->slab_size = 0; /* by the capacity: l3_default_slab_size */
    o->block_size = 4096;
    o->engine = L3_ENGINE_AUTO;
    o->io_timeout = 30.0;
    o->io_contexts = 4;
    o->batch_keys = 256;
    o->create = true;
    o->lock_timeout = 5.0;
    o->mode = L3_DEFAULT_MODE;
    o->admission = L3_ADMISSION_ADAPTIVE;
    o->flush = L3_FLUSH_INTERVAL;
    o->flush_interval = 1.0;
}

static l3_status check_options(l3_slab_options *o, l3_error *err)
{
    if (o->num_paths > L3_MAX_DEVICES || (o->num_paths && !o->paths))
        return l3_fail(err, L3_ECONFIG, "a store spans 1 to %u devices", L3_MAX_DEVICES);
    for (unsigned i = 0; i < o->num_paths; i++) {
        if (!o->paths[i] || !o->paths[i][0])
            return l3_fail(err, L3_ECONFIG, "store path %u is empty", i);
        for (unsigned j = 0; j < i; j++)
            if (strcmp(o->paths[i], o->paths[j]) == 0)
                return l3_fail(err, L3_ECONFIG, "%s is listed twice among the store's paths", o->paths[i]);
    }
    if (o->num_paths)
        o->path = o->paths[0];
    if (!o->path || !o->path[0])
        return l3_fail(err, L3_ECONFIG, "the store needs a path");
    if (!o->mode)
        o->mode = L3_DEFAULT_MODE;
    if (!l3_slab_mode_valid(o->mode))
        return l3_fail(err, L3_ECONFIG, "mode %04o: the owner reads and writes (0600), a group may too "
                       "(0640, 0660), nobody else", o->mode);
    if (!o->block_size)
        o->block_size = 4096;
    if (!(o->io_timeout > 0))
        o->io_timeout = o->io_timeout == 0 ? 30.0 : -1;
    if (o->io_timeout < 0 || o->io_timeout > 86400)
        return l3_fail(err, L3_ECONFIG, "io_timeout must be more than 0 and at most 86400 seconds");
    if (!o->io_contexts)
        o->io_contexts = 4;
    if (o->io_contexts > 256)
        return l3_fail(err, L3_ECONFIG, "io_contexts must be 1 to 256");
    if (!o->batch_keys)
        o->batch_keys = 256;
    if (o->batch_keys > L3_MAX_BATCH_KEYS)
        return l3_fail(err, L3_ECONFIG, "batch_keys must be 1 to %u", L3_MAX_BATCH_KEYS);
    if (!o->queue_depth)
        o->queue_depth = l3_slab_queue_depth(o->batch_keys);
    if (o->queue_depth > 32768)
        return l3_fail(err, L3_ECONFIG, "queue_depth must be 1 to 32768");
    if ((unsigned)o->admission > L3_ADMISSION_ADAPTIVE || o->admission_rung >= L3_LADDER_LEN)
        return l3_fail(err, L3_ECONFIG, "admission: \"all\", \"adaptive\" or a rung of 0 to %u",
                       L3_LADDER_LEN - 1);
    if (o->flush_interval == 0)
        o->flush_interval = 1.0;
    if ((unsigned)o->flush > L3_FLUSH_BATCH || !(o->flush_interval >= 0.001) || o->flush_interval > 3600)
        return l3_fail(err, L3_ECONFIG, "flush: \"interval\" (flush_interval 0.001 to 3600 seconds) or \"batch\"");
    if (!(o->write_budget_dwpd >= 0) || o->write_budget_dwpd > 1e6)
        return l3_fail(err, L3_ECONFIG, "write_budget: drive writes per day must be 0 to 1000000");
    char why[256];
    l3_geometry g;
    uint64_t probe = o->capacity ? o->capacity : 1ull << 40;
    if (!l3_geometry_plan(probe, o->slab_size, o->block_size, o->max_objects, o->expected_object_size, &g, why,
                          sizeof why))
        return l3_fail(err, L3_ECONFIG, "%s", why);
    return L3_OK;
}

static bool slab_failures_retire(l3_store *st)
{
    /* Errors are returned only after every submitted I/O was reaped; an
     * unreaped batch is reported as retired=false, never as an error. */
    (void)st;
    return true;
}

static void slab_close_op(l3_store *st)
{
    l3_error err;
    if (l3_slabstore_close((l3_slabstore *)st, &err) != L3_OK)
        l3_log("error", "closing the slab store: %s", err.msg);
}

static void slab_destroy_op(l3_store *st) { l3_slabstore_free((l3_slabstore *)st); }


/* A Host region of 4 KiB pages needs a DMA segment per page: objects over
 * max_segments pages are split into several device requests, and
 * neighbouring objects cannot merge. Say so once. */
static void warn_small_pages(l3_slabstore *s, l3_host_buffer host)
{
    if (host.len >= (2u << 20) && s->max_segments && !atomic_load(&s->warned_small_pages) &&
        l3_pool_is_huge(host.base, host.len) == 0 && !atomic_exchange(&s->warned_small_pages, true))
        l3_log("warning", "a Host region (%zu bytes at %p) is on 4 KiB pages and %s's device takes %u "
                          "of them per request: objects over %u KiB are split into several requests "
                          "and neighbours do not merge. Allocate the pool with l3_pool_alloc (or 2 MiB "
                          "aligned with madvise(MADV_HUGEPAGE)) to move them whole",
               host.len, (void *)host.base, s->path, s->max_segments, s->max_segments * 4);
}

static l3_status slab_register_hosts(l3_store *st, const l3_host_buffer *regions, size_t n, l3_error *err)
{
    _Static_assert(L3_MAX_HOST_REGIONS == L3_IO_MAX_REGIONS, "the store registers what the engine holds");
    l3_slabstore *s = (l3_slabstore *)st;
    if (s->closed || !s->engine)
        return l3_fail(err, L3_ECLOSED, "the store is closed");
    l3_io_region io[L3_IO_MAX_REGIONS];
    for (size_t i = 0; i < n; i++) {
        io[i] = (l3_io_region){ regions[i].base, regions[i].len };
        warn_small_pages(s, regions[i]);
    }
    l3_io_engine_set_hosts(s->engine, io, n);
    atomic_store(&s->host_regions, (unsigned)n);
    return L3_OK;
}

/* Take a put job as far as it goes (l3_put_job_step), making room for
 * each wave as it asks (reinsert.c: the victims' kept objects moved, then
 * freed); whether it is done. */
static bool put_drive(l3_store_put_job *j, bool block, double *wake_by)
{
    uint64_t room;
    bool done;
    while (!(done = l3_put_job_step(j, block, wake_by, &room)) && room)
        l3_reinsert_make_room(l3_put_job_store(j), room); /* keeps what the policy keeps */
    return done;
}

static bool slab_put_poll(l3_store_put_job *j, double *wake_by) { return put_drive(j, false, wake_by); }

/* End a put job, running what is left of it first. */
static l3_status slab_put_end(l3_store_put_job *j, l3_error *err)
{
    double wake_by;
    (void)put_drive(j, true, &wake_by);
    return l3_put_job_end(j, err);
}

/* A put: checked, then run wave after wave, each after the policy made
 * room for it. */
static l3_status slab_put_hinted(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                                 const l3_range *ranges, size_t k, const l3_put_hints *hints, l3_io_result *res,
                                 l3_error *err)
{
    l3_store_put_job *j = l3_put_job_new((l3_slabstore *)st, keys, n, host, ranges, k, NULL, hints, res, -1);
    return j ? slab_put_end(j, err) : l3_fail(err, L3_ENOMEM, "allocating a put batch");
}

/* A put in three calls (l3_store_ops.put_begin). */
static l3_status slab_put_begin(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                                const l3_range *ranges, l3_io_result *res, int notify_fd, l3_store_put_job **job,
                                l3_error *err)
{
    *job = l3_put_job_new((l3_slabstore *)st, keys, n, host, ranges, 1, NULL, NULL, res, notify_fd);
    return *job ? L3_OK : l3_fail(err, L3_ENOMEM, "allocating a put batch");
}

static l3_status slab_put_v(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                            const l3_range *ranges, size_t k, l3_io_result *res, l3_error *err)
{
    return slab_put_hinted(st, keys, n, host, ranges, k, NULL, res, err);
}

static l3_status slab_put(l3_store *st, const char *const *keys, size_t n, l3_host_buffer host,
                          const l3_range *ranges, l3_io_result *res, l3_error *err)
{
    return slab_put_v(st, keys, n, host, ranges, 1, res, err);
}

static const l3_store_ops slab_ops = {
    .batch_exists = l3_slab_exists,
    .batch_get_into = l3_slab_get,
    .batch_put_from = slab_put,
    .remove_by_prefix = l3_slab_remove,
    .close = slab_close_op,
    .failures_retire = slab_failures_retire,
    .destroy = slab_destroy_op,
    .register_hosts = slab_register_hosts,
    .batch_delete = l3_slab_delete,
    .batch_get_into_v = l3_slab_get_v,
    .get_begin = l3_slab_get_begin,
    .get_poll = l3_slab_get_poll,
    .get_end = l3_slab_get_end,
    .forget_notify = l3_slab_forget_notify,
    .driver_start = l3_slab_driver_start,
    .driver_wait = l3_slab_driver_wait,
    .put_begin = slab_put_begin,
    .put_poll = slab_put_poll,
    .put_end = slab_put_end,
    .batch_put_from_v = slab_put_v,
    .batch_lease = l3_slab_lease,
    .batch_put_hinted = slab_put_hinted,
};

l3_store *l3_slabstore_store(l3_slabstore *s) { return &s->base; }

/* ---- open ---- */






/* Whether every device may be formatted (L3_OK): present, and blank
 * unless asked to format anyway. */
static l3_status may_format(l3_slabstore *s, const char *why, l3_error *err)
{
    const l3_slab_options *opt = &s->opt;
    for (uint32_t d = 0; d < s->ndev; d++) {
        const l3_device *dv = &s->dev[d];
        if (dv->fd < 0)
            return l3_fail(err, L3_ENOTFOUND, "store %s: device %u (%s) is missing: a store is formatted with all "
                                              "its devices", s->path, d, dv->path);
        bool blank = dv->size == 0 || l3_meta_blank_head(dv->fd, dv->path, dv->size);
        if (!opt->format && !(opt->create && blank))
            return l3_fail(err, L3_ECORRUPT, "%s holds no valid l3cache superblock (%s); refusing to "
                                             "overwrite it (format it explicitly, or repair it with l3fsck)",
                           dv->path, dv->size ? why : "empty");
        if (opt->read_only || dv->shared_dev)
            return l3_fail(err, opt->read_only ? L3_ECLOSED : L3_EBUSY, "%s: %s", dv->path,
                           opt->read_only ? "a read-only open cannot format" : "the device is in use: cannot format it");
    }
    return L3_OK;
}

/* Format blank (or, asked to, any) devices. */
static l3_status format_image(l3_slabstore *s, const char *why, l3_error *err)
{
    const l3_slab_options *opt = &s->opt;
    l3_status st = may_format(s, why, err);
    if (st != L3_OK)
        return st;
    uint64_t size = l3_devices_smallest(s);
    uint64_t capacity = opt->capacity ? opt->capacity : size;
    for (uint32_t d = 0; d < s->ndev; d++)
        if (s->dev[d].blockdev && capacity > s->dev[d].size)
            return l3_fail(err, L3_ECONFIG, "%s: capacity %llu exceeds the device's %llu bytes", s->dev[d].path,
                           (unsigned long long)capacity, (unsigned long long)s->dev[d].size);
    if (!capacity)
        return l3_fail(err, L3_ECONFIG, "%s: a new store file needs a capacity", s->path);
    /* Formatting needs the store to itself. */
    uint32_t locked = 0;
    for (; locked < s->ndev && st == L3_OK; locked++)
        if (l3_devices_lock_file(s->dev[locked].fd, LOCK_EX, 0) != 0)
            st = l3_fail(err, L3_EBUSY, "%s is open in another process: cannot format it", s->dev[locked].path);
    if (st == L3_OK)
        st = l3_meta_format(s, capacity, err);
    for (uint32_t d = 0; d < locked; d++)
        l3_devices_lock_file(s->dev[d].fd, LOCK_SH, 0);
    s->formatted = st == L3_OK;
    return st;
}

/* Whether device d's superblock `sb` belongs where it is listed, beside
 * the reference `ref` (L3_OK). */
static l3_status device_fits(l3_slabstore *s, uint32_t d, const l3_superblock *sb, const l3_superblock *ref, l3_error *err)
{
    const char *path = s->dev[d].path;
    uint32_t n = sb->num_devices ? sb->num_devices : 1;
    if (memcmp(sb->uuid, ref->uuid, 16) != 0)
        return l3_fail(err, L3_ECORRUPT, "%s belongs to another store (its uuid differs from %s's): refusing to "
                                         "open it as device %u", path, s->dev[s->ref_dev].path, d);
    if (n != s->ndev)
        return l3_fail(err, L3_ECONFIG, "%s is one of a store of %u device(s), but %u path(s) are given", path, n,
                       s->ndev);
    if (sb->device != d)
        return l3_fail(err, L3_ECONFIG, "%s is device %u of its store but is listed at place %u: list the "
                                        "paths in the store's order", path, sb->device, d);
    return L3_OK;
}

/* Read every present device's superblocks; choose the newest as the
 * store's, check that every device fits beside it, and mark the ones
 * that missed it. Returns how many devices had a valid superblock. */
static l3_status read_superblocks(l3_slabstore *s, l3_sb_copies *sbs, uint32_t *valid, l3_error *err)
{
    *valid = 0;
    for (uint32_t d = 0; d < s->ndev; d++) {
        l3_device *dv = &s->dev[d];
        if (dv->fd < 0 || !dv->size || l3_sb_read_copies(dv->fd, dv->size, &sbs[d]) == 0) {
            sbs[d].best = -1;
            continue;
        }
        const l3_superblock *sb = &sbs[d].copy[sbs[d].best];
        dv->sb_sequence = sb->sequence;
        if (*valid == 0 || sb->sequence > s->dev[s->ref_dev].sb_sequence)
            s->ref_dev = d;
        (*valid)++;
    }
    if (*valid == 0 || s->opt.format)
        return L3_OK;
    const l3_superblock *ref = &sbs[s->ref_dev].copy[sbs[s->ref_dev].best];
    for (uint32_t d = 0; d < s->ndev; d++) {
        if (sbs[d].best < 0 && s->dev[d].fd >= 0 && s->ndev > 1) {
            l3_log("error", "store %s: device %u (%s) holds no superblock of this store: treated as missing",
                   s->path, d, s->dev[d].path);
            flock(s->dev[d].fd, LOCK_UN);
            close(s->dev[d].fd);
            s->dev[d].fd = -1;
        }
        l3_status st = sbs[d].best >= 0 ? device_fits(s, d, &sbs[d].copy[sbs[d].best], ref, err) : L3_OK;
        if (st != L3_OK)
            return st;
        if (sbs[d].best >= 0 && s->dev[d].sb_sequence < ref->sequence)
            s->behind_mask |= 1u << d;
    }
    return L3_OK;
}


/* Read the superblocks and geometry, or format the devices. */
static l3_status read_or_format(l3_slabstore *s, l3_error *err)
{
    l3_sb_copies sbs[L3_MAX_DEVICES];
    uint32_t valid = 0;
    l3_status st = read_superblocks(s, sbs, &valid, err);
    if (st != L3_OK)
        return st;
    char why[300] = "";
    if (valid && !s->opt.format) {
        l3_device *ref = &s->dev[s->ref_dev];
        s->disk_sb = sbs[s->ref_dev].copy[sbs[s->ref_dev].best];
        if (!l3_geometry_from_sb(&s->disk_sb, ref->size, &s->geo, why, sizeof why))
            return l3_fail(err, L3_ECORRUPT, "%s: %s", ref->path, why);
        for (uint32_t d = 0; d < s->ndev; d++)
            if (s->dev[d].fd >= 0 && s->geo.capacity > s->dev[d].size)
                return l3_fail(err, L3_ECORRUPT, "%s is %llu bytes but its store needs %llu: the image is "
                                                 "truncated", s->dev[d].path, (unsigned long long)s->dev[d].size,
                               (unsigned long long)s->geo.capacity);
        l3_devices_say_degraded(s);
        return L3_OK;
    }
    if (s->ndev == 1 && s->dev[0].size)
        snprintf(why, sizeof why, "copy 0: %s; copy 1: %s", sbs[0].why[0], sbs[0].why[1]);
    else if (s->ndev > 1)
        snprintf(why, sizeof why, "no device has a valid superblock");
    return format_image(s, why, err);
}

/* This process's engine: contexts for its workers, bounce room for a wave. */
static l3_status open_engine(l3_slabstore *s, l3_error *err)
{
    s->wave_keys = s->opt.batch_keys;
    l3_io_options io = {
        .kind = s->opt.engine,
        .contexts = s->opt.io_contexts,
        .depth = s->opt.queue_depth,
        .bounce_bytes = s->wave_keys * (s->geo.header_bytes + s->geo.block_size),
        .alignment = s->geo.block_size,
        .register_buffers = !s->opt.no_register_buffers,
    };
    int fds[L3_MAX_DEVICES];
    for (uint32_t d = 0; d < s->ndev; d++)
        fds[d] = s->dev[d].fd;
    return l3_io_engine_open(&io, fds, s->ndev, &s->engine, err);
}


/* The views into the mapping this process holds now. */
static void set_views(l3_slabstore *s)
{
    s->sh = s->shm.sh;
    l3_shm_views v = l3_shm_views_of(s->sh);
    s->slabs = v.slabs;
    s->class_open = v.class_open;
    s->slot_ids = v.slot_ids;
    s->ghost = (l3_ghost){ .head = &s->sh->ghost, .words = v.ghost };
    s->shadows = v.shadows;
    s->feed = (l3_feed){ .head = &s->sh->feed, .slots = v.feed };
    s->groups = (l3_groups){ .meta = &s->sh->groups, .table = v.groups };
    s->table = v.table;
    s->journal = v.journal;
    s->index = (l3_index){ .table = v.index, .meta = &s->sh->index };
    s->ns = s->sh->ns;
}

/* Take a slot of the process table (reaping dead processes if none is
 * free). */
static l3_status take_slot(l3_slabstore *s, l3_error *err)
{
    l3_slab_lock(s);
    bool got = l3_shm_claim_slot(&s->shm) || (l3_alloc_reap_dead(s) && l3_shm_claim_slot(&s->shm));
    l3_slab_unlock(s);
    return got ? L3_OK : l3_fail(err, L3_EBUSY, "%s: %d processes are attached already", s->path, L3_MAX_PROCS);
}

/* Undo a failed attach. */
static void attach_failed(l3_slabstore *s, bool fresh)
{
    l3_shm_stop_alive(&s->shm);
    if (!fresh && s->shm.me >= 0) {
        l3_slab_lock(s);
        l3_shm_free_slot(&s->shm, s->shm.me);
        l3_slab_unlock(s);
    }
    l3_shm_abandon(&s->shm, fresh);
    s->sh = NULL;
}

/* Set up what a fresh mapping's rooms own: the superblock the store was
 * opened with, admission in the options' mode at its first rung. */
static void build_fresh(l3_slabstore *s)
{
    uint32_t rung = s->opt.admission == L3_ADMISSION_RUNG ? s->opt.admission_rung : L3_LADDER_LEN - 1;
    l3_meta_adopt_sb(s);
    l3_admit_format(&s->sh->admit, (uint32_t)s->opt.admission, rung);
}

/* Attach to the store's shared mapping (the open lock held): join the one
 * someone alive holds, or build a fresh one and load it (recovery.c: the
 * checkpoint, or else the crash scan). */
static l3_status attach(l3_slabstore *s, l3_error *err)
{
    uint32_t missing = 0;
    for (uint32_t d = 0; d < s->ndev; d++)
        missing |= s->dev[d].fd < 0 ? 1u << d : 0;
    l3_shm_spec spec = { .geo = &s->geo, .uuid = s->geo_uuid, .sb = &s->disk_sb, .ndev = s->ndev,
                         .missing_mask = missing };
    bool fresh = false;
    l3_status rc = l3_shm_map(&s->shm, &spec, s->formatted, &fresh, err);
    if (rc != L3_OK)
        return rc;
    set_views(s);
    if (fresh) /* (no one else attaches before l3_shm_ready) */
        build_fresh(s);
    if (!fresh && s->sh->admit.mode != (uint32_t)s->opt.admission)
        l3_log("warning", "%s: admission \"%s\" asked, but the processes attached use \"%s\": this one "
               "follows them", s->path, l3_admission_name((uint32_t)s->opt.admission),
               l3_admission_name(s->sh->admit.mode));
    for (uint32_t d = 0; !fresh && d < s->ndev; d++)
        if (s->dev[d].fd < 0 && s->sh->dev_state[d] == DEV_OK)
            rc = l3_fail(err, L3_EIO, "store %s: device %u (%s) is missing here, but the processes already "
                                      "attached have it", s->path, d, s->dev[d].path);
    if (rc == L3_OK)
        rc = take_slot(s, err);
    if (rc == L3_OK && !l3_shm_start_alive(&s->shm))
        rc = l3_fail(err, L3_ENOMEM, "starting the liveness thread");
    if (rc == L3_OK && fresh) {
        rc = l3_recovery_load(s, err);
        if (rc == L3_OK)
            l3_shm_ready(&s->shm);
    } else if (rc == L3_OK) {
        l3_slab_lock(s);
        l3_alloc_reap_dead(s);
        l3_slab_unlock(s);
    }
    if (rc != L3_OK)
        attach_failed(s, fresh);
    return rc;
}

/* Leave the mapping: give back this process's reservations and slot; the
 * last process out writes the checkpoint first (with `save`), then the
 * mapping goes. */
static l3_status detach(l3_slabstore *s, bool save, l3_error *err)
{
    if (!s->sh)
        return L3_OK;
    l3_shm_leave_lock(&s->shm);
    l3_shm_stop_alive(&s->shm);
    l3_slab_lock(s);
    l3_alloc_release_proc(s, s->shm.me);
    int others = l3_shm_others(&s->shm);
    l3_shm_free_slot(&s->shm, s->shm.me);
    l3_slab_unlock(s);
    l3_status rc = !others && save ? l3_recovery_save(s, err) : L3_OK;
    l3_shm_unmap(&s->shm, !others);
    s->sh = NULL;
    return rc;
}

/* Everything after the devices are open, under the shared object's open lock. */
static l3_status open_locked(l3_slabstore *s, l3_error *err)
{
    l3_status st;
    if ((st = l3_shm_open_locked(&s->shm, s->fd, err)) != L3_OK || (st = l3_devices_share(s, err)) != L3_OK ||
        (st = read_or_format(s, err)) != L3_OK)
        return st;
    memcpy(s->geo_uuid, s->disk_sb.uuid, 16);
    if (!s->opt.write_budget && s->opt.write_budget_dwpd > 0) {
        /* Drive writes per day of the slabs' bytes, as bytes per second. */
        double bytes = (double)s->geo.num_slabs * (double)s->geo.slab_size * s->opt.write_budget_dwpd / 86400.0;
        s->opt.write_budget = bytes < 1 ? 1 : (uint64_t)bytes;
    }
    if ((st = open_engine(s, err)) != L3_OK || (st = attach(s, err)) != L3_OK)
        return st;
    bool shared_dev = false;
    for (uint32_t d = 0; d < s->ndev; d++)
        shared_dev = shared_dev || s->dev[d].shared_dev;
    if (shared_dev && s->sh->attached <= 1) {
        /* Nobody of ours held the device: someone else has it exclusively. */
        l3_shm_open_unlock(&s->shm, false);
        detach(s, false, NULL);
        return l3_fail(err, L3_EBUSY, "opening %s: the device is mounted or opened exclusively elsewhere",
                       s->path);
    }
    return L3_OK;
}



static void free_store(l3_slabstore *s)
{
    for (uint32_t d = 0; d < s->ndev; d++)
        free(s->dev[d].path);
    free(s);
}

l3_status l3_slabstore_open(const l3_slab_options *o, l3_slabstore **out, l3_error *err)
{
    *out = NULL;
    if (!o)
        return l3_fail(err, L3_EINVAL, "no store options");
    l3_slab_options opt = *o;
    l3_status st = check_options(&opt, err);
    if (st != L3_OK)
        return st;
    double started = l3_monotonic_seconds();
    l3_slabstore *s = calloc(1, sizeof *s);
    if (!s)
        return l3_fail(err, L3_ENOMEM, "allocating the store");
    s->base.ops = &slab_ops;
    s->opt = opt;
    s->fd = -1;
    l3_shm_init(&s->shm, NULL, s->opt.mode);
    st = l3_devices_name(s, &opt, err);
    s->shm.path = s->path;
    if (st == L3_OK)
        st = l3_devices_open(s, err);
    for (uint32_t d = 0; d < s->ndev && s->fd < 0; d++)
        if (s->dev[d].fd >= 0) {
            s->fd = s->dev[d].fd; /* the first present device names the shared mapping */
            s->max_segments = l3_devices_max_segments(s->fd, s->dev[d].blockdev);
            s->max_request = l3_devices_max_request(s->fd, s->dev[d].blockdev);
        }
    if (st == L3_OK)
        st = open_locked(s, err);
    if (st == L3_OK && (st = l3_background_start(s, err)) != L3_OK)
        detach(s, false, NULL);
    if (st != L3_OK) {
        l3_shm_open_unlock(&s->shm, true);
        l3_io_engine_close(s->engine);
        l3_devices_close(s, true);
        free_store(s);
        return st;
    }
    l3_shm_open_unlock(&s->shm, false);
    s->open_seconds = l3_monotonic_seconds() - started;
    *out = s;
    return L3_OK;
}

/* ---- close, stats ---- */

l3_status l3_slabstore_close(l3_slabstore *s, l3_error *err)
{
    if (s->closed)
        return L3_OK;
    s->closed = true;
    l3_background_stop(s);
    if (atomic_load(&s->fatal) || l3_io_engine_broken(s->engine)) {
        /* Some I/O may still be in flight: keep the engine (and its
         * registration of the pool) and stay attached, so that the store
         * stays dirty and no one reuses what this process reserved. */
        s->engine_leaked = true;
        return l3_fail(err, L3_EUNRETIRED, "%s: I/O was not reaped; the store stays dirty and "
                                           "is rebuilt from its headers on the next open", s->path);
    }
    l3_io_engine_close(s->engine);
    s->engine = NULL;
    l3_status st = detach(s, true, err);
    l3_devices_close(s, false);
    return st;
}

void l3_slabstore_free(l3_slabstore *s)
{
    if (!s)
        return;
    if (!s->closed) {
        l3_error err;
        if (l3_slabstore_close(s, &err) != L3_OK)
            l3_log("error", "closing %s: %s", s->path, err.msg);
    }
    if (s->engine_leaked)
        return; /* the kernel may still write memory the engine owns */
    free_store(s);
}






l3_status l3_slabstore_register_host(l3_slabstore *s, l3_host_buffer host, l3_error *err)
{
    return l3_store_register_host(&s->base, host, err);
}

void l3_slabstore_set_fault(l3_slabstore *s, const l3_io_fault *fault)
{
    if (s->engine)
        l3_io_engine_set_fault(s->engine, fault);
}

void l3_slabstore_set_power(const l3_io_power *power) { l3_io_power_set(power); }
uint64_t l3_slabstore_power_writes(void) { return l3_io_power_writes(); }

int l3_slabstore_attached(l3_slabstore *s, int32_t *pids, int max)
{
    if (!s->sh)
        return 0; /* closed: not attached */
    l3_slab_lock(s);
    l3_alloc_reap_dead(s);
    l3_slab_unlock(s);
    return l3_shm_attached(&s->shm, pids, max);
}
