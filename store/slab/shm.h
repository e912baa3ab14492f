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

#include "admit_state.h"
#include "gate_state.h"
#include "alloc_state.h"
#include "budget_state.h"
#include "feed.h"
#include "format.h"
#include "ghost.h"
#include "groups.h"
#include "index.h"
#include "policy_state.h"
#include "procs_state.h"
#include "shadow.h"
#include "l3_status.h"

struct stat;

#define L3_SHM_MAGIC 0x4d48533343334c33ull /* "3L3C3SHM" */
#define L3_SHM_VERSION 26

/* A device's state (in the mapping). */
enum { DEV_OK = 0, DEV_MISSING = 1, DEV_FAILED = 2 };

typedef struct ns_info {
    uint16_t len;
    char text[L3_NS_TEXT_MAX + 1];
    uint64_t objects, bytes;
    uint64_t reserved;       /* puts in flight that interned it: not reusable until 0 */
} ns_info;

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
    pthread_mutex_t room_mu;    /* one thread of one process makes room at a time (reinsert.c) */
    l3_index_meta index;
    _Atomic uint64_t seq, tick;
    uint32_t num_ns;         /* highest namespace id in use */
    uint32_t max_payload_blocks;
    uint32_t max_slots;      /* slot ids per slab */
    uint32_t pad;
    uint64_t recovered_objects, recovered_summaries;
    uint32_t opened_from_checkpoint;
    uint32_t attached;
    uint64_t off_slabs, off_class_open, off_slot_ids, off_table, off_journal, off_index;
    uint64_t off_ghost, off_shadows, off_groups, off_feed;
    uint32_t num_devices;
    _Atomic uint32_t dev_state[L3_MAX_DEVICES]; /* DEV_OK, DEV_MISSING (at open), DEV_FAILED */
    _Atomic uint32_t dev_err_run[L3_MAX_DEVICES]; /* requests failed in a row there */
    _Atomic uint32_t failed_mask, swept_mask; /* devices failed; those whose slabs were taken offline */
    uint32_t repair_needed;                   /* a process died holding `lock`: check the index (under it) */
    ns_info ns[L3_MAX_NAMESPACES];
    /* Each part below has one writer (ARCHITECTURE.md, "Who writes the
     * shared state"); any room reads them. */
    l3_superblock sb;        /* meta.c: the superblock as last written */
    proc_slot procs[L3_MAX_PROCS]; /* shm.c: the process table */
    l3_alloc_shared alloc;   /* alloc.c: reserved slots, the stripe, each process's account */
    l3_early_trial keep_trial; /* policy.c: early keeps' trials */
    l3_budget budget;        /* budget.c: the write budget's bucket */
    l3_admit_state admit;    /* admit.c: the rung, sightings, shadows' choice */
    l3_gate gate;            /* gate.c: reads and put waves in flight (the read-first gate) */
    l3_ghost_head ghost;     /* admission's ghost (ghost.h); its words at off_ghost */
    l3_groups_meta groups;   /* the group table (groups.h); its entries at off_groups */
    l3_feed_head feed;       /* the removal feed (feed.h); its slots at off_feed */
} shared;

/* This process's view of a store's shared mapping: the object's name and
 * descriptor, the mapping, this process's slot in its process table, and
 * the liveness thread that holds the slot's `alive` mutex. */
typedef struct l3_shm {
    shared *sh;              /* the mapping, or NULL */
    size_t size;
    int fd;                  /* the shared object's descriptor, or -1 */
    char name[96];
    int me;                  /* this process's slot in sh->procs, or -1 */
    const char *path;        /* the store's name in messages */
    uint32_t mode;           /* the store's permission bits */
    pthread_t alive_thread;
    pthread_mutex_t alive_mu;
    pthread_cond_t alive_cv;
    bool alive_stop, alive_started;
} l3_shm;

/* What a fresh mapping is built from: the store's geometry and uuid, the
 * superblock it was opened with (its next sequence), and which devices
 * are present. */
typedef struct l3_shm_spec {
    const l3_geometry *geo;
    const uint8_t *uuid;     /* 16 bytes */
    const l3_superblock *sb;
    uint32_t ndev;
    uint32_t missing_mask;   /* devices not present at this open */
} l3_shm_spec;

/* Set up a fresh mapping's areas for geometry `g` (laid out by
 * l3_shm_layout, zeroed): an empty index, no open or standby slabs, an
 * empty ghost, group table and removal feed. The parts other rooms write are theirs to set up
 * (the superblock l3_meta_adopt_sb, admission l3_admit_format). */
void l3_shm_format_areas(shared *h, const l3_geometry *g);

/* Make `mu`, in the mapping, a robust mutex shared between processes. */
void l3_shm_init_robust(pthread_mutex_t *mu);

/* Pointers into a mapping to its areas (they follow the header at the
 * offsets it holds). */
typedef struct l3_shm_views {
    slab_info *slabs;
    int32_t *class_open;     /* open slab, then standby chain head, per log, class and device */
    uint32_t *slot_ids;
    _Atomic uint64_t *ghost; /* the ghost's filters (ghost.h) */
    l3_shadow *shadows;      /* L3_LADDER_LEN shadow caches (shadow.h) */
    l3_group *groups;        /* the group table (groups.h) */
    l3_feed_slot *feed;      /* the removal feed's slots (feed.h) */
    l3_slab_record *table;
    l3_journal_record *journal;
    l3_index_entry *index;
} l3_shm_views;

/* Start an empty view of the store at `path` (mode: its permission bits). */
void l3_shm_init(l3_shm *m, const char *path, uint32_t mode);

/* The bytes of the shared mapping a store of geometry `g` maps: its RAM
 * cost, in proportion to its index bound (max_objects) and slab count. */
size_t l3_shm_bytes(const l3_geometry *g);

/* Lay out a mapping's header for geometry `g` (its areas' offsets and
 * sizes): the mapping's bytes. A test builds a mapping in memory with it. */
size_t l3_shm_layout(const l3_geometry *g, shared *h);

/* The mapping's areas. */
l3_shm_views l3_shm_views_of(shared *h);

/* Lock a robust shared mutex; a dead previous owner is logged and the
 * mutex made consistent (the state it guards is built to stay usable).
 * When it guards the store's state (sh->lock), repair_needed is set. */
void l3_shm_lock(l3_shm *m, pthread_mutex_t *mu);
void l3_shm_unlock(pthread_mutex_t *mu);

/* Lock `mu` as l3_shm_lock does, waiting at most `seconds`: 0 held, 1
 * held and its previous owner had died (what that process held is for
 * the caller to reap), -1 not held (the wait timed out). */
int l3_shm_lock_within(l3_shm *m, pthread_mutex_t *mu, double seconds);

/* Open the shared object named after the store file open at `file_fd`
 * (its device and inode) and take its lock: opens, attaches and detaches
 * of one store take turns. l3_shm_open_unlock releases it (and on failure
 * cleans up). */
l3_status l3_shm_open_locked(l3_shm *m, int file_fd, l3_error *err);
void l3_shm_open_unlock(l3_shm *m, bool failed);

/* Map the store's mapping (the open lock held): join the one someone
 * alive holds (*fresh false), or build an empty one from `spec` (*fresh
 * true: whoever called loads it, then calls l3_shm_ready). A store just
 * formatted (`formatted`) may not join another process's mapping. */
l3_status l3_shm_map(l3_shm *m, const l3_shm_spec *spec, bool formatted, bool *fresh, l3_error *err);

/* Take a free slot of the process table for this process (under
 * sh->lock); false when all are used. */
bool l3_shm_claim_slot(l3_shm *m);

/* The slots of processes that died attached (a bit per slot; under
 * sh->lock): what they reserved is the allocator's to give back, then
 * l3_shm_free_slot frees each. */
uint64_t l3_shm_dead_slots(l3_shm *m);

/* Free slot `p` of the process table (under sh->lock). */
void l3_shm_free_slot(l3_shm *m, int p);

/* How many processes besides this one are attached and alive (under
 * sh->lock). */
int l3_shm_others(l3_shm *m);

/* Start and stop the liveness thread (it holds this slot's `alive`). */
bool l3_shm_start_alive(l3_shm *m);
void l3_shm_stop_alive(l3_shm *m);

/* Mark a fresh mapping loaded: others may join it. */
void l3_shm_ready(l3_shm *m);

/* Take the open lock to leave (detaching takes turns with opening). */
void l3_shm_leave_lock(l3_shm *m);

/* Undo l3_shm_map after a failed attach: a fresh mapping is marked
 * unloaded and its name removed; the open lock stays held (released by
 * l3_shm_open_unlock). */
void l3_shm_abandon(l3_shm *m, bool fresh);

/* Unmap; with `last`, the mapping is marked unloaded and its name removed
 * (nobody else is attached). Releases the open lock and the descriptor. */
void l3_shm_unmap(l3_shm *m, bool last);

/* The attached processes: pids into `pids` (up to max), their count. */
int l3_shm_attached(l3_shm *m, int32_t *pids, int max);

/* Whether a shared object (`object`) may be attached for the store file
 * (`file`) with permission bits `mode`: owned by this user, or in a group
 * mode by the store file's owner and group, and no bits beyond `mode`. */
bool l3_shm_trusted(const struct stat *object, const struct stat *file, uint32_t mode);

/* The name of the shared object of the store file `st` describes. */
void l3_shm_name_of(const struct stat *st, char *name, size_t len);

#endif
