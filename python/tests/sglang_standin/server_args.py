"""Follows python/sglang/srt/server_args.py (sgl-project/sglang, the
process-global server args of the scheduler): set_global_server_args_for_scheduler
and get_global_server_args, which raises until they are set. Only the field a
storage backend reads is modelled: hicache_host_memory_mode ("cache" or
"buffer_only", --hicache-host-memory-mode)."""
from dataclasses import dataclass
from typing import Optional


@dataclass
class ServerArgs:
    hicache_host_memory_mode: str = "cache"


_global_server_args: Optional[ServerArgs] = None


def set_global_server_args_for_scheduler(server_args):
    global _global_server_args
    _global_server_args = server_args


def get_global_server_args():
    if _global_server_args is None:
        raise ValueError("Global server args is not set yet!")
    return _global_server_args
