#include "store_util.h"

#include "aligned.h"
#include "format.h"
#include "l3_crc32c.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

void temp_store_path(char *out, size_t size, const char *name)
{
    const char *dir = getenv("L3_TEST_DIR");
    snprintf(out, size, "%s/%s.%d.l3", dir && dir[0] ? dir : L3_TEST_DIR_DEFAULT, name, (int)getpid());
    unlink(out);
}

l3_slab_options test_options(const char *path, uint64_t capacity, l3_engine_kind kind)
{
    l3_slab_options o;
    l3_slab_options_default(&o, path);
    o.capacity = capacity;
    o.slab_size = 1 << 20;
    o.engine = kind;
    o.io_timeout = 10;
    o.io_contexts = 4;
    o.batch_keys = 64;
    return o;
}

l3_slabstore *open_test_store(const l3_slab_options *o)
{
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(o, &s, &err) != L3_OK)
        fail_msg("open %s: %s", o->path, err.msg);
    return s;
}

bool loop_attach(const char *file, char *dev, size_t len)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "losetup --find --show --direct-io=on '%s' 2>/dev/null", file);
    FILE *p = popen(cmd, "r");
    bool ok = p && fgets(dev, (int)len, p) != NULL;
    if (p)
        ok = pclose(p) == 0 && ok;
    if (ok)
        dev[strcspn(dev, "\n")] = '\0';
    return ok;
}

void loop_detach(const char *dev)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "losetup -d '%s'", dev);
    if (system(cmd) != 0)
        fail_msg("losetup -d %s failed", dev);
}

uint8_t *aligned_pool(size_t len)
{
    uint8_t *p = l3_aligned_alloc(4096, len, true);
    assert_non_null(p);
    return p;
}

void fill_pattern(uint8_t *buf, size_t len, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (uint8_t)x;
    }
}

void put_keys(l3_store *s, const char *const *keys, size_t n, uint8_t *pool, size_t pool_len,
              const l3_range *ranges, bool *success)
{
    bool *fail = calloc(n, 1);
    l3_io_result r = { .success = success, .object_failures = fail };
    l3_error err;
    l3_status st = s->ops->batch_put_from(s, keys, n, (l3_host_buffer){ pool, pool_len }, ranges, &r, &err);
    if (st != L3_OK)
        fail_msg("put: %s", err.msg);
    assert_true(r.retired);
    assert_int_equal(r.success_len, n);
    for (size_t i = 0; i < n; i++)
        assert_false(fail[i]);
    free(fail);
}

l3_status get_keys(l3_store *s, const char *const *keys, size_t n, uint8_t *pool, size_t pool_len,
                   const l3_range *ranges, bool *success, bool *failures)
{
    l3_io_result r = { .success = success, .object_failures = failures };
    l3_error err;
    l3_status st = s->ops->batch_get_into(s, keys, n, (l3_host_buffer){ pool, pool_len }, ranges, &r, &err);
    if (st == L3_OK) {
        assert_true(r.retired);
        assert_int_equal(r.success_len, n);
        assert_int_equal(r.object_failures_len, n);
    }
    return st;
}

bool exists_key(l3_store *s, const char *key)
{
    bool flag = false;
    assert_int_equal(s->ops->batch_exists(s, &key, 1, &flag, NULL), L3_OK);
    return flag;
}

void poke_file(const char *path, uint64_t off, const void *bytes, size_t len)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, len, (off_t)off), (ssize_t)len);
    fsync(fd);
    close(fd);
}

void peek_file(const char *path, uint64_t off, void *bytes, size_t len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, bytes, len, (off_t)off), (ssize_t)len);
    close(fd);
}

void forge_absurd_slab_count(l3_superblock *sb)
{
    uint64_t shift = (1ull << 31) * L3_SLAB_RECORD_BYTES - sb->slab_table_len;
    sb->num_slabs = 1u << 31;
    sb->slab_table_len += shift;
    sb->journal_off += shift;
    sb->checkpoint_off += shift;
    sb->data_off += shift;
    sb->capacity = (uint64_t)sb->num_slabs * sb->slab_size + sb->data_off;
}

void forge_superblock(const char *path, void (*edit)(l3_superblock *sb))
{
    for (int c = 0; c < 2; c++) {
        l3_superblock sb;
        peek_file(path, (uint64_t)c * 4096, &sb, sizeof sb);
        edit(&sb);
        l3_sb_seal(&sb);
        poke_file(path, (uint64_t)c * 4096, &sb, sizeof sb);
    }
}

l3_slab_options slab_count_options(const char *path, uint32_t slabs, l3_engine_kind kind)
{
    l3_slab_options o = test_options(path, 0, kind);
    l3_geometry g;
    char why[256];
    assert_true(l3_geometry_plan(16 << 20, 1 << 20, 4096, 0, 0, &g, why, sizeof why));
    o.capacity = g.data_off + (uint64_t)slabs * (1 << 20);
    return o;
}

void run_killed_writer(const l3_slab_options *o, int (*work)(l3_slabstore *s, void *arg), void *arg)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        l3_slabstore *c;
        if (l3_slabstore_open(o, &c, NULL) != L3_OK)
            _exit(3);
        int rc = work(c, arg);
        if (rc)
            _exit(rc);
        kill(getpid(), SIGKILL);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("the writer was not killed: exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

void forge_checkpoint_version(const char *path, uint32_t version)
{
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    l3_checkpoint_header h;
    peek_file(path, sb.checkpoint_off, &h, sizeof h);
    h.version = version;
    h.header_crc = 0;
    h.header_crc = l3_crc32c(0, &h, sizeof h);
    poke_file(path, sb.checkpoint_off, &h, sizeof h);
}

/* The store's geometry, from its superblock. */
l3_geometry geometry_of(const char *path)
{
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    l3_geometry g;
    char why[256];
    assert_true(l3_geometry_from_sb(&sb, 0, &g, why, sizeof why));
    assert_true(g.summaries);
    return g;
}

/* Slab i's record, as the store file at `path` (geometry g) has it. */
l3_slab_record record_of(const char *path, const l3_geometry *g, uint32_t i)
{
    l3_slab_record r;
    peek_file(path, g->slab_table_off + (uint64_t)i * sizeof r, &r, sizeof r);
    return r;
}

/* The slabs with a summary head for their record, and their class. */
uint32_t summarized_slabs(const char *path, uint32_t *slabs)
{
    l3_geometry g = geometry_of(path);
    uint32_t n = 0;
    for (uint32_t i = 0; i < g.num_slabs; i++) {
        l3_slab_record r = record_of(path, &g, i);
        l3_summary_head h;
        if (!l3_slab_record_valid(&r, i) || r.state != L3_SLAB_USED)
            continue;
        peek_file(path, l3_summary_offset(&g, i, r.payload_blocks), &h, sizeof h);
        if (l3_summary_head_valid(&h, i, &r))
            slabs[n++] = i;
    }
    return n;
}

void limit_memlock(rlim_t bytes)
{
    struct { uint32_t version; int pid; } hdr = { 0x20080522, 0 };
    struct { uint32_t effective, permitted, inheritable; } data[2];
    if (syscall(SYS_capget, &hdr, data) == 0) {
        data[0].effective &= ~(1u << 14); /* CAP_IPC_LOCK */
        data[0].permitted &= ~(1u << 14);
        if (syscall(SYS_capset, &hdr, data) != 0)
            _exit(10);
    }
    struct rlimit lim = { bytes, bytes };
    if (setrlimit(RLIMIT_MEMLOCK, &lim) != 0)
        _exit(11);
}
