/* l3cache: the slab store's internals, shared by slabstore.c, shm.c and
 * recovery.c (not installed).
 *
 * Everything the processes that open one store must agree on lives in one
 * shared mapping (shm.c): the index, the slab table and its image, the
 * namespaces, the journal image, the superblock, the counters and the
 * process table. Pointers into it are per process; the mapping holds only
 * offsets and plain data. */
#ifndef L3_SLAB_INTERNAL_H
#define L3_SLAB_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "l3_format.h"
#include "l3_index.h"
#include "l3_slabstore.h"

#define L3_MAX_PROCS 64
#define L3_SHM_MAGIC 0x4d48533343334c33ull /* "3L3C3SHM" */
#define L3_SHM_VERSION 1

enum { S_FREE = 0, S_OPEN = 1, S_SEALED = 2 };

/* A slab's state (in the mapping). */
typedef struct slab {
    uint32_t state;          /* S_FREE, S_OPEN (its class's append target) or S_SEALED */
    uint32_t disk_used;      /* its record on disk says USED in this epoch */
    uint32_t payload_blocks; /* size class */
    uint32_t nslots;
    uint64_t gen;
    uint64_t first_seq;
    uint32_t next_slot;
    uint32_t live;
    uint32_t inflight;       /* reserved slots whose writes are not published */
    uint32_t pad;
    uint64_t live_bytes;
    _Atomic uint64_t last_access;
    uint32_t proc_inflight[L3_MAX_PROCS]; /* inflight, by process slot */
} slab;

typedef struct ns_info {
    uint16_t len;
    char text[L3_NS_TEXT_MAX + 1];
    uint64_t objects, bytes;
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
    l3_superblock sb;
    l3_index_meta index;
    uint64_t reserved;       /* slots allocated but not yet published */
    _Atomic uint64_t seq, tick;
    uint32_t num_ns;         /* highest namespace id in use */
    uint32_t max_payload_blocks;
    uint32_t max_slots;      /* slot ids per slab */
    uint32_t pad;
    uint64_t recovered_objects;
    uint32_t opened_from_checkpoint;
    uint32_t attached;
    uint64_t off_slabs, off_class_open, off_slot_ids, off_table, off_journal, off_index;
    ns_info ns[L3_MAX_NAMESPACES];
    proc_slot procs[L3_MAX_PROCS];
} shared;

struct l3_slabstore {
    l3_store base;
    l3_slab_options opt;
    char *path;
    int fd;
    bool is_blockdev;
    l3_geometry geo;
    l3_superblock disk_sb;   /* as read or formatted, before the mapping exists */
    uint8_t geo_uuid[16];
    l3_io_engine *engine;
    size_t wave_keys;        /* keys per I/O wave (bounce room) */

    /* The shared mapping and this process's view of it. */
    shared *sh;
    size_t sh_size;
    int shm_fd;
    char shm_name[96];
    int me;                  /* this process's slot in sh->procs */
    pthread_t alive_thread;
    pthread_mutex_t alive_mu;
    pthread_cond_t alive_cv;
    bool alive_stop, alive_started;
    l3_index index;
    slab *slabs;
    int32_t *class_open;     /* per payload_blocks: its open slab, or -1 */
    uint64_t *slot_ids;      /* max_slots per slab: key hashes of published slots */
    l3_slab_record *table;   /* the slab table's image (aligned) */
    l3_journal_record *journal; /* the journal's image (aligned) */
    ns_info *ns;

    atomic_bool fatal;       /* this process refuses I/O: unreaped I/O or a failed metadata write */
    bool closed;
    bool formatted;          /* this open formatted the store */
    bool engine_leaked;

    /* This process's stats (atomics: updated outside the lock). */
    atomic_ulong puts, put_written, put_existing, put_rejected;
    atomic_ulong gets, get_hits, get_misses;
    atomic_ulong evictions, evicted_objects, checksum_failures, stale_reads, unaligned_ios;
    atomic_bool warned_unaligned, warned_too_big, warned_small_pages;
    unsigned max_segments;   /* the device's DMA segments per request (0: unknown) */
    double open_seconds;
};

/* The slot ids of slab `i`. */
static inline uint64_t *l3_slab_slot_ids(l3_slabstore *s, uint32_t i)
{
    return s->slot_ids + (uint64_t)i * s->sh->max_slots;
}

/* Lock a robust shared mutex; a dead previous owner is logged and the
 * mutex made consistent (the state it guards is built to stay usable). */
void l3_shm_lock(l3_slabstore *s, pthread_mutex_t *mu);
void l3_shm_unlock(pthread_mutex_t *mu);
static inline void l3_slab_lock(l3_slabstore *s) { l3_shm_lock(s, &s->sh->lock); }
static inline void l3_slab_unlock(l3_slabstore *s) { l3_shm_unlock(&s->sh->lock); }

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

/* A zeroed buffer aligned for O_DIRECT (at least 4096); free() it. */
void *l3_slab_alloc_aligned(size_t align, size_t len);

/* Read or write all `len` bytes at `off` of `fd` (metadata I/O, O_DIRECT
 * aligned); a file that ends first is L3_ECORRUPT, an error L3_EIO. */
l3_status l3_slab_rw_all(int fd, const char *path, bool write, void *buf, size_t len, uint64_t off,
                         l3_error *err);

/* Write the superblock (both copies, fdatasync); under sb_mu. */
l3_status l3_slab_write_sb(l3_slabstore *s, l3_error *err);

/* Write the table block holding slab `slab`'s record. */
l3_status l3_slab_write_record(l3_slabstore *s, uint32_t slab, l3_error *err);

/* Set up a slab from a valid record of this epoch (under lock). */
l3_status l3_slab_adopt(l3_slabstore *s, uint32_t i, const l3_slab_record *r, l3_error *err);

/* The namespace id of a key (interning it), or 0 when it has none; -1
 * when the namespace table is full. Under the lock. */
int l3_slab_ns_intern(l3_slabstore *s, const char *key, size_t len);

/* Publish an entry (under the lock): index, slot id, counts. False when
 * the index is full. */
bool l3_slab_publish(l3_slabstore *s, const l3_index_entry *e);

/* Drop an entry (under the lock): index, slot id, counts. */
void l3_slab_unpublish(l3_slabstore *s, l3_index_entry *e);

/* Whether the journal kills an object with `key` and sequence `seq`. */
bool l3_slab_journal_kills(l3_slabstore *s, const char *key, size_t len, uint64_t seq);

/* Rebuild the index from the checkpoint; L3_ECORRUPT when it is unusable. */
l3_status l3_slab_load_checkpoint(l3_slabstore *s, l3_error *err);

/* Rebuild the index from the object headers of every used slab. */
l3_status l3_slab_scan(l3_slabstore *s, l3_error *err);

/* Write the index checkpoint (the store is quiescent). */
l3_status l3_slab_write_checkpoint(l3_slabstore *s, uint32_t *crc, uint64_t *bytes, l3_error *err);

#endif
