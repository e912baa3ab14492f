"""Follows python/sglang/srt/mem_cache/storage/backend_factory.py at
001067fffe33427bee0ed2f007fb7551a1d76b44 (the ``dynamic`` path, unchanged
since aaf8ab0e6532d04e262aac3539ff6d25728ee46b): the three required fields,
import by module path, the HiCacheStorage subclass check, and construction
as ``cls(storage_config, kwargs)`` without the Host pool."""
import importlib

from .hicache_storage import HiCacheStorage


class StorageBackendFactory:
    @staticmethod
    def _load_backend_class(module_path, class_name, backend_name):
        try:
            module = importlib.import_module(module_path)
        except ImportError as e:
            raise ImportError("Failed to import backend '%s' from '%s': %s" % (backend_name, module_path, e))
        try:
            backend_class = getattr(module, class_name)
        except AttributeError as e:
            raise AttributeError("Class '%s' not found in module '%s': %s" % (class_name, module_path, e))
        if not issubclass(backend_class, HiCacheStorage):
            raise TypeError("Backend class %s must inherit from HiCacheStorage" % class_name)
        return backend_class

    @classmethod
    def create_backend(cls, backend_name, storage_config, mem_pool_host, **kwargs):
        if backend_name != "dynamic" or storage_config.extra_config is None:
            raise ValueError("Unknown storage backend '%s'. Registered backends: []. " % backend_name)
        config = storage_config.extra_config
        for field in ("backend_name", "module_path", "class_name"):
            if field not in config:
                raise ValueError("Missing required field '%s' in backend config for 'dynamic' backend" % field)
        backend_class = cls._load_backend_class(config["module_path"], config["class_name"],
                                                config["backend_name"])
        return backend_class(storage_config, kwargs)
