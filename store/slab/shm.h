/* l3cache: the slab store's shared mapping (internal; not installed).
 *
 * Every process that opens one store maps one POSIX shared memory object,
 * named after the store file's device and inode, holding everything the
 * processes must agree on: the index, the slab states, the namespaces,
 * the slab table's and the journal's images, the superblock, the counters
 * and the process table. It holds only offsets and plain data; pointers
 * into it are per process (struct l3_slabstore in slab.h). */
#ifndef L3_SHM_H
#define L3_SHM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "format.h"
#include "index.h"
#include "l3_status.h"

struct stat;

#define L3_MAX_PROCS 64
#define L3_SHM_MAGIC 0x4d48533343334c33ull /* "3L3C3SHM" */
#define L3_SHM_VERSION 7

enum { S_FREE = 0, S_OPEN = 1, S_SEALED = 2, S_OFFLINE = 3 /* its device is missing or failed */ };

/* A device's state (in the mapping). */
enum { DEV_OK = 0, DEV_MISSING = 1, DEV_FAILED = 2 };

/* A slab's state (in the mapping). */
typedef struct slab_info {
    uint32_t state;          /* S_FREE, S_OPEN (its class's append target) or S_SEALED */
    uint32_t disk_used;      /* its record on disk says USED in this epoch */
    uint32_t payload_blocks; /* size class */
    uint32_t nslots;
    uint64_t gen;
    uint64_t first_seq;
    uint32_t next_slot;
    uint32_t live;
    uint32_t inflight;       /* reserved slots whose writes are not published */
    int32_t standby_next;    /* in its class's standby chain (l3_class_next): the next, or -1 */
    uint64_t record_gen;     /* the generation whose slab record is on disk (0: none yet) */
    uint64_t summary_gen;    /* the generation whose summary was written (or claimed) */
    uint64_t live_bytes;
    _Atomic uint64_t last_access;
    uint64_t lease_until;    /* CLOCK_MONOTONIC ns: readers hold it until then (0: none) */
    uint32_t proc_inflight[L3_MAX_PROCS]; /* inflight, by process slot */
} slab_info;

typedef struct ns_info {
    uint16_t len;
    char text[L3_NS_TEXT_MAX + 1];
    uint64_t objects, bytes;
    uint64_t reserved;       /* puts in flight that interned it: not reusable until 0 */
} ns_info;

/* A process attached to the store. `alive` is a robust mutex its liveness
 * thread holds for as long as it is attached: a trylock that returns
 * EOWNERDEAD proves the process died. */
typedef struct proc_slot {
    pthread_mutex_t alive;
    uint32_t used;
    int32_t pid;
    uint64_t reserved;       /* its share of the reserved slots */
    uint64_t attached_at;    /* unix seconds */
} proc_slot;

/* The mapping's header; the areas follow at the offsets. */
typedef struct shared {
    uint64_t magic;
    uint32_t version;
    uint32_t ready;          /* loaded from disk */
    uint64_t size;
    uint8_t uuid[16];
    pthread_mutex_t lock;    /* index, slabs, classes, namespaces, counters */
    pthread_mutex_t table_mu, journal_mu, sb_mu;
    pthread_mutex_t summary_mu; /* every write of a slab summary (summary.h) */
    l3_superblock sb;
    l3_index_meta index;
    uint64_t reserved;       /* slots allocated but not yet published */
    _Atomic uint64_t seq, tick;
    uint32_t num_ns;         /* highest namespace id in use */
    uint32_t max_payload_blocks;
    uint32_t max_slots;      /* slot ids per slab */
    uint32_t pad;
    uint64_t recovered_objects, recovered_summaries;
    uint64_t budget_bytes, budget_ns; /* the write budget's bucket and its last refill */
    uint32_t opened_from_checkpoint;
    uint32_t attached;
    uint64_t off_slabs, off_class_open, off_slot_ids, off_table, off_journal, off_index;
    uint32_t num_devices;
    _Atomic uint32_t dev_state[L3_MAX_DEVICES]; /* DEV_OK, DEV_MISSING (at open), DEV_FAILED */
    _Atomic uint32_t dev_err_run[L3_MAX_DEVICES]; /* requests failed in a row there */
    _Atomic uint32_t failed_mask, swept_mask; /* devices failed; those whose slabs were taken offline */
    uint32_t stripe_dev;                      /* the device puts' slots go to now (under `lock`) */
    uint32_t stripe_fill;                     /* the bytes placed there since it became current */
    uint32_t repair_needed;                   /* a process died holding `lock`: check the index (under it) */
    ns_info ns[L3_MAX_NAMESPACES];
    proc_slot procs[L3_MAX_PROCS];
} shared;

typedef struct l3_slabstore l3_slabstore;

/* The bytes of the shared mapping a store of geometry `g` maps: its RAM
 * cost, in proportion to its index bound (max_objects) and slab count. */
size_t l3_shm_bytes(const l3_geometry *g);

/* Lock a robust shared mutex; a dead previous owner is logged and the
 * mutex made consistent (the state it guards is built to stay usable). */
void l3_shm_lock(l3_slabstore *s, pthread_mutex_t *mu);
void l3_shm_unlock(pthread_mutex_t *mu);

/* Open the store's shared memory object (named after the file's device
 * and inode) and take its lock: opens, attaches and detaches of one store
 * take turns. l3_shm_open_unlock releases it (and on failure cleans up). */
l3_status l3_shm_open_locked(l3_slabstore *s, l3_error *err);
void l3_shm_open_unlock(l3_slabstore *s, bool failed);

/* Attach to (or create and load) the store's shared mapping; the open path
 * in slabstore.c calls it with the file open and its geometry known.
 * `load` runs, with the mapping exclusive, when this process is the first
 * attached; `format` when the store was just formatted. */
l3_status l3_shm_attach(l3_slabstore *s, bool formatted,
                        l3_status (*load)(l3_slabstore *s, l3_error *err), l3_error *err);

/* Detach; the last process out runs `last` (the checkpoint) first and
 * removes the mapping. Returns `last`'s status. */
l3_status l3_shm_detach(l3_slabstore *s, l3_status (*last)(l3_slabstore *s, l3_error *err),
                        l3_error *err);

/* Release the reservations of processes that died (under the lock);
 * returns how many processes were reaped. */
int l3_shm_reap_dead(l3_slabstore *s);

/* The attached processes: pids into `pids` (up to max), their count. */
int l3_shm_attached(l3_slabstore *s, int32_t *pids, int max);

/* Whether a shared object (`object`) may be attached for the store file
 * (`file`) with permission bits `mode`: owned by this user, or in a group
 * mode by the store file's owner and group, and no bits beyond `mode`. */
bool l3_shm_trusted(const struct stat *object, const struct stat *file, uint32_t mode);

/* The name of the shared object of the store file `st` describes. */
void l3_shm_name_of(const struct stat *st, char *name, size_t len);

#endif
