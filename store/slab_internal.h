/* l3cache: the slab store's internals, shared by slabstore.c and
 * recovery.c (not installed). */
#ifndef L3_SLAB_INTERNAL_H
#define L3_SLAB_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "l3_format.h"
#include "l3_index.h"
#include "l3_slabstore.h"

enum { S_FREE = 0, S_OPEN = 1, S_SEALED = 2 };

typedef struct slab {
    uint32_t state;          /* S_FREE, S_OPEN (its class's append target) or S_SEALED */
    bool disk_used;          /* its record on disk says USED in this epoch */
    uint32_t payload_blocks; /* size class */
    uint64_t gen;
    uint64_t first_seq;
    uint32_t next_slot, nslots;
    uint32_t live;
    uint64_t live_bytes;
    uint32_t inflight;       /* reserved slots whose writes are not published */
    atomic_uint_fast64_t last_access;
    l3_key_id *slot_ids;     /* nslots: the key of each published slot (hash 0: none) */
} slab;

typedef struct ns_info {
    uint16_t len;
    char text[L3_NS_TEXT_MAX + 1];
    uint64_t objects, bytes;
} ns_info;

struct l3_slabstore {
    l3_store base;
    l3_slab_options opt;
    char *path;
    int fd;
    bool is_blockdev;
    l3_geometry geo;
    l3_superblock sb;
    pthread_mutex_t sb_mu;
    l3_io_engine *engine;
    size_t wave_keys;        /* keys per I/O wave (bounce room) */

    pthread_rwlock_t lock;   /* index, slabs, classes, namespaces */
    l3_index index;
    uint64_t reserved;       /* slots allocated but not yet published */
    slab *slabs;
    int32_t *class_open;     /* per payload_blocks: its open slab, or -1 */
    uint32_t max_payload_blocks;
    ns_info *ns;             /* ids 1..L3_MAX_NAMESPACES at [id-1] */
    uint32_t num_ns;         /* highest id in use */

    pthread_mutex_t table_mu; /* serialises slab table writes */
    l3_slab_record *table;    /* the slab table's image (aligned) */
    pthread_mutex_t journal_mu;
    l3_journal_record *journal; /* the journal's image (aligned) */

    atomic_uint_fast64_t seq;
    atomic_uint_fast64_t tick;
    atomic_bool fatal;        /* refuse all I/O: unreaped I/O or a metadata write failed */
    bool closed;
    bool engine_leaked;

    /* Stats (atomics: updated outside the lock). */
    atomic_ulong puts, put_written, put_existing, put_rejected;
    atomic_ulong gets, get_hits, get_misses;
    atomic_ulong evictions, evicted_objects, checksum_failures, stale_reads, unaligned_ios;
    atomic_bool warned_unaligned, warned_too_big;
    uint64_t recovered_objects;
    bool opened_from_checkpoint;
    double open_seconds;
};

/* Write the superblock (both copies, fdatasync); under sb_mu. */
l3_status l3_slab_write_sb(l3_slabstore *s, l3_error *err);

/* Write the table block holding slab `slab`'s record. */
l3_status l3_slab_write_record(l3_slabstore *s, uint32_t slab, l3_error *err);

/* Set up a slab from a valid record of this epoch (under lock). */
l3_status l3_slab_adopt(l3_slabstore *s, uint32_t i, const l3_slab_record *r, l3_error *err);

/* The namespace id of a key (interning it), or 0 when it has none; -1
 * when the namespace table is full. Under the write lock. */
int l3_slab_ns_intern(l3_slabstore *s, const char *key, size_t len);

/* Publish an entry (under the write lock): index, slot id, counts. False
 * when the index is full. */
bool l3_slab_publish(l3_slabstore *s, const l3_index_entry *e, l3_key_id id);

/* Drop an entry (under the write lock): index, slot id, counts. */
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
