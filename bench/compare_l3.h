/* l3bench --compare's l3cache cells: a store and its executor on laid-out
 * files (one per directory), put and get rounds through the executor,
 * checksums on or off; the config text every l3cache measurement of
 * --compare opens its store with. */
#ifndef L3_COMPARE_L3_H
#define L3_COMPARE_L3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare_types.h"
#include "l3_config.h"
#include "workload.h"

/* An l3cache store with its executor, kept open from its put round to
 * the get rounds that read it back. */
typedef struct cmp_l3 {
    bool open, verify;
    char file[L3_COMPARE_MAX_DIRS][1000]; /* its file in each directory */
    size_t nfiles;
    l3_config cfg;
    workload w;
    size_t n;
} cmp_l3;

/* The store.flush mode ("interval" or "batch") every store config of
 * this run names (l3bench --compare --flush; "interval", the store's
 * default, unless set). */
void cmp_set_flush(const char *mode);

/* executor.gets and executor.puts of every executor this run starts:
 * "driver" or "workers". */
void cmp_set_modes(const char *gets, const char *puts);

/* A store and executor config: `qd` operations of `keys` keys in flight,
 * with a worker per operation up to the executor's 64; `paths` the store's
 * files as JSON strings, comma separated. */
void cmp_config_text(char *out, size_t len, const char *paths, uint64_t capacity, size_t keys, size_t qd,
                     bool verify, uint64_t max_objects, uint32_t block);

/* A workload phase as a run's result: ok only if every key hit. */
cmp_result cmp_of_phase(const wl_phase *p);

/* A put round: l's store closed, a new one on its laid-out files (the
 * devices settled first), `total` bytes of `size`-byte pages put, `keys`
 * per operation and `qd` in flight; the store stays open for get rounds. */
bool cmp_l3_put_round(cmp_l3 *l, uint64_t total, uint64_t size, size_t keys, size_t qd, cmp_result *put);

/* A get round over what the last put round wrote (every page checked). */
bool cmp_l3_get_round(cmp_l3 *l, cmp_result *get);

/* Close l's store if open and remove its files. */
void cmp_l3_close(cmp_l3 *l);

#endif
