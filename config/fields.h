/* l3cache: typed JSON field readers shared by the config and layout
 * parsers (internal; not installed). Each reads one value, checks its type
 * and range, and on error says L3_ECONFIG with the JSON path. */
#ifndef L3_FIELDS_H
#define L3_FIELDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "l3_status.h"

/* "an object", "a string", ...: a value's JSON type, for messages. */
const char *l3_json_type_name(const json_t *v);

/* An integer in [lo, hi]. */
l3_status l3_json_uint(const json_t *v, const char *path, uint64_t lo, uint64_t hi, uint64_t *out,
                       l3_error *err);

/* A number of seconds in [lo, hi] (more than lo when lo_open). */
l3_status l3_json_seconds(const json_t *v, const char *path, double lo, double hi, bool lo_open,
                          double *out, l3_error *err);

/* true or false. */
l3_status l3_json_bool(const json_t *v, const char *path, bool *out, l3_error *err);

/* A string without NULs (non-empty when asked), copied into *out (the old
 * value freed). */
l3_status l3_json_string(const json_t *v, const char *path, bool nonempty, char **out, l3_error *err);

/* A size: bytes, or a string with a unit (l3_parse_size), in [lo, hi],
 * a power of two when asked. */
l3_status l3_json_size(const json_t *v, const char *path, uint64_t lo, uint64_t hi, bool pow2,
                       uint64_t *out, l3_error *err);

/* A section: an object whose keys are all in the NULL-ended `known`. */
l3_status l3_json_section(const json_t *v, const char *path, const char *const *known, l3_error *err);

#endif
