/* l3cache: allocating a Host pool that moves at the device's speed.
 *
 * O_DIRECT I/O into a pool of 4 KiB pages needs one DMA segment per page:
 * a 1 MiB object is 256 segments, more than many devices take in one
 * request (virtio-blk: 254), so the kernel splits it in two and cannot
 * merge adjacent objects either. A pool of transparent huge pages is
 * physically contiguous in 2 MiB runs: an object is one segment and one
 * request, and adjacent reads merge. Engines that allocate their own pool
 * can do the same (2 MiB alignment and madvise(MADV_HUGEPAGE)). */
#ifndef L3_POOL_H
#define L3_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "l3_status.h"

/* Allocate `len` bytes of zeroed anonymous memory, 2 MiB aligned, advised
 * as transparent huge pages. Where the kernel refuses the advice (THP
 * disabled), the pool still works on 4 KiB pages and says so once in the
 * log. NULL with L3_ENOMEM in `err` if the memory cannot be mapped. */
void *l3_pool_alloc(size_t len, l3_error *err);

/* Whether l3_pool_alloc's memory is advised as huge pages on this kernel
 * (/sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise"). */
bool l3_pool_huge_pages(void);

/* Whether [base, base + len) is all on huge pages, as far as the kernel
 * says (/proc/self/smaps): 1 when every mapping it spans is THP-eligible
 * or hugetlbfs, 0 when some part is on 4 KiB pages only, -1 when that
 * cannot be told (no /proc, or memory that no mapping covers). */
int l3_pool_is_huge(const void *base, size_t len);

/* Unmap a pool from l3_pool_alloc (`len` as allocated). NULL is a no-op. */
void l3_pool_free(void *pool, size_t len);

#endif
