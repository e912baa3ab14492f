/* The io_uring engine: one ring per context, the file registered, and the
 * Host pool plus the bounce buffer registered as fixed buffers. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "l3_clock.h"
#include "monotonic.h"

/* Set the context's ring up with `flags` beside CQSIZE (twice its depth). */
static int ring_init(l3_io_engine *e, l3_io_ctx *c, unsigned flags)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_CQSIZE | flags;
    p.cq_entries = e->depth * 2;
    return io_uring_queue_init_params(e->depth, &c->ring, &p);
}

l3_status l3_uring_ctx_init(l3_io_engine *e, l3_io_ctx *c, l3_error *err)
{
    /* Completions' task work runs when this thread next enters the kernel
     * (a submission, a wait, or a poll that sees IORING_SQ_TASKRUN), not
     * by an interrupt of the thread in the middle of a checksum. An owned
     * context's ring is its creating thread's alone, and its completions
     * wait for that thread to ask for them: they wake it only once as many
     * as it waits for are in (one wake for a batch, not one a request). */
    int rc;
    if (c->owned) {
        rc = ring_init(e, c, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
        if (rc == -EINVAL)
            return l3_fail(err, L3_EUNSUPPORTED, "io_uring: no IORING_SETUP_DEFER_TASKRUN (a kernel before 6.1)");
    } else {
        rc = ring_init(e, c, IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG);
        if (rc == -EINVAL)
            rc = ring_init(e, c, 0); /* (a kernel before 5.19) */
    }
    if (rc < 0)
        return l3_fail(err, rc == -ENOMEM ? L3_ENOMEM : L3_EUNSUPPORTED,
                       "io_uring_setup(%u entries): %s", e->depth, strerror(-rc));
    c->ring_ready = true;
    if (io_uring_register_files(&c->ring, e->fds, e->nfds) == 0)
        c->file_registered = true;
    if (c->bounce) {
        struct iovec iov = { c->bounce, c->bounce_len };
        rc = io_uring_register_buffers(&c->ring, &iov, 1);
        if (rc == 0) {
            c->buffers_registered = c->bounce_fixed = true;
        } else {
            l3_log("warning", "io_uring: registering the %zu-byte bounce buffer failed: %s; "
                              "it is used unregistered", c->bounce_len, strerror(-rc));
        }
    }
    return L3_OK;
}

void l3_uring_ctx_free(l3_io_engine *e, l3_io_ctx *c)
{
    (void)e;
    if (c->ring_ready) {
        /* Unregistering waits for the kernel to drop its references, so
         * the file (and its lock) is released when this returns; the ring
         * teardown after queue_exit is asynchronous. (An owned ring's
         * other threads are refused: theirs go with the teardown.) */
        if (c->file_registered)
            io_uring_unregister_files(&c->ring);
        if (c->buffers_registered)
            io_uring_unregister_buffers(&c->ring);
        io_uring_queue_exit(&c->ring);
    }
    c->ring_ready = false;
}

/* Register the bounce buffer alone (no Host regions, or they were refused). */
static void register_bounce_only(l3_io_ctx *c)
{
    if (c->bounce) {
        struct iovec one = { c->bounce, c->bounce_len };
        c->buffers_registered = c->bounce_fixed = io_uring_register_buffers(&c->ring, &one, 1) == 0;
    }
}

/* Log, once per set of regions (c's generation of them), that the Host
 * regions could not be registered: a context still refused the old set
 * after a new one was set does not silence the new set's refusal. */
static void warn_refused(l3_io_engine *e, const l3_io_ctx *c, int rc)
{
    atomic_store(&e->host_refused, true);
    if (atomic_exchange(&e->warned_gen, c->host_gen) == c->host_gen)
        return;
    size_t total = 0;
    for (unsigned i = 0; i < c->nhost; i++)
        total += c->host[i].len;
    struct rlimit lim;
    char limit[64] = "unknown";
    if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0) {
        if (lim.rlim_cur == RLIM_INFINITY)
            snprintf(limit, sizeof limit, "unlimited");
        else
            snprintf(limit, sizeof limit, "%llu bytes", (unsigned long long)lim.rlim_cur);
    }
    l3_log("warning",
           "io_uring: registering %u Host region(s) of %zu bytes as fixed buffers failed: %s "
           "(RLIMIT_MEMLOCK is %s); falling back to unregistered O_DIRECT reads and writes "
           "(raise `ulimit -l` to get zero-copy fixed buffers)",
           c->nhost, total, strerror(-rc), limit);
}

/* The iovec table [bounce, region 0's chunks, region 1's chunks, ...],
 * noting each region's first index; its length in *count. */
static struct iovec *region_table(l3_io_ctx *c, unsigned *count)
{
    size_t chunks = 0;
    for (unsigned i = 0; i < c->nhost; i++)
        chunks += (c->host[i].len + L3_IO_CHUNK - 1) / L3_IO_CHUNK;
    struct iovec *iov = calloc(chunks + 1, sizeof *iov);
    if (!iov)
        return NULL;
    iov[0] = (struct iovec){ c->bounce, c->bounce_len };
    unsigned k = 1;
    for (unsigned i = 0; i < c->nhost; i++) {
        c->host_first[i] = k;
        for (size_t off = 0; off < c->host[i].len; off += L3_IO_CHUNK, k++) {
            size_t left = c->host[i].len - off;
            iov[k] = (struct iovec){ (char *)c->host[i].base + off, left < L3_IO_CHUNK ? left : L3_IO_CHUNK };
        }
    }
    *count = k;
    return iov;
}

/* IORING_REGISTER_CLONE_BUFFERS and its argument as kernel 6.13 takes
 * them (at an offset, into a table that has entries: DST_REPLACE); the
 * headers built against may be older. */
#define L3_REGISTER_CLONE_BUFFERS 30u
#define L3_REGISTER_DST_REPLACE (1u << 1)
typedef struct l3_clone_buffers {
    uint32_t src_fd, flags, src_off, dst_off, nr, pad[3];
} l3_clone_buffers;

/* Unpin what the pin ring holds (e->pin_mu held). */
static void unpin(l3_io_engine *e)
{
    if (e->pin_ready && e->pin_gen && e->pin_rc == 0)
        io_uring_unregister_buffers(&e->pin_ring);
    e->pin_gen = 0;
}

void l3_uring_unpin_stale(l3_io_engine *e)
{
    pthread_mutex_lock(&e->pin_mu);
    pthread_mutex_lock(&e->mu);
    bool stale = e->pin_gen != e->host_gen;
    pthread_mutex_unlock(&e->mu);
    if (stale)
        unpin(e);
    pthread_mutex_unlock(&e->pin_mu);
}

void l3_uring_pin_free(l3_io_engine *e)
{
    unpin(e);
    if (e->pin_ready)
        io_uring_queue_exit(&e->pin_ring);
    e->pin_ready = false;
}

/* Set the engine's pin ring up unless it is (e->pin_mu held): 0, or -errno. */
static int pin_ring_up(l3_io_engine *e)
{
    int rc = e->pin_ready ? 0 : io_uring_queue_init(1, &e->pin_ring, 0);
    e->pin_ready = rc == 0;
    return rc;
}

/* Pin Host chunks iov[0..n) of generation `gen` on the engine's pin ring,
 * unless done for it already, or refused and not yet due again (e->pin_mu
 * held): 0, or -errno. A refusal (the memlock limit, or no pin ring) is
 * tried again after a second, then after twice as long each time, up to
 * a minute: the kernel pins the pages before it checks the limit, and
 * rings that still hold old regions may let them go only at their next
 * batch. */
static int pin_hosts(l3_io_engine *e, const struct iovec *iov, unsigned n, uint64_t gen)
{
    if (e->pin_gen == gen && (e->pin_rc == 0 || l3_now_ns() < atomic_load(&e->pin_retry_ns)))
        return e->pin_rc;
    if (e->pin_gen != gen)
        e->pin_backoff_ns = 0;
    unpin(e);
    e->pin_rc = pin_ring_up(e);
    if (e->pin_rc == 0)
        e->pin_rc = io_uring_register_buffers(&e->pin_ring, iov, n);
    e->pin_gen = gen;
    if (e->pin_rc == 0)
        atomic_fetch_add(&e->stats.host_pins, 1);
    if (e->pin_rc) {
        uint64_t most = 60000000000ull, next = e->pin_backoff_ns ? 2 * e->pin_backoff_ns : e->pin_retry_first_ns;
        e->pin_backoff_ns = next < most ? next : most;
        atomic_store(&e->pin_retry_ns, l3_now_ns() + e->pin_backoff_ns);
    } else {
        atomic_store(&e->host_refused, false); /* (rings refused before try again at their next batch) */
    }
    return e->pin_rc;
}

/* Clone the pin ring's n chunks into c's table behind its bounce buffer
 * (index 0): 0, or -errno. */
static int clone_pinned(l3_io_engine *e, l3_io_ctx *c, unsigned n)
{
    if (e->clone_fault)
        return e->clone_fault;
    l3_clone_buffers a = { .src_fd = (uint32_t)e->pin_ring.ring_fd, .flags = L3_REGISTER_DST_REPLACE,
                           .dst_off = 1, .nr = n };
    long rc = syscall(__NR_io_uring_register, c->ring.ring_fd, L3_REGISTER_CLONE_BUFFERS, &a, 1);
    return rc < 0 ? -errno : 0;
}

/* Whether a clone's error says the kernel cannot clone so (no clone at
 * an offset before 6.13, none at all before 6.12), not a passing want. */
static bool clone_unsupported(int rc)
{
    return rc == -EINVAL || rc == -EOPNOTSUPP || rc == -EBUSY;
}

/* Whether the kernel clones at an offset, asked with one page of its own
 * pinned alone on the pin ring and cloned into c's table (empty: c has
 * nothing registered) at index 1, before the whole pool is pinned there: a
 * kernel that cannot then pins nothing for nothing (e->pin_mu held, the
 * pin ring holding nothing). The page is a mapping of its own, never part
 * of a huge page (whose whole size a pin counts against RLIMIT_MEMLOCK),
 * and no table keeps it: c has nothing registered again. 1: it can, 0: it
 * cannot (cloning is off and the pin ring gone), -1: not known (the page
 * or the pin ring refused, or another error: the pool's own pin and clone
 * then ask). */
static int probe_clone(l3_io_engine *e, l3_io_ctx *c)
{
    int up = pin_ring_up(e);
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    madvise(p, 4096, MADV_NOHUGEPAGE); /* (nor merged into a neighbour that is) */
    struct iovec page = { p, 4096 };
    bool pinned = up == 0 && io_uring_register_buffers(&e->pin_ring, &page, 1) == 0;
    int rc = pinned ? clone_pinned(e, c, 1) : -ENOMEM;
    if (rc == 0)
        io_uring_unregister_buffers(&c->ring);
    if (pinned)
        io_uring_unregister_buffers(&e->pin_ring);
    munmap(p, 4096);
    if (!pinned)
        return -1;
    if (rc == 0)
        e->clone_known = true;
    if (!clone_unsupported(rc))
        return rc == 0 ? 1 : -1;
    atomic_store(&e->clone_off, true);
    l3_uring_pin_free(e);
    return 0;
}

/* Register table iov[0..count) ([bounce, Host chunks...]) of generation
 * `gen` on c with the chunks pinned once for the engine and cloned: true
 * when done, or refused and said so (c has its bounce buffer alone, and
 * tries again at a begin once the engine's pin is due again); false, c
 * as it was, when this context should pin its own: the kernel cannot
 * clone so (from then on every context does, and the engine's pin ring
 * goes), or this clone failed. */
static bool register_cloned(l3_io_engine *e, l3_io_ctx *c, const struct iovec *iov, unsigned count, uint64_t gen)
{
    pthread_mutex_lock(&e->pin_mu);
    if (atomic_load(&e->clone_off)) {
        pthread_mutex_unlock(&e->pin_mu);
        return false;
    }
    pthread_mutex_lock(&e->mu);
    bool current = e->host_gen == gen; /* (else set anew meanwhile: this context registers at its next begin) */
    pthread_mutex_unlock(&e->mu);
    L3_ASSERT(!c->buffers_registered);
    if (current && !e->clone_known && !e->pin_gen && probe_clone(e, c) == 0) {
        pthread_mutex_unlock(&e->pin_mu);
        return false;
    }
    int rc = current ? pin_hosts(e, iov + 1, count - 1, gen) : -ESTALE;
    register_bounce_only(c);
    int cloned = rc == 0 ? clone_pinned(e, c, count - 1) : 0;
    if (clone_unsupported(cloned)) {
        atomic_store(&e->clone_off, true);
        l3_uring_pin_free(e);
    }
    if (rc == 0 && cloned == 0)
        e->clone_known = true;
    c->pin_refused = rc != 0 && rc != -ESTALE;
    if (c->pin_refused)
        warn_refused(e, c, rc); /* (under pin_mu: ordered with a later pin's success, which clears it) */
    pthread_mutex_unlock(&e->pin_mu);
    if (cloned) {
        if (c->buffers_registered)
            io_uring_unregister_buffers(&c->ring);
        c->buffers_registered = c->bounce_fixed = false;
        return false;
    }
    if (rc == 0) {
        c->buffers_registered = true;
        c->host_fixed = true;
    }
    return true;
}

/* Register [bounce, Host region chunks...] on this ring, once per
 * registration of the regions (a generation, not an address: a pool freed
 * and another allocated at the same address must be registered anew). */
static void register_host(l3_io_engine *e, l3_io_ctx *c)
{
    pthread_mutex_lock(&e->mu);
    uint64_t gen = e->host_gen;
    if (gen != c->host_gen) {
        c->nhost = e->nhost;
        memcpy(c->host, e->host, e->nhost * sizeof *c->host);
    }
    pthread_mutex_unlock(&e->mu);
    if (gen == c->host_gen && !(c->pin_refused && l3_now_ns() >= atomic_load(&e->pin_retry_ns)))
        return;
    c->host_gen = gen;
    c->host_fixed = c->pin_refused = false;
    if (c->buffers_registered) {
        io_uring_unregister_buffers(&c->ring);
        c->buffers_registered = c->bounce_fixed = false;
    }
    if (!c->nhost || !e->options.register_buffers) {
        register_bounce_only(c);
        return;
    }
    unsigned count = 0;
    struct iovec *iov = region_table(c, &count);
    if (iov && register_cloned(e, c, iov, count, gen)) {
        free(iov);
        return;
    }
    int rc = iov ? io_uring_register_buffers(&c->ring, iov, count) : -ENOMEM;
    free(iov);
    if (rc == 0) {
        atomic_fetch_add(&e->stats.host_pins, 1);
        c->buffers_registered = c->bounce_fixed = true;
        c->host_fixed = true;
        return;
    }
    warn_refused(e, c, rc);
    register_bounce_only(c);
}

/* The fixed-buffer index of [buf, buf+len), or -1: the bounce buffer, or
 * the chunk of the Host region that holds it whole. */
static int fixed_index(const l3_io_ctx *c, const void *buf, size_t len)
{
    if (!c->buffers_registered)
        return -1;
    const char *p = buf;
    const char *b = c->bounce;
    if (b && p >= b && p + len <= b + c->bounce_len)
        return c->bounce_fixed ? 0 : -1;
    if (!c->host_fixed)
        return -1;
    for (unsigned i = 0; i < c->nhost; i++) {
        const char *h = c->host[i].base;
        if (p < h || p + len > h + c->host[i].len)
            continue;
        size_t k = (size_t)(p - h) / L3_IO_CHUNK;
        size_t end = (size_t)(p + len - 1 - h) / L3_IO_CHUNK;
        return k == end ? (int)(c->host_first[i] + k) : -1;
    }
    return -1;
}

/* Prepare request i's SQE: fixed when its buffer is registered. */
static void prep_io(l3_io_engine *e, l3_io_ctx *c, struct io_uring_sqe *sqe, uint32_t i, l3_fault_kind fault)
{
    l3_io_req *r = &c->batch.reqs[i];
    char *buf;
    uint32_t len;
    uint64_t off;
    unsigned dev;
    l3_io_span(e, r, fault, &buf, &len, &off, &dev);
    int fd = c->file_registered ? (int)dev : e->fds[dev];
    r->fault = (uint8_t)fault;
    if (fault == L3_FAULT_STALL) {
        /* A real SQE that never completes: a read of an empty pipe into
         * the request's buffer (as a hung device would). */
        io_uring_prep_read(sqe, e->stall_pipe[0], buf, len, 0);
        io_uring_sqe_set_data64(sqe, (uint64_t)c->gen << 32 | i);
        return;
    }
    int idx = fixed_index(c, buf, len);
    if (idx >= 0) {
        if (r->write)
            io_uring_prep_write_fixed(sqe, fd, buf, len, off, idx);
        else
            io_uring_prep_read_fixed(sqe, fd, buf, len, off, idx);
        atomic_fetch_add(&e->stats.fixed, 1);
    } else {
        if (r->write)
            io_uring_prep_write(sqe, fd, buf, len, off);
        else
            io_uring_prep_read(sqe, fd, buf, len, off);
        atomic_fetch_add(&e->stats.unfixed, 1);
    }
    sqe->flags |= c->file_registered ? IOSQE_FIXED_FILE : 0;
    io_uring_sqe_set_data64(sqe, (uint64_t)c->gen << 32 | i);
}

/* The index in a no-op's user data (with the batch's generation): never a
 * request's, and never liburing's own UINT64_MAX. */
#define NOP_INDEX (UINT32_MAX - 1)
/* The user data of an owned ring's poll of its thread's eventfd and of the
 * timeout linked to it (l3_uring_wait_owned): no batch's. */
#define WAKE_POLL ((uint64_t)UINT32_MAX << 32 | (UINT32_MAX - 2))
#define WAKE_TIMEOUT ((uint64_t)UINT32_MAX << 32 | (UINT32_MAX - 3))

/* Fill the SQ from the pending stack, up to the context's window; a request
 * held back by L3_FAULT_DELAY stops it until its time. */
static void fill_sq(l3_io_engine *e, l3_io_ctx *c)
{
    l3_io_batch *b = &c->batch;
    while (b->npending && b->inflight < l3_io_window(e, c) && io_uring_sq_space_left(&c->ring)) {
        uint32_t i = c->pending[b->npending - 1];
        l3_fault_kind fault = l3_io_fault_next(e, b, &b->reqs[i]);
        if (fault == L3_FAULT_DELAY)
            break; /* not yet: the requests after it wait behind it */
        b->npending--;
        struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring); /* (there is room) */
        long res;
        if (l3_io_without_device(e, &b->reqs[i], fault, &res)) {
            if (l3_io_complete(e, &b->reqs[i], res))
                c->pending[b->npending++] = i;
            else
                l3_io_finished(c, i);
            io_uring_prep_nop(sqe); /* (reaped before the batch ends) */
            io_uring_sqe_set_data64(sqe, (uint64_t)c->gen << 32 | NOP_INDEX);
            b->nops++;
            continue;
        }
        prep_io(e, c, sqe, i, fault);
        b->inflight++;
    }
}

/* Fill the SQ and submit it. A hard submission failure ends the batch:
 * entries may be left in the SQ and earlier ones still in flight, so the
 * engine cannot be trusted with another batch. */
static l3_status push(l3_io_engine *e, l3_io_ctx *c)
{
    l3_io_batch *b = &c->batch;
    fill_sq(e, c);
    int rc = io_uring_submit(&c->ring);
    if (rc >= 0 || rc == -EBUSY || rc == -EAGAIN || rc == -EINTR)
        return L3_OK;
    atomic_store(&e->broken, true);
    size_t unsent = io_uring_sq_ready(&c->ring);
    if (b->inflight == unsent)
        return l3_fail(&b->err, L3_EIO, "io_uring_submit: %s", strerror(-rc));
    b->retired = false;
    return l3_fail(&b->err, L3_EIO, "io_uring_submit: %s with %zu I/Os in flight", strerror(-rc),
                   b->inflight - unsent);
}

/* The time from now to `until` (monotonic seconds), none when past. */
static struct __kernel_timespec time_to(double until)
{
    double left = until - l3_monotonic_seconds();
    if (left < 0)
        left = 0;
    return (struct __kernel_timespec){ .tv_sec = (long long)left, .tv_nsec = (long long)((left - floor(left)) * 1e9) };
}

/* Wait until `nr` completions are ready or `until` passes. */
static int wait_cqe(l3_io_engine *e, struct io_uring *ring, unsigned nr, double until)
{
    struct io_uring_cqe *cqe;
    if (l3_io_fault_wait_check(e))
        return -EIO;
    for (;;) {
        struct __kernel_timespec ts = time_to(until);
        int rc = io_uring_wait_cqes(ring, &cqe, nr, &ts, NULL);
        if (rc != -EINTR)
            return rc;
    }
}

/* Take every ready completion of this batch; others' are skipped. A
 * request that finished goes on the done queue, one to resubmit back on
 * the pending stack. */
static void reap(l3_io_engine *e, l3_io_ctx *c)
{
    l3_io_batch *b = &c->batch;
    struct io_uring_cqe *cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&c->ring, head, cqe)
    {
        seen++;
        uint64_t ud = io_uring_cqe_get_data64(cqe);
        if (ud == WAKE_POLL) {
            c->link_armed = false; /* (its timeout follows: a stray one ends some wait early, no harm) */
            c->woken = true;
        }
        if (ud == WAKE_POLL || ud == WAKE_TIMEOUT)
            continue;
        if ((uint32_t)(ud >> 32) == c->gen && (uint32_t)ud == NOP_INDEX) {
            L3_ASSERT(b->nops > 0);
            b->nops--;
            continue;
        }
        if ((uint32_t)(ud >> 32) != c->gen || (uint32_t)ud >= b->n)
            continue; /* not this batch's: never count it */
        L3_ASSERT(b->inflight > 0);
        b->inflight--;
        uint32_t i = (uint32_t)ud;
        if (l3_io_complete(e, &b->reqs[i], cqe->res))
            c->pending[b->npending++] = i;
        else
            l3_io_finished(c, i);
    }
    io_uring_cq_advance(&c->ring, seen);
}

/* Have the kernel post what came in for this thread (on a ring that
 * flags it: IORING_SQ_TASKRUN), then reap it. */
static void take_posted(l3_io_engine *e, l3_io_ctx *c)
{
    if (IO_URING_READ_ONCE(*c->ring.sq.kflags) & IORING_SQ_TASKRUN)
        io_uring_get_events(&c->ring);
    reap(e, c);
}

void l3_uring_prepare(l3_io_engine *e, l3_io_ctx *c) { register_host(e, c); }

l3_status l3_uring_begin(l3_io_engine *e, l3_io_ctx *c)
{
    register_host(e, c);
    return push(e, c);
}

l3_status l3_uring_set_notify(l3_io_ctx *c, int fd, l3_error *err)
{
    if (c->notify_fd >= 0)
        io_uring_unregister_eventfd(&c->ring);
    c->notify_fd = -1;
    int rc = fd >= 0 ? io_uring_register_eventfd(&c->ring, fd) : 0;
    return rc < 0 ? l3_fail(err, L3_EIO, "io_uring_register_eventfd: %s", strerror(-rc)) : L3_OK;
}

/* A step that does not sleep (l3_io_poll_some): what has finished, or
 * -ETIME with nothing yet, or -EIO when a wait is to fail (fault.h). */
static int peek_cqe(l3_io_engine *e, l3_io_ctx *c)
{
    if (l3_io_fault_wait_check(e))
        return -EIO;
    take_posted(e, c); /* (completions wait for this thread to post them) */
    return c->batch.head != c->batch.tail ? 0 : -ETIME;
}

l3_status l3_uring_step(l3_io_engine *e, l3_io_ctx *c)
{
    l3_io_batch *b = &c->batch;
    if (b->nowait) {
        /* What finished is taken before what waits is sent, so that it is
         * reported before newer requests can finish beside it. */
        take_posted(e, c);
    }
    while (b->head == b->tail) {
        if (!b->npending && !b->inflight && !b->nops)
            return L3_OK;
        l3_status st = push(e, c);
        if (st != L3_OK)
            return st;
        double until = l3_io_wait_until(b);
        unsigned nr = l3_io_wait_count(b);
        int rc = b->nowait ? peek_cqe(e, c) : wait_cqe(e, &c->ring, nr, until);
        if (rc == 0 && b->nowait)
            break; /* (reaped) */
        if (rc == -ETIME && b->nowait && l3_monotonic_seconds() < b->deadline)
            return b->npending ? push(e, c) : L3_OK; /* nothing yet (a short read reaped goes out again at once) */
        if (rc == -ETIME && nr > 1)
            reap(e, c); /* what did finish by then */
        if (rc == -ETIME && (until < b->deadline || b->head != b->tail))
            continue; /* a held-back request's time has come, or some finished */
        if (rc == -ETIME) {
            b->retired = false;
            return l3_fail(&b->err, L3_ETIMEDOUT, "io_uring: %zu I/Os not completed within the I/O timeout",
                           b->inflight);
        }
        if (rc < 0 && rc != -EAGAIN && rc != -EBUSY) {
            /* Unreaped means unretired: I/O still in flight may yet land. */
            if (b->inflight) {
                atomic_store(&e->broken, true);
                b->retired = false;
            }
            return l3_fail(&b->err, L3_EIO, "io_uring_wait_cqe: %s with %zu I/Os in flight", strerror(-rc),
                           b->inflight);
        }
        reap(e, c);
    }
    /* Finished requests to report: first send what they left to resubmit,
     * so that the device works while the caller looks at them. */
    return b->npending ? push(e, c) : L3_OK;
}

/* Arm, once, a poll of eventfd `fd` on the owned ring, linked to a short
 * timeout: when `fd` is written the poll completes and the timeout starts,
 * and a timeout that fires during a wait ends it however few completions
 * it has (a poll's completion alone counts as one). The timeout is not of
 * no time: a poll that completed just before a wait has its completion
 * run as the wait begins, and the wait counts only timeouts that fire
 * after it has begun. False when the SQ has no room for the pair. */
static bool arm_wake(l3_io_ctx *c, int fd)
{
    static struct __kernel_timespec soon = { 0, 50000 }; /* 50 us */
    if (c->link_armed)
        return true;
    if (io_uring_sq_space_left(&c->ring) < 2)
        return false;
    struct io_uring_sqe *poll = io_uring_get_sqe(&c->ring);
    io_uring_prep_poll_add(poll, fd, POLLIN);
    poll->flags |= IOSQE_IO_LINK;
    io_uring_sqe_set_data64(poll, WAKE_POLL);
    struct io_uring_sqe *tmo = io_uring_get_sqe(&c->ring);
    io_uring_prep_timeout(tmo, &soon, 0, 0);
    io_uring_sqe_set_data64(tmo, WAKE_TIMEOUT);
    c->link_armed = true;
    return true;
}

void l3_uring_wait_owned(l3_io_engine *e, l3_io_ctx *c, int fd, double until)
{
    L3_ASSERT(c->owned);
    l3_io_batch *b = &c->batch;
    take_posted(e, c); /* (since the round; a submission may have posted some, a fired wake too) */
    if (b->head != b->tail || !b->inflight || c->woken) {
        c->woken = false;
        return; /* something to report, or fd was written: a round first */
    }
    unsigned nr = (unsigned)l3_io_wake_count(c);
    if (!arm_wake(c, fd) && until > l3_monotonic_seconds() + 1e-3)
        until = l3_monotonic_seconds() + 1e-3; /* (no room to be woken: look again soon) */
    if (until <= l3_monotonic_seconds())
        return;
    struct __kernel_timespec ts = time_to(until);
    struct io_uring_cqe *cqe;
    (void)io_uring_submit_and_wait_timeout(&c->ring, &cqe, nr, &ts, NULL); /* (the round reaps and judges) */
}

void l3_uring_quiet(l3_io_ctx *c)
{
    if (c->ring_ready)
        (void)io_uring_cq_eventfd_toggle(&c->ring, false); /* (a kernel without the flag: it signals) */
}
