/* l3fsck's state (types only): the devices, the superblock and geometry,
 * the tables, one pass's objects, the counts, the checkpoint's verdict and
 * the report's lists. The passes are the rooms after it (ARCHITECTURE.md,
 * tools/); what is live is decided by the library's rulebook, exactly as
 * the store's recovery decides it, read through the store's reader
 * interface (store/slab/image.h), the one header of the store l3fsck
 * includes. */
#ifndef L3_FSCK_H
#define L3_FSCK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image.h"

#define EXIT_CLEAN 0
#define EXIT_FIXED 1
#define EXIT_UNFIXED 4
#define EXIT_OPERATIONAL 8

/* An object the rules call live: by its header, or by its slab's summary.
 * Its key is kept for --list and -y alone (else `key` NULL and `ns` its
 * namespace's text, or NULL for none): a key is its hash and length, as
 * in the store's index, and its crc is sealed with the key's, as an index
 * entry's is (l3_crc_seal). */
typedef struct fsck_object {
    char *key;
    const char *ns;
    uint16_t key_len;
    uint32_t slab, slot, size, crc;
    uint64_t seq, offset, hash;
    bool live;       /* served: not superseded, and (clean) in the checkpoint */
    bool listed;     /* an entry of the checkpoint names it */
} fsck_object;

/* What a pass over the slabs counts (the first pass's count stands). */
typedef struct fsck_counts {
    uint64_t stale, corrupt_headers, corrupt_payloads, torn, deleted, empty_slots, summaries, header_slabs;
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
    uint64_t torn;               /* live headers of slabs judged by them whose payload does not check (a crash's) */
    bool scans;                  /* the store's next open scans (dirty, or its checkpoint header unusable) */
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

#endif
