#include "l3_layout.h"

l3_status l3_layout_validate(const l3_host_layout *layout, l3_error *err)
{
    if (!layout)
        return l3_fail(err, L3_ELAYOUT, "the layout is NULL");
    if (layout->num_groups == 0 || layout->num_groups > L3_MAX_GROUPS)
        return l3_fail(err, L3_ELAYOUT, "the layout has %zu groups; expected 1 to %d",
                       layout->num_groups, L3_MAX_GROUPS);
    if (layout->lcm_block_bytes == 0)
        return l3_fail(err, L3_ELAYOUT, "lcm_block_bytes is 0");
    if (layout->num_lcm_blocks == 0)
        return l3_fail(err, L3_ELAYOUT, "num_lcm_blocks is 0");
    if (layout->num_lcm_blocks > UINT64_MAX / layout->lcm_block_bytes)
        return l3_fail(err, L3_ELAYOUT, "the pool size overflows");
    uint64_t used = 0;
    bool named[L3_MAX_REGIONS] = { false };
    for (size_t g = 0; g < layout->num_groups; g++) {
        const l3_group_layout *group = &layout->groups[g];
        if (group->packing == 0 || group->block_bytes == 0 || group->shard_count == 0)
            return l3_fail(err, L3_ELAYOUT,
                           "group %zu: packing, block_bytes and shard_count must be positive", g);
        if (group->block_bytes > UINT64_MAX / group->packing)
            return l3_fail(err, L3_ELAYOUT, "group %zu: its size overflows", g);
        if (group->region >= L3_MAX_REGIONS)
            return l3_fail(err, L3_ELAYOUT, "group %zu: region %u; at most %d regions", g, group->region,
                           L3_MAX_REGIONS);
        named[group->region] = true;
        uint64_t span = group->block_bytes * group->packing;
        if (group->region == 0 && span > layout->lcm_block_bytes - used)
            return l3_fail(err, L3_ELAYOUT,
                           "group %zu does not fit: the groups need more than %llu bytes per LCM block",
                           g, (unsigned long long)layout->lcm_block_bytes);
        if (group->region == 0)
            used += span;
        else if (span > UINT64_MAX / layout->num_lcm_blocks / layout->num_groups)
            return l3_fail(err, L3_ELAYOUT, "group %zu: its region's size overflows", g);
        if (group->shard_count > 1 && layout->owner_rank >= group->shard_count)
            return l3_fail(err, L3_ELAYOUT, "owner rank %u is not below group %zu's shard count %u",
                           layout->owner_rank, g, group->shard_count);
        uint64_t blocks = layout->num_lcm_blocks;
        if (blocks > (uint64_t)INT32_MAX / group->packing / group->shard_count)
            return l3_fail(err, L3_ELAYOUT, "group %zu has more blocks than an int32 block id names",
                           g);
    }
    for (size_t r = 0; r < l3_layout_regions(layout); r++)
        if (!named[r])
            return l3_fail(err, L3_ELAYOUT, "no group is in region %zu: regions are numbered from 0 "
                           "without gaps", r);
    return L3_OK;
}

uint64_t l3_layout_bytes(const l3_host_layout *layout)
{
    return layout->lcm_block_bytes * layout->num_lcm_blocks;
}

size_t l3_layout_regions(const l3_host_layout *layout)
{
    size_t n = 0;
    for (size_t g = 0; g < layout->num_groups; g++)
        if (layout->groups[g].region + 1u > n)
            n = layout->groups[g].region + 1u;
    return n;
}

/* The bytes of region `region`'s groups in one of its blocks. */
static uint64_t region_stride(const l3_host_layout *layout, uint32_t region)
{
    if (region == 0)
        return layout->lcm_block_bytes;
    uint64_t stride = 0;
    for (size_t g = 0; g < layout->num_groups; g++)
        if (layout->groups[g].region == region)
            stride += (uint64_t)layout->groups[g].packing * layout->groups[g].block_bytes;
    return stride;
}

uint64_t l3_layout_region_bytes(const l3_host_layout *layout, uint32_t region)
{
    return region_stride(layout, region) * layout->num_lcm_blocks;
}

uint64_t l3_layout_group_base(const l3_host_layout *layout, uint32_t group)
{
    uint64_t base = 0;
    uint32_t region = group < layout->num_groups ? layout->groups[group].region : 0;
    for (uint32_t h = 0; h < group && h < layout->num_groups; h++)
        if (layout->groups[h].region == region)
            base += (uint64_t)layout->groups[h].packing * layout->groups[h].block_bytes;
    return base;
}

l3_status l3_layout_owned_range(const l3_host_layout *layout, uint32_t group, int32_t block,
                                bool *owned, l3_range *range, l3_error *err)
{
    if (group >= layout->num_groups)
        return l3_fail(err, L3_ELAYOUT, "unknown cache group %u", group);
    if (block <= 0)
        return l3_fail(err, L3_ELAYOUT,
                       block == 0 ? "block 0 is the null block" : "block %d is negative", block);
    const l3_group_layout *g = &layout->groups[group];
    uint64_t b = (uint64_t)block;
    uint64_t limit = layout->num_lcm_blocks * g->packing * g->shard_count;
    if (b > limit)
        return l3_fail(err, L3_ELAYOUT, "block %d of group %u is past the pool's %llu blocks", block,
                       group, (unsigned long long)limit);
    uint64_t d = g->shard_count;
    if (d > 1 && (b - 1) % d != layout->owner_rank) {
        *owned = false;
        return L3_OK;
    }
    uint64_t local = (b - 1) / d + 1;
    uint64_t parent = (local - 1) / g->packing, child = (local - 1) % g->packing;
    range->offset = parent * region_stride(layout, g->region) + l3_layout_group_base(layout, group) +
                    child * g->block_bytes;
    range->size = g->block_bytes;
    *owned = true;
    return L3_OK;
}

l3_status l3_layout_key_rank(const l3_host_layout *layout, uint32_t group, uint32_t *rank,
                             l3_error *err)
{
    if (group >= layout->num_groups)
        return l3_fail(err, L3_ELAYOUT, "unknown cache group %u", group);
    *rank = layout->tp_rank / layout->groups[group].shard_count;
    return L3_OK;
}
