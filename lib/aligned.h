/* l3cache: aligned buffers for O_DIRECT I/O (internal; not installed).
 *
 * The one aligned allocator of the tree: the engine's bounce buffers, the
 * store's metadata buffers (l3_meta_alloc), l3fsck's and l3bench's reads,
 * the tests' Host pools. A Host pool that should sit on huge pages is
 * l3_pool_alloc's (l3_pool.h), not this. */
#ifndef L3_ALIGNED_H
#define L3_ALIGNED_H

#include <stdbool.h>
#include <stddef.h>

/* Allocate `len` bytes aligned to `align` (a power of two, at least
 * sizeof(void *); 4096 for O_DIRECT), zeroed when `zero` (else left as
 * malloc leaves it, so a large buffer's pages are not touched). A `len` of
 * 0 allocates `align` bytes, so that success is never NULL. NULL when the
 * memory cannot be had or `align` is not such a power of two. Release it
 * with free(). */
void *l3_aligned_alloc(size_t align, size_t len, bool zero);

#endif
