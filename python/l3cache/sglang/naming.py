"""How the SGLang backend names things: each pool's object key prefix
(SGLang's own backends' namespace: model; TP rank and size unless the KV
is rank-replicated (MLA); PP; attention CP; plus the pool, dtype, layout
and page size), and a page's group (the same on every rank and in every
pool), with the deployment's tenant tag folded into both."""

import hashlib
import re
from typing import Any, Iterable

from ..keys import salted
from .common import KV

# Pools whose pages every TP rank writes even when the KV is replicated (an
# MLA model's Mamba state is TP-sharded): their keys carry the TP rank.
RANK_SHARDED_IN_MLA = ("mamba",)


def clean(text: Any) -> str:
    """Namespace-safe text: no '_' (it ends an l3cache namespace) or '/'."""
    return re.sub(r"[^A-Za-z0-9.+-]", "-", str(text))


class Naming:
    """Names under SGLang's storage config `cfg` and the tenant tag."""

    def __init__(self, cfg: Any, tenant: str) -> None:
        self.cfg, self.tenant = cfg, tenant

    def per_rank(self, pool_name: str) -> bool:
        """Whether each TP rank stores its own object of a page of the pool
        (not an MLA model's replicated KV, which rank 0 alone writes)."""
        return not self.cfg.is_mla_model or pool_name in RANK_SHARDED_IN_MLA

    def rank_suffix(self, pool_name: str) -> str:
        """The model and the ranks a pool's objects are per."""
        cfg = self.cfg
        parts = [clean(cfg.model_name or "model")]
        if self.per_rank(pool_name):
            parts.append("tp%dof%d" % (cfg.tp_rank, cfg.tp_size))
        if getattr(cfg, "pp_size", 1) > 1:
            parts.append("pp%dof%d" % (cfg.pp_rank, cfg.pp_size))
        if getattr(cfg, "attn_cp_size", 1) > 1:
            parts.append("cp%dof%d" % (cfg.attn_cp_rank, cfg.attn_cp_size))
        return "-".join(parts)

    def namespace(self, pool: Any, pool_name: str) -> str:
        """The prefix of a pool's objects. The KV pool's is what the v1
        calls have always used, so v1 and v2 name a KV page alike."""
        dtype = str(getattr(pool, "dtype", "unknown")).replace("torch.", "")
        tag = "" if pool_name == KV else "-" + clean(pool_name)
        text = "sgl-%s%s-%s-%s-p%d" % (self.rank_suffix(pool_name), tag, clean(dtype),
                                       clean(getattr(pool, "layout", "none")), int(pool.page_size))
        text = salted(text, self.tenant)
        if len(text) > 200:  # a namespace is at most 255 bytes: keep it short, still unique
            text = "sgl-" + hashlib.sha256(text.encode()).hexdigest()
        return text + "_"

    def group_namespace(self) -> str:
        """What names a page alike on every rank and in every pool: the
        model and the parallel sizes, not the TP, PP or CP rank, the pool,
        its dtype or layout."""
        cfg = self.cfg
        return salted("sgl-%s-tp%d-pp%d-cp%d" % (clean(cfg.model_name or "model"), int(cfg.tp_size),
                                                 int(getattr(cfg, "pp_size", 1) or 1),
                                                 int(getattr(cfg, "attn_cp_size", 1) or 1)), self.tenant) + "_"

    def group_objects(self, pool_names: Iterable[str]) -> int:
        """The objects of a whole page: per registered pool, one per TP
        rank (one for an MLA model's replicated KV), times the PP and CP
        ranks. A TRAILING_PAGES pool counts though only some pages have its
        object (the write budget then charges a page a little more)."""
        cfg = self.cfg
        per_page = sum(int(cfg.tp_size) if self.per_rank(name) else 1 for name in pool_names)
        return per_page * int(getattr(cfg, "pp_size", 1) or 1) * int(getattr(cfg, "attn_cp_size", 1) or 1)

    def writes_kv(self) -> bool:
        """Whether this rank's backups write the KV pages after their
        states (not an MLA model's rank other than 0: SGLang skips its KV
        backup, and reads the state's result)."""
        return not (self.cfg.is_mla_model and int(self.cfg.tp_rank) != 0)
