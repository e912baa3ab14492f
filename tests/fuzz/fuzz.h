/* libFuzzer's entry points (its FuzzerInterface.h), declared for the
 * fuzz targets that define them: libFuzzer's main calls them. */
#ifndef L3_FUZZ_H
#define L3_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* One input: 0, or -1 to keep it out of the corpus. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Once, before the first input (optional). */
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
