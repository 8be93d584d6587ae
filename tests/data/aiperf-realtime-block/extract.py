#!/usr/bin/env python3
"""Builds this fixture from an AIPerf artifact directory (see README.md).

Usage: extract.py ARTIFACT_DIR  (writes records.jsonl, blocks.json and final.json here)
"""

import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
art = sys.argv[1]

records = []
for line in open(os.path.join(art, "profile_export.jsonl")):
    r = json.loads(line)
    m, md = r["metrics"], r["metadata"]

    def value(k):
        return m[k]["value"] if k in m else None

    records.append(
        {
            "request_start_ns": md["request_start_ns"],
            "request_end_ns": md["request_end_ns"],
            "error": r.get("error") is not None,
            "time_to_first_token": value("time_to_first_token"),
            "inter_token_latency": value("inter_token_latency"),
            "request_latency": value("request_latency"),
            "output_token_throughput_per_user": value("output_token_throughput_per_user"),
            "input_sequence_length": value("input_sequence_length"),
            "output_sequence_length": value("output_sequence_length"),
        }
    )

# The block's lines as the records manager logged them, one log record a line.
blocks, cur = [], None
for line in open(os.path.join(art, "logs", "aiperf.log")):
    if " - records_manager - INFO - " not in line:
        continue
    stamp, msg = line.rstrip("\n").split(" - records_manager - INFO - ", 1)
    if msg.startswith("[realtime "):
        cur = {"logged_at": stamp, "lines": [msg]}
        blocks.append(cur)
    elif cur is not None and msg.startswith("  ") and not cur.get("closed"):
        cur["lines"].append(msg)
        if msg.lstrip().startswith("tot "):
            cur["closed"] = True


def epoch(s):
    return datetime.datetime.strptime(s, "%Y-%m-%d %H:%M:%S.%f").timestamp()


# The phase start is not logged: the headers' whole seconds bound it. Each block's elapsed time is
# its header line's log stamp less the middle of that bound.
lo, hi = float("-inf"), float("inf")
for b in blocks:
    mm, ss = map(int, b["lines"][0].split()[1].split(":"))
    t = epoch(b["logged_at"])
    lo, hi = max(lo, t - mm * 60 - ss - 1), min(hi, t - mm * 60 - ss)
start = (lo + hi) / 2


def figures(n):
    rs = records[:n]
    ok = [r for r in rs if not r["error"]]
    span = max(r["request_end_ns"] for r in ok) - min(r["request_start_ns"] for r in ok)
    isl = sum(r["input_sequence_length"] for r in ok)
    return len(ok) / (span / 1e9), isl / (span / 1e9)


out = []
for b in blocks:
    b.pop("closed", None)
    done = int(b["lines"][1].split("done=")[1].split()[0])
    # AIPerf's count (`done=`) and its accumulator are read at different instants: the figures
    # may already hold a record or two more. Take the count whose rate and input throughput
    # print as the block's.
    summary = b["lines"][1]
    n = next(
        k
        for k in (done, done + 1, done + 2, done - 1)
        if 0 < k <= len(records)
        and f"(avg {figures(k)[0]:.1f})" in summary
        and f"tput_in={round(figures(k)[1]):,}/s" in summary
    )
    out.append(
        {
            "elapsed_s": round(epoch(b["logged_at"]) - start, 3),
            "figures_records": n,
            "lines": b["lines"],
        }
    )

with open(os.path.join(HERE, "records.jsonl"), "w") as f:
    for r in records:
        f.write(json.dumps(r) + "\n")
with open(os.path.join(HERE, "blocks.json"), "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
final = json.load(open(os.path.join(art, "profile_export_aiperf.json")))
keep = [
    "request_count",
    "request_throughput",
    "input_token_throughput",
    "output_token_throughput",
    "time_to_first_token",
    "inter_token_latency",
    "request_latency",
    "output_token_throughput_per_user",
    "input_sequence_length",
    "output_sequence_length",
    "total_isl",
    "total_osl",
    "benchmark_duration",
]
with open(os.path.join(HERE, "final.json"), "w") as f:
    json.dump({k: final[k] for k in keep if k in final}, f, indent=1)
    f.write("\n")
