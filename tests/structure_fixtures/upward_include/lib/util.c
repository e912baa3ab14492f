#include "util.h"
#include "a.h"

int util_twice(int x) { return 2 * x; }
