#!/usr/bin/env python3
"""The LMCache connector's throughput against l3bench's, same I/O, same run.

    PYTHONPATH=python L3CACHE_LIB=build/libl3cache.so \\
        python3 python/bench/lmcache_bench.py --l3bench build/bench/l3bench --dir /path/on/the/nvme

Sets then gets `--total` bytes of `--size` objects through
``l3cache.lmcache.L3CacheConnector`` (batches of `--keys` keys, `--inflight`
batches in flight, buffers in one huge-page pool as LMCache's L1 is) and
through ``l3bench`` (its executor, `--keys` keys per operation, `--inflight`
operations), alternating for `--rounds` rounds on fresh stores; prints
GB/s and the connector/l3bench ratio per round and their median.
"""
import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time

import l3cache
from l3cache.lmcache import L3CacheConnector


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def connector_round(args, path, count):
    """Set then get `count` objects through the connector: GB/s of each."""
    capacity = int(count * (args.size + 4096) * 1.3) + (256 << 20)
    config = {"store": {"path": path, "capacity": capacity},
              "executor": {"max_keys_per_operation": args.keys},
              "namespace": {"deployment_id": "lmcache-bench"}}
    per_batch = args.keys * args.size
    with l3cache.Pool(args.inflight * per_batch) as pool, \
            L3CacheConnector(config=config, workers=args.inflight, max_pending=4 * args.inflight,
                             register_min_bytes=1 << 20) as conn:
        host = pool.array
        host[:] = 7
        slots = [[memoryview(host[(s * args.keys + k) * args.size:(s * args.keys + k + 1) * args.size])
                  for k in range(args.keys)] for s in range(args.inflight)]
        out = {}
        for op in ("set", "get"):
            out[op] = run_batches(conn, op, slots, count, args) / 1e9
        return out


def run_batches(conn, op, slots, count, args):
    """Keep `inflight` batches going until `count` objects moved; bytes/s."""
    poller = select.poll()
    poller.register(conn.event_fd(), select.POLLIN)
    submit = conn.submit_batch_set if op == "set" else conn.submit_batch_get
    free = list(range(len(slots)))
    busy = {}
    next_obj = done = 0
    t0 = time.monotonic()
    while done < count:
        while free and next_obj < count:
            s = free.pop()
            n = min(args.keys, count - next_obj)
            keys = ["bench@%d" % (next_obj + k) for k in range(n)]
            busy[submit(keys, slots[s][:n])] = (s, n)
            next_obj += n
        poller.poll(1000)
        for fid, ok, error, results in conn.drain_completions():
            s, n = busy.pop(fid)
            if not ok or not all(results):
                raise RuntimeError("%s failed: %s" % (op, error or "some keys"))
            free.append(s)
            done += n
    return count * args.size / (time.monotonic() - t0)


def l3bench_round(args, path, count):
    """The same I/O through l3bench (put, then get phases): GB/s of each."""
    capacity = int(count * (args.size + 4096) * 1.3) + (256 << 20)
    cmd = [args.l3bench, "--path", path, "--capacity", str(capacity), "--size", str(args.size),
           "--count", str(count), "--keys", str(args.keys), "--qd", str(args.inflight), "--json"]
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    phases = {p["phase"]: p["gb_per_s"] for p in report["phases"]}
    return {"set": phases["put"], "get": phases["get"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--l3bench", required=True)
    ap.add_argument("--dir", default=".")
    ap.add_argument("--size", default="1M")
    ap.add_argument("--total", default="1G")
    ap.add_argument("--keys", type=int, default=16)
    ap.add_argument("--inflight", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    args.size = parse_size(args.size)
    count = parse_size(args.total) // args.size
    ratios = {"set": [], "get": []}
    print("%d objects of %d bytes, %d keys a batch, %d batches in flight" % (count, args.size, args.keys,
                                                                             args.inflight))
    for r in range(args.rounds):
        path = os.path.join(args.dir, "lmcache-bench.%d.store" % os.getpid())
        rows = []
        for name, fn in (("connector", connector_round), ("l3bench", l3bench_round))[::1 if r % 2 == 0 else -1]:
            if os.path.exists(path):
                os.unlink(path)
            rows.append((name, fn(args, path, count)))
            os.sync()
            time.sleep(2)
        os.unlink(path)
        got = dict(rows)
        for op in ("set", "get"):
            ratios[op].append(got["connector"][op] / got["l3bench"][op])
        print("round %d: set %.3f vs %.3f GB/s (%.2fx), get %.3f vs %.3f GB/s (%.2fx)" % (
            r + 1, got["connector"]["set"], got["l3bench"]["set"], ratios["set"][-1],
            got["connector"]["get"], got["l3bench"]["get"], ratios["get"][-1]))
    for op in ("set", "get"):
        v = ratios[op]
        print("connector/l3bench %s: median %.2fx (rounds %.2f to %.2f)" % (op, statistics.median(v), min(v),
                                                                            max(v)))
    return 0 if all(statistics.median(v) >= 0.8 for v in ratios.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
