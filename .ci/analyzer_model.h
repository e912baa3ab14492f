/* Included before every file clang-tidy analyses (.ci/run), never built.
 *
 * What the static analyser cannot see across files: l3_fail (lib/status.c)
 * returns the code it is given, never L3_OK. Without this the analyser
 * follows `st = ok ? L3_OK : l3_fail(err, L3_ENOMEM, ...)` on with st ==
 * L3_OK and reports the NULL it then dereferences. The call itself is kept
 * (its format is still checked); `code` is evaluated once. */
#include "l3_status.h"

#define l3_fail(err, code, ...)                                   \
    __extension__({                                               \
        l3_status l3_model_code_ = (code);                        \
        (void)(l3_fail)((err), l3_model_code_, __VA_ARGS__);      \
        l3_model_code_;                                           \
    })
