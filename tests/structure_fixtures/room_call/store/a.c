#include "a.h"

#include "l3_status.h"
#include "util.h"

int b_value(void); /* the later room's, declared here: no include shows it */

int a_value(void) { return util_twice(l3_answer()); }

int a_more(void) { return b_value(); }
