/* l3cache: the admission ladder's shadow caches (internal; not
 * installed): docs/admission.md, "The shadows and the adaptation".
 *
 * A rung of the ladder (ladder.h) says how many of a put batch's
 * first-seen pages are written and what share of the capacity keys
 * written at first sight may hold before they are read (probation). A
 * shadow is a small cache of key fingerprints (no data) that replays the
 * store's requests under one rung: a probation and a main list, evicting
 * probation's oldest while probation holds its share, else main's oldest.
 * Seven of them, one per rung, over a hash-sampled subset of the keys,
 * measure which rung would have hit most; the store takes the rung the
 * ladder's rule chooses from their hits (admit.c). The simulator's
 * shadows are these (bench/admitsim.c), sized and budgeted alike.
 *
 * Pure: a shadow is plain data (indices, no pointers), so it lives in the
 * shared mapping; the caller holds the lock that guards it. */
#ifndef L3_SHADOW_H
#define L3_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "ladder.h"

#define L3_SHADOW_ENTRIES 4096u
#define L3_SHADOW_SLOTS 8192u /* its fingerprint table (open addressing, half full at most) */

typedef struct l3_shadow_entry {
    uint64_t fp;     /* the key's fingerprint (never 0) */
    uint16_t prev, next;
    uint8_t where;   /* 0 free, 1 probation, 2 main */
    uint8_t pad[3];
} l3_shadow_entry;

/* A shadow cache. Entries are numbered from 1 (0: none). */
typedef struct l3_shadow {
    uint32_t cap;    /* entries it may hold, 1..L3_SHADOW_ENTRIES */
    uint32_t rung;   /* its rung of l3_ladder */
    uint32_t size[2]; /* entries in probation, main */
    uint16_t head[2], tail[2]; /* most and least recent of probation, main */
    uint16_t free;   /* free entries, through next */
    uint16_t pad[3];
    uint64_t hits, written;
    l3_bucket bucket; /* its share of the write budget: writes it may make now (bucket.h) */
    double per_ns;   /* writes the budget adds a nanosecond (0: no budget) */
    uint32_t graceful; /* under a budget, a first sighting needs the bucket half full (the store's rule) */
    uint32_t pad2;
    l3_shadow_entry e[L3_SHADOW_ENTRIES + 1];
    uint16_t slot[L3_SHADOW_SLOTS];
} l3_shadow;

/* The shadows' size for a store of `cap` objects (at least 1): keys are
 * sampled at min(1, L3_SHADOW_ENTRIES / cap), a key whose mixed hash is
 * under *sample_below, and each shadow holds round(cap x that rate)
 * entries (returned, at least 1). */
uint32_t l3_shadow_size(uint64_t cap, uint64_t *sample_below);

/* A shadow's share of a write budget of `writes_per_s` writes a second,
 * in writes a nanosecond: the budget times `share`, its sampling rate
 * (its entries over the store's capacity in objects). */
double l3_shadow_rate(double writes_per_s, double share);

/* Empty `c` as a cache of `cap` entries under rung `rung`. */
void l3_shadow_init(l3_shadow *c, uint32_t cap, uint32_t rung);

/* One request as the shadow sees it: `m` sampled keys (fingerprints
 * `fps`, in chain order) at places `pos` of a request of `n` keys,
 * `seen[j]` whether key j was in the ghost before the request, `tails`
 * whether the request's last key is a partial page. Counts and returns
 * its hits (the run of present keys from its first), then admits the
 * rest by its rung, positions counted from the first missing key, until
 * one is refused. */
size_t l3_shadow_request(l3_shadow *c, const uint64_t *fps, const uint32_t *pos, const bool *seen, size_t m,
                         size_t n, bool tails);

/* Move c's write budget to the clock's `now_ns` (never back), refilling
 * at `per_ns` writes a nanosecond into a bucket of 10 s of it, at least 8
 * writes (`per_ns` 0: no budget; a new budget starts full). Under a budget
 * a write needs a token and, `graceful` (the store's rule; the simulator
 * may price a cache without it), a first sighting a bucket at least half
 * full. */
void l3_shadow_budget(l3_shadow *c, double per_ns, uint64_t now_ns, bool graceful);

/* Whether `fp` is in the shadow (for tests). */
bool l3_shadow_has(const l3_shadow *c, uint64_t fp);

#endif
