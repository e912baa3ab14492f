/* A mock eviction policy for test_alloc (mock_policy.c). */
#ifndef L3_TEST_MOCK_POLICY_H
#define L3_TEST_MOCK_POLICY_H

#include "policy.h"

extern size_t mock_victim_calls, mock_written_calls;

/* Forget the script and the counts. */
void mock_policy_reset(void);

/* Script the next victim the allocator asks for. */
void mock_victim(int32_t v);

#endif
