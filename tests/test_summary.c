/* Slab summaries (FORMAT.md "Slab summaries"): a full slab's summary
 * indexes a crash scan instead of its headers; a delete stays deleted; a
 * summary cut short falls back to the headers; l3fsck finds a summary that
 * names an object its headers do not hold, and drops it; a scan of
 * summaries naming two namespaces keeps each key in its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "format.h"
#include "harness.h"
#include "l3_slabstore.h"
#include "store_util.h"

#define OBJ (64u * 1024u)
#define NKEYS 68 /* four full slabs of 15, and 8 in a fifth */
#define SLABS 8
#define KIND(state) (*(l3_engine_kind *)*(state))

typedef struct batch {
    char names[NKEYS][32];
    const char *keys[NKEYS];
    l3_range ranges[NKEYS];
    uint8_t *src, *dst;
    bool ok[NKEYS], failed[NKEYS];
    int deleted[2];      /* keys the writer deletes (-1: none) */
} batch;

static batch *new_batch(void)
{
    batch *b = calloc(1, sizeof *b);
    assert_non_null(b);
    b->src = aligned_pool(NKEYS * OBJ);
    b->dst = aligned_pool(NKEYS * OBJ);
    fill_pattern(b->src, NKEYS * OBJ, 77);
    for (size_t i = 0; i < NKEYS; i++) {
        snprintf(b->names[i], sizeof b->names[i], "sum_k%zu", i);
        b->keys[i] = b->names[i];
        b->ranges[i] = (l3_range){ i * OBJ, OBJ };
    }
    b->deleted[0] = b->deleted[1] = -1;
    return b;
}

static void free_batch(batch *b)
{
    free(b->src);
    free(b->dst);
    free(b);
}

/* The killed writer: put the batch, delete the keys it names, die. */
static int put_delete_die(l3_slabstore *s, void *arg)
{
    batch *b = arg;
    l3_store *st = l3_slabstore_store(s);
    l3_io_result r = { .success = b->ok, .object_failures = b->failed };
    if (st->ops->batch_put_from(st, b->keys, NKEYS, (l3_host_buffer){ b->src, NKEYS * OBJ }, b->ranges, &r, NULL) !=
        L3_OK)
        return 5;
    for (size_t i = 0; i < NKEYS; i++)
        if (!b->ok[i])
            return 6;
    for (int j = 0; j < 2; j++) {
        bool gone = false;
        if (b->deleted[j] >= 0 && (l3_store_batch_delete(st, &b->keys[b->deleted[j]], 1, &gone, NULL) != L3_OK || !gone))
            return 7;
    }
    return 0;
}

static bool is_deleted(const batch *b, size_t i) { return (int)i == b->deleted[0] || (int)i == b->deleted[1]; }

/* Every key (of the first n) not deleted is served byte-exact; every deleted one is
 * absent (exists() says no, a get does not serve it) and no read met a
 * header that is not the one the index promised. */
static void expect_batch_prefix(l3_slabstore *s, batch *b, size_t n)
{
    l3_store *st = l3_slabstore_store(s);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(exists_key(st, b->keys[i]), !is_deleted(b, i));
    get_keys(st, b->keys, n, b->dst, NKEYS * OBJ, b->ranges, b->ok, b->failed);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(b->ok[i], !is_deleted(b, i));
        if (b->ok[i])
            assert_memory_equal(b->dst + i * OBJ, b->src + i * OBJ, OBJ);
    }
    l3_slab_stats sst;
    l3_slabstore_stats(s, &sst);
    assert_int_equal(sst.stale_reads + sst.checksum_failures, 0);
}

static void expect_batch(l3_slabstore *s, batch *b) { expect_batch_prefix(s, b, NKEYS); }

/* Open the store of `o` after a crash: its scan indexed `summaries` slabs
 * from their summaries and restored `objects`, and every key is as `b`
 * expects (expect_batch). */
static void expect_crash_scan(const l3_slab_options *o, batch *b, uint64_t summaries, uint64_t objects)
{
    l3_slabstore *s = open_test_store(o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_false(st.opened_from_checkpoint);
    assert_int_equal(st.recovered_summaries, summaries);
    assert_int_equal(st.objects, objects);
    expect_batch(s, b);
    l3_slabstore_free(s);
}

/* The store of these tests with store.flush "batch": a filled slab's
 * summary is written as it fills (its puts were flushed before they were
 * published), so a writer killed right after its puts leaves them. With
 * "interval" a summary waits for the next flush (below). */
static l3_slab_options batch_flush_options(const char *path, l3_engine_kind kind)
{
    l3_slab_options o = slab_count_options(path, SLABS, kind);
    o.flush = L3_FLUSH_BATCH;
    return o;
}

/* A killed process that only opened the store: it is left dirty. */
static int open_only(l3_slabstore *s, void *arg)
{
    (void)s;
    (void)arg;
    return 0;
}

static void a_crash_scan_reads_full_slabs_from_their_summaries(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "summary-scan");
    l3_slab_options o = batch_flush_options(path, KIND(state));
    batch *b = new_batch();
    run_killed_writer(&o, put_delete_die, b);
    uint32_t slabs[SLABS];
    assert_int_equal(summarized_slabs(path, slabs), 4); /* the full ones; the fifth is open */
    expect_crash_scan(&o, b, 4, NKEYS);
    /* The fifth slab and the standby opened ahead of it (empty), read by
     * their headers and sealed, got their summaries: the next crash scan
     * reads all six from them. */
    assert_int_equal(summarized_slabs(path, slabs), 6);
    run_killed_writer(&o, open_only, NULL);
    expect_crash_scan(&o, b, 6, NKEYS);
    free_batch(b);
    unlink(path);
}

static void a_deleted_object_stays_deleted_after_a_crash(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "summary-delete");
    l3_slab_options o = batch_flush_options(path, KIND(state));
    batch *b = new_batch();
    b->deleted[0] = 3;  /* in full slabs: their summaries were written */
    b->deleted[1] = 40;
    run_killed_writer(&o, put_delete_die, b);
    expect_crash_scan(&o, b, 4, NKEYS - 2);
    free_batch(b);
    unlink(path);
}

static void a_summary_cut_short_falls_back_to_the_headers(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "summary-torn");
    l3_slab_options o = batch_flush_options(path, KIND(state));
    batch *b = new_batch();
    run_killed_writer(&o, put_delete_die, b);
    uint32_t slabs[SLABS];
    assert_int_equal(summarized_slabs(path, slabs), 4);
    /* One entry of one summary as a write cut short leaves it. */
    l3_geometry g = geometry_of(path);
    l3_slab_record r = record_of(path, &g, slabs[1]);
    uint64_t at = l3_summary_offset(&g, slabs[1], r.payload_blocks) + L3_SUMMARY_ENTRIES_AT +
                  2 * sizeof(l3_summary_entry);
    uint8_t junk[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    poke_file(path, at, junk, sizeof junk);
    expect_crash_scan(&o, b, 3, NKEYS);
    free_batch(b);
    unlink(path);
}

/* Key i of the batch in namespace "sa_" (even) or "sb_" (odd): every
 * full slab's summary names both. */
static bool in_sa(size_t i) { return i % 2 == 0; }
static bool in_sb(size_t i) { return i % 2 == 1; }

/* Every key of the batch is indexed exactly when `want` says so (of its
 * index), and those are served byte-exact. */
static void expect_keys(l3_store *st, batch *b, bool (*want)(size_t))
{
    size_t n = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        assert_int_equal(exists_key(st, b->keys[i]), want(i));
        if (want(i)) {
            bool ok = false, failed = false;
            get_keys(st, &b->keys[i], 1, b->dst, OBJ, &(l3_range){ 0, OBJ }, &ok, &failed);
            assert_true(ok);
            assert_memory_equal(b->dst, b->src + i * OBJ, OBJ);
            n++;
        }
    }
    assert_true(n > 0);
}

/* A crash scan reads summaries that name two namespaces: each key keeps
 * its own namespace, so that removing one takes exactly its keys, after
 * the scan and after the checkpoint of the close that follows. (The scan
 * interned a namespace for entries it had gathered but not yet
 * published; the next namespace took that slot over as unused: every key
 * of both was then indexed under the second's text.) */
static void a_removal_after_a_crash_scan_takes_its_namespace_alone(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "summary-remove");
    l3_slab_options o = batch_flush_options(path, KIND(state));
    batch *b = new_batch();
    for (size_t i = 0; i < NKEYS; i++)
        snprintf(b->names[i], sizeof b->names[i], "%s_k%zu", in_sa(i) ? "sa" : "sb", i);
    run_killed_writer(&o, put_delete_die, b);
    l3_slabstore *s = open_test_store(&o);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    assert_int_equal(st.recovered_summaries, 4);
    assert_true(l3_store_remove_by_prefix(l3_slabstore_store(s), "sa_"));
    expect_keys(l3_slabstore_store(s), b, in_sb);
    l3_slabstore_free(s); /* clean: a checkpoint */
    s = open_test_store(&o);
    l3_slabstore_stats(s, &st);
    assert_true(st.opened_from_checkpoint);
    expect_keys(l3_slabstore_store(s), b, in_sb);
    assert_true(l3_store_remove_by_prefix(l3_slabstore_store(s), "sb_"));
    for (size_t i = 0; i < NKEYS; i++)
        assert_false(exists_key(l3_slabstore_store(s), b->keys[i]));
    l3_slabstore_free(s);
    /* And the other way round: the second namespace removed first. */
    unlink(path);
    run_killed_writer(&o, put_delete_die, b);
    s = open_test_store(&o);
    assert_true(l3_store_remove_by_prefix(l3_slabstore_store(s), "sb_"));
    expect_keys(l3_slabstore_store(s), b, in_sa);
    l3_slabstore_free(s);
    free_batch(b);
    unlink(path);
}

static int run_fsck(char *out, size_t out_len, const char *flag, const char *path)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s '%s' 2>&1", L3FSCK, flag, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, out_len - 1, p);
    out[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A delete cut short between its header and its summary entry: the
 * summary names an object whose header is gone. l3fsck -n reports it,
 * -y drops the summary; the object is then a miss, the rest served. */
static void l3fsck_finds_a_summary_naming_a_gone_object(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "summary-fsck");
    l3_slab_options o = slab_count_options(path, SLABS, KIND(state));
    batch *b = new_batch();
    run_killed_writer(&o, put_delete_die, b);
    l3_slabstore *s = open_test_store(&o);
    expect_batch(s, b);
    l3_slabstore_free(s); /* clean: its summaries stay as they were */
    uint32_t slabs[SLABS];
    assert_int_equal(summarized_slabs(path, slabs), 6); /* the fifth's and the standby's after the scan */
    l3_geometry g = geometry_of(path);
    l3_slab_record r = record_of(path, &g, slabs[0]);
    l3_object_header h;
    uint64_t slot0 = l3_slot_offset(&g, slabs[0], r.payload_blocks, 0);
    peek_file(path, slot0, &h, sizeof h);
    assert_true(h.key_len < sizeof b->names[0]);
    char key[32] = { 0 };
    peek_file(path, slot0 + L3_OBJ_HEADER_FIXED, key, h.key_len);
    int gone = atoi(key + strlen("sum_k"));
    uint8_t zero[4096] = { 0 };
    poke_file(path, slot0, zero, sizeof zero);
    char out[16384];
    assert_int_equal(run_fsck(out, sizeof out, "-n", path), 0); /* judged by the summary, as a crash scan */
    assert_int_equal(run_fsck(out, sizeof out, "-n --headers", path), 4);
    assert_non_null(strstr(out, "summary names 1 object"));
    if (run_fsck(out, sizeof out, "-y", path) != 1)
        fail_msg("l3fsck -y: %s", out);
    if (run_fsck(out, sizeof out, "-n --headers", path) != 0)
        fail_msg("l3fsck -n after -y: %s", out);
    assert_int_equal(summarized_slabs(path, slabs), 5); /* one dropped */
    s = open_test_store(&o);
    b->deleted[0] = gone;
    expect_batch(s, b);
    l3_slabstore_free(s);
    free_batch(b);
    unlink(path);
}

/* The slabs whose record on disk says used. */
static uint32_t used_records(const char *path)
{
    l3_geometry g = geometry_of(path);
    uint32_t n = 0;
    for (uint32_t i = 0; i < g.num_slabs; i++) {
        l3_slab_record r = record_of(path, &g, i);
        n += l3_slab_record_valid(&r, i) && r.state == L3_SLAB_USED;
    }
    return n;
}

/* Put keys [first, first + n) of the batch. */
static void put_some(l3_store *st, batch *b, size_t first, size_t n)
{
    put_keys(st, &b->keys[first], n, b->src, NKEYS * OBJ, &b->ranges[first], b->ok);
}

/* While a class has an open slab, the slab its writers move on to is
 * opened and its record written ahead (a standby, empty): writers
 * arriving at it do not stop for a record write behind the device's queue
 * (puts of 1 MiB spent 5.3 of 7.6 worker-seconds there, 2026-12-03). */
static void a_standby_slab_s_record_lands_before_the_open_slab_fills(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "standby");
    l3_slab_options o = slab_count_options(path, SLABS, KIND(state));
    batch *b = new_batch();
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    put_some(st, b, 0, 1);
    assert_int_equal(used_records(path), 2); /* the open slab and its standby, still empty */
    l3_slab_stats sst;
    l3_slabstore_stats(s, &sst);
    assert_int_equal(sst.slabs_open, 2);
    put_some(st, b, 1, 15); /* 14 fill it, 1 to the standby */
    l3_slabstore_stats(s, &sst);
    assert_int_equal(sst.objects, 16);
    assert_int_equal(sst.slabs_open, 2); /* the standby now open, and the next standby */
    assert_int_equal(used_records(path), 3);
    l3_slabstore_free(s);
    s = open_test_store(&o);
    expect_batch_prefix(s, b, 16);
    l3_slabstore_free(s);
    free_batch(b);
    unlink(path);
}

/* A standby may sit at a lower slab than its class's open slab (an
 * emptied slab reused). After a clean restart the open slab is still the
 * one with objects: its free slots are written next, not sealed away
 * behind the empty standby. */
static void a_restart_keeps_the_open_slab_with_objects_open(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "standby-restart");
    l3_slab_options o = slab_count_options(path, SLABS, KIND(state));
    batch *b = new_batch();
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    put_some(st, b, 0, 15);  /* slab 0 full, 1 standby */
    put_some(st, b, 15, 15); /* 1 full, 2 standby */
    bool gone[15];
    assert_int_equal(l3_store_batch_delete(st, b->keys, 15, gone, NULL), L3_OK); /* 0: sealed, empty */
    put_some(st, b, 30, 1);  /* 2 open with 1; 0 its standby */
    l3_slab_stats sst;
    l3_slabstore_stats(s, &sst);
    assert_int_equal(sst.objects, 16);
    l3_slabstore_free(s); /* clean: the empty standby (0, below 2) and 2 both marked open */
    s = open_test_store(&o);
    st = l3_slabstore_store(s);
    put_some(st, b, 31, 14); /* slab 2's 14 free slots */
    l3_slabstore_stats(s, &sst);
    assert_int_equal(sst.objects, 30);
    assert_int_equal(sst.slabs_sealed, 1); /* slab 1; not slab 2 with 14 slots unwritten */
    l3_slabstore_free(s);
    free_batch(b);
    unlink(path);
}

/* A slab record goes to the device through the engine's ring, not a
 * pwrite beside it: a synchronous write on the file made io_uring hand
 * the puts in flight to its io-wq workers, where they reached the device
 * unmerged. The engine counts the record's block with the object. */
static void a_slab_record_goes_through_the_engine(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "record-engine");
    l3_slab_options o = slab_count_options(path, SLABS, KIND(state));
    batch *b = new_batch();
    l3_slabstore *s = open_test_store(&o);
    l3_slab_stats before, after;
    l3_slabstore_stats(s, &before);
    put_some(l3_slabstore_store(s), b, 0, 1);
    l3_slabstore_stats(s, &after);
    assert_int_equal(after.bytes_written - before.bytes_written, 4096 /* record */ + 4096 /* header */ + OBJ);
    l3_slabstore_free(s);
    free_batch(b);
    unlink(path);
}

/* With store.flush "interval" a filled slab's summary is written only
 * after a flush that began once the slab was full: until then a power
 * cut could land the summary and lose payloads it names, and after it a
 * put of such a key would be taken for stored and skipped. No flush is
 * due within the test (an interval of an hour): none is on disk while
 * the store is open; the close flushes, then writes them. */
static void a_summary_waits_for_the_flush_of_what_it_names(void **state)
{
    char path[512];
    temp_store_path(path, sizeof path, "summary-flush");
    l3_slab_options o = slab_count_options(path, SLABS, KIND(state));
    o.flush_interval = 3600;
    batch *b = new_batch();
    l3_slabstore *s = open_test_store(&o);
    l3_store *st = l3_slabstore_store(s);
    l3_io_result r = { .success = b->ok, .object_failures = b->failed };
    assert_int_equal(st->ops->batch_put_from(st, b->keys, NKEYS, (l3_host_buffer){ b->src, NKEYS * OBJ }, b->ranges,
                                             &r, NULL), L3_OK);
    usleep(200 * 1000); /* (time for the background thread to write what it would) */
    uint32_t slabs[SLABS];
    assert_int_equal(summarized_slabs(path, slabs), 0);
    l3_slabstore_free(s);
    assert_int_equal(summarized_slabs(path, slabs), 4);
    free_batch(b);
    unlink(path);
}

int main(void)
{
    static l3_engine_kind uring = L3_ENGINE_IO_URING, aio = L3_ENGINE_LIBAIO;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(a_crash_scan_reads_full_slabs_from_their_summaries, &uring),
        cmocka_unit_test_prestate(a_crash_scan_reads_full_slabs_from_their_summaries, &aio),
        cmocka_unit_test_prestate(a_deleted_object_stays_deleted_after_a_crash, &uring),
        cmocka_unit_test_prestate(a_summary_cut_short_falls_back_to_the_headers, &uring),
        cmocka_unit_test_prestate(l3fsck_finds_a_summary_naming_a_gone_object, &uring),
        cmocka_unit_test_prestate(a_removal_after_a_crash_scan_takes_its_namespace_alone, &uring),
        cmocka_unit_test_prestate(a_standby_slab_s_record_lands_before_the_open_slab_fills, &uring),
        cmocka_unit_test_prestate(a_standby_slab_s_record_lands_before_the_open_slab_fills, &aio),
        cmocka_unit_test_prestate(a_restart_keeps_the_open_slab_with_objects_open, &uring),
        cmocka_unit_test_prestate(a_slab_record_goes_through_the_engine, &uring),
        cmocka_unit_test_prestate(a_slab_record_goes_through_the_engine, &aio),
        cmocka_unit_test_prestate(a_summary_waits_for_the_flush_of_what_it_names, &uring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
