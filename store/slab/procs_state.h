/* l3cache: the process table's shared state (internal; types only). Its
 * one writer is shm.c (ARCHITECTURE.md, "Who writes the shared state"). */
#ifndef L3_PROCS_STATE_H
#define L3_PROCS_STATE_H

#include <pthread.h>
#include <stdint.h>

#define L3_MAX_PROCS 64

/* A process attached to the store. `alive` is a robust mutex its liveness
 * thread holds for as long as it is attached: a trylock that returns
 * EOWNERDEAD proves the process died. What it reserved is the allocator's
 * (l3_proc_account, alloc_state.h). */
typedef struct proc_slot {
    pthread_mutex_t alive;
    uint32_t used;
    int32_t pid;
    uint64_t attached_at;    /* unix seconds */
    uint64_t started;        /* the process's start (/proc's clock ticks after boot; 0: unknown) */
} proc_slot;

#endif
