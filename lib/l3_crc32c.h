/* l3cache: CRC-32C (Castagnoli), as iSCSI, ext4 and NVMe use it. */
#ifndef L3_CRC32C_H
#define L3_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over `len` bytes of `data`; uses the SSE4.2 or
 * ARMv8 CRC instructions where the CPU has them, a table otherwise. */
uint32_t l3_crc32c(uint32_t crc, const void *data, size_t len);

/* Whether l3_crc32c runs on CPU instructions (for benchmark reports). */
int l3_crc32c_hardware(void);

#endif
