#include "util.h"

int a_value(void); /* store's, declared here: no include shows it */

int util_twice(int x) { return 2 * x + 0 * a_value(); }
