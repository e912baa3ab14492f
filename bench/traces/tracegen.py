"""What the trace generators share (gen_tenants.py, gen_code.py): draws from
random.random() alone, Zipf ranks, content segments, the chained block ids
of a prompt, the statistics, and the command line.

A prompt is a list of segments (content id, tokens); a piece of a segment
(id, from, to) is the same text wherever it appears, so a prompt that keeps
the first tokens of a segment and replaces the rest shares the blocks that
lie wholly in the kept part. gen_agentic.py, older than this module, uses
its draws too (its trace is the same byte for byte).
"""
import argparse
import bisect
import json
import math
import random
import sys

BLOCK = 512
DURATION_MS = 3_600_000


class Draw:
    """Every draw from one random.Random's random() alone (its sequence for
    a seed is the one the random module guarantees across versions)."""

    def __init__(self, seed):
        self.r = random.Random(seed)

    def u(self):
        return self.r.random()

    def uniform_int(self, lo, hi):
        return lo + min(int(self.u() * (hi - lo + 1)), hi - lo)

    def uniform(self, lo, hi):
        return lo + (hi - lo) * self.u()

    def exp(self, mean):
        return -mean * math.log(1.0 - self.u())

    def lognormal(self, median, sigma):
        u1, u2 = self.u(), self.u()
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        return median * math.exp(sigma * z)

    def tokens(self, median, sigma, lo, hi):
        """A log-normal length, clipped to [lo, hi]."""
        return min(hi, max(lo, int(self.lognormal(median, sigma))))

    def geometric(self, mean, most):
        """1, 2, ... with the given mean, capped."""
        p = 1.0 / mean
        n = 1 + int(math.log(1.0 - self.u()) / math.log(1.0 - p)) if p < 1 else 1
        return min(n, most)

    def chance(self, p):
        return self.u() < p

    def arrivals(self, per_hour, start=0.0, end=DURATION_MS):
        """Poisson arrival times (ms) over [start, end)."""
        t, out = start, []
        while True:
            t += self.exp(3_600_000.0 / per_hour)
            if t >= end:
                return out
            out.append(t)


class Zipf:
    """Ranks 0..n-1 with P(k) proportional to 1/(k+1)^s."""

    def __init__(self, n, s):
        acc, self.cdf = 0.0, []
        for k in range(n):
            acc += 1.0 / (k + 1) ** s
            self.cdf.append(acc)
        self.total = acc

    def pick(self, d):
        return min(bisect.bisect_left(self.cdf, d.u() * self.total), len(self.cdf) - 1)


class Content:
    """Content ids: every new piece of text gets one."""

    def __init__(self):
        self.next_id = 0

    def new(self):
        self.next_id += 1
        return self.next_id


def seg(c, n):
    """A new segment of n tokens."""
    return (c.new(), n)


def span(piece):
    """A prompt's piece as (id, from, to): a whole segment (id, n) is (id, 0, n)."""
    return piece if len(piece) == 3 else (piece[0], 0, piece[1])


def length(ctx):
    return sum(hi - lo for _, lo, hi in map(span, ctx))


def cut(ctx, keep):
    """The prompt's first `keep` tokens (the segment cut at `keep` keeps its
    first tokens: a piece (id, 0, to))."""
    out, used = [], 0
    for piece in ctx:
        sid, lo, hi = span(piece)
        if used + hi - lo <= keep:
            out.append(piece)
            used += hi - lo
            continue
        if keep > used:
            out.append((sid, lo, lo + keep - used))
        break
    return out


def blocks_of(ctx, ids):
    """The chained ids of a prompt's blocks: a block is its parent and the
    (segment, from, to) pieces it holds; the last block may be partial."""
    pieces, parent, used, out = [], -1, 0, []
    for piece in ctx:
        sid, lo, hi = span(piece)
        off = lo
        while off < hi:
            take = min(hi - off, BLOCK - used)
            pieces.append((sid, off, off + take))
            off += take
            used += take
            if used == BLOCK:
                parent = ids.setdefault((parent, tuple(pieces)), len(ids))
                out.append(parent)
                pieces, used = [], 0
    if pieces:
        out.append(ids.setdefault((parent, tuple(pieces)), len(ids)))
    return out


def assemble(reqs, kinds_names, kinds=None):
    """The trace's lines from (time, kind, index, prompt, output tokens),
    sorted by time (then kind and index); `kinds`, a list, gets each line's
    kind name."""
    reqs.sort(key=lambda r: (int(r[0]), r[1], r[2]))
    ids, lines = {}, []
    for t, k, _, ctx, ans in reqs:
        if kinds is not None:
            kinds.append(kinds_names[k])
        lines.append({"timestamp": int(t), "input_length": length(ctx), "output_length": ans,
                      "hash_ids": blocks_of(ctx, ids)})
    return lines


def stats(lines, kinds):
    """The trace's statistics: requests and accesses (per kind), distinct
    blocks, those used once, the infinite cache's hit rate on the prefix
    rule, mean input and output, the longest request, the span."""
    seen, uses, hits, acc = set(), {}, 0, 0
    per_kind = {}
    for r, k in zip(lines, kinds):
        h = r["hash_ids"]
        i = 0
        while i < len(h) and h[i] in seen:
            i += 1
        hits += i
        acc += len(h)
        n, a = per_kind.get(k, (0, 0))
        per_kind[k] = (n + 1, a + len(h))
        for b in h:
            seen.add(b)
            uses[b] = uses.get(b, 0) + 1
    once = sum(1 for v in uses.values() if v == 1)
    hours = (lines[-1]["timestamp"] - lines[0]["timestamp"]) / 3_600_000.0 if lines else 0.0
    return {"requests": len(lines), "accesses": acc, "distinct": len(uses), "once": once,
            "infinite_hit_rate": round(hits / acc, 4) if acc else 0.0,
            "kinds": {k: {"requests": n, "access_share": round(a / acc, 3)} for k, (n, a) in per_kind.items()},
            "mean_input": round(sum(r["input_length"] for r in lines) / max(1, len(lines))),
            "mean_output": round(sum(r["output_length"] for r in lines) / max(1, len(lines))),
            "longest_blocks": max((len(r["hash_ids"]) for r in lines), default=0), "hours": round(hours, 3)}


def main(doc, default_seed, default_out, kind_names, generate):
    """The generators' command line: --seed, --out, --stats, --kinds."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=default_seed)
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--stats", action="store_true", help="print the trace's statistics on stderr")
    ap.add_argument("--kinds", help="write each request's kind (%s), a line each, here" % ", ".join(kind_names))
    a = ap.parse_args()
    kinds = []
    lines = generate(a.seed, kinds)
    if a.kinds:
        with open(a.kinds, "w") as f:
            f.write("".join(k + "\n" for k in kinds))
    with open(a.out, "w") as f:
        for r in lines:
            f.write(json.dumps(r) + "\n")
    if a.stats:
        print(json.dumps(stats(lines, kinds)), file=sys.stderr)
    return 0
