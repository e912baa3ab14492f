/* The slab store's devices (devices.h). */
#include "devices.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "l3_clock.h"

/* A number from the block queue's sysfs attribute `name` of the device
 * that holds `fd` (its disk's, for a partition); 0 when it cannot be told. */
static unsigned queue_attr(int fd, bool blockdev, const char *name)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 0;
    dev_t dev = blockdev ? st.st_rdev : st.st_dev;
    for (int up = 0; up < 2; up++) {
        char path[160];
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u/%squeue/%s", major(dev), minor(dev), up ? "../" : "",
                 name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned n = 0;
        bool ok = fscanf(f, "%u", &n) == 1;
        fclose(f);
        if (ok && n)
            return n;
    }
    return 0;
}

unsigned l3_devices_max_segments(int fd, bool blockdev) { return queue_attr(fd, blockdev, "max_segments"); }

uint64_t l3_devices_max_request(int fd, bool blockdev)
{
    return (uint64_t)queue_attr(fd, blockdev, "max_sectors_kb") * 1024;
}

int l3_devices_lock_file(int fd, int how, double timeout)
{
    double deadline = l3_monotonic_seconds() + (timeout > 0 ? timeout : 0);
    while (flock(fd, how | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK || l3_monotonic_seconds() >= deadline)
            return -1;
        usleep(10000);
    }
    return 0;
}

/* Open (or with `create`, create) device d's file or block device,
 * O_DIRECT. A block device is opened O_EXCL (no mounts meanwhile) by its
 * first opener; the others attach without it (checked against the shared
 * mapping later). */
static l3_status open_file(const l3_slab_options *opt, l3_device *dv, bool create, l3_error *err)
{
    struct stat st;
    dv->fd = -1;
    dv->existed = stat(dv->path, &st) == 0;
    if (!dv->existed && (errno != ENOENT || !create || opt->read_only))
        return l3_fail(err, errno == ENOENT ? L3_ENOTFOUND : L3_EIO, "%s: %s", dv->path, strerror(errno));
    dv->blockdev = dv->existed && S_ISBLK(st.st_mode);
    if (dv->existed && !dv->blockdev && !S_ISREG(st.st_mode))
        return l3_fail(err, L3_EINVAL, "%s is neither a regular file nor a block device", dv->path);
    int flags = (opt->read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC;
    if (!dv->existed)
        flags |= O_CREAT | O_EXCL;
    dv->fd = open(dv->path, flags | (dv->blockdev ? O_EXCL : 0), opt->mode);
    if (dv->fd >= 0 && !dv->existed && fchmod(dv->fd, opt->mode) != 0) /* exactly the mode, whatever the umask */
        l3_log("warning", "%s: setting mode %04o: %s", dv->path, opt->mode, strerror(errno));
    if (dv->fd < 0 && errno == EEXIST && !dv->existed) {
        dv->existed = true; /* another process created it meanwhile: open what it made */
        flags &= ~(O_CREAT | O_EXCL);
        dv->fd = open(dv->path, flags);
    }
    if (dv->fd < 0 && errno == EBUSY && dv->blockdev) {
        dv->fd = open(dv->path, flags);
        dv->shared_dev = dv->fd >= 0;
    }
    if (dv->fd >= 0)
        return L3_OK;
    int e = errno;
    if (e == EINVAL)
        return l3_fail(err, L3_EUNSUPPORTED, "%s: the file system does not support O_DIRECT (tmpfs?); put "
                                             "the store on a disk file system or a block device", dv->path);
    return l3_fail(err, e == EBUSY ? L3_EBUSY : L3_EIO, "opening %s: %s%s", dv->path, strerror(e),
                   e == EBUSY ? " (mounted or opened exclusively elsewhere)" : "");
}

/* Open every device. One alone must open. Of several, the missing are
 * created only when none exists (a new store); otherwise a device that
 * does not open is missing (the store opens degraded, or is refused
 * later if it must be formatted). */
l3_status l3_devices_open(l3_slabstore *s, l3_error *err)
{
    if (s->ndev == 1)
        return open_file(&s->opt, &s->dev[0], s->opt.create, err);
    bool any = false;
    for (uint32_t d = 0; d < s->ndev; d++)
        any = any || access(s->dev[d].path, F_OK) == 0;
    uint32_t opened = 0;
    for (uint32_t d = 0; d < s->ndev; d++) {
        l3_error e;
        l3_status st = open_file(&s->opt, &s->dev[d], s->opt.create && !any, &e);
        if (st == L3_OK)
            opened++;
        else if (st != L3_ENOTFOUND && st != L3_EIO)
            return l3_fail(err, st, "%s", e.msg);
        else
            l3_log("error", "store %s: device %u: %s", s->path, d, e.msg);
    }
    return opened ? L3_OK : l3_fail(err, L3_ENOTFOUND, "store %s: none of its %u devices opens", s->path, s->ndev);
}

/* The bytes of device d (read under the open lock: whoever created the
 * file may have formatted it meanwhile). */
static l3_status image_size(l3_slabstore *s, l3_device *dv, l3_error *err)
{
    if (!dv->blockdev) {
        struct stat st;
        if (fstat(dv->fd, &st) != 0)
            return l3_fail(err, L3_EIO, "%s: %s", dv->path, strerror(errno));
        dv->size = (uint64_t)st.st_size;
        return L3_OK;
    }
    int lbs = 0;
    if (ioctl(dv->fd, BLKGETSIZE64, &dv->size) != 0 || ioctl(dv->fd, BLKSSZGET, &lbs) != 0)
        return l3_fail(err, L3_EIO, "%s: reading the device's size: %s", dv->path, strerror(errno));
    if (lbs <= 0 || s->opt.block_size % (uint32_t)lbs)
        return l3_fail(err, L3_ECONFIG, "%s: block_size %u is not a multiple of the device's logical "
                                        "block %d", dv->path, s->opt.block_size, lbs);
    return L3_OK;
}

/* The smallest present device's bytes (what each device gives a new store). */
uint64_t l3_devices_smallest(const l3_slabstore *s)
{
    uint64_t m = UINT64_MAX;
    for (uint32_t d = 0; d < s->ndev; d++)
        if (s->dev[d].fd >= 0 && s->dev[d].size < m)
            m = s->dev[d].size;
    return m == UINT64_MAX ? 0 : m;
}

/* Say loudly which devices a store opens without. */
void l3_devices_say_degraded(l3_slabstore *s)
{
    for (uint32_t d = 0; d < s->ndev; d++)
        if (s->dev[d].fd < 0)
            l3_log("error", "store %s opened DEGRADED: device %u (%s) is missing; its slabs' objects are "
                            "unavailable until the store is opened with it again", s->path, d, s->dev[d].path);
}

/* Share every present device (LOCK_SH); l3fsck -y and formatting take
 * them exclusively. A killed process holds them until the kernel tore its
 * rings down, so wait a little. Sizes are read under the open lock. */
l3_status l3_devices_share(l3_slabstore *s, l3_error *err)
{
    for (uint32_t d = 0; d < s->ndev; d++) {
        l3_device *dv = &s->dev[d];
        if (dv->fd < 0)
            continue;
        l3_status st = image_size(s, dv, err);
        if (st != L3_OK)
            return st;
        if (l3_devices_lock_file(dv->fd, LOCK_SH, s->opt.lock_timeout) != 0)
            return l3_fail(err, L3_EBUSY, "%s is locked exclusively by another process (l3fsck -y?)", dv->path);
    }
    return L3_OK;
}

/* Close the devices (and remove the files this open created, on failure). */
void l3_devices_close(l3_slabstore *s, bool failed)
{
    for (uint32_t d = 0; d < s->ndev; d++) {
        l3_device *dv = &s->dev[d];
        if (dv->fd >= 0) {
            flock(dv->fd, LOCK_UN);
            close(dv->fd);
        }
        dv->fd = -1;
        if (failed && dv->path && !dv->existed && !s->opt.read_only)
            unlink(dv->path); /* leave nothing behind for a store that never opened */
    }
    s->fd = -1;
}

/* The store's devices from the options: `paths`, or `path` alone. */
l3_status l3_devices_name(l3_slabstore *s, const l3_slab_options *opt, l3_error *err)
{
    s->ndev = opt->num_paths ? opt->num_paths : 1;
    for (uint32_t d = 0; d < s->ndev; d++) {
        s->dev[d].fd = -1;
        s->dev[d].path = strdup(opt->num_paths ? opt->paths[d] : opt->path);
        if (!s->dev[d].path)
            return l3_fail(err, L3_ENOMEM, "allocating the store");
    }
    s->path = s->dev[0].path;
    s->opt.path = s->path;
    s->opt.paths = NULL;
    s->opt.num_paths = 0;
    return L3_OK;
}
