#include "util.h"

int other_half(int x); /* other.c's */

int util_twice(int x) { return x > 100 ? x : 2 * other_half(x); }
