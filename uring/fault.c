/* Fault injection (tests): requests that fail, stall, come back short or
 * wait before their submission, decided at their first submission.
 * Nothing here runs unless a fault is installed (l3_io_fault_check in
 * backend.h). */
#include "fault.h"

#include <pthread.h>
#include <unistd.h>

#include "io_internal.h"

void l3_io_engine_set_fault(l3_io_engine *e, const l3_io_fault *fault)
{
    pthread_mutex_lock(&e->fault_mu);
    e->fault = fault ? *fault : (l3_io_fault){ 0 };
    e->fault_seen = e->fault_applied = 0;
    e->fault_rng = (fault && fault->seed ? fault->seed : 0x2545f4914f6cdd1dull) | 1;
    if (fault && fault->kind == L3_FAULT_STALL && e->stall_pipe[0] < 0 && pipe(e->stall_pipe) != 0)
        e->stall_pipe[0] = e->stall_pipe[1] = -1;
    atomic_store(&e->fault_on, fault && fault->kind != L3_FAULT_NONE);
    pthread_mutex_unlock(&e->fault_mu);
}

bool l3_io_engine_fault_on(l3_io_engine *e)
{
    return atomic_load(&e->fault_on);
}

uint64_t l3_io_engine_faults(l3_io_engine *e)
{
    pthread_mutex_lock(&e->fault_mu);
    uint64_t n = e->fault_applied;
    pthread_mutex_unlock(&e->fault_mu);
    return n;
}

l3_fault_kind l3_io_fault_decide(l3_io_engine *e, const l3_io_req *r)
{
    if (r->done || r->retries)
        return L3_FAULT_NONE;
    pthread_mutex_lock(&e->fault_mu);
    l3_io_fault *f = &e->fault;
    l3_fault_kind kind = L3_FAULT_NONE;
    if (f->kind != L3_FAULT_NONE && f->kind != L3_FAULT_WAIT_ERROR && f->ops != 3 && !(f->ops == 1 && r->write) &&
        !(f->ops == 2 && !r->write) && (!f->device || l3_io_dev_of(r->offset) == f->device - 1)) {
        uint64_t n = e->fault_seen++;
        bool hit;
        if (f->permille) {
            e->fault_rng ^= e->fault_rng << 13;
            e->fault_rng ^= e->fault_rng >> 7;
            e->fault_rng ^= e->fault_rng << 17;
            hit = e->fault_rng % 1000 < f->permille;
        } else {
            hit = n >= f->after && (f->count == 0 || n < f->after + f->count);
        }
        if (hit && f->kind == L3_FAULT_STALL && e->kind == L3_ENGINE_IO_URING && e->stall_pipe[0] < 0)
            hit = false;
        if (hit && (f->kind == L3_FAULT_SHORT || f->kind == L3_FAULT_TORN) && r->len <= e->options.alignment)
            hit = false; /* too small to split */
        if (hit && (f->kind == L3_FAULT_TORN || f->kind == L3_FAULT_MISDIRECT) && !r->write)
            hit = false; /* a device's lies about writes */
        if (hit) {
            kind = f->kind;
            e->fault_applied++;
        }
    }
    pthread_mutex_unlock(&e->fault_mu);
    return kind;
}

uint64_t l3_io_fault_delay(l3_io_engine *e)
{
    pthread_mutex_lock(&e->fault_mu);
    uint64_t delay = e->fault.kind == L3_FAULT_DELAY ? e->fault.shift : 0;
    pthread_mutex_unlock(&e->fault_mu);
    return delay;
}

void l3_io_fault_free(l3_io_engine *e)
{
    if (e->stall_pipe[0] >= 0) {
        close(e->stall_pipe[0]);
        close(e->stall_pipe[1]);
    }
    pthread_mutex_destroy(&e->fault_mu);
}

bool l3_io_fault_wait(l3_io_engine *e)
{
    pthread_mutex_lock(&e->fault_mu);
    l3_io_fault *f = &e->fault;
    bool hit = false;
    if (f->kind == L3_FAULT_WAIT_ERROR) {
        uint64_t n = e->fault_seen++;
        hit = n >= f->after && (f->count == 0 || n < f->after + f->count);
        e->fault_applied += hit;
    }
    pthread_mutex_unlock(&e->fault_mu);
    return hit;
}

bool l3_io_engine_meta_fault(l3_io_engine *e, unsigned dev)
{
    if (!atomic_load_explicit(&e->fault_on, memory_order_relaxed))
        return false;
    pthread_mutex_lock(&e->fault_mu);
    l3_io_fault *f = &e->fault;
    bool hit = false;
    if (f->kind == L3_FAULT_EIO && (f->ops == 3 || (f->device && f->ops == 0)) &&
        (!f->device || dev == f->device - 1)) {
        uint64_t n = e->fault_seen++;
        hit = n >= f->after && (f->count == 0 || n < f->after + f->count);
        e->fault_applied += hit;
    }
    pthread_mutex_unlock(&e->fault_mu);
    return hit;
}
