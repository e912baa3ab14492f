/* A token bucket (bucket.h). */
#include "bucket.h"

void l3_bucket_fill(l3_bucket *b, double rate, double depth, uint64_t now)
{
    if (!b->filled) {
        b->tokens = depth; /* a new bucket starts full */
        b->at = now;
        b->filled = 1;
    } else if (now > b->at) {
        b->tokens += (double)(now - b->at) * rate;
        b->at = now; /* (a clock behind never moves it back: no fill twice) */
    }
    if (b->tokens > depth)
        b->tokens = depth;
}

bool l3_bucket_take(l3_bucket *b, double depth, double n, bool first_sight)
{
    if (b->tokens < n || (first_sight && b->tokens < 0.5 * depth))
        return false;
    b->tokens -= n;
    return true;
}
