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

l3_status l3_check_batch_args(const char *const *keys, size_t n, const void *per_key, const l3_range *ranges,
                              bool need_ranges, l3_error *err)
{
    if (n == 0)
        return L3_OK;
    if (!keys || !per_key || (need_ranges && !ranges))
        return l3_fail(err, L3_EINVAL, "a batch of %zu keys needs its keys, %s%s", n,
                       need_ranges ? "ranges and " : "", need_ranges ? "result arrays" : "flags");
    for (size_t i = 0; i < n; i++)
        if (!keys[i])
            return l3_fail(err, L3_EINVAL, "key %zu of the batch is NULL", i);
    return L3_OK;
}

/* The result's arrays, or NULL when either is missing. */
static const void *result_arrays(const l3_io_result *r)
{
    return r && r->success && r->object_failures ? r->success : NULL;
}

/* Nothing filled yet; an empty batch may come with no result at all. */
static void clear_lengths(l3_io_result *r)
{
    if (r)
        r->success_len = r->object_failures_len = 0;
}

l3_status l3_store_batch_exists(l3_store *s, const char *const *keys, size_t n, bool *flags, l3_error *err)
{
    l3_status st = l3_check_batch_args(keys, n, flags, NULL, false, err);
    return st != L3_OK ? st : s->ops->batch_exists(s, keys, n, flags, err);
}

l3_status l3_store_batch_get_into(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                                  const l3_range *ranges, l3_io_result *result, l3_error *err)
{
    l3_status st = l3_check_batch_args(keys, n, result_arrays(result), ranges, true, err);
    if (st != L3_OK)
        return st;
    clear_lengths(result);
    return s->ops->batch_get_into(s, keys, n, host, ranges, result, err);
}

l3_status l3_store_batch_put_from(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                                  const l3_range *ranges, l3_io_result *result, l3_error *err)
{
    l3_status st = l3_check_batch_args(keys, n, result_arrays(result), ranges, true, err);
    if (st != L3_OK)
        return st;
    clear_lengths(result);
    return s->ops->batch_put_from(s, keys, n, host, ranges, result, err);
}

/* Check a multi-range batch's shape before it reaches the store. */
static l3_status check_v(const char *const *keys, size_t n, const l3_range *ranges,
                         size_t per_key, l3_io_result *result, bool has_op, l3_error *err)
{
    if (per_key == 0 || per_key > L3_MAX_RANGES_PER_KEY)
        return l3_fail(err, L3_EINVAL, "%zu ranges per key: 1 to %u are allowed", per_key,
                       L3_MAX_RANGES_PER_KEY);
    if (!has_op && per_key > 1)
        return l3_fail(err, L3_EUNSUPPORTED, "this store has no multi-range objects");
    l3_status st = l3_check_batch_args(keys, n, result_arrays(result), ranges, true, err);
    if (st == L3_OK)
        clear_lengths(result);
    return st;
}

l3_status l3_store_batch_get_into_v(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                                    const l3_range *ranges, size_t per_key, l3_io_result *result,
                                    l3_error *err)
{
    l3_status st = check_v(keys, n, ranges, per_key, result, s->ops->batch_get_into_v != NULL, err);
    if (st != L3_OK)
        return st;
    return s->ops->batch_get_into_v ? s->ops->batch_get_into_v(s, keys, n, host, ranges, per_key, result, err)
                                    : s->ops->batch_get_into(s, keys, n, host, ranges, result, err);
}

l3_status l3_store_batch_put_from_v(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                                    const l3_range *ranges, size_t per_key, l3_io_result *result,
                                    l3_error *err)
{
    l3_status st = check_v(keys, n, ranges, per_key, result, s->ops->batch_put_from_v != NULL, err);
    if (st != L3_OK)
        return st;
    return s->ops->batch_put_from_v ? s->ops->batch_put_from_v(s, keys, n, host, ranges, per_key, result, err)
                                    : s->ops->batch_put_from(s, keys, n, host, ranges, result, err);
}

l3_status l3_store_batch_put_hinted(l3_store *s, const char *const *keys, size_t n, l3_host_buffer host,
                                    const l3_range *ranges, size_t per_key, const l3_put_hints *hints,
                                    l3_io_result *result, l3_error *err)
{
    if (!s->ops->batch_put_hinted)
        return l3_store_batch_put_from_v(s, keys, n, host, ranges, per_key, result, err);
    l3_status st = check_v(keys, n, ranges, per_key, result, s->ops->batch_put_from_v != NULL, err);
    if (st != L3_OK)
        return st;
    return s->ops->batch_put_hinted(s, keys, n, host, ranges, per_key, hints, result, err);
}

l3_status l3_store_batch_lease(l3_store *s, const char *const *keys, size_t n, double seconds, bool *flags,
                               l3_error *err)
{
    l3_status st = l3_check_batch_args(keys, n, flags, NULL, false, err);
    if (st != L3_OK)
        return st;
    if (!(seconds >= 0 && seconds <= 3600))
        return l3_fail(err, L3_EINVAL, "a lease of %g seconds: 0 to 3600 are allowed", seconds);
    return s->ops->batch_lease ? s->ops->batch_lease(s, keys, n, seconds, flags, err)
                               : s->ops->batch_exists(s, keys, n, flags, err);
}

l3_status l3_store_batch_delete(l3_store *s, const char *const *keys, size_t n, bool *deleted, l3_error *err)
{
    if (!s->ops->batch_delete)
        return l3_fail(err, L3_EUNSUPPORTED, "this store cannot delete single keys");
    l3_status st = l3_check_batch_args(keys, n, deleted, NULL, false, err);
    return st != L3_OK ? st : s->ops->batch_delete(s, keys, n, deleted, err);
}

bool l3_store_remove_by_prefix(l3_store *s, const char *prefix) { return s->ops->remove_by_prefix(s, prefix); }

l3_status l3_check_host_regions(const l3_host_buffer *regions, size_t n, l3_error *err)
{
    if (n > L3_MAX_HOST_REGIONS)
        return l3_fail(err, L3_EINVAL, "%zu Host regions; at most %u", n, L3_MAX_HOST_REGIONS);
    if (n && !regions)
        return l3_fail(err, L3_EINVAL, "%zu Host regions and no array", n);
    for (size_t i = 0; i < n; i++) {
        const l3_host_buffer *a = &regions[i];
        if (!a->base || !a->len)
            return l3_fail(err, L3_EINVAL, "Host region %zu is empty (base %p, %zu bytes)", i,
                           (void *)a->base, a->len);
        if ((uintptr_t)a->base > UINTPTR_MAX - a->len)
            return l3_fail(err, L3_EINVAL, "Host region %zu wraps around the address space", i);
        for (size_t j = 0; j < i; j++) {
            const l3_host_buffer *b = &regions[j];
            if (a->base < b->base + b->len && b->base < a->base + a->len)
                return l3_fail(err, L3_EINVAL, "Host regions %zu and %zu overlap", j, i);
        }
    }
    return L3_OK;
}

l3_status l3_store_register_hosts(l3_store *s, const l3_host_buffer *regions, size_t n, l3_error *err)
{
    l3_status st = l3_check_host_regions(regions, n, err);
    if (st != L3_OK || !s->ops->register_hosts)
        return st;
    return s->ops->register_hosts(s, regions, n, err);
}

l3_status l3_store_register_host(l3_store *s, l3_host_buffer host, l3_error *err)
{
    return l3_store_register_hosts(s, &host, host.base ? 1 : 0, err);
}

void l3_store_close(l3_store *s) { s->ops->close(s); }

void l3_store_destroy(l3_store *s)
{
    if (s->ops->destroy)
        s->ops->destroy(s);
}
