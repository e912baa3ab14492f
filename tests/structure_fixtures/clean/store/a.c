#include "a.h"

#include "l3_status.h"
#include "util.h"

int a_value(void) { return util_twice(l3_answer()); }

int a_call(a_fn f, int x)
{
    a_fn g = f;
    return (*g)(x) + (x > 0 ? (*f)(x - 1) : 0);
}

int a_get(const a_ops *ops, int key) { return ops->get(key) + (*ops->get)(key); }
