/* The executor's reference flows that need no fake store, run against the
 * slab disk store on a file, with each engine; and a realistic aligned
 * layout whose pages move zero-copy through registered buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_keys.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define QUERY(id, hash) query((id), &(l3_storage_key){ 0, (hash), 0 }, 1)

typedef struct disk {
    char path[512];
    l3_slabstore *store;
} disk;

static int setup(void **state, l3_engine_kind kind)
{
    disk *d = calloc(1, sizeof *d);
    temp_store_path(d->path, sizeof d->path, "exec");
    l3_slab_options o = test_options(d->path, 16 * MIB, kind);
    l3_error err;
    if (l3_slabstore_open(&o, &d->store, &err) != L3_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return -1;
    }
    *state = d;
    return 0;
}
static int setup_uring(void **state) { return setup(state, L3_ENGINE_IO_URING); }
static int setup_aio(void **state) { return setup(state, L3_ENGINE_LIBAIO); }
static int teardown(void **state)
{
    disk *d = *state;
    l3_slabstore_free(d->store);
    unlink(d->path);
    free(d);
    return 0;
}

static l3_store *shared(void **state) { return borrowed_store(l3_slabstore_store(((disk *)*state)->store)); }

static harness *on_disk(void **state, l3_host_layout layout)
{
    return harness_start_raw(shared(state), CONFIG, layout, l3_monotonic_clock());
}

static void independent_executors_share_objects_through_the_store(void **state)
{
    harness *writer = on_disk(state, test_layout(1, 0, 0));
    harness *reader = on_disk(state, test_layout(1, 0, 0));
    memcpy(writer->pool, "abcdefgh", 8);
    SUBMIT(writer, PUT(1, "shared", 1));
    assert_true(harness_wait(writer, 1)[0].success[0]);
    SUBMIT(reader, GET(1, "shared", 3));
    assert_true(harness_wait(reader, 1)[0].success[0]);
    assert_memory_equal(reader->pool + 48, "abcdefgh", 8);
    static const uint8_t zeros[8];
    assert_memory_equal(reader->pool, zeros, 8);
    harness_free(writer);
    harness_free(reader);
}

static void a_retired_get_miss_is_an_object_failure_not_a_backend_fault(void **state)
{
    harness *h = on_disk(state, test_layout(1, 0, 0));
    SUBMIT(h, GET(1, "evicted", 1));
    l3_completion *miss = harness_wait(h, 1);
    assert_true(miss[0].retired);
    assert_false(miss[0].success[0]);
    assert_true(miss[0].object_failures[0]);
    l3_snapshot snap;
    l3_executor_snapshot(h->executor, &snap);
    assert_string_equal(snap.health_state, "healthy");
    harness_free(h);
}

static void a_put_never_reports_object_failures(void **state)
{
    harness *h = on_disk(state, test_layout(1, 0, 0));
    SUBMIT(h, PUT(1, "a", 1));
    l3_completion *r = harness_wait(h, 1);
    assert_true(r[0].success[0] && r[0].retired && !r[0].object_failures[0]);
    harness_free(h);
}

static void clearing_the_namespace_deletes_its_objects_and_keeps_its_name(void **state)
{
    harness *h = on_disk(state, test_layout(1, 0, 0));
    SUBMIT(h, PUT(1, "h", 1));
    assert_true(harness_wait(h, 1)[0].success[0]);
    char prefix[L3_KEY_PREFIX_LEN + 1], after[L3_KEY_PREFIX_LEN + 1];
    l3_executor_key_prefix(h->executor, prefix);
    assert_true(l3_executor_delete_namespace(h->executor));
    l3_executor_key_prefix(h->executor, after);
    assert_string_equal(prefix, after);
    SUBMIT(h, QUERY(2, "h"));
    assert_false(harness_wait(h, 1)[0].success[0]);
    harness_free(h);
}

static void a_new_weight_version_publishes_under_a_new_namespace(void **state)
{
    harness *h = on_disk(state, test_layout(1, 0, 0));
    l3_executor *e = h->executor;
    SUBMIT(h, PUT(1, "h", 1));
    assert_true(harness_wait(h, 1)[0].success[0]);
    char prefix[L3_KEY_PREFIX_LEN + 1], old[256], new[256];
    l3_executor_key_prefix(e, prefix);
    assert_int_equal(l3_object_key(prefix, "h", 0, 0, 0, old, sizeof old, NULL), L3_OK);
    assert_int_equal(l3_executor_set_weight_version(e, "v2", NULL), L3_OK);
    SUBMIT(h, QUERY(2, "h"));
    assert_false(harness_wait(h, 1)[0].success[0]);
    SUBMIT(h, PUT(3, "h", 1));
    assert_true(harness_wait(h, 1)[0].success[0]);
    l3_executor_key_prefix(e, prefix);
    assert_int_equal(l3_object_key(prefix, "h", 0, 0, 0, new, sizeof new, NULL), L3_OK);
    assert_string_not_equal(old, new);
    l3_store *st = l3_slabstore_store(((disk *)*state)->store);
    assert_true(exists_key(st, old));
    assert_true(exists_key(st, new));
    harness_free(h);
}

static void a_sharded_block_moves_to_its_new_owner_through_the_store(void **state)
{
    harness *writers[2], *readers[2];
    for (uint32_t rank = 0; rank < 2; rank++)
        writers[rank] = on_disk(state, test_layout(2, rank, rank));
    memcpy(writers[1]->pool, "KV01KV01", 8);
    for (int w = 0; w < 2; w++) {
        SUBMIT(writers[w], PUT(1, "h", 2));
        l3_completion *f = harness_wait(writers[w], 1);
        assert_true(f[0].success[0] && f[0].retired);
    }
    l3_slab_stats stats;
    l3_slabstore_stats(((disk *)*state)->store, &stats);
    assert_int_equal(stats.objects, 1);
    for (uint32_t rank = 0; rank < 2; rank++)
        readers[rank] = on_disk(state, test_layout(2, rank, rank));
    for (int r = 0; r < 2; r++) {
        SUBMIT(readers[r], GET(1, "h", 3));
        l3_completion *f = harness_wait(readers[r], 1);
        assert_true(f[0].success[0] && f[0].retired && !f[0].object_failures[0]);
    }
    assert_memory_equal(readers[0]->pool + 24, "KV01KV01", 8);
    for (size_t i = 0; i < readers[1]->pool_len; i++)
        assert_int_equal(readers[1]->pool[i], 0);
    for (int i = 0; i < 2; i++) {
        harness_free(writers[i]);
        harness_free(readers[i]);
    }
}

static void mixed_owner_results_keep_their_logical_order(void **state)
{
    harness *h = on_disk(state, test_layout(2, 0, 0));
    l3_executor *e = h->executor;
    const l3_storage_key keys[] = {
        { 0, "absent-peer", 0 }, { 0, "absent-local", 0 }, { 1, "state", 0 } };
    char name[256];
    assert_int_equal(l3_executor_object_key(e, &keys[2], name, sizeof name, NULL), L3_OK);
    uint8_t *payload = aligned_pool(4096);
    memset(payload, 7, 16);
    bool ok;
    const char *k = name;
    put_keys(l3_slabstore_store(((disk *)*state)->store), &k, 1, payload, 4096,
             &(l3_range){ 0, 16 }, &ok);
    assert_true(ok);
    const int32_t blocks[] = { 2, 3, 1 };
    SUBMIT(h, (l3_operation){ .kind = L3_OP_GET, .op_id = 1, .keys = keys, .num_keys = 3,
                              .host_blocks = blocks, .num_host_blocks = 3 });
    l3_completion *f = harness_wait(h, 1);
    assert_true(f[0].success[0] && !f[0].success[1] && f[0].success[2]);
    assert_true(!f[0].object_failures[0] && f[0].object_failures[1] && !f[0].object_failures[2]);
    assert_memory_equal(h->pool + 8, payload, 16);
    free(payload);
    harness_free(h);
}

/* A realistic pool: two groups of 64 KiB pages, page-aligned. */
static l3_host_layout kv_layout(void)
{
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ .packing = 1, .block_bytes = 65536, .shard_count = 1 };
    l.groups[1] = (l3_group_layout){ .packing = 2, .block_bytes = 32768, .shard_count = 1 };
    l.num_groups = 2;
    l.lcm_block_bytes = 131072;
    l.num_lcm_blocks = 32;
    return l;
}

static void aligned_pages_move_zero_copy_through_the_executor(void **state)
{
    disk *d = *state;
    harness *h = on_disk(state, kv_layout());
    fill_pattern(h->pool, h->pool_len, 77);
    uint8_t *want = malloc(h->pool_len);
    memcpy(want, h->pool, h->pool_len);
    l3_storage_key keys[32];
    int32_t blocks[32];
    char hashes[32][16];
    for (int i = 0; i < 32; i++) {
        snprintf(hashes[i], sizeof hashes[i], "page%d", i);
        keys[i] = (l3_storage_key){ .group = 0, .content_hash = hashes[i], .page_offset = 0 };
        blocks[i] = i + 1;
    }
    SUBMIT(h, (l3_operation){ .kind = L3_OP_PUT, .op_id = 1, .keys = keys, .num_keys = 32,
                              .host_blocks = blocks, .num_host_blocks = 32 });
    l3_completion *c = harness_wait(h, 1);
    for (int i = 0; i < 32; i++)
        assert_true(c[0].success[i]);
    memset(h->pool, 0, h->pool_len);
    SUBMIT(h, (l3_operation){ .kind = L3_OP_GET, .op_id = 2, .keys = keys, .num_keys = 32,
                              .host_blocks = blocks, .num_host_blocks = 32 });
    c = harness_wait(h, 1);
    for (int i = 0; i < 32; i++) {
        assert_true(c[0].success[i]);
        assert_memory_equal(h->pool + (size_t)i * 131072, want + (size_t)i * 131072, 65536);
    }
    l3_slab_stats stats;
    l3_slabstore_stats(d->store, &stats);
    assert_int_equal(stats.unaligned_ios, 0);
    if (strcmp(stats.engine, "io_uring") == 0) {
        /* Payloads and headers all went READ_FIXED/WRITE_FIXED. */
        assert_true(stats.host_fixed);
        assert_true(stats.io_fixed >= 64);
        assert_int_equal(stats.io_unfixed, 0);
    }
    free(want);
    harness_free(h);
}

/* A hybrid pool in two allocations: KV pages in region 0, state blocks
 * in region 1 (a group of its own). Both move through the executor,
 * land where the layout puts them, and go zero-copy. */
static void groups_in_two_regions_move_zero_copy_through_the_executor(void **state)
{
    disk *d = *state;
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ .packing = 1, .block_bytes = 65536, .shard_count = 1, .region = 0 };
    l.groups[1] = (l3_group_layout){ .packing = 1, .block_bytes = 16384, .shard_count = 1, .region = 1 };
    l.num_groups = 2;
    l.lcm_block_bytes = 65536;
    l.num_lcm_blocks = 16;
    size_t kv_len = l3_layout_region_bytes(&l, 0), st_len = l3_layout_region_bytes(&l, 1);
    assert_int_equal(st_len, 16 * 16384);
    uint8_t *kv = aligned_pool(kv_len), *sp = aligned_pool(st_len);
    fill_pattern(kv, kv_len, 31);
    fill_pattern(sp, st_len, 32);
    uint8_t *want_kv = malloc(kv_len), *want_sp = malloc(st_len);
    memcpy(want_kv, kv, kv_len);
    memcpy(want_sp, sp, st_len);
    l3_namespace ns = { .deployment_id = "deployment", .has_draft = false };
    l3_host_buffer regions[2] = { { kv, kv_len }, { sp, st_len } };
    l3_executor *ex;
    l3_error err;
    /* The wrong count or size of regions starts nothing (the store stays ours). */
    l3_store *st = shared(state);
    assert_int_equal(l3_executor_start_regions(st, regions, 1, &l, &ns, "v1", &CONFIG, l3_monotonic_clock(), &ex,
                                               &err), L3_EINVAL);
    l3_host_buffer short_region[2] = { { kv, kv_len }, { sp, st_len - 4096 } };
    assert_int_equal(l3_executor_start_regions(st, short_region, 2, &l, &ns, "v1", &CONFIG, l3_monotonic_clock(),
                                               &ex, &err), L3_EINVAL);
    assert_int_equal(l3_executor_start_regions(st, regions, 2, &l, &ns, "v1", &CONFIG, l3_monotonic_clock(), &ex,
                                               &err), L3_OK);
    harness hh = { .executor = ex, .pool = kv, .pool_len = kv_len }, *h = &hh;
    l3_storage_key keys[16];
    int32_t blocks[16];
    char hashes[16][16];
    for (int i = 0; i < 16; i++) {
        snprintf(hashes[i], sizeof hashes[i], "p%d", i / 2);
        keys[i] = (l3_storage_key){ .group = (uint32_t)(i % 2), .content_hash = hashes[i], .page_offset = 0 };
        blocks[i] = i / 2 + 1;
    }
    SUBMIT(h, (l3_operation){ .kind = L3_OP_PUT, .op_id = 1, .keys = keys, .num_keys = 16,
                              .host_blocks = blocks, .num_host_blocks = 16 });
    l3_completion *c = harness_wait(h, 1);
    for (int i = 0; i < 16; i++)
        assert_true(c[0].success[i]);
    memset(kv, 0, kv_len);
    memset(sp, 0, st_len);
    SUBMIT(h, (l3_operation){ .kind = L3_OP_GET, .op_id = 2, .keys = keys, .num_keys = 16,
                              .host_blocks = blocks, .num_host_blocks = 16 });
    c = harness_wait(h, 1);
    for (int i = 0; i < 16; i++)
        assert_true(c[0].success[i]);
    for (size_t b = 0; b < 8; b++) {
        assert_memory_equal(kv + b * 65536, want_kv + b * 65536, 65536);
        assert_memory_equal(sp + b * 16384, want_sp + b * 16384, 16384);
    }
    assert_int_equal(kv[8 * 65536], 0); /* nothing past what was asked */
    l3_slab_stats stats;
    l3_slabstore_stats(d->store, &stats);
    assert_int_equal(stats.host_regions, 2);
    if (strcmp(stats.engine, "io_uring") == 0) {
        assert_true(stats.host_fixed);
        assert_int_equal(stats.io_unfixed, 0);
    }
    assert_int_equal(l3_executor_close(ex, 5.0, &err), L3_OK);
    l3_executor_free(ex);
    for (size_t i = 0; i < h->num_polls; i++)
        l3_poll_release(&h->polls[i]);
    free(h->got);
    l3_slabstore_stats(d->store, &stats);
    assert_int_equal(stats.host_regions, 0); /* the close unregistered them */
    free(kv);
    free(sp);
    free(want_kv);
    free(want_sp);
}

int main(void)
{
    quiet_logs();
#define T(fn, s) cmocka_unit_test_setup_teardown(fn, s, teardown)
#define ALL(s)                                                                                     \
    {                                                                                              \
        T(independent_executors_share_objects_through_the_store, s),                               \
        T(a_retired_get_miss_is_an_object_failure_not_a_backend_fault, s),                         \
        T(a_put_never_reports_object_failures, s),                                                 \
        T(clearing_the_namespace_deletes_its_objects_and_keeps_its_name, s),                       \
        T(a_new_weight_version_publishes_under_a_new_namespace, s),                                \
        T(a_sharded_block_moves_to_its_new_owner_through_the_store, s),                            \
        T(mixed_owner_results_keep_their_logical_order, s),                                        \
        T(aligned_pages_move_zero_copy_through_the_executor, s),                                   \
        T(groups_in_two_regions_move_zero_copy_through_the_executor, s),                           \
    }
    const struct CMUnitTest uring[] = ALL(setup_uring);
    const struct CMUnitTest aio[] = ALL(setup_aio);
    int failed = cmocka_run_group_tests_name("executor_disk_io_uring", uring, NULL, NULL);
    failed += cmocka_run_group_tests_name("executor_disk_libaio", aio, NULL, NULL);
    return failed;
}
