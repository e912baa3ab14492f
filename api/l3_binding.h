/* l3cache: entry points for bindings that speak JSON (the Python package
 * calls these through ctypes). */
#ifndef L3_BINDING_H
#define L3_BINDING_H

#include <stddef.h>

#include "l3_executor.h"
#include "l3_slabstore.h"
#include "l3_status.h"

/* Open (or create) the store a JSON config names. */
l3_status l3_open_store_json(const char *config_json, l3_slabstore **out, l3_error *err);

/* Start an executor over `store` (taken over on success) and `n` Host
 * regions (the pool first; l3_executor_start_regions), from a JSON layout
 * and a JSON config (its executor and namespace sections). */
l3_status l3_executor_start_json(l3_store *store, const l3_host_buffer *regions, size_t n,
                                 const char *layout_json, const char *config_json, l3_executor **out,
                                 l3_error *err);

#endif
