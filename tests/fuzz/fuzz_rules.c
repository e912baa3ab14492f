/* libFuzzer: the rulebook (store/slab/rules.h) against a reference model.
 *
 * The input is decoded into the rulebook's inputs: one image's superblock
 * places (each not read, unreadable, zeros, or a superblock of some copy,
 * block size, sequence and uuid, sealed, torn or with a byte changed);
 * one or two devices' slab tables and journals (records valid, damaged
 * or blank, of a few epochs, sequences and short prefixes over "ab_"),
 * merged; object headers read from slots of those slabs; slab summaries
 * (heads and entries, whole or not); pairs of duplicates; a checkpoint
 * header beside its superblock. Every verdict the rulebook gives is
 * compared with the model below, and a disagreement aborts.
 *
 * The model is a restatement of FORMAT.md's rules ("Superblock",
 * "Objects", "Slab summaries", "Namespace journal", "A damaged journal
 * record", "Checkpoint", "Several devices") written without rules.c's
 * code: each rule as the predicate the text states. It does use the
 * format's checks and seals (l3_sb_valid, l3_*_valid, l3_*_seal,
 * l3_slots_per_slab, l3_index_capacity_for): those are the format, not
 * the rules. A byte past the input's end reads as 0. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "fuzz.h"
#include "index.h"
#include "l3_crc32c.h"
#include "rules.h"

#define EPOCH 7u
#define SLABS 4u
#define SLOTS 8u /* the geometry's max_slots: every class has at most 8 */

/* ---- the input ---- */

typedef struct src {
    const uint8_t *p;
    size_t n;
} src;

static uint8_t u8(src *s)
{
    if (!s->n)
        return 0;
    s->n--;
    return *s->p++;
}

static uint16_t u16(src *s) { return (uint16_t)(u8(s) | u8(s) << 8); }

static void fail(const char *what, unsigned long long a, unsigned long long b)
{
    fprintf(stderr, "fuzz_rules: %s: the rulebook says %llu, the model %llu\n", what, a, b);
    abort();
}

static void expect(const char *what, unsigned long long got, unsigned long long want)
{
    if (got != want)
        fail(what, got, want);
}

/* A short text over "ab_" (len 0..max). */
static size_t text(src *s, char *out, size_t max)
{
    size_t len = u8(s) % (max + 1);
    for (size_t i = 0; i < len; i++)
        out[i] = "ab_"[u8(s) % 3];
    return len;
}

/* ---- superblocks ---- */

static const uint32_t blocks[] = { 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 0, 3000 };

static void decode_place(src *s, l3_sb_read *r)
{
    memset(r, 0, sizeof *r);
    uint8_t kind = u8(s) % 8;
    if (kind == 0)
        return; /* beyond the image */
    if (kind == 1) {
        snprintf(r->why, sizeof r->why, "read error %u", u8(s));
        return;
    }
    r->read = true;
    if (kind == 2)
        return; /* zeros */
    l3_superblock *sb = &r->sb;
    uint8_t how = u8(s);
    memcpy(sb->magic, L3_SB_MAGIC, 8);
    sb->version = how & 1 ? L3_FORMAT_VERSION + 1 : L3_FORMAT_VERSION;
    sb->incompat = how & 2 ? 0x40u : u8(s) % 4;
    sb->copy = u8(s) % 3;
    sb->block_size = blocks[u8(s) % (sizeof blocks / sizeof blocks[0])];
    sb->sequence = u8(s) % 8;
    sb->uuid[0] = u8(s) % 2;
    if (!(how & 4))
        l3_sb_seal(sb);
    if (how & 8)
        sb->epoch++; /* torn after its seal */
    if (how & 16)
        ((uint8_t *)sb)[u8(s) % sizeof *sb] ^= (uint8_t)(1u << (u8(s) % 8));
}

/* The copy FORMAT.md's "Superblock" describes at a place: one that checks,
 * names copy c, and whose block size B puts copy c here (c x round_up(4096, B)). */
static bool sb_here(const l3_sb_read *r, uint32_t c, uint32_t k)
{
    char why[128];
    return r->read && l3_sb_valid(&r->sb, why, sizeof why) && r->sb.copy == c &&
           (uint64_t)c * l3_round_up(4096, r->sb.block_size) == (uint64_t)c * (4096ull << k);
}

/* The model's verdict on copy c, as predicates: the places looked at are
 * those up to the first not read; found at the first such place holding
 * it; else unreadable if that place failed; else misplaced if one looked at
 * holds a valid superblock that is not this copy here; else broken if the
 * first place holds bytes that do not check; else missing. `why` is what
 * the verdict says: "valid", the reader's error, where the last misplaced
 * copy was found, what is wrong with the first place, or "not found". */
static l3_sb_verdict model_copy(const l3_sb_reads *r, uint32_t c, int *at, char *why, size_t why_len)
{
    uint32_t places = c == 0 ? 1 : L3_SB_PLACES, looked = 0;
    while (looked < places && r->at[c][looked].read)
        looked++;
    char broken[128] = "";
    int misplaced = -1;
    for (uint32_t k = 0; k < looked; k++) {
        const l3_superblock *sb = &r->at[c][k].sb;
        if (sb_here(&r->at[c][k], c, k)) {
            *at = (int)k;
            snprintf(why, why_len, "valid");
            return L3_SB_VALID;
        }
        char w[128];
        if (l3_sb_valid(sb, w, sizeof w))
            misplaced = (int)k;
        else if (k == 0)
            snprintf(broken, sizeof broken, "%s", w);
    }
    if (looked < places && r->at[c][looked].why[0]) {
        snprintf(why, why_len, "%s", r->at[c][looked].why);
        return L3_SB_UNREADABLE;
    }
    if (misplaced >= 0) {
        snprintf(why, why_len, "copy %u found at offset %llu", r->at[c][misplaced].sb.copy,
                 (unsigned long long)c * (4096ull << misplaced));
        return L3_SB_MISPLACED;
    }
    snprintf(why, why_len, "%s", looked > 0 ? broken : "not found");
    return looked > 0 ? L3_SB_BROKEN : L3_SB_MISSING;
}

static void check_superblocks(src *s)
{
    l3_sb_reads r;
    decode_place(s, &r.at[0][0]);
    for (uint32_t k = 1; k < L3_SB_PLACES; k++) { /* copy 0 has one place: never looked at */
        memset(&r.at[0][k], 0, sizeof r.at[0][k]);
        r.at[0][k].read = true;
        memcpy(r.at[0][k].sb.magic, L3_SB_MAGIC, 8);
        r.at[0][k].sb.version = L3_FORMAT_VERSION;
        r.at[0][k].sb.block_size = 4096;
        r.at[0][k].sb.sequence = 1000;
        l3_sb_seal(&r.at[0][k].sb);
    }
    for (uint32_t k = 0; k < L3_SB_PLACES; k++)
        decode_place(s, &r.at[1][k]);
    l3_sb_copies got;
    int valid = l3_sb_choose(&r, &got), want_valid = 0, best = -1;
    uint64_t best_seq = 0;
    for (uint32_t c = 0; c < L3_SB_COPIES; c++) {
        int at = -1;
        char why[128];
        l3_sb_verdict v = model_copy(&r, c, &at, why, sizeof why);
        expect("superblock copy verdict", got.verdict[c], v);
        expect("superblock copy valid", got.valid[c], v == L3_SB_VALID);
        if (strcmp(got.why[c], why) != 0) {
            fprintf(stderr, "fuzz_rules: copy %u: the rulebook says \"%s\", the model \"%s\"\n", c, got.why[c], why);
            abort();
        }
        if (v != L3_SB_VALID)
            continue;
        want_valid++;
        expect("superblock copy chosen", memcmp(&got.copy[c], &r.at[c][at].sb, sizeof got.copy[c]) != 0, 0);
        if (best < 0 || r.at[c][at].sb.sequence > best_seq) { /* the highest sequence; copy 0 on a tie */
            best = (int)c;
            best_seq = r.at[c][at].sb.sequence;
        }
    }
    expect("superblock copies valid", (unsigned long long)valid, (unsigned long long)want_valid);
    expect("superblock best", (unsigned long long)(got.best + 1), (unsigned long long)(best + 1));
    uint32_t c = u8(s) % 3, k = u8(s) % 6;
    uint64_t size = (uint64_t)u16(s) * 8, off;
    bool there = l3_sb_place(c, k, size, &off);
    uint64_t want_off = (uint64_t)c * (4096ull << k);
    expect("superblock place", there, c < 2 && k < L3_SB_PLACES && (c == 1 || k == 0) && want_off + 4096 <= size);
    if (c < 2 && k < L3_SB_PLACES)
        expect("superblock place offset", off, want_off);
}

/* ---- tables and journals ---- */

static void decode_record(src *s, l3_slab_record *r, uint32_t slab)
{
    memset(r, 0, sizeof *r);
    uint8_t how = u8(s);
    if (!(how & 1))
        return; /* never written */
    r->slab = how & 2 ? slab + 1 : slab;
    r->state = how & 4 ? L3_SLAB_FREE : L3_SLAB_USED;
    r->epoch = how & 8 ? EPOCH - 1 : EPOCH;
    r->gen = u8(s) % 4;
    r->payload_blocks = 1 + u8(s) % 4;
    r->first_seq = u8(s) % 16 * 8;
    l3_slab_record_seal(r);
    if (how & 16)
        r->gen++; /* torn */
}

static void decode_journal(src *s, l3_journal_record *jr)
{
    memset(jr, 0, L3_JOURNAL_RECORDS * sizeof *jr);
    for (uint32_t n = u8(s) % 6; n > 0; n--) {
        l3_journal_record *r = &jr[u8(s) % L3_JOURNAL_RECORDS];
        memset(r, 0, sizeof *r);
        uint8_t how = u8(s);
        if (how % 4 == 0)
            continue; /* blank */
        if (how % 4 == 3) {
            r->pad = 1; /* zeros but a stray byte */
            continue;
        }
        r->epoch = EPOCH - 1 + (how >> 2) % 3;
        r->seq = u8(s);
        r->prefix_len = (uint32_t)text(s, r->prefix, 4);
        l3_journal_record_seal(r);
        if (how % 4 == 2)
            r->prefix[200] ^= 1; /* damaged */
    }
}

static bool blank(const void *p, size_t len)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < len; i++)
        if (b[i])
            return false;
    return true;
}

static bool damaged(const l3_journal_record *r) { return !l3_journal_record_valid(r) && !blank(r, sizeof *r); }

/* FORMAT.md "Several devices": slab i's record from device i % n; each
 * journal slot the valid record with the highest seq of any device (the
 * first on a tie), else a damaged one (the first), else blank. */
static void model_merge(uint32_t n, l3_slab_record tbl[][SLABS], l3_journal_record jr[][L3_JOURNAL_RECORDS],
                        l3_slab_record *table, l3_journal_record *journal)
{
    for (uint32_t i = 0; i < SLABS; i++)
        table[i] = tbl[i % n][i];
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        int pick = -1;
        for (uint32_t d = 0; d < n; d++)
            if (l3_journal_record_valid(&jr[d][j]) && (pick < 0 || jr[d][j].seq > jr[pick][j].seq))
                pick = (int)d;
        for (uint32_t d = 0; d < n && pick < 0; d++)
            if (damaged(&jr[d][j]))
                pick = (int)d;
        memset(&journal[j], 0, sizeof journal[j]);
        if (pick >= 0)
            journal[j] = jr[pick][j];
    }
}

/* FORMAT.md "Namespace journal": a valid record of the epoch kills the
 * keys that start with its prefix and whose seq is below its own. */
static bool model_kills(const l3_journal_record *journal, uint64_t epoch, const char *key, size_t len, uint64_t seq)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &journal[j];
        bool starts = r->prefix_len <= len;
        for (size_t i = 0; starts && i < r->prefix_len; i++)
            starts = key[i] == r->prefix[i];
        if (l3_journal_record_valid(r) && r->epoch == epoch && seq < r->seq && starts)
            return true;
    }
    return false;
}

static void check_journal(src *s, const l3_journal_record *journal)
{
    bool any = false;
    uint64_t next = 0;
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &journal[j];
        expect("journal record damaged", l3_journal_record_damaged(r), damaged(r));
        any |= damaged(r);
        if (l3_journal_record_valid(r) && r->epoch == EPOCH && r->seq + 1 > next)
            next = r->seq + 1;
    }
    expect("journal damaged", l3_journal_damaged(journal), any);
    expect("journal next seq", l3_journal_next_seq(journal, EPOCH), next);
    bool ckpt = u8(s) & 1;
    expect("lost removal", l3_journal_lost_removal(journal, ckpt), any && !ckpt);
    char key[8];
    size_t len = text(s, key, sizeof key);
    uint64_t seq = u8(s);
    expect("journal kills", l3_journal_kills(journal, EPOCH, key, len, seq),
           model_kills(journal, EPOCH, key, len, seq));
}

/* ---- headers ---- */

static uint8_t hbuf[4096] __attribute__((aligned(64)));

static const l3_object_header *decode_header(src *s, uint32_t slab, uint32_t slot, const l3_slab_record *r)
{
    memset(hbuf, 0, sizeof hbuf);
    l3_object_header *h = (l3_object_header *)hbuf;
    uint8_t how = u8(s);
    if (how % 8 == 0)
        return h; /* never written */
    h->epoch = how & 8 ? EPOCH + 1 : EPOCH;
    h->slab = how & 16 ? slab + 1 : slab;
    h->slot = how & 32 ? slot + 1 : slot;
    h->slab_gen = how & 64 ? r->gen + 1 : r->gen;
    h->size = u16(s) % ((r->payload_blocks + 1) * 4096u); /* in its class, mostly */
    h->seq = u8(s);
    h->key_len = (uint16_t)text(s, h->key, 6);
    l3_object_header_seal(h);
    if (how % 8 == 2)
        h->seq++; /* torn */
    if (how % 8 == 3)
        h->magic++;
    if (how % 8 == 4)
        hbuf[u8(s) % 128] ^= (uint8_t)(1u << (u8(s) % 8));
    return h;
}

/* FORMAT.md "Objects": live when the header checks, is of the epoch, sits
 * where it was read (slab, slot, the slab's generation), fits the slab's
 * class, and no journal record kills it; stale when it checks but is
 * another's; corrupt when it has the magic and does not check. */
static l3_slot_verdict model_slot(const l3_geometry *g, const l3_slab_record *r, uint32_t slab, uint32_t slot,
                                  const l3_object_header *h, const l3_journal_record *journal)
{
    if (h->magic != L3_OBJECT_MAGIC)
        return L3_SLOT_EMPTY;
    if (!l3_object_header_valid(h, g->header_bytes))
        return L3_SLOT_CORRUPT;
    uint64_t blocks_used = h->size / g->block_size + (h->size % g->block_size != 0);
    if (h->epoch != EPOCH || h->slab != slab || h->slot != slot || h->slab_gen != r->gen ||
        blocks_used > r->payload_blocks)
        return L3_SLOT_STALE;
    return model_kills(journal, EPOCH, h->key, h->key_len, h->seq) ? L3_SLOT_DELETED : L3_SLOT_LIVE;
}

/* ---- summaries ---- */

static uint8_t sbuf[4096] __attribute__((aligned(64)));

static void decode_summary(src *s, const l3_geometry *g, uint32_t slab, const l3_slab_record *r)
{
    memset(sbuf, 0, sizeof sbuf);
    l3_summary_head h;
    memset(&h, 0, sizeof h);
    uint8_t how = u8(s);
    h.slab = how & 1 ? slab + 1 : slab;
    h.gen = how & 2 ? r->gen + 1 : r->gen;
    h.epoch = how & 4 ? r->epoch + 1 : r->epoch;
    h.payload_blocks = how & 8 ? r->payload_blocks + 1 : r->payload_blocks;
    h.nslots = l3_slots_per_slab(g, r->payload_blocks) - (how & 16 ? 1 : 0);
    h.num_ns = u8(s) % 6;
    for (uint32_t j = 0; j < L3_SUMMARY_NS; j++)
        h.ns_len[j] = (uint16_t)text(s, h.ns_text[j], 4);
    l3_summary_head_seal(&h);
    if (how & 32)
        h.gen++; /* torn */
    memcpy(sbuf, &h, sizeof h);
    l3_summary_entry *ents = (l3_summary_entry *)(sbuf + L3_SUMMARY_ENTRIES_AT);
    for (uint32_t k = 0; k < SLOTS; k++) {
        l3_summary_entry *e = &ents[k];
        uint8_t kind = u8(s);
        if (kind % 8 == 0)
            continue; /* empty */
        static const uint16_t lens[] = { 0, 1, 5, 12, L3_OBJECT_KEY_MAX, L3_OBJECT_KEY_MAX + 1 };
        e->ns = u8(s) % 6;
        e->key_len = lens[u8(s) % 6];
        e->size = u16(s) % ((r->payload_blocks + 1) * g->block_size); /* in its class, mostly */
        e->seq = u8(s);
        l3_summary_entry_seal(e, slab, kind % 8 == 2 ? k + 1 : k, kind % 8 == 3 ? h.gen + 1 : h.gen);
        if (kind % 8 == 4)
            e->seq++; /* torn */
        if (kind % 8 == 5)
            e->flags = 2;
    }
}

/* FORMAT.md "Slab summaries": an entry is empty when zero (flags 0), and
 * else live when it checks (present, for its slab, slot and generation; a
 * namespace of the head's, a key length of 1..2048, a size in the class)
 * and no journal record kills its namespace; deleted when one does. */
static l3_slot_verdict model_entry(const l3_geometry *g, const l3_summary_head *h, uint32_t slab, uint32_t slot,
                                   const l3_summary_entry *e, const l3_journal_record *journal)
{
    if (e->flags == 0)
        return L3_SLOT_EMPTY;
    uint64_t blocks_used = e->size / g->block_size + (e->size % g->block_size != 0);
    bool checks = l3_summary_entry_valid(e, slab, slot, h->gen) && e->ns <= h->num_ns && e->key_len >= 1 &&
                  e->key_len <= L3_OBJECT_KEY_MAX && blocks_used <= h->payload_blocks;
    if (!checks)
        return L3_SLOT_CORRUPT;
    if (e->ns > 0 && model_kills(journal, h->epoch, h->ns_text[e->ns - 1], h->ns_len[e->ns - 1], e->seq))
        return L3_SLOT_DELETED;
    return L3_SLOT_LIVE;
}

/* A journal decides a summary unless a valid record of its epoch newer
 * than the slab's first object has a prefix without '_'. */
static bool model_decidable(const l3_journal_record *journal, uint64_t epoch, uint64_t first_seq)
{
    for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++) {
        const l3_journal_record *r = &journal[j];
        bool underscore = false;
        for (uint32_t i = 0; i < r->prefix_len && i < sizeof r->prefix; i++)
            underscore |= r->prefix[i] == '_';
        if (l3_journal_record_valid(r) && r->epoch == epoch && r->seq > first_seq && !underscore)
            return false;
    }
    return true;
}

static void check_summary(src *s, const l3_geometry *g, uint32_t slab, const l3_slab_record *r,
                          const l3_journal_record *journal)
{
    decode_summary(s, g, slab, r);
    const l3_summary_head *h = (const l3_summary_head *)sbuf;
    const l3_summary_entry *ents = (const l3_summary_entry *)(sbuf + L3_SUMMARY_ENTRIES_AT);
    expect("summary decidable", l3_summary_decidable(journal, EPOCH, r->first_seq),
           model_decidable(journal, EPOCH, r->first_seq));
    uint8_t verdicts[SLOTS];
    memset(verdicts, 0xee, sizeof verdicts);
    bool got = l3_summary_usable(g, sbuf, slab, r, journal, verdicts);
    bool head_ok = l3_summary_head_valid(h, slab, r);
    bool want = head_ok && h->nslots == l3_slots_per_slab(g, r->payload_blocks) &&
                model_decidable(journal, h->epoch, r->first_seq);
    for (uint32_t k = 0; want && k < h->nslots; k++) {
        l3_slot_verdict v = model_entry(g, h, slab, k, &ents[k], journal);
        expect("summary usable verdict", verdicts[k], v);
        want = v != L3_SLOT_CORRUPT;
    }
    expect("summary usable", got, want);
    for (uint32_t k = 0; head_ok && k < SLOTS; k++)
        expect("summary entry", l3_summary_judge(g, h, slab, k, &ents[k], journal),
               model_entry(g, h, slab, k, &ents[k], journal));
}

/* ---- the store's tables, slots and summaries ---- */

static l3_slab_record tbl[2][SLABS], table[SLABS], want_table[SLABS];
static l3_journal_record jr[2][L3_JOURNAL_RECORDS], journal[L3_JOURNAL_RECORDS], want_journal[L3_JOURNAL_RECORDS];

static void check_store(src *s)
{
    uint8_t how = u8(s);
    uint32_t b = how & 1 ? 512 : 4096;
    l3_geometry g = { .block_size = b, .slab_size = 1u << 20, .num_slabs = SLABS, .max_objects = 1024,
                      .header_bytes = (uint32_t)l3_round_up(L3_OBJ_HEADER_FIXED + L3_OBJECT_KEY_MAX, b),
                      .max_slots = SLOTS, .num_devices = how & 2 ? 2 : 1, .summaries = 1 };
    for (uint32_t d = 0; d < g.num_devices; d++) {
        for (uint32_t i = 0; i < SLABS; i++)
            decode_record(s, &tbl[d][i], i);
        decode_journal(s, jr[d]);
    }
    memset(table, 0, sizeof table);
    memset(journal, 0, sizeof journal);
    for (uint32_t d = 0; d < g.num_devices; d++)
        l3_merge_device_tables(&g, d, tbl[d], jr[d], table, journal);
    model_merge(g.num_devices, tbl, jr, want_table, want_journal);
    expect("merged table", memcmp(table, want_table, sizeof table) != 0, 0);
    expect("merged journal", memcmp(journal, want_journal, sizeof journal) != 0, 0);
    check_journal(s, journal);
    for (uint32_t i = 0; i < SLABS; i++) {
        const l3_slab_record *r = &table[i];
        bool in_use = l3_slab_record_valid(r, i) && r->state == L3_SLAB_USED && r->epoch == EPOCH;
        expect("slab in use", l3_slab_in_use(r, i, EPOCH), in_use);
        for (uint32_t n = u8(s) % 3; n > 0; n--) {
            uint32_t slot = u8(s) % SLOTS;
            const l3_object_header *h = decode_header(s, i, slot, r);
            expect("slot verdict", l3_slot_judge(&g, EPOCH, r, i, slot, h, journal),
                   model_slot(&g, r, i, slot, h, journal));
        }
        if (in_use && (u8(s) & 1))
            check_summary(s, &g, i, r, journal);
    }
}

/* ---- duplicates and checkpoints ---- */

static void check_duplicates(src *s)
{
    uint64_t a = u8(s), b2 = u8(s);
    bool higher_checks = u8(s) & 1;
    if (a != b2) /* FORMAT.md: the higher seq, unless its payload does not check: then the other */
        expect("duplicate", l3_dup_wins(a, b2, higher_checks), a > b2 ? higher_checks : !higher_checks);
}

/* FORMAT.md "Checkpoint": its header checks, is of the packed layout, and
 * belongs to a clean superblock (its sequence, crc and length), of the
 * store's slabs, within the bounds, its length what its counts lay out. */
static bool model_checkpoint(const l3_checkpoint_header *h, const l3_superblock *sb, const l3_geometry *g)
{
    uint64_t words = (l3_index_capacity_for(g->max_objects) + 63) / 64;
    uint64_t body = (uint64_t)h->num_namespaces * 258 + (uint64_t)h->num_slabs * 4 + words * 8 +
                    h->num_entries * 40 + (uint64_t)h->num_slot_ids * 4;
    return l3_checkpoint_header_valid(h) && (h->version == L3_CKPT_PACKED || h->version == L3_CKPT_PACKED_UNSEALED) &&
           sb->clean &&
           h->sequence == sb->sequence && h->body_crc == sb->ckpt_crc && h->body_bytes == sb->ckpt_bytes &&
           h->num_slabs == g->num_slabs && h->num_namespaces <= L3_MAX_NAMESPACES &&
           h->num_entries <= g->max_objects && g->block_size + h->body_bytes <= g->checkpoint_len &&
           h->body_bytes == body;
}

static void check_checkpoint(src *s)
{
    l3_geometry g = { .block_size = 4096, .num_slabs = SLABS, .max_objects = 1024, .checkpoint_len = 8192 };
    uint16_t how = u16(s);
    l3_checkpoint_header h;
    memset(&h, 0, sizeof h);
    h.version = L3_CKPT_PACKED;
    h.num_namespaces = how & 1 ? L3_MAX_NAMESPACES + (u8(s) % 2) : u8(s) % 4;
    h.num_slabs = SLABS + (how & 2 ? 1 : 0);
    h.num_entries = how & 4 ? g.max_objects + (u8(s) % 2) : u8(s) % 40;
    h.num_slot_ids = u8(s) % 40;
    uint64_t words = (l3_index_capacity_for(g.max_objects) + 63) / 64;
    h.body_bytes = (uint64_t)h.num_namespaces * 258 + h.num_slabs * 4 + words * 8 + h.num_entries * 40 +
                   (uint64_t)h.num_slot_ids * 4 + (how & 8 ? 4 : 0);
    h.sequence = 41 + (how & 16 ? 1 : 0);
    h.body_crc = 0xabcd + (how & 32 ? 1 : 0);
    l3_checkpoint_header_seal(&h);
    if (how & 2048 || how & 4096) { /* an earlier build's layout, sealed by hand (the seal takes this one only) */
        h.version = how & 2048 ? L3_CKPT_LIST : L3_CKPT_PACKED_UNSEALED; /* (the packed one before sealed crcs: read alike) */
        h.header_crc = 0;
        h.header_crc = l3_crc32c(0, &h, sizeof h);
    }
    if (how & 64)
        h.num_entries++; /* torn */
    l3_superblock sb;
    memset(&sb, 0, sizeof sb);
    sb.clean = !(how & 128);
    sb.sequence = 41;
    sb.ckpt_crc = 0xabcd;
    sb.ckpt_bytes = h.body_bytes + (how & 256 ? 4 : 0);
    if (how & 512)
        g.checkpoint_len = g.block_size + h.body_bytes - (how & 1024 ? 1 : 0);
    else
        g.checkpoint_len = 1u << 20;
    char why[128];
    expect("checkpoint matches", l3_checkpoint_matches(&h, &sb, &g, why, sizeof why), model_checkpoint(&h, &sb, &g));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    src s = { data, size };
    check_superblocks(&s);
    check_store(&s);
    check_duplicates(&s);
    check_checkpoint(&s);
    return 0;
}
