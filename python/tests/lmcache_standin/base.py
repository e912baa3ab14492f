"""LMCache's L2 adapter interface as the bridge and the eviction controller
use it (``lmcache/v1/distributed/l2_adapters/base.py``): listeners, the
byte accounting every adapter feeds through ``_notify_keys_stored`` /
``_notify_keys_deleted`` (aggregate and per ``cache_salt``, clamped at 0),
``get_usage()``, ``supports_global_eviction``, and the store-capacity
reservation of the PR named in ``__init__``: ``_try_reserve_store_bytes``
refuses when used + reserved + size would pass the capacity,
``_settle_store_reservation`` releases a reservation and charges what was
stored in one step, ``_release_store_reservation`` gives one back."""
import threading
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class AdapterUsage:
    total_bytes_used: int
    total_capacity_bytes: int
    bytes_by_cache_salt: Mapping[str, int] = field(default_factory=dict)

    @property
    def usage_fraction(self):
        if self.total_capacity_bytes <= 0:
            return -1.0
        return self.total_bytes_used / self.total_capacity_bytes


class L2AdapterInterface:
    """The parts of the interface the tests meet (the abstract submit /
    query methods are the bridge's)."""

    def __init__(self, max_capacity_bytes=0):
        self._listeners = []
        self._max_capacity_bytes = max_capacity_bytes
        self._total_bytes_used = 0
        self._reserved_store_bytes = 0
        self._bytes_by_cache_salt = {}
        self._usage_lock = threading.Lock()

    def register_listener(self, listener):
        self._listeners.append(listener)

    @property
    def supports_global_eviction(self):
        return self._max_capacity_bytes > 0

    def _apply_stored(self, keys, sizes):
        for key, size in zip(keys, sizes):
            self._total_bytes_used += size
            self._bytes_by_cache_salt[key.cache_salt] = self._bytes_by_cache_salt.get(key.cache_salt, 0) + size

    def _notify_keys_stored_observers(self, keys, sizes):
        for listener in self._listeners:
            listener.on_l2_keys_stored(keys, sizes)

    def _notify_keys_stored(self, keys, sizes):
        with self._usage_lock:
            self._apply_stored(keys, sizes)
        self._notify_keys_stored_observers(keys, sizes)

    def _try_reserve_store_bytes(self, size):
        if size < 0:
            raise ValueError("store reservation size must be non-negative")
        with self._usage_lock:
            projected = self._total_bytes_used + self._reserved_store_bytes + size
            if self._max_capacity_bytes > 0 and projected > self._max_capacity_bytes:
                return False
            self._reserved_store_bytes += size
            return True

    def _settle_store_reservation(self, reserved_bytes, keys, sizes):
        with self._usage_lock:
            if reserved_bytes > self._reserved_store_bytes:
                raise RuntimeError("store reservation accounting underflow")
            self._reserved_store_bytes -= reserved_bytes
            self._apply_stored(keys, sizes)

    def _release_store_reservation(self, reserved_bytes):
        with self._usage_lock:
            if reserved_bytes > self._reserved_store_bytes:
                raise RuntimeError("store reservation accounting underflow")
            self._reserved_store_bytes -= reserved_bytes

    def get_reserved_store_bytes(self):
        with self._usage_lock:
            return self._reserved_store_bytes

    def _notify_keys_accessed(self, keys):
        for listener in self._listeners:
            listener.on_l2_keys_accessed(keys)

    def _notify_keys_deleted(self, keys, sizes):
        with self._usage_lock:
            for key, size in zip(keys, sizes):
                self._total_bytes_used -= size
                left = self._bytes_by_cache_salt.get(key.cache_salt, 0) - size
                if left <= 0:
                    self._bytes_by_cache_salt.pop(key.cache_salt, None)
                else:
                    self._bytes_by_cache_salt[key.cache_salt] = left
            self._total_bytes_used = max(self._total_bytes_used, 0)  # upstream clamps and warns
        for listener in self._listeners:
            listener.on_l2_keys_deleted(keys)

    def delete(self, keys):
        return None

    def get_usage(self):
        with self._usage_lock:
            return AdapterUsage(self._total_bytes_used, self._max_capacity_bytes,
                                MappingProxyType({k: v for k, v in self._bytes_by_cache_salt.items() if v > 0}))
