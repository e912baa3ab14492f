/* The slab store's metadata I/O (meta.h). */
#include "meta.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

bool l3_meta_dev_ok(const l3_slabstore *s, uint32_t d)
{
    if (d >= s->ndev || s->dev[d].fd < 0)
        return false;
    return !s->sh || s->sh->dev_state[d] == DEV_OK;
}

void l3_meta_dev_failed(l3_slabstore *s, uint32_t d, const char *why)
{
    if (!s->sh || s->ndev < 2 || d >= s->ndev)
        return; /* one device: its errors are the store's, returned as they are */
    l3_slab_lock(s);
    bool first = s->sh->dev_state[d] == DEV_OK;
    if (first)
        s->sh->dev_state[d] = DEV_FAILED;
    l3_slab_unlock(s);
    atomic_fetch_or(&s->sh->failed_mask, 1u << d);
    if (first)
        l3_log("error", "store %s: device %u (%s) FAILED: %s. Its objects are lost to this store until it "
                        "is opened again with the device working; the other %u device(s) serve on",
               s->path, d, s->dev[d].path, why, s->ndev - 1);
}

void l3_meta_note_io(l3_slabstore *s, const l3_io_req *reqs, size_t n)
{
    if (s->ndev < 2 || !s->sh)
        return;
    uint32_t errors[L3_MAX_DEVICES] = { 0 }, ok = 0;
    int last[L3_MAX_DEVICES] = { 0 };
    for (size_t i = 0; i < n; i++) {
        uint32_t d = l3_io_dev_of(reqs[i].offset);
        if (!reqs[i].len || d >= s->ndev)
            continue;
        if (reqs[i].res == (int32_t)reqs[i].len)
            ok |= 1u << d;
        else if (reqs[i].res < 0) {
            errors[d]++;
            last[d] = -reqs[i].res;
        }
    }
    for (uint32_t d = 0; d < s->ndev; d++) {
        if (ok & (1u << d)) {
            if (atomic_load_explicit(&s->sh->dev_err_run[d], memory_order_relaxed))
                atomic_store(&s->sh->dev_err_run[d], 0); /* it works: errors there were media errors */
            continue;
        }
        if (!errors[d])
            continue;
        uint32_t run = atomic_fetch_add(&s->sh->dev_err_run[d], errors[d]) + errors[d];
        if (run >= L3_DEV_FAIL_RUN) {
            char why[128];
            snprintf(why, sizeof why, "%u I/O errors in a row, none completing (last: %s)", run, strerror(last[d]));
            l3_meta_dev_failed(s, d, why);
        }
    }
}

/* Write metadata through the I/O engine, on a free context's bounce
 * buffer. A synchronous pwrite on the file while the engine's writes are
 * in flight makes io_uring hand those writes to its io-wq workers, where
 * they reach the device unmerged (puts of 256 KiB: 330 to 700 of 8192
 * writes, their requests 1.1 MiB against fio's 3.4). *used is false when
 * the engine cannot take it (no free context, too long, or a fault
 * installed: injected metadata faults have their own path); the caller
 * then writes it itself. */
static l3_status engine_write(l3_slabstore *s, uint32_t d, const void *buf, size_t len, uint64_t off,
                              bool *used, l3_error *err)
{
    *used = false;
    if (!s->engine || l3_io_engine_fault_on(s->engine) || l3_io_engine_broken(s->engine) || len > UINT32_MAX)
        return L3_OK; /* (a broken engine's buffers may still be in flight) */
    l3_io_ctx *ctx = l3_io_try_acquire(s->engine);
    if (!ctx)
        return L3_OK;
    size_t cap;
    void *bounce = l3_io_bounce(ctx, &cap);
    if (!bounce || len > cap) {
        l3_io_release(s->engine, ctx);
        return L3_OK;
    }
    *used = true;
    memcpy(bounce, buf, len);
    l3_io_req r = { .write = true, .offset = l3_io_offset(d, off), .buf = bounce, .len = (uint32_t)len };
    bool retired = true;
    l3_status st = l3_io_run(s->engine, ctx, &r, 1, s->opt.io_timeout, &retired, err);
    if (!retired)
        atomic_store(&s->fatal, true); /* and the engine is broken: its bounce buffers stay unused */
    l3_io_release(s->engine, ctx);
    if (st == L3_OK && r.res != (int32_t)len)
        st = l3_fail(err, L3_EIO, "writing %zu bytes at %llu of %s: %s", len, (unsigned long long)off,
                     s->dev[d].path, r.res < 0 ? strerror(-r.res) : "short write");
    return st;
}

/* A synchronous write of the store's, seen by the device model of
 * power-cut tests (power.h); with none installed, l3_meta_rw's. */
static l3_status sync_write(int fd, const char *path, const void *buf, size_t len, uint64_t off, l3_error *err)
{
    if (!l3_io_power_on())
        return l3_meta_rw(fd, path, true, (void *)buf, len, off, err);
    if (!l3_io_power_write_start(fd, off, len))
        return L3_OK; /* the cut is pending: acknowledged, lost */
    l3_status st = l3_meta_rw(fd, path, true, (void *)buf, len, off, err);
    l3_io_power_write_done(fd, buf, off, len, st == L3_OK);
    return st;
}

/* Flush device d (l3_io_sync): every write completed before is durable. */
static l3_status dev_sync(l3_slabstore *s, uint32_t d, l3_error *err)
{
    atomic_fetch_and(&s->dirty, ~(1u << d)); /* (before: a write completed after it marks it again) */
    atomic_fetch_add(&s->flushes, 1);
    if (l3_io_sync(s->dev[d].fd) == 0)
        return L3_OK;
    atomic_fetch_or(&s->dirty, 1u << d);
    return l3_fail(err, L3_EIO, "fdatasync %s: %s", s->dev[d].path, strerror(errno));
}

/* Write metadata to device d, through the engine's fault injection
 * (tests), and with `sync` make it durable. */
static l3_status dev_write(l3_slabstore *s, uint32_t d, const void *buf, size_t len, uint64_t off, bool sync,
                           l3_error *err)
{
    const l3_device *dv = &s->dev[d];
    l3_status st;
    if (!l3_meta_dev_ok(s, d))
        return l3_fail(err, L3_EIO, "device %u (%s) is offline", d, dv->path);
    if (s->engine && l3_io_engine_meta_fault(s->engine, d))
        st = l3_fail(err, L3_EIO, "writing %zu bytes at %llu of %s: %s (injected)", len,
                     (unsigned long long)off, dv->path, strerror(EIO));
    else {
        bool used;
        st = engine_write(s, d, buf, len, off, &used, err);
        if (!used)
            st = sync_write(dv->fd, dv->path, buf, len, off, err);
    }
    if (st == L3_OK && sync)
        st = dev_sync(s, d, err);
    if (st != L3_OK)
        l3_meta_dev_failed(s, d, err ? err->msg : "a metadata write failed");
    return st;
}

l3_status l3_meta_flush(l3_slabstore *s, uint32_t mask, l3_error *err)
{
    l3_status st = L3_OK;
    for (uint32_t d = 0; d < s->ndev; d++) {
        if (!(mask & (1u << d)) || !l3_meta_dev_ok(s, d))
            continue;
        l3_error e;
        l3_status dst = dev_sync(s, d, &e);
        if (dst == L3_OK)
            continue;
        l3_meta_dev_failed(s, d, e.msg);
        if (st == L3_OK) {
            st = dst;
            if (err)
                *err = e;
        }
    }
    return st;
}

void l3_meta_flush_dirty(l3_slabstore *s, const char *what)
{
    l3_error err;
    uint32_t dirty = atomic_load(&s->dirty);
    if (dirty && l3_meta_flush(s, dirty, &err) != L3_OK)
        l3_log("error", "%s: flushing %s: %s", s->path, what, err.msg);
}

l3_status l3_meta_io(l3_slabstore *s, bool write, void *buf, size_t len, uint64_t ioff, l3_error *err)
{
    uint32_t d = l3_io_dev_of(ioff);
    if (write)
        return dev_write(s, d, buf, len, l3_io_byte_of(ioff), false, err);
    if (!l3_meta_dev_ok(s, d))
        return l3_fail(err, L3_EIO, "device %u (%s) is offline", d, d < s->ndev ? s->dev[d].path : "?");
    return l3_meta_rw(s->dev[d].fd, s->dev[d].path, false, buf, len, l3_io_byte_of(ioff), err);
}

l3_status l3_meta_write_all(l3_slabstore *s, const void *buf, size_t len, uint64_t off, l3_error *err)
{
    l3_status first = L3_OK;
    l3_error first_err = { 0 };
    uint32_t written = 0;
    for (uint32_t d = 0; d < s->ndev; d++) {
        if (!l3_meta_dev_ok(s, d))
            continue;
        l3_error e;
        l3_status st = dev_write(s, d, buf, len, off, true, &e);
        if (st == L3_OK)
            written++;
        else if (first == L3_OK) {
            first = st;
            first_err = e;
        }
    }
    /* Several devices: enough that one took it (the others failed, loudly). */
    if (written && s->ndev > 1)
        return L3_OK;
    if (first == L3_OK && !written)
        return l3_fail(err, L3_EIO, "store %s: no device is online", s->path);
    if (first != L3_OK && err)
        *err = first_err;
    return first;
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
    uint32_t written = 0;
    for (uint32_t d = 0; d < s->ndev; d++) {
        l3_status dst = l3_meta_dev_ok(s, d) ? L3_OK : L3_EIO;
        for (uint32_t c = 0; c < L3_SB_COPIES && dst == L3_OK; c++) {
            l3_superblock *sb = (l3_superblock *)buf;
            *sb = *cur;
            sb->device = d;
            sb->copy = c;
            l3_sb_seal(sb);
            dst = dev_write(s, d, buf, slot, (uint64_t)c * slot, true, err);
        }
        if (dst == L3_OK)
            written++;
        else if (l3_meta_dev_ok(s, d) || s->ndev == 1)
            st = dst;
    }
    free(buf);
    if (s->ndev > 1)
        return written ? L3_OK : l3_fail(err, L3_EIO, "store %s: no device took the superblock", s->path);
    return st;
}

void l3_meta_adopt_sb(l3_slabstore *s)
{
    L3_ASSERT(s->sh);
    s->sh->sb = s->disk_sb;
}

l3_status l3_meta_bump_epoch(l3_slabstore *s, l3_error *err)
{
    l3_shm_lock(&s->shm, &s->sh->sb_mu);
    s->sh->sb.epoch++;
    s->sh->sb.clean = 0;
    s->sh->sb.next_seq = atomic_load(&s->sh->seq) + L3_SEQ_LEASE; /* (meta.h) */
    l3_status st = s->opt.read_only ? L3_OK : l3_meta_write_sb(s, err);
    if (st != L3_OK)
        s->sh->sb.epoch--;
    l3_shm_unlock(&s->sh->sb_mu);
    return st;
}

l3_status l3_meta_mark_dirty(l3_slabstore *s, l3_error *err)
{
    l3_shm_lock(&s->shm, &s->sh->sb_mu);
    s->sh->sb.clean = 0;
    s->sh->sb.next_seq = atomic_load(&s->sh->seq) + L3_SEQ_LEASE; /* (meta.h) */
    l3_status st = l3_meta_write_sb(s, err);
    l3_shm_unlock(&s->sh->sb_mu);
    return st;
}

l3_status l3_meta_mark_clean(l3_slabstore *s, uint64_t ckpt_bytes, uint32_t ckpt_crc, uint32_t ckpt_entries,
                             l3_error *err)
{
    l3_shm_lock(&s->shm, &s->sh->sb_mu);
    s->sh->sb.clean = 1;
    s->sh->sb.ckpt_bytes = ckpt_bytes;
    s->sh->sb.ckpt_crc = ckpt_crc;
    s->sh->sb.ckpt_entries = ckpt_entries;
    s->sh->sb.next_seq = atomic_load(&s->sh->seq);
    l3_status st = l3_meta_write_sb(s, err);
    l3_shm_unlock(&s->sh->sb_mu);
    return st;
}

l3_status l3_meta_seq_lease(l3_slabstore *s, uint64_t need, l3_error *err)
{
    uint64_t margin = need + L3_SEQ_LEASE / 4;
    if (atomic_load(&s->sh->seq) + margin + L3_SEQ_LEASE >= L3_SEQ_LIMIT)
        return l3_fail(err, L3_ENOSPC, "%s: the store's object sequence numbers are used up (2^48)", s->path);
    if (s->opt.read_only || atomic_load(&s->sh->seq) + margin < s->sh->sb.next_seq)
        return L3_OK; /* (a racy read: rechecked under sb_mu) */
    l3_shm_lock(&s->shm, &s->sh->sb_mu);
    l3_status st = L3_OK;
    uint64_t old = s->sh->sb.next_seq;
    if (atomic_load(&s->sh->seq) + margin >= old) {
        s->sh->sb.next_seq = atomic_load(&s->sh->seq) + margin + L3_SEQ_LEASE;
        st = l3_meta_write_sb(s, err);
        if (st != L3_OK)
            s->sh->sb.next_seq = old;
    }
    l3_shm_unlock(&s->sh->sb_mu);
    return st;
}

/* Whether slab i's record of generation `gen` needs no write: it is on
 * disk, or the slab moved on to another generation (under the lock). */
static bool record_settled(l3_slabstore *s, uint32_t i, uint64_t gen)
{
    return s->slabs[i].gen != gen || s->slabs[i].record_gen == gen;
}

/* A table block was written to device `d` from image copy `buf`: every
 * slab of that device whose record there is of its current generation has
 * it on disk (standby slabs opened together share a block and one write;
 * another device's slab in the block is read from that device's table). */
static void settle_block(l3_slabstore *s, uint32_t d, const uint8_t *buf, uint64_t block_off)
{
    uint32_t first = (uint32_t)(block_off / L3_SLAB_RECORD_BYTES);
    uint32_t per = s->geo.block_size / L3_SLAB_RECORD_BYTES;
    l3_slab_lock(s);
    for (uint32_t j = first; j < first + per && j < s->geo.num_slabs; j++) {
        if (l3_slab_device(&s->geo, j) != d)
            continue;
        const l3_slab_record *r = (const l3_slab_record *)(buf + (size_t)(j - first) * L3_SLAB_RECORD_BYTES);
        if (r->state == L3_SLAB_USED && r->gen == s->slabs[j].gen)
            s->slabs[j].record_gen = r->gen;
    }
    l3_slab_unlock(s);
}

l3_status l3_meta_ensure_record(l3_slabstore *s, uint32_t slab, uint64_t gen, l3_error *err)
{
    uint32_t b = s->geo.block_size;
    uint64_t block_off = (uint64_t)slab * L3_SLAB_RECORD_BYTES / b * b;
    L3_ASSERT(slab < s->geo.num_slabs);
    l3_slab_lock(s);
    bool settled = record_settled(s, slab, gen);
    l3_slab_unlock(s);
    if (settled)
        return L3_OK;
    uint8_t *buf = l3_meta_alloc(b, b);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a slab table buffer");
    /* table_mu orders whole-block writes: a later one never carries an
     * older neighbour. A writer that waited here for another's write of
     * the same record finds it settled and writes nothing. The record goes
     * to its slab's device (whose copy of the table is the one read for
     * it). */
    l3_shm_lock(&s->shm, &s->sh->table_mu);
    l3_slab_lock(s);
    settled = record_settled(s, slab, gen);
    if (!settled)
        memcpy(buf, (uint8_t *)s->table + block_off, b);
    l3_slab_unlock(s);
    l3_status st = L3_OK;
    if (!settled)
        st = dev_write(s, l3_slab_device(&s->geo, slab), buf, b, s->geo.slab_table_off + block_off, false, err);
    if (!settled && st == L3_OK)
        settle_block(s, l3_slab_device(&s->geo, slab), buf, block_off);
    l3_shm_unlock(&s->sh->table_mu);
    free(buf);
    return st;
}

l3_status l3_meta_retire_record(l3_slabstore *s, uint32_t slab, l3_error *err)
{
    uint32_t b = s->geo.block_size, d = l3_slab_device(&s->geo, slab);
    uint64_t block_off = (uint64_t)slab * L3_SLAB_RECORD_BYTES / b * b;
    L3_ASSERT(slab < s->geo.num_slabs);
    uint8_t *buf = l3_meta_alloc(b, b);
    if (!buf)
        return l3_fail(err, L3_ENOMEM, "allocating a slab table buffer");
    l3_shm_lock(&s->shm, &s->sh->table_mu);
    l3_slab_lock(s);
    l3_slab_record *r = &s->table[slab];
    if (s->slabs[slab].state == S_FREE && r->state == L3_SLAB_USED) {
        r->state = L3_SLAB_FREE; /* its generation kept: a reopening goes on from it */
        l3_slab_record_seal(r);
        s->slabs[slab].disk_used = 0;
        s->slabs[slab].record_gen = 0;
    }
    memcpy(buf, (uint8_t *)s->table + block_off, b);
    l3_slab_unlock(s);
    l3_status st = dev_write(s, d, buf, b, s->geo.slab_table_off + block_off, true, err);
    if (st == L3_OK)
        settle_block(s, d, buf, block_off);
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
    l3_status st = l3_meta_write_all(s, buf, b, s->geo.journal_off + block_off, err);
    if (st != L3_OK)
        s->journal[slot] = saved;
    free(buf);
    return st;
}

l3_status l3_meta_clear_damaged_journal(l3_slabstore *s, l3_error *err)
{
    static const l3_journal_record blank;
    l3_status st = L3_OK;
    l3_shm_lock(&s->shm, &s->sh->journal_mu);
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS && st == L3_OK; j++)
        if (l3_journal_record_damaged(&s->journal[j]))
            st = l3_meta_write_journal(s, j, &blank, err);
    l3_shm_unlock(&s->sh->journal_mu);
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
    sb->num_devices = g->num_devices;
    sb->incompat = (g->num_devices > 1 ? L3_INCOMPAT_DEVICES : 0) | (g->summaries ? L3_INCOMPAT_SUMMARY : 0);
}

/* Give a regular file its bytes (fallocate, or a sparse extension where
 * the file system cannot or the options say not to). */
static l3_status allocate_file(l3_slabstore *s, const l3_device *dv, uint64_t capacity, l3_error *err)
{
    int rc = s->opt.no_preallocate ? EOPNOTSUPP : posix_fallocate(dv->fd, 0, (off_t)capacity);
    if (rc == EOPNOTSUPP || rc == EINVAL)
        rc = ftruncate(dv->fd, (off_t)capacity) == 0 ? 0 : errno;
    if (rc != 0)
        return l3_fail(err, rc == ENOSPC ? L3_ENOSPC : L3_EIO, "allocating %llu bytes for %s: %s",
                       (unsigned long long)capacity, dv->path, strerror(rc));
    return L3_OK;
}

/* Give device d its bytes and empty metadata areas. */
static l3_status format_device(l3_slabstore *s, uint32_t d, const uint8_t *zero, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    const l3_device *dv = &s->dev[d];
    l3_status st = dv->blockdev ? L3_OK : allocate_file(s, dv, g->capacity, err);
    if (st == L3_OK)
        st = sync_write(dv->fd, dv->path, zero, g->slab_table_len, g->slab_table_off, err);
    if (st == L3_OK)
        st = sync_write(dv->fd, dv->path, zero, g->journal_len, g->journal_off, err);
    if (st == L3_OK && dv->blockdev) {
        uint64_t range[2] = { g->data_off, (uint64_t)(g->num_slabs / g->num_devices) * g->slab_size };
        (void)ioctl(dv->fd, BLKDISCARD, range); /* best effort: tell the SSD it is free */
    }
    return st;
}

l3_status l3_meta_format(l3_slabstore *s, uint64_t capacity, l3_error *err)
{
    char why[256];
    if (!l3_geometry_plan_devices(capacity, s->ndev, s->opt.slab_size, s->opt.block_size, s->opt.max_objects,
                                  s->opt.expected_object_size, &s->geo, why, sizeof why))
        return l3_fail(err, L3_ECONFIG, "%s: %s", s->path, why);
    const l3_geometry *g = &s->geo;
    new_superblock(&s->disk_sb, g);
    /* Empty slab tables and journals, then the superblocks that name them. */
    size_t zlen = g->slab_table_len > g->journal_len ? g->slab_table_len : g->journal_len;
    uint8_t *zero = l3_meta_alloc(g->block_size, zlen);
    if (!zero)
        return l3_fail(err, L3_ENOMEM, "allocating a metadata buffer");
    l3_status st = L3_OK;
    for (uint32_t d = 0; d < s->ndev && st == L3_OK; d++)
        st = format_device(s, d, zero, err);
    free(zero);
    return st == L3_OK ? l3_meta_write_sb(s, err) : st;
}

l3_status l3_meta_read_tables(l3_slabstore *s, l3_error *err)
{
    const l3_geometry *g = &s->geo;
    if (s->ndev == 1) {
        l3_status st = l3_meta_rw(s->dev[0].fd, s->path, false, s->table, g->slab_table_len, g->slab_table_off, err);
        if (st == L3_OK)
            st = l3_meta_rw(s->dev[0].fd, s->path, false, s->journal, g->journal_len, g->journal_off, err);
        return st;
    }
    uint8_t *tbl = l3_meta_alloc(g->block_size, g->slab_table_len);
    uint8_t *jr = l3_meta_alloc(g->block_size, g->journal_len);
    l3_status st = tbl && jr ? L3_OK : l3_fail(err, L3_ENOMEM, "allocating metadata buffers");
    memset(s->table, 0, g->slab_table_len);
    memset(s->journal, 0, g->journal_len);
    for (uint32_t d = 0; d < s->ndev && st == L3_OK; d++) {
        if (!l3_meta_dev_ok(s, d))
            continue;
        l3_error e;
        if (l3_meta_rw(s->dev[d].fd, s->dev[d].path, false, tbl, g->slab_table_len, g->slab_table_off, &e) != L3_OK ||
            l3_meta_rw(s->dev[d].fd, s->dev[d].path, false, jr, g->journal_len, g->journal_off, &e) != L3_OK) {
            l3_meta_dev_failed(s, d, e.msg);
            continue;
        }
        l3_merge_device_tables(g, d, (const l3_slab_record *)tbl, (const l3_journal_record *)jr, s->table, s->journal);
    }
    free(tbl);
    free(jr);
    return st;
}
