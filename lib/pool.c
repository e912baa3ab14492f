#include "l3_pool.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

static size_t round_up(size_t n) { return (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE; }

bool l3_pool_huge_pages(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return false;
    char line[128] = "";
    bool on = fgets(line, sizeof line, f) && !strstr(line, "[never]");
    fclose(f);
    return on;
}

void *l3_pool_alloc(size_t len, l3_error *err)
{
    if (len == 0 || len > SIZE_MAX - 2 * HUGE_PAGE) {
        l3_fail(err, L3_EINVAL, "a Host pool of %zu bytes", len);
        return NULL;
    }
    size_t want = round_up(len), map = want + HUGE_PAGE;
    uint8_t *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        l3_fail(err, L3_ENOMEM, "mapping a %zu-byte Host pool: %s", len, strerror(errno));
        return NULL;
    }
    /* Trim to a 2 MiB-aligned run of `want` bytes. */
    uint8_t *base = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (base > p)
        munmap(p, (size_t)(base - p));
    size_t tail = (size_t)(p + map - (base + want));
    if (tail)
        munmap(base + want, tail);
    static atomic_bool warned;
    if (madvise(base, want, MADV_HUGEPAGE) != 0 && !atomic_exchange(&warned, true))
        l3_log("warning", "madvise(MADV_HUGEPAGE) on the Host pool failed (%s): it uses 4 KiB pages, "
                          "so large objects may be split into several device requests each",
               strerror(errno));
    return base;
}

int l3_pool_is_huge(const void *base, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    uintptr_t lo = (uintptr_t)base, hi = lo + len, covered = lo;
    char line[512];
    bool inside = false, vma_huge = false, any = false;
    int verdict = 1;
    unsigned long start = 0, end = 0;
    /* A mapping's lines follow its header; judge it when the next begins. */
    for (bool more = true; more;) {
        more = fgets(line, sizeof line, f) != NULL;
        unsigned long a, b;
        bool header = more && sscanf(line, "%lx-%lx ", &a, &b) == 2; /* field lines never parse so */
        if (!more || header) {
            if (inside) {
                any = true;
                if (!vma_huge)
                    verdict = 0;
                if (start <= covered && end > covered)
                    covered = end;
            }
            if (!more)
                break;
            start = a;
            end = b;
            inside = a < hi && b > lo;
            vma_huge = false;
            continue;
        }
        int v;
        unsigned long kb;
        if (inside && sscanf(line, "THPeligible: %d", &v) == 1 && v == 1)
            vma_huge = true;
        if (inside && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1 && kb > 4)
            vma_huge = true;
    }
    fclose(f);
    if (!any || covered < hi)
        return -1;
    return verdict;
}

void l3_pool_free(void *pool, size_t len)
{
    if (pool)
        munmap(pool, round_up(len));
}
