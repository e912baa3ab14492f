"""What the SGLang backend's modules share: SGLang's storage interface
(or a stand-in shape where SGLang is not importable), pool names, the
Host pool an adapter registers, and the guard that keeps SGLang's storage
threads alive."""

import logging
from typing import Any, Dict, List, Sequence

logger = logging.getLogger("l3cache.sglang")

hs: Any
Base: Any
try:  # SGLang present: subclass its real interface (the factory checks it).
    from sglang.srt.mem_cache import hicache_storage as hs  # type: ignore[no-redef]
    Base = hs.HiCacheStorage
except ImportError:  # pragma: no cover - exercised only without SGLang
    hs = None

    class _NoSglang:  # the same methods, so that the class works standalone
        pass
    Base = _NoSglang

KV = "kv"


def pool_name(name: Any) -> str:
    """A pool's name as text: PoolName members and plain strings alike."""
    return str(getattr(name, "value", name))


def trailing(transfer: Any) -> bool:
    """Whether a pool transfer is TRAILING_PAGES (only its last pages count)."""
    return pool_name(getattr(transfer, "hit_policy", "all_pages")) == "trailing_pages"


class Pool:
    """One registered Host pool: its name, the SGLang object, its object
    key prefix and its page size (in host slots)."""

    def __init__(self, name: str, host: Any, prefix: str):
        self.name, self.host, self.prefix = name, host, prefix
        self.page_size = int(getattr(host, "page_size", 1) or 1)

    def keys(self, keys: Sequence[str]) -> List[str]:
        """The store's keys of SGLang's page keys in this pool."""
        return [self.prefix + k for k in keys]


def guarded(call: Any, n: int, what: str) -> List[bool]:
    """`call()`, or n failed pages when it raises (logged): no call on
    SGLang's storage threads raises."""
    try:
        return call()
    except Exception as e:
        logger.error("l3cache: batch %s of %d pages failed, reported as failed pages: %s", what, n, e)
        return [False] * n


class Result:
    """PoolTransferResult's fields, where SGLang is not importable."""

    def __init__(self, kv_hit_pages: int, extra_pool_hit_pages: Dict[str, int]):
        self.kv_hit_pages = kv_hit_pages
        self.extra_pool_hit_pages = extra_pool_hit_pages
