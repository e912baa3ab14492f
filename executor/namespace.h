/* l3cache: the executor's namespace (internal; not installed): the prefix
 * objects are named under (its own lock, prefix_mu), switched or removed
 * only while the executor is idle, and the object key of a storage key
 * under a prefix. */
#ifndef L3_EXEC_NAMESPACE_H
#define L3_EXEC_NAMESPACE_H

#include <stdbool.h>
#include <stddef.h>

#include "exec_internal.h"

/* The key prefix of a deployment (with its draft model's cache or not)
 * under `weight_version`, into `out`; a NULL weight version is an error. */
l3_status l3_exec_namespace_prefix(const char *deployment_id, bool has_draft,
                                   const char *weight_version, char out[L3_KEY_PREFIX_LEN + 1],
                                   l3_error *err);

/* The object key of `key` under `prefix` (its rank from the layout), into
 * `out`; a key without a content hash, or of an unknown group, is an error. */
l3_status l3_exec_key_of(l3_executor *e, const char *prefix, const l3_storage_key *key, char *out,
                         size_t out_size, l3_error *err);

#endif
