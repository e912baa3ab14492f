/* What the fixture's program uses. */
#ifndef T_H
#define T_H

int t_run(void);

#endif
