#!/usr/bin/env python3
"""Reduces AIPerf's runs (capture.sh) to expected.json: per run, the flags, AIPerf's exit code,
its load error (a refused file), its branch_stats, and every request in the order AIPerf issued
them: its conversation, turn, agent depth, credit-issue / start / end times in ms from the first
issue, and the body the mock received, each live reply's text (which the mock words freely)
replaced by "<reply>" and each --cache-bust marker by "[rid]". Usage: reduce.py RUNS_DIR OUT.json"""
import json
import os
import re
import sys


def canned_assistant_texts(path):
    texts = set()
    for line in open(path):
        if not line.strip():
            continue
        for turn in json.loads(line).get("turns", []):
            for m in turn.get("messages", []):
                if m.get("role") == "assistant" and isinstance(m.get("content"), str):
                    texts.add(m["content"])
    return texts


MARKER = re.compile(r"\[rid:[0-9a-f]{12}\]")


def mask(body, canned):
    for m in body.get("messages", []):
        if m.get("role") == "assistant" and m.get("content") not in canned:
            m["content"] = "<reply>"
        elif isinstance(m.get("content"), str):
            # A --cache-bust marker's digits are the benchmark's: kept as where it went.
            m["content"] = MARKER.sub("[rid]", m["content"])
    return body


def reduce_run(d, here):
    name = os.path.basename(d)
    file = open(os.path.join(d, "file")).read().strip()
    flags = [f for f in open(os.path.join(d, "flags")).read().split("\n") if f]
    rc = int(open(os.path.join(d, "rc")).read())
    run = {"name": name, "file": file, "flags": flags, "exit_code": rc}
    truth_path = os.path.join(d, "truth.jsonl")
    if os.path.exists(truth_path):
        # Every request the mock received, warmup ones included.
        run["mock_requests"] = sum(1 for _ in open(truth_path))
    if rc != 0:
        log = open(os.path.join(d, "aiperf.log")).read()
        m = re.search(r"Dataset configuration failed: \w+\((['\"])(.*)\1\)", log)
        # The file named as given to AIPerf, less this folder's absolute path.
        run["error"] = m.group(2).replace(here + "/", "") if m else None
        return run
    canned = canned_assistant_texts(os.path.join(here, file))
    truth = {}
    for line in open(os.path.join(d, "truth.jsonl")):
        t = json.loads(line)
        truth[t["request_id"]] = t
    recs = [json.loads(l) for l in open(os.path.join(d, "art", "profile_export.jsonl"))]
    recs.sort(key=lambda r: r["metadata"]["credit_issued_ns"])
    t0 = recs[0]["metadata"]["credit_issued_ns"]
    ms = lambda ns: round((ns - t0) / 1e6, 3)
    out = []
    for r in recs:
        m = r["metadata"]
        body = json.loads(truth[m["x_request_id"]]["request_body"])
        out.append({
            "conversation": m["conversation_id"],
            "turn": m["turn_index"],
            "depth": m.get("agent_depth", 0),
            "issue_ms": ms(m["credit_issued_ns"]),
            "start_ms": ms(m["request_start_ns"]),
            "end_ms": ms(m["request_end_ns"]),
            "body": mask(body, canned),
        })
    run["requests"] = out
    # AIPerf's branch counts (children, suspended and resumed joins, orchestrator graphs).
    export = os.path.join(d, "art", "profile_export_aiperf.json")
    if os.path.exists(export):
        stats = json.load(open(export)).get("branch_stats")
        if stats is not None:
            run["branch_stats"] = stats
    # inputs.json: every conversation's turns, each body as sent alone.
    run["inputs"] = json.load(open(os.path.join(d, "art", "inputs.json")))["data"]
    return run


def main():
    runs_dir, out = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(out))
    runs = [reduce_run(os.path.join(runs_dir, n), here) for n in sorted(os.listdir(runs_dir))]
    json.dump({"aiperf": "0.13.0", "runs": runs}, open(out, "w"), indent=1)
    open(out, "a").write("\n")


if __name__ == "__main__":
    main()
