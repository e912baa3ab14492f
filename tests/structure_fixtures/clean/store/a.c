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

void a_count(a_part *p)
{
    p->count++;
    p->state = A_ON;
}

int a_peek(const a_part *p) { return p->count; }
