"""A small stand-in of the parts of SGLang that a HiCache storage backend
meets, written from SGLang's contract (python/sglang/srt/mem_cache/
hicache_storage.py, storage/backend_factory.py, memory_pool_host.py):
the HiCacheStorage interface and its config, the factory's ``dynamic``
loading path, StorageMetrics, and Host KV pools (MHA and MLA) with
kv_buffer, get_page_buffer_meta, page_size, dtype and layout.

``install()`` puts the modules into sys.modules, as if SGLang were there.
"""
import importlib
import sys
import types
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import List, Optional

import torch


@dataclass
class HiCacheStorageConfig:
    tp_rank: int
    tp_size: int
    pp_rank: int
    pp_size: int
    attn_cp_rank: int
    attn_cp_size: int
    is_mla_model: bool
    enable_storage_metrics: bool
    is_page_first_layout: bool
    model_name: Optional[str]
    dp_rank: int = 0
    dp_size: int = 1
    tp_lcm_size: Optional[int] = None
    should_split_heads: bool = False
    extra_config: Optional[dict] = None


@dataclass
class HiCacheStorageExtraInfo:
    prefix_keys: Optional[List[str]] = None
    extra_info: Optional[dict] = None


class HiCacheStorage(ABC):
    """The interface: v1 batch calls (not abstract: they raise), abstract
    get/batch_get/set/batch_set/exists, batch_exists counting from the
    start, clear and get_stats with defaults."""

    def register_mem_pool_host(self, mem_pool_host):
        self.mem_pool_host = mem_pool_host

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        raise NotImplementedError()

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        raise NotImplementedError()

    @abstractmethod
    def get(self, key, target_location=None, target_sizes=None):
        pass

    @abstractmethod
    def batch_get(self, keys, target_locations=None, target_sizes=None):
        pass

    @abstractmethod
    def set(self, key, value=None, target_location=None, target_sizes=None):
        pass

    @abstractmethod
    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        pass

    @abstractmethod
    def exists(self, key):
        pass

    def batch_exists(self, keys, extra_info=None):
        for i, key in enumerate(keys):
            if not self.exists(key):
                return i
        return len(keys)

    def clear(self):
        pass

    def get_stats(self):
        return None


class StorageBackendFactory:
    """The factory's dynamic path: import by module path, getattr the
    class, check issubclass, construct with (storage_config, kwargs)."""

    @staticmethod
    def _load_backend_class(module_path, class_name, backend_name):
        module = importlib.import_module(module_path)
        backend_class = getattr(module, class_name)
        if not issubclass(backend_class, HiCacheStorage):
            raise TypeError("Backend class %s must inherit from HiCacheStorage" % class_name)
        return backend_class

    @classmethod
    def create_backend(cls, backend_name, storage_config, mem_pool_host, **kwargs):
        if backend_name != "dynamic" or storage_config.extra_config is None:
            raise ValueError("Unknown storage backend %r" % backend_name)
        cfg = storage_config.extra_config
        for name in ("backend_name", "module_path", "class_name"):
            if name not in cfg:
                raise ValueError("Missing required field %r" % name)
        backend_class = cls._load_backend_class(cfg["module_path"], cfg["class_name"], cfg["backend_name"])
        return backend_class(storage_config, kwargs)


@dataclass
class StorageMetrics:
    prefetch_pgs: List[int] = field(default_factory=list)
    backup_pgs: List[int] = field(default_factory=list)
    prefetch_bandwidth: List[float] = field(default_factory=list)
    backup_bandwidth: List[float] = field(default_factory=list)


def _itemsize(dtype):
    """dtype.itemsize (torch >= 2.1 has it; Debian's 1.13 does not)."""
    return torch.tensor([], dtype=dtype).element_size()


def _aligned_tensor(shape, dtype, align=4096):
    """A zeroed tensor whose data starts on `align` (pinned Host memory is
    page-aligned; torch's CPU allocator only promises 64 bytes)."""
    itemsize = _itemsize(dtype)
    n = 1
    for d in shape:
        n *= d
    raw = torch.zeros(n * itemsize + align, dtype=torch.uint8)
    skip = (-raw.data_ptr()) % align
    return raw[skip:skip + n * itemsize].view(dtype).view(*shape)


class MHAPool:
    """SGLang's MHATokenToKVPoolHost, reduced: kv_buffer [2, size, layers,
    heads, dim] (page_first) or [2, layers, size, heads, dim] (layer_first);
    a page's K range and V range (v_offset apart) from get_page_buffer_meta."""

    def __init__(self, pages=32, page_size=16, layers=4, heads=2, dim=64, dtype=torch.bfloat16,
                 layout="page_first_direct"):
        self.page_size, self.layer_num, self.head_num, self.head_dim = page_size, layers, heads, dim
        self.size, self.dtype, self.layout = pages * page_size, dtype, layout
        shape = (2, layers, self.size, heads, dim) if layout == "layer_first" else (2, self.size, layers, heads, dim)
        self.kv_buffer = _aligned_tensor(shape, dtype)

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        base, item = self.kv_buffer.data_ptr(), _itemsize(self.dtype)
        v_offset = self.layer_num * self.size * self.head_num * self.head_dim * item
        idx = indices.tolist()
        ptrs = []
        if self.layout == "layer_first":
            for i in range(0, len(idx), self.page_size):
                for layer in range(self.layer_num):
                    k = base + (idx[i] + layer * self.size) * self.head_num * self.head_dim * item
                    ptrs += [k, k + v_offset]
            size = item * self.page_size * self.head_num * self.head_dim
        else:
            for i in range(0, len(idx), self.page_size):
                k = base + idx[i] * self.layer_num * self.head_num * self.head_dim * item
                ptrs += [k, k + v_offset]
            size = self.layer_num * item * self.page_size * self.head_num * self.head_dim
        return ptrs, [size] * len(ptrs)

    def page_bytes(self, page):
        """Page `page`'s K and V bytes (for checks)."""
        t = slice(page * self.page_size, (page + 1) * self.page_size)
        return [self.kv_buffer[c, t].contiguous().view(torch.uint8).clone() for c in (0, 1)]

    def get_dummy_flat_data_page(self):
        return torch.zeros(2 * self.page_size * self.layer_num * self.head_num * self.head_dim, dtype=self.dtype)

    def get_data_page(self, index, flat=True):
        page = self.kv_buffer[:, index:index + self.page_size]
        return page.flatten() if flat else page


class MLAPool:
    """SGLang's MLATokenToKVPoolHost, reduced: kv_buffer [size, layers, 1,
    kv_lora_rank + rope]; one range per page."""

    def __init__(self, pages=32, page_size=16, layers=4, kv_dim=576, dtype=torch.bfloat16,
                 layout="page_first"):
        self.page_size, self.layer_num, self.kv_dim = page_size, layers, kv_dim
        self.size, self.dtype, self.layout = pages * page_size, dtype, layout
        self.kv_buffer = _aligned_tensor((self.size, layers, 1, kv_dim), dtype)

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        base, item = self.kv_buffer.data_ptr(), _itemsize(self.dtype)
        idx = indices.tolist()
        ptrs = [base + idx[i] * self.layer_num * self.kv_dim * item for i in range(0, len(idx), self.page_size)]
        return ptrs, [self.layer_num * item * self.page_size * self.kv_dim] * len(ptrs)

    def page_bytes(self, page):
        t = slice(page * self.page_size, (page + 1) * self.page_size)
        return [self.kv_buffer[t].contiguous().view(torch.uint8).clone()]

    def get_dummy_flat_data_page(self):
        return torch.zeros(self.page_size * self.layer_num * self.kv_dim, dtype=self.dtype)


def install():
    """Make `import sglang.srt.mem_cache.hicache_storage` (and the factory
    and metrics modules) find this stand-in."""
    names = {
        "sglang": {}, "sglang.srt": {}, "sglang.srt.mem_cache": {}, "sglang.srt.mem_cache.storage": {},
        "sglang.srt.metrics": {},
        "sglang.srt.mem_cache.hicache_storage": {
            "HiCacheStorage": HiCacheStorage, "HiCacheStorageConfig": HiCacheStorageConfig,
            "HiCacheStorageExtraInfo": HiCacheStorageExtraInfo},
        "sglang.srt.mem_cache.storage.backend_factory": {"StorageBackendFactory": StorageBackendFactory},
        "sglang.srt.metrics.collector": {"StorageMetrics": StorageMetrics},
    }
    for name, attrs in names.items():
        mod = sys.modules.get(name) or types.ModuleType(name)
        mod.__dict__.update(attrs)
        if not attrs:
            mod.__path__ = []
        sys.modules[name] = mod
