#include "l3_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return;
        b->p = p;
        b->cap = cap;
    }
}

static void family(buf *b, const char *name, const char *type, const char *help)
{
    put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value, whole: backslash, quote and newline escaped. */
static void put_label(buf *b, const char *v)
{
    for (; v && *v; v++) {
        if (*v == '\\' || *v == '"' || *v == '\n')
            put(b, "\\%c", *v == '\n' ? 'n' : *v);
        else
            put(b, "%c", *v);
    }
}

/* Each device of the store: up or not, and what it moved. */
static void device_rows(buf *b, const l3_slab_stats *st)
{
    static const char *const names[] = { "l3cache_store_device_up", "l3cache_store_device_io_errors_total",
                                         "l3cache_store_device_read_bytes_total",
                                         "l3cache_store_device_written_bytes_total" };
    static const char *const help[] = { "1 while the device serves; 0 when it is missing or failed.",
                                        "I/O requests that failed on the device.", "Bytes read from the device.",
                                        "Bytes written to the device." };
    for (int k = 0; k < 4; k++) {
        family(b, names[k], k ? "counter" : "gauge", help[k]);
        for (uint32_t d = 0; d < st->num_devices; d++) {
            const l3_slab_device_stats *v = &st->device[d];
            uint64_t x = k == 0 ? (uint64_t)(v->state && strcmp(v->state, "ok") == 0)
                       : k == 1 ? v->io_errors : k == 2 ? v->bytes_read : v->bytes_written;
            put(b, "%s{device=\"%u\",path=\"", names[k], d);
            put_label(b, v->path);
            if (k == 0) /* (the state names why; counters keep one series per device) */
                put(b, "\",state=\"%s\"} %llu\n", v->state ? v->state : "", (unsigned long long)x);
            else
                put(b, "\"} %llu\n", (unsigned long long)x);
        }
    }
}

/* The executor's snapshot: events, keys, bytes and seconds per kind,
 * operations by phase, the breaker. */
static void executor_rows(buf *b, const l3_snapshot *snap)
{
    family(b, "l3cache_executor_events_total", "counter", "Executor events per operation kind.");
    for (int k = 0; k < 3; k++)
        for (int e = 0; e < L3_NUM_EVENTS; e++)
            put(b, "l3cache_executor_events_total{kind=\"%s\",event=\"%s\"} %.0f\n",
                snap->operations[k].kind, l3_event_names[e], snap->operations[k].events[e]);
    family(b, "l3cache_executor_keys_total", "counter", "Keys finished, by outcome.");
    for (int k = 0; k < 3; k++) {
        put(b, "l3cache_executor_keys_total{kind=\"%s\",result=\"success\"} %.0f\n",
            snap->operations[k].kind, snap->operations[k].success_keys);
        put(b, "l3cache_executor_keys_total{kind=\"%s\",result=\"failure\"} %.0f\n",
            snap->operations[k].kind, snap->operations[k].failed_keys);
    }
    family(b, "l3cache_executor_success_bytes_total", "counter", "Bytes of keys that succeeded.");
    for (int k = 0; k < 3; k++)
        put(b, "l3cache_executor_success_bytes_total{kind=\"%s\"} %.0f\n", snap->operations[k].kind,
            snap->operations[k].success_bytes);
    family(b, "l3cache_executor_queue_seconds_total", "counter", "Seconds operations waited in queue.");
    for (int k = 0; k < 3; k++)
        put(b, "l3cache_executor_queue_seconds_total{kind=\"%s\"} %.9g\n", snap->operations[k].kind,
            snap->operations[k].queue_seconds);
    family(b, "l3cache_executor_backend_seconds_total", "counter", "Seconds spent in the store.");
    for (int k = 0; k < 3; k++)
        put(b, "l3cache_executor_backend_seconds_total{kind=\"%s\"} %.9g\n", snap->operations[k].kind,
            snap->operations[k].backend_seconds);
    family(b, "l3cache_executor_operations", "gauge", "Operations not yet delivered, by phase.");
    family(b, "l3cache_executor_bytes", "gauge", "Bytes of operations not yet delivered, by phase.");
    for (int k = 0; k < 3; k++)
        for (int p = 0; p < L3_NUM_PHASES; p++) {
            put(b, "l3cache_executor_operations{kind=\"%s\",phase=\"%s\"} %.0f\n",
                snap->operations[k].kind, l3_phase_names[p], snap->operations[k].operations[p]);
            put(b, "l3cache_executor_bytes{kind=\"%s\",phase=\"%s\"} %.0f\n",
                snap->operations[k].kind, l3_phase_names[p], snap->operations[k].bytes[p]);
        }
    family(b, "l3cache_executor_health", "gauge", "1 for the backend's current breaker state.");
    static const char *const states[] = { "healthy", "open", "half_open" };
    for (int i = 0; i < 3; i++)
        put(b, "l3cache_executor_health{state=\"%s\"} %d\n", states[i],
            strcmp(snap->health_state, states[i]) == 0);
    family(b, "l3cache_executor_health_term", "gauge", "The breaker's term: how many times its state changed.");
    put(b, "l3cache_executor_health_term %llu\n", (unsigned long long)snap->health_term);
    family(b, "l3cache_executor_unsafe_io", "gauge", "1 when some native I/O never proved retirement.");
    put(b, "l3cache_executor_unsafe_io %d\n", snap->unsafe_io);
}

char *l3_metrics_prometheus(const l3_snapshot *snap, const l3_slab_stats *st)
{
    if (st && st->num_devices > L3_SLAB_MAX_DEVICES)
        return NULL; /* no store's stats: l3_slabstore_stats never says so */
    buf b = { 0 };
    put(&b, "%s", "");
    if (snap)
        executor_rows(&b, snap);
    if (st) {
        struct { const char *name, *type, *help; uint64_t value; } rows[] = {
            { "l3cache_store_objects", "gauge", "Objects in the index.", st->objects },
            { "l3cache_store_payload_bytes", "gauge", "Payload bytes of the objects.", st->payload_bytes },
            { "l3cache_store_capacity_bytes", "gauge", "Bytes of the file or device in use.", st->capacity_bytes },
            { "l3cache_store_data_bytes", "gauge", "Bytes of the slabs.", st->data_bytes },
            { "l3cache_store_max_objects", "gauge", "The index's bound.", st->max_objects },
            { "l3cache_store_shared_bytes", "gauge", "Bytes of the shared mapping (index, slot table, slab states): the store's RAM.", st->shared_bytes },
            { "l3cache_store_puts_total", "counter", "Put batches.", st->puts },
            { "l3cache_store_put_keys_written_total", "counter", "Keys a put wrote.", st->put_keys_written },
            { "l3cache_store_put_keys_existing_total", "counter", "Keys a put found present (create-only).", st->put_keys_existing },
            { "l3cache_store_put_keys_rejected_total", "counter", "Keys a put could not place.", st->put_keys_rejected },
            { "l3cache_store_gets_total", "counter", "Get batches.", st->gets },
            { "l3cache_store_get_hits_total", "counter", "Keys a get served.", st->get_hits },
            { "l3cache_store_get_misses_total", "counter", "Keys a get found missing or of another size.", st->get_misses },
            { "l3cache_store_evictions_total", "counter", "Slabs evicted.", st->evictions },
            { "l3cache_store_evicted_objects_total", "counter", "Objects dropped by eviction.", st->evicted_objects },
            { "l3cache_store_index_bound_evictions_total", "counter", "Slabs evicted because the index was full, not the slabs (store.expected_object_size too large).", st->index_bound_evictions },
            { "l3cache_store_put_over_budget_total", "counter", "Put keys declined by store.write_budget.", st->put_keys_over_budget },
            { "l3cache_store_put_not_admitted_total", "counter", "Put keys declined by store.admission (and the rest of their batch).", st->put_keys_not_admitted },
            { "l3cache_store_admitted_probation_total", "counter", "Keys written at first sight, into the probation log.", st->admitted_probation },
            { "l3cache_store_admitted_main_total", "counter", "Keys written seen before, into the main log.", st->admitted_main },
            { "l3cache_store_admission_rung", "gauge", "The admission ladder's rung in force (6: everything).", st->admission_rung },
            { "l3cache_store_admission_switches_total", "counter", "Rung changes of the adaptive admission.", st->admission_switches },
            { "l3cache_store_slabs_probation", "gauge", "Slabs of the probation log.", st->slabs_probation },
            { "l3cache_store_groups", "gauge", "Page groups tracked (a page's objects over ranks and pools).", st->groups_live },
            { "l3cache_store_group_followed_total", "counter", "Put keys that followed their group's decision.", st->group_followed },
            { "l3cache_store_gate_waits_total", "counter", "Put waves that waited for gets in flight (the read-first gate).", st->gate_waits },
            { "l3cache_store_gate_forced_total", "counter", "Put waves that went on after the gate's longest wait.", st->gate_forced },
            { "l3cache_store_group_dropped_total", "counter", "Objects dropped because a member of their group was evicted.", st->group_dropped },
            { "l3cache_store_get_checked_early_total", "counter", "Keys a get checked while other reads of its batch were in flight.", st->get_keys_checked_early },
            { "l3cache_store_reinserted_objects_total", "counter", "Objects kept from slabs being reused (rewritten).", st->reinserted_objects },
            { "l3cache_store_reinserted_bytes_total", "counter", "Payload bytes rewritten by reinsertion.", st->reinserted_bytes },
            { "l3cache_store_early_keeps_total", "counter", "Objects reinsertion kept though read only early in their time (tried while 1 in 8 is read again).", st->early_keeps },
            { "l3cache_store_checksum_failures_total", "counter", "Objects that failed their crc32c.", st->checksum_failures },
            { "l3cache_store_stale_reads_total", "counter", "Gets whose slab was reused during the read.", st->stale_reads },
            { "l3cache_store_unaligned_ios_total", "counter", "Payloads moved through a bounce copy.", st->unaligned_ios },
            { "l3cache_store_read_bytes_total", "counter", "Bytes read from the device.", st->bytes_read },
            { "l3cache_store_written_bytes_total", "counter", "Bytes written to the device.", st->bytes_written },
            { "l3cache_store_io_errors_total", "counter", "I/O requests that failed.", st->io_errors },
            { "l3cache_store_io_timeouts_total", "counter", "Batches not reaped within io_timeout.", st->io_timeouts },
            { "l3cache_store_io_retries_total", "counter", "Resubmissions after a short transfer or -EAGAIN.", st->io_short_retries + st->io_eagain_retries },
            { "l3cache_store_recovered_objects", "gauge", "Objects restored at open.", st->recovered_objects },
            { "l3cache_store_broken", "gauge", "1 when the store refuses I/O until restart.", st->broken },
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            family(&b, rows[i].name, rows[i].type, rows[i].help);
            put(&b, "%s %llu\n", rows[i].name, (unsigned long long)rows[i].value);
        }
        family(&b, "l3cache_store_slabs", "gauge", "Slabs by state.");
        put(&b, "l3cache_store_slabs{state=\"free\"} %u\n", st->slabs_free);
        put(&b, "l3cache_store_slabs{state=\"open\"} %u\n", st->slabs_open);
        put(&b, "l3cache_store_slabs{state=\"sealed\"} %u\n", st->slabs_sealed);
        family(&b, "l3cache_store_io_submissions_total", "counter", "Engine submissions by buffer kind.");
        put(&b, "l3cache_store_io_submissions_total{engine=\"%s\",buffer=\"fixed\"} %llu\n", st->engine,
            (unsigned long long)st->io_fixed);
        put(&b, "l3cache_store_io_submissions_total{engine=\"%s\",buffer=\"unregistered\"} %llu\n",
            st->engine, (unsigned long long)st->io_unfixed);
        family(&b, "l3cache_store_removals_total", "counter", "Objects that left the store, by reason (the removal feed).");
        for (uint32_t r = L3_REMOVED_EVICTED; r <= L3_REMOVED_GROUP; r++)
            put(&b, "l3cache_store_removals_total{reason=\"%s\"} %llu\n", l3_removal_reason_name(r),
                (unsigned long long)st->removals_by_reason[r]);
        family(&b, "l3cache_store_removal_feed_slots", "gauge", "Removals the feed holds before a slow reader misses one.");
        put(&b, "l3cache_store_removal_feed_slots %llu\n", (unsigned long long)st->removal_feed_slots);
        family(&b, "l3cache_store_host_fixed", "gauge", "1 when the Host pool is registered as fixed buffers.");
        put(&b, "l3cache_store_host_fixed %d\n", st->host_fixed);
        device_rows(&b, st);
    }
    return b.p;
}

char *l3_metrics_of(l3_executor *executor, l3_slabstore *store)
{
    l3_snapshot snap;
    l3_slab_stats st;
    if (executor)
        l3_executor_snapshot(executor, &snap);
    if (store)
        l3_slabstore_stats(store, &st);
    return l3_metrics_prometheus(executor ? &snap : NULL, store ? &st : NULL);
}

