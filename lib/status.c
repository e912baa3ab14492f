#include "l3_status.h"
#include "invariant.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *l3_status_name(l3_status code)
{
    switch (code) {
    case L3_OK: return "L3_OK";
    case L3_EINVAL: return "L3_EINVAL";
    case L3_ELAYOUT: return "L3_ELAYOUT";
    case L3_ECREDITS: return "L3_ECREDITS";
    case L3_EBUSY: return "L3_EBUSY";
    case L3_EUNRETIRED: return "L3_EUNRETIRED";
    case L3_ENOMEM: return "L3_ENOMEM";
    case L3_EIO: return "L3_EIO";
    case L3_ENOSPC: return "L3_ENOSPC";
    case L3_ECORRUPT: return "L3_ECORRUPT";
    case L3_ECONFIG: return "L3_ECONFIG";
    case L3_ENOTFOUND: return "L3_ENOTFOUND";
    case L3_ECLOSED: return "L3_ECLOSED";
    case L3_EUNSUPPORTED: return "L3_EUNSUPPORTED";
    case L3_ETIMEDOUT: return "L3_ETIMEDOUT";
    case L3_EPERM: return "L3_EPERM";
    }
    return "L3_UNKNOWN";
}

/* (The name in parentheses: .ci/analyzer_model.h makes l3_fail a macro for
 * the static analyser, which must not expand here.) */
l3_status (l3_fail)(l3_error *err, l3_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void l3_error_clear(l3_error *err)
{
    if (err) {
        err->code = L3_OK;
        err->msg[0] = '\0';
    }
}

static void default_log(const char *level, const char *message, void *ctx)
{
    (void)ctx;
    fprintf(stderr, "l3cache %s: %s\n", level, message);
}

static l3_log_fn log_fn = default_log;
static void *log_ctx;

void l3_set_logger(l3_log_fn fn, void *ctx)
{
    log_fn = fn ? fn : default_log;
    log_ctx = fn ? ctx : NULL;
}

void l3_log(const char *level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    log_fn(level, buf, log_ctx);
}

void l3_free(void *p) { free(p); }

void l3_invariant_failed(const char *cond, const char *file, int line, const char *func)
{
    l3_log("fatal", "invariant failed: %s (%s:%d, %s)", cond, file, line, func);
    abort();
}
