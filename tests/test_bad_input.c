/* Bad input gives a clear error and changes nothing on disk: keys that are
 * empty or too long, ranges outside the Host buffer, a layout that does not
 * fit the pool, blocks the layout cannot place. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_crc32c.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)

static uint32_t file_crc(const char *path)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    static uint8_t buf[1 << 20];
    uint32_t crc = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        crc = l3_crc32c(crc, buf, (size_t)n);
    close(fd);
    return crc;
}

static void bad_keys_and_ranges_are_refused_before_any_io(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "badinput");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(65536);
    uint32_t before = file_crc(path);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    uint64_t written = stats.bytes_written; /* the store's own metadata, at open */
    static char long_key[L3_OBJECT_KEY_MAX + 2];
    memset(long_key, 'k', L3_OBJECT_KEY_MAX + 1);
    struct { const char *key; l3_range range; size_t pool_len; const char *says; } cases[] = {
        { "", { 0, 4096 }, 65536, "empty" },
        { long_key, { 0, 4096 }, 65536, "longer than" },
        { NULL, { 0, 4096 }, 65536, "NULL" },
        { "ok_key", { 65536 - 100, 4096 }, 65536, "outside" },
        { "ok_key", { UINT64_MAX - 10, 100 }, 65536, "outside" },
        { "ok_key", { 0, 8192 }, 4096, "outside" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool ok = true, fail = true;
        l3_io_result r = { .success = &ok, .object_failures = &fail };
        l3_error err;
        const char *k = cases[i].key;
        l3_host_buffer host = { pool, cases[i].pool_len };
        assert_int_equal(st->ops->batch_put_from(st, &k, 1, host, &cases[i].range, &r, &err), L3_EINVAL);
        assert_non_null(strstr(err.msg, cases[i].says));
        assert_int_equal(st->ops->batch_get_into(st, &k, 1, host, &cases[i].range, &r, &err), L3_EINVAL);
        if (cases[i].range.size == 4096 && cases[i].pool_len == 65536 && cases[i].range.offset == 0) {
            bool flag;
            assert_int_equal(st->ops->batch_exists(st, &k, 1, &flag, &err), L3_EINVAL);
        }
    }
    assert_int_equal(file_crc(path), before);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, 0);
    assert_int_equal(stats.bytes_written, written);
    free(pool);
    l3_slabstore_free(s);
    unlink(path);
}

/* Every batch entry point of `st`, with n = 0 and no arrays (keys,
 * ranges, flags, result arrays all NULL, and then no result at all), and
 * the store's own operations as the executor calls them: L3_OK each. */
static void empty_batches_return_ok(l3_store *st)
{
    l3_host_buffer none = { NULL, 0 };
    l3_io_result empty = { .success = NULL, .object_failures = NULL, .success_len = 7, .object_failures_len = 7 };
    l3_io_result *results[] = { &empty, NULL };
    const l3_store_ops *op = st->ops;
    for (size_t i = 0; i < sizeof results / sizeof *results; i++) {
        l3_io_result *r = results[i];
        assert_int_equal(l3_store_batch_exists(st, NULL, 0, NULL, NULL), L3_OK);
        assert_int_equal(l3_store_batch_lease(st, NULL, 0, 10, NULL, NULL), L3_OK);
        assert_int_equal(l3_store_batch_get_into(st, NULL, 0, none, NULL, r, NULL), L3_OK);
        assert_int_equal(l3_store_batch_put_from(st, NULL, 0, none, NULL, r, NULL), L3_OK);
        assert_int_equal(l3_store_batch_get_into_v(st, NULL, 0, none, NULL, op->batch_get_into_v ? 2 : 1, r, NULL),
                         L3_OK);
        assert_int_equal(l3_store_batch_put_from_v(st, NULL, 0, none, NULL, op->batch_put_from_v ? 2 : 1, r, NULL),
                         L3_OK);
        assert_int_equal(l3_store_batch_delete(st, NULL, 0, NULL, NULL), L3_OK);
        assert_int_equal(op->batch_exists(st, NULL, 0, NULL, NULL), L3_OK);
        assert_int_equal(op->batch_get_into(st, NULL, 0, none, NULL, r, NULL), L3_OK);
        assert_int_equal(op->batch_put_from(st, NULL, 0, none, NULL, r, NULL), L3_OK);
        assert_int_equal(op->batch_delete(st, NULL, 0, NULL, NULL), L3_OK);
        if (op->batch_lease)
            assert_int_equal(op->batch_lease(st, NULL, 0, 10, NULL, NULL), L3_OK);
        if (op->batch_get_into_v)
            assert_int_equal(op->batch_get_into_v(st, NULL, 0, none, NULL, 2, r, NULL), L3_OK);
        if (op->batch_put_from_v)
            assert_int_equal(op->batch_put_from_v(st, NULL, 0, none, NULL, 2, r, NULL), L3_OK);
    }
    assert_int_equal(empty.success_len, 0); /* an empty batch fills nothing */
    assert_int_equal(empty.object_failures_len, 0);
}

/* An empty batch (n = 0) with no arrays does nothing and says L3_OK, on
 * the disk store and the memory store. A zero-length memset or memcpy on
 * a NULL array is undefined behaviour even when it copies nothing: the
 * sanitizer build (UBSan, halting) fails on it. */
static void empty_batches_with_no_arrays_do_nothing(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "emptybatch");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_memstore *m = l3_memstore_new();
    uint8_t *pool = aligned_pool(4096);
    const char *key = "empty_k0";
    bool ok;
    put_keys(l3_slabstore_store(s), &key, 1, pool, 4096, &(l3_range){ 0, 4096 }, &ok);
    put_keys(l3_memstore_store(m), &key, 1, pool, 4096, &(l3_range){ 0, 4096 }, &ok);
    l3_slab_stats before, after;
    l3_slabstore_stats(s, &before);
    uint32_t crc = file_crc(path);
    empty_batches_return_ok(l3_slabstore_store(s));
    empty_batches_return_ok(l3_memstore_store(m));
    l3_slabstore_stats(s, &after);
    assert_int_equal(after.objects, 1);
    assert_int_equal(after.bytes_written, before.bytes_written);
    assert_int_equal(after.bytes_read, before.bytes_read);
    assert_int_equal(file_crc(path), crc);
    assert_true(exists_key(l3_slabstore_store(s), key));
    assert_true(exists_key(l3_memstore_store(m), key));
    free(pool);
    l3_memstore_free(m);
    l3_slabstore_free(s);
    unlink(path);
}

static void a_layout_that_does_not_fit_the_pool_starts_nothing(void **state)
{
    (void)state;
    l3_memstore *m = l3_memstore_new();
    l3_host_layout l = test_layout(1, 0, 0);
    uint8_t pool[96];
    l3_namespace ns = { .deployment_id = "d" };
    l3_executor *e = NULL;
    l3_error err;
    /* A pool smaller than its layout. */
    assert_int_equal(l3_executor_start(l3_memstore_store(m), (l3_host_buffer){ pool, 64 }, &l, &ns, "v1",
                                       &CONFIG, l3_monotonic_clock(), &e, &err),
                     L3_EINVAL);
    assert_non_null(strstr(err.msg, "disagree"));
    assert_null(e);
    /* Groups that do not fit their LCM block. */
    l.lcm_block_bytes = 16;
    assert_int_equal(l3_executor_start(l3_memstore_store(m), (l3_host_buffer){ pool, 64 }, &l, &ns, "v1",
                                       &CONFIG, l3_monotonic_clock(), &e, &err),
                     L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "does not fit"));
    /* A config no scheduler would run. */
    l = test_layout(1, 0, 0);
    l3_executor_config c = CONFIG;
    c.read_workers = 0;
    assert_int_equal(l3_executor_start(l3_memstore_store(m), (l3_host_buffer){ pool, 96 }, &l, &ns, "v1",
                                       &c, l3_monotonic_clock(), &e, &err),
                     L3_EINVAL);
    assert_non_null(strstr(err.msg, "workers"));
    l3_memstore_free(m);
}

static void operations_the_layout_cannot_place_are_refused(void **state)
{
    (void)state;
    harness *h = harness_new(test_store_new(NULL), CONFIG);
    l3_error err;
    struct { uint32_t group; const char *hash; int32_t block; l3_status want; const char *says; } cases[] = {
        { 0, "h", 0, L3_ELAYOUT, "null block" },
        { 0, "h", 5, L3_ELAYOUT, "past the pool" },
        { 0, "h", -3, L3_ELAYOUT, "negative" },
        { 9, "h", 1, L3_ELAYOUT, "unknown cache group" },
        { 0, "", 1, L3_EINVAL, "content hash is empty" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        l3_storage_key k = { cases[i].group, cases[i].hash, 0 };
        l3_operation op = put_op(10 + i, &k, &cases[i].block);
        assert_int_equal(l3_executor_submit(h->executor, &op, 1, &err), cases[i].want);
        assert_non_null(strstr(err.msg, cases[i].says));
    }
    /* Keys and blocks disagree in number. */
    l3_storage_key k = key("h");
    int32_t blocks[2] = { 1, 2 };
    l3_operation op = { .kind = L3_OP_GET, .op_id = 100, .keys = &k, .num_keys = 1,
                        .host_blocks = blocks, .num_host_blocks = 2 };
    assert_int_equal(l3_executor_submit(h->executor, &op, 1, &err), L3_EINVAL);
    assert_non_null(strstr(err.msg, "a Host block per key"));
    /* Nothing reached the store. */
    assert_int_equal(test_store_calls(h->store), 0);
    harness_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_keys_and_ranges_are_refused_before_any_io),
        cmocka_unit_test(empty_batches_with_no_arrays_do_nothing),
        cmocka_unit_test(a_layout_that_does_not_fit_the_pool_starts_nothing),
        cmocka_unit_test(operations_the_layout_cannot_place_are_refused),
    };
    return cmocka_run_group_tests_name("bad_input", tests, NULL, NULL);
}
