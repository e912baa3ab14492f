#include "l3_store.h"

l3_status l3_check_ranges(l3_host_buffer host, const l3_range *ranges, size_t n, l3_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].offset > host.len || ranges[i].size > host.len - ranges[i].offset)
            return l3_fail(err, L3_EINVAL,
                           "range %zu [%llu, +%llu) is outside the %zu-byte Host buffer", i,
                           (unsigned long long)ranges[i].offset,
                           (unsigned long long)ranges[i].size, host.len);
    }
    return L3_OK;
}
