"""Reduces AIPerf 0.13's agentic_replay runs to what tests/it/agentic.rs checks (expected.json).

Each case was run as `aiperf profile -f config.yaml` (config.yaml beside this script, with the
case's seed, concurrency and phase keys) on a directory holding multi_model.json,
one_subagent.json and terminal_subagent.json from ../traces, against ringperf's mock; the
trajectories (t*, live sessions) were read from AIPerf's TrajectorySource by a read-only hook,
the requests from its profile_export.jsonl. usage: reduce.py RUN_DIR... > expected.json
"""
import json
import sys

out = {}
for run in sys.argv[1:]:
    s = json.load(open(f"{run}/summary.json"))
    lanes = [
        {
            "root": lane["root_trace_id"],
            "t_star_ms": lane["t_star_ms"],
            "streams": [
                {
                    "conversation": st["conversation_id"],
                    "next": st["next_turn_index"],
                    "offset_ms": st["next_dispatch_offset_ms"],
                    "waiting": st["waiting_on_children"],
                }
                for st in lane["live_states"]
            ],
        }
        for lane in s["lanes"]
    ]
    warm = [
        {
            "conversation": r["conversation_id"],
            "turn": r["turn_index"],
            "at_ms": r["credit_rel_ms"],
            "messages": r["n_messages"],
            "max_tokens": r["max_tokens"],
            "lane": r["lane"],
        }
        for r in s["warmup_requests"]
    ]
    first = {
        lane: {
            "conversation": r["conversation_id"],
            "turn": r["turn_index"],
            "at_ms": r["credit_rel_ms"],
            "same_id_as_warmup": r["same_corr_as_warmup"],
        }
        for lane, r in s["profiling_first_request_per_lane"].items()
    }
    seq = [
        [r["conv"], r["turn"]] for r in s["profiling_sequence"] if r["lane"] == 0
    ][:9]
    out[s["case"]] = {
        "lanes": lanes,
        "warmup": warm,
        "first_profiling": first,
        "lane0_sequence": seq,
    }
json.dump(out, sys.stdout, indent=1)
print()
