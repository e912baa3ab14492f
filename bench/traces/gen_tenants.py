#!/usr/bin/env python3
"""A multi-tenant API service's prefix-cache trace in Mooncake's format, deterministic.

    gen_tenants.py [--seed 20261205] [--out tenants_trace.jsonl] [--stats] [--kinds FILE]

One JSON object per line, sorted by time:

    {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [...]}

hash_ids are the prompt's blocks of 512 tokens (the last one partial), ids
given densely in order of first use (tracegen.py's chained ids).

An hour of one API service's traffic (README.md has the numbers):

- tenants' calls: hundreds of tenants of Zipf popularity, each a system
  prompt (some behind one of a few frameworks' shared preambles), often a
  few-shot template, then the user's input; a tenant's traffic has its own
  shape over the hour (steady, rising, fading, or a burst), so the hot
  prompts change, and some tenants deploy a new version of their prompt
  mid-hour (the old one goes cold); some calls get quick follow-ups (a tool
  result, a retry with more context);
- batch jobs: sweeps over a dataset of documents behind a shared
  instruction, in the dataset's order, run again after a period (an
  evaluation after each checkpoint, a retry pass over the failures, the
  same pipeline rerun later): long loops re-read after more traffic than a
  small cache holds.

Python 3 standard library only; of the random module only random() is used
(tracegen.Draw).
"""
import sys

from tracegen import DURATION_MS, Content, Draw, Zipf, assemble, cut, length, main, seg

# What each kind of work looks like (tokens unless named otherwise).
PARAMS = {
    "seed": 20261205,
    # tenants' calls: candidate arrivals pick a tenant by its popularity and
    # are kept with the tenant's activity at that time (its envelope, 0..1)
    "api_candidates_per_hour": 7000,
    "tenants": 600, "tenant_zipf_s": 1.0,
    "tenant_prompt_tokens_median": 1200, "tenant_prompt_sigma": 0.9, "tenant_prompt_tokens": (150, 12000),
    "frameworks": 4, "framework_tokens": (800, 2500), "framework_share": 0.35, "framework_zipf_s": 1.2,
    "template_share": 0.5, "templates_per_tenant": (1, 4), "template_tokens": (600, 4000),
    "template_zipf_s": 1.0,
    "user_tokens_median": 250, "user_sigma": 1.0, "user_tokens": (10, 6000),
    "answer_tokens": (30, 600),
    # envelopes: shares of steady, rising, fading and bursting tenants
    "envelope_shares": (0.45, 0.15, 0.15, 0.25), "envelope_ramp_s": 300,
    "steady_top": 10,  # the most popular tenants are steady (many users' traffic summed)
    "burst_s_median": 600, "burst_sigma": 0.6,
    # a new version of the system prompt: its first share kept, the rest rewritten
    "new_version_p": 0.25, "new_version_keep": (0.0, 0.8),
    # follow-ups: the call's prompt, its answer and a new input, seconds later
    "followup_p": 0.2, "followups_mean": 1.6, "followups_max": 6,
    "followup_s_median": 8.0, "followup_sigma": 1.0,
    # batch jobs' datasets: items, item tokens (median, sigma, range)
    "datasets": {
        "evalset": (300, 1000, 0.5, (100, 6000)),
        "contracts": (700, 2500, 0.6, (300, 12000)),
        "tickets": (1000, 250, 0.7, (30, 2000)),
    },
    # batch jobs: each a sweep in the dataset's order (Poisson at `rate` a
    # second) behind its instruction (jobs naming the same prompt share it),
    # then the item's task suffix (fixed per prompt); `passes` passes whose
    # starts are `gap_s` apart; a later pass takes `share` of the items
    # (a retry of the failures) in the same order
    "batch_jobs": (
        {"kind": "eval", "dataset": "evalset", "prompt": "eval", "prompt_tokens": 1800, "suffix_tokens": 60,
         "start_s": (0, 300), "passes": 5, "gap_s": (600, 840), "rate": 2.0, "share": 1.0},
        {"kind": "extract", "dataset": "contracts", "prompt": "extract", "prompt_tokens": 2400,
         "suffix_tokens": 100, "start_s": (300, 900), "passes": 2, "gap_s": (1200, 1500), "rate": 1.0,
         "share": 0.25},
        {"kind": "extract", "dataset": "contracts", "prompt": "extract", "prompt_tokens": 2400,
         "suffix_tokens": 100, "start_s": (2400, 2700), "passes": 1, "gap_s": (0, 0), "rate": 1.5,
         "share": 1.0},
        {"kind": "classify", "dataset": "tickets", "prompt": "classify", "prompt_tokens": 3500,
         "suffix_tokens": 20, "start_s": (600, 1200), "passes": 2, "gap_s": (1200, 1800), "rate": 1.5,
         "share": 1.0},
    ),
    "batch_answer_tokens": (5, 400),
}

KINDS = ("api", "eval", "extract", "classify")


def envelope(d, p, rank):
    """A tenant's activity over the hour: (kind, from ms, to ms, ramp ms)."""
    u, ramp = d.u(), 1000.0 * p["envelope_ramp_s"]
    steady, rising, fading, _ = p["envelope_shares"]
    if u < steady or rank < p["steady_top"]:
        return ("steady", 0.0, DURATION_MS, ramp)
    if u < steady + rising:
        return ("rising", d.uniform(0, DURATION_MS), DURATION_MS + ramp, ramp)
    if u < steady + rising + fading:
        return ("fading", -ramp, d.uniform(0, DURATION_MS), ramp)
    start = d.uniform(-0.1 * DURATION_MS, DURATION_MS)
    return ("burst", start, start + 1000.0 * d.lognormal(p["burst_s_median"], p["burst_sigma"]), ramp)


def activity(env, t):
    """The envelope at t: 1 inside (from, to), ramping in and out over `ramp`."""
    _, lo, hi, ramp = env
    ramp = min(ramp, (hi - lo) / 2)
    if t <= lo or t >= hi:
        return 0.0
    return min(1.0, (t - lo) / ramp, (hi - t) / ramp) if ramp > 0 else 1.0


def make_tenant(d, p, c, rank, frameworks, fzipf):
    """A tenant: its envelope, its prompt's versions (from ms, segments) and
    its few-shot templates."""
    prompt = [seg(c, d.tokens(p["tenant_prompt_tokens_median"], p["tenant_prompt_sigma"],
                              *p["tenant_prompt_tokens"]))]
    if d.chance(p["framework_share"]):
        prompt.insert(0, frameworks[fzipf.pick(d)])
    versions = [(0.0, prompt)]
    if d.chance(p["new_version_p"]):
        n = length(prompt)
        keep = int(n * d.uniform(*p["new_version_keep"]))
        rewritten = max(50, int((n - keep) * d.uniform(0.8, 1.3)))
        versions.append((d.uniform(0, DURATION_MS), cut(prompt, keep) + [seg(c, rewritten)]))
    templates = []
    if d.chance(p["template_share"]):
        templates = [seg(c, d.uniform_int(*p["template_tokens"]))
                     for _ in range(d.uniform_int(*p["templates_per_tenant"]))]
    return {"env": envelope(d, p, rank), "versions": versions, "templates": templates,
            "tzipf": Zipf(len(templates), p["template_zipf_s"]) if templates else None}


def tenant_call(d, p, c, tenant, t, out):
    """One call (and its follow-ups) at t."""
    prompt = [v for at, v in tenant["versions"] if at <= t][-1]
    ctx = list(prompt)
    if tenant["templates"]:
        ctx.append(tenant["templates"][tenant["tzipf"].pick(d)])
    ctx.append(seg(c, d.tokens(p["user_tokens_median"], p["user_sigma"], *p["user_tokens"])))
    answer = d.uniform_int(*p["answer_tokens"])
    out.append((t, list(ctx), answer))
    if not d.chance(p["followup_p"]):
        return
    for _ in range(d.geometric(p["followups_mean"], p["followups_max"])):
        t += 1000.0 * d.lognormal(p["followup_s_median"], p["followup_sigma"])
        if t >= DURATION_MS:
            return
        ctx += [seg(c, answer), seg(c, d.tokens(p["user_tokens_median"], p["user_sigma"], *p["user_tokens"]))]
        answer = d.uniform_int(*p["answer_tokens"])
        out.append((t, list(ctx), answer))


def gen_api(d, p, c, out):
    frameworks = [seg(c, d.uniform_int(*p["framework_tokens"])) for _ in range(p["frameworks"])]
    fzipf = Zipf(p["frameworks"], p["framework_zipf_s"])
    tenants = [make_tenant(d, p, c, rank, frameworks, fzipf) for rank in range(p["tenants"])]
    zipf = Zipf(p["tenants"], p["tenant_zipf_s"])
    for t in d.arrivals(p["api_candidates_per_hour"]):
        tenant = tenants[zipf.pick(d)]
        if d.u() < activity(tenant["env"], t):
            tenant_call(d, p, c, tenant, t, out)


def datasets(d, p, c, names):
    """The named datasets' items (segments), each in its order."""
    out = {}
    for name in names:
        items, median, sigma, span = p["datasets"][name]
        out[name] = [seg(c, d.tokens(median, sigma, *span)) for _ in range(items)]
    return out


def gen_batch(d, p, c, out, kind):
    """The batch jobs of `kind`: each pass a sweep over its items in order."""
    jobs = [job for job in p["batch_jobs"] if job["kind"] == kind]
    data = datasets(d, p, c, sorted({job["dataset"] for job in jobs}))
    prompts = {}
    for job in jobs:
        if job["prompt"] not in prompts:
            prompts[job["prompt"]] = (seg(c, job["prompt_tokens"]), seg(c, job["suffix_tokens"]))
    for job in jobs:
        start = 1000.0 * d.uniform(*job["start_s"])
        instruction, suffix = prompts[job["prompt"]]
        items = data[job["dataset"]]
        for k in range(job["passes"]):
            chosen = items if k == 0 else [it for it in items if d.chance(job["share"])]
            t = start
            for item in chosen:
                t += d.exp(1000.0 / job["rate"])
                if t >= DURATION_MS:
                    break
                out.append((t, [instruction, item, suffix], d.uniform_int(*p["batch_answer_tokens"])))
            start += 1000.0 * d.uniform(*job["gap_s"])


def generate(seed, kinds=None):
    """The trace's lines; `kinds`, a list, gets each request's kind."""
    p = dict(PARAMS, seed=seed)
    c, reqs = Content(), []
    # Each kind draws from its own stream so that changing one leaves the others.
    for k, name in enumerate(KINDS):
        kind = []
        d = Draw(seed * 8 + k)
        if name == "api":
            gen_api(d, p, c, kind)
        else:
            gen_batch(d, p, c, kind, name)
        reqs += [(t, k, i, ctx, ans) for i, (t, ctx, ans) in enumerate(kind)]
    return assemble(reqs, KINDS, kinds)


if __name__ == "__main__":
    sys.exit(main(__doc__, PARAMS["seed"], "tenants_trace.jsonl", KINDS, generate))
