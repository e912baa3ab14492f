/* The simulators' intrusive doubly linked lists over dense ids: one pair
 * of prev/next arrays shared by every list of a cache (an id is on at most
 * one list at a time), the most recent at the head. */
#ifndef L3_SIMLIST_H
#define L3_SIMLIST_H

#include <stdint.h>

#define SL_NIL UINT32_MAX

typedef struct sl_links {
    uint32_t *prev, *next;
} sl_links;

typedef struct sl_list {
    uint32_t head, tail, size;
} sl_list;

static inline sl_list sl_empty(void) { return (sl_list){ SL_NIL, SL_NIL, 0 }; }

static inline void sl_unlink(sl_links *k, sl_list *l, uint32_t x)
{
    if (k->prev[x] != SL_NIL)
        k->next[k->prev[x]] = k->next[x];
    else
        l->head = k->next[x];
    if (k->next[x] != SL_NIL)
        k->prev[k->next[x]] = k->prev[x];
    else
        l->tail = k->prev[x];
    l->size--;
}

/* Put `x` at the head (most recent). */
static inline void sl_push(sl_links *k, sl_list *l, uint32_t x)
{
    k->prev[x] = SL_NIL;
    k->next[x] = l->head;
    if (l->head != SL_NIL)
        k->prev[l->head] = x;
    l->head = x;
    if (l->tail == SL_NIL)
        l->tail = x;
    l->size++;
}

/* Take the tail off (the least recent); SL_NIL when empty. */
static inline uint32_t sl_pop_tail(sl_links *k, sl_list *l)
{
    uint32_t x = l->tail;
    if (x != SL_NIL)
        sl_unlink(k, l, x);
    return x;
}

#endif
