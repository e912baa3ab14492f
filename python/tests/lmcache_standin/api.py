"""LMCache's key and buffer types, as its L2 adapters meet them:
``ObjectKey`` and its wire string (``lmcache/v1/distributed/api.py`` and
``object_key_to_string`` in ``native_connector_l2_adapter.py``), the
kv_rank packing, and the two things the bridge reads of an L1 memory
object (``byte_array``, ``get_size()``)."""
import ctypes
from dataclasses import dataclass

KEY_SEP = "@"


@dataclass(frozen=True)
class ObjectKey:
    """An object's identity: the chunk's hash under the model, the worker's
    slice (kv_rank), the object group and the per-user ``cache_salt``.
    Neither ``model_name`` nor ``cache_salt`` may contain ``@``."""

    chunk_hash: bytes
    model_name: str
    kv_rank: int
    object_group_id: int = 0
    cache_salt: str = ""

    def __post_init__(self):
        if KEY_SEP in self.model_name or KEY_SEP in self.cache_salt:
            raise ValueError("'@' in model_name or cache_salt")

    def wire(self):
        return object_key_to_string(self)


def object_key_to_string(key):
    """``model@{kv_rank:08x}@{group:x}@{hash hex}`` and ``@salt`` when salted."""
    base = "%s@%08x@%x@%s" % (key.model_name, key.kv_rank, key.object_group_id, key.chunk_hash.hex())
    return base + (KEY_SEP + key.cache_salt if key.cache_salt else "")


def kv_rank(world_size, global_rank, local_world_size, local_rank):
    return world_size << 24 | global_rank << 16 | local_world_size << 8 | local_rank


def buffer_view(address, nbytes):
    """What an L1 TensorMemoryObj's byte_array is: a writable c_ubyte view."""
    return memoryview((ctypes.c_ubyte * nbytes).from_address(address))


class MemoryObj:
    """An L1 memory object as the bridge uses it: its bytes and their size."""

    def __init__(self, view):
        self.byte_array = view

    def get_size(self):
        return len(self.byte_array)


def as_memory_obj(obj):
    """The tests may hand the bridge plain views: wrap them."""
    return obj if hasattr(obj, "byte_array") else MemoryObj(memoryview(obj))
