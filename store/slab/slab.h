/* l3cache: the slab store's per-process state (internal; not installed):
 * the struct every room of the wing works on (types only; the rooms and
 * their order are ARCHITECTURE.md's table). */
#ifndef L3_SLAB_H
#define L3_SLAB_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"
#include "invariant.h"
#include "l3_slabstore.h"
#include "shm.h"

/* One device (file or block device) of the store. */
typedef struct l3_device {
    char *path;
    int fd;                  /* -1: missing at open */
    bool blockdev;
    bool existed;            /* there before this open */
    bool shared_dev;         /* a block device another process holds O_EXCL */
    uint64_t size;           /* bytes of the file or device */
    uint64_t sb_sequence;    /* its newest valid superblock's sequence (0: none) */
} l3_device;

/* A metadata write a driven put deferred to the background thread
 * (background.h): a slab's summary, or its record of generation `gen`. */
typedef struct l3_deferred {
    uint32_t slab;
    uint64_t gen;
    bool record;
} l3_deferred;

/* The deferred writes queued at once; more are written by their caller. */
#define L3_DEFERRED_MAX 64u

/* Summaries held for the next flush at most (store.flush "interval"):
 * with this many the thread flushes early, so that a crash scan reads at
 * most this many filled slabs whole for want of their summaries (512 MiB
 * at the largest default slab). */
#define L3_HELD_MAX 8u

struct l3_slabstore {
    l3_store base;
    l3_slab_options opt;
    char *path;              /* the first device's path: the store's name in messages */
    int fd;                  /* the first present device's descriptor (names the mapping) */
    l3_device dev[L3_MAX_DEVICES];
    uint32_t ndev;
    uint32_t ref_dev;        /* the device whose superblock is the newest (the checkpoint is read there) */
    uint32_t behind_mask;    /* present devices that missed the newest superblock: scanned at load */
    uint32_t ckpt_skip;      /* devices whose checkpoint entries a load passes over */
    l3_geometry geo;
    l3_superblock disk_sb;   /* as read or formatted, before the mapping exists */
    uint8_t geo_uuid[16];
    l3_io_engine *engine;
    size_t wave_keys;        /* keys per I/O wave (bounce room) */

    /* The shared mapping (shm.h), and views into it. */
    l3_shm shm;
    shared *sh;              /* shm.sh, once mapped */
    l3_index index;
    slab_info *slabs;
    int32_t *class_open;     /* per log, payload_blocks and device: its open slab, or -1; then as
                                many standby slabs (l3_class_next) */
    uint32_t *slot_ids;      /* max_slots per slab: the slot ids (l3_slot_id) of published slots */
    l3_ghost ghost;          /* admission's ghost (ghost.h) */
    l3_shadow *shadows;      /* its shadow caches, one per rung (shadow.h) */
    l3_feed feed;            /* the removal feed (feed.h) */
    l3_groups groups;        /* the group table (groups.h) */
    l3_slab_record *table;   /* the slab table's image (aligned) */
    l3_journal_record *journal; /* the journal's image (aligned) */
    ns_info *ns;

    atomic_bool fatal;       /* this process refuses I/O: unreaped I/O or a failed metadata write */
    atomic_uint dirty;       /* devices this process wrote objects to since their last flush */
    atomic_ulong flushes;    /* device flushes (fdatasync) this process made */
    pthread_t flusher;       /* the background thread (background.h): flushes, deferred metadata */
    bool flusher_ready;      /* its lock and condition set up (not for a read-only store) */
    bool flusher_running;
    bool flusher_stop;
    pthread_mutex_t flusher_mu; /* the thread's stop flag and queue */
    pthread_cond_t flusher_cv;
    l3_deferred deferred[L3_DEFERRED_MAX]; /* metadata writes deferred to it */
    uint32_t num_deferred;
    uint32_t held[L3_HELD_MAX]; /* slabs whose summary waits for a flush begun after they filled */
    uint32_t num_held;
    bool closed;
    bool formatted;          /* this open formatted the store */
    bool engine_leaked;

    /* This process's stats (atomics: updated outside the lock). */
    atomic_ulong puts, put_written, put_existing, put_rejected;
    atomic_ulong gets, get_hits, get_misses;
    atomic_ulong get_checked_early; /* keys judged while their wave's other reads were in flight */
    atomic_ulong evictions, evicted_objects, checksum_failures, stale_reads, unaligned_ios;
    atomic_bool warned_unaligned, warned_too_big, warned_small_pages, warned_index_bound, warned_room_wait;
    atomic_uint host_regions; /* Host regions registered now */
    unsigned max_segments;   /* the device's DMA segments per request (0: unknown) */
    uint64_t max_request;    /* the device's largest request in bytes (0: unknown) */
    atomic_ulong reinserted_objects, reinserted_bytes, over_budget, index_bound_evictions, early_keeps;
    atomic_ulong not_admitted, admitted_probation, admitted_main, group_followed, group_dropped;
    double open_seconds;
};

/* The slot ids of slab `i`. */
static inline uint32_t *l3_slab_slot_ids(l3_slabstore *s, uint32_t i)
{
    return s->slot_ids + (uint64_t)i * s->sh->max_slots;
}

/* The open slab of log `lg` (LOG_MAIN, LOG_PROBATION), class `pb`, on
 * device `d` (an entry of the mapping). */
static inline int32_t *l3_class_open(l3_slabstore *s, uint32_t lg, uint32_t pb, uint32_t d)
{
    size_t classes = (size_t)s->sh->max_payload_blocks + 1;
    return &s->class_open[((size_t)lg * classes + pb) * s->geo.num_devices + d];
}

/* The first standby slab of log `lg`, class `pb`, on device `d` (opened
 * ahead, their records written before the class's open slab fills; a
 * chain through slab.standby_next), or -1. */
static inline int32_t *l3_class_next(l3_slabstore *s, uint32_t lg, uint32_t pb, uint32_t d)
{
    size_t classes = (size_t)s->sh->max_payload_blocks + 1;
    return &s->class_open[((L3_LOGS + (size_t)lg) * classes + pb) * s->geo.num_devices + d];
}

#endif
