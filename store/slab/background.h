/* l3cache: the slab store's background thread (internal; not installed):
 * with store.flush "interval" it flushes the devices this process wrote
 * objects to every flush_interval, and writes a filled slab's summary
 * only after the first of those flushes that began once the slab filled
 * (a summary never names a payload a power cut could lose); in any mode
 * it writes the metadata a driven put wave defers (a filled slab's
 * summary, a standby slab's record), so that a driver never sleeps on a
 * metadata write queued behind the device's data writes. */
#ifndef L3_SLAB_BACKGROUND_H
#define L3_SLAB_BACKGROUND_H

#include "slab.h"

/* Set the thread up (not for a read-only store), and start it with
 * store.flush "interval"; otherwise the first deferred write starts it. */
l3_status l3_background_start(l3_slabstore *s, l3_error *err);

/* Stop it: what was deferred is written, and what this process wrote
 * since the last flush is flushed, as it leaves. */
void l3_background_stop(l3_slabstore *s);

/* Have slab `slab`'s summary written (l3_summary_settle; with "interval"
 * after the thread's next flush), or its record of generation `gen`
 * (l3_meta_ensure_record) when `record`, by the thread (started if need
 * be); written here and now (a summary after a flush of its device) when
 * it cannot run or its queue is full. Either checks again, when it runs,
 * that it is due. Not called once the store is closing (its executors are
 * stopped). */
void l3_background_defer(l3_slabstore *s, uint32_t slab, uint64_t gen, bool record);

/* Have the summary of slab `slab`, which a put wave or a delete left due,
 * written once what it names is durable: with store.flush "interval" by
 * the thread after its next flush; with "batch" (its puts flushed before
 * they were published) here and now, or by the thread when `driven` (a
 * driver does not wait on a metadata write). */
void l3_background_settle(l3_slabstore *s, uint32_t slab, bool driven);

#endif
