/* Metrics: the executor snapshot and store stats as JSON and as Prometheus
 * text exposition, every line well formed, values matching the counters. */
#include <ctype.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_metrics.h"
#include "l3_slabstore.h"
#include "store_util.h"

/* Every sample line: name{labels} value, its family declared before it. */
static void assert_exposition(const char *text)
{
    char *copy = strdup(text), *save = NULL;
    char families[256][96];
    int nf = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP ", 7) == 0)
            continue;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            char name[96], type[32];
            assert_int_equal(sscanf(line + 7, "%95s %31s", name, type), 2);
            assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0);
            if (strcmp(type, "counter") == 0)
                assert_non_null(strstr(name, "_total"));
            snprintf(families[nf++], sizeof families[0], "%s", name);
            continue;
        }
        const char *p = line;
        assert_true(isalpha((unsigned char)*p) || *p == '_');
        while (isalnum((unsigned char)*p) || *p == '_' || *p == ':')
            p++;
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)(p - line), line);
        bool declared = false;
        for (int i = 0; i < nf && !declared; i++)
            declared = strcmp(families[i], name) == 0;
        if (!declared)
            fail_msg("sample before its family: %s", line);
        if (*p == '{') {
            const char *end = strchr(p, '}');
            assert_non_null(end);
            p = end + 1;
        }
        assert_int_equal(*p, ' ');
        char *num_end;
        strtod(p + 1, &num_end);
        assert_true(num_end != p + 1 && *num_end == '\0');
    }
    free(copy);
}

static void metrics_render_the_executor_and_the_store(void **state)
{
    (void)state;
    char path[512];
    temp_store_path(path, sizeof path, "metrics");
    l3_slab_options o = test_options(path, 16ull << 20, L3_ENGINE_AUTO);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    harness *h = harness_start_raw(l3_slabstore_store(s), CONFIG, test_layout(1, 0, 0), l3_monotonic_clock());
    l3_storage_key k = key("m");
    int32_t block = 1;
    l3_operation put = put_op(1, &k, &block), get = get_op(2, &k, &block);
    submit_ok(h, &put, 1);
    harness_wait(h, 1);
    submit_ok(h, &get, 1);
    harness_wait(h, 1);
    char *text = l3_metrics_of(h->executor, s);
    assert_exposition(text);
    assert_non_null(strstr(text, "l3cache_executor_events_total{kind=\"put\",event=\"accepted\"} 1\n"));
    assert_non_null(strstr(text, "l3cache_executor_keys_total{kind=\"get\",result=\"success\"} 1\n"));
    assert_non_null(strstr(text, "l3cache_executor_health{state=\"healthy\"} 1\n"));
    assert_non_null(strstr(text, "l3cache_store_objects 1\n"));
    assert_non_null(strstr(text, "l3cache_store_get_hits_total 1\n"));
    assert_non_null(strstr(text, "l3cache_store_io_submissions_total{engine="));
    /* Admission's and the groups' counters (admission off: the top rung, nothing declined). */
    assert_non_null(strstr(text, "l3cache_store_admission_rung 6\n"));
    assert_non_null(strstr(text, "l3cache_store_put_not_admitted_total 0\n"));
    assert_non_null(strstr(text, "l3cache_store_groups 0\n"));
    assert_non_null(strstr(text, "# TYPE l3cache_store_get_checked_early_total counter\n"));
    free(text);
    char *json = l3_slabstore_stats_json(s);
    json_t *root = json_loads(json, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(root, "objects")), 1);
    assert_int_equal(json_integer_value(json_object_get(root, "get_hits")), 1);
    json_decref(root);
    free(json);
    json = l3_executor_snapshot_json(h->executor);
    root = json_loads(json, 0, NULL);
    json_t *ops = json_object_get(root, "operations");
    assert_int_equal(json_array_size(ops), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(ops, 1), "kind")), "get");
    assert_true(json_real_value(json_object_get(json_object_get(json_array_get(ops, 1), "events"),
                                                "backend_calls")) == 1.0);
    assert_string_equal(json_string_value(json_object_get(root, "health_state")), "healthy");
    json_decref(root);
    free(json);
    harness_free(h);
    unlink(path);
}

/* A device's path is one label value, whole however long, its quote,
 * backslash and newline escaped; stats that are no store's (more devices
 * than a store has) render as NULL, not as some of them. */
static void device_labels_are_whole_and_escaped(void **state)
{
    (void)state;
    l3_slab_stats st;
    memset(&st, 0, sizeof st);
    st.engine = "io_uring";
    st.num_devices = 1;
    char path[1200];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    memcpy(path + 1000, "a\"b\\c\nd", 7);
    st.device[0].path = path;
    st.device[0].state = "ok";
    char *text = l3_metrics_prometheus(NULL, &st);
    assert_non_null(text);
    assert_exposition(text);
    char want[1400];
    snprintf(want, sizeof want,
             "l3cache_store_device_up{device=\"0\",path=\"%.1000sa\\\"b\\\\c\\nd%s\",state=\"ok\"} 1\n", path,
             path + 1007);
    assert_non_null(strstr(text, want));
    free(text);
    st.num_devices = L3_SLAB_MAX_DEVICES + 1;
    assert_null(l3_metrics_prometheus(NULL, &st));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(metrics_render_the_executor_and_the_store),
        cmocka_unit_test(device_labels_are_whole_and_escaped),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
