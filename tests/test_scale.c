/* Scale (issue 19): the RAM a store maps follows its index bound (its
 * objects), not its bytes; store.expected_object_size sizes that bound;
 * store.preallocate false makes a sparse file; the index bound evicting
 * while slabs stand free is counted (and said once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "format.h"
#include "index.h"
#include "rules.h"
#include "harness.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define TIB (1ull << 40)

/* A sparse store of `capacity` bytes for objects of about `expected`
 * bytes (0: the default): its stats, the file's allocated bytes. */
static l3_slab_stats sparse_store(uint64_t capacity, uint64_t expected, uint64_t *allocated)
{
    char path[512];
    temp_store_path(path, sizeof path, "scale");
    l3_slab_options o = test_options(path, capacity, L3_ENGINE_AUTO);
    o.slab_size = 64 * MIB;
    o.expected_object_size = expected;
    o.no_preallocate = true;
    l3_slabstore *s = open_test_store(&o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    l3_slabstore_free(s);
    struct stat fst;
    assert_int_equal(stat(path, &fst), 0);
    *allocated = (uint64_t)fst.st_blocks * 512;
    unlink(path);
    return st;
}

/* The shared mapping but the removal feed's ring: a term of its own, 0.5
 * to 4 MiB a store whatever its size (docs/operations.md). */
static double feed_bytes(const l3_slab_stats *st) { return (double)st->removal_feed_slots * 32.0; }

static double per_tb(const l3_slab_stats *st)
{
    return ((double)st->shared_bytes - feed_bytes(st)) / ((double)st->capacity_bytes / 1e12);
}

static void ram_follows_objects_at_the_default_object_size(void **state)
{
    (void)state;
    uint64_t alloc1, alloc4;
    l3_slab_stats one = sparse_store(TIB, 0, &alloc1), four = sparse_store(4 * TIB, 0, &alloc4);
    /* The index is sized for the 1 MiB objects the slabs hold: 63 of a
     * 64 MiB slab, each with its header and summary entry. */
    assert_true(one.max_objects >= TIB / MIB * 62 / 64 && one.max_objects <= TIB / MIB * 63 / 64);
    /* About 66 MB per TB: the formula of docs/operations.md (the index
     * and slot table 51, admission's ghost and the page groups 15). */
    assert_true(per_tb(&one) <= 67e6);
    assert_true(per_tb(&four) <= 67e6);
    /* Linear in the store's size: four times the store, four times the RAM (within 2%). */
    double ratio = ((double)four.shared_bytes - feed_bytes(&four)) / ((double)one.shared_bytes - feed_bytes(&one));
    assert_true(ratio > 3.92 && ratio < 4.08);
    /* At most 72 bytes per object of the bound: a 40-byte entry at a load
     * of 7/8 (45.7, the group tag in it), its slab slot's id (5, a quarter
     * to spare), the ghost's five filters of 10 bits (6.25), the group
     * table (16-byte entries, four for seven objects: 9.1), and the
     * per-slab state (about 4 with 64 MiB slabs of 1 MiB objects). */
    assert_true(((double)four.shared_bytes - feed_bytes(&four)) / (double)four.max_objects <= 72.0);
    /* The feed: 32 bytes a removal, at most 2^17 of them. */
    assert_true(feed_bytes(&one) >= 512.0 * 1024 && feed_bytes(&four) <= 4.0 * MIB);
    /* preallocate false: the file's blocks are the metadata's, not the store's. */
    assert_true(alloc1 < 256 * MIB);
    assert_true(alloc4 < 1024 * MIB);
}

static void small_objects_set_the_expected_size(void **state)
{
    (void)state;
    uint64_t alloc;
    l3_slab_stats st = sparse_store(TIB / 4, 64 * 1024, &alloc);
    assert_true(st.max_objects >= TIB / 4 / (64 * 1024) * 15 / 16); /* (963 of 64 KiB a 64 MiB slab) */
    assert_true(per_tb(&st) <= 0.97e9); /* (docs/operations.md: 0.96 GB per TB at 64 KiB) */
}

/* Put n objects of 4 KiB named "ck-<i>" (bytes from i); each put succeeds. */
static void put_small(l3_slabstore *s, int n)
{
    uint8_t *pool = aligned_pool(4096);
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "ck-%d", i);
        const char *kp = key;
        fill_pattern(pool, 4096, (uint32_t)i);
        bool ok = false;
        put_keys(l3_slabstore_store(s), &kp, 1, pool, 4096, &(l3_range){ 0, 4096 }, &ok);
        assert_true(ok);
    }
    free(pool);
}

/* A store sized for 1 MiB objects that is given 4 KiB ones: the index
 * fills long before the slabs, and those evictions are counted. */
static void the_index_bound_evicts_and_says_so(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "bound");
    l3_slab_options o = test_options(path, 64 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s = open_test_store(&o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.max_objects, 1024); /* 64 MiB / 1 MiB is under the floor of 1024 */
    put_small(s, 3000); /* every put succeeds: the bound evicts, it does not refuse */
    l3_slabstore_stats(s, &st);
    assert_true(st.objects <= 1024);
    assert_true(st.index_bound_evictions > 0);
    assert_true(st.slabs_free > 0); /* evicted early: room was left */
    l3_slabstore_free(s);
    unlink(path);
}

/* Every one of the n objects reads back its own bytes. */
static void expect_small(l3_slabstore *s, int n)
{
    uint8_t *pool = aligned_pool(4096), *want = aligned_pool(4096);
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "ck-%d", i);
        const char *kp = key;
        bool ok = false, fail = false;
        assert_int_equal(get_keys(l3_slabstore_store(s), &kp, 1, pool, 4096, &(l3_range){ 0, 4096 }, &ok, &fail),
                         L3_OK);
        assert_true(ok);
        fill_pattern(want, 4096, (uint32_t)i);
        assert_memory_equal(pool, want, 4096);
    }
    free(pool);
    free(want);
}

/* A store of n objects of 4 KiB closed cleanly, with an index bound of
 * `max_objects` (0: sized for 8 KiB objects); its checkpoint's header. */
static l3_checkpoint_header closed_store(const char *path, l3_slab_options *o, uint64_t max_objects, int n)
{
    *o = test_options(path, 128 * MIB, L3_ENGINE_AUTO);
    o->expected_object_size = 8192;
    o->max_objects = max_objects;
    l3_slabstore *s = open_test_store(o);
    put_small(s, n);
    l3_slabstore_free(s); /* a clean close: the checkpoint */
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    l3_checkpoint_header h;
    peek_file(path, sb.checkpoint_off, &h, sizeof h);
    return h;
}

/* Reopen the store of `o`: it comes back from its checkpoint or not, with
 * the n objects, each byte-exact; the open store. */
static l3_slabstore *reopen_serving(const l3_slab_options *o, bool from_checkpoint, int n)
{
    l3_slabstore *s = open_test_store(o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.opened_from_checkpoint, from_checkpoint);
    assert_int_equal(st.objects, (uint64_t)n);
    expect_small(s, n);
    return s;
}

/* The checkpoint is loaded while it is read, its crc known only at the
 * end: a body that does not check must leave nothing of itself behind,
 * and the scan must bring every object back, once. */
static void a_checkpoint_that_does_not_check_is_undone_and_scanned(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "ckpt");
    l3_slab_options o;
    int n = 3000;
    l3_checkpoint_header h = closed_store(path, &o, 0, n);
    assert_int_equal(h.version, L3_CKPT_PACKED);
    l3_slabstore_free(reopen_serving(&o, true, n));
    /* Flip a byte of the last record's payload crc (offset 20 of 40):
     * nothing checks it but the body's crc, known only after the loader
     * has put every entry back. */
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    uint64_t records = l3_checkpoint_records_at(&h, l3_index_capacity_for(sb.max_objects));
    uint64_t at = sb.checkpoint_off + sb.block_size + records + (h.num_entries - 1) * L3_CKPT_RECORD + 20;
    uint8_t byte;
    peek_file(path, at, &byte, 1);
    byte ^= 0x40;
    poke_file(path, at, &byte, 1);
    l3_slabstore_free(reopen_serving(&o, false, n));
    unlink(path);
}

/* Each entry goes back to its own slot of the index (a mostly full one
 * here, its probe runs long): every object, the counts, and the index
 * working after (a delete, then a put of the same key). */
static void a_packed_checkpoint_puts_every_entry_back_at_its_slot(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "packed");
    l3_slab_options o;
    int n = 3000;
    l3_checkpoint_header h = closed_store(path, &o, 3400, n);
    assert_int_equal(h.version, L3_CKPT_PACKED);
    assert_int_equal(h.num_entries, (uint64_t)n);
    l3_slabstore *s = reopen_serving(&o, true, n);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.payload_bytes, (uint64_t)n * 4096);
    const char *first = "ck-0";
    bool deleted = false;
    assert_int_equal(l3_store_batch_delete(l3_slabstore_store(s), &first, 1, &deleted, NULL), L3_OK);
    assert_true(deleted);
    l3_slabstore_free(s);
    s = open_test_store(&o);
    l3_slabstore_stats(s, &st);
    assert_true(st.opened_from_checkpoint);
    assert_int_equal(st.objects, (uint64_t)n - 1);
    put_small(s, n); /* ck-0 again, the rest already there */
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.objects, (uint64_t)n);
    assert_int_equal(st.put_keys_written, 1);
    expect_small(s, n);
    l3_slabstore_free(s);
    unlink(path);
}

/* A checkpoint an earlier build wrote (48-byte entries) is not read: the
 * store scans once, as after a crash, and serves every object. */
static void an_earlier_builds_checkpoint_is_scanned_instead(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "earlier");
    l3_slab_options o;
    int n = 500;
    assert_int_equal(closed_store(path, &o, 0, n).version, L3_CKPT_PACKED);
    forge_checkpoint_version(path, L3_CKPT_LIST);
    l3_slabstore_free(reopen_serving(&o, false, n));
    unlink(path);
}

/* l3bench --scale (the tool behind docs/performance.md's --scale table) fills a
 * store, and every object comes back by checkpoint, by l3fsck and by a
 * crash scan. */
static void the_scale_tool_fills_and_every_object_comes_back(void **state)
{
    (void)state;
    char dir[512], cmd[1200];
    temp_store_path(dir, sizeof dir, "scale-dir");
    assert_int_equal(mkdir(dir, 0700), 0);
    /* stderr stays the test's: a log line (another store's stale shared object
     * reclaimed, say) must not land in the JSON on stdout. */
    snprintf(cmd, sizeof cmd, "%s --scale 3000,6000 --json --dir %s", L3BENCH, dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t jerr;
    json_t *root = json_loadf(p, 0, &jerr);
    assert_int_equal(pclose(p), 0);
    if (!root)
        fail_msg("l3bench --scale printed no JSON: %s", jerr.text);
    json_t *rows = json_object_get(root, "scale");
    assert_int_equal(json_array_size(rows), 2);
    uint64_t shared[2];
    for (size_t i = 0; i < 2; i++) {
        json_t *r = json_array_get(rows, i);
        json_int_t n = json_integer_value(json_object_get(r, "objects"));
        assert_int_equal(n, 3000 * (json_int_t)(i + 1));
        assert_true(json_is_true(json_object_get(r, "ok")));
        assert_int_equal(json_integer_value(json_object_get(r, "clean_objects")), n);
        assert_int_equal(json_integer_value(json_object_get(r, "scan_objects")), n);
        assert_int_equal(json_integer_value(json_object_get(r, "fsck_objects")), n);
        shared[i] = (uint64_t)json_integer_value(json_object_get(r, "shared_bytes"));
        assert_true(shared[i] > (uint64_t)n * 48); /* at least the index's entries */
    }
    assert_true(shared[1] > shared[0]);
    json_decref(root);
    assert_int_equal(rmdir(dir), 0); /* it left no store behind */
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ram_follows_objects_at_the_default_object_size),
        cmocka_unit_test(small_objects_set_the_expected_size),
        cmocka_unit_test(the_index_bound_evicts_and_says_so),
        cmocka_unit_test(a_checkpoint_that_does_not_check_is_undone_and_scanned),
        cmocka_unit_test(a_packed_checkpoint_puts_every_entry_back_at_its_slot),
        cmocka_unit_test(an_earlier_builds_checkpoint_is_scanned_instead),
        cmocka_unit_test(the_scale_tool_fills_and_every_object_comes_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
