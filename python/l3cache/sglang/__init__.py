"""l3cache as SGLang HiCache's L3 storage backend (a package: ``backend``, the
storage interface; ``naming``, keys and groups; ``pending``, the held
states; ``pools``, ``values``, ``metrics``; ``chain`` and ``writeback``,
a shared tier behind l3cache; ``hostmode``, SGLang's host memory mode), loaded by SGLang's
``dynamic`` backend with no change to SGLang::

    --hicache-storage-backend dynamic
    --hicache-storage-backend-extra-config '{"backend_name": "l3cache",
        "module_path": "l3cache.sglang", "class_name": "L3CacheHiCacheStorage",
        "interface_v1": 1, "l3cache_config": "/etc/l3cache.json"}'

Dense models use the v1 zero-copy calls (``batch_exists``,
``batch_get_v1``, ``batch_set_v1``). Hybrid models (SGLang's
``HybridCacheController``: a DSA indexer pool, Mamba or SWA state pools,
DeepSeek-V4's compressed pools, draft pools) register each Host pool with
``register_mem_host_pool_v2`` and use ``batch_exists_v2`` /
``batch_get_v2`` / ``batch_set_v2``. Every pool's buffers are registered
with the store as Host regions, so every pool's pages move zero-copy.

A page of a pool is ONE l3cache object even when its bytes are several
ranges of the Host pool (an MHA page's K and V, in one allocation or two;
a Mamba slot's temporal and conv states): one header and one crc32c over
all of them. ``batch_exists`` and ``batch_exists_v2`` lease what they find
(``lease_seconds``, default 10) so that eviction, in any process, keeps it
until the get that follows.

Keys are namespaced as SGLang's own backends do (model; TP rank and size
unless the KV is rank-replicated (MLA); PP; attention CP) plus the pool,
dtype, layout and page size, so that two pools, models, ranks or layouts
never share an object. A put names each page's group (``group_id`` of the
page hash under the model and the parallel sizes, without the ranks and
the pool), so that every rank's shard and every pool's object of a page
(a TRAILING_PAGES state's too) are admitted, kept and evicted together.
A backup names its TRAILING_PAGES states (a Mamba or SWA pool's, a
draft model's: the state of the node's last page) in ``batch_set_v2``
before the node's KV pages go by ``batch_set_v1``. The states wait: they
are written right after the KV batch that ends with their page, when
every page of that batch was stored, and dropped when not (a declined or
failed KV batch: a prefix is usable only up to a page with its state, and
a Mamba state weighs as much as tens of KV pages). ``batch_set_v2``
reports them taken (True); SGLang reads that result only for its metrics,
except on an MLA model's ranks other than 0, which write no KV and whose
states are written at once. A state whose page's KV is stored already is
written at once too, and in SGLang's ``buffer_only`` host mode (the Host
pool a staging buffer: a write's slots are freed when its storage write
is acknowledged, and each pool of a node is its own write, the KV first)
no state is ever held (hostmode).
With ``next_backend`` in the extra config, the factory gets the chained
backend instead (chain: l3cache, then any backend SGLang's factory
builds). ``namespace.deployment_id`` of the l3cache config is folded into
every namespace (keys.tenant_tag).
No call on SGLang's storage threads raises: a failure is logged and
reported as a miss or a failed page (SGLang does not restart a storage
thread that an exception killed).
"""

from .backend import L3CacheHiCacheStorage
from .chain import ChainedHiCacheStorage
from .common import Base as StorageBase

__all__ = ["L3CacheHiCacheStorage", "ChainedHiCacheStorage", "StorageBase"]
