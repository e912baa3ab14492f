"""SGLang's ``file`` storage backend, HiCacheFile, following
python/sglang/srt/mem_cache/hicache_storage.py at
001067fffe33427bee0ed2f007fb7551a1d76b44 (the newest stored text of the
class; its LRU evictor, mem_cache/storage/file/lru_file_evictor.py at
16739a60a4dcc0f1219afa562f4eb66c56034fde, is inert unless a size cap is
configured, and is left out here: no cap is configured).

What a chained backend meets: the directory (the
SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR environment variable, else
/tmp/hicache; the factory passes no path), one ``<key><suffix>.bin`` file a
page, the suffix naming the model and the TP rank and size (not for MLA),
the PP size and rank and the attention-CP rank; ``get`` reads a page's raw
bytes into the caller's flat tensor, ``set`` writes them through a
temporary file and a rename and skips a page already there; ``exists`` is
a file check; the v2 calls read and write flat pages of the registered
pools, a pool's key ``<key>.<pool>``. Written from what the file does; no
metadata cache (off unless configured)."""
import logging
import os
import threading
import uuid

import torch

from .hicache_storage import HiCacheStorage, PoolHitPolicy, PoolName, PoolTransferResult

logger = logging.getLogger(__name__)


class HiCacheFile(HiCacheStorage):
    def __init__(self, storage_config, file_path="/tmp/hicache"):
        self.file_path = os.environ.get("SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR") or file_path
        model_name = "-".join(storage_config.model_name.split("/")) if storage_config.model_name else ""
        self.config_suffix = "_%s" % model_name
        if not storage_config.is_mla_model:
            self.config_suffix += "_%d_%d" % (storage_config.tp_rank, storage_config.tp_size)
        if storage_config.pp_size > 1:
            self.config_suffix += "_%d_%d" % (storage_config.pp_size, storage_config.pp_rank)
        if storage_config.attn_cp_size > 1:
            self.config_suffix += "_cp%d_%d" % (storage_config.attn_cp_rank, storage_config.attn_cp_size)
        if not os.path.exists(self.file_path) and storage_config.tp_rank == 0 and storage_config.attn_cp_rank == 0:
            os.makedirs(self.file_path)

    def _get_suffixed_key(self, key):
        return key + self.config_suffix

    def _get_component_key(self, key, component_name=None):
        if component_name is None or component_name in ("__default__", PoolName.KV):
            return self._get_suffixed_key(key)
        return self._get_suffixed_key("%s.%s" % (key, component_name))

    def get(self, key, target_location=None, target_sizes=None):
        tensor_path = os.path.join(self.file_path, "%s.bin" % self._get_suffixed_key(key))
        try:
            expected = target_location.numel() * target_location.element_size()
            with open(tensor_path, "rb", buffering=0) as f:
                buf = memoryview(target_location.view(torch.uint8).contiguous().numpy())
                if f.readinto(buf) != expected:
                    raise IOError("Short read for %s" % key)
            return target_location
        except FileNotFoundError:
            logger.warning("Failed to fetch %s from HiCacheFile storage.", key)
            return None

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        return [self.get(key, t) for key, t in zip(keys, target_locations or [None] * len(keys))]

    def set(self, key, value=None, target_location=None, target_sizes=None):
        tensor_path = os.path.join(self.file_path, "%s.bin" % self._get_suffixed_key(key))
        if self.exists(key):
            return True
        tmp_path = None
        try:
            tmp_path = "%s.tmp.%d.%d.%s" % (tensor_path, os.getpid(), threading.get_ident(), uuid.uuid4().hex)
            value.contiguous().view(dtype=torch.uint8).numpy().tofile(tmp_path)
            os.replace(tmp_path, tensor_path)
            return True
        except Exception as e:
            logger.error("Failed to save tensor %s: %s", key, e)
            if tmp_path is not None:
                try:
                    os.remove(tmp_path)
                except OSError:
                    pass
            return False

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        for key, value in zip(keys, values):
            if not self.set(key, value):
                return False
        return True

    def exists(self, key):
        return os.path.exists(os.path.join(self.file_path, "%s.bin" % self._get_suffixed_key(key)))

    def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
        def has(i, name=None):
            return os.path.exists(os.path.join(self.file_path, "%s.bin" % self._get_component_key(keys[i], name)))

        kv_pages = next((i for i in range(len(keys)) if not has(i)), len(keys))
        hit_count = {PoolName.KV: kv_pages} if kv_pages else {}
        final_pages = kv_pages
        for transfer in pool_transfers or []:
            if final_pages == 0:
                break
            if transfer.hit_policy == PoolHitPolicy.ALL_PAGES:
                boundary = next((i for i in range(kv_pages) if not has(i, transfer.name)), kv_pages)
            else:
                trailing = max(1, len(transfer.keys) if transfer.keys else 1)
                boundary = next((p for p in range(kv_pages, 0, -1)
                                 if all(has(i, transfer.name) for i in range(max(0, p - trailing), p))), 0)
            if boundary:
                hit_count[transfer.name] = boundary
            final_pages = min(final_pages, boundary)
        return PoolTransferResult(final_pages, hit_count)

    def _log_key(self, pool_name, key):
        return key if pool_name == PoolName.KV else "%s.%s" % (key, pool_name)

    def _read_page(self, pool_name, key, host_pool, page_offset):
        data_page = self.get(self._log_key(pool_name, key), host_pool.get_dummy_flat_data_page())
        if data_page is None:
            return False
        host_pool.set_from_flat_data_page(page_offset, data_page)
        return True

    def _write_page(self, pool_name, key, host_pool, page_offset):
        return self.set(self._log_key(pool_name, key), host_pool.get_data_page(page_offset, flat=True))

    def _batch_io_v2(self, transfers, op_fn):
        results = {}
        for transfer in transfers:
            host_pool = self.registered_pools[transfer.name]
            keys = transfer.keys or []
            page_size = getattr(host_pool, "page_size", 1) or 1
            host_indices = transfer.host_indices
            if host_indices is None or host_indices.numel() != len(keys) * page_size:
                results[transfer.name] = [False] * len(keys)
                continue
            results[transfer.name] = [op_fn(transfer.name, key, host_pool, host_indices[i * page_size].item())
                                      for i, key in enumerate(keys)]
        return results

    def batch_get_v2(self, transfers, extra_info=None):
        return self._batch_io_v2(transfers, self._read_page)

    def batch_set_v2(self, transfers, extra_info=None):
        return self._batch_io_v2(transfers, self._write_page)

    def clear(self):
        for filename in os.listdir(self.file_path):
            path = os.path.join(self.file_path, filename)
            if os.path.isfile(path):
                os.remove(path)
        return True
