#!/usr/bin/env python3
"""An agentic / RAG prefix-cache trace in Mooncake's format, deterministic.

    gen_agentic.py [--seed 20261203] [--out agentic_trace.jsonl] [--stats] [--kinds FILE]

One JSON object per line, sorted by time:

    {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [...]}

hash_ids are the prompt's blocks of 512 tokens (the last one partial), with
ids given densely in order of first use: two requests share an id exactly
when they share every token up to the end of that block (a block's id is
its parent's id and its own content, as an engine's chained page hash).

An hour of four kinds of work over one service (README.md has the numbers):

- agent sessions: one of four agent system prompts (tool definitions),
  a task, then steps a few seconds apart, each appending the model's
  action and the tool's observation to the session's own prefix;
- RAG questions: one of three RAG system prompts, then the retrieved
  documents (Zipf popularity over a fixed corpus, the most relevant
  first), then the question; some get a follow-up a minute or two later;
- long-context one-offs: a long upload (a codebase, a report) behind a
  short generic prompt, asked about once, sometimes twice minutes apart
  (a scan for any cache);
- chats: short multi-turn conversations behind a generic prompt.

Python 3 standard library only. Only random.random() is used (its
sequence for a seed is the one the random module guarantees across
versions); every other draw is derived from it here.
"""
import argparse
import json
import sys

from tracegen import DURATION_MS, Content, Draw, Zipf, blocks_of

# Draw, Zipf, Content and blocks_of are tracegen.py's (the trace is unchanged byte for byte).

# What each kind of work looks like (tokens unless named otherwise).
PARAMS = {
    "seed": 20261203,
    # agent sessions (coding and tool agents): tasks a user gives, each a loop of tool steps
    "agent_sessions_per_hour": 150,
    "agent_prompts": 4, "agent_prompt_tokens": (3000, 9000),
    "agent_tasks_mean": 3, "agent_tasks_max": 12, "agent_task_tokens": (20, 1500),
    "agent_steps_mean": 4, "agent_steps_max": 30,
    "agent_action_tokens": (50, 500), "agent_observation_tokens_median": 600, "agent_observation_sigma": 1.0,
    "agent_decode_tokens_per_s": 50, "agent_tool_s_median": 6.0, "agent_tool_sigma": 1.2,
    "agent_user_s_median": 150.0, "agent_user_sigma": 1.0,
    "agent_compact_at_tokens": 48000, "agent_summary_tokens": (1000, 2500),
    # RAG questions: topics of Zipf popularity, each with the documents retrieval returns for it
    "rag_questions_per_hour": 4000,
    "rag_prompts": 3, "rag_prompt_tokens": (600, 1800),
    "rag_corpus_docs": 20000, "rag_doc_zipf_s": 0.8,
    "rag_doc_tokens_median": 900, "rag_doc_sigma": 0.6,
    "rag_topics": 30000, "rag_topic_zipf_s": 0.9,
    "rag_docs_per_question": (1, 4),
    "rag_question_tokens": (20, 200), "rag_same_wording_p": 0.3,
    "rag_followup_p": 0.3, "rag_followup_gap_s": (20, 180), "rag_answer_tokens": (100, 500),
    # long-context one-offs
    "long_uploads_per_hour": 300,
    "long_prompt_tokens": 300,
    "long_upload_tokens": (16000, 90000),
    "long_second_question_p": 0.25, "long_second_gap_s": (60, 900),
    # chats
    "chats_per_hour": 1000,
    "chat_prompt_tokens": 700,
    "chat_turns_mean": 2.5, "chat_turns_max": 8,
    "chat_turn_tokens": (30, 600), "chat_answer_tokens": (50, 700),
    "chat_gap_s": (20, 240),
}


def agent_task(d, p, c, ctx, t, out):
    """One task: the user's instruction, then tool steps a few seconds apart
    (decoding the action, running the tool); returns the context and the time."""
    ctx.append((c.new(), d.uniform_int(*p["agent_task_tokens"])))
    for _ in range(d.geometric(p["agent_steps_mean"], p["agent_steps_max"])):
        if t >= DURATION_MS:
            break
        if sum(n for _, n in ctx) > p["agent_compact_at_tokens"]:
            # compaction: the history becomes a summary behind the system prompt
            ctx = ctx[:1] + [(c.new(), d.uniform_int(*p["agent_summary_tokens"]))]
        action = d.uniform_int(*p["agent_action_tokens"])
        out.append((t, list(ctx), action))
        obs = max(20, int(d.lognormal(p["agent_observation_tokens_median"], p["agent_observation_sigma"])))
        ctx += [(c.new(), action), (c.new(), obs)]
        t += 1000.0 * (action / p["agent_decode_tokens_per_s"] +
                       d.lognormal(p["agent_tool_s_median"], p["agent_tool_sigma"]))
    return ctx, t


def gen_agents(d, p, c, out):
    prompts = [(c.new(), d.uniform_int(*p["agent_prompt_tokens"])) for _ in range(p["agent_prompts"])]
    for t in d.arrivals(p["agent_sessions_per_hour"]):
        ctx = [prompts[d.uniform_int(0, len(prompts) - 1)]]
        for _ in range(d.geometric(p["agent_tasks_mean"], p["agent_tasks_max"])):
            if t >= DURATION_MS:
                break
            ctx, t = agent_task(d, p, c, ctx, t, out)
            t += 1000.0 * d.lognormal(p["agent_user_s_median"], p["agent_user_sigma"])


def rag_topics(d, p, c):
    """The questions users ask, each with its prompt, the documents retrieval
    returns for it (popular documents recur across topics) and its usual
    wording."""
    prompts = [(c.new(), d.uniform_int(*p["rag_prompt_tokens"])) for _ in range(p["rag_prompts"])]
    docs = [(c.new(), max(64, int(d.lognormal(p["rag_doc_tokens_median"], p["rag_doc_sigma"]))))
            for _ in range(p["rag_corpus_docs"])]
    zipf = Zipf(p["rag_corpus_docs"], p["rag_doc_zipf_s"])
    topics = []
    for _ in range(p["rag_topics"]):
        picked = []
        for _ in range(d.uniform_int(*p["rag_docs_per_question"])):
            k = zipf.pick(d)
            if k not in picked:
                picked.append(k)
        wording = (c.new(), d.uniform_int(*p["rag_question_tokens"]))
        topics.append(([prompts[d.uniform_int(0, len(prompts) - 1)]] + [docs[k] for k in picked], wording))
    return topics


def gen_rag(d, p, c, out):
    topics = rag_topics(d, p, c)
    zipf = Zipf(p["rag_topics"], p["rag_topic_zipf_s"])
    for t in d.arrivals(p["rag_questions_per_hour"]):
        prefix, wording = topics[zipf.pick(d)]
        if d.u() >= p["rag_same_wording_p"]:
            wording = (c.new(), d.uniform_int(*p["rag_question_tokens"]))
        ctx = prefix + [wording]
        answer = d.uniform_int(*p["rag_answer_tokens"])
        out.append((t, list(ctx), answer))
        if d.u() < p["rag_followup_p"]:
            t2 = t + 1000.0 * d.uniform_int(*p["rag_followup_gap_s"])
            ctx += [(c.new(), answer), (c.new(), d.uniform_int(*p["rag_question_tokens"]))]
            if t2 < DURATION_MS:
                out.append((t2, ctx, d.uniform_int(*p["rag_answer_tokens"])))


def gen_long(d, p, c, out):
    prompt = (c.new(), p["long_prompt_tokens"])
    for t in d.arrivals(p["long_uploads_per_hour"]):
        ctx = [prompt, (c.new(), d.uniform_int(*p["long_upload_tokens"]))]
        answer = d.uniform_int(200, 1200)
        out.append((t, ctx + [(c.new(), d.uniform_int(20, 150))], answer))
        if d.u() < p["long_second_question_p"]:
            t2 = t + 1000.0 * d.uniform_int(*p["long_second_gap_s"])
            if t2 < DURATION_MS:
                out.append((t2, ctx + [(c.new(), d.uniform_int(20, 150))], d.uniform_int(200, 1200)))


def gen_chats(d, p, c, out):
    prompt = (c.new(), p["chat_prompt_tokens"])
    for t in d.arrivals(p["chats_per_hour"]):
        ctx = [prompt]
        for _ in range(d.geometric(p["chat_turns_mean"], p["chat_turns_max"])):
            if t >= DURATION_MS:
                break
            ctx.append((c.new(), d.uniform_int(*p["chat_turn_tokens"])))
            answer = d.uniform_int(*p["chat_answer_tokens"])
            out.append((t, list(ctx), answer))
            ctx.append((c.new(), answer))
            t += 1000.0 * d.uniform_int(*p["chat_gap_s"])


KINDS = ("agent", "rag", "long", "chat")


def generate(seed, kinds=None):
    """The trace's lines; `kinds`, a list, gets each request's kind."""
    p = dict(PARAMS, seed=seed)
    c, reqs = Content(), []
    # Each kind draws from its own stream so that changing one leaves the others.
    for k, fn in enumerate((gen_agents, gen_rag, gen_long, gen_chats)):
        kind = []
        fn(Draw(seed * 8 + k), p, c, kind)
        reqs += [(t, k, i, ctx, ans) for i, (t, ctx, ans) in enumerate(kind)]
    reqs.sort(key=lambda r: (int(r[0]), r[1], r[2]))
    ids, lines = {}, []
    for t, k, _, ctx, ans in reqs:
        if kinds is not None:
            kinds.append(KINDS[k])
        lines.append({"timestamp": int(t), "input_length": sum(n for _, n in ctx), "output_length": ans,
                      "hash_ids": blocks_of(ctx, ids)})
    return lines


def stats(lines):
    seen, uses, hits, acc = set(), {}, 0, 0
    for r in lines:
        h = r["hash_ids"]
        i = 0
        while i < len(h) and h[i] in seen:
            i += 1
        hits += i
        acc += len(h)
        for b in h:
            seen.add(b)
            uses[b] = uses.get(b, 0) + 1
    once = sum(1 for v in uses.values() if v == 1)
    return {"requests": len(lines), "accesses": acc, "distinct": len(uses), "once": once,
            "infinite_hit_rate": hits / acc}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=PARAMS["seed"])
    ap.add_argument("--out", default="agentic_trace.jsonl")
    ap.add_argument("--stats", action="store_true", help="print the trace's statistics on stderr")
    ap.add_argument("--kinds", help="write each request's kind (agent, rag, long, chat), a line each, here")
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
        print(json.dumps(stats(lines)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
