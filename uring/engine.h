/* l3cache: the I/O engine (internal to the library; not installed).
 *
 * An engine owns a pool of I/O contexts (one io_uring ring, or one libaio
 * context, each) over O_DIRECT file descriptors (one per device). A thread
 * acquires a context, runs a batch of requests on it to completion (or to
 * the timeout), whole (l3_io_run) or looking at each request as it
 * finishes (l3_io_start, l3_io_wait_some, l3_io_finish), and releases it.
 * io_uring contexts register the files and, per context, the Host regions
 * (each split into <= 1 GiB iovecs) and a bounce buffer as fixed buffers,
 * so that requests inside them go as READ_FIXED / WRITE_FIXED: the kernel
 * DMAs straight between the device and the pool. A request's buffer is
 * found among the regions by its address.
 *
 * The engine's types are in io_types.h, its fault injection in fault.h and
 * the device model of power-cut tests in power.h (all included here: a user of the engine includes this header alone). */
#ifndef L3_ENGINE_H
#define L3_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"
#include "io_types.h"
#include "l3_status.h"
#include "power.h"

/* Build an engine over `nfds` descriptors (opened O_DIRECT; a request's
 * offset names which, l3_io_offset). Each context's ring takes `depth`
 * requests per device. With kind auto, a failed io_uring setup
 * (io_uring_disabled, seccomp, ENOSYS) falls back to libaio and logs why. */
l3_status l3_io_engine_open(const l3_io_options *options, const int *fds, unsigned nfds,
                            l3_io_engine **out, l3_error *err);

/* What this engine moved on device `dev` so far: requests that failed,
 * bytes read and written. */
void l3_io_engine_dev_stats(l3_io_engine *engine, unsigned dev, uint64_t *errors, uint64_t *bytes_read,
                            uint64_t *bytes_written);

/* The engine actually in use: L3_ENGINE_IO_URING or L3_ENGINE_LIBAIO. */
l3_engine_kind l3_io_engine_kind(const l3_io_engine *engine);

/* The engine's counters. */
l3_io_stats *l3_io_engine_stats(l3_io_engine *engine);

/* Whether some batch was not reaped in time: the engine refuses all I/O
 * from then on, and memory it was given may still be written. */
bool l3_io_engine_broken(l3_io_engine *engine);

/* Register the Host regions (n of them, at most L3_IO_MAX_REGIONS; 0
 * unregisters all), replacing the ones before: io_uring contexts register
 * them (with their bounce buffer) as fixed buffers the next time they are
 * used. The caller keeps them mapped until it replaces them. A refused
 * registration (e.g. ENOMEM under RLIMIT_MEMLOCK) is logged once and the
 * regions are then used unregistered, still with O_DIRECT into them. */
void l3_io_engine_set_hosts(l3_io_engine *engine, const l3_io_region *regions, size_t n);

/* Whether Host regions are registered and no context's registration of
 * them was refused. */
bool l3_io_engine_host_fixed(l3_io_engine *engine);

/* Take a context for this thread's batch, waiting while all are in use. */
l3_io_ctx *l3_io_acquire(l3_io_engine *engine);

/* l3_io_acquire for a thread that sleeps on eventfd `notify_fd`: a free
 * context already signalling it is preferred (then l3_io_set_notify). */
l3_io_ctx *l3_io_acquire_for(l3_io_engine *engine, int notify_fd);

/* l3_io_acquire, waiting `seconds` at most: NULL when none was freed. */
l3_io_ctx *l3_io_acquire_within(l3_io_engine *engine, double seconds);

/* A context for a thread that drives batches and sleeps on eventfd
 * `notify_fd` (-1: l3_io_try_acquire), without waiting; NULL when none is
 * free. On io_uring with DEFER_TASKRUN it is one the calling thread owns
 * (made at its first need, up to L3_IO_MAX_OWNED in all), signalling
 * `notify_fd`: its ring is that thread's alone, and its batches must be
 * started, polled and finished there. Its completions are posted only
 * when the thread polls, and signal `notify_fd` once for all those that
 * came in since it last polled; a thread that sleeps in l3_io_wait_owned
 * is woken once for many. Otherwise the pool's (l3_io_set_notify). */
l3_io_ctx *l3_io_try_acquire_for(l3_io_engine *engine, int notify_fd);

/* Make `n` contexts of the calling thread's own for `notify_fd` ready (as
 * l3_io_try_acquire_for would make them, with the Host regions registered
 * now), so that its first batches do not pay for them; nothing on libaio
 * or without DEFER_TASKRUN. */
void l3_io_own(l3_io_engine *engine, int notify_fd, size_t n);

/* Sleep, as a driving thread between rounds, on one of its own contexts
 * for `notify_fd` with requests in flight: the one whose batch should first
 * have half of them finished (all, after l3_io_set_wake_all), by the bytes
 * that takes; until they have, `notify_fd` is written, or `until`
 * (monotonic seconds; 0: none) passes: at most L3_IO_OTHERS_WAIT seconds
 * while its other contexts have I/O in flight too, whose completions it
 * does not count. At once when some have finished already, or when
 * `notify_fd` was written since the last sleep. From its first call the
 * thread's own contexts no longer signal `notify_fd`. False at once when
 * none has I/O in flight: the thread then sleeps on `notify_fd`. */
bool l3_io_wait_owned(l3_io_engine *engine, int notify_fd, double until);
#define L3_IO_OTHERS_WAIT 0.05

/* l3_io_wait_owned waits for all of the context's batch in flight, not
 * half (a batch whose caller can do nothing before its end), until the
 * context is released. */
void l3_io_set_wake_all(l3_io_ctx *ctx);

/* Take a free context without waiting, or NULL when all are in use. */
l3_io_ctx *l3_io_try_acquire(l3_io_engine *engine);

/* Give a context back (its batch, if any, ended). */
void l3_io_release(l3_io_engine *engine, l3_io_ctx *ctx);

/* The context's bounce buffer (aligned, registered where possible). */
void *l3_io_bounce(l3_io_ctx *ctx, size_t *len);

/* A batch of requests on a context, in three calls: l3_io_start submits
 * it, l3_io_wait_some reports each request once it has finished (while
 * the others may still be in flight), l3_io_finish ends it. Within a
 * batch short transfers are resubmitted for the rest, -EAGAIN/-EINTR
 * retried (bounded), a zero-byte read is -EIO; each req->res says how a
 * finished request ended (len, or -errno). A context runs one batch at a
 * time, and a batch must be finished before its context is released. Its
 * outcome, which each call returns once the batch has ended: L3_OK once
 * every request finished (check each res), L3_ETIMEDOUT with *retired
 * false when some were not reaped within `timeout` seconds of the start
 * (the engine is then broken), L3_ECLOSED on a broken engine (nothing
 * submitted, *retired true); any other error leaves *retired true only
 * when nothing is still in flight. Fault injection (fault.h) applies as
 * each request is first submitted. */

/* Start a batch of `n` requests (reset, then submitted as far as the
 * context's depth takes them; `reqs` must stay put until the batch ends).
 * Returns L3_OK with the batch under way, or the error that ended it at
 * once (its outcome). */
l3_status l3_io_start(l3_io_engine *engine, l3_io_ctx *ctx, l3_io_req *reqs, size_t n, double timeout,
                      bool *retired, l3_error *err);

/* Wait until some of the batch's requests have finished (success or
 * failure, in their res) and put the indexes (into `reqs`) of up to `max`
 * (at least 1) finished since the last call into done[0..*ndone), each
 * request exactly once over the batch, in the order they finished. Before
 * returning it submits what they left to resubmit, so the device works
 * while the caller looks at them. Returns L3_OK with *ndone > 0 while
 * the batch goes on; *ndone 0 once it has ended, with its outcome (L3_OK:
 * every request was reported; an error: the batch failed, whatever was
 * reported before it). */
l3_status l3_io_wait_some(l3_io_engine *engine, l3_io_ctx *ctx, size_t *done, size_t max, size_t *ndone,
                          bool *retired, l3_error *err);

/* l3_io_wait_some without sleeping, for a thread that drives several
 * batches: it submits what waits, takes what has finished (up to `max`
 * into done[0..*ndone), possibly none) and judges the deadline. Returns
 * the batch's outcome as l3_io_wait_some does; whether the batch goes on
 * is l3_io_batch_open. A thread that sleeps between polls sleeps in
 * l3_io_wait_owned, or on the context's eventfd (l3_io_set_notify), until
 * l3_io_wake_by at the latest. An io_uring context's completions reach
 * the thread that submitted its requests: poll a batch from the thread
 * that started it. */
l3_status l3_io_poll_some(l3_io_engine *engine, l3_io_ctx *ctx, size_t *done, size_t max, size_t *ndone,
                          bool *retired, l3_error *err);

/* Keep at most `window` requests of the context's batches in flight
 * from its next submission on (a poll, a wait): a writer beside reads
 * keeps few in the device's queue, or (0) sends no more for a while, and
 * more again once they end. Only a thread that polls (l3_io_poll_some)
 * holds a batch at 0: a wait on a held batch with nothing in flight
 * fails it as timed out. The context's release lets it take its depth
 * again. */
void l3_io_set_window(l3_io_ctx *ctx, size_t window);

/* Whether the context's batch has not yet ended. */
bool l3_io_batch_open(const l3_io_ctx *ctx);

/* When the open batch must be polled again at the latest (monotonic
 * seconds): a held-back request's time, else its deadline; 0 once ended. */
double l3_io_wake_by(const l3_io_ctx *ctx);

/* Have the context signal eventfd `fd` on every completion from its next
 * submission on (-1: none). The context keeps it until it is set again.
 * An owned context (l3_io_try_acquire_for) signals its owner's from its
 * making: nothing to do. */
l3_status l3_io_set_notify(l3_io_engine *engine, l3_io_ctx *ctx, int fd, l3_error *err);

/* No free context signals eventfd `fd` any more (its thread is done with
 * it: the descriptor may be closed and its number reused); the calling
 * thread's own contexts for it are freed (call it from that thread). */
void l3_io_forget_notify(l3_io_engine *engine, int fd);

/* End the batch: wait for the rest of its requests without reporting
 * them, and return its outcome (at once for a batch that has ended). */
l3_status l3_io_finish(l3_io_engine *engine, l3_io_ctx *ctx, bool *retired, l3_error *err);

/* Run `n` requests to completion: l3_io_start, then l3_io_finish. Returns
 * the batch's outcome. */
l3_status l3_io_run(l3_io_engine *engine, l3_io_ctx *ctx, l3_io_req *reqs, size_t n,
                    double timeout, bool *retired, l3_error *err);

/* Free the engine; every context must be released. */
void l3_io_engine_close(l3_io_engine *engine);

#endif
