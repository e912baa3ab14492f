/* l3cache: admission's shared state (internal; types only). Its one writer
 * is admit.c (ARCHITECTURE.md, "Who writes the shared state"); the ghost's
 * and the group table's heads are parts of their own (ghost.c's and
 * groups.c's, through their views). Soft: built empty with the mapping (a restart
 * starts on the mode's first rung and warms in a round). */
#ifndef L3_ADMIT_STATE_H
#define L3_ADMIT_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ladder.h"

typedef struct l3_admit_state {
    pthread_mutex_t mu;           /* the shadows, the generations and the rung's choice */
    uint32_t mode;                /* l3_admission of the process that built the mapping */
    _Atomic uint32_t rung;        /* the ladder's rung in force */
    _Atomic uint32_t full;        /* the store had to evict: a first sighting needs the rung's depth */
    _Atomic uint32_t tails;       /* a put said its last key is a partial page */
    _Atomic uint32_t exists_seen; /* an exists call came in this generation */
    uint32_t switches;            /* rung changes so far */
    _Atomic uint32_t page_objects; /* objects of a page's group, as puts last said (0: unknown, one) */
    _Atomic uint64_t sightings;   /* keys named by exists calls (by puts, in a generation without one) */
    uint64_t gen_end, round_end;  /* the sightings at which the generation ends, and the round (the next
                                     rung choice) */
    _Atomic uint64_t cap;         /* capacity in objects the shadows are sized for (0: not yet); written
                                     under the admission lock, read without it by puts and exists */
    uint64_t sample_below;        /* a key whose mixed hash is below it is the shadows' */
    _Atomic uint64_t slot_bytes;  /* recent puts' mean slot bytes (the capacity's estimate) */
    /* Each rung's shadow's hits over exists calls and the noise of their
     * differences, decayed every round: what the rung's choice reads
     * (ladder.h). */
    l3_ladder_score score;
} l3_admit_state;

#endif
