#include "a.h"

#include "b.h"
#include "l3_status.h"
#include "util.h"

int a_value(void) { return util_twice(l3_answer()); }
