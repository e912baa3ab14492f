/* l3cache: SHA-256 (FIPS 180-4), used to name key namespaces. */
#ifndef L3_SHA256_H
#define L3_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Write the 32-byte SHA-256 digest of `len` bytes at `data` to `out`. */
void l3_sha256(const void *data, size_t len, uint8_t out[32]);

#endif
