/* The store's lower room. */
#ifndef A_H
#define A_H

/* A table of operations SANCTIONED (lists.json): a dispatch table, not a hook. */
typedef struct a_ops {
    int (*get)(int key);
} a_ops;

/* A callback type SANCTIONED too; a variable of its type and a call
 * through it are no declarations of a new function pointer. */
typedef int (*a_fn)(int x);

int a_value(void);

/* Calls f(x) through a copy of it. */
int a_call(a_fn f, int x);

/* ops->get(key). */
int a_get(const a_ops *ops, int key);

#endif
