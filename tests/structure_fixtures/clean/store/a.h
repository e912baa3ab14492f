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

/* A part of a shared state, written by a.c alone (the map's "Who writes
 * the shared state"); b.c reads it. */
enum { A_OFF = 0, A_ON = 1 };
typedef struct a_part {
    int count, state;
} a_part;
typedef struct a_shared {
    a_part part;
    int other;
} a_shared;

/* Count one in part `p` and switch it on. */
void a_count(a_part *p);

/* Part `p`'s count, read through a const pointer. */
int a_peek(const a_part *p);

int a_value(void);

/* Calls f(x) through a copy of it. */
int a_call(a_fn f, int x);

/* ops->get(key). */
int a_get(const a_ops *ops, int key);

#endif
