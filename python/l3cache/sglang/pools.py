"""SGLang's Host pools as the backend takes them: what can be stored
(contiguous page ranges, no DCP, a Host buffer, pages it exposes), and
the buffers registered with the store as Host regions."""

from typing import Any, List, Tuple

SUPPORTED_LAYOUTS = ("page_first", "page_first_direct", "page_head")


def tensors_of(pool: Any) -> List[Any]:
    """The Host tensors a pool's pages live in: what it exposes for
    zero-copy registration, else its kv_buffer (a tensor, a tuple or a list)."""
    if hasattr(pool, "get_hybrid_pool_buffer"):
        found = pool.get_hybrid_pool_buffer()
    else:
        found = getattr(pool, "kv_buffer", None)
    if found is None:
        return []
    if not isinstance(found, (list, tuple)):
        found = [found]
    return [t for t in found if t is not None and t.numel() > 0]


def spans_of(pool: Any) -> List[Tuple[int, int]]:
    """The [start, end) address spans of a pool's Host tensors."""
    return [(int(t.data_ptr()), int(t.data_ptr()) + int(t.numel() * t.element_size())) for t in tensors_of(pool)]


def merge(spans: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """[start, end) spans, sorted, overlapping or touching ones merged."""
    out: List[List[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def check_pool(pool: Any, pool_name: str) -> None:
    """Refuse, with a message that says why, what cannot be stored."""
    layout = getattr(pool, "layout", None)
    if layout not in SUPPORTED_LAYOUTS:
        raise ValueError(
            "l3cache: Host pool %r has layout %r, which is not supported: a page must be contiguous "
            "per range; start SGLang with --hicache-mem-layout page_first_direct (or page_first)"
            % (pool_name, layout))
    if int(getattr(pool, "dcp_size", 1) or 1) > 1:
        raise ValueError("l3cache: Host pool %r is decode-context-parallel (dcp_size %d): SGLang's L3 "
                         "page paths are not DCP-aware; run HiCache with DCP on L1/L2 only"
                         % (pool_name, pool.dcp_size))
    if not tensors_of(pool):
        raise ValueError(
            "l3cache: Host pool %r has no Host buffer (kv_buffer is None: an MLA dummy pool of a "
            "non-source rank, or a destroyed pool); this rank cannot read or write L3 pages"
            % pool_name)
    import torch
    try:
        pool.get_page_buffer_meta(torch.arange(int(pool.page_size), dtype=torch.int64))
    except NotImplementedError as e:  # MXFP8 pools: scales live outside the buffer
        raise ValueError("l3cache: Host pool %r does not expose its pages for L3 storage: %s"
                         % (pool_name, e)) from e
