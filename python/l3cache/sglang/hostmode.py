"""SGLang's HiCache host memory mode, as the L3 backend needs to know it.

In ``--hicache-host-memory-mode buffer_only`` (SGLang's
mem_cache/buffer_mode/pipeline.py) the Host pool is a staging buffer, not
a cache tier: a backup's slots, KV and every other pool's, are freed when
its storage write is acknowledged, and each pool of a node is written by
its own storage operation (the KV first, then each other pool; a pool
believed stored is skipped). A TRAILING_PAGES state (a Mamba or SWA
state) must then be written in the very call that passes it: held for a
KV write that comes later, it would be read from a freed slot. SGLang
does not tell a storage backend its host mode (the storage config has no
field for it), so the backend reads it from its extra config
(``"host_memory_mode": "buffer_only"``, the flag's value) or else from
SGLang's global server args in the scheduler's process.
"""

import logging
from typing import Any, Mapping, Optional

logger = logging.getLogger(__name__)

__all__ = ["host_memory_mode", "holds_trailing_states"]

BUFFER_ONLY = "buffer_only"


def _server_args_mode() -> Optional[str]:
    """``hicache_host_memory_mode`` of SGLang's process-global server args,
    where SGLang is there and has set them; None otherwise."""
    try:
        from sglang.srt.server_args import get_global_server_args
        return getattr(get_global_server_args(), "hicache_host_memory_mode", None)
    except Exception:  # no SGLang, an older one, or args not set yet
        return None


def host_memory_mode(extra_config: Optional[Mapping[str, Any]]) -> str:
    """SGLang's host memory mode: the extra config's ``host_memory_mode``,
    else the server args', else "cache"."""
    mode = (extra_config or {}).get("host_memory_mode") or _server_args_mode() or "cache"
    return str(mode)


def holds_trailing_states(extra_config: Optional[Mapping[str, Any]]) -> bool:
    """Whether a backup's TRAILING_PAGES states may wait for their page's
    KV (not in buffer_only mode, where their slots are freed at the ack)."""
    mode = host_memory_mode(extra_config)
    if mode == BUFFER_ONLY:
        logger.info("l3cache: SGLang host memory mode buffer_only: states are written in the call that passes them")
    return mode != BUFFER_ONLY
