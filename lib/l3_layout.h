/* l3cache: the Host KV pool's layout (docs/SEMANTICS.md, "Host layout"). */
#ifndef L3_LAYOUT_H
#define L3_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_status.h"

#define L3_MAX_GROUPS 64

#define L3_MAX_REGIONS 64

/* One cache group: `packing` blocks of `block_bytes` per LCM block, with
 * blocks spread over `shard_count` owners, in Host region `region` (0: the
 * pool; an engine whose pools are separate allocations gives each its
 * own region). */
typedef struct l3_group_layout {
    uint32_t packing;
    uint64_t block_bytes;
    uint32_t shard_count;
    uint32_t region;
} l3_group_layout;

/* The Host memory: region 0 is `num_lcm_blocks` LCM blocks of
 * `lcm_block_bytes`, each holding its groups side by side. Every other
 * region r is `num_lcm_blocks` blocks of its own groups side by side (its
 * block is the sum of their packing * block_bytes). Regions are numbered
 * from 0 without gaps. This process is owner `owner_rank` of sharded
 * groups and tensor-parallel rank `tp_rank`. */
typedef struct l3_host_layout {
    l3_group_layout groups[L3_MAX_GROUPS];
    size_t num_groups;
    uint64_t lcm_block_bytes;
    uint64_t num_lcm_blocks;
    uint32_t owner_rank;
    uint32_t tp_rank;
} l3_host_layout;

/* A byte range of the Host pool. */
typedef struct l3_range {
    uint64_t offset;
    uint64_t size;
} l3_range;

/* Check a layout: at least one group, positive sizes and counts, region
 * 0's groups within an LCM block, regions numbered without gaps, an owner
 * rank below every sharded group's shard count, and sizes that do not
 * overflow. L3_ELAYOUT otherwise. */
l3_status l3_layout_validate(const l3_host_layout *layout, l3_error *err);

/* The pool's size (region 0's): lcm_block_bytes * num_lcm_blocks. */
uint64_t l3_layout_bytes(const l3_host_layout *layout);

/* How many Host regions the layout's groups name (the highest + 1). */
size_t l3_layout_regions(const l3_host_layout *layout);

/* Region `region`'s size: l3_layout_bytes for region 0, else
 * num_lcm_blocks times its groups' packing * block_bytes. */
uint64_t l3_layout_region_bytes(const l3_host_layout *layout, uint32_t region);

/* Byte offset of group `group` inside a block of its region: the sum of
 * packing * block_bytes of the groups before it in the same region. */
uint64_t l3_layout_group_base(const l3_host_layout *layout, uint32_t group);

/* This rank's range of 1-based block `block` of `group`, as an offset in
 * the group's region. Sets *owned false (and leaves *range alone) when
 * another owner holds the block. Block 0, a block past the pool, or an
 * unknown group is L3_ELAYOUT. */
l3_status l3_layout_owned_range(const l3_host_layout *layout, uint32_t group, int32_t block,
                                bool *owned, l3_range *range, l3_error *err);

/* The rank that names `group`'s keys: tp_rank / shard_count. Unknown group:
 * L3_ELAYOUT. */
l3_status l3_layout_key_rank(const l3_host_layout *layout, uint32_t group, uint32_t *rank,
                             l3_error *err);

#endif
