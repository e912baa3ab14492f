"""Host pools as a storage backend meets them, following
python/sglang/srt/mem_cache/pool_host/ at these commits:

* mha.py 0047d999bb3a3ad311df5a4b6356bfb5586e0d66: MHATokenToKVPoolHost
  (kv_buffer one tensor [2, ...]; k_buffer/v_buffer its halves;
  get_hybrid_pool_buffer [k, v]; two ranges a page, v_offset apart) and
  AsymmetricMHATokenToKVPoolHost (kv_buffer a tuple (k_buffer, v_buffer) of
  two allocations, ranges of two sizes; the flat-page API raises).
* mla.py 01c0ede38cc9645488fd2847dbea8a2f6a9241d8: MLATokenToKVPoolHost
  (one range a page) and its dummy mode (kv_buffer None).
* mamba.py 02f0c2a0f8e4540dd6484b74f3d5b4ea4509f206: MambaPoolHost
  (page_size 1; kv_buffer a list [temporal, *conv]; ranges [temporal,
  conv_0, ...] a slot, of their own sizes).
* dsa.py 03ba7b5b7dd249244bd5af01b236fd6449c66e8d: the DSA indexer pool
  (no kv_buffer; index_k_with_scale_buffer; a slot's page is slot //
  page_size; one range a page).
* mha_mxfp8.py 02d20b8bfc3d023a255f8ca70332fb035ee5d7b3: the MXFP8 pool,
  whose page API raises NotImplementedError.
* group.py 0142dde6f8f9ca74d5572c9572da056ab912152e: PoolEntry and
  HostPoolGroup (entries, anchor_entry, entry_map).

Buffers start on 4 KiB, as pinned Host memory does (torch's CPU allocator
only promises 64 bytes).
"""
from dataclasses import dataclass
from typing import Any

import torch


def itemsize(dtype):
    return torch.tensor([], dtype=dtype).element_size()


def aligned(shape, dtype, align=4096):
    n = 1
    for d in shape:
        n *= d
    raw = torch.zeros(n * itemsize(dtype) + align, dtype=torch.uint8)
    skip = (-raw.data_ptr()) % align
    return raw[skip:skip + n * itemsize(dtype)].view(dtype).view(*shape)


class _Pages:
    """Helpers the tests use: a page's bytes, random fill, slot indices."""

    def slots(self, pages):
        return torch.cat([torch.arange(p * self.page_size, (p + 1) * self.page_size) for p in pages])

    def page_bytes(self, page):
        ptrs, sizes = self.get_page_buffer_meta(self.slots([page]))
        return [_view(p, s).numpy().tobytes() for p, s in zip(ptrs, sizes)]

    def fill(self, pages, seed):
        g = torch.Generator().manual_seed(seed)
        ptrs, sizes = self.get_page_buffer_meta(self.slots(pages))
        for p, s in zip(ptrs, sizes):
            _view(p, s).copy_(torch.randint(0, 256, (s,), generator=g, dtype=torch.uint8))

    def zero(self, pages):
        ptrs, sizes = self.get_page_buffer_meta(self.slots(pages))
        for p, s in zip(ptrs, sizes):
            _view(p, s).zero_()


def _view(ptr, size):
    """A uint8 tensor over [ptr, ptr + size) of a buffer these pools own."""
    import ctypes
    return torch.frombuffer((ctypes.c_uint8 * size).from_address(ptr), dtype=torch.uint8)


class MHATokenToKVPoolHost(_Pages):
    def __init__(self, pages=32, page_size=16, layers=4, heads=2, dim=64, dtype=torch.bfloat16,
                 layout="page_first_direct"):
        self.page_size, self.layer_num, self.head_num, self.head_dim = page_size, layers, heads, dim
        self.page_num, self.size, self.dtype, self.layout = pages, pages * page_size, dtype, layout
        shapes = {"layer_first": (2, layers, self.size, heads, dim),
                  "page_first": (2, self.size, layers, heads, dim),
                  "page_first_direct": (2, pages, layers, page_size, heads, dim),
                  "page_head": (2, pages, heads, page_size, layers, dim)}
        self.kv_buffer = aligned(shapes[layout], dtype)

    @property
    def k_buffer(self):
        return self.kv_buffer[0]

    @property
    def v_buffer(self):
        return self.kv_buffer[1]

    def get_hybrid_pool_buffer(self):
        return [self.k_buffer, self.v_buffer]

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        item, idx = itemsize(self.dtype), indices.tolist()
        row = self.head_num * self.head_dim * item
        v_offset = self.layer_num * self.size * row
        base, ptrs = self.kv_buffer.data_ptr(), []
        if self.layout == "layer_first":
            for i in range(0, len(idx), self.page_size):
                for layer in range(self.layer_num):
                    k = base + idx[i] * row + layer * self.size * row
                    ptrs += [k, k + v_offset]
            return ptrs, [item * self.page_size * self.head_num * self.head_dim] * len(ptrs)
        for i in range(0, len(idx), self.page_size):
            k = base + idx[i] * self.layer_num * row
            ptrs += [k, k + v_offset]
        return ptrs, [self.layer_num * item * self.page_size * self.head_num * self.head_dim] * len(ptrs)

    def get_dummy_flat_data_page(self):
        return torch.zeros(2 * self.layer_num * self.page_size * self.head_num * self.head_dim, dtype=self.dtype)

    def get_data_page(self, index, flat=True):
        if self.layout == "page_first":
            page = self.kv_buffer[:, index:index + self.page_size]
        else:
            page = self.kv_buffer[:, index // self.page_size:index // self.page_size + 1]
        return page.flatten() if flat else page

    def set_from_flat_data_page(self, index, data_page):
        self.get_data_page(index, flat=False).copy_(data_page.view(self.get_data_page(index, flat=False).shape))


class AsymmetricMHATokenToKVPoolHost(MHATokenToKVPoolHost):
    """K and V of different head sizes, in two allocations."""

    def __init__(self, pages=32, page_size=16, layers=4, heads=2, dim=64, v_dim=32, dtype=torch.bfloat16,
                 layout="page_first_direct"):
        assert layout in ("page_first", "page_first_direct")
        self.page_size, self.layer_num, self.head_num, self.head_dim = page_size, layers, heads, dim
        self.v_head_dim = v_dim
        self.page_num, self.size, self.dtype, self.layout = pages, pages * page_size, dtype, layout
        if layout == "page_first":
            k = (self.size, layers, heads, dim)
            v = (self.size, layers, heads, v_dim)
        else:
            k = (pages, layers, page_size, heads, dim)
            v = (pages, layers, page_size, heads, v_dim)
        self.kv_buffer = (aligned(k, dtype), aligned(v, dtype))

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        item, idx = itemsize(self.dtype), indices.tolist()
        k_size = self.layer_num * item * self.page_size * self.head_num * self.head_dim
        v_size = self.layer_num * item * self.page_size * self.head_num * self.v_head_dim
        direct = self.layout == "page_first_direct"
        k_stride = self.layer_num * (self.page_size if direct else 1) * self.head_num * self.head_dim
        v_stride = self.layer_num * (self.page_size if direct else 1) * self.head_num * self.v_head_dim
        ptrs, sizes = [], []
        for i in range(0, len(idx), self.page_size):
            b = idx[i] // self.page_size if direct else idx[i]
            ptrs += [self.k_buffer.data_ptr() + b * k_stride * item, self.v_buffer.data_ptr() + b * v_stride * item]
            sizes += [k_size, v_size]
        return ptrs, sizes

    def get_dummy_flat_data_page(self):
        raise NotImplementedError("AsymmetricMHATokenToKVPoolHost pools do not support the flat-page interface")

    get_data_page = set_from_flat_data_page = get_dummy_flat_data_page


class MHATokenToKVPoolMXFP8Host(MHATokenToKVPoolHost):
    def get_page_buffer_meta(self, indices):
        raise NotImplementedError("MXFP8 KV host pool does not expose flat storage (L3) pages yet: a page's "
                                  "UE8M0 scales live outside kv_buffer.")


class MLATokenToKVPoolHost(_Pages):
    def __init__(self, pages=32, page_size=16, layers=4, kv_dim=576, dtype=torch.bfloat16,
                 layout="page_first", is_dummy=False):
        self.page_size, self.layer_num, self.kv_cache_dim = page_size, layers, kv_dim
        self.page_num, self.size, self.dtype, self.layout = pages, pages * page_size, dtype, layout
        shape = ((pages, layers, page_size, 1, kv_dim) if layout == "page_first_direct"
                 else (self.size, layers, 1, kv_dim))
        self.kv_buffer = None if is_dummy else aligned(shape, dtype)

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        item, idx = itemsize(self.dtype), indices.tolist()
        base = self.kv_buffer.data_ptr()
        ptrs = [base + idx[i] * self.layer_num * self.kv_cache_dim * item for i in range(0, len(idx), self.page_size)]
        return ptrs, [self.layer_num * item * self.page_size * self.kv_cache_dim] * len(ptrs)

    def get_dummy_flat_data_page(self):
        return torch.zeros(self.layer_num * self.page_size * self.kv_cache_dim, dtype=self.dtype)


class MambaPoolHost(_Pages):
    """Mamba state: one slot a page (page_size 1), temporal and conv states
    of their own dtypes."""

    def __init__(self, slots=16, layers=2, temporal=(8, 64), conv=((1024,), (512,)), temporal_dtype=torch.float32,
                 conv_dtype=torch.bfloat16, layout="page_first"):
        assert layout in ("page_first", "page_first_direct")
        self.page_size, self.num_mamba_layers, self.size, self.layout = 1, layers, slots, layout
        self.temporal_dtype, self.conv_dtype, self.dtype = temporal_dtype, conv_dtype, conv_dtype
        self.temporal_state_elem_size = int(torch.tensor(temporal).prod()) if temporal else 0
        self.conv_state_elem_sizes = [int(torch.tensor(c).prod()) for c in conv]
        self.temporal_buffer = aligned((slots, layers, 1, self.temporal_state_elem_size), temporal_dtype)
        self.conv_buffer = [aligned((slots, layers, 1, e), conv_dtype) for e in self.conv_state_elem_sizes]
        self.kv_buffer = [b for b in [self.temporal_buffer, *self.conv_buffer] if b.numel() > 0]

    def get_hybrid_pool_buffer(self):
        return [self.temporal_buffer, *self.conv_buffer]

    def get_page_buffer_meta(self, indices):
        idx, L = indices.tolist(), self.num_mamba_layers
        t_item, c_item = itemsize(self.temporal_dtype), itemsize(self.conv_dtype)
        ptrs, sizes = [], []
        for i in idx:
            if self.temporal_state_elem_size > 0:
                ptrs.append(self.temporal_buffer.data_ptr() + i * L * self.temporal_state_elem_size * t_item)
                sizes.append(L * t_item * self.temporal_state_elem_size)
            for buf, e in zip(self.conv_buffer, self.conv_state_elem_sizes):
                ptrs.append(buf.data_ptr() + i * L * e * c_item)
                sizes.append(L * c_item * e)
        return ptrs, sizes


class DSAIndexerPoolHost(_Pages):
    """The DSA indexer sidecar: index keys and scales per page, in a buffer
    addressed by the KV anchor's slots // page_size."""

    def __init__(self, anchor, page_stride=4096, layers=4):
        self.page_size, self.layout, self.size = anchor.page_size, anchor.layout, anchor.size
        self.layer_num, self.indexer_page_stride_size = layers, page_stride
        self.dtype = anchor.dtype
        self.indexer_dtype = torch.uint8
        self.indexer_page_num = (self.size + self.page_size + 1) // self.page_size
        self.index_k_with_scale_buffer = aligned((self.indexer_page_num, layers, 1, page_stride), torch.uint8)

    def get_hybrid_pool_buffer(self):
        return [self.index_k_with_scale_buffer]

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        idx = indices.tolist()
        stride = self.layer_num * self.indexer_page_stride_size
        base = self.index_k_with_scale_buffer.data_ptr()
        ptrs = [base + (int(idx[i]) // self.page_size) * stride for i in range(0, len(idx), self.page_size)]
        return ptrs, [stride] * len(ptrs)


@dataclass
class PoolEntry:
    name: Any
    host_pool: Any
    device_pool: Any = None
    layer_mapper: Any = None
    is_primary_index_anchor: bool = False


class HostPoolGroup:
    def __init__(self, entries):
        self.entries = list(entries)
        self.entry_map = {e.name: e for e in self.entries}
        anchors = [e for e in self.entries if e.is_primary_index_anchor]
        self.anchor_entry = anchors[0] if anchors else self.entries[0]
        self.page_size = self.anchor_entry.host_pool.page_size
        self.layout = self.anchor_entry.host_pool.layout
