/* The store's higher room. */
#ifndef B_H
#define B_H

#include "a.h"

int b_value(void);

/* Calls `visit` on each value: a callback no table sanctions. */
int b_each(int (*visit)(int value));

#endif
