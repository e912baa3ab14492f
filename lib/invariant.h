/* l3cache: debug-build invariant checks (internal; not installed).
 *
 * L3_ASSERT(cond) logs the failed condition with its place and aborts in
 * a debug build; with NDEBUG (release builds) it compiles to nothing and
 * `cond` is not evaluated, so it must have no side effects. */
#ifndef L3_INVARIANT_H
#define L3_INVARIANT_H

/* Log an invariant's failure and abort (debug builds only call it). */
void l3_invariant_failed(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn));

#ifdef NDEBUG
#define L3_ASSERT(cond) ((void)0)
#else
#define L3_ASSERT(cond) ((cond) ? (void)0 : l3_invariant_failed(#cond, __FILE__, __LINE__, __func__))
#endif

#endif
