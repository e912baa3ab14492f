/* One store over several devices (store.paths): striping, reopen after a
 * clean close and after a kill, a device missing, failing, swapped or from
 * another store, the config, l3fsck over them (a device that missed a
 * session judged as the store opens it), and (as root, where losetup
 * works) loop devices. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "format.h"
#include "harness.h"
#include "l3_config.h"
#include "l3_metrics.h"
#include "l3_slabstore.h"
#include "slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define OBJ (64u * 1024u)
#define NKEYS 128
#define KIND(state) (*(l3_engine_kind *)*(state))

/* A store over `n` fresh files (paths into `paths`, pointers into `ptrs`). */
static l3_slab_options devices_options(char paths[][512], const char **ptrs, unsigned n, const char *name,
                                       l3_engine_kind kind)
{
    for (unsigned d = 0; d < n; d++) {
        char leaf[96];
        snprintf(leaf, sizeof leaf, "%s-dev%u", name, d);
        temp_store_path(paths[d], 512, leaf);
        ptrs[d] = paths[d];
    }
    l3_slab_options o = test_options(ptrs[0], 24 * MIB, kind);
    o.paths = ptrs;
    o.num_paths = n;
    return o;
}

typedef struct batch {
    char names[NKEYS][64];
    const char *keys[NKEYS];
    l3_range ranges[NKEYS];
    uint8_t *src, *dst;
    bool ok[NKEYS], failed[NKEYS];
} batch;

static batch *new_batch(const char *prefix, uint32_t seed)
{
    batch *b = calloc(1, sizeof *b);
    assert_non_null(b);
    b->src = aligned_pool(NKEYS * OBJ);
    b->dst = aligned_pool(NKEYS * OBJ);
    fill_pattern(b->src, NKEYS * OBJ, seed);
    for (size_t i = 0; i < NKEYS; i++) {
        snprintf(b->names[i], 64, "%s_k%zu", prefix, i);
        b->keys[i] = b->names[i];
        b->ranges[i] = (l3_range){ i * OBJ, OBJ };
    }
    return b;
}

static void free_batch(batch *b)
{
    free(b->src);
    free(b->dst);
    free(b);
}

static void put_batch(l3_slabstore *s, batch *b)
{
    put_keys(l3_slabstore_store(s), b->keys, NKEYS, b->src, NKEYS * OBJ, b->ranges, b->ok);
    for (size_t i = 0; i < NKEYS; i++)
        assert_true(b->ok[i]);
}

/* Get the batch back; every key served is byte-exact. Returns the hits. */
static size_t get_batch(l3_slabstore *s, batch *b)
{
    memset(b->dst, 0, NKEYS * OBJ);
    memset(b->ok, 0, sizeof b->ok);
    memset(b->failed, 0, sizeof b->failed);
    get_keys(l3_slabstore_store(s), b->keys, NKEYS, b->dst, NKEYS * OBJ, b->ranges, b->ok, b->failed);
    size_t hits = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        assert_true(b->ok[i] != b->failed[i]);
        if (b->ok[i]) {
            assert_memory_equal(b->dst + i * OBJ, b->src + i * OBJ, OBJ);
            hits++;
        }
    }
    return hits;
}

static void remove_files(char paths[][512], unsigned n)
{
    for (unsigned d = 0; d < n; d++)
        unlink(paths[d]);
}

/* Reopen the store of `o` whole: no device offline, both batches served
 * byte-exact; then free them and remove the files. */
static void expect_both_back(const l3_slab_options *o, batch *a, batch *b, char paths[][512])
{
    l3_slabstore *s = open_test_store(o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.devices_offline, 0);
    assert_int_equal(get_batch(s, a), NKEYS);
    assert_int_equal(get_batch(s, b), NKEYS);
    l3_slabstore_free(s);
    free_batch(a);
    free_batch(b);
    remove_files(paths, 2);
}

/* The superblock's device field of the store file at `path`. */
static uint32_t device_of(const char *path, uint32_t *num_devices)
{
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    *num_devices = sb.num_devices;
    return sb.device;
}

static void two_files_stripe_evenly_and_round_trip(void **state)
{
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "stripe", KIND(state));
    l3_slabstore *s = open_test_store(&o);
    batch *b = new_batch("stripe", 3);
    put_batch(s, b);
    assert_int_equal(get_batch(s, b), NKEYS);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.num_devices, 2);
    assert_int_equal(st.devices_offline, 0);
    assert_int_equal(st.capacity_bytes, 2 * 24 * MIB);
    uint64_t w0 = st.device[0].bytes_written, w1 = st.device[1].bytes_written;
    uint64_t r0 = st.device[0].bytes_read, r1 = st.device[1].bytes_read;
    assert_true(w0 > NKEYS / 3 * OBJ && w1 > NKEYS / 3 * OBJ);
    assert_true(w0 * 10 <= w1 * 11 && w1 * 10 <= w0 * 11); /* within 10% */
    assert_true(r0 * 10 <= r1 * 11 && r1 * 10 <= r0 * 11);
    assert_string_equal(st.device[1].path, paths[1]);
    assert_string_equal(st.device[1].state, "ok");
    char *m = l3_metrics_of(NULL, s);
    assert_non_null(strstr(m, "l3cache_store_device_up{device=\"1\""));
    free(m);
    l3_slabstore_free(s);
    uint32_t n0, n1;
    assert_int_equal(device_of(paths[0], &n0), 0);
    assert_int_equal(device_of(paths[1], &n1), 1);
    assert_int_equal(n0, 2);
    assert_int_equal(n1, 2);
    free_batch(b);
    remove_files(paths, 2);
}

/* Put `n` objects of `size` bytes (keys `prefix`_i) into `s`; returns the
 * bytes each device took. */
static void put_sized(l3_slabstore *s, const char *prefix, size_t n, size_t size, uint64_t written[2])
{
    uint8_t *src = aligned_pool(n * size);
    fill_pattern(src, n * size, 9);
    char names[8][64];
    const char *keys[8];
    l3_range ranges[8];
    bool ok[8];
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s_%zu", prefix, i);
        keys[i] = names[i];
        ranges[i] = (l3_range){ i * size, size };
    }
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    uint64_t before[2] = { st.device[0].bytes_written, st.device[1].bytes_written };
    put_keys(l3_slabstore_store(s), keys, n, src, n * size, ranges, ok);
    for (size_t i = 0; i < n; i++)
        assert_true(ok[i]);
    l3_slabstore_stats(s, &st);
    for (int d = 0; d < 2; d++)
        written[d] = st.device[d].bytes_written - before[d];
    free(src);
}

/* Placement goes by stripes of L3_STRIPE_BYTES: a batch of small objects
 * smaller than a stripe stays on one device (its requests as large as one
 * device's), a batch of stripe-sized objects spreads over both. */
static void small_objects_keep_a_stripe_together_and_large_ones_spread(void **state)
{
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "chunk", KIND(state));
    o.slab_size = 4 * MIB; /* room for 1 MiB objects */
    l3_slabstore *s = open_test_store(&o);
    uint64_t w[2];
    put_sized(s, "small", 8, OBJ, w); /* 8 x 64 KiB: half a stripe */
    assert_true((w[0] == 0) != (w[1] == 0));
    put_sized(s, "large", 4, MIB, w);
    assert_true(w[0] >= 2 * MIB && w[1] >= 2 * MIB);
    l3_slabstore_free(s);
    remove_files(paths, 2);
}

/* The killed writer's work: put the batch (in the child's copy). */
static int put_then_die(l3_slabstore *s, void *arg)
{
    batch *b = arg;
    l3_io_result r = { .success = b->ok, .object_failures = b->failed };
    l3_store *st = l3_slabstore_store(s);
    if (st->ops->batch_put_from(st, b->keys, NKEYS, (l3_host_buffer){ b->src, NKEYS * OBJ }, b->ranges, &r, NULL) !=
        L3_OK)
        return 5;
    for (size_t i = 0; i < NKEYS; i++)
        if (!b->ok[i])
            return 6;
    return 0;
}

static void a_clean_close_and_a_kill_both_restore_every_devices_objects(void **state)
{
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "reopen", KIND(state));
    l3_slabstore *s = open_test_store(&o);
    batch *b = new_batch("reopen", 5);
    put_batch(s, b);
    l3_slabstore_free(s);
    s = open_test_store(&o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_true(st.opened_from_checkpoint);
    assert_int_equal(get_batch(s, b), NKEYS);
    l3_slabstore_free(s);
    /* Killed with more objects written: the scan finds all on both. */
    batch *more = new_batch("killed", 6);
    run_killed_writer(&o, put_then_die, more);
    s = open_test_store(&o);
    l3_slabstore_stats(s, &st);
    assert_false(st.opened_from_checkpoint);
    assert_int_equal(st.objects, 2 * NKEYS);
    assert_int_equal(get_batch(s, b), NKEYS);
    assert_int_equal(get_batch(s, more), NKEYS);
    free_batch(more);
    l3_slabstore_free(s);
    free_batch(b);
    remove_files(paths, 2);
}

/* The second process of a_second_process_shares_the_store: it opens the
 * store first, puts `mine`, says so, waits, then reads `theirs` (put by
 * the parent through the same shared index). Its exit code says how. */
static int sharing_child(const l3_slab_options *o, batch *mine, batch *theirs, int ready, int go)
{
    l3_slabstore *s;
    if (l3_slabstore_open(o, &s, NULL) != L3_OK)
        return 2;
    l3_store *st = l3_slabstore_store(s);
    l3_io_result r = { .success = mine->ok, .object_failures = mine->failed };
    if (st->ops->batch_put_from(st, mine->keys, NKEYS, (l3_host_buffer){ mine->src, NKEYS * OBJ }, mine->ranges, &r,
                                NULL) != L3_OK)
        return 3;
    char c = 'r';
    if (write(ready, &c, 1) != 1 || read(go, &c, 1) != 1)
        return 4;
    l3_io_result g = { .success = theirs->ok, .object_failures = theirs->failed };
    if (st->ops->batch_get_into(st, theirs->keys, NKEYS, (l3_host_buffer){ theirs->dst, NKEYS * OBJ },
                                theirs->ranges, &g, NULL) != L3_OK)
        return 5;
    for (size_t i = 0; i < NKEYS; i++)
        if (!theirs->ok[i] || memcmp(theirs->dst + i * OBJ, theirs->src + i * OBJ, OBJ) != 0)
            return 6;
    l3_slabstore_free(s);
    return 0;
}

static void a_second_process_shares_the_store(void **state)
{
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "shared", KIND(state));
    l3_slabstore_free(open_test_store(&o)); /* formatted; nothing open across the fork */
    batch *childs = new_batch("child", 13), *parents = new_batch("parent", 14);
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(sharing_child(&o, childs, parents, ready[1], go[0]));
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    l3_slabstore *s = open_test_store(&o); /* joins the child's mapping */
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.attached_processes, 2);
    assert_int_equal(get_batch(s, childs), NKEYS); /* what the child put, through the shared index */
    put_batch(s, parents);
    assert_int_equal(write(go[1], &c, 1), 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    l3_slabstore_free(s);
    for (int k = 0; k < 2; k++) {
        close(ready[k]);
        close(go[k]);
    }
    expect_both_back(&o, childs, parents, paths);
}

/* A two-device store that took batch `b`, closed, its second device
 * moved away (to `moved`), and opened again without it. */
static l3_slabstore *open_without_the_second(l3_slab_options *o, batch *b, char paths[2][512], char *moved,
                                             size_t len)
{
    l3_slabstore *s = open_test_store(o);
    put_batch(s, b);
    l3_slabstore_free(s);
    snprintf(moved, len, "%s.away", paths[1]);
    assert_int_equal(rename(paths[1], moved), 0);
    return open_test_store(o);
}

static void a_missing_device_opens_degraded_and_comes_back(void **state)
{
    char paths[2][512], moved[600];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "missing", KIND(state));
    batch *b = new_batch("missing", 7), *later = new_batch("later", 8);
    /* degraded: said loudly, but open */
    l3_slabstore *s = open_without_the_second(&o, b, paths, moved, sizeof moved);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.devices_offline, 1);
    assert_string_equal(st.device[1].state, "missing");
    size_t hits = get_batch(s, b);
    assert_true(hits >= NKEYS / 3 && hits <= NKEYS * 2 / 3); /* device 0's half */
    put_batch(s, later); /* new objects go to the device that is there */
    assert_int_equal(get_batch(s, later), NKEYS);
    l3_slabstore_free(s);
    assert_int_equal(access(paths[1], F_OK), -1); /* nothing recreated in its place */
    assert_int_equal(rename(moved, paths[1]), 0);
    expect_both_back(&o, b, later, paths); /* whole again: its objects are scanned back */
}

static void a_swapped_or_foreign_device_is_refused(void **state)
{
    char paths[2][512], other[2][512];
    const char *ptrs[2], *optrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "swap", KIND(state));
    l3_slab_options p = devices_options(other, optrs, 2, "foreign", KIND(state));
    l3_slabstore_free(open_test_store(&o));
    l3_slabstore_free(open_test_store(&p));
    const char *swapped[2] = { paths[1], paths[0] }, *mixed[2] = { paths[0], other[1] };
    l3_slabstore *s = NULL;
    l3_error err;
    o.paths = swapped;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "listed at place"));
    o.paths = mixed;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECORRUPT);
    assert_non_null(strstr(err.msg, "belongs to another store"));
    o.paths = ptrs;
    o.num_paths = 1; /* one device of two */
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "2 device(s)"));
    o.num_paths = 2;
    l3_slabstore_free(open_test_store(&o)); /* and the right order still opens */
    remove_files(paths, 2);
    remove_files(other, 2);
}

static void a_device_failing_everything_goes_offline_and_the_rest_serves(void **state)
{
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "failing", KIND(state));
    l3_slabstore *s = open_test_store(&o);
    batch *b = new_batch("failing", 9), *later = new_batch("after", 10);
    put_batch(s, b);
    l3_io_fault f = { .kind = L3_FAULT_EIO, .device = 2 }; /* device 1: every read, write, metadata write */
    l3_slabstore_set_fault(s, &f);
    size_t hits = get_batch(s, b);
    assert_true(hits >= NKEYS / 3 && hits <= NKEYS * 2 / 3);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_string_equal(st.device[1].state, "failed");
    assert_string_equal(st.device[0].state, "ok");
    assert_true(st.device[1].io_errors > 0);
    assert_int_equal(st.device[0].io_errors, 0);
    assert_int_equal(st.objects, hits); /* its objects left the index */
    /* ... each announced lost (its read failed, or its device), none evicted */
    assert_int_equal(st.removals_by_reason[L3_REMOVED_LOST], NKEYS - hits);
    assert_int_equal(st.removals_by_reason[L3_REMOVED_EVICTED], 0);
    put_batch(s, later); /* every put lands on device 0 */
    assert_int_equal(get_batch(s, later), NKEYS);
    assert_int_equal(get_batch(s, b), hits);
    char *m = l3_metrics_of(NULL, s);
    assert_non_null(strstr(m, "state=\"failed\"} 0"));
    free(m);
    l3_slabstore_set_fault(s, NULL);
    l3_slabstore_free(s);
    expect_both_back(&o, b, later, paths); /* the device working again: what it held comes back */
}

static void the_config_takes_store_paths(void **state)
{
    (void)state;
    l3_config c;
    l3_error err;
    const char *two = "{\"store\": {\"paths\": [\"a.store\", \"b.store\"], \"capacity\": \"64MiB\"}}";
    assert_int_equal(l3_config_parse(two, &c, &err), L3_OK);
    l3_slab_options o = l3_config_store_options(&c);
    assert_int_equal(o.num_paths, 2);
    assert_string_equal(o.paths[1], "b.store");
    char *back = l3_config_to_json(&c);
    char *at = strstr(back, "\"paths\"");
    assert_non_null(at);
    assert_non_null(strstr(at, "\"b.store\""));
    assert_null(strstr(back, "\"path\":"));
    free(back);
    l3_config_free(&c);
    const char *both = "{\"store\": {\"path\": \"a.store\", \"paths\": [\"b.store\"], \"capacity\": \"64MiB\"}}";
    assert_int_equal(l3_config_parse(both, &c, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "not both"));
    const char *twice = "{\"store\": {\"paths\": [\"a.store\", \"a.store\"], \"capacity\": \"64MiB\"}}";
    assert_int_equal(l3_config_parse(twice, &c, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "twice"));
}

/* Run l3fsck with `args` (NULL-terminated), its stdout into `out`; the exit code. */
static int run_fsck(char *out, size_t out_len, ...)
{
    char cmd[4096] = L3FSCK;
    va_list ap;
    va_start(ap, out_len);
    for (const char *a; (a = va_arg(ap, const char *));)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " '%s'", a);
    va_end(ap);
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, out_len - 1, p);
    out[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Where device `path`'s journal holds a valid record (its first). */
static uint64_t journal_record_at(const char *path)
{
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        l3_journal_record r;
        uint64_t at = sb.journal_off + (uint64_t)j * L3_JOURNAL_RECORD_BYTES;
        peek_file(path, at, &r, sizeof r);
        if (l3_journal_record_valid(&r))
            return at;
    }
    fail_msg("%s: no journal record", path);
    return 0;
}

/* A removal whose record is damaged on device 0 and blank on device 1
 * (which never took it: it had failed, say) is a damaged record, as on
 * one device: after a crash nothing of the epoch is served, and the
 * removed keys above all never come back (the merge of the devices'
 * journals once dropped the damaged record: the removal was forgotten). */
static void a_journal_record_damaged_where_it_was_written_still_counts(void **state)
{
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "jrnl", KIND(state));
    l3_slabstore *s = open_test_store(&o);
    batch *gone = new_batch("gone", 21), *kept = new_batch("kept", 22), *more = new_batch("more", 23);
    put_batch(s, gone);
    put_batch(s, kept);
    l3_store *st = l3_slabstore_store(s);
    assert_true(st->ops->remove_by_prefix(st, "gone_"));
    l3_slabstore_free(s);
    run_killed_writer(&o, put_then_die, more); /* dirty: no checkpoint proves anything */
    uint64_t at = journal_record_at(paths[0]);
    uint8_t byte, zero[L3_JOURNAL_RECORD_BYTES] = { 0 };
    peek_file(paths[0], at + 40, &byte, 1);
    byte ^= 0x10;
    poke_file(paths[0], at + 40, &byte, 1);
    poke_file(paths[1], at, zero, sizeof zero);
    static char out[1 << 16];
    assert_int_equal(run_fsck(out, sizeof out, "-n", paths[0], paths[1], NULL), 4);
    if (!strstr(out, "journal record") || !strstr(out, "objects: 0 served"))
        fail_msg("l3fsck said: %s", out);
    s = open_test_store(&o);
    assert_int_equal(get_batch(s, gone), 0);
    assert_int_equal(get_batch(s, kept), 0);
    assert_int_equal(get_batch(s, more), 0);
    l3_slabstore_free(s);
    assert_int_equal(run_fsck(out, sizeof out, "-n", paths[0], paths[1], NULL), 0); /* repaired by the open */
    free_batch(gone);
    free_batch(kept);
    free_batch(more);
    remove_files(paths, 2);
}

/* A device that missed a session (it was missing) while the rest closed
 * cleanly: the store opens its slabs by the rules, not from the
 * checkpoint, which lists the other device's objects alone; l3fsck -n
 * judges them the same way and serves what the store serves (it once
 * served the checkpoint's alone: the cut test's "disagreement"). */
static void l3fsck_judges_a_device_that_missed_a_session_by_the_rules(void **state)
{
    char paths[2][512], moved[600], out[16384];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "behind", KIND(state));
    batch *b = new_batch("behind", 9), *later = new_batch("later", 10);
    l3_slabstore *s = open_without_the_second(&o, b, paths, moved, sizeof moved);
    put_batch(s, later);
    l3_slabstore_free(s); /* clean: its checkpoint lists device 0's objects */
    assert_int_equal(rename(moved, paths[1]), 0);
    assert_int_equal(run_fsck(out, sizeof out, "-n", paths[0], paths[1], NULL), 0);
    const char *served = strstr(out, "objects: ");
    assert_non_null(served);
    assert_int_equal(strtoull(served + strlen("objects: "), NULL, 10), 2 * NKEYS);
    expect_both_back(&o, b, later, paths); /* what the store serves */
}

static void l3fsck_checks_all_devices_or_one_alone_and_repairs_with_all(void **state)
{
    static char out[1 << 16];
    char paths[2][512];
    const char *ptrs[2];
    l3_slab_options o = devices_options(paths, ptrs, 2, "fsck", KIND(state));
    l3_slabstore *s = open_test_store(&o);
    batch *b = new_batch("fsck", 12);
    put_batch(s, b);
    l3_slabstore_free(s);
    assert_int_equal(run_fsck(out, sizeof out, "-n", paths[0], paths[1], NULL), 0);
    if (!strstr(out, "devices: 2"))
        fail_msg("l3fsck said: %s", out);
    assert_int_equal(run_fsck(out, sizeof out, "-n", paths[1], paths[0], NULL), 0); /* any order */
    assert_int_equal(run_fsck(out, sizeof out, "-n", paths[1], NULL), 0);            /* one alone */
    assert_non_null(strstr(out, "1 of the store's 2 devices"));
    assert_int_equal(run_fsck(out, sizeof out, "-n", "--json", paths[1], NULL), 0);
    char *devs = strstr(out, "\"devices\"");
    assert_non_null(devs); /* by place: device 0 not given, device 1 the path */
    assert_non_null(strstr(devs, "null"));
    assert_non_null(strstr(devs, paths[1]));
    assert_int_equal(run_fsck(out, sizeof out, "-y", paths[1], NULL), 8);            /* no repair so */
    /* Slab 1 is device 1's first: break its first object's header. */
    l3_superblock sb;
    peek_file(paths[1], 0, &sb, sizeof sb);
    peek_file(paths[1], sb.data_off + 64, out, 8);
    out[0] ^= 0x5a;
    poke_file(paths[1], sb.data_off + 64, out, 8);
    assert_int_equal(run_fsck(out, sizeof out, "-n", "--headers", paths[0], paths[1], NULL), 4);
    assert_int_equal(run_fsck(out, sizeof out, "-y", paths[0], paths[1], NULL), 1);
    assert_int_equal(run_fsck(out, sizeof out, "-n", "--headers", paths[0], paths[1], NULL), 0);
    s = open_test_store(&o);
    assert_int_equal(get_batch(s, b), NKEYS - 1); /* that object alone is gone */
    l3_slabstore_free(s);
    free_batch(b);
    remove_files(paths, 2);
}

static void two_loop_devices_round_trip_and_reopen(void **state)
{
    if (geteuid() != 0)
        skip_environment("not root: the loop-device case needs losetup (CI runs it as root)");
    char files[2][512], devs[2][128];
    const char *ptrs[2];
    bool attached[2] = { false, false };
    for (unsigned d = 0; d < 2; d++) {
        char leaf[32];
        snprintf(leaf, sizeof leaf, "loop-dev%u", d);
        temp_store_path(files[d], sizeof files[d], leaf);
        FILE *f = fopen(files[d], "w");
        assert_non_null(f);
        assert_int_equal(ftruncate(fileno(f), (off_t)(32 * MIB)), 0);
        fclose(f);
        attached[d] = loop_attach(files[d], devs[d], sizeof devs[d]);
        ptrs[d] = devs[d];
    }
    bool both = attached[0] && attached[1];
    if (both) {
        l3_slab_options o = test_options(ptrs[0], 0, KIND(state));
        o.paths = ptrs;
        o.num_paths = 2;
        l3_slabstore *s = open_test_store(&o);
        batch *b = new_batch("loop", 11);
        put_batch(s, b);
        l3_slab_stats st;
        l3_slabstore_stats(s, &st);
        uint64_t w0 = st.device[0].bytes_written, w1 = st.device[1].bytes_written;
        assert_true(w0 * 10 <= w1 * 11 && w1 * 10 <= w0 * 11);
        l3_slabstore_free(s);
        s = open_test_store(&o);
        assert_int_equal(get_batch(s, b), NKEYS);
        l3_slabstore_free(s);
        free_batch(b);
    }
    for (unsigned d = 0; d < 2; d++) {
        if (attached[d])
            loop_detach(devs[d]);
        unlink(files[d]);
    }
    if (!both)
        skip_environment("losetup does not work here: the loop-device case did not run");
}

int main(int argc, char **argv)
{
    static l3_engine_kind uring = L3_ENGINE_IO_URING, aio = L3_ENGINE_LIBAIO;
#define ENGINE_TESTS(k)                                                                                 \
    cmocka_unit_test_prestate(two_files_stripe_evenly_and_round_trip, k),                               \
        cmocka_unit_test_prestate(a_device_failing_everything_goes_offline_and_the_rest_serves, k),          \
        cmocka_unit_test_prestate(small_objects_keep_a_stripe_together_and_large_ones_spread, k)
    const struct CMUnitTest tests[] = {
        ENGINE_TESTS(&uring),
        ENGINE_TESTS(&aio),
        cmocka_unit_test_prestate(a_clean_close_and_a_kill_both_restore_every_devices_objects, &uring),
        cmocka_unit_test_prestate(a_missing_device_opens_degraded_and_comes_back, &uring),
        cmocka_unit_test_prestate(a_second_process_shares_the_store, &uring),
        cmocka_unit_test_prestate(a_swapped_or_foreign_device_is_refused, &uring),
        cmocka_unit_test_prestate(a_journal_record_damaged_where_it_was_written_still_counts, &uring),
        cmocka_unit_test(the_config_takes_store_paths),
        cmocka_unit_test_prestate(l3fsck_checks_all_devices_or_one_alone_and_repairs_with_all, &uring),
        cmocka_unit_test_prestate(l3fsck_judges_a_device_that_missed_a_session_by_the_rules, &uring),
    };
    /* Its own ctest entry, test_devices_loop (skipped where it cannot run). */
    const struct CMUnitTest environment[] = {
        cmocka_unit_test_prestate(two_loop_devices_round_trip_and_reopen, &uring),
    };
    if (argc > 1)
        return run_environment_case("devices", environment, ARRAY_LEN(environment), argv[1]);
    return cmocka_run_group_tests_name("devices", tests, NULL, NULL);
}
