/* The write budget: a token bucket of bytes (budget.h). */
#include "budget.h"

/* The bucket's depth: 10 s of the budget. */
#define DEPTH_S 10

bool l3_budget_take(l3_budget *b, uint64_t rate, uint64_t now_ns, uint64_t bytes, bool first_sight)
{
    if (!rate)
        return true;
    double depth = (double)rate * DEPTH_S;
    l3_bucket_fill(&b->bytes, (double)rate * 1e-9, depth, now_ns);
    return l3_bucket_take(&b->bytes, depth, (double)bytes, first_sight);
}
