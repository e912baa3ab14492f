/* Multi-range (scatter/gather) objects and read leases in the slab store:
 * a page whose bytes are a K and a V range of the Host pool is one object
 * with one header and one crc. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "entries.h"
#include "format.h"
#include "harness.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define MIB (1ull << 20)
#define KIND(state) (*(l3_engine_kind *)*(state))

static void page_keys(char keys[][64], const char **ptrs, size_t n, const char *ns, size_t first)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], 64, "%s_page%zu", ns, first + i);
        ptrs[i] = keys[i];
    }
}

/* Pages of `k` ranges each, laid out as a page-first pool would: page i's
 * range j at j * pool_half + i * stride (K in the first half, V in the
 * second), sizes from `sizes`. */
static void page_ranges(l3_range *r, size_t n, size_t k, const uint64_t *sizes, uint64_t stride,
                        uint64_t pool_half)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < k; j++)
            r[i * k + j] = (l3_range){ j * pool_half + i * stride, sizes[j] };
}

static l3_status put_v(l3_store *st, const char **keys, size_t n, uint8_t *pool, size_t len,
                       const l3_range *r, size_t k, bool *ok)
{
    bool fail[64];
    l3_io_result res = { .success = ok, .object_failures = fail };
    l3_error err;
    l3_status rc = l3_store_batch_put_from_v(st, keys, n, (l3_host_buffer){ pool, len }, r, k, &res, &err);
    if (rc == L3_OK)
        assert_true(res.retired);
    return rc;
}

static l3_status get_v(l3_store *st, const char **keys, size_t n, uint8_t *pool, size_t len,
                       const l3_range *r, size_t k, bool *ok, bool *fail)
{
    l3_io_result res = { .success = ok, .object_failures = fail };
    l3_error err;
    return l3_store_batch_get_into_v(st, keys, n, (l3_host_buffer){ pool, len }, r, k, &res, &err);
}

/* Round trip pages of the given range sizes; returns the store's stats. */
static void round_trip(void **state, size_t k, const uint64_t *sizes, l3_slab_stats *out)
{
    char path[512];
    temp_store_path(path, sizeof path, "multirange");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    const size_t n = 8, half = MIB;
    uint8_t *src = aligned_pool(2 * half), *dst = aligned_pool(2 * half);
    fill_pattern(src, 2 * half, 11);
    l3_range r[8 * 3];
    page_ranges(r, n, k, sizes, 64 * 1024, half / 2);
    char keys[8][64];
    const char *ptrs[8];
    page_keys(keys, ptrs, n, "mr", 0);
    bool ok[8], fail[8];
    assert_int_equal(put_v(st, ptrs, n, src, 2 * half, r, k, ok), L3_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(ok[i]);
    memset(dst, 0xee, 2 * half);
    assert_int_equal(get_v(st, ptrs, n, dst, 2 * half, r, k, ok, fail), L3_OK);
    for (size_t i = 0; i < n; i++) {
        assert_true(ok[i]);
        assert_false(fail[i]);
        for (size_t j = 0; j < k; j++) {
            const l3_range *x = &r[i * k + j];
            assert_memory_equal(dst + x->offset, src + x->offset, x->size);
            assert_int_equal(dst[x->offset + x->size], 0xee); /* nothing past the range */
        }
    }
    l3_slabstore_stats(s, out);
    l3_slabstore_free(s);
    free(src);
    free(dst);
    unlink(path);
}

static void pages_of_k_and_v_ranges_are_one_object_each(void **state)
{
    l3_slab_stats stats;
    const uint64_t kv[] = { 16384, 16384 };
    round_trip(state, 2, kv, &stats);
    assert_int_equal(stats.objects, 8); /* one object per page, not per range */
    assert_int_equal(stats.get_hits, 8);
    assert_int_equal(stats.unaligned_ios, 0);
    assert_int_equal(stats.checksum_failures, 0);
}

static void ranges_of_partial_blocks_round_trip(void **state)
{
    l3_slab_stats stats;
    const uint64_t odd[] = { 5000, 3000, 777 };
    round_trip(state, 3, odd, &stats);
    assert_int_equal(stats.objects, 8);
    assert_int_equal(stats.checksum_failures, 0);
}

/* The K and V ranges of an aligned page-first pool move as fixed-buffer
 * I/O: no submission on unregistered memory. */
static void aligned_pages_use_only_fixed_buffers(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "mrfixed");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_IO_URING);
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    size_t len = 2 * MIB;
    uint8_t *pool = aligned_pool(len);
    fill_pattern(pool, len, 5);
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ pool, len }, NULL), L3_OK);
    const uint64_t kv[] = { 32768, 32768 };
    l3_range r[16];
    page_ranges(r, 8, 2, kv, 32768, MIB);
    char keys[8][64];
    const char *ptrs[8];
    page_keys(keys, ptrs, 8, "fx", 0);
    bool ok[8], fail[8];
    assert_int_equal(put_v(st, ptrs, 8, pool, len, r, 2, ok), L3_OK);
    uint8_t *want = aligned_pool(len);
    memcpy(want, pool, len);
    memset(pool, 0, len);
    assert_int_equal(get_v(st, ptrs, 8, pool, len, r, 2, ok, fail), L3_OK);
    for (int i = 0; i < 16; i++) {
        assert_true(ok[i / 2]);
        assert_memory_equal(pool + r[i].offset, want + r[i].offset, r[i].size);
    }
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.host_fixed);
    assert_true(stats.io_fixed > 0);
    assert_int_equal(stats.io_unfixed, 0);
    assert_int_equal(l3_slabstore_register_host(s, (l3_host_buffer){ 0 }, NULL), L3_OK);
    l3_slabstore_free(s);
    free(pool);
    free(want);
    unlink(path);
}

/* K and V in two allocations (an asymmetric pool): both registered as Host
 * regions, each page one object of a K range in one and a V range in the
 * other, every I/O on fixed buffers; overlapping or too many regions are
 * refused, and clearing them leaves none fixed. */
static void k_and_v_in_two_regions_use_only_fixed_buffers(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "mr2regions");
    l3_slab_options o = test_options(path, 16 * MIB, L3_ENGINE_IO_URING);
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    const size_t klen = MIB, vlen = MIB / 2;
    uint8_t *k = aligned_pool(klen), *v = aligned_pool(vlen);
    fill_pattern(k, klen, 21);
    fill_pattern(v, vlen, 22);
    l3_host_buffer regions[2] = { { k, klen }, { v, vlen } };
    assert_int_equal(l3_store_register_hosts(st, regions, 2, NULL), L3_OK);
    /* The span covers both; each range is an offset from its lowest base. */
    uint8_t *lo = k < v ? k : v, *hi = k + klen > v + vlen ? k + klen : v + vlen;
    l3_range r[16];
    for (size_t i = 0; i < 8; i++) {
        r[2 * i] = (l3_range){ (uint64_t)(k - lo) + i * 65536, 65536 };
        r[2 * i + 1] = (l3_range){ (uint64_t)(v - lo) + i * 32768, 32768 };
    }
    char keys[8][64];
    const char *ptrs[8];
    page_keys(keys, ptrs, 8, "two", 0);
    bool ok[8], fail[8];
    size_t span = (size_t)(hi - lo);
    assert_int_equal(put_v(st, ptrs, 8, lo, span, r, 2, ok), L3_OK);
    uint8_t *wk = malloc(klen), *wv = malloc(vlen);
    memcpy(wk, k, klen);
    memcpy(wv, v, vlen);
    memset(k, 0, klen);
    memset(v, 0, vlen);
    assert_int_equal(get_v(st, ptrs, 8, lo, span, r, 2, ok, fail), L3_OK);
    for (size_t i = 0; i < 8; i++) {
        assert_true(ok[i]);
        assert_memory_equal(k + i * 65536, wk + i * 65536, 65536);
        assert_memory_equal(v + i * 32768, wv + i * 32768, 32768);
    }
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_true(stats.host_fixed);
    assert_int_equal(stats.host_regions, 2);
    assert_true(stats.io_fixed >= 16);
    assert_int_equal(stats.io_unfixed, 0);
    /* Refused: overlapping regions, an empty one, more than the limit. */
    l3_host_buffer overlap[2] = { { k, klen }, { k + 4096, 4096 } };
    assert_int_equal(l3_store_register_hosts(st, overlap, 2, NULL), L3_EINVAL);
    l3_host_buffer empty[1] = { { k, 0 } };
    assert_int_equal(l3_store_register_hosts(st, empty, 1, NULL), L3_EINVAL);
    assert_int_equal(l3_store_register_hosts(st, regions, L3_MAX_HOST_REGIONS + 1, NULL), L3_EINVAL);
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.host_regions, 2); /* a refusal changes nothing */
    assert_int_equal(l3_store_register_hosts(st, NULL, 0, NULL), L3_OK);
    l3_slabstore_stats(s, &stats);
    assert_false(stats.host_fixed);
    assert_int_equal(stats.host_regions, 0);
    l3_slabstore_free(s);
    free(k);
    free(v);
    free(wk);
    free(wv);
    unlink(path);
}

/* A 16 MiB store at `path` (named `name`) with the engine of `state`, and
 * a 1 MiB pool filled with pattern `seed`. */
static l3_slabstore *patterned_store(void **state, const char *name, char *path, size_t path_len, uint8_t **pool,
                                     uint32_t seed)
{
    temp_store_path(path, path_len, name);
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    *pool = aligned_pool(MIB);
    fill_pattern(*pool, MIB, seed);
    return open_test_store(&o);
}

/* A get must ask for the shape the put stored: other range sizes of the
 * same total, or one range, are object failures, and the object stays. */
static void a_get_of_another_shape_fails_and_keeps_the_object(void **state)
{
    char path[512];
    uint8_t *pool;
    l3_slabstore *s = patterned_store(state, "mrshape", path, sizeof path, &pool, 9);
    l3_store *st = l3_slabstore_store(s);
    size_t len = MIB;
    const char *key[] = { "sh_page" };
    l3_range stored[2] = { { 0, 8192 }, { 65536, 4096 } };
    l3_range swapped[2] = { { 0, 4096 }, { 65536, 8192 } };
    l3_range whole[1] = { { 0, 12288 } };
    bool ok[1], fail[1];
    assert_int_equal(put_v(st, key, 1, pool, len, stored, 2, ok), L3_OK);
    assert_true(ok[0]);
    assert_int_equal(get_v(st, key, 1, pool, len, swapped, 2, ok, fail), L3_OK);
    assert_false(ok[0]);
    assert_true(fail[0]);
    assert_int_equal(get_v(st, key, 1, pool, len, whole, 1, ok, fail), L3_OK);
    assert_false(ok[0]);
    assert_true(fail[0]);
    assert_true(exists_key(st, key[0]));
    assert_int_equal(get_v(st, key, 1, pool, len, stored, 2, ok, fail), L3_OK);
    assert_true(ok[0]);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.checksum_failures, 0);
    assert_int_equal(stats.objects, 1);
    /* Shapes the store refuses outright. */
    l3_io_result res = { .success = ok, .object_failures = fail };
    assert_int_equal(l3_store_batch_get_into_v(st, key, 1, (l3_host_buffer){ pool, len }, stored, 0, &res, NULL),
                     L3_EINVAL);
    assert_int_equal(l3_store_batch_put_from_v(st, key, 1, (l3_host_buffer){ pool, len }, stored,
                                               L3_MAX_RANGES_PER_KEY + 1, &res, NULL),
                     L3_EINVAL);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

/* Engine submissions so far (headers and payloads alike). */
static uint64_t submissions(l3_slabstore *s)
{
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    return st.io_fixed + st.io_unfixed;
}

/* With payloads read alone (every object over the device's request
 * size, forced here), a one-range object is one request, checked by its
 * crc; a two-range object is still refused when asked as one range and
 * served as two; the shape is kept by the checkpoint and found again by a
 * crash scan; an earlier build's checkpoint (no shapes) is not used. */
static void check_shapes(l3_slabstore *s, uint8_t *pool, size_t len, const uint8_t *want)
{
    l3_store *st = l3_slabstore_store(s);
    s->max_request = 1; /* every object over it: payloads alone */
    const char *seg[] = { "sh_seg" }, *one[] = { "sh_one" };
    l3_range two[2] = { { 0, 8192 }, { 65536, 8192 } }, whole[1] = { { 0, 16384 } }, single[1] = { { 131072, 16384 } };
    bool ok[1], fail[1];
    memset(pool, 0, len);
    assert_int_equal(get_v(st, seg, 1, pool, len, whole, 1, ok, fail), L3_OK);
    assert_false(ok[0]); /* asked as one range: a miss, never its bytes */
    assert_true(fail[0]);
    assert_int_equal(get_v(st, seg, 1, pool, len, two, 2, ok, fail), L3_OK);
    assert_true(ok[0]);
    assert_memory_equal(pool, want, 8192);
    assert_memory_equal(pool + 65536, want + 65536, 8192);
    uint64_t before = submissions(s);
    assert_int_equal(get_v(st, one, 1, pool, len, single, 1, ok, fail), L3_OK);
    assert_true(ok[0]);
    assert_memory_equal(pool + 131072, want + 131072, 16384);
    assert_int_equal(submissions(s) - before, 1); /* the payload alone */
    s->max_request = 0; /* the device's size unknown: the header is read with it */
    before = submissions(s);
    assert_int_equal(get_v(st, one, 1, pool, len, single, 1, ok, fail), L3_OK);
    assert_true(ok[0]);
    assert_int_equal(submissions(s) - before, 2);
}

/* Rewrite the index entry of key `have` under the hash of key `ask` (of
 * the same length): a collision of their 64-bit hashes, forged. */
static void forge_collision(l3_slabstore *s, const char *have, const char *ask)
{
    l3_key_id h = l3_key_identity(have, strlen(have)), k = l3_key_identity(ask, strlen(ask));
    assert_int_equal(h.len, k.len);
    assert_int_not_equal(h.check, k.check);
    l3_slab_lock(s);
    l3_index_entry *e = l3_index_find(&s->index, h);
    assert_non_null(e);
    l3_index_entry c = *e;
    l3_index_remove(&s->index, e);
    c.hash = k.hash;
    assert_true(l3_index_insert(&s->index, &c));
    l3_slab_slot_ids(s, c.slab)[c.slot] = l3_slot_id(c.hash);
    l3_slab_unlock(s);
}

/* The index finds a key by its hash and length alone, and seals its
 * entry's crc with the key's crc32c: a key that shares another's hash and
 * length finds that key's entry, and is refused its bytes, whether its
 * payload is read alone (no header to compare the keys: its sealed crc
 * fails, and the entry is dropped as if torn) or with its header (a miss
 * that leaves the other key's entry be). */
static void a_colliding_key_is_never_served_another_s_bytes(void **state)
{
    char path[512];
    uint8_t *pool;
    l3_slabstore *s = patterned_store(state, "mrcollide", path, sizeof path, &pool, 5);
    l3_store *st = l3_slabstore_store(s);
    size_t len = MIB;
    l3_range r[1] = { { 0, 16384 } }, into[1] = { { 65536, 16384 } };
    bool ok[1], fail[1];
    for (int alone = 1; alone >= 0; alone--) {
        const char *have[] = { alone ? "collide_a1" : "collide_a0" }, *ask[] = { alone ? "collide_b1" : "collide_b0" };
        assert_int_equal(put_v(st, have, 1, pool, len, r, 1, ok), L3_OK);
        assert_true(ok[0]);
        forge_collision(s, have[0], ask[0]);
        s->max_request = alone ? 1 : 0; /* 1: every payload read alone */
        uint64_t before = submissions(s);
        assert_int_equal(get_v(st, ask, 1, pool, len, into, 1, ok, fail), L3_OK);
        assert_false(ok[0]); /* never the other key's bytes */
        assert_true(fail[0]);
        assert_int_equal(submissions(s) - before, alone ? 1 : 2);
        assert_int_equal(exists_key(st, ask[0]), !alone); /* (the entry it found: dropped, or left be) */
    }
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.objects, 1);
    assert_int_equal(stats.checksum_failures, 1); /* (the payload read alone) */
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

static int crash_after_a_put(l3_slabstore *c, void *arg)
{
    (void)arg;
    uint8_t *pool = aligned_pool(MIB);
    const char *k[] = { "sh_later" };
    l3_range r[1] = { { 0, 4096 } };
    bool ok[1];
    int rc = put_v(l3_slabstore_store(c), k, 1, pool, MIB, r, 1, ok) == L3_OK ? 0 : 6;
    free(pool);
    return rc;
}

static void a_page_s_shape_survives_a_reopen_and_a_crash(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "mrshape2");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    size_t len = MIB;
    uint8_t *pool = aligned_pool(len), *want = aligned_pool(len);
    fill_pattern(want, len, 31);
    memcpy(pool, want, len);
    l3_slabstore *s = open_test_store(&o);
    const char *seg[] = { "sh_seg" }, *one[] = { "sh_one" };
    l3_range two[2] = { { 0, 8192 }, { 65536, 8192 } }, single[1] = { { 131072, 16384 } };
    bool ok[1];
    assert_int_equal(put_v(l3_slabstore_store(s), seg, 1, pool, len, two, 2, ok), L3_OK);
    assert_int_equal(put_v(l3_slabstore_store(s), one, 1, pool, len, single, 1, ok), L3_OK);
    check_shapes(s, pool, len, want);
    l3_slabstore_free(s); /* the checkpoint keeps the shapes */
    s = open_test_store(&o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_true(st.opened_from_checkpoint);
    check_shapes(s, pool, len, want);
    l3_slabstore_free(s);
    forge_checkpoint_version(path, L3_CKPT_PACKED_NOSHAPE); /* an earlier build's: not used */
    s = open_test_store(&o);
    l3_slabstore_stats(s, &st);
    assert_false(st.opened_from_checkpoint);
    check_shapes(s, pool, len, want);
    l3_slabstore_free(s);
    run_killed_writer(&o, crash_after_a_put, NULL); /* a crash scan finds them again */
    s = open_test_store(&o);
    l3_slabstore_stats(s, &st);
    assert_false(st.opened_from_checkpoint);
    check_shapes(s, pool, len, want);
    l3_slabstore_free(s);
    free(pool);
    free(want);
    unlink(path);
}

/* The pages a killed writer adds: keys, pool and their ranges. */
struct second_half {
    const char **keys;
    uint8_t *pool;
    size_t len;
    const l3_range *ranges;
};

static int put_second_half(l3_slabstore *c, void *arg)
{
    struct second_half *h = arg;
    bool ok[8];
    return put_v(l3_slabstore_store(c), h->keys, 8, h->pool, h->len, h->ranges, 2, ok) == L3_OK ? 0 : 6;
}

/* Multi-range objects come back after a clean close (checkpoint) and after
 * a kill (header scan), and l3fsck --verify finds them whole. */
static void pages_survive_a_reopen_and_a_kill(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "mrcrash");
    l3_slab_options o = test_options(path, 16 * MIB, KIND(state));
    size_t len = 2 * MIB;
    uint8_t *pool = aligned_pool(len), *back = aligned_pool(len);
    fill_pattern(pool, len, 21);
    const uint64_t kv[] = { 12288 + 100, 12288 + 100 };
    l3_range r[32];
    page_ranges(r, 16, 2, kv, 16384, MIB);
    char keys[16][64];
    const char *ptrs[16];
    page_keys(keys, ptrs, 16, "cr", 0);
    bool ok[16], fail[16];
    l3_slabstore *s = open_test_store(&o);
    assert_int_equal(put_v(l3_slabstore_store(s), ptrs, 8, pool, len, r, 2, ok), L3_OK);
    l3_slabstore_free(s);
    struct second_half half = { ptrs + 8, pool, len, r + 16 };
    run_killed_writer(&o, put_second_half, &half);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -n --verify %s >/dev/null", L3FSCK, path);
    s = open_test_store(&o);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_false(stats.opened_from_checkpoint);
    assert_int_equal(stats.objects, 16);
    assert_int_equal(get_v(l3_slabstore_store(s), ptrs, 16, back, len, r, 2, ok, fail), L3_OK);
    for (size_t i = 0; i < 16; i++) {
        assert_true(ok[i]);
        for (size_t j = 0; j < 2; j++)
            assert_memory_equal(back + r[i * 2 + j].offset, pool + r[i * 2 + j].offset, kv[j]);
    }
    l3_slabstore_free(s);
    assert_int_equal(system(cmd), 0);
    free(pool);
    free(back);
    unlink(path);
}

/* Fill the store's slabs (1 MiB, 14 objects of 64 KiB each) with `n`
 * objects of namespace `ns`. */
static void fill(l3_store *st, const char *ns, size_t first, size_t n, uint8_t *pool)
{
    for (size_t i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s_obj%zu", ns, first + i);
        const char *p[1] = { key };
        l3_range r[1] = { { 0, 65536 } };
        bool ok[1];
        put_keys(st, p, 1, pool, MIB, r, ok);
    }
}

static size_t count_present(l3_store *st, const char *ns, size_t n)
{
    size_t present = 0;
    for (size_t i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s_obj%zu", ns, i);
        present += exists_key(st, key);
    }
    return present;
}

/* A lease taken by an existence check keeps its objects through eviction
 * pressure; an expired one is simply gone. */
static void a_read_lease_holds_a_page_through_eviction(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "lease");
    l3_slab_options o = slab_count_options(path, 4, KIND(state));
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    uint8_t *pool = aligned_pool(MIB);
    uint32_t per_slab = (uint32_t)(MIB / (65536 + 4096));
    fill(st, "old", 0, per_slab, pool); /* slab 0: the least recent */
    fill(st, "mid", 0, per_slab, pool); /* slab 1 */
    const char *old[] = { "old_obj0" }, *mid[] = { "mid_obj0" }, *none[] = { "no_such_obj" };
    bool flag[1];
    assert_int_equal(l3_store_batch_lease(st, old, 1, 60, flag, NULL), L3_OK);
    assert_true(flag[0]);
    assert_int_equal(l3_store_batch_lease(st, mid, 1, 0.05, flag, NULL), L3_OK);
    assert_true(flag[0]);
    assert_int_equal(l3_store_batch_lease(st, none, 1, 60, flag, NULL), L3_OK);
    assert_false(flag[0]);
    usleep(200 * 1000); /* mid's lease runs out */
    fill(st, "new", 0, 8 * per_slab, pool); /* twice the store's size */
    assert_int_equal(count_present(st, "old", per_slab), per_slab);
    assert_int_equal(count_present(st, "mid", per_slab), 0);
    l3_slab_stats stats;
    l3_slabstore_stats(s, &stats);
    assert_int_equal(stats.put_keys_rejected, 0);
    assert_int_equal(l3_store_batch_lease(st, old, 1, 3601, flag, NULL), L3_EINVAL);
    l3_slabstore_free(s);
    free(pool);
    unlink(path);
}

int main(void)
{
    static l3_engine_kind uring = L3_ENGINE_IO_URING, aio = L3_ENGINE_LIBAIO;
#define PER_ENGINE(k)                                                                            \
    cmocka_unit_test_prestate(pages_of_k_and_v_ranges_are_one_object_each, k),                   \
        cmocka_unit_test_prestate(ranges_of_partial_blocks_round_trip, k),                       \
        cmocka_unit_test_prestate(a_get_of_another_shape_fails_and_keeps_the_object, k),         \
        cmocka_unit_test_prestate(a_page_s_shape_survives_a_reopen_and_a_crash, k),               \
        cmocka_unit_test_prestate(pages_survive_a_reopen_and_a_kill, k),                         \
        cmocka_unit_test_prestate(a_read_lease_holds_a_page_through_eviction, k),                \
        cmocka_unit_test_prestate(a_colliding_key_is_never_served_another_s_bytes, k)
    const struct CMUnitTest tests[] = {
        PER_ENGINE(&uring),
        PER_ENGINE(&aio),
        cmocka_unit_test(aligned_pages_use_only_fixed_buffers),
        cmocka_unit_test(k_and_v_in_two_regions_use_only_fixed_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
