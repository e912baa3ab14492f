"""l3cache: a persistent NVMe KV-cache tier, from Python (ctypes, no build step).

Two levels, as inference engines use them:

* :class:`Store` speaks the KV-store protocol of engine storage backends:
  ``batch_exists(keys)``, ``batch_get_into(keys, host_ptr, offsets, sizes)``,
  ``batch_put_from(keys, host_ptr, offsets, sizes)``, ``remove_by_prefix``,
  ``close``.  ``host_ptr`` is the address of the Host KV pool (for a numpy
  array, ``arr.ctypes.data``); offsets and sizes are byte ranges in it.
* :class:`Executor` is the asynchronous executor: ``submit`` query/get/put/
  cancel operations keyed by (group, content hash, page offset) and Host
  block ids, ``poll`` completions and queue pressure, ``snapshot`` counters.

The shared library is found through ``$L3CACHE_LIB``, inside this package
(``pip install --no-build-isolation ./python`` puts it there), in the
checkout's ``build/``, or on the loader path (``libl3cache.so.0``).
"""

from ._ffi import L3Error, library_path
from .feed import Removal, RemovalFeed, key_id
from .store import Pool, Store, group_id
from .executor import Executor
from ._async import AsyncStore, Completion

__all__ = ["L3Error", "Pool", "Store", "AsyncStore", "Completion", "Executor", "group_id", "library_path",
           "Removal", "RemovalFeed", "key_id"]
