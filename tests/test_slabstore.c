/* The slab disk store on a temporary file, with each engine. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "format.h"
#include "l3_pool.h"
#include "l3_slabstore.h"
#include "harness.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define KIND(state) (*(l3_engine_kind *)*(state))

static void names(char keys[][64], const char **ptrs, size_t n, const char *ns, size_t first)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], 64, "%s_obj%zu|g0|o0|r0", ns, first + i);
        ptrs[i] = keys[i];
    }
}

static void roundtrip_of_aligned_and_partial_objects_is_byte_exact(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "roundtrip");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    /* Sizes: whole blocks, a partial tail, one byte, a large object. */
    const uint64_t sizes[] = { 4096, 65536, 65536 + 100, 1, 300 * 1024 };
    const size_t n = sizeof sizes / sizeof sizes[0];
    size_t pool_len = 2 * MIB;
    uint8_t *src = aligned_pool(pool_len), *dst = aligned_pool(pool_len);
    fill_pattern(src, pool_len, 7);
    l3_range ranges[5], back[5];
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        ranges[i] = (l3_range){ off, sizes[i] };
        back[i] = (l3_range){ pool_len / 2 + off, sizes[i] };
        off = (off + sizes[i] + 4095) / 4096 * 4096;
    }
    char keys[5][64];
    const char *ptrs[5];
    names(keys, ptrs, n, "ns", 0);
    bool ok[5], fail[5];
    put_keys(st, ptrs, n, src, pool_len, ranges, ok);
    for (size_t i = 0; i < n; i++) {
        assert_true(ok[i]);
        assert_true(exists_key(st, ptrs[i]));
    }
    /* The bytes next to each destination range stay untouched. */
    memset(dst, 0xee, pool_len);
    assert_int_equal(get_keys(st, ptrs, n, dst, pool_len, back, ok, fail), L3_OK);
    for (size_t i = 0; i < n; i++) {
        assert_true(ok[i]);
        assert_false(fail[i]);
        assert_memory_equal(dst + back[i].offset, src + ranges[i].offset, sizes[i]);
        uint64_t end = back[i].offset + sizes[i];
        if (i + 1 < n && end < back[i + 1].offset)
            assert_int_equal(dst[end], 0xee);
    }
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, n);
    assert_string_equal(stats.engine, KIND(state) == L3_ENGINE_LIBAIO ? "libaio" : "io_uring");
    assert_int_equal(stats.unaligned_ios, 0);
    assert_int_equal(stats.checksum_failures, 0);
    l3_slabstore_free(s);
    free(src);
    free(dst);
    unlink(path);
}

static void aligned_ranges_use_fixed_buffers_on_io_uring(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "fixed");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_IO_URING);
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    size_t pool_len = 1 * MIB;
    uint8_t *pool = aligned_pool(pool_len);
    fill_pattern(pool, pool_len, 3);
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ pool, pool_len }, NULL), L3_OK);
    char keys[8][64];
    const char *ptrs[8];
    names(keys, ptrs, 8, "fx", 0);
    l3_range ranges[8];
    for (int i = 0; i < 8; i++)
        ranges[i] = (l3_range){ (uint64_t)i * 65536, 65536 };
    bool ok[8], fail[8];
    put_keys(st, ptrs, 8, pool, pool_len, ranges, ok);
    memset(pool, 0, pool_len);
    assert_int_equal(get_keys(st, ptrs, 8, pool, pool_len, ranges, ok, fail), L3_OK);
    uint8_t *want = aligned_pool(pool_len);
    fill_pattern(want, pool_len, 3);
    assert_memory_equal(pool, want, 8 * 65536);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.host_fixed);
    /* Every payload and header went as READ_FIXED/WRITE_FIXED: the pool
     * itself is the DMA buffer, no copy in between. */
    assert_int_equal(stats.unaligned_ios, 0);
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL), L3_OK);
    l3_slabstore_stats(s, &stats);
    assert_false(stats.host_fixed);
    l3_slabstore_free(s);
    free(pool);
    free(want);
    unlink(path);
}

static void a_put_is_create_only(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "createonly");
    l3_slab_options o = test_options(path, 8 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(16384);
    memset(pool, 'A', 4096);
    memset(pool + 4096, 'B', 4096);
    const char *key = "ns_k|g0|o0|r0";
    bool ok, fail;
    put_keys(st, &key, 1, pool, 16384, &(l3_range){ 0, 4096 }, &ok);
    assert_true(ok);
    put_keys(st, &key, 1, pool, 16384, &(l3_range){ 4096, 4096 }, &ok);
    assert_true(ok); /* an existing key is a success without overwrite */
    assert_int_equal(get_keys(st, &key, 1, pool, 16384, &(l3_range){ 8192, 4096 }, &ok, &fail), L3_OK);
    assert_true(ok);
    assert_int_equal(pool[8192], 'A');
    assert_int_equal(pool[8192 + 4095], 'A');
    /* The same key twice in one batch: one object. */
    const char *twice[] = { "ns_t|g0|o0|r0", "ns_t|g0|o0|r0" };
    bool oks[2];
    put_keys(st, twice, 2, pool, 16384, (l3_range[]){ { 0, 4096 }, { 4096, 4096 } }, oks);
    assert_true(oks[0] && oks[1]);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, 2);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static void misses_and_wrong_sizes_are_object_failures(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "miss");
    l3_slab_options o = test_options(path, 8 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(16384);
    const char *key = "ns_k|g0|o0|r0";
    bool ok, fail;
    put_keys(st, &key, 1, pool, 16384, &(l3_range){ 0, 4096 }, &ok);
    const char *keys[] = { "ns_absent|g0|o0|r0", key };
    bool oks[2], fails[2];
    assert_int_equal(get_keys(st, keys, 2, pool, 16384, (l3_range[]){ { 4096, 4096 }, { 8192, 8192 } },
                              oks, fails),
                     L3_OK);
    assert_false(oks[0]);
    assert_true(fails[0]);
    assert_false(oks[1]); /* its size is 4096, not 8192 */
    assert_true(fails[1]);
    /* Bad input: a range outside the Host buffer, an empty key. */
    l3_error err;
    l3_io_result r = { .success = &ok, .object_failures = &fail };
    assert_int_equal(st->ops->batch_get_into(st, &key, 1, (l3_host_buffer){ pool, 16384 },
                                             &(l3_range){ 16000, 4096 }, &r, &err),
                     L3_EINVAL);
    assert_non_null(strstr(err.msg, "outside"));
    const char *empty = "";
    assert_int_equal(st->ops->batch_put_from(st, &empty, 1, (l3_host_buffer){ pool, 16384 },
                                             &(l3_range){ 0, 4096 }, &r, &err),
                     L3_EINVAL);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static void unaligned_host_ranges_round_trip_through_a_bounce(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "unaligned");
    l3_slab_options o = test_options(path, 8 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(65536);
    fill_pattern(pool, 65536, 11);
    const char *keys[] = { "u_a|g0|o0|r0", "u_b|g0|o0|r0" };
    l3_range in[] = { { 1, 5000 }, { 8193, 24 } };
    bool ok[2], fail[2];
    put_keys(st, keys, 2, pool, 65536, in, ok);
    assert_true(ok[0] && ok[1]);
    uint8_t *out = aligned_pool(65536);
    l3_range back[] = { { 40001, 5000 }, { 3, 24 } };
    assert_int_equal(get_keys(st, keys, 2, out, 65536, back, ok, fail), L3_OK);
    assert_true(ok[0] && ok[1]);
    assert_memory_equal(out + 40001, pool + 1, 5000);
    assert_memory_equal(out + 3, pool + 8193, 24);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.unaligned_ios >= 4);
    l3_slabstore_free(s);
    free(pool);
    free(out);
    unlink(path);
}

/* Put `n` 64 KiB objects named ns_obj<first..> from a pattern. */
static void put_many(l3_store *st, const char *ns, size_t first, size_t n, uint32_t seed)
{
    size_t pool_len = 64 * 65536;
    uint8_t *pool = aligned_pool(pool_len);
    char (*keys)[64] = calloc(64, 64);
    const char *ptrs[64];
    for (size_t base = 0; base < n; base += 64) {
        size_t m = n - base < 64 ? n - base : 64;
        names(keys, ptrs, m, ns, first + base);
        l3_range ranges[64];
        for (size_t i = 0; i < m; i++) {
            ranges[i] = (l3_range){ i * 65536, 65536 };
            fill_pattern(pool + i * 65536, 65536, seed + (uint32_t)(first + base + i));
        }
        bool ok[64];
        put_keys(st, ptrs, m, pool, pool_len, ranges, ok);
        for (size_t i = 0; i < m; i++)
            assert_true(ok[i]);
    }
    free(keys);
    free(pool);
}

/* Check objects ns_obj<first..first+n) hold their pattern; returns hits. */
static size_t check_many(l3_store *st, const char *ns, size_t first, size_t n, uint32_t seed)
{
    size_t pool_len = 64 * 65536, hits = 0;
    uint8_t *pool = aligned_pool(pool_len), *want = aligned_pool(65536);
    char (*keys)[64] = calloc(64, 64);
    const char *ptrs[64];
    for (size_t base = 0; base < n; base += 64) {
        size_t m = n - base < 64 ? n - base : 64;
        names(keys, ptrs, m, ns, first + base);
        l3_range ranges[64];
        for (size_t i = 0; i < m; i++)
            ranges[i] = (l3_range){ i * 65536, 65536 };
        bool ok[64], fail[64];
        assert_int_equal(get_keys(st, ptrs, m, pool, pool_len, ranges, ok, fail), L3_OK);
        for (size_t i = 0; i < m; i++) {
            assert_true(ok[i] != fail[i]);
            if (!ok[i])
                continue;
            fill_pattern(want, 65536, seed + (uint32_t)(first + base + i));
            /* Never served with wrong bytes. */
            assert_memory_equal(pool + i * 65536, want, 65536);
            hits++;
        }
    }
    free(keys);
    free(pool);
    free(want);
    return hits;
}

static void a_clean_reopen_restores_every_object_from_the_checkpoint(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "reopen");
    l3_slab_options o = test_options(path, 32 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    put_many(l3_slabstore_store(s), "re", 0, 200, 100);
    l3_slabstore_free(s);
    s = open_test_store(&o);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.opened_from_checkpoint);
    assert_int_equal(stats.objects, 200);
    assert_int_equal(check_many(l3_slabstore_store(s), "re", 0, 200, 100), 200);
    /* It goes on appending where it stopped. */
    put_many(l3_slabstore_store(s), "re", 200, 50, 100);
    l3_slabstore_free(s);
    s = open_test_store(&o);
    assert_int_equal(check_many(l3_slabstore_store(s), "re", 0, 250, 100), 250);
    l3_slabstore_free(s);
    unlink(path);
}

static int add_more(l3_slabstore *c, void *arg)
{
    (void)arg;
    put_many(l3_slabstore_store(c), "cr", 100, 100, 5);
    return 0;
}

static void a_killed_writer_leaves_a_store_that_rebuilds_from_headers(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "crash");
    l3_slab_options o = test_options(path, 32 * MIB, KIND(state));
    /* A clean base, then a child that adds more and is killed without a
     * close. */
    l3_slabstore *s = open_test_store(&o);
    put_many(l3_slabstore_store(s), "cr", 0, 100, 5);
    l3_slabstore_free(s);
    run_killed_writer(&o, add_more, NULL);
    s = open_test_store(&o);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_false(stats.opened_from_checkpoint);
    assert_int_equal(stats.objects, 200);
    assert_int_equal(check_many(l3_slabstore_store(s), "cr", 0, 200, 5), 200);
    l3_slabstore_free(s);
    unlink(path);
}

/* An object header's bytes on a store of 4096-byte blocks. */
#define HEADER_BYTES (4096 * ((L3_OBJ_HEADER_FIXED + L3_OBJECT_KEY_MAX + 4095) / 4096))

/* Device offset of a key's payload, read from the header of each slot of
 * slab 0 (class 16 blocks of 4096). */
static uint64_t payload_offset_of(const char *path, const char *key)
{
    l3_superblock sb;
    peek_file(path, 0, &sb, sizeof sb);
    uint64_t hb = HEADER_BYTES;
    for (uint32_t slab = 0; slab < sb.num_slabs; slab++) {
        for (uint64_t off = 0; off + hb <= sb.slab_size; off += hb + 65536) {
            uint8_t buf[4096];
            uint64_t at = sb.data_off + slab * sb.slab_size + off;
            peek_file(path, at, buf, sizeof buf);
            const l3_object_header *h = (const l3_object_header *)buf;
            if (h->magic == L3_OBJECT_MAGIC && h->key_len == strlen(key) &&
                memcmp(h->key, key, h->key_len) == 0)
                return at + hb;
        }
    }
    fail_msg("no header for %s", key);
    return 0;
}

/* After obj2 of the 4 objects put under `prefix` was damaged on disk: the
 * gets serve the other 3, count one checksum failure and drop obj2 only. */
static void expect_only_obj2_dropped(l3_slabstore *s, const char *prefix)
{
    l3_store *st = l3_slabstore_store(s);
    assert_int_equal(check_many(st, prefix, 0, 4, 9), 3);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.checksum_failures, 1);
    char key[64];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "%s_obj%d|g0|o0|r0", prefix, i);
        assert_int_equal(exists_key(st, key), i != 2);
    }
}

static void a_flipped_payload_bit_is_an_object_failure_and_is_dropped(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "flip");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    put_many(l3_slabstore_store(s), "fl", 0, 4, 9);
    l3_slabstore_free(s);
    uint64_t at = payload_offset_of(path, "fl_obj2|g0|o0|r0") + 1234;
    uint8_t byte;
    peek_file(path, at, &byte, 1);
    byte ^= 0x10;
    poke_file(path, at, &byte, 1);
    s = open_test_store(&o);
    uint64_t cursor = l3_slabstore_removal_start(s, false), missed = 0;
    expect_only_obj2_dropped(s, "fl");
    /* The removal feed names the dropped object, as corrupt. */
    l3_removal rm[4];
    uint8_t id[L3_KEY_ID_BYTES];
    l3_key_id_bytes("fl_obj2|g0|o0|r0", strlen("fl_obj2|g0|o0|r0"), id);
    assert_int_equal(l3_slabstore_removals(s, &cursor, rm, 4, &missed), 1);
    assert_int_equal(rm[0].reason, L3_REMOVED_CORRUPT);
    assert_memory_equal(rm[0].key_id, id, sizeof id);
    l3_slabstore_free(s);
    unlink(path);
}

/* A get reads each object's header with its payload: a header that is not
 * the one the index promises (here a valid header of another key, copied
 * over it, with the payload left intact) fails the get and drops the key. */
static void a_header_that_is_not_the_index_s_is_an_object_failure(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "hdr");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    put_many(l3_slabstore_store(s), "hd", 0, 4, 9);
    l3_slabstore_free(s);
    uint64_t victim = payload_offset_of(path, "hd_obj2|g0|o0|r0") - HEADER_BYTES;
    uint64_t donor = payload_offset_of(path, "hd_obj1|g0|o0|r0") - HEADER_BYTES;
    uint8_t *hdr = malloc(HEADER_BYTES);
    peek_file(path, donor, hdr, HEADER_BYTES);
    poke_file(path, victim, hdr, HEADER_BYTES);
    free(hdr);
    s = open_test_store(&o); /* from the clean checkpoint: no header is read at open */
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.opened_from_checkpoint);
    assert_true(exists_key(l3_slabstore_store(s), "hd_obj2|g0|o0|r0"));
    expect_only_obj2_dropped(s, "hd");
    l3_slabstore_free(s);
    unlink(path);
}

static void a_full_store_evicts_the_least_recently_used_slab(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "evict");
    /* A few 1 MiB slabs, each holding 14 slots of 64 KiB + header. */
    l3_slab_options o = slab_count_options(path, 6, KIND(state));
    o.eviction = L3_EVICT_LRU_SLAB;
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.slabs_total, 6);
    uint32_t per_slab = (uint32_t)(MIB / (65536 + 4096));
    put_many(st, "ev", 0, 6 * per_slab, 1);    /* fills every slab */
    assert_int_equal(check_many(st, "ev", 0, per_slab, 1), per_slab); /* touch slab 0 */
    put_many(st, "ev", 6 * per_slab, per_slab, 1); /* evicts one whole slab */
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.evictions, 1);
    assert_int_equal(stats.evicted_objects, per_slab);
    assert_int_equal(stats.objects, 6 * per_slab);
    assert_int_equal(stats.put_keys_rejected, 0);
    /* The touched first slab survived; the second (least recent) went. */
    assert_int_equal(check_many(st, "ev", 0, per_slab, 1), per_slab);
    assert_int_equal(check_many(st, "ev", per_slab, per_slab, 1), 0);
    assert_int_equal(check_many(st, "ev", 6 * per_slab, per_slab, 1), per_slab);
    /* Steady state: many more puts never fail, the disk never grows. */
    put_many(st, "ev", 7 * per_slab, 20 * per_slab, 1);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.put_keys_rejected, 0);
    assert_true(stats.objects <= 6 * per_slab);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, o.capacity);
    l3_slabstore_free(s);
    unlink(path);
}

/* The default policy: slabs are reused oldest first, and what was read
 * since it was written moves to the head before its slab goes. */
static void a_full_store_reuses_the_oldest_slab_and_keeps_what_was_read(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "fifo");
    l3_slab_options o = slab_count_options(path, 6, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint32_t per_slab = (uint32_t)(MIB / (65536 + 4096));
    put_many(st, "ff", 0, 3 * per_slab, 2);                              /* slabs 0, 1, 2 */
    assert_int_equal(check_many(st, "ff", 0, per_slab, 2), per_slab);  /* read slab 0's */
    put_many(st, "ff", 3 * per_slab, 4 * per_slab, 2); /* needs four slabs: two go */
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.put_keys_rejected, 0);
    assert_int_equal(stats.reinserted_objects, per_slab);
    assert_int_equal(stats.reinserted_bytes, (uint64_t)per_slab * 65536);
    /* The wave needs four slabs and one is kept spare for what moves:
     * three go, oldest first. Slab 0 was oldest but read: its objects
     * moved, byte-exact. Slabs 1 and 2 were unread: gone. */
    assert_int_equal(check_many(st, "ff", 0, per_slab, 2), per_slab);
    assert_int_equal(check_many(st, "ff", per_slab, 2 * per_slab, 2), 0);
    assert_int_equal(check_many(st, "ff", 3 * per_slab, 4 * per_slab, 2), 4 * per_slab);
    assert_int_equal(stats.objects, 5 * per_slab);
    assert_int_equal(stats.evictions, 3);
    /* The moved copies are what a restart finds (the old ones are dead). */
    l3_slabstore_free(s);
    s = open_test_store(&o);
    st = l3_slabstore_store(s);
    assert_int_equal(check_many(st, "ff", 0, per_slab, 2), per_slab);
    l3_slabstore_free(s);
    unlink(path);
}

/* Objects read only right after their write (early in their time) are
 * moved when their slab is reused, as early keeps; moved and never read
 * again, they are judged when their slab goes once more, and with 1 in 8
 * or fewer read again the store stops moving them for a while. */
static void early_keeps_stop_when_they_are_not_read_again(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "early");
    l3_slab_options o = slab_count_options(path, 6, KIND(state));
    o.admission = L3_ADMISSION_ALL;
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint32_t per_slab = (uint32_t)(MIB / (65536 + 4096));
    l3_slab_stats stats;
    size_t next = 0;
    uint64_t moved[10], before = 0, judged = 0;
    for (int cycle = 0; cycle < 10; cycle++) {
        put_many(st, "ek", next, per_slab, 3); /* a slab read right away, then five unread */
        assert_int_equal(check_many(st, "ek", next, per_slab, 3), per_slab);
        for (size_t k = 1; k <= 5; k++) /* (a slab a wave: the read slab goes late in its time) */
            put_many(st, "ek", next + k * per_slab, per_slab, 3);
        l3_slabstore_stats(s, &stats);
        moved[cycle] = stats.early_keeps - before;
        before = stats.early_keeps;
        judged = stats.early_keeps_judged > judged ? stats.early_keeps_judged : judged;
        assert_int_equal(stats.early_keeps_read, 0); /* none read since their move */
        next += 6 * per_slab;
    }
    assert_int_equal(moved[0], per_slab); /* tried from the start: the read slab's objects all moved */
    int paused = 0;
    while (paused < 10 && moved[paused] > 0)
        paused++;
    assert_true(judged > 0); /* judged as their slab came round again, */
    assert_true(paused < 9); /* none read again: they stopped, */
    int again = paused;
    while (again < 10 && moved[again] == 0)
        again++;
    assert_true(again < 10); /* and a new trial came */
    assert_int_equal(stats.put_keys_rejected, 0);
    l3_slabstore_free(s);
    unlink(path);
}

/* Fill three slabs, read the first, then push four slabs' worth: the
 * first slab's objects are moved. */
static int fill_read_and_push(l3_slabstore *c, void *arg)
{
    uint32_t per_slab = *(uint32_t *)arg;
    l3_store *st = l3_slabstore_store(c);
    put_many(st, "fk", 0, 3 * per_slab, 4);
    check_many(st, "fk", 0, per_slab, 4);
    put_many(st, "fk", 3 * per_slab, 4 * per_slab, 4);
    l3_slab_stats stats;
    l3_slabstore_stats(c, &stats);
    return stats.reinserted_objects == per_slab ? 0 : 5;
}

/* A writer killed after reinsertion moved objects: the scan keeps one
 * copy of each (the moved one, by the duplicate rule), byte-exact, and
 * l3fsck finds the store clean. */
static void a_kill_after_reinsertion_keeps_one_good_copy(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "fifocrash");
    l3_slab_options o = slab_count_options(path, 6, KIND(state));
    uint32_t per_slab = (uint32_t)(MIB / (65536 + 4096));
    run_killed_writer(&o, fill_read_and_push, &per_slab);
    l3_slabstore *s = open_test_store(&o);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_false(stats.opened_from_checkpoint);
    assert_int_equal(check_many(l3_slabstore_store(s), "fk", 0, per_slab, 4), per_slab);
    assert_int_equal(check_many(l3_slabstore_store(s), "fk", 3 * per_slab, 4 * per_slab, 4), 4 * per_slab);
    assert_int_equal(stats.checksum_failures, 0);
    l3_slabstore_free(s);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -n %s >/dev/null", L3FSCK, path);
    assert_int_equal(system(cmd), 0);
    unlink(path);
}

/* Over store.write_budget, puts are declined as retired failures (not
 * errors, not object failures), and counted. */
static void puts_over_the_write_budget_are_declined(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "budget");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    o.write_budget = 100 * 1024; /* 100 KiB/s: a bucket of 1000 KiB */
    o.admission = L3_ADMISSION_ALL; /* the bucket alone: no ghost, so no first sightings held back */
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    size_t pool_len = 32 * 65536;
    uint8_t *pool = aligned_pool(pool_len);
    char keys[32][64];
    const char *ptrs[32];
    names(keys, ptrs, 32, "wb", 0);
    l3_range ranges[32];
    for (int i = 0; i < 32; i++)
        ranges[i] = (l3_range){ (uint64_t)i * 65536, 65536 };
    bool ok[32], fail[32];
    l3_io_result res = { .success = ok, .object_failures = fail };
    assert_int_equal(st->ops->batch_put_from(st, ptrs, 32, (l3_host_buffer){ pool, pool_len }, ranges, &res, NULL),
                     L3_OK);
    assert_true(res.retired);
    size_t written = 0;
    for (int i = 0; i < 32; i++) {
        written += ok[i];
        assert_false(fail[i]);
    }
    /* 1000 KiB of bucket holds 14 objects of 64 KiB and their 4 KiB headers. */
    assert_int_equal(written, 14);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.put_keys_over_budget, 32 - 14);
    assert_int_equal(stats.put_keys_rejected, 32 - 14);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static void the_index_bound_evicts_instead_of_growing(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "bound");
    l3_slab_options o = test_options(path, 64 * MIB, KIND(state));
    o.max_objects = 1024;
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(4096 * 64);
    char keys[64][64];
    const char *ptrs[64];
    l3_range ranges[64];
    for (int i = 0; i < 64; i++)
        ranges[i] = (l3_range){ (uint64_t)i * 4096, 4096 };
    for (size_t base = 0; base < 2048; base += 64) {
        names(keys, ptrs, 64, "ib", base);
        bool ok[64];
        put_keys(st, ptrs, 64, pool, 4096 * 64, ranges, ok);
        for (int i = 0; i < 64; i++)
            assert_true(ok[i]);
    }
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.objects <= 1024);
    assert_true(stats.evictions >= 1);
    assert_true(exists_key(st, "ib_obj2047|g0|o0|r0"));
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static int put_remove_put(l3_slabstore *c, void *arg)
{
    (void)arg;
    l3_store *st = l3_slabstore_store(c);
    put_many(st, "gone", 0, 30, 2);
    put_many(st, "kept", 0, 30, 3);
    if (!st->ops->remove_by_prefix(st, "gone_"))
        return 5;
    put_many(st, "gone", 30, 5, 2); /* re-put after the deletion: live */
    return 0;
}

static void removing_a_namespace_survives_a_crash(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "remove");
    l3_slab_options o = test_options(path, 32 * MIB, KIND(state));
    run_killed_writer(&o, put_remove_put, NULL);
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    assert_int_equal(check_many(st, "gone", 0, 30, 2), 0);
    assert_int_equal(check_many(st, "gone", 30, 5, 2), 5);
    assert_int_equal(check_many(st, "kept", 0, 30, 3), 30);
    /* A prefix inside a namespace cannot be decided from the index:
     * refused, and nothing is removed. */
    assert_false(st->ops->remove_by_prefix(st, "kept_obj1"));
    assert_int_equal(check_many(st, "kept", 0, 30, 3), 30);
    assert_true(st->ops->remove_by_prefix(st, "kept_"));
    assert_false(exists_key(st, "kept_obj0|g0|o0|r0"));
    /* Everything: an epoch bump. */
    assert_true(st->ops->remove_by_prefix(st, ""));
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, 0);
    l3_slabstore_free(s);
    s = open_test_store(&o);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, 0);
    l3_slabstore_free(s);
    unlink(path);
}

static void bad_options_create_nothing_on_disk(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "badopts");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    o.slab_size = 3 * MIB; /* not a power of two */
    l3_slabstore *s;
    l3_error err;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "slab_size"));
    assert_int_equal(access(path, F_OK), -1);
    o = test_options(path, 512 * 1024, L3_ENGINE_AUTO); /* too small for one slab */
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECONFIG);
    assert_int_equal(access(path, F_OK), -1);
    o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    o.block_size = 1000;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECONFIG);
    assert_int_equal(access(path, F_OK), -1);
}

static void a_foreign_file_is_never_overwritten(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "foreign");
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    uint8_t junk[65536];
    fill_pattern(junk, sizeof junk, 42);
    assert_int_equal(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    close(fd);
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s;
    l3_error err;
    assert_int_equal(l3_slabstore_open(&o, &s, &err), L3_ECORRUPT);
    assert_non_null(strstr(err.msg, "refusing to overwrite"));
    uint8_t back[65536];
    peek_file(path, 0, back, sizeof back);
    assert_memory_equal(back, junk, sizeof junk);
    unlink(path);
}

static void two_opens_share_one_store_and_the_last_close_checkpoints(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "twice");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_AUTO);
    l3_slabstore *s = open_test_store(&o), *t = open_test_store(&o);
    put_many(l3_slabstore_store(s), "tw", 0, 10, 6);
    /* The second opener sees the first's objects at once: one index. */
    assert_int_equal(check_many(l3_slabstore_store(t), "tw", 0, 10, 6), 10);
    put_many(l3_slabstore_store(t), "tw", 10, 10, 6);
    assert_int_equal(check_many(l3_slabstore_store(s), "tw", 10, 10, 6), 10);
    l3_slabstore_free(s);
    assert_int_equal(check_many(l3_slabstore_store(t), "tw", 0, 20, 6), 20);
    l3_slabstore_free(t);
    /* The last one out wrote the checkpoint. */
    s = open_test_store(&o);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.opened_from_checkpoint);
    assert_int_equal(stats.objects, 20);
    l3_slabstore_free(s);
    /* An exclusive holder (as l3fsck -y) keeps openers out, with a message. */
    int fd = open(path, O_RDONLY);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    o.lock_timeout = 0.2;
    l3_error err;
    assert_int_equal(l3_slabstore_open(&o, &t, &err), L3_EBUSY);
    assert_non_null(strstr(err.msg, "exclusively"));
    close(fd);
    unlink(path);
}

static void a_broken_superblock_copy_is_repaired_from_the_other(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "sbcopy");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    put_many(l3_slabstore_store(s), "sb", 0, 10, 4);
    l3_slabstore_free(s);
    uint8_t junk[64];
    memset(junk, 0x5a, sizeof junk);
    poke_file(path, 16, junk, sizeof junk); /* copy 0's header fields */
    s = open_test_store(&o);
    assert_int_equal(check_many(l3_slabstore_store(s), "sb", 0, 10, 4), 10);
    l3_slabstore_free(s);
    l3_superblock a, b;
    peek_file(path, 0, &a, sizeof a);
    peek_file(path, 4096, &b, sizeof b);
    char why[64];
    assert_true(l3_sb_valid(&a, why, sizeof why));
    assert_true(l3_sb_valid(&b, why, sizeof why));
    assert_int_equal(a.sequence, b.sequence);
    unlink(path);
}

static void a_loop_block_device_holds_a_store(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip_environment("not root: a loop device needs losetup (CI runs it as root)");
    char path[512];
    temp_store_path(path, sizeof path, "loopback");
    int fd = open(path, O_CREAT | O_RDWR, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 48 * MIB), 0);
    close(fd);
    char dev[128] = "";
    if (!loop_attach(path, dev, sizeof dev)) {
        unlink(path);
        skip_environment("losetup does not work here: no loop device");
    }
    l3_slab_options o = test_options(dev, 0, L3_ENGINE_AUTO); /* the device's size */
    l3_slabstore *s;
    l3_error err;
    l3_status st = l3_slabstore_open(&o, &s, &err);
    if (st == L3_OK) {
        l3_slab_stats stats;
        l3_slabstore_stats(s, &stats);
        assert_true(stats.capacity_bytes <= 48 * MIB && stats.slabs_total >= 30);
        put_many(l3_slabstore_store(s), "dev", 0, 100, 8);
        l3_slabstore_free(s);
        st = l3_slabstore_open(&o, &s, &err);
        if (st == L3_OK) {
            l3_slabstore_stats(s, &stats);
            assert_true(stats.opened_from_checkpoint);
            assert_int_equal(check_many(l3_slabstore_store(s), "dev", 0, 100, 8), 100);
            l3_slabstore_free(s);
        }
    }
    loop_detach(dev);
    unlink(path);
    if (st != L3_OK)
        fail_msg("store on %s: %s", dev, err.msg);
}

static int warned;
static void note_warning(const char *level, const char *message, void *ctx)
{
    if (strcmp(level, "warning") == 0 && strstr(message, (const char *)ctx))
        warned = 1;
}

static int memlock_child(const char *path, rlim_t limit, l3_engine_kind kind, const char *want_engine,
                         const char *want_warning)
{
    limit_memlock(limit);
    l3_set_logger(note_warning, (void *)want_warning);
    l3_slab_options o = test_options(path, 16 * MIB, kind);
    o.io_contexts = 2;
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(&o, &s, &err) != L3_OK) {
        fprintf(stderr, "memlock child: %s\n", err.msg);
        return 12;
    }
    size_t pool_len = 4 * MIB;
    uint8_t *pool = aligned_pool(pool_len);
    fill_pattern(pool, pool_len, 21);
    l3_slabstore_register_host(s, (l3_host_buffer){ pool, pool_len }, NULL);
    const char *key = "ml_k|g0|o0|r0";
    bool ok = false, fail = false;
    l3_io_result r = { .success = &ok, .object_failures = &fail };
    l3_store *st = l3_slabstore_store(s);
    if (st->ops->batch_put_from(st, &key, 1, (l3_host_buffer){ pool, pool_len },
                                &(l3_range){ 0, MIB / 2 }, &r, NULL) != L3_OK || !ok)
        return 13;
    if (st->ops->batch_get_into(st, &key, 1, (l3_host_buffer){ pool, pool_len },
                                &(l3_range){ MIB, MIB / 2 }, &r, NULL) != L3_OK || !ok)
        return 14;
    if (memcmp(pool, pool + MIB, MIB / 2) != 0)
        return 15;
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    if (stats.host_fixed || strcmp(stats.engine, want_engine) != 0)
        return 16;
    if (!warned)
        return 17;
    l3_slabstore_free(s);
    return 0;
}

static void run_child(int (*fn)(const char *, rlim_t, l3_engine_kind, const char *, const char *),
                      const char *path, rlim_t limit, l3_engine_kind kind, const char *engine,
                      const char *warning)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fn(path, limit, kind, engine, warning));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(path);
}

/* Under a locked-memory limit (without CAP_IPC_LOCK) the Host pool cannot
 * be registered: the store says so and goes on with plain O_DIRECT into
 * the pool. With a limit too small even for the rings, auto falls back to
 * libaio and says so. */
static void a_memlock_limit_falls_back_visibly(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "memlock");
    run_child(memlock_child, path, 1 * MIB, L3_ENGINE_IO_URING, "io_uring", "RLIMIT_MEMLOCK");
    run_child(memlock_child, path, 8 * 1024, L3_ENGINE_AUTO, "libaio", "falling back to libaio");
}

static char small_pages_log[1024];
static int small_pages_warnings;

static void capture_small_pages(const char *level, const char *message, void *ctx)
{
    (void)ctx;
    if (strcmp(level, "warning") == 0 && strstr(message, "4 KiB pages")) {
        small_pages_warnings++;
        snprintf(small_pages_log, sizeof small_pages_log, "%s", message);
    }
}

/* A Host pool on 4 KiB pages costs split requests: registering one says
 * so, once, naming the device's segment limit; a pool from l3_pool_alloc
 * (huge pages) is registered silently. */
static void a_host_pool_on_small_pages_is_reported_once(void **state)
{
    (void)state;
    if (!l3_pool_huge_pages())
        skip_environment("transparent huge pages are off");
    char path[512];
    temp_store_path(path, sizeof path, "pages");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_IO_URING);
    l3_slabstore *s = open_test_store(&o);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    if (stats.device_max_segments == 0 || l3_pool_is_huge(&s, sizeof s) < 0) {
        l3_slabstore_free(s);
        unlink(path);
        skip_environment("the device's segment limit or /proc/self/smaps is unknown here");
    }
    small_pages_warnings = 0;
    l3_set_logger(capture_small_pages, NULL);
    size_t len = 8 * MIB;
    uint8_t *huge = l3_pool_alloc(len, NULL);
    assert_non_null(huge);
    assert_int_equal(l3_pool_is_huge(huge, len), 1);
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ huge, len }, NULL), L3_OK);
    assert_int_equal(small_pages_warnings, 0);
    uint8_t *small = aligned_pool(len);
    if (l3_pool_is_huge(small, len) != 0) {
        /* THP "always": even malloc'd memory is on huge pages here. */
        quiet_logs();
        l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL);
        l3_slabstore_free(s);
        free(small);
        l3_pool_free(huge, len);
        unlink(path);
        skip_environment("malloc'd memory is huge-page eligible here (THP \"always\"): "
                         "no small pages to report");
    }
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ small, len }, NULL), L3_OK);
    assert_int_equal(small_pages_warnings, 1);
    assert_non_null(strstr(small_pages_log, "l3_pool_alloc"));
    char limit[32];
    snprintf(limit, sizeof limit, "takes %u of them", stats.device_max_segments);
    assert_non_null(strstr(small_pages_log, limit));
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ small, len }, NULL), L3_OK);
    assert_int_equal(small_pages_warnings, 1); /* once */
    l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL);
    quiet_logs();
    l3_slabstore_free(s);
    free(small);
    l3_pool_free(huge, len);
    unlink(path);
}

typedef struct stress {
    l3_store *store;
    int thread;
    atomic_int *wrong;
    atomic_int *hits;
} stress;

static void *stress_thread(void *arg)
{
    stress *t = arg;
    size_t pool_len = 8 * 65536;
    uint8_t *pool = aligned_pool(pool_len), *want = aligned_pool(65536);
    uint32_t x = (uint32_t)t->thread * 7919u + 1;
    for (int round = 0; round < 60; round++) {
        char keys[8][64];
        const char *ptrs[8];
        l3_range ranges[8];
        uint32_t ids[8];
        for (int i = 0; i < 8; i++) {
            x = x * 1103515245u + 12345u;
            ids[i] = (x >> 16) % 150;
            snprintf(keys[i], 64, "st_obj%u|g0|o0|r0", ids[i]);
            ptrs[i] = keys[i];
            ranges[i] = (l3_range){ (uint64_t)i * 65536, 65536 };
        }
        bool ok[8], fail[8];
        l3_io_result r = { .success = ok, .object_failures = fail };
        if (round % 2 == 0) {
            for (int i = 0; i < 8; i++)
                fill_pattern(pool + i * 65536, 65536, ids[i]);
            t->store->ops->batch_put_from(t->store, ptrs, 8, (l3_host_buffer){ pool, pool_len },
                                          ranges, &r, NULL);
        } else {
            memset(pool, 0, pool_len);
            if (t->store->ops->batch_get_into(t->store, ptrs, 8, (l3_host_buffer){ pool, pool_len },
                                              ranges, &r, NULL) != L3_OK)
                continue;
            for (int i = 0; i < 8; i++) {
                if (!ok[i])
                    continue;
                atomic_fetch_add(t->hits, 1);
                fill_pattern(want, 65536, ids[i]);
                if (memcmp(pool + i * 65536, want, 65536) != 0)
                    atomic_fetch_add(t->wrong, 1);
            }
        }
    }
    free(pool);
    free(want);
    return NULL;
}

static void concurrent_puts_and_gets_under_eviction_never_serve_wrong_bytes(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "stress");
    l3_slab_options o = slab_count_options(path, 5, KIND(state)); /* 75 slots for 150 keys: constant eviction */
    l3_slabstore *s = open_test_store(&o);
    atomic_int wrong = 0, hits = 0;
    pthread_t threads[4];
    stress args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (stress){ l3_slabstore_store(s), i, &wrong, &hits };
        assert_int_equal(pthread_create(&threads[i], NULL, stress_thread, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    assert_int_equal(atomic_load(&wrong), 0);
    assert_true(atomic_load(&hits) > 0);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.evictions > 0);
    assert_int_equal(stats.checksum_failures, 0);
    l3_slabstore_free(s);
    unlink(path);
}

static void a_batch_deeper_than_the_queue_is_refilled_as_completions_arrive(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "deep");
    l3_slab_options o = test_options(path, 32 * MIB, KIND(state));
    o.queue_depth = 4; /* 64 keys x 2-3 requests through 4 slots */
    l3_slabstore *s = open_test_store(&o);
    put_many(l3_slabstore_store(s), "dp", 0, 128, 61);
    assert_int_equal(check_many(l3_slabstore_store(s), "dp", 0, 128, 61), 128);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.io_errors, 0);
    l3_slabstore_free(s);
    unlink(path);
}

int main(int argc, char **argv)
{
    quiet_logs();
    static l3_engine_kind uring = L3_ENGINE_IO_URING, aio = L3_ENGINE_LIBAIO;
#define ALL_TESTS(k)                                                                               \
    {                                                                                              \
        cmocka_unit_test_prestate(roundtrip_of_aligned_and_partial_objects_is_byte_exact, k),      \
        cmocka_unit_test_prestate(a_put_is_create_only, k),                                        \
        cmocka_unit_test_prestate(misses_and_wrong_sizes_are_object_failures, k),                  \
        cmocka_unit_test_prestate(unaligned_host_ranges_round_trip_through_a_bounce, k),           \
        cmocka_unit_test_prestate(a_clean_reopen_restores_every_object_from_the_checkpoint, k),   \
        cmocka_unit_test_prestate(a_killed_writer_leaves_a_store_that_rebuilds_from_headers, k),  \
        cmocka_unit_test_prestate(a_flipped_payload_bit_is_an_object_failure_and_is_dropped, k),  \
        cmocka_unit_test_prestate(a_header_that_is_not_the_index_s_is_an_object_failure, k),       \
        cmocka_unit_test_prestate(a_full_store_evicts_the_least_recently_used_slab, k),           \
        cmocka_unit_test_prestate(a_full_store_reuses_the_oldest_slab_and_keeps_what_was_read, k), \
        cmocka_unit_test_prestate(early_keeps_stop_when_they_are_not_read_again, k),                \
        cmocka_unit_test_prestate(a_kill_after_reinsertion_keeps_one_good_copy, k),              \
        cmocka_unit_test_prestate(puts_over_the_write_budget_are_declined, k),                   \
        cmocka_unit_test_prestate(the_index_bound_evicts_instead_of_growing, k),                  \
        cmocka_unit_test_prestate(removing_a_namespace_survives_a_crash, k),                      \
        cmocka_unit_test_prestate(a_broken_superblock_copy_is_repaired_from_the_other, k),        \
        cmocka_unit_test_prestate(concurrent_puts_and_gets_under_eviction_never_serve_wrong_bytes, k), \
        cmocka_unit_test_prestate(a_batch_deeper_than_the_queue_is_refilled_as_completions_arrive, k), \
    }
    const struct CMUnitTest on_uring[] = ALL_TESTS(&uring);
    const struct CMUnitTest on_aio[] = ALL_TESTS(&aio);
    const struct CMUnitTest common[] = {
        cmocka_unit_test(aligned_ranges_use_fixed_buffers_on_io_uring),
        cmocka_unit_test(bad_options_create_nothing_on_disk),
        cmocka_unit_test(a_foreign_file_is_never_overwritten),
        cmocka_unit_test(two_opens_share_one_store_and_the_last_close_checkpoints),
        cmocka_unit_test(a_memlock_limit_falls_back_visibly),
    };
    /* Each its own ctest entry (test_slabstore_loop, test_slabstore_small_pages):
     * skipped where the machine cannot run it. */
    const struct CMUnitTest environment[] = {
        cmocka_unit_test(a_loop_block_device_holds_a_store),
        cmocka_unit_test(a_host_pool_on_small_pages_is_reported_once),
    };
    if (argc > 1)
        return run_environment_case("slabstore", environment, ARRAY_LEN(environment), argv[1]);
    int failed = cmocka_run_group_tests_name("slabstore_io_uring", on_uring, NULL, NULL);
    failed += cmocka_run_group_tests_name("slabstore_libaio", on_aio, NULL, NULL);
    failed += cmocka_run_group_tests_name("slabstore", common, NULL, NULL);
    return failed;
}
