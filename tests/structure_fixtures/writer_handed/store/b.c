#include "b.h"

#include <string.h>

int b_value(void) { return a_value(); }

int b_use(a_shared *h)
{
    memset(&h->part, 0, sizeof h->part); /* handed to another's function */
    h->part.count++;
    return 0;
}
