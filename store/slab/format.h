/* l3cache: the on-disk format of the slab store (see FORMAT.md).
 *
 * All integers are little-endian. Every structure carries a crc32c; a
 * structure whose magic, version or crc does not check is treated as
 * absent. These helpers are shared by the store, recovery and l3fsck. */
#ifndef L3_FORMAT_H
#define L3_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io_types.h"
#include "l3_keys.h"
#include "l3_store.h"

#define L3_FORMAT_VERSION 1u
#define L3_SB_MAGIC "L3CACHE"        /* 8 bytes with the NUL */
#define L3_SLAB_MAGIC 0x42414c53u    /* "SLAB" */
#define L3_OBJECT_MAGIC 0x314a424f334c4c33ull /* "3LL3OBJ1" */
#define L3_JOURNAL_MAGIC 0x4c4e524aU /* "JRNL" */
#define L3_CKPT_MAGIC 0x54504b43334c4c33ull   /* "3LL3CKPT" */
#define L3_SUMMARY_MAGIC 0x334d5553u /* "SUM3": entries carry their shape (L3_SUMMARY_SEGMENTED) and a
                                        sealed crc (their check 0); an earlier build's "SUMM" summaries
                                        are not read (scanned once) */
#define L3_SUMMARY_MAGIC_UNSEALED 0x324d5553u /* "SUM2": an earlier build's, read as this build's (its
                                                 crc ^ check is the sealed crc); a build before this one
                                                 does not read "SUM3" (it reads the headers) */

/* Feature flags this build understands: a superblock with others is refused. */
#define L3_INCOMPAT_DEVICES 1u     /* a store over several devices (num_devices > 1) */
#define L3_INCOMPAT_SUMMARY 2u     /* every slab ends in a summary of its objects (l3_summary_head) */
#define L3_INCOMPAT_KNOWN (L3_INCOMPAT_DEVICES | L3_INCOMPAT_SUMMARY)

/* The most devices one store spans. */
#define L3_MAX_DEVICES 16u

#define L3_SB_BYTES 4096u          /* each superblock copy's slot */
#define L3_SB_COPIES 2
#define L3_SLAB_RECORD_BYTES 64u
#define L3_JOURNAL_RECORDS 32u
#define L3_JOURNAL_RECORD_BYTES 512u
#define L3_JOURNAL_PREFIX_MAX 460u
#define L3_NS_TEXT_MAX 255u        /* a namespace's text: up to and including the first '_' */
#define L3_MAX_NAMESPACES 1024u    /* namespaces with objects at once */
#define L3_OBJ_HEADER_FIXED 64u    /* the object header before its key */

/* The superblock (the first 512 bytes of each 4 KiB copy). */
typedef struct l3_superblock {
    char magic[8];
    uint32_t version;
    uint32_t crc;            /* crc32c of the 512 bytes with crc and copy zeroed */
    uint32_t copy;           /* which copy this is: not covered by the crc */
    uint32_t incompat;       /* feature flags a reader must know */
    uint64_t sequence;       /* bumped on every superblock write */
    uint8_t uuid[16];        /* the store's identity */
    uint64_t epoch;          /* objects of another epoch are dead */
    uint32_t clean;          /* 1: closed cleanly, the checkpoint is current */
    uint32_t block_size;     /* logical block: alignment of every I/O */
    uint64_t slab_size;
    uint64_t capacity;       /* bytes of the file or device in use */
    uint32_t num_slabs;
    uint32_t reserved0;
    uint64_t max_objects;    /* the index's bound */
    uint64_t slab_table_off, slab_table_len;
    uint64_t journal_off, journal_len;
    uint64_t checkpoint_off, checkpoint_len;
    uint64_t data_off;
    uint64_t ckpt_bytes;     /* valid when clean: the checkpoint's length */
    uint32_t ckpt_crc;       /* and its crc32c */
    uint32_t ckpt_entries;
    uint64_t next_seq;       /* the object sequence to continue from */
    uint64_t created_at;     /* unix seconds */
    uint32_t num_devices;    /* devices the store spans (0 means 1) */
    uint32_t device;         /* this device's place among them, from 0 */
    uint8_t pad[512 - 192];
} l3_superblock;
_Static_assert(sizeof(l3_superblock) == 512, "superblock size");

enum { L3_SLAB_FREE = 0, L3_SLAB_USED = 1 };

/* A slab's record in the slab table. */
typedef struct l3_slab_record {
    uint32_t magic;
    uint32_t crc;            /* crc32c of the record with crc zeroed */
    uint32_t slab;           /* its index, to catch misplaced writes */
    uint32_t state;          /* L3_SLAB_FREE or L3_SLAB_USED */
    uint64_t gen;            /* bumped each time the slab is (re)opened */
    uint64_t epoch;          /* the store epoch it was opened in */
    uint64_t first_seq;      /* object sequence when it was opened */
    uint32_t payload_blocks; /* its size class: payload blocks per slot */
    uint8_t pad[20];
} l3_slab_record;
_Static_assert(sizeof(l3_slab_record) == 64, "slab record size");

/* An object's header, in its own block(s) before the payload. */
typedef struct l3_object_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_crc;     /* crc32c of the fixed part and key with this zeroed */
    uint64_t epoch;
    uint64_t seq;
    uint64_t slab_gen;
    uint32_t slab;
    uint32_t slot;
    uint32_t size;           /* payload bytes */
    uint32_t payload_crc;    /* crc32c of the payload */
    uint16_t key_len;
    uint16_t flags;
    uint32_t pad;
    char key[];              /* key_len bytes, no NUL */
} l3_object_header;
_Static_assert(sizeof(l3_object_header) == L3_OBJ_HEADER_FIXED, "object header size");

/* Object header flags. */
#define L3_OBJ_SEGMENTED 1u   /* a multi-range object: its segment table follows */

/* A multi-range object's segment table, at L3_OBJ_SEGMENT_TABLE in its
 * header: `count` sizes (2 to L3_MAX_RANGES_PER_KEY, the public limit of
 * ranges per key, l3_store.h). On disk each segment but the last is padded
 * with zeros to the block size, so that every segment starts on a block;
 * the header's `size` is the padded length and `payload_crc` covers it,
 * padding included. */
#define L3_OBJ_SEGMENT_TABLE (L3_OBJ_HEADER_FIXED + L3_OBJECT_KEY_MAX)
typedef struct l3_segment_table {
    uint32_t count;
    uint32_t size[L3_MAX_RANGES_PER_KEY];
} l3_segment_table;
/* The limit is on disk: a table of more than 64 sizes does not check in
 * this format version (FORMAT.md), and the largest table must fit in the
 * header's blocks at the smallest block size (512: header_bytes rounds
 * L3_OBJ_SEGMENT_TABLE up to it). Raising L3_MAX_RANGES_PER_KEY is a
 * format change. */
_Static_assert(L3_MAX_RANGES_PER_KEY == 64u, "L3_MAX_RANGES_PER_KEY is the on-disk segment table's bound");
_Static_assert(sizeof(l3_segment_table) == 4u * (1u + L3_MAX_RANGES_PER_KEY), "segment table size");
_Static_assert(L3_OBJ_SEGMENT_TABLE + sizeof(l3_segment_table) <= (L3_OBJ_SEGMENT_TABLE + 511u) / 512u * 512u,
               "a full segment table fits in the smallest header");

/* The segment table of a header (valid only with L3_OBJ_SEGMENTED set). */
static inline l3_segment_table *l3_object_segments(l3_object_header *h)
{
    return (l3_segment_table *)((uint8_t *)h + L3_OBJ_SEGMENT_TABLE);
}

/* A namespace deletion: objects whose key starts with `prefix` and whose
 * sequence is below `seq` are dead. */
typedef struct l3_journal_record {
    uint32_t magic;
    uint32_t crc;
    uint64_t seq;
    uint64_t epoch;
    uint32_t prefix_len;
    uint32_t pad;
    char prefix[L3_JOURNAL_RECORD_BYTES - 32];
} l3_journal_record;
_Static_assert(sizeof(l3_journal_record) == L3_JOURNAL_RECORD_BYTES, "journal record size");

/* The checkpoint's first block; the body follows (FORMAT.md). */
typedef struct l3_checkpoint_header {
    uint64_t magic;
    uint32_t version;        /* the body's layout: L3_CKPT_PACKED (L3_CKPT_LIST: an earlier build's) */
    uint32_t body_crc;
    uint64_t body_bytes;
    uint64_t sequence;       /* the superblock sequence it belongs to */
    uint32_t num_namespaces;
    uint32_t num_slabs;
    uint64_t num_entries;
    uint32_t header_crc;
    uint32_t num_slot_ids;   /* L3_CKPT_PACKED: the slot table's words after the records */
} l3_checkpoint_header;
_Static_assert(sizeof(l3_checkpoint_header) == 56, "checkpoint header size");

/* A namespace's record in the checkpoint. */
typedef struct l3_ns_record {
    uint16_t len;
    char text[L3_NS_TEXT_MAX + 1];
} l3_ns_record;
_Static_assert(sizeof(l3_ns_record) == 258, "namespace record size");

/* A slab's summary (stores with L3_INCOMPAT_SUMMARY): at the end of the
 * slab, a head and then one entry per slot, written once the slab is
 * full and every write into it was published, so that a crash scan reads
 * a slab's summary instead of every object's header. */
#define L3_SUMMARY_NS 4u         /* namespaces a summary names; a slab with more is scanned */
typedef struct l3_summary_head {
    uint32_t magic;
    uint32_t crc;                /* crc32c of the head with crc zeroed */
    uint32_t slab;
    uint32_t payload_blocks;
    uint64_t gen;                /* the slab generation it describes */
    uint64_t epoch;
    uint32_t nslots;             /* the entries that follow */
    uint32_t num_ns;
    uint16_t ns_len[L3_SUMMARY_NS];
    char ns_text[L3_SUMMARY_NS][L3_NS_TEXT_MAX + 1];
} l3_summary_head;
_Static_assert(sizeof(l3_summary_head) == 1072, "summary head size");

#define L3_SUMMARY_PRESENT 1u
#define L3_SUMMARY_SEGMENTED 2u /* the object is of several ranges (L3_ENTRY_SEGMENTED) */
/* A slot's object, as its index entry has it; all zero for an empty or
 * deleted slot. */
typedef struct l3_summary_entry {
    uint64_t hash;
    uint64_t seq;
    uint32_t check;              /* 0 (earlier builds: crc32c of the key) */
    uint32_t crc;                /* sealed: crc ^ check is the entry's crc (l3_crc_seal) */
    uint32_t size;
    uint16_t key_len;
    uint8_t ns;                  /* 1..num_ns: the head's namespace; 0: none */
    uint8_t flags;               /* L3_SUMMARY_PRESENT */
    uint32_t entry_crc;          /* crc32c of slab, slot and gen, then the entry with this zeroed */
    uint32_t pad;
} l3_summary_entry;
_Static_assert(sizeof(l3_summary_entry) == 40, "summary entry size");

/* The store's geometry, derived from the superblock or creation options. */
typedef struct l3_geometry {
    uint32_t block_size;
    uint64_t slab_size;
    uint64_t capacity;
    uint32_t num_slabs;
    uint64_t max_objects;
    uint64_t slab_table_off, slab_table_len;
    uint64_t journal_off, journal_len;
    uint64_t checkpoint_off, checkpoint_len;
    uint64_t data_off;
    uint32_t header_bytes;   /* an object header's blocks, in bytes */
    uint32_t max_slots;      /* slots a slab may have (l3_geometry_slots): the slot table's width */
    uint32_t num_devices;    /* devices the slabs are striped over: slab i on device i % num_devices */
    uint32_t summaries;      /* 1: each slab ends in its summary (L3_INCOMPAT_SUMMARY) */
} l3_geometry;

/* The most objects a store's index may be sized for: its slot table keeps
 * 31 bits of each key's hash, enough to find an entry in an index of at
 * most 2^31 slots (l3_index_find_at). */
#define L3_MAX_OBJECTS 1800000000ull

/* The expected object size a store's index is sized for by default. */
#define L3_DEFAULT_EXPECTED_OBJECT (1u << 20)

/* Round up to a multiple of a power of two. */
static inline uint64_t l3_round_up(uint64_t x, uint64_t align) { return (x + align - 1) & ~(align - 1); }

/* The fewest slabs a store may have: a batch can always evict (one slab
 * being filled, one being reused, others to choose from). */
#define L3_MIN_SLABS 4u

/* The slab size a store of `capacity` bytes gets by default: 1/256 of
 * it, a power of two from 1 MiB to 64 MiB, so that eviction, a slab at a
 * time, stays fine-grained (enough slabs for a FIFO of slabs to keep an
 * object LRU's hits: bench/results) while big stores keep big slabs; but
 * not under eight objects of `expected_object` bytes (0:
 * L3_DEFAULT_EXPECTED_OBJECT) and their headers where the store has room
 * for 16 such slabs, so that a slab wastes little after its last whole
 * object. */
uint64_t l3_default_slab_size(uint64_t capacity, uint64_t expected_object);

/* Lay out a store of `capacity` bytes (`slab_size` 0: the default; an
 * index bound of `max_objects`, 0: the data bytes over `expected_object`,
 * 0: L3_DEFAULT_EXPECTED_OBJECT; at least 1024); false (with a reason in
 * `why`) when the numbers do not make a store of at least L3_MIN_SLABS
 * slabs. */
bool l3_geometry_plan(uint64_t capacity, uint64_t slab_size, uint32_t block_size,
                      uint64_t max_objects, uint64_t expected_object, l3_geometry *g, char *why, size_t why_len);

/* The same for a store over `devices` devices of `capacity` bytes each:
 * every device holds the superblocks and metadata areas (sized for the
 * whole store) and an equal share of the slabs; `capacity` in the result
 * is each device's image. */
bool l3_geometry_plan_devices(uint64_t capacity, uint32_t devices, uint64_t slab_size, uint32_t block_size,
                              uint64_t max_objects, uint64_t expected_object, l3_geometry *g, char *why,
                              size_t why_len);

/* The geometry a superblock describes on an image of `size` bytes (0:
 * unknown); false when it is inconsistent, or implausible for the image
 * (every field is bounded before anything is sized from it). */
bool l3_geometry_from_sb(const l3_superblock *sb, uint64_t size, l3_geometry *g, char *why, size_t why_len);

/* Bytes of the checkpoint area for a geometry (its reserved area bound). */
uint64_t l3_checkpoint_bytes(uint64_t max_objects, uint32_t num_slabs, uint32_t block_size);

/* The layouts of a checkpoint body, its header's `version`. Both start
 * with the namespaces and one fill word per slab. */
#define L3_CKPT_LIST 1u    /* earlier builds: 48-byte entries; not read (the store is scanned once) */
#define L3_CKPT_PACKED_NOSHAPE 2u /* earlier builds: packed, without the shape bit; not read (scanned once) */
#define L3_CKPT_PACKED_UNSEALED 3u /* an earlier build's L3_CKPT_PACKED, read as this build's (a record's
                                      crc ^ check is the sealed crc); a build before this one does not
                                      read version 4 (it scans) */
#define L3_CKPT_PACKED 4u  /* a bitmap of the index table's used slots (a bit each, in 64-bit words),
                              one L3_CKPT_RECORD-byte record per entry in table order, then each slab's
                              slot ids below its fill (slabs not free, in order) */
#define L3_CKPT_RECORD 40u /* an index entry without its slab's generation (the slab's own) and padding;
                              its key length's top bit is the entry's L3_ENTRY_SEGMENTED; its key check
                              (bytes 16-19) is written 0 and its crc is sealed (l3_crc_seal): a reader
                              takes crc ^ check, which an earlier build's record (the key's crc32c and
                              the payload's) gives as well */
#define L3_CKPT_SEGMENTED 0x8000u /* in a record's key length (keys are at most L3_OBJECT_KEY_MAX bytes) */

/* Bytes an object of the bound the checkpoint area is sized for: the
 * entries of earlier builds (a packed body is smaller), so that every
 * image keeps its layout. */
#define L3_CKPT_SIZING_BYTES 48u

/* An entry's crc: the payload's crc32c `payload_crc` sealed with the
 * key's, `check` (and the payload's again, given the sealed one). A
 * copy of another key that shares the hash and length of the one asked
 * for fails its payload check (but one time in 2^32), so that no bytes
 * are served for the wrong key, even when its header is not read. */
static inline uint32_t l3_crc_seal(uint32_t payload_crc, uint32_t check) { return payload_crc ^ check; }

/* Pack entry e into a record at p, and back (gen left 0); the unpack is
 * false when the record's numbers do not fit an entry (a sequence from
 * L3_SEQ_LIMIT, a slab from L3_INDEX_SLABS, a slot from L3_INDEX_SLOTS, a
 * key longer than L3_OBJECT_KEY_MAX): a record no store wrote. */
struct l3_index_entry;
void l3_ckpt_record_pack(uint8_t *p, const struct l3_index_entry *e);
bool l3_ckpt_record_unpack(const uint8_t *p, struct l3_index_entry *e);

/* The slot size of a class and the slots per slab. */
static inline uint64_t l3_slot_bytes(const l3_geometry *g, uint32_t payload_blocks)
{
    return g->header_bytes + (uint64_t)payload_blocks * g->block_size;
}
/* The bytes of a summary of `nslots` entries (0: the store has none). */
static inline uint64_t l3_summary_bytes(const l3_geometry *g, uint64_t nslots)
{
    return g->summaries ? l3_round_up(sizeof(l3_summary_head) + nslots * sizeof(l3_summary_entry), g->block_size) : 0;
}
/* As many slots as fit with their summary after them, at most max_slots. */
static inline uint32_t l3_slots_per_slab(const l3_geometry *g, uint32_t payload_blocks)
{
    uint64_t slot = l3_slot_bytes(g, payload_blocks), fit = g->slab_size / slot;
    if (fit > g->max_slots)
        fit = g->max_slots;
    if (g->summaries && fit > (g->slab_size - sizeof(l3_summary_head)) / (slot + sizeof(l3_summary_entry)))
        fit = (g->slab_size - sizeof(l3_summary_head)) / (slot + sizeof(l3_summary_entry));
    while (fit && fit * slot + l3_summary_bytes(g, fit) > g->slab_size)
        fit--; /* the summary's block rounding: once at most (a slot is a block or more) */
    return (uint32_t)fit;
}
/* The device slab `slab` lives on, and its place there. */
static inline uint32_t l3_slab_device(const l3_geometry *g, uint32_t slab) { return slab % g->num_devices; }
static inline uint32_t l3_slab_local(const l3_geometry *g, uint32_t slab) { return slab / g->num_devices; }

/* The byte offset of slot `slot` of slab `slab` (class `payload_blocks`)
 * on its device. */
static inline uint64_t l3_slot_byte(const l3_geometry *g, uint32_t slab, uint32_t payload_blocks, uint32_t slot)
{
    return g->data_off + (uint64_t)l3_slab_local(g, slab) * g->slab_size +
           (uint64_t)slot * l3_slot_bytes(g, payload_blocks);
}

/* The I/O offset of that slot: its device's index in the bits from 48 up
 * (the engine's l3_io_offset), the byte offset below; a store of one
 * device has plain byte offsets. */
static inline uint64_t l3_slot_offset(const l3_geometry *g, uint32_t slab, uint32_t payload_blocks,
                                      uint32_t slot)
{
    return l3_io_offset(l3_slab_device(g, slab), l3_slot_byte(g, slab, payload_blocks, slot));
}

/* The largest size class (payload blocks) whose slot fits a slab. */
static inline uint32_t l3_max_payload_blocks(const l3_geometry *g)
{
    return (uint32_t)((g->slab_size - l3_summary_bytes(g, 1) - g->header_bytes) / g->block_size);
}

/* A summary's entries follow its head directly. */
#define L3_SUMMARY_ENTRIES_AT sizeof(l3_summary_head)

/* The bytes of a slab of class `payload_blocks`'s summary, at its end. */
static inline uint64_t l3_summary_len(const l3_geometry *g, uint32_t payload_blocks)
{
    return l3_summary_bytes(g, l3_slots_per_slab(g, payload_blocks));
}

/* The I/O offset of slab `slab`'s summary (class `payload_blocks`). */
static inline uint64_t l3_summary_offset(const l3_geometry *g, uint32_t slab, uint32_t payload_blocks)
{
    uint64_t end = g->data_off + (uint64_t)(l3_slab_local(g, slab) + 1) * g->slab_size;
    return l3_io_offset(l3_slab_device(g, slab), end - l3_summary_len(g, payload_blocks));
}

void l3_summary_head_seal(l3_summary_head *h);
/* Whether a summary head checks and describes slab `slab` as its record
 * `r` has it (generation, epoch, class). */
bool l3_summary_head_valid(const l3_summary_head *h, uint32_t slab, const l3_slab_record *r);
void l3_summary_entry_seal(l3_summary_entry *e, uint32_t slab, uint32_t slot, uint64_t gen);
/* Whether an entry is present and checks for (slab, slot, gen). */
bool l3_summary_entry_valid(const l3_summary_entry *e, uint32_t slab, uint32_t slot, uint64_t gen);

/* Seal a superblock: set its crc (copy and crc excluded). */
void l3_sb_seal(l3_superblock *sb);
/* Whether a superblock copy checks: magic, version, crc. Sets `why`. */
bool l3_sb_valid(const l3_superblock *sb, char *why, size_t why_len);

void l3_slab_record_seal(l3_slab_record *r);
bool l3_slab_record_valid(const l3_slab_record *r, uint32_t slab);

void l3_object_header_seal(l3_object_header *h);
/* Whether a header checks within `avail` bytes: magic, version, key
 * length, crc. */
bool l3_object_header_valid(const l3_object_header *h, size_t avail);

void l3_journal_record_seal(l3_journal_record *r);
bool l3_journal_record_valid(const l3_journal_record *r);

/* Seal a checkpoint header whose `version` (its body's layout) is set. */
void l3_checkpoint_header_seal(l3_checkpoint_header *h);
bool l3_checkpoint_header_valid(const l3_checkpoint_header *h);

/* The length of `key`'s namespace: through its first '_' when that lies
 * within L3_NS_TEXT_MAX bytes, else 0 (the key has no namespace). */
size_t l3_key_namespace_len(const char *key, size_t key_len);

#endif
