/* l3cache: the rulebook (internal; not installed). What is live on a store
 * image, decided once, here, for both the store's recovery and l3fsck,
 * so that the tool and the store can never disagree (FORMAT.md "Crash
 * recovery").
 *
 * Every function here is pure: it reads only its arguments (and the
 * format's constants), writes only what its arguments point to, and does
 * no I/O, no allocation, no logging, and touches no global. The reads
 * that feed it are its callers': the store's through image.c (superblock
 * copies), meta.c (slab tables, journals) and recovery.c (headers,
 * summaries), l3fsck's through its own reads. So every rule can be judged on bytes a
 * test made up (tests/test_rules.c, tests/fuzz/fuzz_rules.c). */
#ifndef L3_RULES_H
#define L3_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

/* Where a superblock copy may sit. Copy 0 is at offset 0; copy c at
 * c x S, S = round_up(4096, B) for the store's block size B (512 to
 * 65536), which a reader cannot know before it holds a copy: so copy 1
 * is looked for at every possible S, 4096 << k for k < L3_SB_PLACES
 * (copy 0 has one place). */
#define L3_SB_PLACES 5

/* Whether an image of `size` bytes holds place k of copy c (its 4096
 * bytes at *off, set either way): copy 0 has place 0 alone. */
bool l3_sb_place(uint32_t c, uint32_t k, uint64_t size, uint64_t *off);

/* What a reader found at one place of one copy: its first 4096 bytes'
 * superblock, or why it read nothing. A reader reads a copy's places in
 * order, as many as the image holds (l3_sb_place), and stops at the first
 * it cannot read; l3_sb_choose looks no further than a place not read. */
typedef struct l3_sb_read {
    bool read;         /* the place was read: `sb` is its first 512 bytes */
    l3_superblock sb;
    char why[128];     /* not read: why ("": the image does not hold it) */
} l3_sb_read;

/* Both copies' places, as read from one image (at[0][k] for k > 0 are
 * not looked at: copy 0 has one place). */
typedef struct l3_sb_reads {
    l3_sb_read at[L3_SB_COPIES][L3_SB_PLACES];
} l3_sb_reads;

/* What became of one superblock copy. */
typedef enum l3_sb_verdict {
    L3_SB_MISSING,    /* the image holds none of its places ("not found") */
    L3_SB_UNREADABLE, /* a place could not be read (why: the reader's error) */
    L3_SB_BROKEN,     /* its first place holds no superblock that checks (why: what is wrong) */
    L3_SB_MISPLACED,  /* a valid superblock, but of the other copy or of a block size placing it elsewhere */
    L3_SB_VALID,      /* found, valid, at its own place */
} l3_sb_verdict;

/* Both superblock copies as read from an image, and the one to trust. */
typedef struct l3_sb_copies {
    l3_superblock copy[L3_SB_COPIES];
    bool valid[L3_SB_COPIES];    /* verdict[c] == L3_SB_VALID */
    l3_sb_verdict verdict[L3_SB_COPIES];
    char why[L3_SB_COPIES][128]; /* "valid", or what is wrong with the copy */
    int best;                    /* the valid copy with the highest sequence (copy 0 on a tie), or -1 */
} l3_sb_copies;

/* Choose from the places read (`r`): each copy is the first of its places,
 * in order, holding a valid superblock (l3_sb_valid) that names that copy
 * and whose block size B puts that copy there (copy c at c x
 * round_up(4096, B): copy 0 at 0 whatever B); the valid copy with the
 * highest sequence wins. Returns how many copies are valid. The places'
 * reads are image.c's (l3_sb_read_copies). */
int l3_sb_choose(const l3_sb_reads *r, l3_sb_copies *out);

/* Merge device `d`'s slab table and journal (`tbl`, `jr`, as read from
 * it) into the store's images (`table`, `journal`) of geometry `g`: the
 * records of its own slabs (a slab's record is read from its own device
 * only), and each journal slot's valid record with the highest sequence
 * of any device merged so far (the first device's on a tie); a slot no
 * device holds valid is damaged when one holds it damaged (the first),
 * else blank, so that a damaged record is judged as on one device
 * (l3_journal_lost_removal). `journal` starts all zero; merging one
 * device leaves its journal as it is. */
void l3_merge_device_tables(const l3_geometry *g, uint32_t d, const l3_slab_record *tbl, const l3_journal_record *jr,
                            l3_slab_record *table, l3_journal_record *journal);

/* Whether slab `slab`'s record makes its slots candidates: it checks, is
 * used, and was opened in the superblock's `epoch`. */
bool l3_slab_in_use(const l3_slab_record *r, uint32_t slab, uint64_t epoch);

/* Whether the journal kills an object of `key` and sequence `seq`: a
 * valid record of this epoch with a higher sequence whose prefix the key
 * starts with. */
bool l3_journal_kills(const l3_journal_record *journal, uint64_t epoch, const char *key, size_t len,
                      uint64_t seq);

/* Whether journal record r is damaged: neither valid nor blank (all zero).
 * It was a removal whose prefix, sequence and epoch can no longer be read
 * (a flipped bit, a misdirected or torn write). */
bool l3_journal_record_damaged(const l3_journal_record *r);

/* Whether any record of the journal is damaged. */
bool l3_journal_damaged(const l3_journal_record *journal);

/* The rule for a damaged journal record (FORMAT.md "A damaged journal
 * record"), the same for the store's open and for l3fsck: whether no
 * object of the epoch can be proven live. A removal kills every key of its
 * prefix below its sequence; with neither readable, it may have removed
 * any object on disk. Only a checkpoint proves what was live (it was
 * written after every removal that completed before the close), so with
 * `checkpoint_used` (the store opens from its checkpoint, every device
 * with it) its entries stand; without one, true: nothing is served, and
 * the repair (the store's open, l3fsck -y) bumps the epoch, then zeroes
 * the damaged records. False when no record is damaged. */
bool l3_journal_lost_removal(const l3_journal_record *journal, bool checkpoint_used);

/* The lowest sequence the next object may take after the journal: one past
 * its highest valid record of `epoch` (0 when it has none). A record's
 * sequence orders it against objects, so no later object may take a lower
 * one, or the next crash scan would count it as removed. */
uint64_t l3_journal_next_seq(const l3_journal_record *journal, uint64_t epoch);

/* What a slot's header says, from the lowest to the only serving verdict. */
typedef enum l3_slot_verdict {
    L3_SLOT_EMPTY,   /* no object magic: never written */
    L3_SLOT_CORRUPT, /* the magic, but the header does not check */
    L3_SLOT_STALE,   /* a valid header of another epoch, slab, slot or generation */
    L3_SLOT_DELETED, /* killed by a namespace journal record */
    L3_SLOT_LIVE,    /* served, unless a live header of its key has a higher seq */
} l3_slot_verdict;

/* Judge the header read from slot `slot` of slab `slab`, whose record `r`
 * is in use in `epoch`. */
l3_slot_verdict l3_slot_judge(const l3_geometry *g, uint64_t epoch, const l3_slab_record *r,
                              uint32_t slab, uint32_t slot, const l3_object_header *h,
                              const l3_journal_record *journal);

/* Whether a slab's summary decides its objects alone: false when a journal
 * record of this epoch newer than the slab's first object (`first_seq`)
 * has a prefix without '_', which could kill a key without namespace (the
 * summary holds namespaces, not keys): the slab's headers are read. */
bool l3_summary_decidable(const l3_journal_record *journal, uint64_t epoch, uint64_t first_seq);

/* Judge entry `slot` of the valid summary head `h` of slab `slab`, as
 * l3_slot_judge judges a header: EMPTY (no object, or deleted), CORRUPT
 * (does not check), DELETED (a journal record kills it) or LIVE. */
l3_slot_verdict l3_summary_judge(const l3_geometry *g, const l3_summary_head *h, uint32_t slab, uint32_t slot,
                                 const l3_summary_entry *e, const l3_journal_record *journal);

/* Whether a crash scan indexes slab `slab` (record `r`, in use) from the
 * summary read into `buf` instead of its headers: its head checks and
 * describes the record, its slot count is the class's, the journal
 * decides it (l3_summary_decidable), and no entry is CORRUPT (a write cut
 * short). Each entry's verdict goes into verdicts[slot] (l3_slot_verdict),
 * judged until the first CORRUPT one. */
bool l3_summary_usable(const l3_geometry *g, const uint8_t *buf, uint32_t slab, const l3_slab_record *r,
                       const l3_journal_record *journal, uint8_t *verdicts);

/* Of two live headers of one key, whether the one with sequence `a` is
 * served over the one with `b`: the higher sequence, unless its payload
 * does not check (`higher_checks` false: a torn write of a put killed
 * mid-way, or of a second concurrent put of the key), then the lower. Two
 * processes may write one key at once; only the first to publish is in
 * the index, and a torn copy must never shadow a whole one. */
static inline bool l3_dup_wins(uint64_t a, uint64_t b, bool higher_checks) { return (a > b) == higher_checks; }

/* Whether an object's image (its `header_bytes` of header, then its
 * payload) is a whole copy of `size` payload bytes and sealed crc `crc`
 * (l3_crc_seal): its header checks, and its payload's crc32c sealed with
 * the crc32c of the key the header holds is `crc`. What l3_dup_wins asks
 * of the higher copy. */
bool l3_object_image_checks(const uint8_t *img, uint32_t header_bytes, uint32_t size, uint32_t crc);

/* Whether a checkpoint header belongs to superblock `sb` (clean) and fits
 * geometry `g`; false with the reason in `why`. */
bool l3_checkpoint_matches(const l3_checkpoint_header *h, const l3_superblock *sb,
                           const l3_geometry *g, char *why, size_t why_len);

/* Where the checkpoint body's parts start: namespaces, then one fill word
 * per slab, then the bitmap of an index table of `table_slots`, then the
 * records (L3_CKPT_PACKED). */
static inline uint64_t l3_checkpoint_fills_at(const l3_checkpoint_header *h)
{
    return (uint64_t)h->num_namespaces * sizeof(l3_ns_record);
}
static inline uint64_t l3_checkpoint_bitmap_at(const l3_checkpoint_header *h)
{
    return l3_checkpoint_fills_at(h) + (uint64_t)h->num_slabs * 4;
}
static inline uint64_t l3_checkpoint_records_at(const l3_checkpoint_header *h, uint64_t table_slots)
{
    return l3_checkpoint_bitmap_at(h) + (table_slots + 63) / 64 * 8;
}

#endif
