/* l3cache: completion accounting shared by the I/O backends (internal to
 * the library; not installed): short transfers, retries and the engine's
 * counters. */
#ifndef L3_REQUEST_H
#define L3_REQUEST_H

#include "io_types.h"

/* Apply one completion `res` to `r`; true when it needs resubmitting. */
bool l3_io_complete(l3_io_engine *e, l3_io_req *r, long res);

#endif
