#include <jansson.h>
#include <stdlib.h>

#include "l3_executor.h"

static json_t *pairs(const char *const *names, const double *values, int n)
{
    json_t *obj = json_object();
    for (int i = 0; i < n; i++)
        json_object_set_new(obj, names[i], json_real(values[i]));
    return obj;
}

char *l3_snapshot_to_json(const l3_snapshot *snap)
{
    json_t *root = json_object(), *ops = json_array();
    for (int k = 0; k < 3; k++) {
        const l3_operation_snapshot *row = &snap->operations[k];
        json_t *r = json_object();
        json_object_set_new(r, "kind", json_string(row->kind));
        json_object_set_new(r, "events", pairs(l3_event_names, row->events, L3_NUM_EVENTS));
        json_object_set_new(r, "success_keys", json_real(row->success_keys));
        json_object_set_new(r, "failed_keys", json_real(row->failed_keys));
        json_object_set_new(r, "success_bytes", json_real(row->success_bytes));
        json_object_set_new(r, "queue_seconds", json_real(row->queue_seconds));
        json_object_set_new(r, "backend_seconds", json_real(row->backend_seconds));
        json_object_set_new(r, "operations", pairs(l3_phase_names, row->operations, L3_NUM_PHASES));
        json_object_set_new(r, "bytes", pairs(l3_phase_names, row->bytes, L3_NUM_PHASES));
        json_array_append_new(ops, r);
    }
    json_object_set_new(root, "operations", ops);
    json_object_set_new(root, "health_state", json_string(snap->health_state));
    json_object_set_new(root, "health_term", json_real((double)snap->health_term));
    json_object_set_new(root, "unsafe_io", json_boolean(snap->unsafe_io));
    char *text = json_dumps(root, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(root);
    return text;
}

char *l3_executor_snapshot_json(l3_executor *executor)
{
    l3_snapshot snap;
    l3_executor_snapshot(executor, &snap);
    return l3_snapshot_to_json(&snap);
}
