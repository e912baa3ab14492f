#include "util.h"

int util_twice(int x) { return 2 * x; }
