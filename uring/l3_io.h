/* l3cache: the I/O engines' public names: which engine a store uses.
 *
 * The engines themselves (io_uring with fixed buffers and a registered
 * file, and libaio as the fallback) are internal to the library; see
 * uring/engine.h. */
#ifndef L3_IO_H
#define L3_IO_H

#include <stdbool.h>
#include <stdint.h>

typedef enum l3_engine_kind { L3_ENGINE_AUTO, L3_ENGINE_IO_URING, L3_ENGINE_LIBAIO } l3_engine_kind;

/* "io_uring", "libaio" or "auto". */
const char *l3_engine_name(l3_engine_kind kind);

/* Parse "auto", "io_uring" or "libaio"; false for anything else. */
bool l3_engine_parse(const char *text, l3_engine_kind *kind);

#endif
