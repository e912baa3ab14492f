"""Follows python/sglang/srt/mem_cache/storage/backend_factory.py at
001067fffe33427bee0ed2f007fb7551a1d76b44 (its newest stored text; the
``dynamic`` path unchanged since aaf8ab0e6532d04e262aac3539ff6d25728ee46b):
built-in backends registered by name with lazy loading (module path and
class), each built as upstream builds it (``file``, ``sim`` and ``nixl``
from the storage config alone; ``mooncake``, ``aibrix``, ``eic``, ``simm``,
``mori``, ``shm`` and ``kvcc`` with the Host pool too; ``hf3fs`` through
``from_env_config`` with the page's bytes and dtype); the ``dynamic``
path: the three required fields, import by module path, the
HiCacheStorage subclass check, and construction as
``cls(storage_config, kwargs)`` without the Host pool. Of the built-in
modules only ``file`` (hicache_storage.HiCacheFile) is in the stand-in."""
import importlib

from .hicache_storage import HiCacheStorage


class StorageBackendFactory:
    _registry = {}

    @staticmethod
    def _load_backend_class(module_path, class_name, backend_name):
        try:
            module = importlib.import_module(module_path)
            backend_class = getattr(module, class_name)
            if not issubclass(backend_class, HiCacheStorage):
                raise TypeError("Backend class %s must inherit from HiCacheStorage" % class_name)
            return backend_class
        except ImportError as e:
            raise ImportError("Failed to import backend '%s' from '%s': %s" % (backend_name, module_path, e)) from e
        except AttributeError as e:
            raise AttributeError("Class '%s' not found in module '%s': %s" % (class_name, module_path, e)) from e

    @classmethod
    def register_backend(cls, name, module_path, class_name):
        cls._registry[name] = {"loader": lambda: cls._load_backend_class(module_path, class_name, name),
                               "module_path": module_path, "class_name": class_name}

    @classmethod
    def create_backend(cls, backend_name, storage_config, mem_pool_host, **kwargs):
        if backend_name in cls._registry:
            backend_class = cls._registry[backend_name]["loader"]()
            return cls._create_builtin_backend(backend_name, backend_class, storage_config, mem_pool_host)
        if backend_name == "dynamic" and storage_config.extra_config is not None:
            return cls._create_dynamic_backend(storage_config.extra_config, storage_config, mem_pool_host, **kwargs)
        raise ValueError("Unknown storage backend '%s'. Registered backends: %s. "
                         % (backend_name, list(cls._registry)))

    @classmethod
    def _create_dynamic_backend(cls, backend_config, storage_config, mem_pool_host, **kwargs):
        for field in ("backend_name", "module_path", "class_name"):
            if field not in backend_config:
                raise ValueError("Missing required field '%s' in backend config for 'dynamic' backend" % field)
        backend_class = cls._load_backend_class(backend_config["module_path"], backend_config["class_name"],
                                                backend_config["backend_name"])
        return backend_class(storage_config, kwargs)

    @classmethod
    def _create_builtin_backend(cls, backend_name, backend_class, storage_config, mem_pool_host):
        if backend_name in ("file", "sim", "nixl"):
            return backend_class(storage_config)
        if backend_name in ("mooncake", "aibrix", "eic", "simm", "mori", "shm", "kvcc"):
            return backend_class(storage_config, mem_pool_host)
        if backend_name == "hf3fs":
            if mem_pool_host.layout in ("page_first", "page_first_direct"):
                bytes_per_page = mem_pool_host.get_ksize_per_token() * mem_pool_host.page_size
            else:
                bytes_per_page = mem_pool_host.get_size_per_token() * mem_pool_host.page_size
            return backend_class.from_env_config(bytes_per_page, mem_pool_host.dtype, storage_config)
        raise ValueError("Unknown built-in backend: %s" % backend_name)


for _name, _module, _cls in (
        ("file", "sglang.srt.mem_cache.hicache_storage", "HiCacheFile"),
        ("sim", "sglang.srt.mem_cache.storage.sim_storage", "SimHiCacheStorage"),
        ("nixl", "sglang.srt.mem_cache.storage.nixl.hicache_nixl", "HiCacheNixl"),
        ("mooncake", "sglang.srt.mem_cache.storage.mooncake_store.mooncake_store", "MooncakeStore"),
        ("hf3fs", "sglang.srt.mem_cache.storage.hf3fs.storage_hf3fs", "HiCacheHF3FS"),
        ("aibrix", "sglang.srt.mem_cache.storage.aibrix_kvcache.aibrix_kvcache_storage", "AibrixKVCacheStorage"),
        ("eic", "sglang.srt.mem_cache.storage.eic.eic_storage", "EICStorage"),
        ("simm", "sglang.srt.mem_cache.storage.simm.hicache_simm", "HiCacheSiMM"),
        ("mori", "sglang.srt.mem_cache.storage.umbp.umbp_store", "UMBPStore"),
        ("shm", "sglang.srt.mem_cache.storage.shm", "HiCacheShm"),
        ("kvcc", "sglang.srt.mem_cache.storage.kvcc.kvcc_store", "KVCCStore")):
    StorageBackendFactory.register_backend(_name, _module, _cls)
