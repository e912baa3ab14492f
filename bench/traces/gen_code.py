#!/usr/bin/env python3
"""A code assistant's long-context prefix-cache trace in Mooncake's format, deterministic.

    gen_code.py [--seed 20261206] [--out code_trace.jsonl] [--stats] [--kinds FILE]

One JSON object per line, sorted by time:

    {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [...]}

hash_ids are the prompt's blocks of 512 tokens (the last one partial), ids
given densely in order of first use (tracegen.py's chained ids).

An hour of a code assistant serving teams of developers (README.md has the
numbers). Every request carries its repository's context (a repo map and
key files, tens of blocks, behind the IDE's system prompt), shared by the
repository's developers; each team works in bursts over the hour, and a
commit rewrites one file of the context (every block after it changes).

- editing sessions: a developer re-sends the file being edited with each
  instruction, the file changed since the last request near its end (deep
  chains diverging a few blocks from their tips), now and then another file;
- chats about the repository: a question, a few turns;
- tree search: an automated fix job samples several first steps from one
  root (the issue behind the repository's context) at once, then expands
  the tree one node an iteration (the path's actions and tool
  observations appended), preferring the best branches: many branches
  from one root, a node's prompt shared by its descendants.

Python 3 standard library only; of the random module only random() is used
(tracegen.Draw).
"""
import math
import sys

from tracegen import DURATION_MS, Content, Draw, Zipf, assemble, cut, length, main, seg

# What each kind of work looks like (tokens unless named otherwise).
PARAMS = {
    "seed": 20261206,
    # the IDE's system prompts: editing (two plugin versions, the newer on
    # `edit_new_share` of sessions), chat, the fix agent
    "edit_prompt_tokens": (2200, 2600), "edit_new_share": 0.7,
    "chat_prompt_tokens": 1500, "agent_prompt_tokens": 5000,
    # repositories: Zipf popularity (team size), a context of a repo map and
    # files, commits that rewrite one file of it (mostly the later ones)
    "repos": 60, "repo_zipf_s": 0.8,
    "repo_map_tokens": (500, 2000), "repo_context_tokens": (6000, 30000),
    "repo_file_tokens_median": 1500, "repo_file_sigma": 0.7,
    "repo_commits_per_hour": 1.5,
    # a team's activity: a base, and one or two peaks (Gaussian, width median 15 min)
    "team_base": 0.15, "team_peaks": (1, 2), "team_peak_s_median": 900, "team_peak_sigma": 0.5,
    # editing sessions (candidates: kept with the repository's team activity)
    "edit_candidates_per_hour": 1100,
    "edit_requests_mean": 7, "edit_requests_max": 40,
    "edit_file_tokens_median": 3000, "edit_file_sigma": 0.7, "edit_file_tokens": (300, 16000),
    "edit_tail_share": 0.4,  # an edit rewrites the file's last share x u^2 (u uniform)
    "edit_grow_tokens": (-100, 400), "edit_switch_file_p": 0.15,
    "edit_instruction_tokens": (20, 300), "edit_answer_tokens": (50, 800),
    "edit_gap_s_median": 20.0, "edit_gap_sigma": 0.8,
    # chats about a repository
    "chat_candidates_per_hour": 1000,
    "chat_turns_mean": 2.0, "chat_turns_max": 8,
    "chat_question_tokens": (30, 400), "chat_answer_tokens": (100, 800), "chat_gap_s": (30, 180),
    # tree search (fix jobs)
    "tree_candidates_per_hour": 120,
    "tree_issue_tokens": (300, 2500), "tree_fanout": (4, 8), "tree_iterations": (12, 40),
    "tree_branch_max": 3, "tree_depth_max": 6, "tree_expand_p": 0.5, "tree_child_zipf_s": 1.0,
    "tree_action_tokens": (100, 600), "tree_observation_tokens_median": 600, "tree_observation_sigma": 1.0,
    "tree_step_s_median": 4.0, "tree_step_sigma": 0.8,
}

KINDS = ("edit", "chat", "tree")


def make_repo(d, p, c):
    """A repository: its context's versions (from ms, segments) and its
    team's activity peaks (centre ms, width ms)."""
    target = d.uniform_int(*p["repo_context_tokens"])
    files = [seg(c, d.uniform_int(*p["repo_map_tokens"]))]
    while length(files) < target:
        files.append(seg(c, d.tokens(p["repo_file_tokens_median"], p["repo_file_sigma"], 100, 12000)))
    versions = [(0.0, list(files))]
    for t in d.arrivals(p["repo_commits_per_hour"]):
        u = d.u()
        k = max(1, min(len(files) - 1, int(len(files) * (1.0 - u * u))))
        files[k] = seg(c, max(50, int(files[k][1] * d.uniform(0.9, 1.15))))
        versions.append((t, list(files)))
    peaks = [(d.uniform(-0.1 * DURATION_MS, 1.1 * DURATION_MS),
              1000.0 * d.lognormal(p["team_peak_s_median"], p["team_peak_sigma"]))
             for _ in range(d.uniform_int(*p["team_peaks"]))]
    return {"versions": versions, "peaks": peaks}


def context(repo, t):
    return [v for at, v in repo["versions"] if at <= t][-1]


def activity(p, repo, t):
    """The team's activity at t, 0..1."""
    peak = max(math.exp(-((t - centre) / width) ** 2) for centre, width in repo["peaks"])
    return p["team_base"] + (1.0 - p["team_base"]) * peak


class Service:
    """What every kind shares: the system prompts and the repositories,
    made first from their own stream (so a kind's draws leave them)."""

    def __init__(self, seed, p, c):
        d = Draw(seed * 8 + 7)
        self.edit_prompts = [seg(c, d.uniform_int(*p["edit_prompt_tokens"])) for _ in range(2)]
        self.chat_prompt = seg(c, p["chat_prompt_tokens"])
        self.agent_prompt = seg(c, p["agent_prompt_tokens"])
        self.repos = [make_repo(d, p, c) for _ in range(p["repos"])]
        self.zipf = Zipf(p["repos"], p["repo_zipf_s"])

    def sessions(self, d, p, per_hour):
        """(time, repository) of sessions: candidates kept with the team's activity."""
        out = []
        for t in d.arrivals(per_hour):
            repo = self.repos[self.zipf.pick(d)]
            if d.u() < activity(p, repo, t):
                out.append((t, repo))
        return out


def edit_session(d, p, c, s, repo, t, out):
    prompt = s.edit_prompts[1 if d.chance(p["edit_new_share"]) else 0]
    file = [seg(c, d.tokens(p["edit_file_tokens_median"], p["edit_file_sigma"], *p["edit_file_tokens"]))]
    for _ in range(d.geometric(p["edit_requests_mean"], p["edit_requests_max"])):
        if t >= DURATION_MS:
            return
        ctx = [prompt] + context(repo, t) + file + [seg(c, d.uniform_int(*p["edit_instruction_tokens"]))]
        out.append((t, ctx, d.uniform_int(*p["edit_answer_tokens"])))
        if d.chance(p["edit_switch_file_p"]):
            file = [seg(c, d.tokens(p["edit_file_tokens_median"], p["edit_file_sigma"], *p["edit_file_tokens"]))]
        else:
            n, u = length(file), d.u()
            keep = int(n * (1.0 - p["edit_tail_share"] * u * u))
            file = cut(file, keep) + [seg(c, max(20, n - keep + d.uniform_int(*p["edit_grow_tokens"])))]
        t += 1000.0 * d.lognormal(p["edit_gap_s_median"], p["edit_gap_sigma"])


def gen_edit(d, p, c, s, out):
    for t, repo in s.sessions(d, p, p["edit_candidates_per_hour"]):
        edit_session(d, p, c, s, repo, t, out)


def gen_chat(d, p, c, s, out):
    for t, repo in s.sessions(d, p, p["chat_candidates_per_hour"]):
        ctx = [s.chat_prompt] + context(repo, t)
        for _ in range(d.geometric(p["chat_turns_mean"], p["chat_turns_max"])):
            if t >= DURATION_MS:
                break
            ctx.append(seg(c, d.uniform_int(*p["chat_question_tokens"])))
            answer = d.uniform_int(*p["chat_answer_tokens"])
            out.append((t, list(ctx), answer))
            ctx.append(seg(c, answer))
            t += 1000.0 * d.uniform_int(*p["chat_gap_s"])


def tree_child(d, p, c, node):
    """A node's new child: its prompt, the action and the tool's observation after it."""
    action = d.uniform_int(*p["tree_action_tokens"])
    obs = d.tokens(p["tree_observation_tokens_median"], p["tree_observation_sigma"], 20, 6000)
    child = {"ctx": node["ctx"] + [seg(c, action), seg(c, obs)], "children": [], "depth": node["depth"] + 1}
    node["children"].append(child)
    return action


def tree_select(d, p, root):
    """The node an iteration expands: down from the root, preferring the
    first (best) children, until a node with room that chooses to grow."""
    node = root
    while node["children"] and node["depth"] < p["tree_depth_max"]:
        if len(node["children"]) < p["tree_branch_max"] and d.chance(p["tree_expand_p"]):
            break
        node = node["children"][Zipf(len(node["children"]), p["tree_child_zipf_s"]).pick(d)]
    return node


def tree_job(d, p, c, s, repo, t, out):
    root = {"ctx": [s.agent_prompt] + context(repo, t) + [seg(c, d.uniform_int(*p["tree_issue_tokens"]))],
            "children": [], "depth": 0}
    for _ in range(d.uniform_int(*p["tree_fanout"])):  # parallel samples of the first step, at once
        out.append((t, list(root["ctx"]), tree_child(d, p, c, root)))
    for _ in range(d.uniform_int(*p["tree_iterations"])):
        t += 1000.0 * d.lognormal(p["tree_step_s_median"], p["tree_step_sigma"])
        if t >= DURATION_MS:
            return
        node = tree_select(d, p, root)
        if node["depth"] >= p["tree_depth_max"]:
            out.append((t, list(node["ctx"]), d.uniform_int(*p["tree_action_tokens"])))  # a rollout's end, scored
        else:
            out.append((t, list(node["ctx"]), tree_child(d, p, c, node)))


def gen_tree(d, p, c, s, out):
    for t, repo in s.sessions(d, p, p["tree_candidates_per_hour"]):
        tree_job(d, p, c, s, repo, t, out)


def generate(seed, kinds=None):
    """The trace's lines; `kinds`, a list, gets each request's kind."""
    p = dict(PARAMS, seed=seed)
    c, reqs = Content(), []
    s = Service(seed, p, c)
    # Each kind draws from its own stream so that changing one leaves the others.
    for k, fn in enumerate((gen_edit, gen_chat, gen_tree)):
        kind = []
        fn(Draw(seed * 8 + k), p, c, s, kind)
        reqs += [(t, k, i, ctx, ans) for i, (t, ctx, ans) in enumerate(kind)]
    return assemble(reqs, KINDS, kinds)


if __name__ == "__main__":
    sys.exit(main(__doc__, PARAMS["seed"], "code_trace.jsonl", KINDS, generate))
