#include "t.h"

#include "b.h"

int w_helper(void); /* bench's */

int t_run(void) { return b_value() + w_helper(); }
