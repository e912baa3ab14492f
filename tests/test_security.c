/* Only the cache's owner can read it or steer it: files and the shared
 * mapping are created 0600 whatever the umask; a shared object that is not
 * the store's own (another owner, or more permissions) is refused before
 * anything is attached; a group mode lets ranks of two users of one group
 * share a store; l3fsck reports and tightens modes open to others. The
 * tests run as root: a foreign owner is made with fchown. */
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_slabstore.h"
#include "shm.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define OBJ 16384
#define GROUP 40000
#define USER_A 40001
#define USER_B 40002

static l3_slab_options options(const char *path, uint32_t mode)
{
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    o.mode = mode;
    return o;
}

/* The shared object's path for the store file at `path`. */
static void shm_path_of(const char *path, char *out, size_t len)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    char name[96];
    l3_shm_name_of(&st, name, sizeof name);
    snprintf(out, len, "/dev/shm%s", name);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static void a_new_store_and_its_shared_object_are_0600_whatever_the_umask(void **state)
{
    (void)state;
    char path[512], shm[160];
    temp_store_path(path, sizeof path, "sec-mode");
    mode_t old = umask(022);
    l3_slab_options o = options(path, 0);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    umask(old);
    assert_int_equal(mode_of(path), 0600);
    shm_path_of(path, shm, sizeof shm);
    assert_int_equal(mode_of(shm), 0600);
    l3_slabstore_free(s);
    unlink(path);
}

/* Make the store's shared object by hand, as another user might. */
static void plant(const char *shm, uid_t owner, mode_t mode)
{
    int fd = open(shm, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 1 << 20), 0);
    assert_int_equal(fchown(fd, owner, owner), 0);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static void refused_and_untouched(const char *path, const char *shm, const char *what)
{
    l3_slab_options o = options(path, 0);
    l3_slabstore *s;
    l3_error err;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_EPERM);
    if (!strstr(err.msg, shm) || !strstr(err.msg, what) || !strstr(err.msg, "rm "))
        fail_msg("the refusal does not name the object, its %s and the remedy: %s", what, err.msg);
    struct stat st;
    assert_int_equal(stat(shm, &st), 0);
    assert_int_equal(st.st_size, 1 << 20); /* nothing attached to it, nothing rebuilt */
}

static void a_shared_object_that_is_not_the_stores_own_is_refused(void **state)
{
    (void)state;
    char path[512], shm[160];
    temp_store_path(path, sizeof path, "sec-foreign");
    l3_slab_options o = options(path, 0);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_slabstore_free(s);
    shm_path_of(path, shm, sizeof shm);
    plant(shm, 65534, 0600); /* nobody's */
    refused_and_untouched(path, shm, "uid 65534");
    unlink(shm);
    plant(shm, geteuid(), 0666); /* ours, but open to everyone */
    refused_and_untouched(path, shm, "mode 0666");
    unlink(shm);
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK); /* once removed, it opens */
    l3_slabstore_free(s);
    unlink(path);
}

/* Become `uid` in group GROUP (a forked child), or exit. */
static void become(uid_t uid)
{
    gid_t g = GROUP;
    if (setgroups(1, &g) != 0 || setresgid(g, g, g) != 0 || setresuid(uid, uid, uid) != 0)
        _exit(20);
}

static int put_one(const char *path, const char *key, uint32_t seed)
{
    l3_slab_options o = options(path, 0660);
    l3_slabstore *s;
    if (l3_slabstore_open(&o, &s, NULL) != L3_OK)
        return 21;
    uint8_t *pool = aligned_pool(OBJ);
    fill_pattern(pool, OBJ, seed);
    bool ok = false, fail = false;
    l3_io_result r = { .success = &ok, .object_failures = &fail };
    l3_status st = l3_store_batch_put_from(l3_slabstore_store(s), &key, 1, (l3_host_buffer){ pool, OBJ },
                                           &(l3_range){ 0, OBJ }, &r, NULL);
    l3_slabstore_free(s);
    free(pool);
    return st == L3_OK && ok ? 0 : 22;
}

/* A new directory that the test's two users can enter, on disk: under
 * /var/tmp, because the build tree may sit under a directory only its
 * owner can enter (`mktemp -d` makes one 0700). */
static void reachable_dir(char *out, size_t len)
{
    snprintf(out, len, "/var/tmp/l3sec-XXXXXX");
    assert_non_null(mkdtemp(out));
    assert_int_equal(chmod(out, 0711), 0);
}

static void the_group_mode_lets_two_users_of_one_group_share_a_store(void **state)
{
    (void)state;
    char dir[64], path[512];
    reachable_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/sec-group.l3", dir);
    l3_slab_options o = options(path, 0660);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_slabstore_free(s);
    assert_int_equal(mode_of(path), 0660);
    assert_int_equal(chown(path, USER_A, GROUP), 0);
    /* A holds the store open while B attaches to A's shared object. */
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t a = fork();
    if (a == 0) {
        become(USER_A);
        l3_slab_options oa = options(path, 0660);
        l3_slabstore *sa;
        if (l3_slabstore_open(&oa, &sa, NULL) != L3_OK)
            _exit(23);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(24);
        l3_slabstore_free(sa);
        _exit(put_one(path, "grp_a", 1));
    }
    pid_t b = fork();
    if (b == 0) {
        become(USER_B);
        usleep(300000); /* (A is attached by then) */
        int rc = put_one(path, "grp_b", 2);
        _exit(write(go[1], "x", 1) == 1 ? rc : 25);
    }
    int sa, sb;
    assert_int_equal(waitpid(b, &sb, 0), b);
    assert_int_equal(waitpid(a, &sa, 0), a);
    assert_true(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
    assert_true(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    assert_true(exists_key(l3_slabstore_store(s), "grp_a"));
    assert_true(exists_key(l3_slabstore_store(s), "grp_b"));
    l3_slabstore_free(s);
    unlink(path);
    assert_int_equal(rmdir(dir), 0);
}

static int fsck(const char *flag, const char *path)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s %s >/dev/null 2>&1", L3FSCK, flag, path);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static void l3fsck_reports_and_tightens_a_store_open_to_others(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "sec-fsck");
    l3_slab_options o = options(path, 0);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_slabstore_free(s);
    assert_int_equal(fsck("-n", path), 0);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(fsck("-n", path), 4);
    assert_int_equal(fsck("-y", path), 1);
    assert_int_equal(mode_of(path), 0640); /* the group keeps what it had */
    assert_int_equal(fsck("-n", path), 0);
    unlink(path);
}

int main(void)
{
    quiet_logs();
    if (geteuid() != 0) {
        /* Foreign owners and other users need root: say so, do not pretend. */
        fprintf(stderr, "test_security: needs root (fchown, setresuid)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_new_store_and_its_shared_object_are_0600_whatever_the_umask),
        cmocka_unit_test(a_shared_object_that_is_not_the_stores_own_is_refused),
        cmocka_unit_test(the_group_mode_lets_two_users_of_one_group_share_a_store),
        cmocka_unit_test(l3fsck_reports_and_tightens_a_store_open_to_others),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
