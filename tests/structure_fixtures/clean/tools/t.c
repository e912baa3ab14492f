#include "t.h"

#include "b.h"

int t_run(void) { return b_value(); }
