/* The store's higher room. */
#ifndef B_H
#define B_H

#include "a.h"

int b_value(void);

#endif
