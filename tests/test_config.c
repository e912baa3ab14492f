/* The JSON config: defaults, the example file, and every kind of error,
 * each naming its JSON path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "format.h"
#include "l3_config.h"

static void a_path_alone_takes_every_default(void **state)
{
    (void)state;
    l3_config c;
    assert_int_equal(l3_config_parse("{\"store\": {\"path\": \"x.store\"}}", &c, NULL), L3_OK);
    assert_string_equal(c.store.path, "x.store");
    assert_int_equal(c.store.capacity, 1ull << 30);
    assert_false(c.executor.gets_on_workers); /* gets on the driver */
    assert_false(c.executor.puts_on_workers); /* puts too */
    l3_config w;
    assert_int_equal(l3_config_parse("{\"store\": {\"path\": \"x.store\"}, \"executor\": {\"gets\": \"workers\"}}",
                                     &w, NULL), L3_OK);
    assert_true(w.executor.gets_on_workers);
    assert_false(w.executor.puts_on_workers);
    l3_config_free(&w);
    assert_int_equal(l3_config_parse("{\"store\": {\"path\": \"x.store\"}, \"executor\": {\"puts\": \"workers\"}}",
                                     &w, NULL), L3_OK);
    assert_true(w.executor.puts_on_workers);
    assert_false(w.executor.gets_on_workers);
    l3_config_free(&w);
    assert_int_not_equal(l3_config_parse("{\"store\": {\"path\": \"x.store\"}, \"executor\": {\"puts\": \"thread\"}}",
                                         &w, NULL), L3_OK);
    assert_int_equal(c.store.slab_size, 0); /* by the capacity: 16 MiB for 1 GiB */
    assert_int_equal(l3_default_slab_size(c.store.capacity, 0), 16ull << 20);
    assert_int_equal(l3_default_slab_size(1ull << 40, 0), 64ull << 20);
    /* 1/256 of the capacity where eight expected objects fit: finer slabs
     * for small pages (bench/results/2026-12-05-g-by-trace.md) */
    assert_int_equal(l3_default_slab_size(400ull << 20, 64 << 10), 1ull << 20);
    assert_int_equal(l3_default_slab_size(1ull << 30, 256 << 10), 4ull << 20);
    assert_int_equal(l3_default_slab_size(8ull << 30, 64 << 10), 32ull << 20);
    assert_int_equal(l3_default_slab_size(64ull << 30, 64 << 10), 64ull << 20);
    /* ... and not under eight of them with their headers, where 16 such
     * slabs fit */
    assert_int_equal(l3_default_slab_size(400ull << 20, 1 << 20), 16ull << 20);
    assert_int_equal(l3_default_slab_size(64ull << 20, 0), 4ull << 20);
    assert_int_equal(c.store.eviction, L3_EVICT_FIFO_REINSERT);
    assert_int_equal(c.store.admission, L3_ADMISSION_ADAPTIVE);
    assert_int_equal(c.store.write_budget, 0);
    assert_int_equal(c.store.block_size, 4096);
    assert_int_equal(c.store.engine, L3_ENGINE_AUTO);
    assert_false(c.store.no_verify_checksums);
    assert_int_equal(c.executor.max_operations, 64);
    assert_int_equal(c.executor.max_keys_per_operation, 256);
    assert_int_equal(c.executor.read_workers, 2);
    assert_string_equal(c.deployment_id, "default");
    assert_string_equal(c.weight_version, "v0");
    assert_false(c.has_draft);
    /* Derived from the credits: a context per read/write worker plus one,
     * each deep enough for a full operation. */
    l3_slab_options o = l3_config_store_options(&c);
    assert_int_equal(o.io_contexts, 5);
    assert_int_equal(o.batch_keys, 256);
    assert_int_equal(o.queue_depth, 1024);
    l3_config_free(&c);
}

/* Write `text` with every `from` replaced by `to` into a file; its path. */
static const char *rewritten(const char *text, const char *from, const char *to)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/config.%d.json", L3_TEST_DIR_DEFAULT, (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (const char *p = text; *p;) {
        const char *hit = from[0] ? strstr(p, from) : NULL;
        size_t n = hit ? (size_t)(hit - p) : strlen(p);
        fwrite(p, 1, n, f);
        p += n;
        if (hit) {
            fputs(to, f);
            p += strlen(from);
        }
    }
    fclose(f);
    return path;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The example, with its store directory (/var/lib/l3cache) made this
 * test's: a config whose directory exists loads. */
static void the_example_config_loads(void **state)
{
    (void)state;
    l3_config c;
    l3_error err;
    const char *file = rewritten(slurp(L3_EXAMPLE_CONFIG), "/var/lib/l3cache", L3_TEST_DIR_DEFAULT);
    if (l3_config_load(file, &c, &err) != L3_OK)
        fail_msg("%s", err.msg);
    unlink(file);
    assert_int_equal(c.store.capacity, 64ull << 30);
    assert_string_equal(c.deployment_id, "llama-70b-prod");
    char *json = l3_config_to_json(&c);
    assert_non_null(strstr(json, "\"max_keys_per_operation\": 256"));
    free(json);
    l3_config_free(&c);
}

static void sizes_take_units_and_reject_nonsense(void **state)
{
    (void)state;
    uint64_t b;
    assert_int_equal(l3_parse_size("64GiB", &b, NULL), L3_OK);
    assert_int_equal(b, 64ull << 30);
    assert_int_equal(l3_parse_size("1.5 MiB", &b, NULL), L3_OK);
    assert_int_equal(b, 1572864);
    assert_int_equal(l3_parse_size("4096", &b, NULL), L3_OK);
    assert_int_equal(b, 4096);
    assert_int_equal(l3_parse_size("2GB", &b, NULL), L3_OK);
    assert_int_equal(b, 2000000000ull);
    l3_config wc;
    assert_int_equal(l3_config_parse("{\"store\": {\"path\": \"x\", \"write_budget\": \"200MB\", "
                                     "\"eviction\": \"lru-slab\", \"admission\": \"all\"}}", &wc, NULL), L3_OK);
    assert_int_equal(wc.store.write_budget, 200000000ull);
    assert_int_equal(wc.store.eviction, L3_EVICT_LRU_SLAB);
    assert_int_equal(wc.store.admission, L3_ADMISSION_ALL);
    assert_false(wc.store.no_preallocate); /* preallocated unless said */
    l3_config_free(&wc);
    assert_int_equal(l3_config_parse("{\"store\": {\"path\": \"x\", \"expected_object_size\": \"64KiB\", "
                                     "\"preallocate\": false}}", &wc, NULL), L3_OK);
    assert_int_equal(wc.store.expected_object_size, 64 * 1024);
    assert_true(wc.store.no_preallocate);
    char *text = l3_config_to_json(&wc); /* and back */
    l3_config back;
    assert_int_equal(l3_config_parse(text, &back, NULL), L3_OK);
    assert_int_equal(back.store.expected_object_size, 64 * 1024);
    assert_true(back.store.no_preallocate);
    l3_config_free(&back);
    free(text);
    l3_config_free(&wc);
    l3_error err;
    assert_int_equal(l3_parse_size("12XB", &b, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "unknown unit"));
    assert_int_equal(l3_parse_size("1.5B", &b, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "whole number"));
    assert_int_equal(l3_parse_size("-4", &b, NULL), L3_ECONFIG);
    assert_int_equal(l3_parse_size("", &b, NULL), L3_ECONFIG);
    assert_int_equal(l3_parse_size("GiB", &b, NULL), L3_ECONFIG);
}

/* Parse `json` and expect an error whose message contains every needle. */
static void expect_error(const char *json, const char *path, const char *what)
{
    l3_config c;
    l3_error err;
    l3_status st = l3_config_parse(json, &c, &err);
    if (st == L3_OK) {
        l3_config_free(&c);
        fail_msg("accepted: %s", json);
    }
    assert_int_equal(st, L3_ECONFIG);
    if (!strstr(err.msg, path) || (what && !strstr(err.msg, what)))
        fail_msg("for %s: message \"%s\" lacks \"%s\" / \"%s\"", json, err.msg, path, what ? what : "");
}

#define P "\"path\": \"x.store\""

static void unknown_keys_are_errors_that_name_their_path(void **state)
{
    (void)state;
    expect_error("{\"store\": {" P "}, \"stroe\": {}}", "$.stroe", "unknown key");
    expect_error("{\"store\": {" P ", \"capacitty\": 1}}", "$.store.capacitty", "unknown key");
    expect_error("{\"store\": {" P "}, \"executor\": {\"readers\": 2}}", "$.executor.readers", "read_workers");
    expect_error("{\"store\": {" P "}, \"namespace\": {\"draft\": true}}", "$.namespace.draft", "unknown key");
}

static void wrong_types_are_errors_that_name_their_path(void **state)
{
    (void)state;
    expect_error("[]", "$", "expected an object");
    expect_error("{\"store\": 3}", "$.store", "expected an object");
    expect_error("{\"store\": {\"path\": 3}}", "$.store.path", "expected a string");
    expect_error("{\"store\": {" P ", \"capacity\": true}}", "$.store.capacity", "expected a size");
    expect_error("{\"store\": {" P ", \"slab_size\": [1]}}", "$.store.slab_size", "expected a size");
    expect_error("{\"store\": {" P ", \"block_size\": \"big\"}}", "$.store.block_size", "not a size");
    expect_error("{\"store\": {" P ", \"engine\": 1}}", "$.store.engine", "io_uring");
    expect_error("{\"store\": {" P ", \"engine\": \"spdk\"}}", "$.store.engine", "\"spdk\"");
    expect_error("{\"store\": {" P ", \"io_timeout\": \"30s\"}}", "$.store.io_timeout", "number of seconds");
    expect_error("{\"store\": {" P ", \"verify_checksums\": 1}}", "$.store.verify_checksums", "true or false");
    expect_error("{\"store\": {" P ", \"max_objects\": 1.5}}", "$.store.max_objects", "integer");
    expect_error("{\"store\": {" P "}, \"executor\": {\"max_operations\": \"64\"}}",
                 "$.executor.max_operations", "integer");
    expect_error("{\"store\": {" P "}, \"executor\": {\"recovery_interval\": null}}",
                 "$.executor.recovery_interval", "seconds");
    expect_error("{\"store\": {" P "}, \"executor\": {\"gets\": \"threads\"}}", "$.executor.gets",
                 "\"driver\" or \"workers\"");
    expect_error("{\"store\": {" P "}, \"namespace\": {\"deployment_id\": 7}}",
                 "$.namespace.deployment_id", "string");
    expect_error("{\"store\": {" P "}, \"namespace\": {\"has_draft\": \"no\"}}",
                 "$.namespace.has_draft", "true or false");
}

static void out_of_range_values_are_errors(void **state)
{
    (void)state;
    expect_error("{\"store\": {" P ", \"slab_size\": \"3MiB\"}}", "$.store.slab_size", "power of two");
    expect_error("{\"store\": {" P ", \"slab_size\": \"64KiB\"}}", "$.store.slab_size", "out of range");
    expect_error("{\"store\": {" P ", \"block_size\": 1000}}", "$.store.block_size", "power of two");
    expect_error("{\"store\": {" P ", \"capacity\": \"1MiB\"}}", "$.store.capacity", "a store needs 4");
    /* One slab is too few (a batch could not evict): the message names the minimum. */
    expect_error("{\"store\": {" P ", \"capacity\": \"8MiB\", \"slab_size\": \"4MiB\"}}", "$.store.capacity",
                 "capacity 18874368 or more");
    expect_error("{\"store\": {" P ", \"eviction\": \"random\"}}", "$.store.eviction", "fifo-reinsert");
    expect_error("{\"store\": {" P ", \"capacity\": -5}}", "$.store.capacity", "negative");
    expect_error("{\"store\": {" P ", \"io_timeout\": 0}}", "$.store.io_timeout", "out of range");
    expect_error("{\"store\": {" P "}, \"executor\": {\"max_operations\": 0}}",
                 "$.executor.max_operations", "out of range");
    expect_error("{\"store\": {" P "}, \"executor\": {\"read_workers\": 1000}}",
                 "$.executor.read_workers", "out of range");
    expect_error("{\"store\": {" P "}, \"executor\": {\"failure_threshold\": 0}}",
                 "$.executor.failure_threshold", "out of range");
    expect_error("{\"store\": {" P "}, \"executor\": {\"recovery_interval\": -1}}",
                 "$.executor.recovery_interval", "out of range");
    expect_error("{\"store\": {" P "}, \"namespace\": {\"deployment_id\": \"\"}}",
                 "$.namespace.deployment_id", "non-empty");
}

static void a_missing_path_bad_json_and_duplicates_are_errors(void **state)
{
    (void)state;
    expect_error("{}", "$.store.path", "required");
    expect_error("{\"store\": {\"path\": \"\"}}", "$.store.path", "non-empty");
    expect_error("{\"store\": {" P ",}}", "line 1", NULL);
    expect_error("{\"store\": {" P ", \"path\": \"y\"}}", "duplicate", NULL);
    l3_config c;
    l3_error err;
    assert_int_equal(l3_config_load("/nonexistent/l3.json", &c, &err), L3_ECONFIG);
    assert_non_null(strstr(err.msg, "/nonexistent/l3.json"));
}

static void a_bad_config_creates_nothing_on_disk(void **state)
{
    (void)state;
    char path[256], json[512];
    snprintf(path, sizeof path, "%s/never.%d.store", L3_TEST_DIR_DEFAULT, (int)getpid());
    unlink(path);
    snprintf(json, sizeof json, "{\"store\": {\"path\": \"%s\", \"slab_size\": \"5MiB\"}}", path);
    l3_config c;
    assert_int_equal(l3_config_parse(json, &c, NULL), L3_ECONFIG);
    assert_int_equal(access(path, F_OK), -1);
}

/* Errors blamed on the field that causes them, before anything is opened:
 * an index bound too large for the capacity, a path that is a directory
 * or in a missing directory; a file's syntax error names the file. */
static void errors_name_the_field_and_the_file_that_cause_them(void **state)
{
    (void)state;
    expect_error("{\"store\": {" P ", \"capacity\": \"256MiB\", \"max_objects\": 8000000}}",
                 "$.store.max_objects", "too many");
    expect_error("{\"store\": {\"path\": \"" L3_TEST_DIR_DEFAULT "\"}}", "$.store.path", "is a directory");
    expect_error("{\"store\": {\"path\": \"/nonexistent-l3/x.store\"}}", "$.store.path",
                 "directory /nonexistent-l3 does not exist");
    expect_error("{\"store\": {" P ", \"mode\": \"0644\"}}", "$.store.mode", "nobody else");
    expect_error("{\"store\": {" P ", \"mode\": 420}}", "$.store.mode", "an integer");
    l3_config g;
    assert_int_equal(l3_config_parse("{\"store\": {" P ", \"mode\": \"0660\"}}", &g, NULL), L3_OK);
    assert_int_equal(g.store.mode, 0660);
    l3_config_free(&g);
    const char *file = rewritten("{\"store\": {\"path\": \"x.store\",\n \"capacity\": }}", "", "");
    l3_config c;
    l3_error err;
    assert_int_equal(l3_config_load(file, &c, &err), L3_ECONFIG);
    if (!strstr(err.msg, file) || !strstr(err.msg, "line 2"))
        fail_msg("message \"%s\" lacks the file and line", err.msg);
    unlink(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_path_alone_takes_every_default),
        cmocka_unit_test(the_example_config_loads),
        cmocka_unit_test(sizes_take_units_and_reject_nonsense),
        cmocka_unit_test(unknown_keys_are_errors_that_name_their_path),
        cmocka_unit_test(wrong_types_are_errors_that_name_their_path),
        cmocka_unit_test(out_of_range_values_are_errors),
        cmocka_unit_test(a_missing_path_bad_json_and_duplicates_are_errors),
        cmocka_unit_test(errors_name_the_field_and_the_file_that_cause_them),
        cmocka_unit_test(a_bad_config_creates_nothing_on_disk),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
