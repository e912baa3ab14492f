/* An internal helper. */
#ifndef UTIL_H
#define UTIL_H

typedef int util_step(int x); /* a function type: pointers to it are hooks too */

int util_twice(int x);

#endif
