#include "b.h"

#include <string.h>

int b_value(void) { return a_value(); }

int b_use(a_shared *h)
{
    a_part *p = (a_part *)(void *)&h->other;
    p->state = A_ON; /* a state only a.c sets */
    return 0;
}
