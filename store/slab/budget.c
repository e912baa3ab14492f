/* The write budget: a token bucket of bytes (budget.h). */
#include "budget.h"

bool l3_budget_take(l3_budget *b, uint64_t rate, uint64_t now_ns, uint64_t bytes, bool first_sight)
{
    if (!rate)
        return true;
    uint64_t cap = rate * 10;
    if (b->refill_ns == 0) {
        b->bytes = cap; /* a new store starts with a full bucket */
        b->refill_ns = now_ns;
    } else if (now_ns > b->refill_ns) {
        double add = (double)(now_ns - b->refill_ns) * 1e-9 * (double)rate;
        b->bytes = add >= (double)(cap - b->bytes) ? cap : b->bytes + (uint64_t)add;
        b->refill_ns = now_ns; /* (a process whose clock is behind never moves it back: no refill twice) */
    }
    if (b->bytes < bytes || (first_sight && b->bytes < cap / 2))
        return false;
    b->bytes -= bytes;
    return true;
}
