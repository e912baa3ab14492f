"""The executor from Python: query/get/put/cancel operations keyed by
(group, content hash, page offset) over a Host pool laid out in blocks,
completions polled with the queues' pressure (executor/l3_executor.h)."""

import ctypes
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._ffi import (Config, Error, Operation, Poll, StorageKey, check, config_text, host_array, load,
                   take_string)
from .store import Store

__all__ = ["Executor"]

_KINDS = {"query": 0, "get": 1, "put": 2, "cancel": 3}


class Executor:
    """The executor over a Store (which it takes over) and a Host pool laid
    out as `layout` (a dict: groups, lcm_block_bytes, num_lcm_blocks,
    owner_rank, tp_rank). `config` is the l3cache config (its executor and
    namespace sections apply); by default the store's. A layout whose
    groups name other regions (a group's "region": r) is given those
    regions' ``(ptr, nbytes)`` in `regions`, region 1 first."""

    def __init__(self, store: Store, host_ptr: int, host_len: int, layout: Dict[str, Any],
                 config: Optional[Config] = None, regions: Sequence[Tuple[int, int]] = ()) -> None:
        lib = load()
        handle = ctypes.c_void_p()
        err = Error()
        text = config_text(config) if config is not None else store.config_json
        all_regions = [(host_ptr, host_len)] + list(regions)
        check(lib.l3_executor_start_json(store.handles()[1], host_array(all_regions), len(all_regions),
                                         json.dumps(layout).encode(), text.encode(), ctypes.byref(handle),
                                         ctypes.byref(err)), err)
        self._handle = handle.value
        self._store = store
        store.give_to(self)
        self._keep: List[Any] = []

    def submit(self, operations: Sequence[Dict[str, Any]]) -> None:
        """Submit operations, in order: dicts with kind ("query", "get",
        "put", "cancel"), op_id, keys [(group, content_hash, page_offset)]
        and, for get/put, host_blocks."""
        lib = load()
        ops = (Operation * len(operations))()
        keep = []
        for i, op in enumerate(operations):
            keys = op.get("keys", [])
            karr = (StorageKey * max(len(keys), 1))()
            for k, (group, content_hash, page_offset) in enumerate(keys):
                raw = content_hash.encode()
                if b"\0" in raw:
                    raise ValueError("a content hash contains a NUL byte")
                keep.append(raw)
                karr[k] = StorageKey(group, raw, page_offset)
            blocks = op.get("host_blocks", [])
            barr = (ctypes.c_int32 * max(len(blocks), 1))(*blocks)
            keep += [karr, barr]
            ops[i] = Operation(_KINDS[op["kind"]], op["op_id"], karr, len(keys), barr, len(blocks))
        err = Error()
        check(lib.l3_executor_submit(self._handle, ops, len(operations), ctypes.byref(err)), err)

    def poll(self) -> Dict[str, Any]:
        """Completions since the last poll and the queues' pressure."""
        lib = load()
        p = Poll()
        err = Error()
        check(lib.l3_executor_poll(self._handle, ctypes.byref(p), ctypes.byref(err)), err)
        try:
            completions = []
            for i in range(p.num_completions):
                c = p.completions[i]
                completions.append({
                    "op_id": c.op_id,
                    "success": [bool(c.success[k]) for k in range(c.num_keys)],
                    "object_failures": [bool(c.object_failures[k]) for k in range(c.num_keys)],
                    "retired": bool(c.retired),
                })
            return {"now_us": p.now_us, "completions": completions,
                    "pressure": {"queued_operations": p.pressure.queued_operations,
                                 "queued_bytes": p.pressure.queued_bytes,
                                 "oldest_operation_us": p.pressure.oldest_operation_us}}
        finally:
            lib.l3_poll_release(ctypes.byref(p))

    def snapshot(self) -> Dict[str, Any]:
        """The executor's counters (the reference snapshot's names)."""
        return json.loads(take_string(load().l3_executor_snapshot_json(self._handle)))

    def metrics(self) -> str:
        """Executor and store metrics as Prometheus text exposition."""
        return take_string(load().l3_metrics_of(self._handle, self._store.handles()[0]))

    def key_prefix(self) -> str:
        """The namespace prefix objects are named under now."""
        buf = ctypes.create_string_buffer(70)
        load().l3_executor_key_prefix(self._handle, buf)
        return buf.value.decode()

    def is_idle(self) -> bool:
        """No operation is queued or running."""
        return bool(load().l3_executor_is_idle(self._handle))

    def set_weight_version(self, weight_version: str) -> None:
        """Name new objects under another weight version (only while idle)."""
        err = Error()
        check(load().l3_executor_set_weight_version(self._handle, weight_version.encode(),
                                                    ctypes.byref(err)), err)

    def delete_namespace(self) -> bool:
        """Delete the current namespace's objects (only while idle)."""
        return bool(load().l3_executor_delete_namespace(self._handle))

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers and close the store. Raises L3Error
        (L3_EUNRETIRED) when native I/O is unproven: keep the Host pool
        alive for the rest of the process then."""
        if self._handle is None:
            return
        lib = load()
        err = Error()
        status = lib.l3_executor_close(self._handle, timeout, ctypes.byref(err))
        if status == 0:
            lib.l3_executor_free(self._handle)
            self._store.closed_by_owner()
        self._handle = None
        check(status, err)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
