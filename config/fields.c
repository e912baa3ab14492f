/* Typed JSON field readers for the config and layout parsers (fields.h):
 * each names the JSON path in its errors. */
#include "fields.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l3_config.h"

l3_status l3_parse_size(const char *text, uint64_t *bytes, l3_error *err)
{
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return l3_fail(err, L3_ECONFIG, "\"%s\" is not a size (e.g. 4096, \"512MiB\", \"64GiB\")", text);
    errno = 0;
    char *end;
    double value = strtod(p, &end);
    if (errno || end == p)
        return l3_fail(err, L3_ECONFIG, "\"%s\" is not a size", text);
    while (isspace((unsigned char)*end))
        end++;
    static const struct { const char *unit; double mult; } units[] = {
        { "", 1 }, { "B", 1 },
        { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 }, { "TiB", 1099511627776.0 },
        { "K", 1024.0 }, { "M", 1048576.0 }, { "G", 1073741824.0 }, { "T", 1099511627776.0 },
        { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) != 0)
            continue;
        double b = value * units[i].mult;
        if (!(b >= 0) || b > 18446744073709549568.0)
            return l3_fail(err, L3_ECONFIG, "\"%s\" is out of range", text);
        if (b != floor(b))
            return l3_fail(err, L3_ECONFIG, "\"%s\" is not a whole number of bytes", text);
        *bytes = (uint64_t)b;
        return L3_OK;
    }
    return l3_fail(err, L3_ECONFIG,
                   "\"%s\" has an unknown unit \"%s\" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)",
                   text, end);
}

const char *l3_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

l3_status l3_json_uint(const json_t *v, const char *path, uint64_t lo, uint64_t hi, uint64_t *out,
                          l3_error *err)
{
    if (!json_is_integer(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected an integer from %llu to %llu, got %s", path,
                       (unsigned long long)lo, (unsigned long long)hi, l3_json_type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi)
        return l3_fail(err, L3_ECONFIG, "%s: %lld is out of range (expected %llu to %llu)", path,
                       (long long)x, (unsigned long long)lo, (unsigned long long)hi);
    *out = (uint64_t)x;
    return L3_OK;
}

l3_status l3_json_seconds(const json_t *v, const char *path, double lo, double hi, bool lo_open,
                             double *out, l3_error *err)
{
    if (!json_is_number(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected a number of seconds, got %s", path, l3_json_type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x <= lo) || x > hi)
        return l3_fail(err, L3_ECONFIG, "%s: %g is out of range (expected %s%g to %g seconds)", path,
                       x, lo_open ? "more than " : "", lo, hi);
    *out = x;
    return L3_OK;
}

l3_status l3_json_bool(const json_t *v, const char *path, bool *out, l3_error *err)
{
    if (!json_is_boolean(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected true or false, got %s", path, l3_json_type_name(v));
    *out = json_is_true(v);
    return L3_OK;
}

l3_status l3_json_string(const json_t *v, const char *path, bool nonempty, char **out, l3_error *err)
{
    if (!json_is_string(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected a string, got %s", path, l3_json_type_name(v));
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v))
        return l3_fail(err, L3_ECONFIG, "%s: the string contains a NUL character", path);
    if (nonempty && !s[0])
        return l3_fail(err, L3_ECONFIG, "%s: expected a non-empty string", path);
    char *copy = strdup(s);
    if (!copy)
        return l3_fail(err, L3_ENOMEM, "allocating %s", path);
    free(*out);
    *out = copy;
    return L3_OK;
}

l3_status l3_json_size(const json_t *v, const char *path, uint64_t lo, uint64_t hi, bool pow2,
                          uint64_t *out, l3_error *err)
{
    uint64_t b = 0;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return l3_fail(err, L3_ECONFIG, "%s: a size cannot be negative", path);
        b = (uint64_t)json_integer_value(v);
    } else if (json_is_string(v)) {
        l3_error e2;
        if (l3_parse_size(json_string_value(v), &b, &e2) != L3_OK)
            return l3_fail(err, L3_ECONFIG, "%s: %s", path, e2.msg);
    } else {
        return l3_fail(err, L3_ECONFIG, "%s: expected a size (bytes, or a string like \"64GiB\"), got %s",
                       path, l3_json_type_name(v));
    }
    if (b < lo || b > hi)
        return l3_fail(err, L3_ECONFIG, "%s: %llu bytes is out of range (expected %llu to %llu)", path,
                       (unsigned long long)b, (unsigned long long)lo, (unsigned long long)hi);
    if (pow2 && (b & (b - 1)))
        return l3_fail(err, L3_ECONFIG, "%s: %llu bytes is not a power of two", path,
                       (unsigned long long)b);
    *out = b;
    return L3_OK;
}

l3_status l3_json_section(const json_t *v, const char *path, const char *const *known,
                               l3_error *err)
{
    if (!json_is_object(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected an object, got %s", path, l3_json_type_name(v));
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)v, key, value) {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++)
            ok = strcmp(known[i], key) == 0;
        if (!ok) {
            char list[512] = "";
            for (size_t i = 0; known[i]; i++) {
                strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, known[i], sizeof list - strlen(list) - 1);
            }
            return l3_fail(err, L3_ECONFIG, "%s.%s: unknown key (expected one of: %s)", path, key, list);
        }
    }
    return L3_OK;
}
