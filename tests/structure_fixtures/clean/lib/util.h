/* An internal helper. */
#ifndef UTIL_H
#define UTIL_H

int util_twice(int x);

#endif
