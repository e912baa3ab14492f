/* l3cache: the whole public API in one include. */
#ifndef L3CACHE_H
#define L3CACHE_H

#include "l3_async.h"
#include "l3_binding.h"
#include "l3_clock.h"
#include "l3_config.h"
#include "l3_crc32c.h"
#include "l3_executor.h"
#include "l3_health.h"
#include "l3_io.h"
#include "l3_keys.h"
#include "l3_layout.h"
#include "l3_memstore.h"
#include "l3_metrics.h"
#include "l3_pool.h"
#include "l3_slabstore.h"
#include "l3_status.h"
#include "l3_store.h"

#endif
