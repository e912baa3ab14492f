/* l3bench --compare's mixed phase: gets timed alone, then the same gets
 * while a put stream runs at full speed on the same store (reads are on
 * the time-to-first-token path, puts are background backups). */
#ifndef L3_MIXED_H
#define L3_MIXED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct l3_mixed_result {
    uint64_t page;                   /* bytes per page */
    size_t rounds;
    double alone_gbs, alone_p99_ms;  /* medians over rounds */
    double mixed_gbs, mixed_p99_ms;
    double put_gbs;                  /* the stream's, while the gets ran */
    double p99_ratio, gbs_ratio;     /* medians of the per-round ratios */
    bool ok;
} l3_mixed_result;

/* The most rounds l3_mixed_run takes. */
#define L3_MIXED_MAX_ROUNDS 16

/* Run `rounds` (1 to L3_MIXED_MAX_ROUNDS) pairs (alone, under the
 * stream) of gets of `total` bytes of `page`-byte pages in a store file
 * under `dir`, `keys` keys per operation and `qd` in flight for each
 * side. */
bool l3_mixed_run(const char *dir, uint64_t total, uint64_t page, size_t keys, size_t qd, size_t rounds,
                  l3_mixed_result *out);

#endif
