/* The slab store's metadata I/O (meta.h). */
#include "meta.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

l3_status l3_meta_rw(int fd, const char *path, bool write, void *buf, size_t len, uint64_t off,
                     l3_error *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
                          : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return l3_fail(err, n == 0 && !write ? L3_ECORRUPT : L3_EIO, "%s %zu bytes at %llu of %s: %s",
                           write ? "writing" : "reading", len, (unsigned long long)off, path,
                           n < 0 ? strerror(errno) : write ? "no progress" : "the file ends first");
        done += (size_t)n;
    }
    return L3_OK;
}

void *l3_meta_alloc(size_t align, size_t len)
{
    void *p = NULL;
    if (posix_memalign(&p, align < 4096 ? 4096 : align, len ? len : align) != 0)
        return NULL;
    memset(p, 0, len ? len : align);
    return p;
}

/* Write metadata, through the engine's fault injection (tests). */
static l3_status meta_write(l3_slabstore *s, const void *buf, size_t len, uint64_t off, l3_error *err)
{
    if (s->engine && l3_io_engine_meta_fault(s->engine))
        return l3_fail(err, L3_EIO, "writing %zu bytes at %llu of %s: %s (injected)", len,
                       (unsigned long long)off, s->path, strerror(EIO));
    return l3_meta_rw(s->fd, s->path, true, (void *)buf, len, off, err);
}

/* Write and make durable: the metadata writes' common tail. */
static l3_status write_sync(l3_slabstore *s, const void *buf, size_t len, uint64_t off, l3_error *err)
{
    l3_status st = meta_write(s, buf, len, off, err);
    if (st == L3_OK && fdatasync(s->fd) != 0)
        st = l3_fail(err, L3_EIO, "fdatasync %s: %s", s->path, strerror(errno));
    return st;
}

l3_status l3_meta_write_sb(l3_slabstore *s, l3_error *err)
{
    if (s->opt.read_only)
        return l3_fail(err, L3_ECLOSED, "the store is open read-only");
    uint32_t slot = (uint32_t)l3_round_up(L3_SB_BYTES, s->geo.block_size ? s->geo.block_size : 4096);
    uint8_t *buf = l3_meta_alloc(4096, slot);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a superblock buffer");
    /* Before the mapping exists (formatting), the superblock is our own. */
    l3_superblock *cur = s->sh ? &s->sh->sb : &s->disk_sb;
    cur->sequence++;
    l3_status st = L3_OK;
    for (uint32_t c = 0; c < L3_SB_COPIES && st == L3_OK; c++) {
        l3_superblock *sb = (l3_superblock *)buf;
        *sb = *cur;
        sb->copy = c;
        l3_sb_seal(sb);
        st = write_sync(s, buf, slot, (uint64_t)c * slot, err);
    }
    free(buf);
    return st;
}

l3_status l3_meta_write_record(l3_slabstore *s, uint32_t i, l3_error *err)
{
    uint32_t b = s->geo.block_size;
    uint64_t block_off = (uint64_t)i * L3_SLAB_RECORD_BYTES / b * b;
    L3_ASSERT(i < s->geo.num_slabs);
    uint8_t *buf = l3_meta_alloc(b, b);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a slab table buffer");
    /* table_mu orders whole-block writes: a later one never carries an
     * older neighbour. */
    l3_shm_lock(s, &s->sh->table_mu);
    l3_slab_lock(s);
    memcpy(buf, (uint8_t *)s->table + block_off, b);
    l3_slab_unlock(s);
    l3_status st = meta_write(s, buf, b, s->geo.slab_table_off + block_off, err);
    l3_shm_unlock(&s->sh->table_mu);
    free(buf);
    return st;
}

l3_status l3_meta_write_journal(l3_slabstore *s, uint32_t slot, const l3_journal_record *rec,
                                l3_error *err)
{
    uint32_t b = s->geo.block_size;
    uint64_t block_off = (uint64_t)slot * L3_JOURNAL_RECORD_BYTES / b * b;
    L3_ASSERT(slot < L3_JOURNAL_RECORDS);
    uint8_t *buf = l3_meta_alloc(b, b);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a journal buffer");
    l3_journal_record saved = s->journal[slot];
    s->journal[slot] = *rec;
    memcpy(buf, (uint8_t *)s->journal + block_off, b);
    l3_status st = write_sync(s, buf, b, s->geo.journal_off + block_off, err);
    if (st != L3_OK)
        s->journal[slot] = saved;
    free(buf);
    return st;
}

/* A new superblock for geometry `g`: epoch 1, dirty, a fresh uuid. */
static void new_superblock(l3_superblock *sb, const l3_geometry *g)
{
    memset(sb, 0, sizeof *sb);
    memcpy(sb->magic, L3_SB_MAGIC, 8);
    sb->version = L3_FORMAT_VERSION;
    if (getrandom(sb->uuid, sizeof sb->uuid, 0) != (ssize_t)sizeof sb->uuid)
        for (size_t i = 0; i < sizeof sb->uuid; i++)
            sb->uuid[i] = (uint8_t)(rand() ^ (int)time(NULL));
    sb->epoch = 1;
    sb->block_size = g->block_size;
    sb->slab_size = g->slab_size;
    sb->capacity = g->capacity;
    sb->num_slabs = g->num_slabs;
    sb->max_objects = g->max_objects;
    sb->slab_table_off = g->slab_table_off;
    sb->slab_table_len = g->slab_table_len;
    sb->journal_off = g->journal_off;
    sb->journal_len = g->journal_len;
    sb->checkpoint_off = g->checkpoint_off;
    sb->checkpoint_len = g->checkpoint_len;
    sb->data_off = g->data_off;
    sb->next_seq = 1;
    sb->created_at = (uint64_t)time(NULL);
}

/* Give a regular file its bytes (fallocate, or a sparse extension where
 * the file system cannot or the options say not to). */
static l3_status allocate_file(l3_slabstore *s, uint64_t capacity, l3_error *err)
{
    int rc = s->opt.no_preallocate ? EOPNOTSUPP : posix_fallocate(s->fd, 0, (off_t)capacity);
    if (rc == EOPNOTSUPP || rc == EINVAL)
        rc = ftruncate(s->fd, (off_t)capacity) == 0 ? 0 : errno;
    if (rc != 0)
        return l3_fail(err, rc == ENOSPC ? L3_ENOSPC : L3_EIO, "allocating %llu bytes for %s: %s",
                       (unsigned long long)capacity, s->path, strerror(rc));
    return L3_OK;
}

l3_status l3_meta_format(l3_slabstore *s, uint64_t capacity, l3_error *err)
{
    char why[256];
    if (!l3_geometry_plan(capacity, s->opt.slab_size, s->opt.block_size, s->opt.max_objects,
                          s->opt.expected_object_size, &s->geo, why, sizeof why))
        return l3_fail(err, L3_ECONFIG, "%s: %s", s->path, why);
    const l3_geometry *g = &s->geo;
    l3_status st = s->is_blockdev ? L3_OK : allocate_file(s, g->capacity, err);
    if (st != L3_OK)
        return st;
    new_superblock(&s->disk_sb, g);
    /* An empty slab table and journal, then the superblock that names them. */
    size_t zlen = g->slab_table_len > g->journal_len ? g->slab_table_len : g->journal_len;
    uint8_t *zero = l3_meta_alloc(g->block_size, zlen);
    if (!zero)
        return l3_fail(err, L3_ENOMEM, "allocating a metadata buffer");
    st = l3_meta_rw(s->fd, s->path, true, zero, g->slab_table_len, g->slab_table_off, err);
    if (st == L3_OK)
        st = l3_meta_rw(s->fd, s->path, true, zero, g->journal_len, g->journal_off, err);
    free(zero);
    if (st != L3_OK)
        return st;
    if (s->is_blockdev) {
        uint64_t range[2] = { g->data_off, (uint64_t)g->num_slabs * g->slab_size };
        (void)ioctl(s->fd, BLKDISCARD, range); /* best effort: tell the SSD it is free */
    }
    return l3_meta_write_sb(s, err);
}

l3_status l3_meta_read_tables(l3_slabstore *s, l3_error *err)
{
    l3_status st = l3_meta_rw(s->fd, s->path, false, s->table, s->geo.slab_table_len,
                              s->geo.slab_table_off, err);
    if (st == L3_OK)
        st = l3_meta_rw(s->fd, s->path, false, s->journal, s->geo.journal_len, s->geo.journal_off, err);
    return st;
}

bool l3_meta_blank_head(int fd, const char *path, uint64_t size)
{
    uint8_t *buf = l3_meta_alloc(4096, 8192);
    bool zero = false;
    l3_error err;
    if (buf && size >= 8192 && l3_meta_rw(fd, path, false, buf, 8192, 0, &err) == L3_OK) {
        zero = true;
        for (size_t i = 0; i < 8192 && zero; i++)
            zero = buf[i] == 0;
    }
    free(buf);
    return zero;
}
