#include "b.h"

#include <string.h>

int b_value(void) { return a_value(); }

int b_use(a_shared *h)
{
    h->part.count = 1; /* a write of a.c's part */
    return 0;
}
