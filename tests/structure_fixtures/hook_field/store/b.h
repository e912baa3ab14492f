/* The store's higher room. */
#ifndef B_H
#define B_H

#include "a.h"

/* A hook: whoever sets it makes b call it, unseen. */
struct b_hooks {
    int size;
    void (*grow)(int n);
};

int b_value(void);

#endif
