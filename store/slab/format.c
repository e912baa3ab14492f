#include "format.h"

#include <stdio.h>
#include <string.h>

#include "l3_crc32c.h"
#include "index.h"
#include "invariant.h"

uint64_t l3_checkpoint_bytes(uint64_t max_objects, uint32_t num_slabs, uint32_t block_size)
{
    /* Header block, then namespaces (bounded), slab fills and 48 bytes an
     * object (the layout of earlier builds: a packed body is smaller). */
    uint64_t body = (uint64_t)L3_MAX_NAMESPACES * sizeof(l3_ns_record) + (uint64_t)num_slabs * 4 +
                    max_objects * L3_CKPT_SIZING_BYTES;
    return l3_round_up(block_size + body, 1u << 20);
}

void l3_ckpt_record_pack(uint8_t *p, const l3_index_entry *e)
{
    uint64_t seq = e->seq;
    uint32_t slab = e->slab, slot = e->slot;
    uint16_t ns = (uint16_t)e->ns;
    uint32_t check = 0; /* (the crc is sealed: L3_CKPT_RECORD) */
    memcpy(p, &e->hash, 8);
    memcpy(p + 8, &seq, 8);
    memcpy(p + 16, &check, 4);
    memcpy(p + 20, &e->crc, 4);
    memcpy(p + 24, &slab, 4);
    memcpy(p + 28, &slot, 4);
    memcpy(p + 32, &e->size, 4);
    memcpy(p + 36, &ns, 2);
    _Static_assert(L3_OBJECT_KEY_MAX < L3_CKPT_SEGMENTED, "a key length leaves the shape bit free");
    uint16_t len = (uint16_t)(e->key_len | (e->flags & L3_ENTRY_SEGMENTED ? L3_CKPT_SEGMENTED : 0));
    memcpy(p + 38, &len, 2);
}

bool l3_ckpt_record_unpack(const uint8_t *p, l3_index_entry *e)
{
    memset(e, 0, sizeof *e);
    uint64_t seq;
    uint32_t slab, slot, check, crc;
    uint16_t ns, len;
    memcpy(&e->hash, p, 8);
    memcpy(&seq, p + 8, 8);
    memcpy(&check, p + 16, 4);
    memcpy(&crc, p + 20, 4);
    e->crc = l3_crc_seal(crc, check); /* (L3_CKPT_RECORD) */
    memcpy(&slab, p + 24, 4);
    memcpy(&slot, p + 28, 4);
    memcpy(&e->size, p + 32, 4);
    memcpy(&ns, p + 36, 2);
    memcpy(&len, p + 38, 2);
    e->seq = seq;
    e->slab = slab;
    e->slot = slot;
    e->ns = ns & 0x7ffu;
    uint32_t key_len = len & ~L3_CKPT_SEGMENTED;
    e->key_len = key_len;
    e->flags = len & L3_CKPT_SEGMENTED ? L3_ENTRY_SEGMENTED : 0;
    _Static_assert(L3_MAX_NAMESPACES < 2048u && L3_OBJECT_KEY_MAX < 4096u, "an entry's ns and key_len fields hold them");
    return seq < L3_SEQ_LIMIT && slab < L3_INDEX_SLABS && slot < L3_INDEX_SLOTS && key_len <= L3_OBJECT_KEY_MAX &&
           ns <= L3_MAX_NAMESPACES;
}

/* A slab's slots at most: what the index bound spread over the slabs
 * needs, with a quarter to spare, at least 64, at most what one-block
 * objects would take. The slot table then costs 10 bytes per object of
 * the bound, not 8 bytes per block of the store. */
static uint32_t geometry_slots(const l3_geometry *g)
{
    uint64_t most = g->slab_size / (g->header_bytes + g->block_size);
    uint64_t want = (g->max_objects + g->max_objects / 4) / g->num_slabs + 1;
    if (want < 64)
        want = 64;
    return (uint32_t)(want < most ? want : most);
}

/* Whether a slab's slots fit an index entry's slot number (false, with a
 * reason, for a geometry of more than L3_INDEX_SLOTS - 1 a slab). */
static bool slots_fit(const l3_geometry *g, char *why, size_t why_len)
{
    if (g->max_slots < L3_INDEX_SLOTS)
        return true;
    snprintf(why, why_len, "%u slots a slab of %llu: at most %u (a larger block_size or expected_object_size, "
             "or smaller slabs)", g->max_slots, (unsigned long long)g->slab_size, L3_INDEX_SLOTS - 1);
    return false;
}

/* Objects of `expected` payload bytes one slab holds: each with its
 * header, the slab's summary after them (the index bound counts no
 * object a slab could not hold). */
static uint64_t objects_per_slab(const l3_geometry *g, uint64_t expected)
{
    uint64_t slot = g->header_bytes + l3_round_up(expected, g->block_size);
    uint64_t n = (g->slab_size - sizeof(l3_summary_head)) / (slot + sizeof(l3_summary_entry));
    while (n > 1 && n * slot + l3_round_up(sizeof(l3_summary_head) + n * sizeof(l3_summary_entry), g->block_size) >
                        g->slab_size)
        n--; /* (the summary is whole blocks) */
    return n ? n : 1;
}

uint64_t l3_default_slab_size(uint64_t capacity, uint64_t expected_object)
{
    uint64_t object = (expected_object ? expected_object : L3_DEFAULT_EXPECTED_OBJECT) + 4096;
    uint64_t size = 1u << 20;
    while (size < (64u << 20) && (size * 2 <= capacity / 256 || (size < 8 * object && size * 2 <= capacity / 16)))
        size *= 2;
    return size;
}

bool l3_geometry_plan(uint64_t capacity, uint64_t slab_size, uint32_t block_size,
                      uint64_t max_objects, uint64_t expected_object, l3_geometry *g, char *why, size_t why_len)
{
    return l3_geometry_plan_devices(capacity, 1, slab_size, block_size, max_objects, expected_object, g, why,
                                    why_len);
}

bool l3_geometry_plan_devices(uint64_t capacity, uint32_t devices, uint64_t slab_size, uint32_t block_size,
                              uint64_t max_objects, uint64_t expected_object, l3_geometry *g, char *why,
                              size_t why_len)
{
    memset(g, 0, sizeof *g);
    if (devices < 1 || devices > L3_MAX_DEVICES) {
        snprintf(why, why_len, "a store spans 1 to %u devices, not %u", L3_MAX_DEVICES, devices);
        return false;
    }
    g->num_devices = devices;
    if (!slab_size)
        slab_size = l3_default_slab_size(capacity * devices, expected_object);
    if (block_size < 512 || block_size > 65536 || (block_size & (block_size - 1))) {
        snprintf(why, why_len, "block_size %u is not a power of two from 512 to 65536", block_size);
        return false;
    }
    if (slab_size < (1u << 20) || slab_size % block_size || (slab_size & (slab_size - 1))) {
        snprintf(why, why_len, "slab_size %llu is not a power of two of at least 1 MiB",
                 (unsigned long long)slab_size);
        return false;
    }
    g->block_size = block_size;
    g->slab_size = slab_size;
    g->header_bytes = (uint32_t)l3_round_up(L3_OBJ_HEADER_FIXED + L3_OBJECT_KEY_MAX, block_size);
    g->slab_table_off = L3_SB_COPIES * (uint64_t)l3_round_up(L3_SB_BYTES, block_size);
    /* Slabs per device: solve with the metadata subtracted (two passes). */
    uint64_t guess = capacity / slab_size;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t expected = expected_object ? expected_object : L3_DEFAULT_EXPECTED_OBJECT;
        uint64_t objects = max_objects ? max_objects : guess * devices * objects_per_slab(g, expected);
        if (objects < 1024)
            objects = 1024;
        g->max_objects = objects;
        g->slab_table_len = l3_round_up(guess * devices * L3_SLAB_RECORD_BYTES, block_size);
        g->journal_off = g->slab_table_off + g->slab_table_len;
        g->journal_len = l3_round_up((uint64_t)L3_JOURNAL_RECORDS * L3_JOURNAL_RECORD_BYTES, block_size);
        g->checkpoint_off = g->journal_off + g->journal_len;
        g->checkpoint_len = l3_checkpoint_bytes(objects, (uint32_t)(guess * devices), block_size);
        g->data_off = l3_round_up(g->checkpoint_off + g->checkpoint_len, 1u << 20);
        guess = capacity > g->data_off ? (capacity - g->data_off) / slab_size : 0;
    }
    if (g->max_objects > L3_MAX_OBJECTS) {
        snprintf(why, why_len, "an index for %llu objects: at most %llu (a larger store.expected_object_size)",
                 (unsigned long long)g->max_objects, L3_MAX_OBJECTS);
        return false;
    }
    uint64_t need = (L3_MIN_SLABS + devices - 1) / devices;
    if (guess < need) {
        snprintf(why, why_len,
                 "capacity %llu holds %llu slab(s) of %llu after %llu of metadata; a store needs %u "
                 "(so that a batch can evict): capacity %llu or more%s, or smaller slabs",
                 (unsigned long long)capacity, (unsigned long long)guess, (unsigned long long)slab_size,
                 (unsigned long long)g->data_off, L3_MIN_SLABS,
                 (unsigned long long)(g->data_off + need * slab_size), devices > 1 ? " per device" : "");
        return false;
    }
    if (guess * devices >= L3_INDEX_SLABS) {
        snprintf(why, why_len, "%llu slabs of %llu: at most %u (a larger slab_size)",
                 (unsigned long long)(guess * devices), (unsigned long long)slab_size, L3_INDEX_SLABS - 1);
        return false;
    }
    g->num_slabs = (uint32_t)(guess * devices);
    g->capacity = g->data_off + guess * slab_size;
    g->max_slots = geometry_slots(g);
    g->summaries = 1;
    return slots_fit(g, why, why_len);
}

/* Whether a superblock's numbers are plausible for an image of `size`
 * bytes (0: unknown) before anything is sized from them: the metadata
 * areas lie inside the image, and the index's bound fits its checkpoint
 * area (as l3_geometry_plan sizes it). */
static bool geometry_bounded(const l3_geometry *g, uint64_t size, char *why, size_t why_len)
{
    if (g->num_slabs / g->num_devices > g->capacity / g->slab_size || g->capacity > (1ull << 60) ||
        g->max_objects > L3_MAX_OBJECTS ||
        g->max_objects > g->checkpoint_len / L3_CKPT_SIZING_BYTES || g->checkpoint_len > g->capacity ||
        g->slab_table_len > g->capacity || g->journal_len > g->capacity) {
        snprintf(why, why_len, "the superblock's geometry is implausible (%u slabs, %llu max objects, "
                 "capacity %llu)", g->num_slabs, (unsigned long long)g->max_objects,
                 (unsigned long long)g->capacity);
        return false;
    }
    if (size && g->data_off > size) {
        snprintf(why, why_len, "the superblock's metadata (%llu bytes) does not fit the %llu-byte image",
                 (unsigned long long)g->data_off, (unsigned long long)size);
        return false;
    }
    return true;
}

bool l3_geometry_from_sb(const l3_superblock *sb, uint64_t size, l3_geometry *g, char *why, size_t why_len)
{
    memset(g, 0, sizeof *g);
    g->block_size = sb->block_size;
    g->slab_size = sb->slab_size;
    g->capacity = sb->capacity;
    g->num_slabs = sb->num_slabs;
    g->max_objects = sb->max_objects;
    g->slab_table_off = sb->slab_table_off;
    g->slab_table_len = sb->slab_table_len;
    g->journal_off = sb->journal_off;
    g->journal_len = sb->journal_len;
    g->checkpoint_off = sb->checkpoint_off;
    g->checkpoint_len = sb->checkpoint_len;
    g->data_off = sb->data_off;
    g->num_devices = sb->num_devices ? sb->num_devices : 1;
    if (g->num_devices > L3_MAX_DEVICES || g->num_slabs % g->num_devices) {
        snprintf(why, why_len, "the superblock names %u devices for %u slabs", g->num_devices, g->num_slabs);
        return false;
    }
    if (g->block_size < 512 || g->block_size > 65536 || (g->block_size & (g->block_size - 1)) ||
        g->slab_size < (1u << 20) || (g->slab_size & (g->slab_size - 1)) || g->num_slabs == 0 ||
        g->max_objects == 0) {
        snprintf(why, why_len, "the superblock's geometry is out of range");
        return false;
    }
    g->header_bytes = (uint32_t)l3_round_up(L3_OBJ_HEADER_FIXED + L3_OBJECT_KEY_MAX, g->block_size);
    g->max_slots = geometry_slots(g);
    g->summaries = (sb->incompat & L3_INCOMPAT_SUMMARY) != 0;
    if (g->num_slabs >= L3_INDEX_SLABS || g->max_slots >= L3_INDEX_SLOTS) {
        snprintf(why, why_len, "the superblock's geometry has %u slabs of %u slots: an index entry numbers at most "
                 "%u and %u", g->num_slabs, g->max_slots, L3_INDEX_SLABS - 1, L3_INDEX_SLOTS - 1);
        return false;
    }
    uint64_t b = g->block_size;
    if (g->slab_table_off % b || g->journal_off % b || g->checkpoint_off % b || g->data_off % b ||
        g->slab_table_len < (uint64_t)g->num_slabs * L3_SLAB_RECORD_BYTES ||
        g->journal_off < g->slab_table_off + g->slab_table_len ||
        g->journal_len < (uint64_t)L3_JOURNAL_RECORDS * L3_JOURNAL_RECORD_BYTES ||
        g->checkpoint_off < g->journal_off + g->journal_len ||
        g->data_off < g->checkpoint_off + g->checkpoint_len ||
        g->capacity < g->data_off + (uint64_t)(g->num_slabs / g->num_devices) * g->slab_size) {
        snprintf(why, why_len, "the superblock's areas overlap or are misaligned");
        return false;
    }
    return geometry_bounded(g, size, why, why_len);
}

void l3_sb_seal(l3_superblock *sb)
{
    uint32_t copy = sb->copy;
    sb->copy = 0;
    sb->crc = 0;
    sb->crc = l3_crc32c(0, sb, sizeof *sb);
    sb->copy = copy;
}

bool l3_sb_valid(const l3_superblock *sb, char *why, size_t why_len)
{
    if (memcmp(sb->magic, L3_SB_MAGIC, 8) != 0) {
        snprintf(why, why_len, "no l3cache magic");
        return false;
    }
    l3_superblock copy = *sb;
    copy.copy = 0;
    copy.crc = 0;
    if (l3_crc32c(0, &copy, sizeof copy) != sb->crc) {
        snprintf(why, why_len, "checksum mismatch");
        return false;
    }
    if (sb->version != L3_FORMAT_VERSION) {
        snprintf(why, why_len, "format version %u (this build reads %u)", sb->version,
                 L3_FORMAT_VERSION);
        return false;
    }
    if (sb->incompat & ~L3_INCOMPAT_KNOWN) {
        snprintf(why, why_len, "unknown feature flags 0x%x", sb->incompat & ~L3_INCOMPAT_KNOWN);
        return false;
    }
    return true;
}

void l3_slab_record_seal(l3_slab_record *r)
{
    r->magic = L3_SLAB_MAGIC;
    r->crc = 0;
    r->crc = l3_crc32c(0, r, sizeof *r);
}

bool l3_slab_record_valid(const l3_slab_record *r, uint32_t slab)
{
    if (r->magic != L3_SLAB_MAGIC || r->slab != slab)
        return false;
    l3_slab_record c = *r;
    c.crc = 0;
    return l3_crc32c(0, &c, sizeof c) == r->crc;
}

void l3_summary_head_seal(l3_summary_head *h)
{
    h->magic = L3_SUMMARY_MAGIC;
    h->crc = 0;
    h->crc = l3_crc32c(0, h, sizeof *h);
}

bool l3_summary_head_valid(const l3_summary_head *h, uint32_t slab, const l3_slab_record *r)
{
    if ((h->magic != L3_SUMMARY_MAGIC && h->magic != L3_SUMMARY_MAGIC_UNSEALED) || h->slab != slab || h->gen != r->gen || h->epoch != r->epoch ||
        h->payload_blocks != r->payload_blocks || h->num_ns > L3_SUMMARY_NS)
        return false;
    l3_summary_head c = *h;
    c.crc = 0;
    if (l3_crc32c(0, &c, sizeof c) != h->crc)
        return false;
    for (uint32_t j = 0; j < h->num_ns; j++)
        if (h->ns_len[j] == 0 || h->ns_len[j] > L3_NS_TEXT_MAX)
            return false;
    return true;
}

static uint32_t summary_entry_crc(const l3_summary_entry *e, uint32_t slab, uint32_t slot, uint64_t gen)
{
    uint64_t where[2] = { (uint64_t)slab << 32 | slot, gen };
    l3_summary_entry c = *e;
    c.entry_crc = 0;
    return l3_crc32c(l3_crc32c(0, where, sizeof where), &c, sizeof c);
}

void l3_summary_entry_seal(l3_summary_entry *e, uint32_t slab, uint32_t slot, uint64_t gen)
{
    e->flags = (uint8_t)(L3_SUMMARY_PRESENT | (e->flags & L3_SUMMARY_SEGMENTED));
    e->entry_crc = summary_entry_crc(e, slab, slot, gen);
}

bool l3_summary_entry_valid(const l3_summary_entry *e, uint32_t slab, uint32_t slot, uint64_t gen)
{
    return (e->flags & ~L3_SUMMARY_SEGMENTED) == L3_SUMMARY_PRESENT &&
           e->entry_crc == summary_entry_crc(e, slab, slot, gen);
}

/* The bytes of a header's segment table (0 for a single-range object). */
static size_t segment_table_bytes(const l3_object_header *h)
{
    if (!(h->flags & L3_OBJ_SEGMENTED))
        return 0;
    const l3_segment_table *t = l3_object_segments((l3_object_header *)h);
    return sizeof t->count + (size_t)t->count * sizeof t->size[0];
}

static uint32_t header_crc(const l3_object_header *h)
{
    l3_object_header fixed = *h;
    fixed.header_crc = 0;
    uint32_t crc = l3_crc32c(0, &fixed, sizeof fixed);
    crc = l3_crc32c(crc, h->key, h->key_len);
    if (h->flags & L3_OBJ_SEGMENTED)
        crc = l3_crc32c(crc, (const uint8_t *)h + L3_OBJ_SEGMENT_TABLE, segment_table_bytes(h));
    return crc;
}

/* Whether a segmented header's table is whole: 2 to the most segments,
 * inside `avail`, their sum within the payload. */
static bool segments_sane(const l3_object_header *h, size_t avail)
{
    if (!(h->flags & L3_OBJ_SEGMENTED))
        return h->flags == 0;
    if (h->flags != L3_OBJ_SEGMENTED || avail < L3_OBJ_SEGMENT_TABLE + sizeof(uint32_t))
        return false;
    const l3_segment_table *t = l3_object_segments((l3_object_header *)h);
    if (t->count < 2 || t->count > L3_MAX_RANGES_PER_KEY ||
        L3_OBJ_SEGMENT_TABLE + segment_table_bytes(h) > avail)
        return false;
    uint64_t sum = 0;
    for (uint32_t j = 0; j < t->count; j++)
        sum += t->size[j];
    return sum <= h->size;
}

void l3_object_header_seal(l3_object_header *h)
{
    h->magic = L3_OBJECT_MAGIC;
    h->version = L3_FORMAT_VERSION;
    h->header_crc = header_crc(h);
}

bool l3_object_header_valid(const l3_object_header *h, size_t avail)
{
    if (h->magic != L3_OBJECT_MAGIC || h->version != L3_FORMAT_VERSION)
        return false;
    if (h->key_len == 0 || h->key_len > L3_OBJECT_KEY_MAX || L3_OBJ_HEADER_FIXED + h->key_len > avail)
        return false;
    if (memchr(h->key, '\0', h->key_len) || !segments_sane(h, avail))
        return false;
    return header_crc(h) == h->header_crc;
}

void l3_journal_record_seal(l3_journal_record *r)
{
    r->magic = L3_JOURNAL_MAGIC;
    r->crc = 0;
    r->crc = l3_crc32c(0, r, sizeof *r);
}

bool l3_journal_record_valid(const l3_journal_record *r)
{
    if (r->magic != L3_JOURNAL_MAGIC || r->prefix_len > L3_JOURNAL_PREFIX_MAX)
        return false;
    l3_journal_record c = *r;
    c.crc = 0;
    return l3_crc32c(0, &c, sizeof c) == r->crc;
}

void l3_checkpoint_header_seal(l3_checkpoint_header *h)
{
    L3_ASSERT(h->version == L3_CKPT_PACKED);
    h->magic = L3_CKPT_MAGIC;
    h->header_crc = 0;
    h->header_crc = l3_crc32c(0, h, sizeof *h);
}

bool l3_checkpoint_header_valid(const l3_checkpoint_header *h)
{
    if (h->magic != L3_CKPT_MAGIC ||
        (h->version != L3_CKPT_LIST && h->version != L3_CKPT_PACKED_NOSHAPE && h->version != L3_CKPT_PACKED_UNSEALED &&
         h->version != L3_CKPT_PACKED))
        return false;
    l3_checkpoint_header c = *h;
    c.header_crc = 0;
    return l3_crc32c(0, &c, sizeof c) == h->header_crc;
}

size_t l3_key_namespace_len(const char *key, size_t key_len)
{
    size_t limit = key_len < L3_NS_TEXT_MAX ? key_len : L3_NS_TEXT_MAX;
    const char *u = memchr(key, '_', limit);
    return u ? (size_t)(u - key) + 1 : 0;
}
