/* l3cache: CRC-32C (Castagnoli), as iSCSI, ext4 and NVMe use it. */
#ifndef L3_CRC32C_H
#define L3_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over `len` bytes of `data`. Uses Intel ISA-L's
 * folding implementation (PCLMUL/AVX-512, ARMv8) when the build found it,
 * else the built-in one below. */
uint32_t l3_crc32c(uint32_t crc, const void *data, size_t len);

/* The built-in implementation: SSE4.2 or ARMv8 CRC instructions where the
 * CPU has them (three interleaved streams), a table otherwise. */
uint32_t l3_crc32c_builtin(uint32_t crc, const void *data, size_t len);

/* Whether l3_crc32c runs on CPU instructions (for benchmark reports). */
int l3_crc32c_hardware(void);

/* "isa-l", "sse4.2", "armv8" or "table": what l3_crc32c runs on. */
const char *l3_crc32c_engine(void);

#endif
