"""A stand-in of LMCache's side of its L2 adapters, for driving l3cache's
connector (``native_plugin``) and adapter (``plugin``) as LMCache's
multiprocess server does.

It follows these upstream files of github.com/LMCache/LMCache, read
through the code index on 2026-12-03 and 2026-12-05 (by the commits the
index holds them at):

* ``lmcache/v1/distributed/l2_adapters/native_plugin_l2_adapter.py`` at
  68c638a6a8e86d9ec0867ff51fe445b4b3e75503: the config's four keys, the
  factory (import by module path, ``cls(**adapter_params)``, six required
  methods, a missing one closes the client and raises TypeError; a missing
  ``submit_batch_delete`` only warns), the bridge given ``max_capacity_gb``.
  (f9f99a8, older, passes no capacity.)
* ``lmcache/v1/distributed/l2_adapters/plugin_l2_adapter.py`` at
  2b7c160f4539a115e0b760dc88dcdaa1a66aecfb: the ``plugin`` type, a Python
  adapter class by module path that must subclass ``L2AdapterInterface``,
  built as ``cls(adapter_params)`` (plus ``l1_memory_desc=`` when there is
  one) when the module has no config class for it.
* ``native_connector_l2_adapter.py`` and ``base.py`` with the store-capacity
  reservation of LMCache PR #4838 (open; issue 45 names it; the code index
  holds no thread of it, only its text on branches of forks):
  native_connector_l2_adapter.py as at myshytf/LMCache
  828b2b617d2ce80cabedc21e755e6591c09cbff8 and yatesdr/LMCache
  1d1471420a5939f377ecb6141cf52e3c5e96fe35, base.py as at yatesdr/LMCache
  1d1471420a5939f377ecb6141cf52e3c5e96fe35 (``_try_reserve_store_bytes``,
  ``_settle_store_reservation``, ``_release_store_reservation``). Against
  mainline (0b43a45563fe5c25dc80ac9f8be16d3f20d86b22, the bridge this
  stand-in followed before) the PR reserves before each store, charges the
  keys a completion's per-key list says were stored (mainline: every key
  of an ``ok`` batch, none of another) and keeps the buffers until the
  completion. yatesdr's branch also seeds the accounting from a startup
  inventory (``initial_key_sizes``), which no factory passes: left out.
  The bridge follows mainline's text too (re-read 2026-12-06, the same
  commit): ``NativeConnectorL2Adapter.reserve = False``, under which
  test_lmcache_mainline runs the adapter's tests again.
* ``lmcache/v1/distributed/api.py`` (at 000e8777a114b0f687cbdc8d06d075886de6895a
  and a newer version without a commit): ``ObjectKey`` (chunk_hash,
  model_name, kv_rank, object_group_id, cache_salt, the per-user isolation
  salt) and its wire string.
* ``storage_controllers/eviction_controller.py`` (the newest version the
  index holds, with per-cache_salt quota eviction) and
  ``eviction_policy/lru.py`` at 01c71b71c98821524b3f74f2b73c3aef776a0cf6:
  the global L2 eviction round (module ``eviction``).

The bridge, the interface and the factories are also installed under
LMCache's module names by ``install()``, so that l3cache's ``plugin``
adapter, which subclasses LMCache's bridge, imports them as it would
LMCache's own. Written for these tests from what those files do; none of
their code.
"""
import importlib
import logging
import sys
import types

from .api import MemoryObj, ObjectKey, buffer_view, kv_rank, object_key_to_string
from .base import AdapterUsage, L2AdapterInterface
from .bridge import NativeConnectorL2Adapter
from .eviction import EvictionConfig, L2EvictionController

__all__ = ["AdapterUsage", "EvictionConfig", "L2AdapterInterface", "L2EvictionController", "MemoryObj",
           "NativeAdapter", "NativeConnectorL2Adapter", "ObjectKey", "buffer_view", "install", "kv_rank",
           "load_native_plugin", "load_plugin", "object_key_to_string"]

log = logging.getLogger("lmcache_standin")

NativeAdapter = NativeConnectorL2Adapter

REQUIRED = ["event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
            "drain_completions", "close"]


def _check_spec(spec):
    for field in ("module_path", "class_name"):
        if not isinstance(spec.get(field), str) or not spec[field]:
            raise ValueError("%s must be a non-empty string" % field)
    params = spec.get("adapter_params", {})
    if not isinstance(params, dict):
        raise ValueError("adapter_params must be a dict")
    return params


def load_native_plugin(spec):
    """The ``native_plugin`` factory: the client from its JSON config,
    checked, behind the bridge."""
    params = _check_spec(spec)
    module = importlib.import_module(spec["module_path"])
    client = getattr(module, spec["class_name"])(**params)
    for name in REQUIRED:
        if not callable(getattr(client, name, None)):
            if callable(getattr(client, "close", None)):
                client.close()
            raise TypeError("%s.%s instance missing required method '%s'"
                            % (spec["module_path"], spec["class_name"], name))
    if not callable(getattr(client, "submit_batch_delete", None)):
        log.warning("no submit_batch_delete: L2 eviction delete will be a no-op")
    return NativeConnectorL2Adapter(client, float(spec.get("max_capacity_gb", 0)))


def load_plugin(spec):
    """The ``plugin`` factory: an adapter class of the module, which must
    subclass ``L2AdapterInterface``, built from ``adapter_params``."""
    install()
    params = _check_spec(spec)
    module = importlib.import_module(spec["module_path"])
    cls = getattr(module, spec["class_name"])
    if not (isinstance(cls, type) and issubclass(cls, L2AdapterInterface)):
        raise TypeError("%s.%s is not a subclass of L2AdapterInterface" % (spec["module_path"], spec["class_name"]))
    return cls(params)


_MODULES = {
    "lmcache": {},
    "lmcache.v1": {},
    "lmcache.v1.distributed": {},
    "lmcache.v1.distributed.api": {"ObjectKey": ObjectKey},
    "lmcache.v1.distributed.l2_adapters": {},
    "lmcache.v1.distributed.l2_adapters.base": {"L2AdapterInterface": L2AdapterInterface,
                                                "AdapterUsage": AdapterUsage},
    "lmcache.v1.distributed.l2_adapters.native_connector_l2_adapter": {
        "NativeConnectorL2Adapter": NativeConnectorL2Adapter, "object_key_to_string": object_key_to_string},
}


def install():
    """Make LMCache's module names import this stand-in (once; never over
    a real LMCache)."""
    if "lmcache" in sys.modules and not getattr(sys.modules["lmcache"], "__standin__", False):
        return
    for name, attrs in _MODULES.items():
        module = sys.modules.get(name)
        if module is None:
            module = types.ModuleType(name)
            module.__standin__ = True
            module.__path__ = []
            sys.modules[name] = module
        for attr, value in attrs.items():
            setattr(module, attr, value)
