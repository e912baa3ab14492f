/* l3fsck's state and its passes (fsck.c checks, l3fsck.c reports). What is
 * live is decided by the library's rulebook (store/slab/rules.h), exactly as
 * the store's recovery decides it. */
#ifndef L3_FSCK_H
#define L3_FSCK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "rules.h"

#define EXIT_CLEAN 0
#define EXIT_FIXED 1
#define EXIT_UNFIXED 4
#define EXIT_OPERATIONAL 8

/* An object the rules call live: by its header, or by its slab's summary.
 * Its key is kept for --list and -y alone (else `key` NULL and `ns` its
 * namespace's text, or NULL for none): a key is its hash, crc and length,
 * as in the store's index. */
typedef struct fsck_object {
    char *key;
    const char *ns;
    uint16_t key_len;
    uint32_t slab, slot, size, crc, check;
    uint64_t seq, offset, hash;
    bool live;       /* served: not superseded, and (clean) in the checkpoint */
    bool listed;     /* an entry of the checkpoint names it */
} fsck_object;

/* What a pass over the slabs counts (the first pass's count stands). */
typedef struct fsck_counts {
    uint64_t stale, corrupt_headers, corrupt_payloads, deleted, empty_slots, summaries, header_slabs;
} fsck_counts;

/* One device of the store, as l3fsck opened it (fd -1: not given). */
typedef struct fsck_dev {
    const char *path;
    int fd, dfd;                 /* dfd: O_DIRECT for bulk reads, or -1 */
    uint64_t size;
    bool blockdev;
    l3_sb_copies sbs;
} fsck_dev;

typedef struct fsck {
    fsck_dev dev[L3_MAX_DEVICES]; /* by the store's device order */
    uint32_t ndev;               /* the store's devices (its superblock's count) */
    uint32_t given;              /* paths given on the command line */
    uint32_t present;            /* devices given and open (a bit each) */
    const char *paths[L3_MAX_DEVICES]; /* as given */
    const char *path;            /* the first path given */
    uint32_t ref;                /* the device whose superblock is the newest */
    bool partial;                /* not every device given: checked read-only, the others' slabs skipped */
    int fd;                      /* the first path's descriptor (names the shared object) */
    bool repair, verify, list, json, slabs_verbose, tty;
    bool headers;                /* read every header (--headers, --verify, --list, -y), not summaries alone */
    const char *prefix;
    l3_sb_copies sbs;            /* the newest device's copies (reports) */
    l3_superblock sb;            /* the copy the store trusts */
    l3_geometry geo;
    l3_slab_record *table;
    l3_journal_record *journal;
    fsck_object *objects;        /* this pass's */
    size_t num_objects, cap_objects;
    uint32_t parts, part;        /* passes over the slabs, each keeping the keys of one hash range; this one */
    uint64_t memory;             /* bytes one pass's objects may take (--memory): more objects, more passes */
    bool quiet;                  /* a pass after the first: the slabs' problems were reported */
    fsck_counts first;           /* the first pass's slab counts */
    uint64_t superseded;         /* live copies a later one of their key replaced (all passes) */
    uint32_t *by_key, *by_slot;  /* a pass's objects by key and by slot (open addressing; UINT32_MAX empty) */
    size_t table_cap;
    uint64_t stale, corrupt_headers, corrupt_payloads, deleted, empty_slots;
    uint64_t summaries;          /* slabs judged by their summary (a crash scan would use it) */
    uint64_t header_slabs;       /* slabs whose headers were read */
    char **ns_texts;             /* namespaces of summaries' objects (interned) */
    size_t num_ns_texts, ns_last;
    json_t *errors, *repairs, *attached;
    int found, left;             /* problems found, and of them not corrected */
    bool mark_dirty;             /* the checkpoint no longer tells the truth */
    bool sync_copies;            /* a valid copy is older: rewrite both, not an error */
    bool bad_journal;            /* a journal record does not check */
    bool checkpoint_valid;
    l3_checkpoint_header checkpoint; /* its header (the first pass reads it) */
    bool checkpoint_read;        /* its header matches the superblock (the first pass) */
    bool checkpoint_earlier;     /* it has an earlier build's layout (not used, not an error) */
    bool checkpoint_checks;      /* and its body's crc checks (the first pass) */
    uint64_t checkpoint_entries, checkpoint_missing;
    char checkpoint_why[128];
} fsck;

/* Record a problem. One that is not `fixable`, or found without -y, is
 * left; with -y the caller repairs a fixable one, and a repair whose write
 * fails leaves it too. */
void fsck_problem(fsck *f, bool fixable, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Report a repair that was written. */
void fsck_fixed(fsck *f, const char *what);

/* Read (zero-filled past the end: 1) or write an image range; -errno.
 * The offset names its device in the bits from 48 up (l3_slot_offset);
 * a store of one device has plain offsets. */
int fsck_read(fsck *f, void *buf, size_t len, uint64_t off);
int fsck_write(fsck *f, const void *buf, size_t len, uint64_t off);

/* Read like fsck_read, for bulk reads (slabs, summaries, the checkpoint):
 * O_DIRECT where the image allows it (the device's speed, no page cache
 * to fill), so `buf` 4096-aligned and `len` whole blocks. */
int fsck_read_bulk(fsck *f, void *buf, size_t len, uint64_t off);

/* Whether slab i's device was given (its slots can be read). */
bool fsck_slab_present(const fsck *f, uint32_t i);

/* Whether an object of key hash `hash` is this pass's. */
static inline bool fsck_in_part(const fsck *f, uint64_t hash)
{
    return f->parts < 2 || (uint32_t)(((hash >> 32) * f->parts) >> 32) == f->part;
}

/* A pass's tables (by_key, by_slot) of f->table_cap slots, a power of
 * two: where the probe for `key` starts; and the slot for object index i
 * keyed by `key`: the first empty one from there, or the one `same` says
 * holds its equal. */
size_t fsck_table_home(const fsck *f, uint64_t key);
size_t fsck_table_slot(const fsck *f, const uint32_t *t, uint64_t key, size_t i,
                       bool (*same)(const fsck *, size_t, size_t));

/* Plan the passes over the objects (f->parts, and room for one pass's
 * objects): one pass when every header is read (--headers and what
 * implies it), else as many as f->memory needs; false when out of memory. */
bool fsck_plan_passes(fsck *f);

/* The passes, in order (with fsck_checkpoint.h's between fsck_objects
 * and fsck_permissions). Each reports what it finds through fsck_problem.
 * fsck_objects runs once per pass (f->part), on the objects of that pass's
 * keys. */
bool fsck_superblocks(fsck *f);   /* false: no store to check */
void fsck_tables(fsck *f);        /* truncation, slab records, journal records */
void fsck_objects(fsck *f);       /* every used slab: its summary (a crash scan's rule), or its headers
                                     (--verify, --list, or no summary a crash scan would use) */
void fsck_permissions(fsck *f);  /* the store and its shared object: no access for others */
void fsck_journal_verdict(fsck *f);  /* a corrupt journal record: nothing live unless the checkpoint proves it
                                        (each pass, and after the checkpoint's verdict) */
void fsck_journal_repair(fsck *f);   /* -y: what a corrupt journal record removed stays removed */
void fsck_write_superblocks(fsck *f); /* -y: both copies from the good one */

#endif
