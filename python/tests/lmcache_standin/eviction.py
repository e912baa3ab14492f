"""LMCache's L2 eviction as it drives an adapter's deletes
(``lmcache/v1/distributed/storage_controllers/eviction_controller.py``:
``L2AdapterEvictionState``, ``L2EvictionController._check_and_evict_global``;
``eviction_policy/lru.py``; the ``L2EvictionPolicy`` listener bridge of
``eviction.py``): a policy per adapter, fed by the adapter's listener
events (stored: created, loaded: touched, deleted: removed); once a
second, when ``usage_fraction`` is at or over ``trigger_watermark``, the
oldest ``eviction_ratio`` of the tracked keys (at least one) are handed
to ``adapter.delete()``. A key stays tracked until a delete reports it
deleted, so one that never does is chosen again every round.

``check()`` runs one round (the tests call it instead of the thread)."""
import threading
from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class EvictionConfig:
    eviction_policy: str = "LRU"
    trigger_watermark: float = 0.8
    eviction_ratio: float = 0.2


class LRUEvictionPolicy:
    def __init__(self):
        self._lock = threading.Lock()
        self._order = OrderedDict()

    def on_keys_created(self, keys):
        with self._lock:
            for k in keys:
                if k in self._order:
                    self._order.move_to_end(k)
                else:
                    self._order[k] = None

    def on_keys_touched(self, keys):
        with self._lock:
            for k in keys:
                if k in self._order:
                    self._order.move_to_end(k)

    def on_keys_removed(self, keys):
        with self._lock:
            for k in keys:
                self._order.pop(k, None)

    def get_eviction_actions(self, expected_ratio):
        with self._lock:
            if not self._order:
                return []
            ratio = max(0.0, min(1.0, expected_ratio))
            count = int(len(self._order) * ratio) or (1 if ratio > 0 else 0)
            return [list(self._order)[:count]] if count else []

    def tracked(self):
        with self._lock:
            return list(self._order)


class L2EvictionPolicy:
    """The listener bridge from adapter events to the policy."""

    def __init__(self, policy):
        self.policy = policy

    def on_l2_keys_stored(self, keys, sizes=None):
        self.policy.on_keys_created(keys)

    def on_l2_keys_accessed(self, keys):
        self.policy.on_keys_touched(keys)

    def on_l2_keys_deleted(self, keys):
        self.policy.on_keys_removed(keys)


class L2EvictionController:
    """One adapter's eviction state and the global (aggregate) check."""

    def __init__(self, adapter, config=None):
        self.adapter = adapter
        self.config = config or EvictionConfig()
        self.policy = LRUEvictionPolicy()
        adapter.register_listener(L2EvictionPolicy(self.policy))
        self.rounds = 0

    def check(self):
        """One round: delete the oldest keys when usage is at the watermark.
        Whether it ran."""
        usage = self.adapter.get_usage().usage_fraction
        if usage < 0 or usage < self.config.trigger_watermark:
            return False
        self.rounds += 1
        for keys in self.policy.get_eviction_actions(self.config.eviction_ratio):
            self.adapter.delete(keys)
        return True
