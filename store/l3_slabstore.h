/* l3cache: the slab disk store, on a file or a raw block device.
 *
 * Objects live in fixed-size slabs (regions) of one size class each, a
 * header block before every payload; an index in memory shared by every
 * process that opens the store maps keys to slots. I/O is O_DIRECT
 * through an io_uring (fixed buffers aliasing the Host pool) or libaio
 * engine. The store survives restarts: a clean close writes an index
 * checkpoint; after a crash the index is rebuilt from each full slab's
 * summary, and from the object headers of slabs without a usable one.
 * See store/FORMAT.md and docs/SEMANTICS.md. */
#ifndef L3_SLABSTORE_H
#define L3_SLABSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include "l3_clock.h"
#include "l3_io.h"
#include "l3_store.h"

/* Which objects a full store gives up (store/policy.h). */
typedef enum l3_eviction {
    L3_EVICT_FIFO_REINSERT = 0, /* slabs reused in the order written; what was read is kept */
    L3_EVICT_LRU_SLAB = 1       /* the least recently used slab goes whole */
} l3_eviction;

/* Which absent keys a put writes (docs/admission.md). */
typedef enum l3_admission {
    L3_ADMISSION_ALL = 0,      /* every one: the object LRU's rule (rung 6 of the ladder) */
    L3_ADMISSION_RUNG = 1,     /* one fixed rung of the ladder (`admission_rung`), for tests */
    L3_ADMISSION_ADAPTIVE = 2  /* the rung whose shadow cache hits most, chosen every epoch */
} l3_admission;

/* When a confirmed put is made durable against a power cut (the device's
 * write cache flushed; docs/SEMANTICS.md "What survives a power cut"). */
typedef enum l3_flush_mode {
    L3_FLUSH_INTERVAL = 0, /* within `flush_interval` seconds of its confirmation (a thread flushes) */
    L3_FLUSH_BATCH = 1     /* before it is confirmed: each put wave flushed before it is published */
} l3_flush_mode;

/* How to open (or create) a store. Zero fields take the defaults. */
typedef struct l3_slab_options {
    const char *path;          /* file or block device (required unless `paths` is set) */
    const char *const *paths;  /* or the store's devices (files or block devices), in order:
                                  slabs are striped over them (at most 16) */
    unsigned num_paths;        /* entries of `paths` (0: the store is `path` alone) */
    uint64_t capacity;         /* bytes (per device); 0: a block device's size, an existing
                                  file's size (the smallest device's, for several) */
    uint64_t slab_size;        /* default 1/64 of the capacity, a power of two from 1 to 64 MiB */
    uint32_t block_size;       /* logical block, default 4096 */
    uint64_t max_objects;      /* index bound; default the objects of expected_object_size the slabs hold */
    uint64_t expected_object_size; /* what the index and slot table are sized for; default 1 MiB */
    l3_engine_kind engine;     /* default auto */
    double io_timeout;         /* seconds a batch may take; default 30 */
    bool no_verify_checksums;  /* skip crc32c checks on get (default: verify) */
    unsigned io_contexts;      /* threads doing I/O at once; default 4 */
    unsigned queue_depth;      /* in-flight requests per context; default 3 x batch keys */
    unsigned batch_keys;       /* keys one I/O wave carries; default 256 */
    bool no_register_buffers;  /* never register the Host pool as fixed buffers */
    bool create;               /* create or format a missing or empty file */
    bool format;               /* format even over existing data */
    bool read_only;            /* never write (for inspection) */
    bool no_preallocate;       /* a new store file is sparse, not fallocated (tests, thin devices) */
    uint32_t mode;             /* permission bits of the files l3cache creates and of the
                                  shared mapping: 0600 (the default, 0: default), or 0640 /
                                  0660 for ranks that run as several users of one group */
    double lock_timeout;       /* seconds to wait for another opener (or a dead one's
                                  rings, which the kernel tears down late); default 5 */
    l3_eviction eviction;      /* default L3_EVICT_FIFO_REINSERT */
    uint64_t write_budget;     /* device bytes per second, averaged (a bucket of 10 s of
                                  it); over it puts are declined, retired; 0: none */
    double write_budget_dwpd;  /* or drive writes per day of the store's capacity (used when
                                  write_budget is 0); 0: none */
    l3_admission admission;    /* l3_slab_options_default: L3_ADMISSION_ADAPTIVE (zeroed
                                  options: ALL); the process that builds the shared mapping
                                  sets it for every process of the store */
    uint32_t admission_rung;   /* L3_ADMISSION_RUNG's rung, 0 to 6 */
    l3_clock budget_clock;     /* the write budget's clock (seconds, positive, never going
                                  back), for a replay of a trace's time and for tests; `now`
                                  NULL: CLOCK_MONOTONIC */
    l3_flush_mode flush;       /* default L3_FLUSH_INTERVAL */
    double flush_interval;     /* seconds, L3_FLUSH_INTERVAL's bound; default 1 (0.001 to 3600) */
} l3_slab_options;

/* The most devices a store spans. */
#define L3_SLAB_MAX_DEVICES 16

/* One device of a store: its state and what this process moved there. */
typedef struct l3_slab_device_stats {
    const char *path;
    const char *state;           /* "ok", "missing" (at open) or "failed" */
    uint32_t slabs;              /* its slabs */
    uint64_t io_errors, bytes_read, bytes_written;
} l3_slab_device_stats;

/* Counters and state of a store. */
typedef struct l3_slab_stats {
    uint64_t objects;
    uint64_t payload_bytes;
    uint64_t capacity_bytes;
    uint64_t data_bytes;
    uint32_t block_size;
    uint64_t slab_size;
    uint32_t slabs_total, slabs_free, slabs_open, slabs_sealed;
    uint64_t max_objects;
    uint64_t index_bytes;
    uint64_t shared_bytes;     /* the shared mapping (index, slot table, slab states): the store's RAM */
    uint64_t puts, put_keys_written, put_keys_existing, put_keys_rejected;
    uint64_t put_keys_over_budget; /* declined by store.write_budget (in put_keys_rejected too) */
    uint64_t put_keys_not_admitted; /* declined by admission (in put_keys_rejected too) */
    uint64_t admitted_probation, admitted_main; /* written at first sight (probation), or seen before */
    uint64_t group_followed;     /* keys that followed their group's earlier decision */
    uint64_t group_dropped;      /* objects dropped because a member of their group was evicted */
    const char *admission;       /* "all", "rung" or "adaptive" (the mapping's) */
    uint32_t admission_rung;     /* the ladder's rung in force */
    uint32_t admission_switches; /* rung changes since the mapping was built */
    uint64_t admission_capacity; /* objects the shadows are sized for (0: not yet) */
    uint32_t slabs_probation;    /* slabs of the probation log */
    uint64_t groups_live;        /* entries of the group table */
    uint64_t gets, get_hits, get_misses;
    uint64_t get_keys_checked_early; /* keys a get checked (header, crc32c, index) as soon as their own
                                        reads finished, while other reads of their batch were in flight */
    uint64_t bytes_written, bytes_read;
    uint64_t evictions, evicted_objects;
    uint64_t index_bound_evictions; /* slabs evicted because the index was full, not the slabs */
    uint64_t reinserted_objects, reinserted_bytes; /* kept from slabs being reused */
    uint64_t checksum_failures, stale_reads;
    uint64_t unaligned_ios;      /* payloads moved through a temporary buffer */
    uint64_t io_fixed, io_unfixed; /* engine submissions on registered / other memory */
    uint64_t io_short_retries, io_eagain_retries, io_errors, io_timeouts, io_faults;
    uint64_t io_host_pins;       /* times the Host regions were pinned (registered): once per set of
                                    regions where the kernel clones a table, once per ring before */
    uint64_t recovered_objects;
    uint64_t recovered_summaries; /* slabs a crash scan indexed from their summary, not their headers */
    bool opened_from_checkpoint;
    double open_seconds;
    const char *engine;        /* "io_uring" or "libaio" */
    bool host_fixed;           /* the Host regions are registered as fixed buffers */
    uint32_t host_regions;     /* Host regions registered (l3_store_register_hosts) */
    bool broken;               /* an I/O batch was not reaped in time */
    uint64_t epoch;
    uint32_t attached_processes; /* processes attached to the shared store */
    uint64_t reserved_slots;     /* slots reserved by puts in flight, all processes */
    uint32_t device_max_segments; /* DMA segments the device takes per request (0: unknown) */
    uint64_t device_max_request;  /* bytes the device takes per request (0: unknown); a larger one-range
                                     object is read without its header */
    uint32_t num_devices, devices_offline; /* devices the store spans; of them missing or failed */
    l3_slab_device_stats device[L3_SLAB_MAX_DEVICES];
    uint64_t early_keeps;        /* objects reinsertion moved though read only early in their time here */
    uint64_t early_keeps_judged, early_keeps_read; /* the trial's measure, over all processes: early keeps
                                                      whose slab was reused again, and of them those read
                                                      since (halved as they grow, zeroed at a pause) */
    uint64_t removals;           /* objects announced on the removal feed since the mapping was built */
    uint64_t removals_by_reason[8]; /* of them, by l3_removal_reason (index 0 unused) */
    uint64_t removal_feed_slots; /* the feed's ring: a reader more than this behind misses the oldest */
    uint64_t flushes;            /* device flushes (fdatasync) this process made: superblocks, journal,
                                    checkpoint, deletes, put waves (store.flush) */
    const char *flush;           /* "interval" or "batch" */
    uint64_t gate_waits;         /* put waves that waited for gets in flight (the read-first gate), all
                                    processes, since the mapping was built */
    uint64_t gate_forced;        /* of them, waves that went on after the longest wait (100 ms) */
} l3_slab_stats;

typedef struct l3_slabstore l3_slabstore;

/* The most keys one batch (an I/O wave) may carry. */
#define L3_MAX_BATCH_KEYS 8192u

/* The queue depth a context needs to submit a wave of `batch_keys` keys at
 * once (a header, a payload and a tail block each): 3 x keys, rounded up
 * to a power of two, at most 4096. */
unsigned l3_slab_queue_depth(unsigned batch_keys);

/* The default mode of what l3cache creates: the owner alone. */
#define L3_DEFAULT_MODE 0600u

/* Whether `mode` is one l3cache creates files with: the owner reads and
 * writes, a group may too, nobody else (0600, 0640, 0660). */
bool l3_slab_mode_valid(uint32_t mode);

/* Fill `o` with the defaults for `path`. */
void l3_slab_options_default(l3_slab_options *o, const char *path);

/* Open the store at o->path, creating or formatting as asked. Options are
 * checked before anything touches the disk. */
l3_status l3_slabstore_open(const l3_slab_options *o, l3_slabstore **out, l3_error *err);

/* Its store interface (the executor takes this; destroy frees the store). */
l3_store *l3_slabstore_store(l3_slabstore *s);

/* Register the Host pool for fixed-buffer I/O (see register_host in
 * l3_store.h); a NULL base unregisters it. */
l3_status l3_slabstore_register_host(l3_slabstore *s, l3_host_buffer host, l3_error *err);

/* The pids of the processes attached to the store (up to `max`); returns
 * how many are attached (0 once closed). A process that died is reaped
 * first. */
int l3_slabstore_attached(l3_slabstore *s, int32_t *pids, int max);

/* The processes attached to the store at `path` (without attaching):
 * their pids into `pids` (up to `max`) and their count; -1 on error. */
int l3_slabstore_attached_at(const char *path, int32_t *pids, int max);

/* Counters and state. After close: this process's counters and the
 * geometry (objects, slabs and processes read 0). */
void l3_slabstore_stats(l3_slabstore *s, l3_slab_stats *out);

/* The store's stats (l3_slabstore_stats) as JSON text; free() it. */
char *l3_slabstore_stats_json(l3_slabstore *s);

/* Why an object left the store (the removal feed, docs/SEMANTICS.md). */
typedef enum l3_removal_reason {
    L3_REMOVED_EVICTED = 1,   /* its slab was reclaimed for new objects */
    L3_REMOVED_DELETED = 2,   /* a single-key delete */
    L3_REMOVED_NAMESPACE = 3, /* removed with its namespace (remove_by_prefix) */
    L3_REMOVED_CORRUPT = 4,   /* dropped after a failed check of its header or crc32c */
    L3_REMOVED_LOST = 5,      /* dropped after its read failed (a media error) */
    L3_REMOVED_GROUP = 6,     /* a member of its page was evicted, so it went too */
} l3_removal_reason;

/* The bytes of a key's identity: the store keeps no key strings in memory
 * (object headers on disk hold them), only this: its 64-bit hash and
 * length (little-endian: 8 bytes of hash, 4 zero bytes, 2 of length, 2
 * zero bytes). Compare them as opaque bytes from l3_key_id_bytes. */
#define L3_KEY_ID_BYTES 16

/* One removal from the feed: its number (from 0 when the shared mapping
 * was built), the identity of its key, and why (l3_removal_reason). */
typedef struct l3_removal {
    uint64_t seq;
    uint8_t key_id[L3_KEY_ID_BYTES];
    uint32_t reason;
    uint32_t pad;
} l3_removal;

/* The identity of `key` (`len` bytes) as the removal feed reports it. */
void l3_key_id_bytes(const char *key, size_t len, uint8_t out[L3_KEY_ID_BYTES]);

/* The name of a removal reason ("evicted", "deleted", "namespace",
 * "corrupt", "lost", "group"), or "unknown". */
const char *l3_removal_reason_name(uint32_t reason);

/* A new reader's cursor on the removal feed: the next removal (`oldest`
 * false), or the oldest the feed still holds. Every process attached to
 * the store reads every process's removals. */
uint64_t l3_slabstore_removal_start(l3_slabstore *s, bool oldest);

/* Read up to `max` removals from `*cursor` on into `out`, in order, and
 * move the cursor past them; removals the bounded feed overwrote before
 * this reader read them are added to `*missed` (a reader that falls
 * behind is told, never silently). Returns how many were read; 0 after
 * close. Lock-free: it never waits for a put or a get. */
size_t l3_slabstore_removals(l3_slabstore *s, uint64_t *cursor, l3_removal *out, size_t max, uint64_t *missed);

/* Drain, write the checkpoint and mark the store clean (the close op). A
 * store whose I/O is unproven keeps its engine open and is not marked
 * clean. Returns the first error. */
l3_status l3_slabstore_close(l3_slabstore *s, l3_error *err);

/* Close if needed and free. */
void l3_slabstore_free(l3_slabstore *s);

#endif
