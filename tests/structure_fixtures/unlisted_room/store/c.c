#include "b.h"

int c_value(void) { return b_value(); }
