/* l3cache: object keys and namespace prefixes (docs/SEMANTICS.md, "Keys"). */
#ifndef L3_KEYS_H
#define L3_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "l3_status.h"

/* Length of a namespace prefix: "l3v1-" and 64 hex digits. */
#define L3_KEY_PREFIX_LEN 69
/* The longest object key any store accepts, in bytes without the NUL. */
#define L3_OBJECT_KEY_MAX 2048

/* Write the namespace prefix of (deployment_id, weight_version,
 * draft_weight_version) to `out`: "l3v1-" + hex(sha256(canonical JSON of
 * the three fields)). Injective; fails with L3_EINVAL on NULL or non-UTF-8
 * text. */
l3_status l3_key_prefix(const char *deployment_id, const char *weight_version,
                        const char *draft_weight_version, char out[L3_KEY_PREFIX_LEN + 1],
                        l3_error *err);

/* Write "{prefix}_{content_hash}|g{group}|o{page_offset}|r{key_rank}" to
 * `out` (capacity `out_size`). An empty content hash, or a key longer than
 * L3_OBJECT_KEY_MAX or `out_size - 1`, is L3_EINVAL. */
l3_status l3_object_key(const char *prefix, const char *content_hash, uint32_t group,
                        int32_t page_offset, uint32_t key_rank, char *out, size_t out_size,
                        l3_error *err);

/* Check that `key` is a key a store can hold: non-empty and at most
 * L3_OBJECT_KEY_MAX bytes. Returns L3_EINVAL with a message otherwise. */
l3_status l3_key_check(const char *key, l3_error *err);

#endif
