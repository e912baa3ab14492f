/* The drivers (driver.h): a kind's queued operations begun on the store,
 * polled without sleeping, finished as they end; between rounds that find
 * nothing to do, one sleep on the kind's eventfd. */
#include "driver.h"
#include "completion.h"
#include "invariant.h"
#include "jobs.h"
#include "run.h"
#include "worker.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>

/* An operation the driver runs: its id, its job, its call, and whether
 * it ended. It stays in its slot from take to finish: the store's job
 * points into its run_state (the result it fills). */
typedef struct active {
    bool used;
    uint64_t op_id;
    const job *j;
    run_state rs;
    bool fresh;  /* taken this round, not yet begun */
    bool begun;  /* the store call under way (false: rs.out is final) */
    bool done;
} active;

typedef struct driver {
    l3_executor *e;
    int kind;       /* KIND_GET or KIND_PUT */
    int fd;         /* its eventfd */
    active *a;      /* cap slots */
    size_t n, cap;  /* slots used, of cap */
    double wake_by; /* the earliest time an operation must be polled again, or 0 */
} driver;

/* Take queued operations into free slots (the state lock held); how many. */
static size_t take_ops(driver *d)
{
    size_t taken = 0;
    for (size_t i = 0; i < d->cap && d->n < d->cap; i++) {
        uint64_t op_id;
        const job *j;
        if (d->a[i].used)
            continue;
        if (!(j = l3_exec_take(d->e, d->kind, &op_id)))
            break;
        d->a[i] = (active){ .used = true, .op_id = op_id, .j = j, .fresh = true };
        d->n++;
        taken++;
    }
    return taken;
}

/* Begin the operations taken this round on the store (outside the lock). */
static void begin_ops(driver *d)
{
    for (size_t i = 0; i < d->cap; i++) {
        active *g = &d->a[i];
        if (!g->used || !g->fresh)
            continue;
        g->fresh = false;
        g->begun = l3_exec_run_begin(d->e, g->j, &g->rs, d->fd);
        g->done = !g->begun;
    }
}

/* Poll every operation (outside the lock), ending the store calls of
 * those done; how many are done. */
static size_t poll_ops(driver *d)
{
    size_t done = 0;
    d->wake_by = 0;
    for (size_t i = 0; i < d->cap; i++) {
        active *g = &d->a[i];
        double wake = 0;
        if (!g->used)
            continue;
        if (!g->done)
            g->done = l3_exec_run_poll(d->e, &g->rs, &wake);
        if (!g->done && wake > 0 && (d->wake_by == 0 || wake < d->wake_by))
            d->wake_by = wake;
        if (g->done && g->begun) {
            g->rs.out = l3_exec_run_end(d->e, g->j, &g->rs); /* (outside the lock: it logs) */
            g->begun = false;
        }
        done += g->done;
    }
    return done;
}

/* Finish the done operations (the state lock held), freeing their slots. */
static void finish_ops(driver *d)
{
    for (size_t i = 0; i < d->cap; i++) {
        active *g = &d->a[i];
        if (!g->used || !g->done)
            continue;
        if (!g->rs.out.success)
            l3_log("error", "out of memory finishing L3 operation %llu", (unsigned long long)g->op_id);
        else
            l3_exec_finish(d->e, g->op_id, g->rs.out);
        g->used = false;
        d->n--;
    }
    l3_exec_wake_outside(d->e);
}

/* Sleep until the operations' I/O has come in (the store's driver_wait:
 * one wake-up for many completions), or else on the eventfd until an I/O
 * finishes; either way until an operation is queued, shutdown begins, or
 * an operation's wake-up time comes (the state lock released). */
static void sleep_on_events(driver *d)
{
    int ms = -1;
    if (d->wake_by > 0) {
        double left = d->wake_by - l3_monotonic_seconds();
        ms = left <= 0 ? 0 : (int)ceil(left * 1e3);
    }
    if (ms == 0)
        return;
    l3_store *st = d->e->store;
    if (st->ops->driver_wait && st->ops->driver_wait(st, d->fd, d->wake_by))
        return;
    struct pollfd p = { .fd = d->fd, .events = POLLIN };
    (void)poll(&p, 1, ms); /* (EINTR: a round, then back) */
}

/* Drain the eventfd's count: the round that follows looks at everything. */
static void drain(int fd)
{
    eventfd_t v;
    (void)eventfd_read(fd, &v);
}

void *l3_exec_driver(void *arg)
{
    l3_executor *e = ((worker_arg *)arg)->executor;
    int kind = ((worker_arg *)arg)->kind;
    driver d = { .e = e, .kind = kind, .fd = e->drive_fd[kind],
                 .cap = kind == KIND_GET ? e->config.read_workers : e->config.write_workers };
    if ((d.a = calloc(d.cap, sizeof *d.a)) && e->store->ops->driver_start)
        e->store->ops->driver_start(e->store, d.fd, d.cap); /* (its rings made now, not by its first gets) */
    pthread_mutex_lock(&e->mu);
    e->drivers_preparing--;
    pthread_cond_broadcast(&e->exited); /* (start waits for its drivers) */
    if (!d.a) {
        pthread_mutex_unlock(&e->mu);
        l3_log("warning", "out of memory for the %s driver's slots: they run one at a time on its thread",
               l3_exec_kind_names[kind]);
        return l3_exec_worker(arg);
    }
    for (;;) {
        size_t taken = take_ops(&d);
        if (d.n == 0 && e->stopping) {
            free(d.a);
            pthread_mutex_unlock(&e->mu); /* (stopping: nothing is taken meanwhile, close waits for the exit) */
            if (e->store->ops->forget_notify)
                e->store->ops->forget_notify(e->store, d.fd); /* (it may free this thread's rings) */
            pthread_mutex_lock(&e->mu);
            l3_exec_worker_exit(e);
            return NULL;
        }
        bool queued = e->queues[kind].len > 0;
        atomic_store(&e->driver_asleep[kind], !taken && !queued);
        pthread_mutex_unlock(&e->mu);
        begin_ops(&d);
        size_t done = poll_ops(&d);
        if (!taken && !done && !(queued && d.n < d.cap))
            sleep_on_events(&d);
        drain(d.fd);
        pthread_mutex_lock(&e->mu);
        atomic_store(&e->driver_asleep[kind], false);
        if (done)
            finish_ops(&d);
    }
}
