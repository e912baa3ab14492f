/* l3cache: the executor's insides, shared inside executor/ (internal; not
 * installed): the struct every room works on, a job and its slot, the
 * kinds' queues and counters. Types only.
 *
 * Rooms (ARCHITECTURE.md, lowest first): l3_executor.h and this header,
 * jobs.c (a job, its slot, the queues), completion.c (completions and
 * waiting for them), namespace.c (the prefix and object keys), submit.c
 * (submission and cancel), run.c (one operation's I/O through the
 * breaker), worker.c (the workers), snapshot.c and snapshot_json.c (the
 * counters), and executor.c (start and close), which starts the workers;
 * never the other way. */
#ifndef L3_EXEC_INTERNAL_H
#define L3_EXEC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_executor.h"

enum { KIND_QUERY, KIND_GET, KIND_PUT, NUM_KINDS };

/* A job as the workers run it: object keys and, for a get or put, this
 * rank's Host range per key (has_range false where another rank owns the
 * block). Freed by the poll that delivers its completion: a worker uses it
 * only before it finishes the job, under the state lock. */
typedef struct job {
    uint64_t op_id;
    int kind;
    size_t num_keys;
    char **keys;
    char *key_arena;
    l3_range *ranges;
    bool *has_range;
    uint64_t num_bytes;
} job;

typedef struct job_state {
    bool used;
    job *job;
    double submitted_at;
    bool started;
    bool cancelled;
    bool completed;
} job_state;

typedef struct counters {
    uint64_t events[L3_NUM_EVENTS];
    uint64_t success_keys, failed_keys, success_bytes;
    double queue_seconds, backend_seconds;
} counters;

enum { EV_ACCEPTED, EV_BACKEND_CALLS, EV_COMPLETED, EV_CANCELLED_QUEUED, EV_CANCELLED_RUNNING,
       EV_REJECTED, EV_UNRETIRED };

/* A FIFO of operation ids with a fixed capacity. */
typedef struct id_ring {
    uint64_t *ids;
    size_t cap, head, len;
} id_ring;

typedef struct worker_arg {
    l3_executor *executor;
    int kind;
} worker_arg;

struct l3_executor {
    l3_store *store;
    l3_host_buffer host; /* the span of every region: batches' ranges are offsets in it */
    l3_host_buffer regions[L3_MAX_REGIONS];
    size_t num_regions;
    l3_host_layout layout;
    char *deployment_id;
    bool has_draft;
    l3_executor_config config;
    l3_clock clock;
    l3_health health;

    pthread_mutex_t mu;
    pthread_cond_t work[NUM_KINDS]; /* per kind: a job was queued, or shutdown began */
    int drive_fd[NUM_KINDS];        /* per kind: its driver's eventfd (driver.h), or -1: it runs on workers */
    atomic_bool driver_asleep[NUM_KINDS]; /* that driver sleeps on its eventfd: a queued job, or shutdown, writes it */
    pthread_cond_t exited;          /* a worker exited, or a driver made its rings ready */
    pthread_cond_t finished;        /* a completion was queued for poll */
    size_t waiters;                 /* threads in l3_executor_wait */
    bool wake_waiters;              /* a finish for them: woken when the lock is released */
    job_state *jobs;                /* max_operations slots */
    size_t num_jobs;
    l3_completion *results; /* a ring of max_operations completions */
    size_t results_head, results_len;
    id_ring queues[NUM_KINDS];
    counters counters[NUM_KINDS];
    _Atomic uint64_t backend_calls[NUM_KINDS]; /* per kind: store calls begun (no lock: run.c) */
    bool stopping;
    bool unsafe_io;
    uint64_t last_submitted;
    size_t running_workers;
    size_t drivers_preparing; /* drivers still making their rings ready: start waits for them */

    pthread_mutex_t prefix_mu;
    char prefix[L3_KEY_PREFIX_LEN + 1];

    pthread_t *threads;
    worker_arg *args;
    size_t num_threads;
    bool closed;
    l3_executor *next_leaked;
};

#endif
