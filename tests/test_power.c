/* Power-cut test: a child runs a seeded mix on a small store (puts, some
 * read back, single-key deletes, a namespace's removal, now and then a
 * removal of everything (an epoch bump), reinsertion moves in a store too
 * small for its keys, clean closes and reopens, a crash scan at its open;
 * one device or two) with the device model of the I/O
 * engines on (uring/power.h: each device's volatile write cache), and is
 * cut at a seeded write: every 4 KiB unit written since its device's last
 * flush is left as it was at that flush or as after any one of those
 * writes, and the child _exits. The parent then checks, against what the
 * child reported before the cut (docs/SEMANTICS.md "What survives a power
 * cut"): no wrong byte (a put's bytes are a function of its key and
 * version), no delete or namespace removal undone, every put confirmed
 * and flushed (store.flush "batch": confirmed) still there, l3fsck -n
 * serving what the library indexes, a second l3fsck -y clean.
 * L3_POWER_CUTS sets the number of cuts (default 24; CI runs 1,000),
 * L3_POWER_SEED the first seed (a cut replays from its seed). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "l3_slabstore.h"
#include "slabstore.h"
#include "store_util.h"

#define IDS 160
#define OBJ 65536u
#define OPS 80
#define PUT_KEYS 4
#define MAXV 60

enum { R_SUBMIT = 1, R_CONFIRM, R_DELETING, R_DELETED, R_REMOVING, R_REMOVED, R_OPSTART, R_OPDONE, R_WRITES };
enum { OP_PUT, OP_GET, OP_DELETE, OP_REMOVE, OP_REOPEN };

/* One report of the child, written whole to the pipe before it goes on. */
typedef struct rep {
    uint32_t kind, id, ver, op;
    uint64_t flushes;
    uint8_t present[IDS / 8];
} rep;

/* What a cut's round runs on. */
typedef struct scenario {
    unsigned devices;    /* 1 or 2 (store.paths) */
    l3_flush_mode flush;
    double interval;     /* store.flush_interval */
    l3_engine_kind kind;
    bool dirty_start;    /* the child's open is a crash scan */
} scenario;

typedef struct totals {
    uint64_t cuts, uncut, confirmed, required, wrong_bytes, keys_back, lost, fsck_errors, served, writes;
} totals;

static char paths[3][512];

static scenario scenario_of(uint64_t seed)
{
    scenario sc = { .devices = seed % 4 == 2 ? 2 : 1, .flush = L3_FLUSH_BATCH, .interval = 1,
                    .kind = seed % 4 == 1 ? L3_ENGINE_LIBAIO : L3_ENGINE_AUTO, .dirty_start = seed / 4 % 3 == 0 };
    if (seed % 4 == 1) {
        sc.flush = L3_FLUSH_INTERVAL; /* flushed by deletes, summaries, moves, closes; or every 50 ms */
        sc.interval = seed / 4 % 2 ? 0.05 : 3600;
    }
    return sc;
}

static l3_slab_options power_options(const scenario *sc, const char **ptrs)
{
    l3_slab_options o = slab_count_options(sc->devices == 2 ? paths[1] : paths[0], 8, sc->kind);
    o.expected_object_size = OBJ;
    o.batch_keys = 4;
    o.io_contexts = 2; /* (a libaio context's teardown takes some 40 ms: each reopen has them all) */
    o.admission = L3_ADMISSION_ALL;
    o.flush = sc->flush;
    o.flush_interval = sc->interval;
    if (sc->devices == 2) {
        ptrs[0] = paths[1];
        ptrs[1] = paths[2];
        o.paths = ptrs;
        o.num_paths = 2;
    }
    return o;
}

static void key_name(uint32_t id, char *out, size_t len)
{
    snprintf(out, len, "%s%u", id < IDS / 2 ? "pa_" : "pb_", id);
}

static uint32_t pattern_seed(uint32_t id, uint32_t ver) { return id * 131u + ver * 7919u + 1; }

/* ---- the child ---- */

typedef struct child_state {
    l3_slabstore *s;
    l3_slab_options o;
    int fd;
    uint64_t rng;
    uint32_t ver[IDS];
    bool mine[IDS];      /* this child confirmed a put of the key: its version is the one served */
    uint8_t *pool;
} child_state;

static uint32_t next(child_state *c)
{
    c->rng = c->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(c->rng >> 33);
}

static void report(child_state *c, uint32_t kind, uint32_t id, uint32_t ver)
{
    rep r = { .kind = kind, .id = id, .ver = ver };
    if (kind == R_OPDONE) {
        l3_slab_stats st;
        l3_slabstore_stats(c->s, &st);
        r.flushes = st.flushes;
        for (uint32_t k = 0; k < IDS; k++) {
            char key[32];
            key_name(k, key, sizeof key);
            const char *kp = key;
            bool there = false;
            l3_store_batch_exists(l3_slabstore_store(c->s), &kp, 1, &there, NULL);
            r.present[k / 8] |= (uint8_t)(there << (k % 8));
        }
    }
    if (kind == R_WRITES)
        r.flushes = l3_slabstore_power_writes();
    if (write(c->fd, &r, sizeof r) != (ssize_t)sizeof r)
        _exit(5);
}

/* Put up to PUT_KEYS absent keys, each a new version. */
static void child_put(child_state *c)
{
    char names[PUT_KEYS][32];
    const char *keys[PUT_KEYS];
    uint32_t ids[PUT_KEYS];
    l3_range ranges[PUT_KEYS];
    size_t n = 0;
    l3_store *st = l3_slabstore_store(c->s);
    for (int i = 0; i < PUT_KEYS; i++) {
        uint32_t id = next(c) % IDS;
        key_name(id, names[n], sizeof names[n]);
        keys[n] = names[n];
        bool there = true, twin = false;
        for (size_t j = 0; j < n; j++)
            twin = twin || ids[j] == id;
        l3_store_batch_exists(st, &keys[n], 1, &there, NULL);
        if (there || twin || c->ver[id] >= MAXV)
            continue;
        ids[n] = id;
        ranges[n] = (l3_range){ n * OBJ, OBJ - 1000 * (id % 3) }; /* a partial tail block too */
        fill_pattern(c->pool + ranges[n].offset, ranges[n].size, pattern_seed(id, ++c->ver[id]));
        report(c, R_SUBMIT, id, c->ver[id]);
        n++;
    }
    bool ok[PUT_KEYS] = { 0 }, fail[PUT_KEYS] = { 0 };
    l3_io_result r = { .success = ok, .object_failures = fail };
    if (n && l3_store_batch_put_from(st, keys, n, (l3_host_buffer){ c->pool, PUT_KEYS * OBJ }, ranges, &r, NULL) !=
                 L3_OK)
        _exit(6);
    for (size_t i = 0; i < n; i++)
        if (ok[i]) {
            c->mine[ids[i]] = true;
            report(c, R_CONFIRM, ids[i], c->ver[ids[i]]);
        }
}

/* Which of the key's versions the bytes read are (0: none of them). */
static uint32_t version_read(child_state *c, uint32_t id, uint64_t size)
{
    uint8_t *want = c->pool + OBJ;
    uint32_t match = 0;
    for (uint32_t v = 1; v <= c->ver[id] && !match; v++) {
        fill_pattern(want, size, pattern_seed(id, v));
        match = memcmp(c->pool, want, size) == 0 ? v : 0;
    }
    return match;
}

/* Read a few keys back (reinsertion keeps what was read). */
static void child_get(child_state *c)
{
    for (int i = 0; i < PUT_KEYS; i++) {
        uint32_t id = next(c) % IDS;
        char key[32];
        key_name(id, key, sizeof key);
        const char *kp = key;
        bool ok = false, fail = false;
        uint64_t size = OBJ - 1000 * (id % 3);
        l3_io_result r = { .success = &ok, .object_failures = &fail };
        if (l3_store_batch_get_into(l3_slabstore_store(c->s), &kp, 1, (l3_host_buffer){ c->pool, PUT_KEYS * OBJ },
                                    &(l3_range){ 0, size }, &r, NULL) != L3_OK)
            _exit(7);
        uint8_t *want = c->pool + OBJ;
        fill_pattern(want, size, pattern_seed(id, c->ver[id]));
        if (!ok || memcmp(c->pool, want, size) == 0)
            continue;
        /* A key this child did not put may be an older version: a copy
         * evicted before the last cut comes back with the crash scan
         * until its slab is written again, while the newer put was lost
         * (SEMANTICS.md). One this child put is its own version. */
        uint32_t v = version_read(c, id, size);
        if (c->mine[id] || v == 0) {
            fprintf(stderr, "power child: key %u served version %u's bytes (0: no version's) where %u was put last%s\n",
                    id, v, c->ver[id], c->mine[id] ? " (by this child)" : "");
            _exit(8); /* wrong bytes before any cut */
        }
    }
}

static void child_reopen(child_state *c)
{
    l3_error err;
    if (l3_slabstore_close(c->s, &err) != L3_OK)
        _exit(9);
    l3_slabstore_free(c->s);
    if (l3_slabstore_open(&c->o, &c->s, NULL) != L3_OK)
        _exit(10);
}

static void child_op(child_state *c, int op)
{
    if (op == OP_PUT) {
        child_put(c);
    } else if (op == OP_GET) {
        child_get(c);
    } else if (op == OP_DELETE) {
        uint32_t id = next(c) % IDS;
        char key[32];
        key_name(id, key, sizeof key);
        const char *kp = key;
        bool deleted = false;
        report(c, R_DELETING, id, 0);
        if (l3_store_batch_delete(l3_slabstore_store(c->s), &kp, 1, &deleted, NULL) != L3_OK)
            _exit(11);
        report(c, R_DELETED, id, deleted);
    } else if (op == OP_REMOVE) {
        /* One in eight removes everything (an epoch bump); read off the
         * generator's state, not drawn, so that the other draws stay. */
        uint32_t all = (c->rng >> 7) % 8 == 0;
        report(c, R_REMOVING, all, 0);
        if (!l3_store_remove_by_prefix(l3_slabstore_store(c->s), all ? "" : "pb_"))
            return;
        report(c, R_REMOVED, all, 0);
        for (uint32_t k = all ? 0 : IDS / 2; k < IDS; k++) {
            char key[32];
            key_name(k, key, sizeof key);
            const char *kp = key;
            bool there = false;
            l3_store_batch_exists(l3_slabstore_store(c->s), &kp, 1, &there, NULL);
            if (there)
                _exit(12); /* the removal returned true and left a key of its namespace indexed */
        }
    } else {
        child_reopen(c);
    }
}

/* The child: the mix, cut at write `cut_at` (0: never; it then reports
 * the writes it made and _exits, without a close). A child to be cut goes
 * on past OPS operations until its cut (up to 4 x OPS: a mix may write
 * less than the one the cut points were sized by). */
static void child(const scenario *sc, uint64_t seed, uint64_t cut_at, int fd, const uint32_t *ver)
{
    static child_state c;
    const char *ptrs[2];
    c = (child_state){ .o = power_options(sc, ptrs), .fd = fd, .rng = seed * 2654435761u + 7 };
    memcpy(c.ver, ver, sizeof c.ver);
    c.pool = aligned_pool(2 * PUT_KEYS * OBJ);
    l3_slabstore_set_power(&(l3_io_power){ .seed = seed, .cut_at = cut_at });
    if (l3_slabstore_open(&c.o, &c.s, NULL) != L3_OK)
        _exit(3);
    for (int i = 0; i < (cut_at ? 4 * OPS : OPS); i++) {
        uint32_t r = next(&c) % 100;
        int op = r < 55 ? OP_PUT : r < 75 ? OP_GET : r < 88 ? OP_DELETE : r < 93 ? OP_REMOVE : OP_REOPEN;
        report(&c, R_OPSTART, 0, (uint32_t)op);
        child_op(&c, op);
        report(&c, R_OPDONE, 0, 0);
    }
    report(&c, R_WRITES, 0, 0);
    _exit(0);
}

/* ---- the parent's oracle ---- */

typedef struct oracle {
    uint64_t may[IDS];     /* versions a get may serve (bit v) */
    uint32_t confirmed[IDS]; /* the version whose put was confirmed (0: none standing) */
    uint64_t confirm_flushes[IDS]; /* the flush count reported after that put's operation */
    bool confirm_pending[IDS];     /* confirmed in an operation not yet reported done */
    uint8_t present[IDS / 8];      /* at the last operation reported done */
    uint64_t flushes;              /* at the last operation reported done */
    int op;                        /* the operation under way at the cut (-1: none) */
    bool removing_all;             /* the last removal begun was of everything ("") */
    uint32_t max_ver[IDS];
    uint64_t writes;
} oracle;

static void oracle_report(oracle *or, const rep *r)
{

    switch (r->kind) {
    case R_SUBMIT:
        assert_true(r->id < IDS && r->ver < 64);
        or->may[r->id] |= 1ull << r->ver;
        or->max_ver[r->id] = r->ver;
        break;
    case R_CONFIRM:
        or->confirmed[r->id] = r->ver;
        or->confirm_pending[r->id] = true;
        break;
    case R_DELETED:
        /* The delete removes the copy the index held (the confirmed
         * version) and bars every newer one; a copy evicted before it
         * (an older version, or any when the delete found nothing) may
         * come back until its slab is written again, as after a crash
         * (docs/SEMANTICS.md). */
        if (r->ver)
            or->may[r->id] &= or->confirmed[r->id] ? (1ull << or->confirmed[r->id]) - 1 : 0;
        or->confirmed[r->id] = 0;
        break;
    case R_REMOVING:
        or->removing_all = r->id != 0;
        break;
    case R_REMOVED:
        for (uint32_t k = r->id ? 0 : IDS / 2; k < IDS; k++)
            or->may[k] = or->confirmed[k] = 0;
        break;
    case R_OPSTART:
        or->op = (int)r->ver;
        break;
    case R_OPDONE:
        or->op = -1;
        or->flushes = r->flushes;
        memcpy(or->present, r->present, sizeof or->present);
        for (uint32_t k = 0; k < IDS; k++)
            if (or->confirm_pending[k]) {
                or->confirm_flushes[k] = r->flushes;
                or->confirm_pending[k] = false;
            }
        break;
    case R_WRITES:
        or->writes = r->flushes;
        break;
    default:
        break;
    }
}

/* Whether key k must be served: present at the last operation reported
 * done, its put confirmed, and durable by the promise: "batch" at once,
 * "interval" once a flush followed its operation. An operation under way
 * that may evict (a put, which makes room) or delete excuses it. */
static bool required(const oracle *or, const scenario *sc, uint32_t k)
{
    if (!(or->present[k / 8] & (1u << (k % 8))) || !or->confirmed[k] || or->confirm_pending[k])
        return false;
    if (or->op == OP_PUT || or->op == OP_DELETE || (or->op == OP_REMOVE && (k >= IDS / 2 || or->removing_all)))
        return false;
    return sc->flush == L3_FLUSH_BATCH || or->flushes > or->confirm_flushes[k];
}

/* ---- the parent ---- */

/* Run l3fsck `flags` over the scenario's devices; its exit code, its
 * output into `out` (`len` bytes). */
static int fsck_run(const scenario *sc, const char *flags, char *out, size_t len)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s %s 2>&1", L3FSCK, flags, sc->devices == 2 ? paths[1] : paths[0],
             sc->devices == 2 ? paths[2] : "");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* l3fsck -n's count of served objects (-1 when it found errors). */
static json_int_t fsck_served(const scenario *sc)
{
    static char buf[1 << 20];
    int rc = fsck_run(sc, "-n --json", buf, sizeof buf);
    json_t *root = rc == 0 ? json_loads(buf, 0, NULL) : NULL;
    if (!root) {
        fprintf(stderr, "l3fsck -n exited %d: %.2000s\n", rc, buf);
        return -1;
    }
    json_int_t served = json_integer_value(json_object_get(json_object_get(root, "objects"), "served"));
    json_decref(root);
    return served;
}

typedef struct verdict {
    bool ok;
    uint32_t ver; /* the version whose bytes it served (0: none matched) */
} verdict;

/* Get key k; which version's bytes came back, if any. */
static verdict get_one(l3_slabstore *s, const oracle *or, uint32_t k, uint8_t *pool)
{
    char key[32];
    key_name(k, key, sizeof key);
    const char *kp = key;
    bool ok = false, fail = false;
    uint64_t size = OBJ - 1000 * (k % 3);
    assert_int_equal(get_keys(l3_slabstore_store(s), &kp, 1, pool, 2 * OBJ, &(l3_range){ 0, size }, &ok, &fail),
                     L3_OK);
    verdict v = { .ok = ok };
    for (uint32_t ver = 1; ok && ver <= or->max_ver[k] && !v.ver; ver++) {
        fill_pattern(pool + OBJ, size, pattern_seed(k, ver));
        if (memcmp(pool, pool + OBJ, size) == 0)
            v.ver = ver;
    }
    return v;
}

static void say(uint64_t seed, const char *what, uint32_t k, uint64_t *count)
{
    if ((*count)++ < 20)
        fprintf(stderr, "power cut seed %llu: key %u %s\n", (unsigned long long)seed, k, what);
}

/* After a cut: reopen, judge every key, compare with l3fsck, repair and
 * check again; the oracle then holds what the store serves. */
static void check_cut(const scenario *sc, oracle *or, totals *t, uint64_t seed, uint8_t *pool)
{
    json_int_t fsck_objects = fsck_served(sc);
    const char *ptrs[2];
    l3_slab_options o = power_options(sc, ptrs);
    o.flush_interval = 1;
    l3_slabstore *s;
    l3_error err;
    if (l3_slabstore_open(&o, &s, &err) != L3_OK)
        fail_msg("seed %llu: reopen after the cut: %s", (unsigned long long)seed, err.msg);
    l3_slab_stats st;
    l3_slabstore_stats(s, &st);
    uint64_t indexed = st.objects, served = 0;
    for (uint32_t k = 0; k < IDS; k++) {
        verdict v = get_one(s, or, k, pool);
        if (v.ok && !v.ver)
            say(seed, "served wrong bytes", k, &t->wrong_bytes);
        else if (v.ok && !(or->may[k] & (1ull << v.ver)))
            say(seed, "came back after its delete or removal", k, &t->keys_back);
        if (!v.ok && required(or, sc, k))
            say(seed, "confirmed and flushed, but lost", k, &t->lost);
        t->required += required(or, sc, k);
        served += v.ok;
        or->confirmed[k] = v.ok ? v.ver : 0;
        or->confirm_flushes[k] = 0;
    }
    l3_slabstore_stats(s, &st);
    if (fsck_objects != (json_int_t)indexed || indexed - served != st.checksum_failures) {
        char what[160];
        snprintf(what, sizeof what, "(l3fsck -n serves %lld, the index holds %llu, %llu served, %llu checksum "
                 "failures)", (long long)fsck_objects, (unsigned long long)indexed, (unsigned long long)served,
                 (unsigned long long)st.checksum_failures);
        say(seed, what, 0, &t->fsck_errors);
    }
    t->served += served;
    l3_slabstore_free(s);
    static char buf[1 << 16];
    int first = fsck_run(sc, "-y", buf, sizeof buf), second = fsck_run(sc, "-y", buf, sizeof buf);
    if ((first != 0 && first != 1) || second != 0)
        say(seed, "(l3fsck -y did not leave the store clean)", 0, &t->fsck_errors);
}

/* Leave the store dirty (opened, never closed), so that the next child's
 * open is a crash scan. */
static void leave_dirty(const scenario *sc)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *ptrs[2];
        l3_slab_options o = power_options(sc, ptrs);
        l3_slabstore *s;
        _exit(l3_slabstore_open(&o, &s, NULL) == L3_OK ? 0 : 3);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* One child cut at write `cut_at` (0: none); its reports into the oracle,
 * its confirmed puts counted into t. Returns whether it was cut. */
static bool run_child(const scenario *sc, oracle *or, uint64_t seed, uint64_t cut_at, totals *t)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child(sc, seed, cut_at, fds[1], or->max_ver);
    }
    close(fds[1]);
    or->op = -1;
    rep r;
    while (read(fds[0], &r, sizeof r) == (ssize_t)sizeof r) {
        oracle_report(or, &r);
        t->confirmed += r.kind == R_CONFIRM;
    }
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != L3_IO_POWER_EXIT))
        fail_msg("seed %llu: the child ended with status 0x%x", (unsigned long long)seed, status);
    return WEXITSTATUS(status) == L3_IO_POWER_EXIT;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && v[0] ? strtoull(v, NULL, 10) : dflt;
}

/* Writes a child of scenario `sc` makes uncut (its seed's mix differs
 * from others', so this sizes the range a cut is drawn from). */
static uint64_t calibrate(const scenario *sc, oracle *or, uint64_t seed, uint8_t *pool, totals *t)
{
    or->writes = 0;
    run_child(sc, or, seed, 0, t);
    check_cut(sc, or, t, seed, pool);
    return or->writes ? or->writes : 1000;
}

/* Whether some key's versions near MAXV (the oracle's bit mask of them):
 * its puts would stop, and the runs with them. */
static bool saturated(const oracle *or)
{
    for (uint32_t k = 0; k < IDS; k++)
        if (or->max_ver[k] >= MAXV / 2)
            return true;
    return false;
}

/* Start the scenario's store over: its files formatted again, here (no
 * cut meets the format), its oracle blank. */
static void start_over(const scenario *sc, oracle *or)
{
    for (unsigned d = 0; d < sc->devices; d++)
        unlink(paths[sc->devices == 2 ? 1 + d : 0]);
    memset(or, 0, sizeof *or);
    const char *ptrs[2];
    l3_slab_options o = power_options(sc, ptrs);
    l3_slabstore *s;
    assert_int_equal(l3_slabstore_open(&o, &s, NULL), L3_OK);
    l3_slabstore_free(s);
}

static void power_cuts_never_serve_wrong_bytes_nor_undo_a_delete(void **state)
{
    (void)state;
    temp_store_path(paths[0], sizeof paths[0], "power");
    temp_store_path(paths[1], sizeof paths[1], "power-dev0");
    temp_store_path(paths[2], sizeof paths[2], "power-dev1");
    uint64_t cuts = env_u64("L3_POWER_CUTS", 24), first = env_u64("L3_POWER_SEED", (uint64_t)time(NULL) % 100000);
    fprintf(stderr, "power cut test: %llu cuts from seed %llu (L3_POWER_SEED replays, L3_POWER_CUTS sets how many)\n",
            (unsigned long long)cuts, (unsigned long long)first);
    static oracle ors[2];
    memset(ors, 0, sizeof ors);
    totals t = { 0 };
    uint64_t range[2] = { 0, 0 };
    uint8_t *pool = aligned_pool(2 * OBJ);
    for (uint64_t seed = first; seed < first + cuts; seed++) {
        scenario sc = scenario_of(seed);
        oracle *or = &ors[sc.devices - 1];
        if (saturated(or))
            start_over(&sc, or);
        if (!range[sc.devices - 1])
            range[sc.devices - 1] = calibrate(&sc, or, seed, pool, &t) * 11 / 10;
        if (sc.dirty_start)
            leave_dirty(&sc);
        uint64_t cut_at = 1 + (seed * 0x9e3779b97f4a7c15ull >> 20) % range[sc.devices - 1];
        bool cut = run_child(&sc, or, seed, cut_at, &t);
        t.cuts += cut;
        t.uncut += !cut;
        check_cut(&sc, or, &t, seed, pool);
    }
    fprintf(stderr, "power cut test: %llu cuts (%llu runs ended before their cut point), %llu puts confirmed, "
                    "%llu keys required (confirmed and flushed), %llu served; %llu wrong bytes, %llu keys back, "
                    "%llu lost, %llu l3fsck disagreements\n",
            (unsigned long long)t.cuts, (unsigned long long)t.uncut, (unsigned long long)t.confirmed,
            (unsigned long long)t.required,
            (unsigned long long)t.served, (unsigned long long)t.wrong_bytes, (unsigned long long)t.keys_back,
            (unsigned long long)t.lost, (unsigned long long)t.fsck_errors);
    assert_int_equal(t.wrong_bytes, 0);
    assert_int_equal(t.keys_back, 0);
    assert_int_equal(t.lost, 0);
    assert_int_equal(t.fsck_errors, 0);
    assert_true(t.cuts > 0);
    free(pool);
    for (int i = 0; i < 3; i++)
        unlink(paths[i]);
}

int main(void)
{
    quiet_logs();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(power_cuts_never_serve_wrong_bytes_nor_undo_a_delete),
    };
    return cmocka_run_group_tests_name("power", tests, NULL, NULL);
}
