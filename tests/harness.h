/* Test helpers shared by the executor suites: a one-shot latch, a fake
 * clock, a scriptable test store over a memory store, and a harness that
 * runs an executor over its own Host pool. */
#ifndef L3_TEST_HARNESS_H
#define L3_TEST_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_executor.h"
#include "l3_memstore.h"

/* A one-shot latch (threading.Event). */
typedef struct event {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool set;
} event;

event *event_new(void);
void event_set(event *ev);
/* Wait up to `timeout` seconds; true once set. */
bool event_wait(event *ev, double timeout);

/* A clock the test moves by hand. */
typedef struct fake_clock {
    pthread_mutex_t mu;
    double now;
} fake_clock;

fake_clock *fake_clock_new(double now);
void fake_clock_set(fake_clock *c, double now);
l3_clock fake_clock_of(fake_clock *c);

typedef l3_status (*exists_fn)(void *ctx, const char *const *keys, size_t n, bool *flags,
                               l3_error *err);
typedef l3_status (*io_fn)(void *ctx, const char *const *keys, size_t n, l3_host_buffer host,
                           const l3_range *ranges, l3_io_result *r, l3_error *err);

#define MAX_CALLS 64
/* A memory store whose calls a test may replace, recording the gets and
 * puts it runs (with their keys) and how often it is closed. */
typedef struct test_store {
    l3_store base;
    l3_memstore *memory; /* shared or own */
    bool own_memory;
    exists_fn exists;
    io_fn get;
    io_fn put;
    void *ctx;
    bool remove_fails;
    bool failures_retire;
    pthread_mutex_t calls_mu;
    size_t num_calls;
    const char *call_kind[MAX_CALLS];
    size_t call_num_keys[MAX_CALLS];
    char *call_keys[MAX_CALLS][8];
    atomic_int closes;
} test_store;

/* A test store over `memory` (NULL: its own new memory store). */
test_store *test_store_new(l3_memstore *memory);
size_t test_store_calls(test_store *s);

/* The executor CONFIG of the reference tests. */
extern const l3_executor_config CONFIG;

/* Group 0 has 8-byte blocks, group 1 16-byte ones, one each per LCM block;
 * with `shard_count` owners of group 0, this is owner `owner_rank`. */
l3_host_layout test_layout(uint32_t shard_count, uint32_t owner_rank, uint32_t tp_rank);

/* One group of `blocks` pages of `page` bytes, one owner. */
l3_host_layout page_layout(uint32_t page, uint32_t blocks);

/* An executor over its own Host pool. */
typedef struct harness {
    l3_executor *executor;
    uint8_t *pool;
    size_t pool_len;
    test_store *store;
    l3_completion *got; /* completions the last wait returned */
    size_t num_got;
    l3_poll polls[512];
    size_t num_polls;
    bool leaked;
} harness;

harness *harness_start(test_store *store, l3_executor_config config, l3_host_layout layout,
                       l3_clock clock);
/* An executor over any store (it takes the store; see borrowed_store). */
harness *harness_start_raw(l3_store *store, l3_executor_config config, l3_host_layout layout,
                           l3_clock clock);
/* A store that forwards to `inner` but never closes or frees it, so that
 * several executors can share one store the test owns. */
l3_store *borrowed_store(l3_store *inner);
harness *harness_new(test_store *store, l3_executor_config config);
/* The next `count` completions, within three seconds (asserts). */
l3_completion *harness_wait(harness *h, size_t count);
/* Close the executor; on L3_EUNRETIRED the pool, store and executor are
 * kept alive for the rest of the process. */
l3_status harness_close(harness *h, double timeout);
/* Close (2 s) unless done, and free what can be freed. */
void harness_free(harness *h);

l3_storage_key key(const char *hash);
l3_operation query(uint64_t op_id, const l3_storage_key *keys, size_t n);
l3_operation get_op(uint64_t op_id, const l3_storage_key *k, const int32_t *block);
l3_operation put_op(uint64_t op_id, const l3_storage_key *k, const int32_t *block);
l3_operation cancel_op(uint64_t op_id);

/* Test shorthands: submit a list of operations (asserting L3_OK), and
 * one-key gets and puts of group 0 on block b, their key and block kept
 * alive for the statement. */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SUBMIT(h, ...)                                                                             \
    do {                                                                                           \
        const l3_operation ops_[] = { __VA_ARGS__ };                                               \
        submit_ok((h), ops_, ARRAY_LEN(ops_));                                                     \
    } while (0)
#define GET(id, hash, b) get_op((id), &(l3_storage_key){ 0, (hash), 0 }, &(int32_t){ (b) })
#define PUT(id, hash, b) put_op((id), &(l3_storage_key){ 0, (hash), 0 }, &(int32_t){ (b) })

/* Submit and assert L3_OK. */
void submit_ok(harness *h, const l3_operation *ops, size_t n);

/* Silence the library's log lines unless $L3_TEST_VERBOSE is set (tests
 * provoke errors on purpose). */
void quiet_logs(void);

/* Keep `p` reachable for the rest of the process (a deliberate leak). */
void keep_alive(void *p);

/* Object key of (hash, group 0, offset 0, rank 0) under deployment/version. */
void ref_key(const char *version, const char *hash, char *out, size_t size);

/* Environment-dependent cases (root, loop devices, transparent huge
 * pages). One that cannot run here calls skip_environment: it says why on
 * stderr and skips the case (cmocka's skip(): it does not return). Each
 * such case is its own ctest entry (l3_environment_test in
 * tests/CMakeLists.txt), which runs its binary with the case's name:
 * main() hands it to run_environment_case, which runs that case alone and
 * returns 77 when it was skipped so, ctest's SKIP_RETURN_CODE: the entry
 * shows as skipped, not passed. Without an argument a binary runs its
 * other cases. */
void skip_environment(const char *why);
struct CMUnitTest;
int run_environment_case(const char *group, const struct CMUnitTest *cases, size_t n, const char *name);

#endif
