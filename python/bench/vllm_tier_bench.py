#!/usr/bin/env python3
"""vLLM's l3cache tier against l3bench and against vLLM's FS tier's way of
doing it (one O_DIRECT file per block), same I/O, same run.

    PYTHONPATH=python L3CACHE_LIB=build/libl3cache.so \\
        python3 python/bench/vllm_tier_bench.py --l3bench build/bench/l3bench --dir /path/on/the/nvme

Stores then loads `--total` bytes of `--size` rows (a vLLM CPU-tier chunk):

* through ``l3cache.vllm.L3CacheTier`` as vLLM's manager drives it (the
  test suite's stand-in of vLLM's tiering framework: jobs of `--keys` rows,
  `--inflight` jobs in flight, completions polled as a scheduler step
  would), its rows in one huge-page region as vLLM's CPU tier is one
  mapping;
* through ``l3bench`` (its executor: `--keys` keys an operation,
  `--inflight` operations);
* the file-per-block way of vLLM's FS tier (``tiering/fs/io.py``): each
  row written to a temporary file opened O_DIRECT and renamed into a
  hashed directory, read back with readv into the row, on `--threads`
  threads (the FS tier's default is 16 each way).

Rounds alternate the order of the three on fresh stores; prints GB/s and
the tier/l3bench and tier/file-per-block ratios per round and their
medians.
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import vllm_standin  # noqa: E402  (vLLM's tiering interfaces, as the tests have them)

vllm_standin.install()

import l3cache  # noqa: E402
from vllm.v1.kv_offload.base import ReqContext, make_offload_key  # noqa: E402
from vllm.v1.kv_offload.config import (OffloadingCacheConfig, OffloadingConfig,  # noqa: E402
                                       OffloadingGroupConfig, OffloadingModelConfig, OffloadingParallelConfig)
from vllm.v1.kv_offload.tiering.base import TransferJob  # noqa: E402
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec  # noqa: E402


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def block_key(i):
    return make_offload_key(hashlib.sha256(i.to_bytes(8, "little")).digest(), 0)


class Rows:
    """`n` rows of `size` bytes in one huge-page region, as vLLM's view."""

    def __init__(self, n, size):
        self.pool = l3cache.Pool(n * size)
        self.array = self.pool.array.view(np.int8).reshape(n, size)
        self.array[:] = 7
        self.view = memoryview(self.array)

    def close(self):
        self.view.release()
        self.pool.close()


def tier_round(args, path, count, rows):
    """Store then load `count` rows through the tier: GB/s of each."""
    capacity = int(count * (args.size + 4096) * 1.3) + (256 << 20)
    extra = {"spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": rows.view.nbytes}
    config = OffloadingConfig(groups=(OffloadingGroupConfig(16, ("l",), 0),), worker_kv_bytes_per_block=args.size,
                              enable_kv_cache_events=False, extra_config=extra, engine_id="bench",
                              model=OffloadingModelConfig("bench", "bfloat16"), cache=OffloadingCacheConfig(16, 1),
                              parallel=OffloadingParallelConfig(rank=0, world_size=1, tp_size=1, pp_size=1,
                                                                pcp_size=1, dcp_size=1, data_parallel_index=0,
                                                                data_parallel_size=1, data_parallel_rank_local=0,
                                                                is_parallelism_agnostic=False))
    from l3cache.vllm import L3CacheTier
    tier = L3CacheTier(TieringOffloadingSpec(config), rows.view, "L3CacheTier",
                       l3cache_config={"store": {"path": path, "capacity": capacity}},
                       workers=args.inflight, max_pending=4 * args.inflight)
    try:
        return {op: run_jobs(tier, op == "load", count, args) / 1e9 for op in ("store", "load")}
    finally:
        tier.shutdown()


def run_jobs(tier, load, count, args):
    """Keep `inflight` jobs of `keys` rows going until `count` rows moved."""
    ctx = ReqContext("bench")
    free = list(range(args.inflight))
    busy = {}
    job_id = next_obj = done = 0
    t0 = time.monotonic()
    while done < count:
        while free and next_obj < count:
            slot = free.pop()
            n = min(args.keys, count - next_obj)
            keys = [block_key(next_obj + k) for k in range(n)]
            chunk_ids = np.arange(slot * args.keys, slot * args.keys + n, dtype=np.int32)
            job = TransferJob(job_id, keys, chunk_ids, load, ctx)
            busy[job_id] = (slot, n)
            job_id += 1
            next_obj += n
            tier.submit_load(job) if load else tier.submit_store(job)
        for r in tier.get_finished_jobs():
            if not r.success:
                raise RuntimeError("job %d failed" % r.job_id)
            slot, n = busy.pop(r.job_id)
            free.append(slot)
            done += n
        time.sleep(0.0002)  # a scheduler step polls; the I/O runs on l3cache's threads
    return count * args.size / (time.monotonic() - t0)


def l3bench_round(args, path, count, rows):
    """The same I/O through l3bench (put, then get): GB/s of each."""
    capacity = int(count * (args.size + 4096) * 1.3) + (256 << 20)
    cmd = [args.l3bench, "--path", path, "--capacity", str(capacity), "--size", str(args.size),
           "--count", str(count), "--keys", str(args.keys), "--qd", str(args.inflight), "--json"]
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    phases = {p["phase"]: p["gb_per_s"] for p in report["phases"]}
    return {"store": phases["put"], "load": phases["get"]}


def file_round(args, root, count, rows):
    """One O_DIRECT file per row, as vLLM's FS tier stores them."""
    os.makedirs(root, exist_ok=True)
    n_rows = rows.array.shape[0]
    flat = rows.view.cast("B")

    def row(i):
        at = (i % n_rows) * args.size
        return flat[at:at + args.size]

    def path_of(i):
        h = block_key(i)[:-4].hex()
        return os.path.join(root, h[:3], h[3:5] + "_g0", h + ".bin")

    def store(i):
        final = path_of(i)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = final + ".tmp.%d" % os.getpid()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
        try:
            os.write(fd, row(i))
        finally:
            os.close(fd)
        os.replace(tmp, final)

    def load(i):
        fd = os.open(path_of(i), os.O_RDONLY | os.O_DIRECT)
        try:
            if os.readv(fd, [row(i)]) != args.size:
                raise IOError("short read")
        finally:
            os.close(fd)

    out = {}
    with ThreadPoolExecutor(args.threads) as pool:
        for op, fn in (("store", store), ("load", load)):
            t0 = time.monotonic()
            list(pool.map(fn, range(count)))
            out[op] = count * args.size / (time.monotonic() - t0) / 1e9
    subprocess.run(["rm", "-rf", root], check=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--l3bench", required=True)
    ap.add_argument("--dir", default=".")
    ap.add_argument("--size", default="1M", help="a row (chunk) of the CPU tier")
    ap.add_argument("--total", default="1G")
    ap.add_argument("--keys", type=int, default=16, help="rows a job")
    ap.add_argument("--inflight", type=int, default=8, help="jobs in flight")
    ap.add_argument("--threads", type=int, default=16, help="file-per-block I/O threads")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    args.size = parse_size(args.size)
    count = parse_size(args.total) // args.size
    rows = Rows(args.inflight * args.keys, args.size)
    ratios = {k: [] for k in ("store/l3bench", "load/l3bench", "store/files", "load/files")}
    print("%d rows of %d bytes, %d rows a job, %d jobs in flight, %d file threads"
          % (count, args.size, args.keys, args.inflight, args.threads))
    runs = (("tier", tier_round), ("l3bench", l3bench_round), ("files", file_round))
    try:
        for r in range(args.rounds):
            got = {}
            for name, fn in (runs if r % 2 == 0 else runs[::-1]):
                path = os.path.join(args.dir, "vllm-bench.%d.%s" % (os.getpid(), name))
                got[name] = fn(args, path, count, rows)
                if os.path.exists(path) and name != "files":
                    os.unlink(path)
                os.sync()
                time.sleep(2)
            for op in ("store", "load"):
                ratios[op + "/l3bench"].append(got["tier"][op] / got["l3bench"][op])
                ratios[op + "/files"].append(got["tier"][op] / got["files"][op])
            print("round %d: " % (r + 1) + ", ".join(
                "%s tier %.3f, l3bench %.3f, files %.3f GB/s" % (op, got["tier"][op], got["l3bench"][op],
                                                                 got["files"][op]) for op in ("store", "load")))
    finally:
        rows.close()
    for name, v in ratios.items():
        print("tier %s: median %.2fx (rounds %.2f to %.2f)" % (name, statistics.median(v), min(v), max(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
