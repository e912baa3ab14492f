"""A stand-in of the parts of SGLang that a HiCache L3 storage backend
meets, for testing l3cache's backend without SGLang. Each module names the
upstream file (github.com/sgl-project/sglang, python/sglang/srt/...) and the
commit it follows, read on 2026-12-03:

* hicache_storage.py   mem_cache/hicache_storage.py
* backend_factory.py   mem_cache/storage/backend_factory.py
* metrics_collector.py observability/metrics_collector.py
* pool_host.py         mem_cache/pool_host/{mha,mla,mamba,dsa,mha_mxfp8,group}.py
* controller.py        managers/cache_controller.py and
                       mem_cache/hybrid_cache/hybrid_cache_controller.py
* hicache_file.py      mem_cache/hicache_storage.py (HiCacheFile, the
                       ``file`` backend; read 2026-12-05)
* buffer_mode.py       mem_cache/buffer_mode/pipeline.py (buffer_only host
                       mode's write path; read 2026-12-05)
* server_args.py       server_args.py (the global server args)

Written from what those files do; none of their code. ``install()`` puts
the modules into sys.modules under SGLang's names, as if SGLang were there.
Only the new home of StorageMetrics is installed (SGLang moved it out of
``sglang.srt.metrics.collector``).
"""
import sys
import types

from . import (backend_factory, buffer_mode, controller, hicache_file, hicache_storage,  # noqa: F401
               metrics_collector, pool_host, server_args)

MODULES = {
    "sglang.srt.mem_cache.hicache_storage": hicache_storage,
    "sglang.srt.mem_cache.storage.backend_factory": backend_factory,
    "sglang.srt.observability.metrics_collector": metrics_collector,
    "sglang.srt.server_args": server_args,
}


def install():
    for name in ("sglang", "sglang.srt", "sglang.srt.mem_cache", "sglang.srt.mem_cache.storage",
                 "sglang.srt.observability"):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = []
            sys.modules[name] = pkg
    for name, module in MODULES.items():
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        setattr(sys.modules[parent], child, module)
