"""A stand-in of vLLM's KV offloading tier framework (the parts a secondary
tier meets), for testing l3cache's tier without vLLM. Each module names the
upstream file (github.com/vllm-project/vllm) and the commit it follows,
read on 2026-12-03 and checked again on 2026-12-05 (config.py's newer
text; the hit source that the tier base and the manager carry at the
commits they follow, left out before):

* kv_base.py         vllm/v1/kv_offload/base.py
* config.py          vllm/v1/kv_offload/config.py (its newer text, 2026-12-05)
* tiering_base.py    vllm/v1/kv_offload/tiering/base.py
* tiering_factory.py vllm/v1/kv_offload/tiering/factory.py
* tiering_manager.py vllm/v1/kv_offload/tiering/manager.py (and the CPU
                     primary tier it drives, vllm/v1/kv_offload/cpu/)
* tiering_spec.py    vllm/v1/kv_offload/tiering/spec.py
* cache_hit_source.py vllm/v1/metrics/cache_hit_source.py (2026-12-05)

Added 2026-12-06 (issue 45: the tier in a cluster), and kv_base.py,
tiering_factory.py, tiering_manager.py, tiering_spec.py brought to the
newest text the index holds:

* backpressure.py       vllm/v1/kv_offload/tiering/backpressure.py
* async_lookup.py       vllm/v1/kv_offload/tiering/async_lookup.py
* fs_manager.py         vllm/v1/kv_offload/tiering/fs/manager.py (vLLM's
                        own file-system tier)
* kv_events.py          vllm/distributed/kv_events.py (BlockStored, BlockRemoved)
* offloading_events.py  vllm/distributed/kv_transfer/kv_connector/v1/offloading/events.py
* offloading_metrics.py vllm/distributed/kv_transfer/kv_connector/v1/offloading/metrics.py
* kv_cache_utils.py     vllm/v1/core/kv_cache_utils.py (block hashes, cache_salt)

Written from what those files do; none of their code. ``install()`` puts
them into sys.modules under vLLM's names, as if vLLM were there.
"""
import sys
import types

from . import (async_lookup, backpressure, cache_hit_source, config, fs_manager, kv_base, kv_cache_utils, kv_events,
               offloading_events, offloading_metrics, tiering_base, tiering_factory, tiering_manager, tiering_spec)

MODULES = {
    "vllm.v1.kv_offload.base": kv_base,
    "vllm.v1.kv_offload.config": config,
    "vllm.v1.kv_offload.tiering.base": tiering_base,
    "vllm.v1.kv_offload.tiering.factory": tiering_factory,
    "vllm.v1.kv_offload.tiering.manager": tiering_manager,
    "vllm.v1.kv_offload.tiering.spec": tiering_spec,
    "vllm.v1.metrics.cache_hit_source": cache_hit_source,
    "vllm.v1.kv_offload.tiering.backpressure": backpressure,
    "vllm.v1.kv_offload.tiering.async_lookup": async_lookup,
    "vllm.v1.kv_offload.tiering.fs.manager": fs_manager,
    "vllm.v1.core.kv_cache_utils": kv_cache_utils,
    "vllm.distributed.kv_events": kv_events,
    "vllm.distributed.kv_transfer.kv_connector.v1.offloading.events": offloading_events,
    "vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics": offloading_metrics,
}


def install():
    for name in ("vllm", "vllm.v1", "vllm.v1.kv_offload", "vllm.v1.kv_offload.tiering", "vllm.v1.metrics",
                 "vllm.v1.kv_offload.tiering.fs", "vllm.v1.core", "vllm.distributed",
                 "vllm.distributed.kv_transfer", "vllm.distributed.kv_transfer.kv_connector",
                 "vllm.distributed.kv_transfer.kv_connector.v1",
                 "vllm.distributed.kv_transfer.kv_connector.v1.offloading"):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = []
            sys.modules[name] = pkg
    for name, module in MODULES.items():
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        setattr(sys.modules[parent], child, module)
