/* The Host layout (docs/SEMANTICS.md, "Host layout"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "l3_layout.h"

/* The reference test layout: group 0 8-byte blocks (sharded over D), group
 * 1 16-byte blocks, one each per 24-byte LCM block, 4 LCM blocks. */
static l3_host_layout ref(uint32_t d, uint32_t owner, uint32_t tp)
{
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ 1, 8, d, 0 };
    l.groups[1] = (l3_group_layout){ 1, 16, 1, 0 };
    l.num_groups = 2;
    l.lcm_block_bytes = 24;
    l.num_lcm_blocks = 4;
    l.owner_rank = owner;
    l.tp_rank = tp;
    return l;
}

static void the_null_block_is_an_error(void **state)
{
    (void)state;
    l3_host_layout l = ref(1, 0, 0);
    bool owned;
    l3_range r;
    l3_error err;
    assert_int_equal(l3_layout_owned_range(&l, 0, 0, &owned, &r, &err), L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "null block"));
    assert_int_equal(l3_layout_owned_range(&l, 0, -1, &owned, &r, NULL), L3_ELAYOUT);
}

static void a_block_past_the_pool_is_an_error(void **state)
{
    (void)state;
    l3_host_layout l = ref(1, 0, 0);
    bool owned;
    l3_range r;
    assert_int_equal(l3_layout_owned_range(&l, 0, 4, &owned, &r, NULL), L3_OK);
    assert_true(owned);
    assert_int_equal(r.offset, 72);
    assert_int_equal(l3_layout_owned_range(&l, 0, 5, &owned, &r, NULL), L3_ELAYOUT);
    /* Sharded over 2: 4 LCM blocks x packing 1 x 2 owners = 8 blocks. */
    l = ref(2, 1, 1);
    assert_int_equal(l3_layout_owned_range(&l, 0, 8, &owned, &r, NULL), L3_OK);
    assert_true(owned);
    assert_int_equal(r.offset, 72);
    assert_int_equal(l3_layout_owned_range(&l, 0, 9, &owned, &r, NULL), L3_ELAYOUT);
}

static void group_bases_sit_side_by_side(void **state)
{
    (void)state;
    l3_host_layout l = ref(1, 0, 0);
    assert_int_equal(l3_layout_group_base(&l, 0), 0);
    assert_int_equal(l3_layout_group_base(&l, 1), 8);
    bool owned;
    l3_range r;
    assert_int_equal(l3_layout_owned_range(&l, 1, 3, &owned, &r, NULL), L3_OK);
    assert_true(owned);
    assert_int_equal(r.offset, 2 * 24 + 8);
    assert_int_equal(r.size, 16);
    assert_int_equal(l3_layout_bytes(&l), 96);
}

static void packing_places_children_inside_the_lcm_block(void **state)
{
    (void)state;
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ 4, 8, 1, 0 };
    l.groups[1] = (l3_group_layout){ 2, 16, 1, 0 };
    l.num_groups = 2;
    l.lcm_block_bytes = 64;
    l.num_lcm_blocks = 2;
    assert_int_equal(l3_layout_validate(&l, NULL), L3_OK);
    bool owned;
    l3_range r;
    /* Local 6 -> parent 1, child 1. */
    assert_int_equal(l3_layout_owned_range(&l, 0, 6, &owned, &r, NULL), L3_OK);
    assert_int_equal(r.offset, 64 + 8);
    /* Group 1 starts at 4 * 8 = 32; local 4 -> parent 1, child 1. */
    assert_int_equal(l3_layout_owned_range(&l, 1, 4, &owned, &r, NULL), L3_OK);
    assert_int_equal(r.offset, 64 + 32 + 16);
    assert_int_equal(l3_layout_owned_range(&l, 0, 9, &owned, &r, NULL), L3_ELAYOUT);
}

/* Groups in other regions: each region's blocks hold only its groups,
 * offsets are within the region, and regions are numbered without gaps. */
static void groups_in_other_regions_are_laid_out_in_their_own(void **state)
{
    (void)state;
    l3_host_layout l = { 0 };
    l.groups[0] = (l3_group_layout){ 1, 32, 1, 0 };
    l.groups[1] = (l3_group_layout){ 1, 8, 1, 1 };
    l.groups[2] = (l3_group_layout){ 2, 4, 1, 1 };
    l.groups[3] = (l3_group_layout){ 1, 16, 1, 2 };
    l.num_groups = 4;
    l.lcm_block_bytes = 32; /* region 0's groups only */
    l.num_lcm_blocks = 3;
    assert_int_equal(l3_layout_validate(&l, NULL), L3_OK);
    assert_int_equal(l3_layout_regions(&l), 3);
    assert_int_equal(l3_layout_region_bytes(&l, 0), 96);
    assert_int_equal(l3_layout_region_bytes(&l, 1), 3 * 16);
    assert_int_equal(l3_layout_region_bytes(&l, 2), 3 * 16);
    assert_int_equal(l3_layout_group_base(&l, 2), 8);
    assert_int_equal(l3_layout_group_base(&l, 3), 0);
    bool owned;
    l3_range r;
    assert_int_equal(l3_layout_owned_range(&l, 1, 2, &owned, &r, NULL), L3_OK);
    assert_int_equal(r.offset, 16); /* block 2 of region 1: its second 16-byte block */
    assert_int_equal(l3_layout_owned_range(&l, 2, 4, &owned, &r, NULL), L3_OK);
    assert_int_equal(r.offset, 16 + 8 + 4); /* local 4: parent 1, child 1 */
    assert_int_equal(l3_layout_owned_range(&l, 3, 3, &owned, &r, NULL), L3_OK);
    assert_int_equal(r.offset, 32);
    /* A gap in the numbering is refused. */
    l.groups[3].region = 3;
    assert_int_equal(l3_layout_validate(&l, NULL), L3_ELAYOUT);
    l.groups[3].region = L3_MAX_REGIONS;
    assert_int_equal(l3_layout_validate(&l, NULL), L3_ELAYOUT);
}

static void sharded_ownership_follows_the_owner_rank(void **state)
{
    (void)state;
    bool owned;
    l3_range r = { 99, 99 };
    l3_host_layout rank0 = ref(2, 0, 0), rank1 = ref(2, 1, 1);
    /* Block 2: owner (2-1) % 2 = 1, local id 1 -> offset 0. */
    assert_int_equal(l3_layout_owned_range(&rank0, 0, 2, &owned, &r, NULL), L3_OK);
    assert_false(owned);
    assert_int_equal(r.offset, 99);
    assert_int_equal(l3_layout_owned_range(&rank1, 0, 2, &owned, &r, NULL), L3_OK);
    assert_true(owned);
    assert_int_equal(r.offset, 0);
    /* Block 3: owner 0, local id 2 -> the second LCM block. */
    assert_int_equal(l3_layout_owned_range(&rank0, 0, 3, &owned, &r, NULL), L3_OK);
    assert_true(owned);
    assert_int_equal(r.offset, 24);
    /* A replicated group is owned by every rank. */
    assert_int_equal(l3_layout_owned_range(&rank1, 1, 3, &owned, &r, NULL), L3_OK);
    assert_true(owned);
}

static void key_ranks_follow_the_shard(void **state)
{
    (void)state;
    uint32_t rank;
    l3_host_layout l = ref(2, 1, 3);
    assert_int_equal(l3_layout_key_rank(&l, 0, &rank, NULL), L3_OK);
    assert_int_equal(rank, 1);
    assert_int_equal(l3_layout_key_rank(&l, 1, &rank, NULL), L3_OK);
    assert_int_equal(rank, 3);
    l3_error err;
    assert_int_equal(l3_layout_key_rank(&l, 2, &rank, &err), L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "unknown cache group"));
    bool owned;
    l3_range r;
    assert_int_equal(l3_layout_owned_range(&l, 7, 1, &owned, &r, NULL), L3_ELAYOUT);
}

static void invalid_layouts_are_rejected_with_a_reason(void **state)
{
    (void)state;
    l3_error err;
    l3_host_layout l = ref(1, 0, 0);
    assert_int_equal(l3_layout_validate(&l, NULL), L3_OK);
    l.lcm_block_bytes = 23; /* 8 + 16 do not fit */
    assert_int_equal(l3_layout_validate(&l, &err), L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "does not fit"));
    l = ref(1, 0, 0);
    l.num_groups = 0;
    assert_int_equal(l3_layout_validate(&l, &err), L3_ELAYOUT);
    l = ref(1, 0, 0);
    l.groups[1].block_bytes = 0;
    assert_int_equal(l3_layout_validate(&l, &err), L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "positive"));
    l = ref(2, 2, 2); /* owner 2 of 2 shards */
    assert_int_equal(l3_layout_validate(&l, &err), L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "owner rank"));
    l = ref(1, 0, 0);
    l.num_lcm_blocks = 0;
    assert_int_equal(l3_layout_validate(&l, &err), L3_ELAYOUT);
    l = ref(1, 0, 0);
    l.lcm_block_bytes = UINT64_MAX / 2;
    l.num_lcm_blocks = 4;
    assert_int_equal(l3_layout_validate(&l, &err), L3_ELAYOUT);
    assert_non_null(strstr(err.msg, "overflow"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_null_block_is_an_error),
        cmocka_unit_test(a_block_past_the_pool_is_an_error),
        cmocka_unit_test(group_bases_sit_side_by_side),
        cmocka_unit_test(packing_places_children_inside_the_lcm_block),
        cmocka_unit_test(groups_in_other_regions_are_laid_out_in_their_own),
        cmocka_unit_test(sharded_ownership_follows_the_owner_rank),
        cmocka_unit_test(key_ranks_follow_the_shard),
        cmocka_unit_test(invalid_layouts_are_rejected_with_a_reason),
    };
    return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
