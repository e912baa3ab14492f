#include "t.h"

#include "a.h"
#include "b.h"

int t_run(void) { return b_value() + a_value(); }
