"""Reduce the DatasetMetadata AIPerf 0.13.0 cached for each run (runs/<case>/cache/<key>/manifest.json,
field dataset_metadata_json: what DatasetManager publishes to the timing manager, whose
ReplayBarrierCoordinator reads replay_predecessors from it) to predecessors.json, then
re-derive every turn's predecessors with an independent implementation of the rule of
aiperf/timing/replay_dependencies.py::infer_cross_stream_predecessors and report mismatches.

    python3 dump.py            (after run_cases.sh; plain python3, no AIPerf import)
"""
import glob
import json
import math
import os
import sys

BASE = os.environ.get("GT_DIR", "/tmp/gt-barriers")
# case name -> run directory (run_cases.sh). --num-sessions caps the number of traces AIPerf
# loads, so `finite_traces` is the 5-session run and `tracelab` the 2-session run (all of each
# input, as in expected.json); the 1-session runs are kept as `*_ns1`.
CASES = {c: c for c in ["one_subagent", "terminal_subagent", "multi_model", "weka_subagent_0001",
                        "finite_traces", "kvct_0291", "kvct_0403", "kvct_0489", "kvct_0527",
                        "kvct_0613", "one_subagent_idlegap1", "kvct_0291_idlegap5",
                        "kvct_0291_ignore", "finite_traces_ns1"]}
CASES["tracelab"] = "tracelab_ns2"
CASES["tracelab_ns1"] = "tracelab"


def load(case):
    [path] = glob.glob(f"{BASE}/runs/{case}/cache/*/manifest.json")
    man = json.load(open(path))
    md = json.loads(man["dataset_metadata_json"])
    return [{
        "session_id": c["conversation_id"],
        "replay_scope_id": c.get("replay_scope_id"),
        "turns": [{
            "timestamp": t["timestamp_ms"],
            "api_time_ms": t["api_time_ms"],
            "predecessors": [[p["conversation_id"], p["turn_index"]] for p in t["replay_predecessors"]],
        } for t in c["turns"]],
    } for c in md["conversations"]]


def recompute(convs):
    """Independent re-statement of the rule: per scope, for each other stream, its latest
    request with start < target start and end <= target start (max by end, start, key);
    drop a frontier member that completed before another member started."""
    def iv(t):
        s = t["timestamp"]
        if s is None or not math.isfinite(s):
            return None
        d = t["api_time_ms"]
        d = 0.0 if d is None or not math.isfinite(d) or d < 0 else d
        return s, s + d
    scopes = {}
    for c in convs:
        if c["replay_scope_id"] is None:
            continue
        for k, t in enumerate(c["turns"]):
            scopes.setdefault(c["replay_scope_id"], []).append((c["session_id"], k, iv(t)))
    out = {}
    for items in scopes.values():
        for sid, k, tiv in items:
            if tiv is None:
                out[(sid, k)] = []
                continue
            frontier = []
            for other in dict.fromkeys(s for s, _, _ in items):
                if other == sid:
                    continue
                done = [(e, s, (o, j)) for o, j, v in items if o == other and v is not None
                        for s, e in [v] if s < tiv[0] and e <= tiv[0]]
                if done:
                    e, s, key = max(done)
                    frontier.append((s, e, key))
            keep = [key for s, e, key in frontier
                    if not any(s < s2 and e <= s2 for s2, e2, k2 in frontier if k2 != key)]
            out[(sid, k)] = sorted([list(x) for x in keep])
    return out


result, bad = {}, 0
for case, run in CASES.items():
    convs = load(run)
    result[case] = convs
    want = recompute(convs)
    for c in convs:
        for k, t in enumerate(c["turns"]):
            exp = want.get((c["session_id"], k), [])
            if t["predecessors"] != exp:
                bad += 1
                print(f"MISMATCH {case} {c['session_id']}[{k}]: aiperf {t['predecessors']} rule {exp}")
    scopes = {}
    for c in convs:
        scopes.setdefault(c["replay_scope_id"], []).append(c["session_id"])
    multi = {s: v for s, v in scopes.items() if len(v) > 1}
    gated = sum(1 for c in convs for t in c["turns"] if t["predecessors"])
    print(f"{case}: {len(convs)} conversations, {len(scopes)} scopes, {gated} gated turns, "
          f"multi-stream scopes: {multi}")
json.dump(result, open(f"{BASE}/predecessors.json", "w"), indent=1)
print("mismatches vs rule:", bad)
sys.exit(1 if bad else 0)
