/* l3cache: the slab store's admission (internal; not installed):
 * docs/admission.md.
 *
 * Whether a put writes an absent key at all, and into which log: keys
 * seen before (in the ghost of recent sightings) go to main, keys seen
 * for the first time go to probation if the rung in force admits them (a
 * store with free room admits every one; a full one only a put batch's
 * first `depth` pages), and a refused key refuses the rest of its
 * batch (nothing after it could be a prefix hit). In adaptive mode seven
 * shadow caches replay the sampled keys of every exists call under the
 * seven rungs, and every round the store takes the rung that hit most.
 *
 * All of it is soft state in the shared mapping (l3_admit_state and its
 * areas): every process decides alike. The exists and put paths call in;
 * the policy asks which rung is in force. */
#ifndef L3_ADMIT_H
#define L3_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l3_store.h"
#include "slab.h"

/* Set up a fresh mapping's admission state `a` (zeroed before): its lock,
 * mode `mode` (l3_admission) at rung `rung`. This room is its one writer. */
void l3_admit_format(l3_admit_state *a, uint32_t mode, uint32_t rung);

/* A put key's verdict. */
enum { L3_VERDICT_REFUSED = 0, L3_VERDICT_PROBATION = 1, L3_VERDICT_MAIN = 2 };

/* The write budget's clock in nanoseconds: the options' budget_clock
 * (a replay's trace time, a test's) or CLOCK_MONOTONIC. */
uint64_t l3_admit_budget_clock(const l3_slabstore *s);

/* The rung in force (l3_ladder). */
const l3_rung *l3_admit_rung(const l3_slabstore *s);

/* Whether the store admits by rung at all (not L3_ADMISSION_ALL). */
bool l3_admit_active(const l3_slabstore *s);

/* An exists call named `n` keys, `found[i]` present: their sightings are
 * counted, the shadows replay the sampled ones (adaptive mode), the
 * present ones go into the ghost (the absent ones when they are put), and
 * generations and rung choices fall due by the count. Takes the
 * admission lock; call it without the store's. */
void l3_admit_exists(l3_slabstore *s, const l3_key_id *ids, const bool *found, size_t n);

/* The verdict on an absent key of a put (under the store's lock): the key
 * whose hash is `hash`, of its batch's page `page` (its keys' place, or
 * with groups its distinct groups'), `tail` of its batch's partial last
 * page, `taken` of a batch of use only whole that admission has begun to
 * take (the depth and first sight do not refuse it); *first_sight says it
 * was not in the ghost (always false under L3_ADMISSION_ALL, which keeps
 * no ghost). */
int l3_admit_decide(l3_slabstore *s, uint64_t hash, uint64_t page, bool tail, bool taken, bool *first_sight);

/* Whether the ghost holds the key whose hash is `hash` (seen within its
 * generations; false under L3_ADMISSION_ALL, which keeps no ghost). */
bool l3_admit_seen(const l3_slabstore *s, uint64_t hash);

/* A put named these keys (after its verdicts): into the ghost, counted
 * as sightings in a generation without exists calls; `slot_bytes` of one
 * of its slots feeds the capacity's estimate; its hints (or NULL) say
 * whether its last key was a partial page and how many objects a page's
 * group has (the generations and rounds count pages). Without the
 * store's lock. */
void l3_admit_put_seen(l3_slabstore *s, const l3_key_id *ids, size_t n, uint64_t slot_bytes,
                       const l3_put_hints *hints);

/* The store evicted objects to make room: from now on a first sighting
 * needs the rung's depth. */
void l3_admit_note_full(l3_slabstore *s);

/* The name of an admission mode ("all", "rung", "adaptive"). */
const char *l3_admission_name(uint32_t mode);

#endif
