/* Completion accounting shared by the I/O backends: short transfers,
 * retries and the engine's counters. */
#include "request.h"

#include <errno.h>

#include "invariant.h"
#include "io_internal.h"
#include "power.h"

/* A write the device model held in flight has finished (power.h). */
static void power_done(l3_io_engine *e, l3_io_req *r)
{
    unsigned d = l3_io_dev_of(r->offset);
    L3_ASSERT(d < e->nfds);
    r->power = 0;
    l3_io_power_write_done(e->fds[d], r->buf, l3_io_byte_of(r->offset), r->len, r->res == (int32_t)r->len);
}

bool l3_io_complete(l3_io_engine *e, l3_io_req *r, long res)
{
    if (res == -EAGAIN || res == -EINTR) {
        if (r->retries++ < L3_IO_MAX_RETRIES) {
            atomic_fetch_add(&e->stats.eagain_retries, 1);
            return true;
        }
    } else if (res > 0) {
        if (r->fault == L3_FAULT_TORN)
            res = r->len - r->done; /* the device claims the whole write */
        r->done += (uint32_t)res;
        if (r->done < r->len) {
            /* A short transfer: resubmit the rest at offset + done. */
            atomic_fetch_add(&e->stats.short_retries, 1);
            return true;
        }
        r->res = (int32_t)r->len;
        atomic_fetch_add(&e->stats.requests, 1);
        atomic_fetch_add(r->write ? &e->stats.bytes_written : &e->stats.bytes_read, r->len);
        if (e->nfds > 1) {
            unsigned d = l3_io_dev_of(r->offset);
            L3_ASSERT(d < e->nfds);
            atomic_fetch_add(r->write ? &e->dev_written[d] : &e->dev_read[d], r->len);
        }
        if (r->power)
            power_done(e, r);
        return false;
    } else if (res == 0) {
        /* A zero-byte transfer is the end of the device, not success. */
        res = -EIO;
    }
    r->res = (int32_t)res;
    atomic_fetch_add(&e->stats.errors, 1);
    unsigned d = l3_io_dev_of(r->offset);
    L3_ASSERT(d < e->nfds);
    atomic_fetch_add(&e->dev_errors[d], 1);
    atomic_fetch_add(&e->stats.requests, 1);
    if (r->power)
        power_done(e, r);
    return false;
}
