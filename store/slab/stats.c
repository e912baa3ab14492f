/* The slab store's stats (l3_slabstore.h): what the shared mapping knows,
 * what this process's engine counted, the devices' states, and the JSON
 * the binding and l3fsck read. */
#include <jansson.h>
#include <string.h>

#include "admit.h"
#include "entries.h"

/* What the shared mapping knows: objects, slabs, processes, reservations. */
static void shared_stats(l3_slabstore *s, l3_slab_stats *o)
{
    l3_slab_lock(s);
    o->objects = s->index.meta->count;
    for (uint32_t i = 0; i < s->geo.num_slabs; i++) {
        slab_info *sl = &s->slabs[i];
        o->payload_bytes += sl->live_bytes;
        if (sl->state == S_FREE)
            o->slabs_free++;
        else if (sl->state == S_OPEN)
            o->slabs_open++;
        else
            o->slabs_sealed++;
        o->slabs_probation += sl->state != S_FREE && sl->log == LOG_PROBATION;
    }
    o->groups_live = s->groups.meta->count;
    o->index_bytes = l3_index_capacity(&s->index) * sizeof(l3_index_entry);
    o->shared_bytes = l3_shm_bytes(&s->geo);
    o->reserved_slots = s->sh->alloc.reserved;
    o->recovered_objects = s->sh->recovered_objects;
    o->recovered_summaries = s->sh->recovered_summaries;
    o->opened_from_checkpoint = s->sh->opened_from_checkpoint;
    o->epoch = s->sh->sb.epoch;
    o->early_keeps_judged = s->sh->keep_trial.judged;
    o->early_keeps_read = s->sh->keep_trial.read;
    l3_slab_unlock(s);
    o->removals = atomic_load(&s->sh->feed.next);
    for (uint32_t r = 0; r < L3_FEED_REASONS; r++)
        o->removals_by_reason[r] = atomic_load(&s->sh->feed.by_reason[r]);
    o->removal_feed_slots = s->sh->feed.mask + 1;
    o->attached_processes = (uint32_t)l3_shm_attached(&s->shm, NULL, 0);
    o->admission = l3_admission_name(s->sh->admit.mode);
    o->admission_rung = atomic_load(&s->sh->admit.rung);
    o->admission_switches = s->sh->admit.switches;
    o->admission_capacity = s->sh->admit.cap;
    o->gate_waits = atomic_load(&s->sh->gate.waits);
    o->gate_forced = atomic_load(&s->sh->gate.forced);
}

/* What this process's engine counted. */
static void engine_stats(l3_slabstore *s, l3_slab_stats *o)
{
    l3_io_stats *io = l3_io_engine_stats(s->engine);
    o->bytes_written = atomic_load(&io->bytes_written);
    o->bytes_read = atomic_load(&io->bytes_read);
    o->io_fixed = atomic_load(&io->fixed);
    o->io_unfixed = atomic_load(&io->unfixed);
    o->io_host_pins = atomic_load(&io->host_pins);
    o->io_short_retries = atomic_load(&io->short_retries);
    o->io_eagain_retries = atomic_load(&io->eagain_retries);
    o->io_errors = atomic_load(&io->errors);
    o->io_timeouts = atomic_load(&io->timeouts);
    o->io_faults = l3_io_engine_faults(s->engine);
    o->engine = l3_engine_name(l3_io_engine_kind(s->engine));
    for (uint32_t d = 0; d < s->ndev; d++)
        l3_io_engine_dev_stats(s->engine, d, &o->device[d].io_errors, &o->device[d].bytes_read,
                               &o->device[d].bytes_written);
    if (s->ndev == 1) {
        o->device[0].io_errors = o->io_errors;
        o->device[0].bytes_read = o->bytes_read;
        o->device[0].bytes_written = o->bytes_written;
    }
    o->host_fixed = l3_io_engine_host_fixed(s->engine);
    o->host_regions = atomic_load(&s->host_regions);
    o->broken = l3_io_engine_broken(s->engine);
}

/* Each device's path, state and slabs. */
static void device_states(l3_slabstore *s, l3_slab_stats *o)
{
    static const char *const names[] = { "ok", "missing", "failed" };
    o->num_devices = s->ndev;
    for (uint32_t d = 0; d < s->ndev; d++) {
        uint32_t st = s->sh ? s->sh->dev_state[d] : (uint32_t)(s->dev[d].fd < 0 ? DEV_MISSING : DEV_OK);
        o->device[d].path = s->dev[d].path;
        o->device[d].state = names[st <= DEV_FAILED ? st : DEV_FAILED];
        o->device[d].slabs = s->geo.num_slabs / s->geo.num_devices + (d < s->geo.num_slabs % s->geo.num_devices);
        o->devices_offline += st != DEV_OK;
    }
}

void l3_slabstore_stats(l3_slabstore *s, l3_slab_stats *o)
{
    memset(o, 0, sizeof *o);
    if (s->sh)
        shared_stats(s, o); /* (after close, only this process's counters) */
    o->capacity_bytes = s->geo.capacity * s->geo.num_devices;
    o->data_bytes = (uint64_t)s->geo.num_slabs * s->geo.slab_size;
    o->block_size = s->geo.block_size;
    o->slab_size = s->geo.slab_size;
    o->slabs_total = s->geo.num_slabs;
    o->max_objects = s->geo.max_objects;
    o->puts = atomic_load(&s->puts);
    o->put_keys_written = atomic_load(&s->put_written);
    o->put_keys_existing = atomic_load(&s->put_existing);
    o->put_keys_rejected = atomic_load(&s->put_rejected);
    o->put_keys_not_admitted = atomic_load(&s->not_admitted);
    o->admitted_probation = atomic_load(&s->admitted_probation);
    o->admitted_main = atomic_load(&s->admitted_main);
    o->group_followed = atomic_load(&s->group_followed);
    o->group_dropped = atomic_load(&s->group_dropped);
    o->gets = atomic_load(&s->gets);
    o->get_hits = atomic_load(&s->get_hits);
    o->get_misses = atomic_load(&s->get_misses);
    o->get_keys_checked_early = atomic_load(&s->get_checked_early);
    if (s->engine)
        engine_stats(s, o);
    else
        o->engine = "closed";
    o->evictions = atomic_load(&s->evictions);
    o->evicted_objects = atomic_load(&s->evicted_objects);
    o->index_bound_evictions = atomic_load(&s->index_bound_evictions);
    o->reinserted_objects = atomic_load(&s->reinserted_objects);
    o->reinserted_bytes = atomic_load(&s->reinserted_bytes);
    o->early_keeps = atomic_load(&s->early_keeps);
    o->put_keys_over_budget = atomic_load(&s->over_budget);
    o->checksum_failures = atomic_load(&s->checksum_failures);
    o->stale_reads = atomic_load(&s->stale_reads);
    o->unaligned_ios = atomic_load(&s->unaligned_ios);
    o->flushes = atomic_load(&s->flushes);
    o->flush = s->opt.flush == L3_FLUSH_BATCH ? "batch" : "interval";
    o->device_max_segments = s->max_segments;
    o->device_max_request = s->max_request;
    o->open_seconds = s->open_seconds;
    device_states(s, o);
    o->broken = o->broken || atomic_load(&s->fatal);
}

/* The stats' JSON text (free() it). */
static char *stats_json(const l3_slab_stats *st)
{
    json_t *o = json_object();
#define U(name) json_object_set_new(o, #name, json_integer((json_int_t)st->name))
    U(objects); U(payload_bytes); U(capacity_bytes); U(data_bytes); U(block_size); U(slab_size);
    U(slabs_total); U(slabs_free); U(slabs_open); U(slabs_sealed); U(max_objects); U(index_bytes); U(shared_bytes);
    U(puts); U(put_keys_written); U(put_keys_existing); U(put_keys_rejected); U(put_keys_not_admitted);
    U(admitted_probation); U(admitted_main); U(group_followed); U(group_dropped);
    U(admission_rung); U(admission_switches); U(admission_capacity); U(slabs_probation); U(groups_live);
    U(gets); U(get_hits); U(get_misses); U(get_keys_checked_early); U(bytes_written); U(bytes_read);
    U(put_keys_over_budget); U(evictions); U(evicted_objects); U(index_bound_evictions); U(reinserted_objects); U(reinserted_bytes); U(checksum_failures); U(stale_reads); U(unaligned_ios);
    U(early_keeps); U(early_keeps_judged); U(early_keeps_read); U(removals); U(removal_feed_slots); U(flushes); U(gate_waits); U(gate_forced);
    U(io_fixed); U(io_unfixed); U(io_short_retries); U(io_eagain_retries); U(io_errors);
    U(io_timeouts); U(io_faults); U(io_host_pins);
    U(recovered_objects); U(recovered_summaries); U(epoch); U(attached_processes); U(reserved_slots); U(device_max_segments); U(device_max_request); U(host_regions);
#undef U
    json_object_set_new(o, "opened_from_checkpoint", json_boolean(st->opened_from_checkpoint));
    json_object_set_new(o, "open_seconds", json_real(st->open_seconds));
    json_object_set_new(o, "engine", json_string(st->engine ? st->engine : ""));
    json_object_set_new(o, "admission", json_string(st->admission ? st->admission : ""));
    json_object_set_new(o, "flush", json_string(st->flush ? st->flush : ""));
    json_object_set_new(o, "host_fixed", json_boolean(st->host_fixed));
    json_object_set_new(o, "broken", json_boolean(st->broken));
    json_object_set_new(o, "devices_offline", json_integer(st->devices_offline));
    json_t *why = json_object();
    for (uint32_t r = L3_REMOVED_EVICTED; r <= L3_REMOVED_GROUP; r++)
        json_object_set_new(why, l3_removal_reason_name(r), json_integer((json_int_t)st->removals_by_reason[r]));
    json_object_set_new(o, "removals_by_reason", why);
    json_t *devs = json_array();
    L3_ASSERT(st->num_devices <= L3_SLAB_MAX_DEVICES); /* l3_slabstore_stats' own, just filled */
    for (uint32_t d = 0; d < st->num_devices; d++) {
        const l3_slab_device_stats *v = &st->device[d];
        json_array_append_new(devs, json_pack("{s:s, s:s, s:I, s:I, s:I, s:I}", "path", v->path ? v->path : "",
                                              "state", v->state ? v->state : "", "slabs", (json_int_t)v->slabs,
                                              "io_errors", (json_int_t)v->io_errors, "bytes_read",
                                              (json_int_t)v->bytes_read, "bytes_written", (json_int_t)v->bytes_written));
    }
    json_object_set_new(o, "devices", devs);
    char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(o);
    return text;
}

char *l3_slabstore_stats_json(l3_slabstore *s)
{
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    return stats_json(&st);
}
