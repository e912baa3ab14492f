/* l3cache: the executor, a C port of the reference executor.
 *
 * Bounded queues of storage jobs and the worker threads that run them
 * against a store. The scheduler plans each operation and holds its Host
 * blocks until every cache owner proves the native I/O retired; the
 * executor only runs what it is given, in a bounded window, and reports
 * per-key facts. A job that cannot run (a full queue, a backend held open
 * after failures, shutdown) completes at once as a retired failure; a
 * backend that cannot prove retirement disables new I/O until restart. */
#ifndef L3_EXECUTOR_H
#define L3_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_clock.h"
#include "l3_health.h"
#include "l3_keys.h"
#include "l3_layout.h"
#include "l3_status.h"
#include "l3_store.h"

/* The executor's limits: the scheduler's storage credits and the workers. */
typedef struct l3_executor_config {
    size_t max_operations;         /* operations the scheduler keeps in flight */
    size_t max_keys_per_operation; /* keys one operation names */
    size_t query_workers;          /* threads running existence queries */
    size_t read_workers;           /* gets run at once: by one driver thread, or one thread each */
    bool gets_on_workers;          /* gets on read_workers threads, one each, not on one driver thread
                                      (which a store that runs gets in three calls allows) */
    size_t write_workers;          /* puts run at once: by one driver thread, or one thread each */
    bool puts_on_workers;          /* puts on write_workers threads, one each, not on one driver thread
                                      (which a store that runs puts in three calls allows) */
    uint32_t failure_threshold;    /* failed backend calls that open the backend */
    double recovery_interval;      /* seconds an open backend refuses calls before one probe */
} l3_executor_config;

/* A content-addressed key of a storage operation. */
typedef struct l3_storage_key {
    uint32_t group;           /* the cache group */
    const char *content_hash; /* the prefix page's content hash */
    int32_t page_offset;      /* the block's ordinal within its prefix page */
} l3_storage_key;

typedef enum l3_op_kind { L3_OP_QUERY, L3_OP_GET, L3_OP_PUT, L3_OP_CANCEL } l3_op_kind;

/* A storage operation. Query: keys. Get/Put: keys and, per key, the
 * 1-based Host block (num_host_blocks must equal num_keys). Cancel: op_id
 * only; it gets no completion of its own. */
typedef struct l3_operation {
    l3_op_kind kind;
    uint64_t op_id;
    const l3_storage_key *keys;
    size_t num_keys;
    const int32_t *host_blocks;
    size_t num_host_blocks;
} l3_operation;

/* One operation this rank finished. */
typedef struct l3_completion {
    uint64_t op_id;
    size_t num_keys;
    bool *success;         /* per key: it succeeded here */
    bool *object_failures; /* per key: the object is confirmed missing or invalid here */
    bool retired;          /* nothing still touches its Host memory */
} l3_completion;

/* The executor's queue pressure. */
typedef struct l3_pressure {
    int64_t queued_operations;
    int64_t queued_bytes;
    int64_t oldest_operation_us; /* age of the oldest operation not yet finished */
} l3_pressure;

/* One poll: the clock, the completions since the last poll, the queues. */
typedef struct l3_poll {
    int64_t now_us;
    l3_completion *completions;
    size_t num_completions;
    l3_pressure pressure;
} l3_poll;

#define L3_NUM_EVENTS 7
#define L3_NUM_PHASES 3
/* Event names, in l3_operation_snapshot.events order: accepted,
 * backend_calls, completed, cancelled_queued, cancelled_running, rejected,
 * unretired. */
extern const char *const l3_event_names[L3_NUM_EVENTS];
/* Phase names: queued, running, completed. */
extern const char *const l3_phase_names[L3_NUM_PHASES];

/* One kind's counters ("query", "get" or "put"). */
typedef struct l3_operation_snapshot {
    const char *kind;
    double events[L3_NUM_EVENTS];
    double success_keys;
    double failed_keys;
    double success_bytes;
    double queue_seconds;
    double backend_seconds;
    double operations[L3_NUM_PHASES]; /* jobs per phase */
    double bytes[L3_NUM_PHASES];      /* their bytes per phase */
} l3_operation_snapshot;

/* The executor's counters and the backend's health. */
typedef struct l3_snapshot {
    l3_operation_snapshot operations[3]; /* query, get, put */
    const char *health_state;            /* healthy, open or half_open */
    uint64_t health_term;                /* the breaker's term: how many times its state changed */
    bool unsafe_io;
} l3_snapshot;

/* The namespace objects are named in. */
typedef struct l3_namespace {
    const char *deployment_id;
    bool has_draft; /* the draft model's cache is stored too */
} l3_namespace;

typedef struct l3_executor l3_executor;

/* Check a config: positive credits, at least one worker of each kind, a
 * positive failure threshold and a finite, non-negative interval. */
l3_status l3_executor_config_validate(const l3_executor_config *config, l3_error *err);

/* Start the workers over `store` (the executor takes it over), which
 * reads and writes `host`, laid out as `layout`; objects are named in
 * `ns` under `weight_version`. A host buffer whose length is not the
 * layout's size, an invalid layout or config is an error and nothing
 * starts (the store stays the caller's). */
l3_status l3_executor_start(l3_store *store, l3_host_buffer host, const l3_host_layout *layout,
                            const l3_namespace *ns, const char *weight_version,
                            const l3_executor_config *config, l3_clock clock, l3_executor **out,
                            l3_error *err);

/* l3_executor_start over several Host regions: region r of the layout
 * (l3_group_layout.region) is regions[r], and `n` must be the layout's
 * l3_layout_regions, each region l3_layout_region_bytes long. All of them
 * are registered with the store for fixed-buffer I/O. */
l3_status l3_executor_start_regions(l3_store *store, const l3_host_buffer *regions, size_t n,
                                    const l3_host_layout *layout, const l3_namespace *ns,
                                    const char *weight_version, const l3_executor_config *config,
                                    l3_clock clock, l3_executor **out, l3_error *err);

/* The limits and workers it started with. */
l3_executor_config l3_executor_get_config(const l3_executor *executor);

/* Copy the namespace prefix objects are named under now to `out`. */
void l3_executor_key_prefix(l3_executor *executor, char out[L3_KEY_PREFIX_LEN + 1]);

/* The object key of `key` under the current namespace, into `out`. */
l3_status l3_executor_object_key(l3_executor *executor, const l3_storage_key *key, char *out,
                                 size_t out_size, l3_error *err);

/* Start a plan's operations, in order; none waits for I/O. Errors:
 * L3_ELAYOUT, L3_EINVAL (key count, non-increasing id, a Host block per
 * key), L3_ECREDITS. Operations before the faulty one stay submitted. */
l3_status l3_executor_submit(l3_executor *executor, const l3_operation *ops, size_t n,
                             l3_error *err);

/* The operations finished since the last poll and the queues' pressure,
 * under one lock and without I/O. Free with l3_poll_release. */
l3_status l3_executor_poll(l3_executor *executor, l3_poll *out, l3_error *err);

/* Block until some completion awaits a poll, or `timeout` seconds pass;
 * true when one does. For a thread that delivers completions without
 * spinning; poll stays non-blocking. */
bool l3_executor_wait(l3_executor *executor, double timeout);

/* Free what a poll allocated. */
void l3_poll_release(l3_poll *poll);

/* Nothing in flight, and no unproven retirement. */
bool l3_executor_is_idle(l3_executor *executor);

/* The counters, without backend work. Completed jobs count until a poll
 * delivers them. */
void l3_executor_snapshot(l3_executor *executor, l3_snapshot *out);

/* An event's value by name in a kind's snapshot; NaN for an unknown name. */
double l3_snapshot_event(const l3_operation_snapshot *row, const char *name);

/* A phase's value by name from `values` (operations or bytes); NaN if unknown. */
double l3_snapshot_phase(const double values[L3_NUM_PHASES], const char *name);

/* The row of `kind` ("query", "get", "put"), or NULL. */
const l3_operation_snapshot *l3_snapshot_row(const l3_snapshot *snap, const char *kind);

/* Render a snapshot as JSON text with the reference names; free() it. */
char *l3_snapshot_to_json(const l3_snapshot *snap);

/* Take a snapshot and render it as JSON; free() it. */
char *l3_executor_snapshot_json(l3_executor *executor);

/* Switch the namespace to `weight_version` once idle; L3_EBUSY otherwise. */
l3_status l3_executor_set_weight_version(l3_executor *executor, const char *weight_version,
                                         l3_error *err);

/* Delete the namespace's objects once idle: true when they are gone. */
bool l3_executor_delete_namespace(l3_executor *executor);

/* Stop the workers within `timeout` seconds and release the store; a later
 * call does nothing and returns L3_OK. If a worker is still in native I/O,
 * or some I/O never proved its retirement, returns L3_EUNRETIRED: the store
 * stays connected for the rest of the process and the caller must keep the
 * Host pool alive too. */
l3_status l3_executor_close(l3_executor *executor, double timeout, l3_error *err);

/* Close (5 s) if needed and free the executor and its store. After an
 * unretired close nothing is freed: the workers may still use it. */
void l3_executor_free(l3_executor *executor);

/* The executor's breaker, for diagnostics and tests. */
l3_health *l3_executor_health(l3_executor *executor);

#endif
