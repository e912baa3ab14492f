"""l3cache as LMCache's L2 through its ``plugin`` adapter type, with
LMCache's usage kept to what the store holds, whoever evicts.

    lmcache server --l1-size-gb 100 --eviction-policy LRU \\
      --l2-adapter '{"type": "plugin", "module_path": "l3cache.lmcache_plugin",
                     "class_name": "L3CacheL2Adapter",
                     "adapter_params": {"config": "/etc/l3cache.json", "max_capacity_gb": 800}}'

``L3CacheL2Adapter`` is LMCache's own bridge (``NativeConnectorL2Adapter``,
imported from LMCache) over :class:`l3cache.lmcache.L3CacheConnector`:
every store, lookup, load, delete, the byte accounting and the capacity
reservation are LMCache's. What it adds: the connector reads the store's
removal feed against the keys it stored, and the adapter hands the keys
that left the store (evicted by its policy, deleted by another process,
dropped after a failed check) to the bridge's ``delete()``, the interface
LMCache's own eviction uses. The connector answers such a DELETE True (the
store does not hold them), so the bridge subtracts their bytes and
LMCache's eviction policy forgets them, as for any delete. It does so
before each store is reserved, and every ``reconcile_seconds`` besides.

``adapter_params``: the connector's keyword arguments (``config``,
``workers``, ``max_pending``, ``register_min_bytes``, ``lease_seconds``),
``max_capacity_gb`` (LMCache's cap for its usage; 0: none) and
``reconcile_seconds`` (0: only before stores). An ``"eviction"`` block is
optional: without one, l3cache's eviction alone makes room, and LMCache's
usage follows it.
"""

import logging
import threading
from typing import Any, Dict, List, Optional

from lmcache.v1.distributed.api import ObjectKey  # type: ignore[import-not-found]
from lmcache.v1.distributed.l2_adapters.native_connector_l2_adapter import (  # type: ignore[import-not-found]
    NativeConnectorL2Adapter,
)

from .lmcache import L3CacheConnector

__all__ = ["L3CacheL2Adapter", "object_key_of"]

log = logging.getLogger(__name__)


def object_key_of(wire: Any) -> Optional[Any]:
    """The ``ObjectKey`` whose native-connector wire string is ``wire``
    (``model@kv_rank@group@hash[@salt]``, all hex but the model and the
    salt), or None for a string of another shape."""
    text = wire.decode("utf-8") if isinstance(wire, bytes) else str(wire)
    fields = text.split("@")
    if len(fields) not in (4, 5):
        return None
    try:
        return ObjectKey(chunk_hash=bytes.fromhex(fields[3]), model_name=fields[0], kv_rank=int(fields[1], 16),
                         object_group_id=int(fields[2], 16), cache_salt=fields[4] if len(fields) == 5 else "")
    except ValueError:
        return None


class L3CacheL2Adapter(NativeConnectorL2Adapter):  # type: ignore[misc]
    """LMCache's bridge over an l3cache connector that tells LMCache of
    every one of its keys that leaves the store (see the module)."""

    def __init__(self, params: Dict[str, Any], l1_memory_desc: Any = None) -> None:
        params = dict(params or {})
        capacity_gb = float(params.pop("max_capacity_gb", 0) or 0)
        interval = float(params.pop("reconcile_seconds", 1.0) or 0)
        connector = L3CacheConnector(**params)
        self._l3_connector = connector
        self._l3_reconciling = threading.Lock()
        self._l3_stop = threading.Event()
        self._l3_reconciled = 0
        try:
            super().__init__(connector, max_capacity_gb=capacity_gb, type_name="l3cache")
        except Exception:
            connector.close()
            raise
        self._l3_thread: Optional[threading.Thread] = None
        if interval > 0:
            self._l3_thread = threading.Thread(target=self._l3_loop, args=(interval,), daemon=True,
                                               name="l3cache-reconcile")
            self._l3_thread.start()

    @property
    def connector(self) -> L3CacheConnector:
        """The l3cache connector under the bridge."""
        return self._l3_connector

    @property
    def reconciled_keys(self) -> int:
        """Keys that left the store and were deleted from LMCache's
        accounting so far."""
        return self._l3_reconciled

    def reconcile(self) -> int:
        """Delete, through the bridge, this adapter's keys that have left
        the store; how many. A call while another runs returns 0."""
        if not self._l3_reconciling.acquire(blocking=False):
            return 0
        try:
            wires = self._l3_connector.removed_keys()
            if not wires:
                return 0
            keys: List[Any] = []
            for wire in wires:
                key = object_key_of(wire)
                if key is not None:
                    keys.append(key)
            if keys:
                self.delete(keys)
            self._l3_reconciled += len(keys)
            return len(keys)
        finally:
            self._l3_reconciling.release()

    def submit_store_task(self, keys: List[Any], objects: List[Any]) -> int:
        """LMCache's store, once the keys that left the store are out of
        its usage (so its capacity reservation sees what the store holds)."""
        try:
            self.reconcile()
        except Exception as e:  # a store must not fail for the bookkeeping
            log.warning("l3cache reconcile before a store: %s", e)
        return super().submit_store_task(keys, objects)

    def report_status(self) -> Dict[str, Any]:
        """The bridge's status and the connector's removal counts."""
        status = dict(super().report_status()) if hasattr(super(), "report_status") else {"is_healthy": True}
        status.update({k: v for k, v in self._l3_connector.stats().items() if not isinstance(v, dict)})
        status["reconciled_keys"] = self._l3_reconciled
        return status

    def close(self) -> None:
        """Stop reconciling, then close the bridge (and the connector)."""
        self._l3_stop.set()
        if self._l3_thread is not None:
            self._l3_thread.join(timeout=35)
        super().close()

    def _l3_loop(self, interval: float) -> None:
        while not self._l3_stop.wait(interval):
            try:
                self.reconcile()
            except Exception as e:
                log.warning("l3cache reconcile: %s", e)
