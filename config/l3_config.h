/* l3cache: one JSON file configures the store and the executor.
 *
 *   { "store":     { "path": "...", "capacity": "64GiB", ... },
 *     "executor":  { "max_operations": 64, ... },
 *     "namespace": { "deployment_id": "...", "weight_version": "...", "has_draft": false } }
 *
 * Every field but store.path has a default (docs/configuration.md).
 * Unknown keys, wrong types, bad sizes and out-of-range values are errors
 * that name the JSON path and what was expected. */
#ifndef L3_CONFIG_H
#define L3_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "l3_executor.h"
#include "l3_slabstore.h"
#include "l3_status.h"

#define L3_MAX_STORE_PATHS 16

typedef struct l3_config {
    l3_slab_options store;        /* store.* (path owned by the config) */
    l3_executor_config executor;  /* executor.* */
    char *deployment_id;          /* namespace.deployment_id */
    char *weight_version;         /* namespace.weight_version */
    bool has_draft;               /* namespace.has_draft */
    char *path_owned;
    char *paths_owned[L3_MAX_STORE_PATHS]; /* store.paths, when given */
} l3_config;

/* The defaults (no path). Free with l3_config_free. */
l3_status l3_config_default(l3_config *config, l3_error *err);

/* Parse JSON text over the defaults. On error *config is left freed. */
l3_status l3_config_parse(const char *json_text, l3_config *config, l3_error *err);

/* Read and parse a JSON file. */
l3_status l3_config_load(const char *file, l3_config *config, l3_error *err);

/* Set store.path (copied). */
l3_status l3_config_set_path(l3_config *config, const char *path, l3_error *err);

/* Free what a config owns. */
void l3_config_free(l3_config *config);

/* The effective configuration as JSON text; free() it. */
char *l3_config_to_json(const l3_config *config);

/* Parse a size: a byte count, or a number with a unit: B, KiB, MiB, GiB,
 * TiB (also K, M, G, T) or KB, MB, GB, TB (powers of 1000). The result
 * must be a whole number of bytes. */
l3_status l3_parse_size(const char *text, uint64_t *bytes, l3_error *err);

/* Copy the config's store options, with the I/O contexts and depth derived
 * from the executor's credits: one context per read and write worker plus
 * one, each deep enough for a full operation (3 requests a key). */
l3_slab_options l3_config_store_options(const l3_config *config);

/* Parse a Host layout: {"groups": [{"packing", "block_bytes",
 * "shard_count", "region"}...], "lcm_block_bytes", "num_lcm_blocks",
 * "owner_rank", "tp_rank"} (a group's packing and shard_count default to
 * 1 and its region to 0; owner_rank and tp_rank to 0); errors name the
 * JSON path. */
l3_status l3_layout_parse_json(const char *json_text, l3_host_layout *layout, l3_error *err);

#endif
