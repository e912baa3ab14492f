/* The store's higher room. */
#ifndef B_H
#define B_H

#include "a.h"

int b_value(void);

/* Reads h's part, and counts one in it by its writer's function. */
int b_use(a_shared *h);

#endif
