/* l3fsck on clean, corrupted and truncated images: exit codes as e2fsck,
 * repairs that the next run finds clean, and agreement with the store. */
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "format.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define N 40

/* When not 0: the file size l3fsck may write up to (RLIMIT_FSIZE), so
 * that its writes past it fail. */
static rlim_t fsck_fsize;

/* Run l3fsck with `args` (NULL-terminated); its stdout goes to `out`. */
static int fsck(char *out, size_t out_len, ...)
{
    char *argv[16] = { (char *)L3FSCK };
    int argc = 1;
    va_list ap;
    va_start(ap, out_len);
    for (char *a; (a = va_arg(ap, char *)) && argc < 15;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        close(pipefd[0]);
        if (fsck_fsize) {
            struct rlimit lim = { fsck_fsize, fsck_fsize };
            signal(SIGXFSZ, SIG_IGN); /* a write past it fails with EFBIG instead */
            setrlimit(RLIMIT_FSIZE, &lim);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    size_t len = 0;
    ssize_t n;
    while ((n = read(pipefd[0], out + len, out_len - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(pipefd[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static char out[1 << 20];

static json_int_t served(const char *path)
{
    fsck(out, sizeof out, "--json", (char *)path, NULL);
    json_t *root = json_loads(out, 0, NULL);
    assert_non_null(root);
    json_int_t n = json_integer_value(json_object_get(json_object_get(root, "objects"), "served"));
    json_decref(root);
    return n;
}

/* A store of `n` objects, ns<i % 2>_obj<i>, of 20000 + i bytes (42 fill
 * a slab). */
static void make_store_of(char *path, size_t len, const char *name, int n)
{
    temp_store_path(path, len, name);
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    uint8_t *pool = aligned_pool(65536);
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "ns%d_obj%d|g0|o0|r0", i % 2, i);
        const char *k = key;
        fill_pattern(pool, 65536, (uint32_t)i);
        bool ok;
        put_keys(l3_slabstore_store(s), &k, 1, pool, 65536, &(l3_range){ 0, 20000 + (uint64_t)i }, &ok);
        assert_true(ok);
    }
    free(pool);
    l3_slabstore_free(s);
}

static void make_store(char *path, size_t len, const char *name) { make_store_of(path, len, name, N); }

/* Offset of object i's header, from fsck's own listing. */
static uint64_t header_offset(const char *path, int i)
{
    char key[64];
    snprintf(key, sizeof key, "ns%d_obj%d|g0|o0|r0", i % 2, i);
    fsck(out, sizeof out, "--list", "--json", (char *)path, NULL);
    json_t *root = json_loads(out, 0, NULL);
    json_t *list = json_object_get(root, "list");
    uint64_t off = 0;
    for (size_t k = 0; k < json_array_size(list); k++) {
        json_t *o = json_array_get(list, k);
        if (strcmp(json_string_value(json_object_get(o, "key")), key) == 0)
            off = (uint64_t)json_integer_value(json_object_get(o, "offset"));
    }
    json_decref(root);
    assert_true(off != 0);
    return off;
}

/* How many of the objects ns<i % 2>_obj<i> (i < n) the store serves, each
 * byte-exact; of each namespace in by_ns[2] when not NULL. */
static size_t store_serves_of(const char *path, int n, size_t *by_ns)
{
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    o.create = false;
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(&o, &s, &err) != L3_OK)
        fail_msg("open: %s", err.msg);
    uint8_t *pool = aligned_pool(65536), *want = aligned_pool(65536);
    size_t hits = 0;
    if (by_ns)
        by_ns[0] = by_ns[1] = 0;
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "ns%d_obj%d|g0|o0|r0", i % 2, i);
        const char *k = key;
        bool ok, fail;
        uint64_t size = 20000 + (uint64_t)i;
        assert_int_equal(get_keys(l3_slabstore_store(s), &k, 1, pool, 65536, &(l3_range){ 0, size },
                                  &ok, &fail), L3_OK);
        if (ok) {
            fill_pattern(want, 65536, (uint32_t)i);
            assert_memory_equal(pool, want, size);
            hits++;
            if (by_ns)
                by_ns[i % 2]++;
        }
    }
    free(pool);
    free(want);
    l3_slabstore_free(s);
    return hits;
}

static size_t store_serves(const char *path) { return store_serves_of(path, N, NULL); }

static void a_clean_image_exits_0_and_reports_what_it_holds(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-clean");
    assert_int_equal(fsck(out, sizeof out, "-n", "--verify", path, NULL), 0);
    assert_non_null(strstr(out, "result: clean"));
    assert_non_null(strstr(out, "ns0_  20 objects"));
    assert_non_null(strstr(out, "ns1_  20 objects"));
    assert_int_equal(served(path), N);
    assert_int_equal(fsck(out, sizeof out, "--list", "--prefix", "ns1_", path, NULL), 0);
    int lines = 0;
    for (char *p = out; (p = strstr(p, "ns1_obj")); p++)
        lines++;
    assert_int_equal(lines, 20);
    assert_null(strstr(out, "ns0_obj"));
    unlink(path);
}

static void a_flipped_payload_bit_is_found_by_verify_and_dropped_by_repair(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-payload");
    uint64_t at = header_offset(path, 7) + 4096 + 100;
    uint8_t b;
    peek_file(path, at, &b, 1);
    b ^= 1;
    poke_file(path, at, &b, 1);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0); /* headers alone look fine */
    assert_int_equal(fsck(out, sizeof out, "-n", "--verify", path, NULL), 4);
    assert_non_null(strstr(out, "payload checksum mismatch"));
    assert_int_equal(fsck(out, sizeof out, "-y", "--verify", path, NULL), 1);
    assert_int_equal(fsck(out, sizeof out, "-y", "--verify", path, NULL), 0);
    assert_int_equal(served(path), N - 1);
    assert_int_equal(store_serves(path), N - 1); /* the store agrees */
    unlink(path);
}

static void a_flipped_header_bit_is_a_corrupt_header_and_repair_drops_it(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-header");
    uint64_t at = header_offset(path, 3) + 40; /* inside the fixed header fields */
    uint8_t b;
    peek_file(path, at, &b, 1);
    b ^= 0x80;
    poke_file(path, at, &b, 1);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_non_null(strstr(out, "corrupt object header"));
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 1);
    assert_int_equal(fsck(out, sizeof out, "-n", "--verify", path, NULL), 0);
    assert_int_equal(store_serves(path), N - 1);
    unlink(path);
}

static void a_broken_superblock_copy_is_rewritten_from_the_good_one(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-sb");
    uint8_t junk[32];
    memset(junk, 0xa5, sizeof junk);
    poke_file(path, 4096 + 64, junk, sizeof junk); /* copy 1 */
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_non_null(strstr(out, "superblock copy 1"));
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 1);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    l3_superblock a, b;
    peek_file(path, 0, &a, sizeof a);
    peek_file(path, 4096, &b, sizeof b);
    char why[64];
    assert_true(l3_sb_valid(&a, why, sizeof why) && l3_sb_valid(&b, why, sizeof why));
    assert_int_equal(store_serves(path), N);
    unlink(path);
}

/* A store of 8 KiB blocks has copy 1 at 8192 and copy 0 at 0, as any
 * store: both are valid (the rulebook once asked copy 0 to sit where its
 * block size puts copy 1, so such a store lived on one copy), and with
 * copy 1 broken the store opens from copy 0. */
static void a_store_of_8_kib_blocks_has_both_superblock_copies(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "fsck-8k");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    o.block_size = 8192;
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    uint8_t *pool = aligned_pool(65536);
    const char *k = "ns0_obj0|g0|o0|r0"; /* object 0, as store_serves_of reads it */
    fill_pattern(pool, 65536, 0);
    bool ok;
    put_keys(l3_slabstore_store(s), &k, 1, pool, 65536, &(l3_range){ 0, 20000 }, &ok);
    assert_true(ok);
    free(pool);
    l3_slabstore_free(s);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    assert_non_null(strstr(out, "superblock copy 0: valid"));
    assert_non_null(strstr(out, "superblock copy 1: valid"));
    uint8_t junk[32];
    memset(junk, 0xa5, sizeof junk);
    poke_file(path, 8192 + 64, junk, sizeof junk); /* copy 1 */
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_non_null(strstr(out, "superblock copy 0: valid"));
    assert_non_null(strstr(out, "superblock copy 1 is broken"));
    assert_int_equal(store_serves_of(path, 1, NULL), 1);
    unlink(path);
}

static void a_truncated_image_is_reported_and_extended_by_repair(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-trunc");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 8 * (off_t)MIB), 0);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_non_null(strstr(out, "truncated"));
    /* The store refuses it too, and says why. */
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    l3_error err;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECORRUPT);
    assert_non_null(strstr(err.msg, "truncated"));
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 1);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    size_t hits = store_serves(path);
    assert_true(hits > 0 && hits <= N);
    unlink(path);
}

static void not_a_store_and_a_store_in_use_are_operational_errors(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "fsck-junk");
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    uint8_t junk[16384];
    fill_pattern(junk, sizeof junk, 5);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 8);
    unlink(path);
    make_store(path, sizeof path, "fsck-busy");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 8); /* refuses to repair */
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0); /* reads, with a warning */
    char me[64];
    snprintf(me, sizeof me, "attached processes: 1 (pid %d)", (int)getpid());
    assert_non_null(strstr(out, me));
    assert_int_equal(fsck(out, sizeof out, "-n", "--json", path, NULL), 0);
    json_t *root = json_loads(out, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(root, "attached")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(root, "attached"), 0)), getpid());
    json_decref(root);
    l3_slabstore_free(s);
    assert_int_equal(fsck(out, sizeof out, "-x", path, NULL), 8);
    unlink(path);
}

static l3_superblock read_sb(const char *path)
{
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    return sb;
}

/* Put the store in the state a crash leaves: a child opens it and exits
 * without closing. */
static void crash_open(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
        l3_slabstore *s;
        _exit(l3_slabstore_open(&o, &s, NULL) == L3_OK ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A payload a crash cut short (its header landed): the crash scan does
 * not serve it, and l3fsck counts it torn, not served, not an error. The
 * same bit on a clean store is the checkpoint's object: --verify's. */
static void a_torn_payload_after_a_crash_is_torn_and_served_by_neither(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-torn");
    uint64_t at = header_offset(path, 7) + geometry_of(path).header_bytes + 100;
    uint8_t b;
    peek_file(path, at, &b, 1);
    b ^= 1;
    poke_file(path, at, &b, 1);
    crash_open(path);
    assert_int_equal(fsck(out, sizeof out, "-n", "--json", path, NULL), 0);
    json_t *root = json_loads(out, 0, NULL);
    assert_non_null(root);
    json_t *objects = json_object_get(root, "objects");
    assert_int_equal(json_integer_value(json_object_get(objects, "served")), N - 1);
    assert_int_equal(json_integer_value(json_object_get(objects, "torn")), 1);
    json_decref(root);
    assert_int_equal(store_serves(path), N - 1); /* the store agrees */
    unlink(path);
}

/* Flip one bit of journal record 0 (inside its prefix): it no longer checks. */
static void flip_journal_bit(const char *path)
{
    l3_superblock sb = read_sb(path);
    uint8_t byte;
    peek_file(path, sb.journal_off + 40, &byte, 1);
    byte ^= 0x10;
    poke_file(path, sb.journal_off + 40, &byte, 1);
}

/* A flipped bit in a namespace journal record: an error (not exit 0), and
 * the repair keeps the removed objects removed, even after a crash. */
static void a_corrupt_journal_record_is_found_and_its_removal_kept(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-journal");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    assert_true(l3_store_remove_by_prefix(l3_slabstore_store(s), "ns1_"));
    l3_slabstore_free(s);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    assert_int_equal(served(path), N / 2);
    flip_journal_bit(path);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_non_null(strstr(out, "namespace journal record 0 is corrupt"));
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 1);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    assert_int_equal(store_serves(path), N / 2);
    crash_open(path); /* the next open rebuilds from the headers */
    assert_int_equal(store_serves(path), N / 2); /* the removed ones stay removed */
    unlink(path);
}

/* The same in a clean store whose removed objects fill most of a slab
 * with a summary (it names them: it was written before the removal). The
 * repair drops them, and a repair must leave a store the next check calls
 * clean: l3fsck -n and -y then exit 0, and the store serves what it
 * served before the damage. */
static void a_journal_repair_leaves_a_store_the_next_check_calls_clean(void **state)
{
    (void)state;
    char path[512];
    make_store_of(path, sizeof path, "fsck-journal-summary", 2 * N); /* slab 0 full, summarized */
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    assert_true(l3_store_remove_by_prefix(l3_slabstore_store(s), "ns1_"));
    l3_slabstore_free(s);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    flip_journal_bit(path);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 1);
    if (fsck(out, sizeof out, "-n", path, NULL) != 0)
        fail_msg("l3fsck -n after -y: %s", out);
    if (fsck(out, sizeof out, "-y", path, NULL) != 0)
        fail_msg("l3fsck -y after -y: %s", out);
    assert_int_equal(served(path), N);
    size_t by_ns[2];
    assert_int_equal(store_serves_of(path, 2 * N, by_ns), N);
    assert_int_equal(by_ns[1], 0);
    crash_open(path); /* a crash scan judges it too */
    assert_int_equal(store_serves_of(path, 2 * N, by_ns), N);
    assert_int_equal(by_ns[1], 0);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    unlink(path);
}

/* Copy the store file at `from` to `to`. */
static void copy_store(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), outfd = open(to, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    assert_true(in >= 0 && outfd >= 0);
    static uint8_t buf[1 << 20];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        assert_int_equal(write(outfd, buf, (size_t)n), n);
    assert_int_equal(n, 0);
    close(in);
    close(outfd);
}

/* Remove `prefix` in a process that then dies without closing (`crash`),
 * or closes (a clean store with its checkpoint). */
static void remove_prefix(const char *path, const char *prefix, bool crash)
{
    pid_t pid = fork();
    if (pid == 0) {
        l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
        l3_slabstore *s;
        if (l3_slabstore_open(&o, &s, NULL) != L3_OK || !l3_store_remove_by_prefix(l3_slabstore_store(s), prefix))
            _exit(1);
        if (!crash)
            l3_slabstore_free(s);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The store and l3fsck on one image: l3fsck -n's count of served objects
 * is what the store then serves, and no removed (ns1_) object is among
 * them; returns that count. */
static size_t store_and_fsck_agree(const char *path)
{
    json_int_t by_fsck = served(path);
    size_t by_ns[2];
    size_t by_store = store_serves_of(path, N, by_ns);
    if ((size_t)by_fsck != by_store || by_ns[1] != 0)
        fail_msg("l3fsck serves %lld, the store %zu (%zu of them removed)", (long long)by_fsck, by_store, by_ns[1]);
    return by_store;
}

/* A damaged journal record (its removal of ns1_ unreadable) is judged by
 * one rule, the rulebook's, by the store's open and by l3fsck: the store
 * serves what l3fsck says it serves, whichever touches the image first,
 * and never an object the removal removed. A clean store serves its
 * checkpoint (written after the removal); a dirty one has nothing that
 * proves an object live, so serves none (FORMAT.md). */
static void the_store_and_l3fsck_judge_a_damaged_journal_record_alike(void **state)
{
    (void)state;
    for (int clean = 0; clean < 2; clean++) {
        char path[512], copy[600];
        make_store(path, sizeof path, clean ? "fsck-jrule-clean" : "fsck-jrule-dirty");
        snprintf(copy, sizeof copy, "%s.copy", path);
        remove_prefix(path, "ns1_", !clean);
        assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
        flip_journal_bit(path);
        copy_store(path, copy);
        size_t want = clean ? N / 2 : 0;
        /* l3fsck first: -n judges, -y repairs, then the store. */
        assert_int_equal(fsck(out, sizeof out, "-n", copy, NULL), 4);
        assert_int_equal(served(copy), (json_int_t)want);
        assert_int_equal(fsck(out, sizeof out, "-y", copy, NULL), 1);
        assert_int_equal(fsck(out, sizeof out, "-n", copy, NULL), 0);
        assert_int_equal(store_and_fsck_agree(copy), want);
        /* The store first, then l3fsck on what it left. */
        assert_int_equal(store_serves_of(path, N, NULL), want);
        assert_int_equal(store_and_fsck_agree(path), want);
        /* The store leaves the damaged record to l3fsck -y: a crash scan
         * then has no checkpoint to prove anything, and serves nothing. */
        crash_open(path);
        assert_int_equal(store_and_fsck_agree(path), 0);
        unlink(copy);
        unlink(path);
    }
}

/* Open the store at `path` (from its checkpoint), remove `prefix`, put
 * back objects ns<i % 2>_obj<i> for i < `puts`, and die without closing. */
static void remove_put_and_crash(const char *path, const char *prefix, int puts)
{
    pid_t pid = fork();
    if (pid == 0) {
        l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
        l3_slabstore *s;
        if (l3_slabstore_open(&o, &s, NULL) != L3_OK || !l3_store_remove_by_prefix(l3_slabstore_store(s), prefix))
            _exit(1);
        uint8_t *pool = aligned_pool(65536);
        for (int i = 0; i < puts; i++) {
            char key[64];
            snprintf(key, sizeof key, "ns%d_obj%d|g0|o0|r0", i % 2, i);
            const char *k = key;
            fill_pattern(pool, 65536, (uint32_t)i);
            bool ok = false, fail;
            l3_io_result r = { .success = &ok, .object_failures = &fail };
            if (l3_store_batch_put_from(l3_slabstore_store(s), &k, 1, (l3_host_buffer){ pool, 65536 },
                                        &(l3_range){ 0, 20000 + (uint64_t)i }, &r, NULL) != L3_OK || !ok)
                _exit(2);
        }
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A store opened from its checkpoint keeps a damaged journal record: a
 * later removal takes another slot (reusing it would erase the only trace
 * of the removal, and the crash scan would serve what it removed), until
 * remove_by_prefix("") bumps the epoch, which leaves it nothing to cover:
 * then it is zeroed, and what is put after survives a crash. */
static void a_damaged_journal_record_stays_until_an_epoch_bump(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-jslot");
    remove_prefix(path, "ns1_", false);
    flip_journal_bit(path);
    remove_put_and_crash(path, "ns0_", 0);
    assert_int_equal(store_and_fsck_agree(path), 0); /* no ns1_ object back */
    unlink(path);
    make_store(path, sizeof path, "fsck-jbump");
    remove_prefix(path, "ns1_", false);
    flip_journal_bit(path);
    remove_put_and_crash(path, "", N);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0); /* the record is gone */
    size_t by_ns[2];
    assert_int_equal(store_serves_of(path, N, by_ns), N); /* all put after the bump */
    unlink(path);
}

/* A repair whose write fails is not counted as a correction. */
static void a_repair_that_cannot_be_written_leaves_the_error(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-nowrite");
    uint64_t off = header_offset(path, 9);
    uint8_t byte;
    peek_file(path, off + 40, &byte, 1);
    byte ^= 0x01;
    poke_file(path, off + 40, &byte, 1);
    fsck_fsize = off; /* writes at the header fail */
    int code = fsck(out, sizeof out, "-y", path, NULL);
    fsck_fsize = 0;
    assert_int_equal(code, 4);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4); /* still there */
    assert_int_equal(fsck(out, sizeof out, "-y", path, NULL), 1);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    unlink(path);
}

/* A superblock whose checksum holds but whose geometry is absurd: an
 * error, never a crash or a huge allocation. */
static void an_absurd_superblock_is_an_error_not_a_crash(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-absurd");
    forge_superblock(path, forge_absurd_slab_count);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 4);
    assert_non_null(strstr(out, "geometry"));
    unlink(path);
}

/* Run l3fsck -n --json on path with `memory` (NULL: the default): its
 * exit code; the parsed report in *root. */
static int fsck_json(const char *path, const char *memory, json_t **root)
{
    int code = memory ? fsck(out, sizeof out, "-n", "--json", "--memory", (char *)memory, (char *)path, NULL)
                      : fsck(out, sizeof out, "-n", "--json", (char *)path, NULL);
    *root = json_loads(out, 0, NULL);
    assert_non_null(*root);
    return code;
}

/* The same in two reports: field `name` (of `sub` when not NULL). */
static void expect_same(json_t *a, json_t *b, const char *sub, const char *name)
{
    json_t *x = json_object_get(sub ? json_object_get(a, sub) : a, name);
    json_t *y = json_object_get(sub ? json_object_get(b, sub) : b, name);
    assert_non_null(x);
    if (!json_equal(x, y))
        fail_msg("%s.%s differs between one pass and several", sub ? sub : "", name);
}

/* Zero every used slab's summary head: its headers decide then. */
static void drop_summaries(const char *path)
{
    l3_superblock sb = read_sb(path);
    l3_geometry g;
    char why[128];
    assert_true(l3_geometry_from_sb(&sb, 0, &g, why, sizeof why));
    uint8_t zero[4096] = { 0 };
    for (uint32_t i = 0; i < g.num_slabs; i++) {
        l3_slab_record r;
        peek_file(path, g.slab_table_off + (uint64_t)i * sizeof r, &r, sizeof r);
        if (r.magic == L3_SLAB_MAGIC && r.payload_blocks)
            poke_file(path, l3_summary_offset(&g, i, r.payload_blocks), zero, g.block_size);
    }
}

/* With more objects than --memory holds, l3fsck -n checks them in passes,
 * each over one range of keys: its report is the one pass's, clean and
 * with a corrupt header whose checkpoint entry then names nothing. */
static void passes_over_ranges_of_keys_report_what_one_pass_does(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-passes");
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* the headers decide, and object 7's no longer checks */
            drop_summaries(path);
            uint64_t off = header_offset(path, 7) + 40; /* inside the fixed header fields */
            uint8_t byte;
            peek_file(path, off, &byte, 1);
            byte ^= 0x10;
            poke_file(path, off, &byte, 1);
        }
        json_t *one, *many;
        int code_one = fsck_json(path, NULL, &one), code_many = fsck_json(path, "1KiB", &many);
        if (code_one != (round == 0 ? 0 : 4))
            fail_msg("round %d: l3fsck -n exits %d: %s", round, code_one, json_dumps(one, 0));
        assert_int_equal(code_many, code_one);
        assert_int_equal(json_integer_value(json_object_get(one, "passes")), 1);
        assert_true(json_integer_value(json_object_get(many, "passes")) > 2);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(one, "objects"), "served")),
                         round == 0 ? N : N - 1);
        const char *objects[] = { "served", "bytes", "stale", "deleted", "corrupt_headers" };
        for (size_t k = 0; k < sizeof objects / sizeof *objects; k++)
            expect_same(one, many, "objects", objects[k]);
        expect_same(one, many, "checkpoint", "valid");
        expect_same(one, many, "checkpoint", "status");
        expect_same(one, many, NULL, "namespaces");
        expect_same(one, many, NULL, "classes");
        expect_same(one, many, NULL, "slabs");
        expect_same(one, many, NULL, "errors");
        json_decref(one);
        json_decref(many);
    }
    unlink(path);
}

/* A checkpoint an earlier build wrote (48-byte entries) is not read by the
 * store, which scans instead: l3fsck says so and counts no error. */
static void an_earlier_builds_checkpoint_is_not_an_error(void **state)
{
    (void)state;
    char path[512];
    make_store(path, sizeof path, "fsck-earlier");
    l3_superblock sb = read_sb(path);
    l3_checkpoint_header h;
    peek_file(path, sb.checkpoint_off, &h, sizeof h);
    assert_int_equal(h.version, L3_CKPT_PACKED);
    forge_checkpoint_version(path, L3_CKPT_LIST);
    assert_int_equal(fsck(out, sizeof out, "-n", path, NULL), 0);
    assert_non_null(strstr(out, "an earlier build's layout"));
    assert_non_null(strstr(out, "result: clean"));
    assert_int_equal(served(path), N); /* by the rules, as the scan will */
    assert_int_equal(store_serves(path), N);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_clean_image_exits_0_and_reports_what_it_holds),
        cmocka_unit_test(a_flipped_payload_bit_is_found_by_verify_and_dropped_by_repair),
        cmocka_unit_test(a_flipped_header_bit_is_a_corrupt_header_and_repair_drops_it),
        cmocka_unit_test(a_broken_superblock_copy_is_rewritten_from_the_good_one),
        cmocka_unit_test(a_store_of_8_kib_blocks_has_both_superblock_copies),
        cmocka_unit_test(a_truncated_image_is_reported_and_extended_by_repair),
        cmocka_unit_test(not_a_store_and_a_store_in_use_are_operational_errors),
        cmocka_unit_test(a_corrupt_journal_record_is_found_and_its_removal_kept),
        cmocka_unit_test(a_journal_repair_leaves_a_store_the_next_check_calls_clean),
        cmocka_unit_test(the_store_and_l3fsck_judge_a_damaged_journal_record_alike),
        cmocka_unit_test(a_damaged_journal_record_stays_until_an_epoch_bump),
        cmocka_unit_test(a_repair_that_cannot_be_written_leaves_the_error),
        cmocka_unit_test(an_absurd_superblock_is_an_error_not_a_crash),
        cmocka_unit_test(a_torn_payload_after_a_crash_is_torn_and_served_by_neither),
        cmocka_unit_test(passes_over_ranges_of_keys_report_what_one_pass_does),
        cmocka_unit_test(an_earlier_builds_checkpoint_is_not_an_error),
    };
    return cmocka_run_group_tests_name("fsck", tests, NULL, NULL);
}
