/* l3cache: a token bucket (internal; not installed): docs/admission.md,
 * "The write budget".
 *
 * Tokens (bytes, writes) fill at a rate on the caller's clock up to a
 * depth; a write takes its tokens, or is declined. Under the graceful gate
 * a first sighting also needs the bucket at least half full, so that as
 * the budget tightens what was seen twice is still written. One bucket,
 * written once: the store's write budget (budget.c, in the shared
 * mapping), each shadow's share of it (shadow.c), and the simulators'
 * (bench/admitsim.c, bench/groupsim.c).
 *
 * Pure: each function reads only its arguments (the caller passes its
 * clock and holds whatever guards the bucket). */
#ifndef L3_BUCKET_H
#define L3_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

/* A token bucket (zeroed: never filled). */
typedef struct l3_bucket {
    double tokens;   /* in the bucket */
    uint64_t at;     /* the clock at its last fill */
    uint32_t filled; /* 0: never filled: its first fill fills it */
    uint32_t pad;
} l3_bucket;

/* Fill `b` up to `now` at `rate` tokens a unit of the clock, to at most
 * `depth` tokens. A bucket never filled starts full; a clock behind the
 * last fill (another process's) adds nothing and never moves it back. */
void l3_bucket_fill(l3_bucket *b, double rate, double depth, uint64_t now);

/* Whether `n` tokens are in `b`, a first sighting (`first_sight`) needing
 * the bucket at least half of `depth` (the graceful gate); they are taken
 * when so. */
bool l3_bucket_take(l3_bucket *b, double depth, double n, bool first_sight);

#endif
