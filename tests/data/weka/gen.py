"""Writes expected.json: the conversations AIPerf 0.13 built from each trace here, reduced to
what ringperf must match (roles, message token counts, max_tokens, timestamps, delays, resets,
branches, joins, prefix-cache blocks), and its runs' theoretical_prefix_cache_hit and
branch_stats. Input: AIPerf's dataset cache dumped as conversations.json and its
profile_export_aiperf.json, one run directory per case (README.md says how they were made).

    python3 gen.py RUNS_DIR...
"""
import json
import sys

import tiktoken

enc = tiktoken.get_encoding("o200k_base")
import os

dirs = sys.argv[1:]
CASES = {
    "one_subagent": ("traces/one_subagent.json", []),
    "one_subagent_thinktime": ("traces/one_subagent.json", ["--use-think-time-only"]),
    "one_subagent_ignore": ("traces/one_subagent.json", ["--ignore-trace-delays"]),
    "one_subagent_idlegap1": ("traces/one_subagent.json", ["--trace-idle-gap-cap-seconds", "1"]),
    "terminal_subagent": ("traces/terminal_subagent.json", []),
    "multi_model_2names": ("traces/multi_model.json", ["-m", "model-a,model-b"]),
    "weka_subagent_0001": ("traces/weka_subagent_0001.json", []),
    "kvct_0613": ("traces/kvct_trace_0613.json", []),
    "finite_traces": ("finite", []),
    "kvct_0291_ignore": ("traces/kvct_trace_0291.json", ["--ignore-trace-delays"]),
    "kvct_0489_ignore": ("traces/kvct_trace_0489.json", ["--ignore-trace-delays"]),
    "kvct_0527_ignore": ("traces/kvct_trace_0527.json", ["--ignore-trace-delays"]),
    "kvct_0403_ignore": ("traces/kvct_trace_0403.json", ["--ignore-trace-delays"]),
    "tracelab_ns2_fixed": ("tracelab/round_trace.jsonl", ["--custom-dataset-type", "tracelab"]),
}


# The runs whose records' metadata the end-to-end test compares.
RECORD_CASES = {"weka_subagent_0001"}


def run_dir(name):
    return next(f"{d}/{name}" for d in dirs if os.path.isdir(f"{d}/{name}"))

out = {}
for name, (path, flags) in CASES.items():
    convs = json.load(open(f"{run_dir(name)}/conversations.json"))
    ids = [c["session_id"] for c in convs]
    reduced = []
    for c in convs:
        branch_ids = [b["branch_id"] for b in c["branches"]]
        turns = []
        for t in c["turns"]:
            turns.append({
                "roles": [m["role"] for m in t["raw_messages"]],
                "tokens": [len(enc.encode(m["content"])) for m in t["raw_messages"]],
                "max_tokens": t["max_tokens"],
                "model": t["model"],
                "timestamp_ms": t["timestamp"],
                "delay_ms": t["delay"],
                "api_time_ms": t["api_time_ms"],
                "reset": t["reset_context"],
                "spawns": [branch_ids.index(b) for b in t["branch_ids"]],
                "joins": [branch_ids.index(p["branch_id"]) for p in t["prerequisites"]],
                "prefix_blocks": [t["theoretical_prefix_cache_hit_blocks"],
                                  t["theoretical_prefix_cache_total_blocks"]],
            })
        reduced.append({
            "session_id": c["session_id"],
            "parent": ids.index(c["parent_conversation_id"]) if c["parent_conversation_id"] else None,
            "branches": [{
                "id": b["branch_id"],
                "children": [ids.index(x) for x in b["child_conversation_ids"]],
                "background": b["is_background"],
                "start_ms": b["start_timestamp_ms"],
            } for b in c["branches"]],
            "turns": turns,
        })
    export = json.load(open(f"{run_dir(name)}/artifacts/profile_export_aiperf.json"))
    # Each record's metadata as AIPerf wrote it (in send order): its keys in order, its place in
    # the trace, and its session's place in the tree (the ids themselves change every run).
    lines = [json.loads(l)["metadata"] for l in open(f"{run_dir(name)}/artifacts/profile_export.jsonl")]
    lines.sort(key=lambda m: m["request_start_ns"])
    conv_of = {m["x_correlation_id"]: m["conversation_id"] for m in lines}
    records = None if name not in RECORD_CASES else [{
        "keys": [k for k in m if not k.startswith("ringperf")],
        "conversation_id": m["conversation_id"],
        "turn_index": m["turn_index"],
        "source": [m.get("source_trace_id"), m.get("source_outer_idx"), m.get("source_inner_idx"),
                   m.get("source_kind")],
        "agent_depth": m["agent_depth"],
        "parent": conv_of.get(m.get("parent_correlation_id")),
        "root": conv_of.get(m["root_correlation_id"]),
    } for m in lines]
    out[name] = {
        "path": path,
        "flags": flags,
        "records": records,
        "command": open(f"{run_dir(name)}/command.txt").read().split("\\\n")[-1].strip(),
        "conversations": reduced,
        "theoretical_prefix_cache_hit": export.get("theoretical_prefix_cache_hit"),
        "branch_stats": export.get("branch_stats"),
    }
# A run whose dataset cache was not kept: its figures only (the default 10 requests).
for name, path in [("one_subagent_default_count", "traces/one_subagent.json")]:
    export = json.load(open(f"{run_dir(name)}/artifacts/profile_export_aiperf.json"))
    out[name] = {
        "path": path,
        "flags": [],
        "command": open(f"{run_dir(name)}/command.txt").read().split("\\\n")[-1].strip(),
        "theoretical_prefix_cache_hit": export.get("theoretical_prefix_cache_hit"),
        "branch_stats": export.get("branch_stats"),
    }
json.dump(out, open("expected.json", "w"), indent=1)
