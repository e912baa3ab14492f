#include "b.h"

#include <string.h>

int b_value(void) { return a_value(); }

int b_use(a_shared *h)
{
    int *count = &h->part.count; /* a pointer not to const into a.c's part */
    *count += 1;
    return 0;
}
