/* l3fsck's reads and writes of the image (fsck_io.h): each device by its
 * place in an I/O offset's top bits, O_DIRECT for bulk reads, a repair
 * written before it is reported; and the report's problem and repair
 * lines. */
#include "fsck_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fsck_problem(fsck *f, bool fixable, const char *fmt, ...)
{
    char buf[512];
    if (f->quiet)
        return; /* a later pass: the first reported it */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    f->found++;
    f->left += !fixable || !f->repair;
    json_array_append_new(f->errors, json_string(buf));
    if (!f->json)
        printf("error: %s%s\n", buf, fixable && !f->repair ? " (fixable with -y)" : "");
}

void fsck_fixed(fsck *f, const char *what)
{
    json_array_append_new(f->repairs, json_string(what));
    if (!f->json)
        printf("fixed: %s\n", what);
}

/* The descriptor for I/O offset *off (its device's; direct: the O_DIRECT
 * one where there is one), *off made the byte offset there; -1 when the
 * device was not given. */
static int fd_of(const fsck *f, uint64_t *off, bool direct)
{
    uint32_t d = l3_io_dev_of(*off);
    *off = l3_io_byte_of(*off);
    if (d >= f->ndev)
        return -1;
    return direct && f->dev[d].dfd >= 0 ? f->dev[d].dfd : f->dev[d].fd;
}

bool fsck_slab_present(const fsck *f, uint32_t i)
{
    return f->present >> l3_slab_device(&f->geo, i) & 1;
}

bool fsck_dev_behind(const fsck *f, uint32_t d)
{
    const l3_sb_copies *c = &f->dev[d].sbs;
    return (f->present >> d & 1) && c->best >= 0 && c->copy[c->best].sequence < f->sb.sequence;
}

bool fsck_slab_behind(const fsck *f, uint32_t i) { return fsck_dev_behind(f, l3_slab_device(&f->geo, i)); }

static int read_fd(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    if (fd < 0)
        return -EBADF;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0) {
            memset((char *)buf + done, 0, len - done); /* past the end: zeros */
            return 1;
        }
        done += (size_t)n;
    }
    return 0;
}

int fsck_read(fsck *f, void *buf, size_t len, uint64_t off)
{
    int fd = fd_of(f, &off, false);
    return read_fd(fd, buf, len, off);
}

int fsck_read_bulk(fsck *f, void *buf, size_t len, uint64_t off)
{
    int fd = fd_of(f, &off, true);
    return read_fd(fd, buf, len, off);
}

int fsck_write(fsck *f, const void *buf, size_t len, uint64_t off)
{
    int fd = fd_of(f, &off, false);
    size_t done = 0;
    if (fd < 0)
        return -EBADF;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        done += (size_t)n;
    }
    return 0;
}

void fsck_open_direct(fsck *f)
{
    for (uint32_t d = 0; d < f->ndev; d++)
        if (f->dev[d].dfd < 0 && f->dev[d].path)
            f->dev[d].dfd = open(f->dev[d].path, O_RDONLY | O_DIRECT | O_CLOEXEC);
}

bool fsck_sync(fsck *f, uint32_t d)
{
    uint64_t at = l3_io_offset(d, 0);
    int fd = fd_of(f, &at, false);
    return fd >= 0 && fsync(fd) == 0;
}

void fsck_repair(fsck *f, const void *buf, size_t len, uint64_t off, const char *what)
{
    int rc = fsck_write(f, buf, len, off);
    if (rc != 0) {
        fprintf(stderr, "l3fsck: writing at %llu: %s\n", (unsigned long long)off, strerror(-rc));
        f->left++; /* the problem it was to fix is still there */
        return;
    }
    f->mark_dirty = true;
    fsck_fixed(f, what);
}

void fsck_repair_all(fsck *f, const void *buf, size_t len, uint64_t off, const char *what)
{
    for (uint32_t d = 0; d < f->ndev; d++)
        fsck_repair(f, buf, len, l3_io_offset(d, off), what);
}

void fsck_zero_header(fsck *f, uint64_t offset, const char *what)
{
    if (!f->repair)
        return;
    uint8_t *z = calloc(1, f->geo.header_bytes);
    if (z)
        fsck_repair(f, z, f->geo.header_bytes, offset, what);
    free(z);
}
