/* What the slab store's batch paths share (batch.h): checks, results,
 * existence, and the plan of a slot's I/O. */
#include "batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "l3_keys.h"
#include "l3_crc32c.h"
#include "meta.h"
#include "policy.h"

l3_status l3_batch_check(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                         const l3_range *ranges, size_t k, const void *per_key, bool need_ranges,
                         l3_error *err)
{
    l3_status args = l3_check_batch_args(keys, n, per_key, ranges, need_ranges, err);
    if (args != L3_OK)
        return args;
    if (s->closed)
        return l3_fail(err, L3_ECLOSED, "the store is closed");
    if (atomic_load(&s->fatal))
        return l3_fail(err, L3_ECLOSED,
                       "the store refuses I/O: an earlier batch's I/O was not reaped in time or "
                       "its metadata could not be written; restart required");
    for (size_t i = 0; i < n; i++) {
        l3_status st = l3_key_check(keys[i], err);
        if (st != L3_OK)
            return st;
    }
    if (!ranges)
        return L3_OK;
    l3_status st = l3_check_ranges(host, ranges, n * k, err);
    if (st != L3_OK)
        return st;
    for (size_t i = 0; i < n * k; i++)
        if (ranges[i].size > UINT32_MAX)
            return l3_fail(err, L3_EINVAL, "range %zu is over 4 GiB", i);
    for (size_t i = 0; k > 1 && i < n; i++)
        if (l3_ranges_disk_len(&ranges[i * k], k, s->geo.block_size) > UINT32_MAX)
            return l3_fail(err, L3_EINVAL, "key %zu's ranges are over 4 GiB", i);
    return L3_OK;
}

l3_status l3_batch_check_io(l3_slabstore *s, const char *const *keys, size_t n, l3_host_buffer host,
                            const l3_range *ranges, size_t k, const l3_io_result *res, l3_error *err)
{
    const void *arrays = res && res->success && res->object_failures ? res->success : NULL;
    if (k == 0 || k > L3_MAX_RANGES_PER_KEY)
        return l3_fail(err, L3_EINVAL, "%zu ranges per key: 1 to %u are allowed", k, L3_MAX_RANGES_PER_KEY);
    return l3_batch_check(s, keys, n, host, ranges, k, arrays, true, err);
}

uint64_t l3_ranges_disk_len(const l3_range *ranges, size_t k, uint32_t block)
{
    uint64_t len = 0;
    for (size_t j = 0; j < k; j++)
        len += j + 1 < k ? l3_round_up(ranges[j].size, block) : ranges[j].size;
    return len;
}

uint32_t l3_ranges_crc(const uint8_t *base, const l3_range *ranges, size_t k, uint32_t block)
{
    static const uint8_t zeros[4096];
    uint32_t crc = 0;
    for (size_t j = 0; j < k; j++) {
        crc = l3_crc32c(crc, base + ranges[j].offset, ranges[j].size);
        uint64_t pad = j + 1 < k ? l3_round_up(ranges[j].size, block) - ranges[j].size : 0;
        for (; pad; pad -= pad < sizeof zeros ? pad : sizeof zeros)
            crc = l3_crc32c(crc, zeros, pad < sizeof zeros ? pad : sizeof zeros);
    }
    return crc;
}

void l3_header_set_shape(l3_object_header *h, const l3_range *ranges, size_t k)
{
    if (k < 2)
        return;
    h->flags |= L3_OBJ_SEGMENTED;
    l3_segment_table *t = l3_object_segments(h);
    t->count = (uint32_t)k;
    for (size_t j = 0; j < k; j++)
        t->size[j] = (uint32_t)ranges[j].size;
}

bool l3_header_has_shape(const l3_object_header *h, const l3_range *ranges, size_t k)
{
    if (k < 2)
        return !(h->flags & L3_OBJ_SEGMENTED);
    if (!(h->flags & L3_OBJ_SEGMENTED))
        return false;
    const l3_segment_table *t = l3_object_segments((l3_object_header *)h);
    if (t->count != k)
        return false;
    for (size_t j = 0; j < k; j++)
        if (t->size[j] != ranges[j].size)
            return false;
    return true;
}

void l3_batch_result_clear(l3_io_result *res, size_t n)
{
    if (n) { /* an empty batch may come with no arrays: memset(NULL, 0, 0) is undefined */
        memset(res->success, 0, n * sizeof *res->success);
        memset(res->object_failures, 0, n * sizeof *res->object_failures);
    }
    res->success_len = res->object_failures_len = n;
    res->retired = true;
}

l3_status l3_slab_exists(l3_store *st, const char *const *keys, size_t n, bool *flags, l3_error *err)
{
    return l3_slab_lease(st, keys, n, 0, flags, err);
}

l3_status l3_slab_lease(l3_store *st, const char *const *keys, size_t n, double seconds, bool *flags,
                        l3_error *err)
{
    l3_slabstore *s = (l3_slabstore *)st;
    l3_status rc = l3_batch_check(s, keys, n, (l3_host_buffer){ 0 }, NULL, 1, flags, false, err);
    if (rc != L3_OK)
        return rc;
    l3_key_id stack[64] = { 0 };
    l3_key_id *ids = n <= 64 ? stack : malloc(n * sizeof *ids);
    if (!ids)
        return l3_fail(err, L3_ENOMEM, "allocating an exists batch");
    for (size_t i = 0; i < n; i++)
        ids[i] = l3_key_identity(keys[i], strlen(keys[i]));
    uint64_t until = seconds > 0 ? l3_policy_clock_ns() + (uint64_t)(seconds * 1e9) : 0;
    for (size_t base = 0; base < n; base += 64) {
        size_t m = n - base < 64 ? n - base : 64;
        l3_slab_lock(s); /* (64 keys a hold: puts and gets get their turns) */
        for (size_t i = base; i < base + m; i++) {
            l3_index_entry *e = l3_entry_find_live(s, ids[i]);
            flags[i] = e != NULL;
            if (e && until) {
                l3_policy_lease(s, e->slab, until);
                l3_entry_lease_group(s, e, until);
            }
        }
        l3_slab_unlock(s);
    }
    l3_admit_exists(s, ids, flags, n);
    if (n > 64)
        free(ids);
    return L3_OK;
}

/* A misaligned Host range: the whole payload through a temporary buffer. */
static int plan_temp(l3_slabstore *s, l3_plan *p, bool write, l3_io_req *reqs, int r)
{
    uint32_t b = s->geo.block_size;
    if (!atomic_exchange(&s->warned_unaligned, true))
        l3_log("warning", "a Host range at %p is not aligned to %u bytes: it moves through a "
                          "bounce copy (slow); align the Host pool to %u", (void *)p->host, b, b);
    atomic_fetch_add(&s->unaligned_ios, 1);
    uint32_t len = (uint32_t)l3_round_up(p->size, b);
    p->temp = l3_meta_alloc(b, len);
    p->direct = 0;
    p->tail = 0;
    if (!p->temp)
        return -1;
    if (write)
        memcpy(p->temp, p->host, p->size);
    reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev, .buf = p->temp, .len = len };
    return r;
}

int l3_plan_slot(l3_slabstore *s, l3_plan *p, bool write, uint8_t *header, l3_io_req *reqs, int r)
{
    uint32_t b = s->geo.block_size, hb = s->geo.header_bytes;
    p->first_req = r;
    if (header)
        reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev - hb, .buf = header, .len = hb };
    if (p->size && ((uintptr_t)p->host & (b - 1)) != 0) {
        r = plan_temp(s, p, write, reqs, r);
    } else if (p->size) {
        p->direct = p->size / b * b;
        p->tail = p->size - p->direct;
        if (p->direct)
            reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev, .buf = p->host, .len = p->direct };
        if (p->tail && !p->tail_buf && !(p->tail_buf = p->own_tail = l3_meta_alloc(b, b)))
            return -1;
        if (p->tail) {
            if (write) {
                memcpy(p->tail_buf, p->host + p->direct, p->tail);
                memset(p->tail_buf + p->tail, 0, b - p->tail);
            }
            reqs[r++] = (l3_io_req){ .write = write, .offset = p->dev + p->direct, .buf = p->tail_buf,
                                     .len = b };
        }
    }
    if (r < 0)
        return -1;
    p->num_reqs = r - p->first_req;
    return r;
}

int l3_plan_object(l3_slabstore *s, l3_plan *plans, size_t k, uint64_t dev, uint8_t *base,
                   const l3_range *ranges, bool write, uint8_t *header, uint8_t *tail_buf, l3_io_req *reqs,
                   int r)
{
    for (size_t j = 0; j < k && r >= 0; j++) {
        plans[j] = (l3_plan){ .dev = dev, .host = base + ranges[j].offset, .size = (uint32_t)ranges[j].size,
                              .tail_buf = j == 0 ? tail_buf : NULL };
        r = l3_plan_slot(s, &plans[j], write, j == 0 ? header : NULL, reqs, r);
        dev += l3_round_up(ranges[j].size, s->geo.block_size);
    }
    return r;
}

bool l3_plans_ok(const l3_io_req *reqs, const l3_plan *plans, size_t k, int *error)
{
    bool ok = true;
    for (size_t j = 0; j < k && ok; j++)
        ok = l3_plan_ok(reqs, &plans[j], error);
    return ok;
}

bool l3_plan_ok(const l3_io_req *reqs, const l3_plan *p, int *error)
{
    for (int k = 0; k < p->num_reqs; k++) {
        const l3_io_req *r = &reqs[p->first_req + k];
        if (r->res != (int32_t)r->len) {
            if (!*error)
                *error = r->res < 0 ? -r->res : EIO;
            return false;
        }
    }
    return true;
}

void l3_plan_free(l3_plan *plans, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        free(plans[k].temp);
        free(plans[k].own_tail);
        plans[k].temp = plans[k].own_tail = NULL;
    }
}
