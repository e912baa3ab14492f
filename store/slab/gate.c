/* The read-first gate (gate.h). */
#include "gate.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "invariant.h"
#include "monotonic.h"

/* How long one sleep lasts at most: a read that ends without a waiter to
 * wake (its count fell before the writer slept) is seen this late. */
#define GATE_NAP_MS 5u

static void futex_wait(_Atomic uint32_t *word, uint32_t expect, uint32_t ms)
{
    struct timespec t = { .tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L };
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expect, &t, NULL, 0); /* (shared: not PRIVATE) */
}

static void futex_wake_all(_Atomic uint32_t *word)
{
    (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* Move the futex word on and wake the writers waiting, if any wait. */
static void wake_writers(l3_gate *g)
{
    if (atomic_load(&g->waiters) == 0)
        return;
    atomic_fetch_add(&g->seq, 1);
    futex_wake_all(&g->seq);
}

void l3_gate_read_begin(l3_gate *g, int me)
{
    L3_ASSERT(me >= 0 && me < L3_MAX_PROCS);
    atomic_fetch_add(&g->proc_reads[me], 1);
    atomic_fetch_add(&g->reads, 1);
}

void l3_gate_read_end(l3_gate *g, int me)
{
    L3_ASSERT(me >= 0 && me < L3_MAX_PROCS && atomic_load(&g->proc_reads[me]) > 0);
    atomic_fetch_sub(&g->proc_reads[me], 1);
    if (atomic_fetch_sub(&g->reads, 1) == 1)
        wake_writers(g);
}

/* Count a writer in if the gate is open: no reads, or room beside them. */
static bool try_enter(l3_gate *g)
{
    uint32_t w = atomic_load(&g->writes);
    while (atomic_load(&g->reads) == 0 || w < L3_GATE_WRITES_UNDER_READS)
        if (atomic_compare_exchange_weak(&g->writes, &w, w + 1))
            return true;
    return false;
}

/* Count a writer in past a closed gate, its longest wait over. */
static void enter_forced(l3_gate *g)
{
    atomic_fetch_add(&g->forced, 1);
    atomic_fetch_add(&g->writes, 1);
}

bool l3_gate_write_begin(l3_gate *g, int me)
{
    L3_ASSERT(me >= 0 && me < L3_MAX_PROCS);
    bool open = try_enter(g);
    if (!open) {
        atomic_fetch_add(&g->waits, 1);
        atomic_fetch_add(&g->waiters, 1);
        uint64_t until = l3_now_ns() / 1000000u + L3_GATE_WAIT_MS;
        for (;;) {
            uint32_t seq = atomic_load(&g->seq);
            if ((open = try_enter(g)))
                break;
            uint64_t now = l3_now_ns() / 1000000u;
            if (now >= until)
                break;
            futex_wait(&g->seq, seq, until - now < GATE_NAP_MS ? (uint32_t)(until - now) : GATE_NAP_MS);
        }
        atomic_fetch_sub(&g->waiters, 1);
        if (!open)
            enter_forced(g);
    }
    atomic_fetch_add(&g->proc_writes[me], 1);
    return open;
}

bool l3_gate_write_try(l3_gate *g, int me, uint64_t *until, bool *open)
{
    L3_ASSERT(me >= 0 && me < L3_MAX_PROCS);
    *open = try_enter(g);
    if (!*open) {
        uint64_t now = l3_now_ns() / 1000000u;
        if (*until == 0) {
            atomic_fetch_add(&g->waits, 1);
            *until = now + L3_GATE_WAIT_MS;
        }
        if (now < *until)
            return false;
        enter_forced(g);
    }
    atomic_fetch_add(&g->proc_writes[me], 1);
    return true;
}

void l3_gate_write_end(l3_gate *g, int me)
{
    L3_ASSERT(me >= 0 && me < L3_MAX_PROCS && atomic_load(&g->proc_writes[me]) > 0);
    L3_ASSERT(atomic_load(&g->writes) > 0);
    atomic_fetch_sub(&g->proc_writes[me], 1);
    atomic_fetch_sub(&g->writes, 1);
    wake_writers(g);
}

/* Take `n` from `count`, never below zero. */
static void take_back(_Atomic uint32_t *count, uint32_t n)
{
    uint32_t v = atomic_load(count);
    while (!atomic_compare_exchange_weak(count, &v, v >= n ? v - n : 0))
        ;
}

void l3_gate_release_proc(l3_gate *g, int p)
{
    L3_ASSERT(p >= 0 && p < L3_MAX_PROCS);
    take_back(&g->reads, atomic_exchange(&g->proc_reads[p], 0));
    take_back(&g->writes, atomic_exchange(&g->proc_writes[p], 0));
    wake_writers(g);
}
