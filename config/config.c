#include "l3_config.h"
#include "l3_format.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)

l3_status l3_config_default(l3_config *c, l3_error *err)
{
    memset(c, 0, sizeof *c);
    l3_slab_options_default(&c->store, NULL);
    c->store.capacity = 1ull << 30;
    c->executor = (l3_executor_config){
        .max_operations = 64,
        .max_keys_per_operation = 256,
        .query_workers = 1,
        .read_workers = 2,
        .write_workers = 2,
        .failure_threshold = 3,
        .recovery_interval = 10.0,
    };
    c->deployment_id = strdup("default");
    c->weight_version = strdup("v0");
    if (!c->deployment_id || !c->weight_version) {
        l3_config_free(c);
        return l3_fail(err, L3_ENOMEM, "allocating the config");
    }
    return L3_OK;
}

void l3_config_free(l3_config *c)
{
    free(c->deployment_id);
    free(c->weight_version);
    free(c->path_owned);
    memset(c, 0, sizeof *c);
}

l3_status l3_config_set_path(l3_config *c, const char *path, l3_error *err)
{
    char *p = strdup(path);
    if (!p)
        return l3_fail(err, L3_ENOMEM, "allocating the path");
    free(c->path_owned);
    c->path_owned = p;
    c->store.path = p;
    return L3_OK;
}

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

/* ---- typed field readers: each names the JSON path in its errors ---- */

static const char *type_name(const json_t *v)
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

static l3_status get_uint(const json_t *v, const char *path, uint64_t lo, uint64_t hi, uint64_t *out,
                          l3_error *err)
{
    if (!json_is_integer(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected an integer from %llu to %llu, got %s", path,
                       (unsigned long long)lo, (unsigned long long)hi, type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x < lo || (uint64_t)x > hi)
        return l3_fail(err, L3_ECONFIG, "%s: %lld is out of range (expected %llu to %llu)", path,
                       (long long)x, (unsigned long long)lo, (unsigned long long)hi);
    *out = (uint64_t)x;
    return L3_OK;
}

static l3_status get_seconds(const json_t *v, const char *path, double lo, double hi, bool lo_open,
                             double *out, l3_error *err)
{
    if (!json_is_number(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected a number of seconds, got %s", path, type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || (lo_open && x <= lo) || x > hi)
        return l3_fail(err, L3_ECONFIG, "%s: %g is out of range (expected %s%g to %g seconds)", path,
                       x, lo_open ? "more than " : "", lo, hi);
    *out = x;
    return L3_OK;
}

static l3_status get_bool(const json_t *v, const char *path, bool *out, l3_error *err)
{
    if (!json_is_boolean(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected true or false, got %s", path, type_name(v));
    *out = json_is_true(v);
    return L3_OK;
}

static l3_status get_string(const json_t *v, const char *path, bool nonempty, char **out, l3_error *err)
{
    if (!json_is_string(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected a string, got %s", path, type_name(v));
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

static l3_status get_size(const json_t *v, const char *path, uint64_t lo, uint64_t hi, bool pow2,
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
                       path, type_name(v));
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

/* A section: an object whose keys are all known. */
static l3_status check_section(const json_t *v, const char *path, const char *const *known,
                               l3_error *err)
{
    if (!json_is_object(v))
        return l3_fail(err, L3_ECONFIG, "%s: expected an object, got %s", path, type_name(v));
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

static l3_status parse_store(const json_t *o, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "path", "capacity", "slab_size", "block_size", "max_objects",
                                         "engine", "io_timeout", "verify_checksums",
                                         "register_buffers", "lock_timeout", NULL };
    l3_status st = check_section(o, "$.store", known, err);
    if (st != L3_OK)
        return st;
    json_t *v;
    uint64_t u;
    if ((v = json_object_get(o, "path"))) {
        if ((st = get_string(v, "$.store.path", true, &c->path_owned, err)) != L3_OK)
            return st;
        c->store.path = c->path_owned;
    }
    if ((v = json_object_get(o, "capacity")) &&
        (st = get_size(v, "$.store.capacity", 0, UINT64_MAX, false, &c->store.capacity, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "slab_size")) &&
        (st = get_size(v, "$.store.slab_size", MIB, 4ull << 30, true, &c->store.slab_size, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "block_size"))) {
        if ((st = get_size(v, "$.store.block_size", 512, 65536, true, &u, err)) != L3_OK)
            return st;
        c->store.block_size = (uint32_t)u;
    }
    if ((v = json_object_get(o, "max_objects")) &&
        (st = get_uint(v, "$.store.max_objects", 0, 1ull << 32, &c->store.max_objects, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "engine"))) {
        if (!json_is_string(v) || !l3_engine_parse(json_string_value(v), &c->store.engine))
            return l3_fail(err, L3_ECONFIG, "$.store.engine: expected \"auto\", \"io_uring\" or \"libaio\", got %s%s%s",
                           json_is_string(v) ? "\"" : type_name(v),
                           json_is_string(v) ? json_string_value(v) : "", json_is_string(v) ? "\"" : "");
    }
    if ((v = json_object_get(o, "io_timeout")) &&
        (st = get_seconds(v, "$.store.io_timeout", 0, 86400, true, &c->store.io_timeout, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "lock_timeout")) &&
        (st = get_seconds(v, "$.store.lock_timeout", 0, 3600, false, &c->store.lock_timeout, err)) != L3_OK)
        return st;
    bool b = false;
    if ((v = json_object_get(o, "verify_checksums"))) {
        if ((st = get_bool(v, "$.store.verify_checksums", &b, err)) != L3_OK)
            return st;
        c->store.no_verify_checksums = !b;
    }
    if ((v = json_object_get(o, "register_buffers"))) {
        if ((st = get_bool(v, "$.store.register_buffers", &b, err)) != L3_OK)
            return st;
        c->store.no_register_buffers = !b;
    }
    return L3_OK;
}

static l3_status parse_executor(const json_t *o, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "max_operations", "max_keys_per_operation", "query_workers",
                                         "read_workers", "write_workers", "failure_threshold",
                                         "recovery_interval", NULL };
    l3_status st = check_section(o, "$.executor", known, err);
    if (st != L3_OK)
        return st;
    struct { const char *name; uint64_t lo, hi; size_t *field; } sizes[] = {
        { "max_operations", 1, 65536, &c->executor.max_operations },
        { "max_keys_per_operation", 1, 8192, &c->executor.max_keys_per_operation },
        { "query_workers", 1, 64, &c->executor.query_workers },
        { "read_workers", 1, 64, &c->executor.read_workers },
        { "write_workers", 1, 64, &c->executor.write_workers },
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        json_t *v = json_object_get(o, sizes[i].name);
        if (!v)
            continue;
        char path[96];
        snprintf(path, sizeof path, "$.executor.%s", sizes[i].name);
        uint64_t u;
        if ((st = get_uint(v, path, sizes[i].lo, sizes[i].hi, &u, err)) != L3_OK)
            return st;
        *sizes[i].field = (size_t)u;
    }
    json_t *v;
    uint64_t u;
    if ((v = json_object_get(o, "failure_threshold"))) {
        if ((st = get_uint(v, "$.executor.failure_threshold", 1, 1000000, &u, err)) != L3_OK)
            return st;
        c->executor.failure_threshold = (uint32_t)u;
    }
    if ((v = json_object_get(o, "recovery_interval")) &&
        (st = get_seconds(v, "$.executor.recovery_interval", 0, 86400, false,
                          &c->executor.recovery_interval, err)) != L3_OK)
        return st;
    return L3_OK;
}

static l3_status parse_namespace(const json_t *o, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "deployment_id", "weight_version", "has_draft", NULL };
    l3_status st = check_section(o, "$.namespace", known, err);
    if (st != L3_OK)
        return st;
    json_t *v;
    if ((v = json_object_get(o, "deployment_id")) &&
        (st = get_string(v, "$.namespace.deployment_id", true, &c->deployment_id, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "weight_version")) &&
        (st = get_string(v, "$.namespace.weight_version", false, &c->weight_version, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "has_draft")) &&
        (st = get_bool(v, "$.namespace.has_draft", &c->has_draft, err)) != L3_OK)
        return st;
    return L3_OK;
}

static l3_status parse_root(const json_t *root, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "store", "executor", "namespace", NULL };
    l3_status st = check_section(root, "$", known, err);
    json_t *v;
    if (st == L3_OK && (v = json_object_get(root, "store")))
        st = parse_store(v, c, err);
    if (st == L3_OK && (v = json_object_get(root, "executor")))
        st = parse_executor(v, c, err);
    if (st == L3_OK && (v = json_object_get(root, "namespace")))
        st = parse_namespace(v, c, err);
    if (st == L3_OK && !c->store.path)
        st = l3_fail(err, L3_ECONFIG, "$.store.path: required (the store's file or block device)");
    if (st == L3_OK) {
        /* The namespace must name a prefix: UTF-8 text. */
        char prefix[L3_KEY_PREFIX_LEN + 1];
        l3_error e2;
        if (l3_key_prefix(c->deployment_id, c->weight_version, c->has_draft ? c->weight_version : "",
                          prefix, &e2) != L3_OK)
            st = l3_fail(err, L3_ECONFIG, "$.namespace: %s", e2.msg);
    }
    if (st == L3_OK) {
        l3_slab_options o = l3_config_store_options(c);
        l3_geometry g;
        char why[256];
        if (c->store.capacity &&
            !l3_geometry_plan(c->store.capacity, o.slab_size, o.block_size, o.max_objects, &g, why,
                              sizeof why))
            st = l3_fail(err, L3_ECONFIG, "$.store.capacity: %s", why);
        else if (c->store.slab_size % c->store.block_size)
            st = l3_fail(err, L3_ECONFIG, "$.store.slab_size: not a multiple of block_size");
    }
    return st;
}

l3_status l3_config_parse(const char *text, l3_config *c, l3_error *err)
{
    l3_status st = l3_config_default(c, err);
    if (st != L3_OK)
        return st;
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        l3_config_free(c);
        return l3_fail(err, L3_ECONFIG, "line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    }
    st = parse_root(root, c, err);
    json_decref(root);
    if (st != L3_OK)
        l3_config_free(c);
    return st;
}

l3_status l3_config_load(const char *file, l3_config *c, l3_error *err)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return l3_fail(err, L3_ECONFIG, "%s: %s", file, strerror(errno));
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (16u << 20)) {
                free(text);
                fclose(f);
                return l3_fail(err, L3_ECONFIG, "%s: larger than 16 MiB", file);
            }
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(f);
                return l3_fail(err, L3_ENOMEM, "reading %s", file);
            }
            text = t;
        }
        size_t n = fread(text + len, 1, 4096, f);
        len += n;
        if (n < 4096)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        return l3_fail(err, L3_ECONFIG, "%s: read error", file);
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        free(text);
        return l3_fail(err, L3_ECONFIG, "%s: contains a NUL byte", file);
    }
    l3_error e2;
    l3_status st = l3_config_parse(text, c, &e2);
    free(text);
    if (st != L3_OK)
        return l3_fail(err, st, "%s: %s", file, e2.msg);
    return L3_OK;
}

l3_slab_options l3_config_store_options(const l3_config *c)
{
    l3_slab_options o = c->store;
    const l3_executor_config *x = &c->executor;
    o.io_contexts = (unsigned)(x->read_workers + x->write_workers + 1);
    o.batch_keys = (unsigned)x->max_keys_per_operation;
    unsigned d = 1;
    while (d < 3 * x->max_keys_per_operation && d < 4096)
        d <<= 1;
    o.queue_depth = d;
    return o;
}

char *l3_config_to_json(const l3_config *c)
{
    json_t *root = json_object(), *s = json_object(), *x = json_object(), *n = json_object();
    json_object_set_new(s, "path", json_string(c->store.path ? c->store.path : ""));
    json_object_set_new(s, "capacity", json_integer((json_int_t)c->store.capacity));
    json_object_set_new(s, "slab_size", json_integer((json_int_t)c->store.slab_size));
    json_object_set_new(s, "block_size", json_integer(c->store.block_size));
    json_object_set_new(s, "max_objects", json_integer((json_int_t)c->store.max_objects));
    json_object_set_new(s, "engine", json_string(l3_engine_name(c->store.engine)));
    json_object_set_new(s, "io_timeout", json_real(c->store.io_timeout));
    json_object_set_new(s, "verify_checksums", json_boolean(!c->store.no_verify_checksums));
    json_object_set_new(s, "register_buffers", json_boolean(!c->store.no_register_buffers));
    json_object_set_new(s, "lock_timeout", json_real(c->store.lock_timeout));
    json_object_set_new(x, "max_operations", json_integer((json_int_t)c->executor.max_operations));
    json_object_set_new(x, "max_keys_per_operation", json_integer((json_int_t)c->executor.max_keys_per_operation));
    json_object_set_new(x, "query_workers", json_integer((json_int_t)c->executor.query_workers));
    json_object_set_new(x, "read_workers", json_integer((json_int_t)c->executor.read_workers));
    json_object_set_new(x, "write_workers", json_integer((json_int_t)c->executor.write_workers));
    json_object_set_new(x, "failure_threshold", json_integer(c->executor.failure_threshold));
    json_object_set_new(x, "recovery_interval", json_real(c->executor.recovery_interval));
    json_object_set_new(n, "deployment_id", json_string(c->deployment_id));
    json_object_set_new(n, "weight_version", json_string(c->weight_version));
    json_object_set_new(n, "has_draft", json_boolean(c->has_draft));
    json_object_set_new(root, "store", s);
    json_object_set_new(root, "executor", x);
    json_object_set_new(root, "namespace", n);
    char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(2));
    json_decref(root);
    return text;
}

l3_status l3_layout_parse_json(const char *text, l3_host_layout *l, l3_error *err)
{
    memset(l, 0, sizeof *l);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return l3_fail(err, L3_ELAYOUT, "layout: line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
    static const char *const known[] = { "groups", "lcm_block_bytes", "num_lcm_blocks", "owner_rank",
                                         "tp_rank", NULL };
    l3_status st = check_section(root, "$", known, err);
    uint64_t u;
    json_t *groups = json_object_get(root, "groups");
    if (st == L3_OK && (!json_is_array(groups) || json_array_size(groups) == 0 ||
                        json_array_size(groups) > L3_MAX_GROUPS))
        st = l3_fail(err, L3_ELAYOUT, "$.groups: expected an array of 1 to %d groups", L3_MAX_GROUPS);
    for (size_t g = 0; st == L3_OK && g < json_array_size(groups); g++) {
        static const char *const gk[] = { "packing", "block_bytes", "shard_count", NULL };
        char path[64];
        snprintf(path, sizeof path, "$.groups[%zu]", g);
        json_t *o = json_array_get(groups, g);
        if ((st = check_section(o, path, gk, err)) != L3_OK)
            break;
        const char *names[] = { "packing", "block_bytes", "shard_count" };
        uint64_t vals[3] = { 1, 0, 1 };
        for (int k = 0; k < 3 && st == L3_OK; k++) {
            json_t *v = json_object_get(o, names[k]);
            char fp[96];
            snprintf(fp, sizeof fp, "%s.%s", path, names[k]);
            if (v)
                st = get_uint(v, fp, 1, k == 1 ? (1ull << 40) : 1u << 20, &vals[k], err);
            else if (k == 1)
                st = l3_fail(err, L3_ELAYOUT, "%s: required", fp);
        }
        l->groups[g] = (l3_group_layout){ (uint32_t)vals[0], vals[1], (uint32_t)vals[2] };
    }
    l->num_groups = json_array_size(groups);
    const char *names[] = { "lcm_block_bytes", "num_lcm_blocks", "owner_rank", "tp_rank" };
    for (int k = 0; k < 4 && st == L3_OK; k++) {
        json_t *v = json_object_get(root, names[k]);
        char fp[64];
        snprintf(fp, sizeof fp, "$.%s", names[k]);
        if (!v) {
            if (k < 2)
                st = l3_fail(err, L3_ELAYOUT, "%s: required", fp);
            continue;
        }
        if ((st = get_uint(v, fp, k < 2 ? 1 : 0, k < 2 ? UINT64_MAX >> 1 : UINT32_MAX, &u, err)) != L3_OK)
            break;
        if (k == 0) l->lcm_block_bytes = u;
        if (k == 1) l->num_lcm_blocks = u;
        if (k == 2) l->owner_rank = (uint32_t)u;
        if (k == 3) l->tp_rank = (uint32_t)u;
    }
    json_decref(root);
    if (st == L3_ECONFIG) {
        /* The shared field readers say ECONFIG; this is a layout. */
        if (err)
            err->code = L3_ELAYOUT;
        st = L3_ELAYOUT;
    }
    return st == L3_OK ? l3_layout_validate(l, err) : st;
}

l3_status l3_open_store_json(const char *config_json, l3_slabstore **out, l3_error *err)
{
    l3_config c;
    l3_status st = l3_config_parse(config_json, &c, err);
    if (st != L3_OK)
        return st;
    l3_slab_options o = l3_config_store_options(&c);
    st = l3_slabstore_open(&o, out, err);
    l3_config_free(&c);
    return st;
}

l3_status l3_executor_start_json(l3_store *store, void *host, size_t host_len, const char *layout_json,
                                 const char *config_json, l3_executor **out, l3_error *err)
{
    l3_host_layout layout;
    l3_status st = l3_layout_parse_json(layout_json, &layout, err);
    if (st != L3_OK)
        return st;
    l3_config c;
    if ((st = l3_config_parse(config_json, &c, err)) != L3_OK)
        return st;
    l3_namespace ns = { .deployment_id = c.deployment_id, .has_draft = c.has_draft };
    st = l3_executor_start(store, (l3_host_buffer){ host, host_len }, &layout, &ns, c.weight_version,
                           &c.executor, l3_monotonic_clock(), out, err);
    l3_config_free(&c);
    return st;
}
