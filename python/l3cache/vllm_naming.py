"""How l3cache's vLLM tier names a deployment's blocks: the object key
prefix (the model and a digest of everything that decides a row's bytes:
dtype, tokens per hash, blocks per chunk, each KV group's block size and
layers, the parallel layout and rank, the row size, the KV cache layout
and the canonical host layout; and the deployment's tenant tag), and the
namespace of a block's group (the same for every rank and KV group)."""

import hashlib
import json
import re
from typing import Any, Dict

__all__ = ["namespace", "group_namespace"]


def _clean(text: Any) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]", "-", str(text))


def _deployment(spec: Any, with_rank: bool, tenant: str = "") -> Dict[str, Any]:
    """What every block of a deployment shares: model, dtype, chunk
    geometry, the parallel layout (with this process's rank, or not) and
    the tenant tag (left out when there is none: the keys stay as before)."""
    config = spec.config
    par = config.parallel
    agnostic = bool(getattr(par, "is_parallelism_agnostic", False) or getattr(spec, "replicated_layout", False))
    layout = [par.tp_size, par.pp_size, getattr(par, "pcp_size", 1), getattr(par, "dcp_size", 1), par.world_size]
    fields = {
        "model": config.model.name, "dtype": str(config.model.dtype),
        "tokens_per_hash": config.cache.tokens_per_hash, "blocks_per_chunk": config.cache.blocks_per_chunk,
        "parallel": None if agnostic else layout + ([par.rank] if with_rank else []),
        "engine": "vllm",
    }
    if tenant:
        fields["tenant"] = tenant
    return fields


def _digest(fields: Dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def namespace(spec: Any, row_bytes: int, tenant: str = "") -> str:
    """The prefix of this deployment's objects: model and a digest of
    everything that decides a row's bytes, and the deployment's tenant tag."""
    fields = _deployment(spec, with_rank=True, tenant=tenant)
    fields.update({
        "groups": [[g.tokens_per_block, list(g.layer_names)] for g in spec.config.groups],
        "replicated_layout": bool(getattr(spec, "replicated_layout", False)),
        "row_bytes": row_bytes,
    })
    # The rows' byte order: the worker's KV cache layout and the canonical
    # host layout, each left out where it is vLLM's default or unset (NHD,
    # as every vLLM before the field wrote: their keys stay as before, and
    # an upgrade that starts to name NHD keeps its store warm)
    config = spec.config
    if getattr(config, "canonical_layout", False):
        fields["canonical_layout"] = True
    layout = str(getattr(config, "kv_cache_layout", None) or "NHD")
    if layout.upper() != "NHD":
        fields["kv_cache_layout"] = layout
    return "vllm-%s-%s_" % (_clean(spec.config.model.name)[:80], _digest(fields)[:16])


def group_namespace(spec: Any, tenant: str = "") -> str:
    """What names a block alike for every rank and KV group of a
    deployment: namespace's fields without the rank, the groups' layers
    and the row size (a block's group ids are this and its hash)."""
    return "vllm-group-%s_" % _digest(_deployment(spec, with_rank=False, tenant=tenant))[:16]
