/* The rulebook (store/slab/rules.h), table-driven: each row a case and
 * the verdict the rules give it, for every verdict of every function.
 * The rulebook is pure, so the cases are bytes made up here: no disk.
 * Each table's test also checks that its rows give every verdict the
 * function has (both answers of a yes-or-no rule), so a row taken away
 * cannot leave a verdict untested. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "index.h"
#include "l3_crc32c.h"
#include "rules.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The case every row starts from: slab SLAB of class PB (payload blocks),
 * generation GEN, opened at sequence FIRST in the store's epoch EPOCH. */
#define EPOCH 7u
#define SLAB 3u
#define GEN 5u
#define PB 2u
#define FIRST 100u
#define NSLOTS 8u /* the class's slots (max_slots below) */

static l3_geometry geo(void)
{
    return (l3_geometry){ .block_size = 4096, .slab_size = 1u << 20, .capacity = 16u << 20, .num_slabs = 8,
                          .max_objects = 1024, .checkpoint_len = 1u << 20, .header_bytes = 4096,
                          .max_slots = NSLOTS, .num_devices = 1, .summaries = 1 };
}

/* Both answers of a yes-or-no rule seen, as a mask (bit 0: false, 1: true). */
#define BOTH 3u
static unsigned seen(bool v) { return 1u << v; }

/* ---- superblock copies ---- */

/* One place of one copy as a reader found it. what: 0 beyond the image
 * (not read, no error); 'e' a read error; 'z' zeros (no magic); 'v' a
 * sealed superblock; 't' one torn after its seal (the crc fails); 'n' a
 * version this build does not read; 'f' feature flags it does not know. */
typedef struct place {
    char what;
    uint32_t copy, block;
    uint64_t seq;
    uint8_t uuid;
} place;

#define END { 0, 0, 0, 0, 0 }
#define ERR { 'e', 0, 0, 0, 0 }
#define Z { 'z', 0, 0, 0, 0 }
#define V(c, b, s) { 'v', c, b, s, 1 }
#define T(c, b, s) { 't', c, b, s, 1 }
#define ZZZZ Z, Z, Z, Z

typedef struct sb_row {
    const char *name;
    place c0, c1[L3_SB_PLACES];
    l3_sb_verdict v0, v1;
    int best;
    uint64_t best_seq;
    const char *why0, *why1; /* NULL, or a part of the copy's why */
} sb_row;

static const sb_row sb_rows[] = {
    { "both copies, one sequence: copy 0", V(0, 4096, 5), { V(1, 4096, 5), ZZZZ }, L3_SB_VALID, L3_SB_VALID, 0, 5,
      "valid", "valid" },
    { "copy 0 newer (a crash between the two writes)", V(0, 4096, 6), { V(1, 4096, 5), ZZZZ }, L3_SB_VALID,
      L3_SB_VALID, 0, 6, NULL, NULL },
    { "copy 1 newer", V(0, 4096, 5), { V(1, 4096, 6), ZZZZ }, L3_SB_VALID, L3_SB_VALID, 1, 6, NULL, NULL },
    { "copy 0 torn: copy 1 wins, older though it is", T(0, 4096, 6), { V(1, 4096, 5), ZZZZ }, L3_SB_BROKEN,
      L3_SB_VALID, 1, 5, "checksum", NULL },
    { "copy 1 torn", V(0, 4096, 5), { T(1, 4096, 6), ZZZZ }, L3_SB_VALID, L3_SB_BROKEN, 0, 5, NULL, "checksum" },
    { "both torn: none valid", T(0, 4096, 5), { T(1, 4096, 5), ZZZZ }, L3_SB_BROKEN, L3_SB_BROKEN, -1, 0, NULL,
      NULL },
    { "a blank image", Z, { ZZZZ, Z }, L3_SB_BROKEN, L3_SB_BROKEN, -1, 0, "no l3cache magic", "no l3cache magic" },
    { "copy 0 of a later format version", { 'n', 0, 4096, 9, 1 }, { V(1, 4096, 5), ZZZZ }, L3_SB_BROKEN,
      L3_SB_VALID, 1, 5, "format version", NULL },
    { "copy 0 with feature flags this build does not know", { 'f', 0, 4096, 9, 1 }, { V(1, 4096, 5), ZZZZ },
      L3_SB_BROKEN, L3_SB_VALID, 1, 5, "unknown feature flags", NULL },
    { "an image of one block: copy 1 has no place", V(0, 4096, 5), { END, END, END, END, END }, L3_SB_VALID,
      L3_SB_MISSING, 0, 5, NULL, "not found" },
    { "an image too small for either copy", END, { END, END, END, END, END }, L3_SB_MISSING, L3_SB_MISSING, -1, 0,
      "not found", "not found" },
    { "copy 0 unreadable", ERR, { V(1, 4096, 5), ZZZZ }, L3_SB_UNREADABLE, L3_SB_VALID, 1, 5, "Input/output",
      NULL },
    { "copy 1 unreadable at its second place, after a broken first", V(0, 4096, 5), { T(1, 4096, 5), ERR, Z, Z, Z },
      L3_SB_VALID, L3_SB_UNREADABLE, 0, 5, NULL, "Input/output" },
    { "8 KiB blocks: copy 0 at 0, copy 1 at 8192", V(0, 8192, 5), { Z, V(1, 8192, 5), Z, Z, Z }, L3_SB_VALID,
      L3_SB_VALID, 0, 5, NULL, NULL },
    { "64 KiB blocks: copy 1 at its last place", V(0, 65536, 5), { ZZZZ, V(1, 65536, 6) }, L3_SB_VALID,
      L3_SB_VALID, 1, 6, NULL, NULL },
    { "512-byte blocks: copy 1 at 4096", V(0, 512, 5), { V(1, 512, 5), ZZZZ }, L3_SB_VALID, L3_SB_VALID, 0, 5,
      NULL, NULL },
    { "copy 0's block in copy 1's place (a misdirected write)", V(0, 4096, 5), { V(0, 4096, 6), ZZZZ },
      L3_SB_VALID, L3_SB_MISPLACED, 0, 5, NULL, "copy 0 found at offset 4096" },
    { "copy 1's block at offset 0", V(1, 4096, 6), { V(1, 4096, 5), ZZZZ }, L3_SB_MISPLACED, L3_SB_VALID, 1, 5,
      "copy 1 found at offset 0", NULL },
    { "copy 1 of 4 KiB blocks at 8192 (stale: not where its block size puts it)", V(0, 4096, 5),
      { Z, V(1, 4096, 9), Z, Z, Z }, L3_SB_VALID, L3_SB_MISPLACED, 0, 5, NULL, "copy 1 found at offset 8192" },
    { "copy 1 naming block size 0", V(0, 4096, 5), { V(1, 0, 9), ZZZZ }, L3_SB_VALID, L3_SB_MISPLACED, 0, 5, NULL,
      NULL },
    { "copy 1 of 8 KiB blocks misplaced at 4096, found at 8192", V(0, 8192, 4), { V(1, 8192, 5), V(1, 8192, 5), Z,
      Z, Z }, L3_SB_VALID, L3_SB_VALID, 1, 5, NULL, "valid" },
    { "copy 1 found at its first place: later places not looked at", V(0, 4096, 4),
      { V(1, 4096, 5), V(1, 8192, 9), Z, Z, Z }, L3_SB_VALID, L3_SB_VALID, 1, 5, NULL, NULL },
    { "a place beyond the image ends the search", V(0, 4096, 5), { Z, END, V(1, 16384, 9), Z, Z }, L3_SB_VALID,
      L3_SB_BROKEN, 0, 5, NULL, "no l3cache magic" },
    { "misplaced, then broken places: misplaced stands", V(0, 4096, 5), { V(0, 4096, 5), T(1, 8192, 5), Z, Z, Z },
      L3_SB_VALID, L3_SB_MISPLACED, 0, 5, NULL, "copy 0 found" },
    { "broken first place, misplaced second: misplaced", V(0, 4096, 5), { T(1, 4096, 5), V(1, 4096, 5), Z, Z, Z },
      L3_SB_VALID, L3_SB_MISPLACED, 0, 5, NULL, "copy 1 found at offset 8192" },
    { "copies of two stores (uuids differ): the higher sequence wins all the same", V(0, 4096, 5),
      { { 'v', 1, 4096, 9, 2 }, ZZZZ }, L3_SB_VALID, L3_SB_VALID, 1, 9, NULL, NULL },
};

static void fill_place(l3_sb_read *r, const place *p)
{
    memset(r, 0, sizeof *r);
    if (p->what == 0)
        return;
    if (p->what == 'e') {
        snprintf(r->why, sizeof r->why, "reading 4096 bytes at 0 of the image: Input/output error");
        return;
    }
    r->read = true;
    if (p->what == 'z')
        return;
    l3_superblock *sb = &r->sb;
    memcpy(sb->magic, L3_SB_MAGIC, 8);
    sb->version = p->what == 'n' ? L3_FORMAT_VERSION + 1 : L3_FORMAT_VERSION;
    sb->incompat = p->what == 'f' ? 0x80u : 0;
    sb->copy = p->copy;
    sb->block_size = p->block;
    sb->sequence = p->seq;
    sb->uuid[0] = p->uuid;
    sb->epoch = EPOCH;
    l3_sb_seal(sb);
    if (p->what == 't')
        sb->epoch++; /* after the seal: a write cut short */
}

static void expect_why(const sb_row *row, const l3_sb_copies *c, int k, const char *want)
{
    if (want && !strstr(c->why[k], want))
        fail_msg("%s: copy %d's why is \"%s\", not \"%s\"", row->name, k, c->why[k], want);
}

static void superblock_copies(void **state)
{
    (void)state;
    unsigned verdicts = 0;
    for (size_t i = 0; i < ARRAY_LEN(sb_rows); i++) {
        const sb_row *row = &sb_rows[i];
        l3_sb_reads r;
        fill_place(&r.at[0][0], &row->c0);
        for (uint32_t k = 1; k < L3_SB_PLACES; k++) /* copy 0 has one place: these are never looked at */
            fill_place(&r.at[0][k], &(place)V(0, 4096, 99));
        for (uint32_t k = 0; k < L3_SB_PLACES; k++)
            fill_place(&r.at[1][k], &row->c1[k]);
        l3_sb_copies c;
        int n = l3_sb_choose(&r, &c);
        if (c.verdict[0] != row->v0 || c.verdict[1] != row->v1 || c.best != row->best)
            fail_msg("%s: verdicts %d, %d, best %d; want %d, %d, best %d", row->name, c.verdict[0], c.verdict[1],
                     c.best, row->v0, row->v1, row->best);
        assert_int_equal(n, (row->v0 == L3_SB_VALID) + (row->v1 == L3_SB_VALID));
        for (int k = 0; k < L3_SB_COPIES; k++) {
            assert_int_equal(c.valid[k], c.verdict[k] == L3_SB_VALID);
            if (c.valid[k])
                assert_string_equal(c.why[k], "valid");
            verdicts |= 1u << c.verdict[k];
        }
        if (row->best >= 0)
            assert_int_equal(c.copy[row->best].sequence, row->best_seq);
        expect_why(row, &c, 0, row->why0);
        expect_why(row, &c, 1, row->why1);
    }
    assert_int_equal(verdicts, (1u << (L3_SB_VALID + 1)) - 1); /* every verdict has a row */
}

typedef struct place_row {
    uint32_t c, k;
    uint64_t size, off;
    bool there;
} place_row;

static const place_row place_rows[] = {
    { 0, 0, 4096, 0, true },       { 0, 0, 4095, 0, false },       { 0, 1, 1u << 20, 0, false },
    { 1, 0, 8191, 4096, false },   { 1, 0, 8192, 4096, true },     { 1, 1, 16384, 8192, true },
    { 1, 4, 69632, 65536, true },  { 1, 4, 69631, 65536, false },  { 1, L3_SB_PLACES, 1u << 30, 131072, false },
    { 2, 0, 1u << 30, 8192, false },
};

static void superblock_places(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(place_rows); i++) {
        const place_row *row = &place_rows[i];
        uint64_t off = 1;
        bool there = l3_sb_place(row->c, row->k, row->size, &off);
        if (there != row->there || (row->c < L3_SB_COPIES && off != row->off))
            fail_msg("copy %u place %u of %llu bytes: %d at %llu", row->c, row->k, (unsigned long long)row->size,
                     there, (unsigned long long)off);
        answers |= seen(there);
    }
    assert_int_equal(answers, BOTH);
}

/* ---- slab records ---- */

typedef struct record_row {
    const char *name;
    char what; /* 's' sealed, 't' torn after its seal, 'z' zeros */
    uint32_t slab, state;
    uint64_t epoch;
    bool want;
} record_row;

static const record_row record_rows[] = {
    { "used, of this epoch, read where it was written", 's', SLAB, L3_SLAB_USED, EPOCH, true },
    { "free", 's', SLAB, L3_SLAB_FREE, EPOCH, false },
    { "of another epoch", 's', SLAB, L3_SLAB_USED, EPOCH - 1, false },
    { "another slab's (a misdirected write)", 's', SLAB + 1, L3_SLAB_USED, EPOCH, false },
    { "torn (its crc fails)", 't', SLAB, L3_SLAB_USED, EPOCH, false },
    { "never written (zeros)", 'z', SLAB, L3_SLAB_USED, EPOCH, false },
};

static l3_slab_record record(uint32_t slab, uint32_t state, uint64_t epoch, uint64_t gen)
{
    l3_slab_record r;
    memset(&r, 0, sizeof r);
    r.slab = slab;
    r.state = state;
    r.gen = gen;
    r.epoch = epoch;
    r.first_seq = FIRST;
    r.payload_blocks = PB;
    l3_slab_record_seal(&r);
    return r;
}

static void slab_records(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(record_rows); i++) {
        const record_row *row = &record_rows[i];
        l3_slab_record r = record(row->slab, row->state, row->epoch, GEN);
        if (row->what == 't')
            r.gen++;
        if (row->what == 'z')
            memset(&r, 0, sizeof r);
        bool got = l3_slab_in_use(&r, SLAB, EPOCH);
        if (got != row->want)
            fail_msg("%s: in use %d", row->name, got);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

/* ---- the journal ---- */

/* A journal record. what: 0 blank (all zero), 'v' valid, 'd' damaged (a
 * valid record with a bit of its prefix flipped), 'p' a prefix length
 * past the most (sealed), 'g' all zero but a pad byte. */
typedef struct jrec {
    char what;
    uint64_t epoch, seq;
    const char *prefix;
} jrec;

#define JN 3 /* records a row gives, in slots 0, 17 and 31 */
static const uint32_t jslots[JN] = { 0, 17, 31 };
#define JV(s, p) { 'v', EPOCH, s, p }
#define JD(s, p) { 'd', EPOCH, s, p }
#define NOJ { { 0, 0, 0, NULL } }

static void make_record(l3_journal_record *r, const jrec *j)
{
    memset(r, 0, sizeof *r);
    if (j->what == 0)
        return;
    if (j->what == 'g') {
        r->pad = 1;
        return;
    }
    r->seq = j->seq;
    r->epoch = j->epoch;
    r->prefix_len = (uint32_t)strlen(j->prefix);
    memcpy(r->prefix, j->prefix, r->prefix_len);
    if (j->what == 'p')
        r->prefix_len = L3_JOURNAL_PREFIX_MAX + 1;
    l3_journal_record_seal(r);
    if (j->what == 'd')
        r->prefix[100] ^= 0x10;
}

static void journal_of(const jrec *js, l3_journal_record *journal)
{
    memset(journal, 0, L3_JOURNAL_RECORDS * sizeof *journal);
    for (int i = 0; i < JN; i++)
        make_record(&journal[jslots[i]], &js[i]);
}

static l3_journal_record journal[L3_JOURNAL_RECORDS];

typedef struct kill_row {
    const char *name;
    jrec j[JN];
    const char *key;
    size_t len; /* 0: the key's text */
    uint64_t seq;
    bool want;
} kill_row;

static const kill_row kill_rows[] = {
    { "an empty journal kills nothing", NOJ, "ns_a", 0, 100, false },
    { "a later removal of its namespace kills it", { JV(150, "ns_") }, "ns_a", 0, 100, true },
    { "one of the same sequence does not", { JV(100, "ns_") }, "ns_a", 0, 100, false },
    { "an earlier one does not", { JV(99, "ns_") }, "ns_a", 0, 100, false },
    { "one of another epoch does not", { { 'v', EPOCH + 1, 150, "ns_" } }, "ns_a", 0, 100, false },
    { "another prefix does not", { JV(150, "nt_") }, "ns_a", 0, 100, false },
    { "a prefix longer than the key does not", { JV(150, "ns_ab") }, "ns_a", 0, 100, false },
    { "the key's length bounds it, not its text", { JV(150, "ns_a") }, "ns_abc", 3, 100, false },
    { "the whole key as its prefix kills it", { JV(150, "ns_a") }, "ns_a", 0, 100, true },
    { "an empty prefix kills every earlier key of the epoch", { JV(150, "") }, "zz", 0, 100, true },
    { "a damaged record kills nothing by itself", { JD(150, "ns_") }, "ns_a", 0, 100, false },
    { "the second of three records kills", { JV(150, "nt_"), JV(150, "ns_"), JV(50, "ns_") }, "ns_a", 0, 100,
      true },
};

static void journal_kills(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(kill_rows); i++) {
        const kill_row *row = &kill_rows[i];
        journal_of(row->j, journal);
        bool got = l3_journal_kills(journal, EPOCH, row->key, row->len ? row->len : strlen(row->key), row->seq);
        if (got != row->want)
            fail_msg("%s: kills %d", row->name, got);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

typedef struct damage_row {
    const char *name;
    jrec j[JN];
    bool record, journal; /* the first record damaged; any */
} damage_row;

static const damage_row damage_rows[] = {
    { "blank", NOJ, false, false },
    { "valid", { JV(150, "ns_") }, false, false },
    { "valid, of another epoch", { { 'v', EPOCH - 1, 150, "ns_" } }, false, false },
    { "a bit flipped", { JD(150, "ns_") }, true, true },
    { "a prefix length past the most", { { 'p', EPOCH, 150, "ns_" } }, true, true },
    { "zeros but one pad byte", { { 'g', 0, 0, NULL } }, true, true },
    { "valid, then a damaged one in the last slot", { JV(150, "ns_"), { 0, 0, 0, NULL }, JD(160, "nt_") }, false,
      true },
};

static void journal_damage(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(damage_rows); i++) {
        const damage_row *row = &damage_rows[i];
        journal_of(row->j, journal);
        bool rec = l3_journal_record_damaged(&journal[0]), any = l3_journal_damaged(journal);
        if (rec != row->record || any != row->journal)
            fail_msg("%s: record damaged %d, journal damaged %d", row->name, rec, any);
        answers |= seen(rec) | seen(any) << 2;
    }
    assert_int_equal(answers, 15u);
}

typedef struct lost_row {
    const char *name;
    jrec j[JN];
    bool checkpoint_used, want;
} lost_row;

static const lost_row lost_rows[] = {
    { "blank, a crash scan", NOJ, false, false },
    { "blank, from the checkpoint", NOJ, true, false },
    { "valid records, a crash scan", { JV(150, "ns_"), JV(160, "nt_") }, false, false },
    { "a damaged record, a crash scan: nothing is proven live", { JD(150, "ns_") }, false, true },
    { "a damaged record, from the checkpoint: its entries stand", { JD(150, "ns_") }, true, false },
    { "valid and damaged, a crash scan", { JV(150, "ns_"), JD(160, "nt_") }, false, true },
    { "valid and damaged, from the checkpoint", { JV(150, "ns_"), JD(160, "nt_") }, true, false },
    { "stray bytes in a pad, a crash scan", { { 'g', 0, 0, NULL } }, false, true },
};

static void journal_lost_removal(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(lost_rows); i++) {
        const lost_row *row = &lost_rows[i];
        journal_of(row->j, journal);
        bool got = l3_journal_lost_removal(journal, row->checkpoint_used);
        if (got != row->want)
            fail_msg("%s: lost removal %d", row->name, got);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

typedef struct next_row {
    const char *name;
    jrec j[JN];
    uint64_t want;
} next_row;

static const next_row next_rows[] = {
    { "no record: 0", NOJ, 0 },
    { "one past the record", { JV(41, "ns_") }, 42 },
    { "one past the highest", { JV(41, "ns_"), JV(90, "nt_") }, 91 },
    { "whatever the slots' order", { JV(90, "ns_"), JV(41, "nt_") }, 91 },
    { "a record of another epoch does not count", { { 'v', EPOCH + 1, 500, "ns_" }, JV(41, "nt_") }, 42 },
    { "a damaged record does not count", { JD(500, "ns_") }, 0 },
    { "a record of sequence 0", { JV(0, "ns_") }, 1 },
};

static void journal_next_seq(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(next_rows); i++) {
        journal_of(next_rows[i].j, journal);
        uint64_t got = l3_journal_next_seq(journal, EPOCH);
        if (got != next_rows[i].want)
            fail_msg("%s: next %llu", next_rows[i].name, (unsigned long long)got);
    }
}

/* ---- headers ---- */

/* An object header. what: 's' sealed, 'z' zeros, 'm' another structure's
 * magic, 't' torn after its seal, 'u' a NUL in its key, 'k' a key of
 * length 0 (both sealed). */
typedef struct hdr {
    char what;
    uint64_t epoch;
    uint32_t slab, slot;
    uint64_t gen;
    uint32_t size;
    const char *key;
    uint64_t seq;
} hdr;

#define H(e, sl, st, g, sz) { 's', e, sl, st, g, sz, "ns_a", 120 }
#define HOK H(EPOCH, SLAB, 1, GEN, 5000)

typedef struct slot_row {
    const char *name;
    hdr h;
    jrec j[JN];
    l3_slot_verdict want;
} slot_row;

static const slot_row slot_rows[] = {
    { "never written (zeros)", { 'z', EPOCH, SLAB, 1, GEN, 5000, "ns_a", 120 }, NOJ, L3_SLOT_EMPTY },
    { "another structure's bytes", { 'm', EPOCH, SLAB, 1, GEN, 5000, "ns_a", 120 }, NOJ, L3_SLOT_EMPTY },
    { "torn (its crc fails)", { 't', EPOCH, SLAB, 1, GEN, 5000, "ns_a", 120 }, NOJ, L3_SLOT_CORRUPT },
    { "a NUL in its key", { 'u', EPOCH, SLAB, 1, GEN, 5000, "ns_a", 120 }, NOJ, L3_SLOT_CORRUPT },
    { "a key of length 0", { 'k', EPOCH, SLAB, 1, GEN, 5000, "ns_a", 120 }, NOJ, L3_SLOT_CORRUPT },
    { "torn, and of another epoch: corrupt first", { 't', EPOCH - 1, SLAB, 1, GEN, 5000, "ns_a", 120 }, NOJ,
      L3_SLOT_CORRUPT },
    { "of another epoch", H(EPOCH - 1, SLAB, 1, GEN, 5000), NOJ, L3_SLOT_STALE },
    { "another slab's (a misdirected write)", H(EPOCH, SLAB + 1, 1, GEN, 5000), NOJ, L3_SLOT_STALE },
    { "another slot's", H(EPOCH, SLAB, 2, GEN, 5000), NOJ, L3_SLOT_STALE },
    { "of an earlier generation of the slab", H(EPOCH, SLAB, 1, GEN - 1, 5000), NOJ, L3_SLOT_STALE },
    { "a size past its class by a byte", H(EPOCH, SLAB, 1, GEN, PB * 4096 + 1), NOJ, L3_SLOT_STALE },
    { "stale, and killed: stale first", H(EPOCH, SLAB, 1, GEN - 1, 5000), { JV(150, "ns_") }, L3_SLOT_STALE },
    { "live", HOK, NOJ, L3_SLOT_LIVE },
    { "a size filling its class", H(EPOCH, SLAB, 1, GEN, PB * 4096), NOJ, L3_SLOT_LIVE },
    { "killed by a later removal of its namespace", HOK, { JV(150, "ns_") }, L3_SLOT_DELETED },
    { "a removal before it", HOK, { JV(110, "ns_") }, L3_SLOT_LIVE },
    { "a removal of another namespace", HOK, { JV(150, "nt_") }, L3_SLOT_LIVE },
    { "a damaged record does not kill it (l3_journal_lost_removal decides)", HOK, { JD(150, "ns_") },
      L3_SLOT_LIVE },
};

static uint8_t hbuf[4096] __attribute__((aligned(64)));

static const l3_object_header *make_header(const hdr *s)
{
    memset(hbuf, 0, sizeof hbuf);
    l3_object_header *h = (l3_object_header *)hbuf;
    if (s->what == 'z')
        return h;
    h->epoch = s->epoch;
    h->seq = s->seq;
    h->slab_gen = s->gen;
    h->slab = s->slab;
    h->slot = s->slot;
    h->size = s->size;
    h->key_len = (uint16_t)strlen(s->key);
    memcpy(h->key, s->key, h->key_len);
    if (s->what == 'u')
        h->key[1] = '\0';
    if (s->what == 'k')
        h->key_len = 0;
    l3_object_header_seal(h);
    if (s->what == 't')
        h->seq++;
    if (s->what == 'm')
        h->magic = L3_CKPT_MAGIC;
    return h;
}

static void slot_headers(void **state)
{
    (void)state;
    l3_geometry g = geo();
    l3_slab_record r = record(SLAB, L3_SLAB_USED, EPOCH, GEN);
    unsigned verdicts = 0;
    for (size_t i = 0; i < ARRAY_LEN(slot_rows); i++) {
        const slot_row *row = &slot_rows[i];
        journal_of(row->j, journal);
        l3_slot_verdict v = l3_slot_judge(&g, EPOCH, &r, SLAB, 1, make_header(&row->h), journal);
        if (v != row->want)
            fail_msg("%s: verdict %d, want %d", row->name, v, row->want);
        verdicts |= 1u << v;
    }
    assert_int_equal(verdicts, (1u << (L3_SLOT_LIVE + 1)) - 1);
}

/* ---- summaries ---- */

typedef struct decide_row {
    const char *name;
    jrec j[JN];
    bool want;
} decide_row;

static const decide_row decide_rows[] = {
    { "no record", NOJ, true },
    { "a later removal of a namespace", { JV(150, "ns_") }, true },
    { "a later removal of a prefix without '_'", { JV(150, "n") }, false },
    { "a later removal of everything's prefix", { JV(150, "") }, false },
    { "such a removal one after the slab's first object", { JV(FIRST + 1, "n") }, false },
    { "such a removal at the slab's first sequence", { JV(FIRST, "n") }, true },
    { "such a removal of another epoch", { { 'v', EPOCH + 1, 150, "n" } }, true },
    { "such a removal, damaged", { JD(150, "n") }, true },
};

static void summary_decidable(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(decide_rows); i++) {
        journal_of(decide_rows[i].j, journal);
        bool got = l3_summary_decidable(journal, EPOCH, FIRST);
        if (got != decide_rows[i].want)
            fail_msg("%s: decidable %d", decide_rows[i].name, got);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

/* A summary entry. what: 'z' zeros, 's' sealed for its slab, slot and
 * generation, 't' torn after its seal, 'f' flags neither 0 nor present
 * (not sealed), 'o' sealed for another slot, 'g' for another generation. */
typedef struct ent {
    char what;
    uint8_t ns;
    uint16_t key_len;
    uint32_t size;
    uint64_t seq;
} ent;

#define E(ns) { 's', ns, 12, 5000, 120 }

typedef struct entry_row {
    const char *name;
    ent e;
    jrec j[JN];
    l3_slot_verdict want;
} entry_row;

static const entry_row entry_rows[] = {
    { "zeros: no object, or deleted", { 'z', 0, 0, 0, 0 }, NOJ, L3_SLOT_EMPTY },
    { "live, without namespace", E(0), NOJ, L3_SLOT_LIVE },
    { "live, in the head's first namespace", E(1), NOJ, L3_SLOT_LIVE },
    { "its namespace removed after it", E(1), { JV(150, "ns_") }, L3_SLOT_DELETED },
    { "the second namespace removed after it", E(2), { JV(150, "nt_") }, L3_SLOT_DELETED },
    { "a removal of everything's prefix kills a namespace's entry", E(1), { JV(150, "") }, L3_SLOT_DELETED },
    { "its namespace removed before it", E(1), { JV(110, "ns_") }, L3_SLOT_LIVE },
    { "another namespace removed", E(2), { JV(150, "ns_") }, L3_SLOT_LIVE },
    { "without namespace: the journal is not asked (l3_summary_decidable is)", E(0), { JV(150, "") },
      L3_SLOT_LIVE },
    { "a size filling its class", { 's', 1, 12, PB * 4096, 120 }, NOJ, L3_SLOT_LIVE },
    { "torn (its crc fails)", { 't', 1, 12, 5000, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "flags neither 0 nor present", { 'f', 1, 12, 5000, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "sealed for another slot", { 'o', 1, 12, 5000, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "sealed for another generation", { 'g', 1, 12, 5000, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "a namespace past the head's", E(3), NOJ, L3_SLOT_CORRUPT },
    { "a key of length 0", { 's', 1, 0, 5000, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "a key past the longest", { 's', 1, L3_OBJECT_KEY_MAX + 1, 5000, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "a size past its class", { 's', 1, 12, PB * 4096 + 1, 120 }, NOJ, L3_SLOT_CORRUPT },
    { "torn, and killed: corrupt first", { 't', 1, 12, 5000, 120 }, { JV(150, "ns_") }, L3_SLOT_CORRUPT },
};

static l3_summary_head head(void)
{
    l3_summary_head h;
    memset(&h, 0, sizeof h);
    h.slab = SLAB;
    h.payload_blocks = PB;
    h.gen = GEN;
    h.epoch = EPOCH;
    h.nslots = NSLOTS;
    h.num_ns = 2;
    h.ns_len[0] = h.ns_len[1] = 3;
    memcpy(h.ns_text[0], "ns_", 3);
    memcpy(h.ns_text[1], "nt_", 3);
    l3_summary_head_seal(&h);
    return h;
}

static l3_summary_entry make_entry(const ent *s, uint32_t slot)
{
    l3_summary_entry e;
    memset(&e, 0, sizeof e);
    if (s->what == 'z')
        return e;
    e.hash = 0x1234 + slot;
    e.seq = s->seq;
    e.size = s->size;
    e.key_len = s->key_len;
    e.ns = s->ns;
    l3_summary_entry_seal(&e, SLAB, s->what == 'o' ? slot + 1 : slot, s->what == 'g' ? GEN + 1 : GEN);
    if (s->what == 't')
        e.seq++;
    if (s->what == 'f')
        e.flags = 2;
    return e;
}

static void summary_entries(void **state)
{
    (void)state;
    l3_geometry g = geo();
    l3_summary_head h = head();
    unsigned verdicts = 0;
    for (size_t i = 0; i < ARRAY_LEN(entry_rows); i++) {
        const entry_row *row = &entry_rows[i];
        journal_of(row->j, journal);
        l3_summary_entry e = make_entry(&row->e, 1);
        l3_slot_verdict v = l3_summary_judge(&g, &h, SLAB, 1, &e, journal);
        if (v != row->want)
            fail_msg("%s: verdict %d, want %d", row->name, v, row->want);
        verdicts |= 1u << v;
    }
    /* STALE is the headers' alone: a summary is of its slab's generation. */
    assert_int_equal(verdicts, (1u << (L3_SLOT_LIVE + 1)) - 1 - (1u << L3_SLOT_STALE));
}

/* A summary as a crash scan reads it. head: 's' sealed, 't' torn, 'g'
 * another generation, 'e' another epoch, 'c' another class, 'n' a slot
 * count not the class's, 'x' namespaces past the most, 'l' another slab's.
 * entries: a character per slot: '.' zeros, 'a' live without namespace,
 * 'b' in namespace 1 ("ns_"), 'c' torn. verdicts: the verdict per slot as
 * '.' EMPTY, 'L' LIVE, 'D' DELETED, 'C' CORRUPT, '-' not judged. */
typedef struct usable_row {
    const char *name;
    char head;
    const char *entries;
    jrec j[JN];
    bool want;
    const char *verdicts;
} usable_row;

static const usable_row usable_rows[] = {
    { "a full slab's summary", 's', "ab.a.bba", NOJ, true, "LL.L.LLL" },
    { "a standby's (no object)", 's', "........", NOJ, true, "........" },
    { "a namespace removed after its objects", 's', "ab.a.bba", { JV(150, "ns_") }, true, "LD.L.DDL" },
    { "an entry cut short", 's', "abc.....", NOJ, false, "LLC-----" },
    { "a journal that cannot decide it", 's', "ab.a.bba", { JV(150, "n") }, false, "--------" },
    { "a torn head", 't', "ab.a.bba", NOJ, false, "--------" },
    { "a head of another generation", 'g', "ab.a.bba", NOJ, false, "--------" },
    { "a head of another epoch", 'e', "ab.a.bba", NOJ, false, "--------" },
    { "a head of another class", 'c', "ab.a.bba", NOJ, false, "--------" },
    { "a head of another slab", 'l', "ab.a.bba", NOJ, false, "--------" },
    { "a slot count not the class's", 'n', "ab.a.bba", NOJ, false, "--------" },
    { "namespaces past the most", 'x', "ab.a.bba", NOJ, false, "--------" },
};

static uint8_t sbuf[8192] __attribute__((aligned(64)));

static void make_summary(const usable_row *row)
{
    memset(sbuf, 0, sizeof sbuf);
    l3_summary_head h = head();
    h.gen += row->head == 'g';
    h.epoch += row->head == 'e';
    h.payload_blocks += row->head == 'c';
    h.slab += row->head == 'l';
    h.nslots -= row->head == 'n';
    if (row->head == 'x')
        h.num_ns = L3_SUMMARY_NS + 1;
    l3_summary_head_seal(&h);
    if (row->head == 't')
        h.gen++;
    memcpy(sbuf, &h, sizeof h);
    l3_summary_entry *ents = (l3_summary_entry *)(sbuf + L3_SUMMARY_ENTRIES_AT);
    for (uint32_t k = 0; k < NSLOTS; k++) {
        char c = row->entries[k];
        ent s = { c == '.' ? 'z' : c == 'c' ? 't' : 's', c == 'b', 12, 5000, 120 };
        ents[k] = make_entry(&s, k);
    }
}

static void summary_usable(void **state)
{
    (void)state;
    l3_geometry g = geo();
    assert_int_equal(l3_slots_per_slab(&g, PB), NSLOTS);
    l3_slab_record r = record(SLAB, L3_SLAB_USED, EPOCH, GEN);
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(usable_rows); i++) {
        const usable_row *row = &usable_rows[i];
        journal_of(row->j, journal);
        make_summary(row);
        uint8_t verdicts[NSLOTS];
        memset(verdicts, 0xff, sizeof verdicts);
        bool got = l3_summary_usable(&g, sbuf, SLAB, &r, journal, verdicts);
        char text[NSLOTS + 1] = { 0 };
        for (uint32_t k = 0; k < NSLOTS; k++)
            text[k] = verdicts[k] == 0xff ? '-' : ".CSDL"[verdicts[k]];
        if (got != row->want || strcmp(text, row->verdicts) != 0)
            fail_msg("%s: usable %d, verdicts %s; want %d, %s", row->name, got, text, row->want, row->verdicts);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

/* ---- duplicates ---- */

typedef struct dup_row {
    const char *name;
    uint64_t a, b;
    bool higher_checks, want;
} dup_row;

static const dup_row dup_rows[] = {
    { "the higher, whole", 9, 5, true, true },
    { "the higher, torn: the lower is served", 9, 5, false, false },
    { "the lower, the higher whole", 5, 9, true, false },
    { "the lower, the higher torn", 5, 9, false, true },
};

static void duplicates(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(dup_rows); i++) {
        const dup_row *row = &dup_rows[i];
        bool got = l3_dup_wins(row->a, row->b, row->higher_checks);
        if (got != row->want)
            fail_msg("%s: wins %d", row->name, got);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

/* ---- merging devices' tables ---- */

typedef struct merge_row {
    const char *name;
    jrec dev[2];
    char want; /* the merged slot: 'b' blank, '0' or '1' that device's record */
} merge_row;

static const merge_row merge_rows[] = {
    { "blank on both", { { 0, 0, 0, NULL }, { 0, 0, 0, NULL } }, 'b' },
    { "valid on device 0 alone", { JV(10, "ns_"), { 0, 0, 0, NULL } }, '0' },
    { "valid on device 1 alone", { { 0, 0, 0, NULL }, JV(10, "ns_") }, '1' },
    { "the higher sequence: device 1's", { JV(10, "ns_"), JV(20, "nt_") }, '1' },
    { "the higher sequence: device 0's", { JV(20, "ns_"), JV(10, "nt_") }, '0' },
    { "a tie: the first device's", { JV(10, "ns_"), JV(10, "nt_") }, '0' },
    { "the higher sequence whatever its epoch", { { 'v', EPOCH - 1, 20, "ns_" }, JV(10, "nt_") }, '0' },
    { "damaged on device 0, blank on 1: damaged", { JD(10, "ns_"), { 0, 0, 0, NULL } }, '0' },
    { "blank on device 0, damaged on 1: damaged", { { 0, 0, 0, NULL }, JD(10, "ns_") }, '1' },
    { "damaged on both: the first", { JD(10, "ns_"), JD(20, "nt_") }, '0' },
    { "damaged on device 0, valid on 1: valid", { JD(20, "ns_"), JV(10, "nt_") }, '1' },
    { "valid on device 0, damaged on 1: valid", { JV(10, "ns_"), JD(20, "nt_") }, '0' },
};

static l3_journal_record jdev[2][L3_JOURNAL_RECORDS], merged[L3_JOURNAL_RECORDS];

static void merge_tables(void **state)
{
    (void)state;
    l3_geometry g = geo();
    g.num_devices = 2;
    l3_slab_record tbl[2][8], table[8];
    for (uint32_t d = 0; d < 2; d++)
        for (uint32_t i = 0; i < 8; i++)
            tbl[d][i] = record(i, L3_SLAB_USED, EPOCH, 10 * d + i); /* its generation names its device */
    for (size_t i = 0; i < ARRAY_LEN(merge_rows); i++) {
        const merge_row *row = &merge_rows[i];
        memset(table, 0, sizeof table);
        memset(merged, 0, sizeof merged);
        for (uint32_t d = 0; d < 2; d++) {
            memset(jdev[d], 0, sizeof jdev[d]);
            make_record(&jdev[d][9], &row->dev[d]);
        }
        for (uint32_t d = 0; d < 2; d++)
            l3_merge_device_tables(&g, d, tbl[d], jdev[d], table, merged);
        for (uint32_t s = 0; s < 8; s++) /* each slab's record from its own device */
            assert_int_equal(table[s].gen, 10 * (s % 2) + s);
        static const l3_journal_record blank;
        const l3_journal_record *want = row->want == 'b' ? &blank : &jdev[row->want - '0'][9];
        if (memcmp(&merged[9], want, sizeof *want) != 0)
            fail_msg("%s: not the %c record", row->name, row->want);
        for (uint32_t j = 0; j < L3_JOURNAL_RECORDS; j++)
            assert_true(j == 9 || memcmp(&merged[j], &blank, sizeof blank) == 0);
    }
}

/* Merging one device leaves its journal as it is (valid, damaged, blank
 * alike): a store of one device reads its journal whole. */
static void merging_one_device_keeps_its_journal(void **state)
{
    (void)state;
    l3_geometry g = geo();
    l3_slab_record tbl[8], table[8];
    for (uint32_t i = 0; i < 8; i++)
        tbl[i] = record(i, i % 2 ? L3_SLAB_USED : L3_SLAB_FREE, EPOCH, i);
    journal_of((const jrec[JN]){ JV(10, "ns_"), JD(20, "nt_"), { 'g', 0, 0, NULL } }, jdev[0]);
    memset(merged, 0, sizeof merged);
    memset(table, 0, sizeof table);
    l3_merge_device_tables(&g, 0, tbl, jdev[0], table, merged);
    assert_memory_equal(merged, jdev[0], sizeof merged);
    assert_memory_equal(table, tbl, sizeof table);
}

/* ---- checkpoints ---- */

/* What a row changes in a checkpoint that belongs to its superblock; each
 * change alone, the rest kept consistent. */
enum ckpt_change {
    CK_NONE, CK_TORN, CK_EARLIER, CK_DIRTY, CK_SEQUENCE, CK_CRC, CK_BYTES, CK_SLABS, CK_NAMESPACES, CK_ENTRIES,
    CK_AREA, CK_LAYOUT, CK_MOST_NAMESPACES, CK_MOST_ENTRIES, CK_FULL_AREA,
};

typedef struct ckpt_row {
    const char *name;
    enum ckpt_change change;
    bool want;
    const char *why;
} ckpt_row;

static const ckpt_row ckpt_rows[] = {
    { "its own superblock's", CK_NONE, true, NULL },
    { "a torn header", CK_TORN, false, "does not check" },
    { "an earlier build's layout", CK_EARLIER, false, "earlier build" },
    { "a dirty superblock", CK_DIRTY, false, "does not belong" },
    { "another superblock sequence", CK_SEQUENCE, false, "does not belong" },
    { "another body crc", CK_CRC, false, "does not belong" },
    { "a body length not the superblock's", CK_BYTES, false, "does not belong" },
    { "another slab count", CK_SLABS, false, "does not belong" },
    { "namespaces past the most", CK_NAMESPACES, false, "does not belong" },
    { "entries past the index's bound", CK_ENTRIES, false, "does not belong" },
    { "a body past the checkpoint area", CK_AREA, false, "does not belong" },
    { "a body length not its layout's", CK_LAYOUT, false, "does not belong" },
    { "the most namespaces", CK_MOST_NAMESPACES, true, NULL },
    { "entries at the index's bound", CK_MOST_ENTRIES, true, NULL },
    { "a body filling the checkpoint area", CK_FULL_AREA, true, NULL },
};

/* The body length a header's counts lay out (FORMAT.md "Checkpoint"). */
static uint64_t layout(const l3_checkpoint_header *h, const l3_geometry *g)
{
    return l3_checkpoint_records_at(h, l3_index_capacity_for(g->max_objects)) + h->num_entries * L3_CKPT_RECORD +
           (uint64_t)h->num_slot_ids * 4;
}

static void make_checkpoint(enum ckpt_change ch, l3_checkpoint_header *h, l3_superblock *sb, l3_geometry *g)
{
    *g = geo();
    memset(h, 0, sizeof *h);
    memset(sb, 0, sizeof *sb);
    h->version = L3_CKPT_PACKED;
    h->num_namespaces = ch == CK_NAMESPACES ? L3_MAX_NAMESPACES + 1 : ch == CK_MOST_NAMESPACES ? L3_MAX_NAMESPACES : 2;
    h->num_slabs = g->num_slabs + (ch == CK_SLABS);
    h->num_entries = ch == CK_ENTRIES ? g->max_objects + 1 : ch == CK_MOST_ENTRIES ? g->max_objects : 10;
    h->num_slot_ids = 10;
    h->body_bytes = layout(h, g) + (ch == CK_LAYOUT) * 4;
    h->sequence = 41 + (ch == CK_SEQUENCE);
    h->body_crc = 0xabcd + (ch == CK_CRC);
    l3_checkpoint_header_seal(h);
    if (ch == CK_EARLIER) { /* sealed by hand: the seal takes the current layout only */
        h->version = L3_CKPT_LIST;
        h->header_crc = 0;
        h->header_crc = l3_crc32c(0, h, sizeof *h);
    }
    if (ch == CK_TORN)
        h->num_entries++;
    sb->clean = ch != CK_DIRTY;
    sb->sequence = 41;
    sb->ckpt_crc = 0xabcd;
    sb->ckpt_bytes = h->body_bytes + (ch == CK_BYTES) * 4;
    if (ch == CK_AREA || ch == CK_FULL_AREA)
        g->checkpoint_len = g->block_size + h->body_bytes - (ch == CK_AREA);
}

static void checkpoint_ownership(void **state)
{
    (void)state;
    unsigned answers = 0;
    for (size_t i = 0; i < ARRAY_LEN(ckpt_rows); i++) {
        const ckpt_row *row = &ckpt_rows[i];
        l3_checkpoint_header h;
        l3_superblock sb;
        l3_geometry g;
        make_checkpoint(row->change, &h, &sb, &g);
        char why[128] = "";
        bool got = l3_checkpoint_matches(&h, &sb, &g, why, sizeof why);
        if (got != row->want || (row->why && !strstr(why, row->why)))
            fail_msg("%s: matches %d (%s)", row->name, got, why);
        answers |= seen(got);
    }
    assert_int_equal(answers, BOTH);
}

static void checkpoint_body_layout(void **state)
{
    (void)state;
    l3_checkpoint_header h = { .num_namespaces = 2, .num_slabs = 8 };
    assert_int_equal(l3_checkpoint_fills_at(&h), 2 * 258);
    assert_int_equal(l3_checkpoint_bitmap_at(&h), 2 * 258 + 8 * 4);
    assert_int_equal(l3_checkpoint_records_at(&h, 1216), 2 * 258 + 8 * 4 + 19 * 8);
    assert_int_equal(l3_checkpoint_records_at(&h, 1217), 2 * 258 + 8 * 4 + 20 * 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(superblock_copies),
        cmocka_unit_test(superblock_places),
        cmocka_unit_test(slab_records),
        cmocka_unit_test(journal_kills),
        cmocka_unit_test(journal_damage),
        cmocka_unit_test(journal_lost_removal),
        cmocka_unit_test(journal_next_seq),
        cmocka_unit_test(slot_headers),
        cmocka_unit_test(summary_decidable),
        cmocka_unit_test(summary_entries),
        cmocka_unit_test(summary_usable),
        cmocka_unit_test(duplicates),
        cmocka_unit_test(merge_tables),
        cmocka_unit_test(merging_one_device_keeps_its_journal),
        cmocka_unit_test(checkpoint_ownership),
        cmocka_unit_test(checkpoint_body_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
