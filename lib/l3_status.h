/* l3cache: status codes and error values.
 *
 * Every fallible l3cache function returns an l3_status and, when given a
 * non-NULL l3_error, fills it with the same code and a message that says
 * what went wrong. The library never exits the process. */
#ifndef L3_STATUS_H
#define L3_STATUS_H

#include <stdbool.h>

typedef enum l3_status {
    L3_OK = 0,
    L3_EINVAL,      /* an argument or job no caller should pass */
    L3_ELAYOUT,     /* a key or block the Host layout cannot place */
    L3_ECREDITS,    /* more operations in flight than the credits */
    L3_EBUSY,       /* operations in flight, or the store is in use */
    L3_EUNRETIRED,  /* native I/O retirement is unproven */
    L3_ENOMEM,      /* out of memory, or a locked-memory limit */
    L3_EIO,         /* an I/O error from the device or kernel */
    L3_ENOSPC,      /* the store or index has no room */
    L3_ECORRUPT,    /* on-disk data failed a checksum or a sanity check */
    L3_ECONFIG,     /* a configuration value is wrong */
    L3_ENOTFOUND,   /* a named thing does not exist */
    L3_ECLOSED,     /* the object was closed, or refuses I/O */
    L3_EUNSUPPORTED,/* the kernel, device or format lacks a feature */
    L3_ETIMEDOUT,   /* an I/O did not complete in time */
    L3_EPERM        /* not allowed: a shared object or file that is not the store's own */
} l3_status;

#define L3_ERROR_MSG_MAX 512

/* An error value: a status code and a human-readable message. */
typedef struct l3_error {
    l3_status code;
    char msg[L3_ERROR_MSG_MAX];
} l3_error;

/* The constant name of a status code, e.g. "L3_EINVAL". */
const char *l3_status_name(l3_status code);

/* Set *err (when non-NULL) to `code` and a printf-style message; returns
 * `code` so that callers can write `return l3_fail(err, L3_EINVAL, ...)`. */
l3_status l3_fail(l3_error *err, l3_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reset *err (when non-NULL) to L3_OK with an empty message. */
void l3_error_clear(l3_error *err);

/* Free memory the library returned (JSON and metrics text). */
void l3_free(void *p);

/* A log sink: level is "error", "warning" or "info". */
typedef void (*l3_log_fn)(const char *level, const char *message, void *ctx);

/* Replace the library's log sink (default: lines on stderr); NULL restores
 * the default. Not thread-safe against concurrent logging; set it first. */
void l3_set_logger(l3_log_fn fn, void *ctx);

/* Log a printf-style message through the current sink. */
void l3_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
