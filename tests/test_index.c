/* The slab store's index (store/slab/index.c): lookups by key and by slot id
 * (the slot table's 31 bits of a key's hash), through inserts and
 * backward-shift removals; the walk that checks a table read in place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "format.h"
#include "index.h"
#include "l3_keys.h"
#include "policy.h"

typedef struct table {
    l3_index_meta meta;
    l3_index ix;
} table;

static table *new_table(uint64_t max_entries)
{
    table *t = calloc(1, sizeof *t);
    assert_non_null(t);
    l3_index_format(&t->meta, max_entries);
    t->ix = (l3_index){ .table = calloc(t->meta.mask + 1, sizeof(l3_index_entry)), .meta = &t->meta };
    assert_non_null(t->ix.table);
    return t;
}

static void free_table(table *t)
{
    free(t->ix.table);
    free(t);
}

static l3_index_entry entry(uint64_t hash, uint32_t slab, uint32_t slot)
{
    return (l3_index_entry){ .hash = hash, .crc = (uint32_t)hash ^ 0x5a5a5a5au, .key_len = 8, .slab = slab,
                             .slot = slot, .size = 4096, .seq = slab * 1000ull + slot };
}

static l3_key_id id_of(const l3_index_entry *e)
{
    return (l3_key_id){ .hash = e->hash, .len = e->key_len };
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Every entry is found by key and by (slot id, slab, slot), before and
 * after half of them are removed; removed ones are found neither way. */
static void random_entries_are_found_by_key_and_by_slot_through_removals(void **state)
{
    (void)state;
    enum { N = 5000 };
    table *t = new_table(N);
    l3_index_entry *es = calloc(N, sizeof *es);
    uint64_t x = 88172645463325252ull;
    for (uint32_t i = 0; i < N; i++) {
        es[i] = entry(next_random(&x) | 1, i / 64, i % 64);
        assert_true(l3_index_insert(&t->ix, &es[i]));
    }
    for (uint32_t i = 0; i < N; i += 2)
        l3_index_remove(&t->ix, l3_index_find(&t->ix, id_of(&es[i])));
    for (uint32_t i = 0; i < N; i++) {
        l3_index_entry *byk = l3_index_find(&t->ix, id_of(&es[i]));
        l3_index_entry *bys = l3_index_find_at(&t->ix, l3_slot_id(es[i].hash), es[i].slab, es[i].slot);
        if (i % 2 == 0) {
            assert_null(byk);
            assert_null(bys);
        } else {
            assert_non_null(byk);
            assert_ptr_equal(byk, bys);
            assert_int_equal(bys->seq, es[i].seq);
        }
    }
    free(es);
    free_table(t);
}

/* Keys whose hashes share the slot id's 31 bits are told apart by their
 * slab and slot. */
static void one_slot_id_for_two_keys_is_told_apart_by_the_slot(void **state)
{
    (void)state;
    table *t = new_table(1000);
    l3_index_entry a = entry(0x123456789abcdef1ull, 3, 7), b = entry(0x123456789abcdef1ull ^ 0x10000ull, 4, 9);
    assert_int_equal(l3_slot_id(a.hash), l3_slot_id(b.hash));
    assert_true(l3_index_insert(&t->ix, &a));
    assert_true(l3_index_insert(&t->ix, &b));
    assert_int_equal(l3_index_find_at(&t->ix, l3_slot_id(a.hash), 3, 7)->seq, a.seq);
    assert_int_equal(l3_index_find_at(&t->ix, l3_slot_id(b.hash), 4, 9)->seq, b.seq);
    assert_null(l3_index_find_at(&t->ix, l3_slot_id(a.hash), 3, 8));
    free_table(t);
}

/* A slot id names two possible home slots; a key whose home is the second,
 * with the first empty, is found. */
static void a_key_homed_one_past_its_slot_ids_first_home_is_found(void **state)
{
    (void)state;
    table *t = new_table(1000);
    uint64_t cap = t->meta.mask + 1;
    for (uint64_t j = 1; j < cap; j++) {
        /* The smallest hash whose home is slot j. */
        uint64_t h = (uint64_t)((((unsigned __int128)j << 64) + cap - 1) / cap);
        if (h % (1ull << 33) == 0)
            continue; /* its slot id's first home is j itself */
        memset(t->ix.table, 0, cap * sizeof(l3_index_entry));
        l3_index_format(&t->meta, 1000);
        l3_index_entry e = entry(h, 1, 2);
        assert_true(l3_index_insert(&t->ix, &e));
        assert_int_equal(t->ix.table[j].hash, h); /* home j, and slot j - 1 empty */
        assert_int_equal(t->ix.table[j - 1].hash, 0);
        l3_index_entry *found = l3_index_find_at(&t->ix, l3_slot_id(h), 1, 2);
        assert_non_null(found);
        assert_int_equal(found->hash, h);
        free_table(t);
        return;
    }
    fail_msg("no slot j whose smallest hash is off a 2^33 boundary (capacity %llu)", (unsigned long long)cap);
}

/* Whether walking the whole table in order finds every entry in place. */
static bool walks_clean(const table *t)
{
    l3_index_walk w = { 0 };
    for (uint64_t i = 0; i <= t->meta.mask; i++)
        l3_index_walk_slot(&t->ix, &w, i);
    return l3_index_walk_end(&w);
}

/* A table that inserts built (runs wrapping past the end included) walks
 * clean; an entry moved past an empty slot after its home, or a wrapped
 * one whose run from its home has a hole, does not (a checkpoint image
 * so laid out is refused, not served as misses). */
static void the_walk_finds_entries_a_probe_would_not(void **state)
{
    (void)state;
    table *t = new_table(900);
    uint64_t cap = t->meta.mask + 1;
    /* Hashes homed in the last slot: their run wraps to the table's start. */
    uint64_t last = UINT64_MAX;
    for (uint32_t k = 0; k < 3; k++)
        assert_true(l3_index_insert(&t->ix, &(l3_index_entry){ .hash = last - k, .crc = k, .key_len = 8 }));
    for (uint32_t k = 0; k < 600; k++)
        assert_true(l3_index_insert(&t->ix, &(l3_index_entry){ .hash = (0x9e3779b97f4a7c15ull * (k + 1)) | 1,
                                                                .crc = k, .key_len = 8 }));
    assert_int_equal(l3_index_home(&t->ix, last), cap - 1);
    assert_true(t->ix.table[0].hash && t->ix.table[1].hash); /* wrapped */
    assert_true(walks_clean(t));
    /* Move an entry one slot on into an empty slot: a hole before it now. */
    uint64_t i = 2;
    while (!(t->ix.table[i].hash && !t->ix.table[i + 1].hash && l3_index_home(&t->ix, t->ix.table[i].hash) == i))
        i++;
    t->ix.table[i + 1] = t->ix.table[i];
    memset(&t->ix.table[i], 0, sizeof t->ix.table[i]);
    assert_false(walks_clean(t));
    t->ix.table[i] = t->ix.table[i + 1];
    memset(&t->ix.table[i + 1], 0, sizeof t->ix.table[i + 1]);
    assert_true(walks_clean(t));
    /* A hole in the wrapped run's tail, between its home and the end. */
    l3_index_entry tail = t->ix.table[cap - 1];
    memset(&t->ix.table[cap - 1], 0, sizeof tail);
    assert_false(walks_clean(t));
    t->ix.table[cap - 1] = tail;
    assert_true(walks_clean(t));
    free_table(t);
}

/* One probe finds or adds: a key already there is not added twice, a new
 * one is, and at the bound nothing is. */
static void insert_unique_adds_a_new_key_once_and_stops_at_the_bound(void **state)
{
    (void)state;
    table *t = new_table(1024);
    for (uint32_t k = 0; k < 1024; k++) {
        l3_index_entry e = entry(0x9e3779b97f4a7c15ull * (k + 1) | 1, k / 64, k % 64);
        assert_int_equal(l3_index_insert_unique(&t->ix, &e), L3_INDEX_ADDED);
        assert_int_equal(l3_index_insert_unique(&t->ix, &e), L3_INDEX_PRESENT);
        l3_index_entry *found = l3_index_find(&t->ix, (l3_key_id){ .hash = e.hash, .len = 8 });
        assert_non_null(found);
        assert_int_equal(found->slot, e.slot);
    }
    assert_int_equal(t->meta.count, 1024);
    l3_index_entry more = entry(12345, 99, 1);
    assert_int_equal(l3_index_insert_unique(&t->ix, &more), L3_INDEX_FULL);
    assert_int_equal(t->meta.count, 1024);
    free_table(t);
}

/* A record keeps no key crc32c (written 0) and the entry's sealed crc;
 * a record of an earlier build (the key's crc32c and the payload's) reads
 * back as the same sealed crc, so that a store written before opens warm
 * and serves its keys. */
static void a_record_s_crc_is_sealed_whatever_build_wrote_it(void **state)
{
    (void)state;
    const uint32_t key_crc = 0x1badcafeu, payload_crc = 0x0ddf00du;
    l3_index_entry e = { .hash = 77, .seq = 5, .crc = l3_crc_seal(payload_crc, key_crc), .size = 4096, .key_len = 9 };
    uint8_t rec[L3_CKPT_RECORD];
    l3_ckpt_record_pack(rec, &e);
    uint32_t check;
    memcpy(&check, rec + 16, 4);
    assert_int_equal(check, 0);
    l3_index_entry back;
    assert_true(l3_ckpt_record_unpack(rec, &back));
    assert_int_equal(back.crc, e.crc);
    memcpy(rec + 16, &key_crc, 4); /* an earlier build's record */
    memcpy(rec + 20, &payload_crc, 4);
    assert_true(l3_ckpt_record_unpack(rec, &back));
    assert_int_equal(back.crc, e.crc);
    assert_int_equal(l3_crc_seal(back.crc, key_crc), payload_crc); /* (the payload's, given the key's) */
}

/* A 40-byte entry keeps every number a store writes: a checkpoint record
 * of the largest goes back to the same entry; a record with a number past
 * its field (no store writes one) is refused, not cut short. */
static void an_entry_keeps_the_largest_numbers_and_refuses_larger(void **state)
{
    (void)state;
    l3_index_entry e = { .hash = ~0ull, .seq = L3_SEQ_LIMIT - 1, .ns = L3_MAX_NAMESPACES, .group = 0xfffffffeu,
                         .crc = 0x12345678u, .size = UINT32_MAX, .slab = L3_INDEX_SLABS - 1, .gen = (1u << L3_INDEX_GEN_BITS) - 1,
                         .slot = L3_INDEX_SLOTS - 1, .key_len = L3_OBJECT_KEY_MAX, .flags = L3_ENTRY_SEGMENTED };
    uint8_t rec[L3_CKPT_RECORD];
    l3_ckpt_record_pack(rec, &e);
    l3_index_entry back;
    assert_true(l3_ckpt_record_unpack(rec, &back));
    assert_true(back.hash == e.hash && back.seq == e.seq && back.ns == e.ns && back.group == 0); /* (soft: not kept) */
    assert_true(back.crc == e.crc && back.size == e.size && back.slab == e.slab && back.slot == e.slot);
    assert_true(back.key_len == e.key_len && back.flags == L3_ENTRY_SEGMENTED && back.gen == 0);
    const struct { size_t at, bytes; uint64_t value; } past[] = {
        { 8, 8, L3_SEQ_LIMIT }, { 24, 4, L3_INDEX_SLABS }, { 28, 4, L3_INDEX_SLOTS }, { 38, 2, L3_OBJECT_KEY_MAX + 1 }, { 36, 2, L3_MAX_NAMESPACES + 1 },
    };
    for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
        uint8_t bad[L3_CKPT_RECORD];
        memcpy(bad, rec, sizeof bad);
        memcpy(bad + past[i].at, &past[i].value, past[i].bytes);
        assert_false(l3_ckpt_record_unpack(bad, &back));
    }
    assert_int_equal(l3_index_gen(0x12345678), 0x145678);
}

/* A geometry of more slabs than an entry numbers is refused, saying so;
 * one just under is laid out. */
static void a_geometry_past_the_entrys_slab_numbers_is_refused(void **state)
{
    (void)state;
    l3_geometry g;
    char why[256] = "";
    assert_false(l3_geometry_plan(((uint64_t)L3_INDEX_SLABS + 4096) << 20, 1u << 20, 4096, 0, 0, &g, why, sizeof why));
    assert_non_null(strstr(why, "a larger slab_size"));
    assert_true(l3_geometry_plan((uint64_t)(L3_INDEX_SLABS / 2) << 20, 1u << 20, 4096, 0, 0, &g, why, sizeof why));
    assert_true(g.num_slabs < L3_INDEX_SLABS && g.max_slots < L3_INDEX_SLOTS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_entries_are_found_by_key_and_by_slot_through_removals),
        cmocka_unit_test(one_slot_id_for_two_keys_is_told_apart_by_the_slot),
        cmocka_unit_test(a_key_homed_one_past_its_slot_ids_first_home_is_found),
        cmocka_unit_test(the_walk_finds_entries_a_probe_would_not),
        cmocka_unit_test(insert_unique_adds_a_new_key_once_and_stops_at_the_bound),
        cmocka_unit_test(a_record_s_crc_is_sealed_whatever_build_wrote_it),
        cmocka_unit_test(an_entry_keeps_the_largest_numbers_and_refuses_larger),
        cmocka_unit_test(a_geometry_past_the_entrys_slab_numbers_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
