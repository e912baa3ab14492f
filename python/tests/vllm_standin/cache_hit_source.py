"""Follows vllm/v1/metrics/cache_hit_source.py at 8548f56c179e971e6ef25549498acb83787dd0d8:
CacheHitSource, where a hit's KV came from (a str enum, in the order
blocks are offloaded: device, host, p2p, disk, then unspecified)."""
import enum


class CacheHitSource(str, enum.Enum):
    DEVICE = "device"
    HOST = "host"
    P2P = "p2p"
    DISK = "disk"
    EXTERNAL_UNSPECIFIED = "external_unspecified"
