/* l3cache: the Host KV pool's layout (SEMANTICS.md "layout"). */
#ifndef L3_LAYOUT_H
#define L3_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_status.h"

#define L3_MAX_GROUPS 64

/* One cache group: `packing` blocks of `block_bytes` per LCM block, with
 * blocks spread over `shard_count` owners. */
typedef struct l3_group_layout {
    uint32_t packing;
    uint64_t block_bytes;
    uint32_t shard_count;
} l3_group_layout;

/* The Host pool: `num_lcm_blocks` LCM blocks of `lcm_block_bytes`, each
 * holding every group side by side; this process is owner `owner_rank` of
 * sharded groups and tensor-parallel rank `tp_rank`. */
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

/* Check a layout: at least one group, positive sizes and counts, groups
 * that fit in an LCM block, an owner rank below every sharded group's
 * shard count, and a size that does not overflow. L3_ELAYOUT otherwise. */
l3_status l3_layout_validate(const l3_host_layout *layout, l3_error *err);

/* The pool's size: lcm_block_bytes * num_lcm_blocks. */
uint64_t l3_layout_bytes(const l3_host_layout *layout);

/* Byte offset of group `group` inside an LCM block: the sum of
 * packing * block_bytes of the groups before it. */
uint64_t l3_layout_group_base(const l3_host_layout *layout, uint32_t group);

/* This rank's Host range of 1-based block `block` of `group`. Sets *owned
 * false (and leaves *range alone) when another owner holds the block.
 * Block 0, a block past the pool, or an unknown group is L3_ELAYOUT. */
l3_status l3_layout_owned_range(const l3_host_layout *layout, uint32_t group, int32_t block,
                                bool *owned, l3_range *range, l3_error *err);

/* The rank that names `group`'s keys: tp_rank / shard_count. Unknown group:
 * L3_ELAYOUT. */
l3_status l3_layout_key_rank(const l3_host_layout *layout, uint32_t group, uint32_t *rank,
                             l3_error *err);

#endif
