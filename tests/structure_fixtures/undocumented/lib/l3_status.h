/* A fixture's public header. */
#ifndef L3_STATUS_H
#define L3_STATUS_H

/* The answer. */
int l3_answer(void);

int l3_question(void);

#endif
