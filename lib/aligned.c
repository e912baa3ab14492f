#include "aligned.h"

#include <stdlib.h>
#include <string.h>

void *l3_aligned_alloc(size_t align, size_t len, bool zero)
{
    /* Checked here, not left to posix_memalign: a sanitizer's aborts on it. */
    if (align < sizeof(void *) || (align & (align - 1)))
        return NULL;
    void *p = NULL;
    size_t n = len ? len : align;
    if (posix_memalign(&p, align, n) != 0)
        return NULL;
    if (zero)
        memset(p, 0, n);
    return p;
}
