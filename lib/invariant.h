/* l3cache: invariant checks (internal; not installed).
 *
 * L3_ASSERT(cond) logs the failed condition with its place and aborts. It
 * checks in a debug build, and in any build configured with
 * -DL3_ASSERTS=ON (CMake then defines L3_ASSERTS: CI's fuzz build, a
 * RelWithDebInfo one, so keeps them); otherwise (NDEBUG, release builds)
 * it compiles to nothing and `cond` is not evaluated, so it must have no
 * side effects. L3_ASSERT_ON says which: 1 when they check, for a block
 * of code that exists only to feed them. */
#ifndef L3_INVARIANT_H
#define L3_INVARIANT_H

/* Log an invariant's failure and abort (only L3_ASSERT calls it). */
void l3_invariant_failed(const char *cond, const char *file, int line, const char *func)
    __attribute__((noreturn));

#if !defined(NDEBUG) || defined(L3_ASSERTS)
#define L3_ASSERT_ON 1
#define L3_ASSERT(cond) ((cond) ? (void)0 : l3_invariant_failed(#cond, __FILE__, __LINE__, __func__))
#else
#define L3_ASSERT_ON 0
#define L3_ASSERT(cond) ((void)0)
#endif

#endif
