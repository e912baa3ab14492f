/* l3cache: the eviction policy's shared state (internal; types only). Its
 * one writer is policy.c (ARCHITECTURE.md, "Who writes the shared state"):
 * the trials of early keeps (objects moved though read only early in
 * their time, policy.h's L3_KEEP_EARLY). */
#ifndef L3_POLICY_STATE_H
#define L3_POLICY_STATE_H

#include <stdint.h>

/* Whether early keeps pay: judged as their slabs are reused again. */
typedef struct l3_early_trial {
    uint64_t judged, read;   /* early keeps whose slab was reused again, and of them those read since
                                they moved (halved as they grow) */
    uint64_t off_until;      /* no early keeps until this object sequence (0: from the start) */
    uint64_t tried, trial_end; /* the trial's early keeps, and the sequence at its last */
    uint32_t on;             /* they pay: they move without a trial */
    uint32_t pad;
} l3_early_trial;

#endif
