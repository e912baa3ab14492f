/* The JSON config: defaults, parsing, and the store options it derives
 * (l3_config.h). */
#include "l3_config.h"

#include "fields.h"
#include "format.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

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
    for (size_t i = 0; i < L3_MAX_STORE_PATHS; i++)
        free(c->paths_owned[i]);
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
    c->store.paths = NULL; /* one path replaces a list */
    c->store.num_paths = 0;
    return L3_OK;
}

/* store.mode: octal text, "0600" (the default), "0640" or "0660". */
static l3_status parse_mode(const json_t *v, uint32_t *mode, l3_error *err)
{
    const char *t = json_is_string(v) ? json_string_value(v) : "";
    char *end = NULL;
    unsigned long m = strtoul(t, &end, 8);
    if (!t[0] || *end || strlen(t) > 4 || !l3_slab_mode_valid((uint32_t)m))
        return l3_fail(err, L3_ECONFIG, "$.store.mode: expected \"0600\", \"0640\" or \"0660\" (the owner "
                       "reads and writes, a group may too, nobody else), got %s%s%s",
                       json_is_string(v) ? "\"" : l3_json_type_name(v), t, json_is_string(v) ? "\"" : "");
    *mode = (uint32_t)m;
    return L3_OK;
}

/* One of two words at `path`: *second false for `first`, true for
 * `second`; anything else is an error naming both. */
static l3_status parse_either(const json_t *v, const char *path, const char *first, const char *second,
                              bool *is_second, l3_error *err)
{
    const char *t = json_is_string(v) ? json_string_value(v) : "";
    if (strcmp(t, first) == 0 || strcmp(t, second) == 0) {
        *is_second = strcmp(t, second) == 0;
        return L3_OK;
    }
    return l3_fail(err, L3_ECONFIG, "%s: expected \"%s\" or \"%s\", got %s%s%s", path, first, second,
                   json_is_string(v) ? "\"" : l3_json_type_name(v), t, json_is_string(v) ? "\"" : "");
}

/* "flush": "interval" (the default) or "batch". */
static l3_status parse_flush(const json_t *v, l3_flush_mode *out, l3_error *err)
{
    bool batch;
    l3_status st = parse_either(v, "$.store.flush", "interval", "batch", &batch, err);
    if (st == L3_OK)
        *out = batch ? L3_FLUSH_BATCH : L3_FLUSH_INTERVAL;
    return st;
}

/* "eviction": "fifo-reinsert" (the default) or "lru-slab". */
static l3_status parse_eviction(const json_t *v, l3_eviction *out, l3_error *err)
{
    bool lru;
    l3_status st = parse_either(v, "$.store.eviction", "fifo-reinsert", "lru-slab", &lru, err);
    if (st == L3_OK)
        *out = lru ? L3_EVICT_LRU_SLAB : L3_EVICT_FIFO_REINSERT;
    return st;
}

/* "admission": "all", "adaptive" or "rung:N" (0 to 6, for tests). */
static l3_status parse_admission(const json_t *v, l3_slab_options *o, l3_error *err)
{
    const char *t = json_is_string(v) ? json_string_value(v) : "";
    bool rung = strncmp(t, "rung:", 5) == 0 && t[5] >= '0' && t[5] <= '6' && t[6] == '\0';
    if (strcmp(t, "all") == 0) {
        o->admission = L3_ADMISSION_ALL;
    } else if (strcmp(t, "adaptive") == 0) {
        o->admission = L3_ADMISSION_ADAPTIVE;
    } else if (rung) {
        o->admission = L3_ADMISSION_RUNG;
        o->admission_rung = (uint32_t)(t[5] - '0');
    } else
        return l3_fail(err, L3_ECONFIG, "$.store.admission: expected \"all\", \"adaptive\" or \"rung:0\" to \"rung:6\", "
                       "got %s%s%s", json_is_string(v) ? "\"" : l3_json_type_name(v), t, json_is_string(v) ? "\"" : "");
    return L3_OK;
}

/* "write_budget": device bytes per second (a number or a size), or drive
 * writes per day of the store's capacity ("3DWPD", "0.5 DWPD"). */
static l3_status parse_write_budget(const json_t *v, l3_slab_options *o, l3_error *err)
{
    const char *t = json_is_string(v) ? json_string_value(v) : NULL;
    size_t len = t ? strlen(t) : 0;
    if (len > 4 && strcasecmp(t + len - 4, "DWPD") == 0) {
        char *end;
        double d = strtod(t, &end);
        while (end && *end == ' ')
            end++;
        if (end != t + len - 4 || !(d > 0) || d > 1e6)
            return l3_fail(err, L3_ECONFIG, "$.store.write_budget: \"%s\": drive writes per day must be more than "
                           "0 and at most 1000000, e.g. \"3DWPD\"", t);
        o->write_budget = 0;
        o->write_budget_dwpd = d;
        return L3_OK;
    }
    o->write_budget_dwpd = 0;
    return l3_json_size(v, "$.store.write_budget", 0, 1ull << 40, false, &o->write_budget, err);
}

/* store.paths: the store's devices, 1 to 16 distinct files or block
 * devices, in the store's order (store.path must not be given too). */
static l3_status parse_paths(const json_t *v, l3_config *c, l3_error *err)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    if (n == 0 || n > L3_MAX_STORE_PATHS)
        return l3_fail(err, L3_ECONFIG, "$.store.paths: an array of 1 to %d paths, one per device", L3_MAX_STORE_PATHS);
    if (c->store.path)
        return l3_fail(err, L3_ECONFIG, "$.store.paths: give store.path or store.paths, not both");
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "$.store.paths[%zu]", i);
        l3_status st = l3_json_string(json_array_get(v, i), name, true, &c->paths_owned[i], err);
        if (st != L3_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->paths_owned[i], c->paths_owned[j]) == 0)
                return l3_fail(err, L3_ECONFIG, "%s: %s is listed twice", name, c->paths_owned[i]);
    }
    c->store.paths = (const char *const *)c->paths_owned;
    c->store.num_paths = (unsigned)n;
    c->store.path = c->paths_owned[0];
    return L3_OK;
}

static l3_status parse_store(const json_t *o, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "path", "paths", "capacity", "slab_size", "block_size", "max_objects",
                                         "engine", "io_timeout", "verify_checksums",
                                         "register_buffers", "lock_timeout", "mode", "eviction", "admission",
                                         "write_budget", "expected_object_size", "preallocate", "flush",
                                         "flush_interval", NULL };
    l3_status st = l3_json_section(o, "$.store", known, err);
    if (st != L3_OK)
        return st;
    json_t *v;
    uint64_t u;
    if ((v = json_object_get(o, "path"))) {
        if ((st = l3_json_string(v, "$.store.path", true, &c->path_owned, err)) != L3_OK)
            return st;
        c->store.path = c->path_owned;
    }
    if ((v = json_object_get(o, "paths")) && (st = parse_paths(v, c, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "capacity")) &&
        (st = l3_json_size(v, "$.store.capacity", 0, UINT64_MAX, false, &c->store.capacity, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "slab_size")) &&
        (st = l3_json_size(v, "$.store.slab_size", MIB, 4ull << 30, true, &c->store.slab_size, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "block_size"))) {
        if ((st = l3_json_size(v, "$.store.block_size", 512, 65536, true, &u, err)) != L3_OK)
            return st;
        c->store.block_size = (uint32_t)u;
    }
    if ((v = json_object_get(o, "max_objects")) &&
        (st = l3_json_uint(v, "$.store.max_objects", 0, 1ull << 32, &c->store.max_objects, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "engine"))) {
        if (!json_is_string(v) || !l3_engine_parse(json_string_value(v), &c->store.engine))
            return l3_fail(err, L3_ECONFIG, "$.store.engine: expected \"auto\", \"io_uring\" or \"libaio\", got %s%s%s",
                           json_is_string(v) ? "\"" : l3_json_type_name(v),
                           json_is_string(v) ? json_string_value(v) : "", json_is_string(v) ? "\"" : "");
    }
    if ((v = json_object_get(o, "io_timeout")) &&
        (st = l3_json_seconds(v, "$.store.io_timeout", 0, 86400, true, &c->store.io_timeout, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "lock_timeout")) &&
        (st = l3_json_seconds(v, "$.store.lock_timeout", 0, 3600, false, &c->store.lock_timeout, err)) != L3_OK)
        return st;
    bool b = false;
    if ((v = json_object_get(o, "verify_checksums"))) {
        if ((st = l3_json_bool(v, "$.store.verify_checksums", &b, err)) != L3_OK)
            return st;
        c->store.no_verify_checksums = !b;
    }
    if ((v = json_object_get(o, "mode")) && (st = parse_mode(v, &c->store.mode, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "eviction")) && (st = parse_eviction(v, &c->store.eviction, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "flush")) && (st = parse_flush(v, &c->store.flush, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "flush_interval")) &&
        (st = l3_json_seconds(v, "$.store.flush_interval", 0.001, 3600, false, &c->store.flush_interval, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "expected_object_size")) &&
        (st = l3_json_size(v, "$.store.expected_object_size", 512, 4ull << 30, false, &c->store.expected_object_size,
                           err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "write_budget")) && (st = parse_write_budget(v, &c->store, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "admission")) && (st = parse_admission(v, &c->store, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "preallocate"))) {
        if ((st = l3_json_bool(v, "$.store.preallocate", &b, err)) != L3_OK)
            return st;
        c->store.no_preallocate = !b;
    }
    if ((v = json_object_get(o, "register_buffers"))) {
        if ((st = l3_json_bool(v, "$.store.register_buffers", &b, err)) != L3_OK)
            return st;
        c->store.no_register_buffers = !b;
    }
    return L3_OK;
}

static l3_status parse_executor(const json_t *o, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "max_operations", "max_keys_per_operation", "query_workers",
                                         "read_workers", "write_workers", "failure_threshold",
                                         "recovery_interval", "gets", "puts", NULL };
    l3_status st = l3_json_section(o, "$.executor", known, err);
    if (st != L3_OK)
        return st;
    struct { const char *name; uint64_t lo, hi; size_t *field; } sizes[] = {
        { "max_operations", 1, 65536, &c->executor.max_operations },
        { "max_keys_per_operation", 1, L3_MAX_BATCH_KEYS, &c->executor.max_keys_per_operation },
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
        if ((st = l3_json_uint(v, path, sizes[i].lo, sizes[i].hi, &u, err)) != L3_OK)
            return st;
        *sizes[i].field = (size_t)u;
    }
    json_t *v;
    uint64_t u;
    if ((v = json_object_get(o, "failure_threshold"))) {
        if ((st = l3_json_uint(v, "$.executor.failure_threshold", 1, 1000000, &u, err)) != L3_OK)
            return st;
        c->executor.failure_threshold = (uint32_t)u;
    }
    if ((v = json_object_get(o, "gets")) &&
        (st = parse_either(v, "$.executor.gets", "driver", "workers", &c->executor.gets_on_workers, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "puts")) &&
        (st = parse_either(v, "$.executor.puts", "driver", "workers", &c->executor.puts_on_workers, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "recovery_interval")) &&
        (st = l3_json_seconds(v, "$.executor.recovery_interval", 0, 86400, false,
                          &c->executor.recovery_interval, err)) != L3_OK)
        return st;
    return L3_OK;
}

static l3_status parse_namespace(const json_t *o, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "deployment_id", "weight_version", "has_draft", NULL };
    l3_status st = l3_json_section(o, "$.namespace", known, err);
    if (st != L3_OK)
        return st;
    json_t *v;
    if ((v = json_object_get(o, "deployment_id")) &&
        (st = l3_json_string(v, "$.namespace.deployment_id", true, &c->deployment_id, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "weight_version")) &&
        (st = l3_json_string(v, "$.namespace.weight_version", false, &c->weight_version, err)) != L3_OK)
        return st;
    if ((v = json_object_get(o, "has_draft")) &&
        (st = l3_json_bool(v, "$.namespace.has_draft", &c->has_draft, err)) != L3_OK)
        return st;
    return L3_OK;
}

/* The store's geometry must plan; a failure is blamed on the field that
 * causes it (max_objects when the capacity would do without it). */
static l3_status check_geometry(const l3_config *c, l3_error *err)
{
    const l3_slab_options *o = &c->store;
    l3_geometry g;
    char why[256];
    if (o->slab_size % o->block_size)
        return l3_fail(err, L3_ECONFIG, "$.store.slab_size: not a multiple of block_size");
    uint32_t nd = o->num_paths ? o->num_paths : 1;
    if (!o->capacity || l3_geometry_plan_devices(o->capacity, nd, o->slab_size, o->block_size, o->max_objects,
                                                 o->expected_object_size, &g, why, sizeof why))
        return L3_OK;
    if (o->max_objects &&
        l3_geometry_plan(o->capacity, o->slab_size, o->block_size, 0, o->expected_object_size, &g, why, sizeof why))
        return l3_fail(err, L3_ECONFIG, "$.store.max_objects: %llu objects are too many for a capacity of %llu "
                       "bytes: their index checkpoint (%llu bytes) leaves no room for a slab; the default "
                       "(0) is %llu", (unsigned long long)o->max_objects, (unsigned long long)o->capacity,
                       (unsigned long long)l3_checkpoint_bytes(o->max_objects, 1, o->block_size),
                       (unsigned long long)g.max_objects);
    return l3_fail(err, L3_ECONFIG, "$.store.capacity: %s", why);
}

/* The store's path must be a file or device that can be, or is, there: a
 * directory, or a file in a missing directory, is refused now rather than
 * at open. */
static l3_status check_path(const char *path, l3_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? l3_fail(err, L3_ECONFIG, "$.store.path: %s is a directory (name a file "
                                                         "in it, e.g. %s/l3cache.store)", path, path)
                                   : L3_OK;
    if (errno != ENOENT)
        return l3_fail(err, L3_ECONFIG, "$.store.path: %s: %s", path, strerror(errno));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return L3_OK; /* in the working directory */
    *(slash == dir ? slash + 1 : slash) = '\0';
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return l3_fail(err, L3_ECONFIG, "$.store.path: %s: the directory %s does not exist", path, dir);
    return L3_OK;
}

static l3_status parse_root(const json_t *root, l3_config *c, l3_error *err)
{
    static const char *const known[] = { "store", "executor", "namespace", NULL };
    l3_status st = l3_json_section(root, "$", known, err);
    json_t *v;
    if (st == L3_OK && (v = json_object_get(root, "store")))
        st = parse_store(v, c, err);
    if (st == L3_OK && (v = json_object_get(root, "executor")))
        st = parse_executor(v, c, err);
    if (st == L3_OK && (v = json_object_get(root, "namespace")))
        st = parse_namespace(v, c, err);
    if (st == L3_OK && !c->store.path)
        st = l3_fail(err, L3_ECONFIG, "$.store.path: required (the store's file or block device; or "
                                      "store.paths, several)");
    if (st == L3_OK) {
        /* The namespace must name a prefix: UTF-8 text. */
        char prefix[L3_KEY_PREFIX_LEN + 1];
        l3_error e2;
        if (l3_key_prefix(c->deployment_id, c->weight_version, c->has_draft ? c->weight_version : "",
                          prefix, &e2) != L3_OK)
            st = l3_fail(err, L3_ECONFIG, "$.namespace: %s", e2.msg);
    }
    if (st == L3_OK)
        st = check_geometry(c, err);
    for (unsigned i = 0; st == L3_OK && i < (c->store.num_paths ? c->store.num_paths : 1); i++)
        st = check_path(c->store.num_paths ? c->store.paths[i] : c->store.path, err);
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
    o.queue_depth = l3_slab_queue_depth(o.batch_keys);
    return o;
}

char *l3_config_to_json(const l3_config *c)
{
    json_t *root = json_object(), *s = json_object(), *x = json_object(), *n = json_object();
    if (c->store.num_paths) {
        json_t *a = json_array();
        for (unsigned i = 0; i < c->store.num_paths; i++)
            json_array_append_new(a, json_string(c->store.paths[i]));
        json_object_set_new(s, "paths", a);
    } else {
        json_object_set_new(s, "path", json_string(c->store.path ? c->store.path : ""));
    }
    json_object_set_new(s, "capacity", json_integer((json_int_t)c->store.capacity));
    if (c->store.slab_size) /* (0: by the capacity) */
        json_object_set_new(s, "slab_size", json_integer((json_int_t)c->store.slab_size));
    json_object_set_new(s, "block_size", json_integer(c->store.block_size));
    json_object_set_new(s, "max_objects", json_integer((json_int_t)c->store.max_objects));
    json_object_set_new(s, "engine", json_string(l3_engine_name(c->store.engine)));
    json_object_set_new(s, "io_timeout", json_real(c->store.io_timeout));
    json_object_set_new(s, "verify_checksums", json_boolean(!c->store.no_verify_checksums));
    json_object_set_new(s, "register_buffers", json_boolean(!c->store.no_register_buffers));
    json_object_set_new(s, "lock_timeout", json_real(c->store.lock_timeout));
    char mode[16];
    snprintf(mode, sizeof mode, "%04o", c->store.mode ? c->store.mode : L3_DEFAULT_MODE);
    json_object_set_new(s, "mode", json_string(mode));
    if (c->store.expected_object_size)
        json_object_set_new(s, "expected_object_size", json_integer((json_int_t)c->store.expected_object_size));
    json_object_set_new(s, "preallocate", json_boolean(!c->store.no_preallocate));
    if (c->store.write_budget_dwpd > 0) {
        char dwpd[64];
        snprintf(dwpd, sizeof dwpd, "%gDWPD", c->store.write_budget_dwpd);
        json_object_set_new(s, "write_budget", json_string(dwpd));
    } else {
        json_object_set_new(s, "write_budget", json_integer((json_int_t)c->store.write_budget));
    }
    char admission[16];
    if (c->store.admission == L3_ADMISSION_RUNG)
        snprintf(admission, sizeof admission, "rung:%u", c->store.admission_rung);
    else
        snprintf(admission, sizeof admission, "%s", c->store.admission == L3_ADMISSION_ADAPTIVE ? "adaptive" : "all");
    json_object_set_new(s, "admission", json_string(admission));
    json_object_set_new(s, "eviction",
                        json_string(c->store.eviction == L3_EVICT_LRU_SLAB ? "lru-slab" : "fifo-reinsert"));
    json_object_set_new(s, "flush", json_string(c->store.flush == L3_FLUSH_BATCH ? "batch" : "interval"));
    json_object_set_new(s, "flush_interval", json_real(c->store.flush_interval ? c->store.flush_interval : 1.0));
    json_object_set_new(x, "max_operations", json_integer((json_int_t)c->executor.max_operations));
    json_object_set_new(x, "max_keys_per_operation", json_integer((json_int_t)c->executor.max_keys_per_operation));
    json_object_set_new(x, "query_workers", json_integer((json_int_t)c->executor.query_workers));
    json_object_set_new(x, "read_workers", json_integer((json_int_t)c->executor.read_workers));
    json_object_set_new(x, "write_workers", json_integer((json_int_t)c->executor.write_workers));
    json_object_set_new(x, "failure_threshold", json_integer(c->executor.failure_threshold));
    json_object_set_new(x, "recovery_interval", json_real(c->executor.recovery_interval));
    json_object_set_new(x, "gets", json_string(c->executor.gets_on_workers ? "workers" : "driver"));
    json_object_set_new(x, "puts", json_string(c->executor.puts_on_workers ? "workers" : "driver"));
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

