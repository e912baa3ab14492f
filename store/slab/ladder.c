/* The admission ladder and the rule that climbs it (ladder.h). */
#include "ladder.h"

#include <math.h>

const l3_rung l3_ladder[L3_LADDER_LEN] = {
    { 0, 0.25, false, false },        /* nothing at first sight: second sight only */
    { 2, 0.25, false, false },        /* a batch's first two new keys */
    { 8, 0.35, false, false },
    { 16, 0.35, false, false },
    { 32, 0.5, false, false },
    { UINT32_MAX, 1.0, true, false }, /* everything but a partial tail, one list */
    { UINT32_MAX, 1.0, true, true },  /* everything: the object LRU */
};

bool l3_rung_admits(const l3_rung *r, bool seen, uint64_t pos, bool tail, bool full)
{
    return (!tail || r->tail) && (seen || !full || pos < r->depth);
}

void l3_ladder_count(l3_ladder_score *sc, const double hits[L3_LADDER_LEN], uint32_t page_objects)
{
    double weight = page_objects ? (double)page_objects : 1.0;
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        sc->window[k] += hits[k];
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        for (uint32_t j = 0; j < L3_LADDER_LEN; j++)
            sc->spread[k][j] += weight * (hits[k] - hits[j]) * (hits[k] - hits[j]);
}

bool l3_ladder_beats(const l3_ladder_score *sc, uint32_t k, uint32_t cur)
{
    double lead = sc->window[k] - sc->window[cur];
    return k != cur && lead > sc->window[cur] * L3_LADDER_HYSTERESIS &&
           lead > L3_LADDER_CONFIDENCE * sqrt(sc->spread[k][cur]);
}

uint32_t l3_ladder_choose(l3_ladder_score *sc, uint32_t cur)
{
    uint32_t best = cur;
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++)
        if (sc->window[k] > sc->window[best] && l3_ladder_beats(sc, k, cur))
            best = k;
    for (uint32_t k = 0; k < L3_LADDER_LEN; k++) {
        sc->window[k] *= L3_LADDER_MEMORY;
        for (uint32_t j = 0; j < L3_LADDER_LEN; j++)
            sc->spread[k][j] *= L3_LADDER_MEMORY;
    }
    return best;
}

uint64_t l3_ladder_round(uint64_t cap, uint32_t page_objects)
{
    uint64_t floor = (uint64_t)L3_ROUND_PAGES * (page_objects ? page_objects : 1);
    return cap > floor ? cap : floor;
}
