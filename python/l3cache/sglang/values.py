"""SGLang's abstract (copying) storage interface over the KV pool: pages
by value, as flat tensors (``get``, ``batch_get``, ``set``,
``batch_set``, ``exists``), each stored as the same multi-range object
the zero-copy calls store, so either interface reads what the other
wrote."""

from typing import Any, List, Sequence, Tuple

from .common import guarded


class ByValue:
    """The by-value calls of L3CacheHiCacheStorage (a mixin: it uses the
    backend's ``_need_anchor``, ``_store``, ``_hints`` and
    ``_settle_pending``)."""

    _store: Any

    def _need_anchor(self) -> Any:
        raise NotImplementedError

    def _hints(self, keys: Sequence[str]) -> Any:
        raise NotImplementedError

    def _settle_pending(self, keys: Sequence[str], ok: Sequence[bool]) -> None:
        raise NotImplementedError

    def _page_split(self, nbytes: int) -> Tuple[List[int], List[int]]:
        """The ranges of a flat KV page of `nbytes`: the pool's per-page
        range sizes, back to back."""
        import torch
        _, sizes = self._need_anchor().host.get_page_buffer_meta(
            torch.arange(self._need_anchor().page_size, dtype=torch.int64))
        sizes = [int(s) for s in sizes]
        if sum(sizes) != nbytes:
            sizes = [nbytes]
        offsets, at = [], 0
        for s in sizes:
            offsets.append(at)
            at += s
        return offsets, sizes

    def _tensor_io(self, put: bool, keys: Sequence[str], tensors: Sequence[Any]) -> List[bool]:
        ok: List[bool] = []
        for key, t in zip(keys, tensors):
            t = t.contiguous() if put else t
            nbytes = t.numel() * t.element_size()
            offsets, sizes = self._page_split(nbytes)
            args = (self._need_anchor().keys([key]), t.data_ptr(), nbytes, offsets, sizes, len(sizes))
            if put:
                ok += self._store.batch_put_from_v(*args, **self._hints([key]))
            else:
                ok += self._store.batch_get_into_v(*args)
        return ok

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        """A page into `target_location` (or a new flat page); None on a miss."""
        out = self.batch_get([key], [target_location] if target_location is not None else None)
        return out[0]

    def batch_get(self, keys: List[str], target_locations: Any = None, target_sizes: Any = None) -> List[Any]:
        """Pages into contiguous tensors; None for each miss."""
        if target_locations is None:
            target_locations = [self._need_anchor().host.get_dummy_flat_data_page() for _ in keys]
        for t in target_locations:
            if not t.is_contiguous():
                raise ValueError("l3cache: a target location must be contiguous")
        ok = guarded(lambda: self._tensor_io(False, keys, target_locations), len(keys), "get")
        return [t if hit else None for t, hit in zip(target_locations, ok)]

    def set(self, key: str, value: Any = None, target_location: Any = None, target_sizes: Any = None) -> bool:
        """Store one page by value (create-only)."""
        return self.batch_set([key], [value])

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        """Store pages by value (create-only); True when every one was."""
        if values is None:
            return False
        ok = guarded(lambda: self._tensor_io(True, keys, values), len(keys), "set")
        self._settle_pending(keys, ok)
        return all(ok)

    def exists(self, key: str) -> bool:
        """Whether the KV page is stored."""
        return self._store.batch_exists(self._need_anchor().keys([key]))[0]
