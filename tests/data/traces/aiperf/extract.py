"""Reduces one AIPerf run against ringperf's mock to the fixture the tests read.

Usage: python3 extract.py RUN_DIR OUT.json
RUN_DIR holds AIPerf's artifacts (art/profile_export.jsonl, art/profile_export_aiperf.json),
the mock's truth log with the request bodies (truth.jsonl) and the command (command.txt).
Needs tiktoken (o200k_base, AIPerf's `builtin`) to count the prompt of each request.
"""
import json
import sys

import tiktoken

run, out = sys.argv[1], sys.argv[2]
enc = tiktoken.get_encoding("o200k_base")
truth = {}
for line in open(f"{run}/truth.jsonl"):
    t = json.loads(line)
    truth[t["request_id"]] = t
records = [json.loads(line) for line in open(f"{run}/art/profile_export.jsonl")]
first = min(r["metadata"]["credit_issued_ns"] for r in records)
requests = []
for r in records:
    md = r["metadata"]
    body = json.loads(truth[md["x_request_id"]]["request_body"])
    last = body["messages"][-1]
    req = {
        "conversation_id": md["conversation_id"],
        "turn_index": md["turn_index"],
        "credit_offset_ms": round((md["credit_issued_ns"] - first) / 1e6, 3),
        "max_completion_tokens": body.get("max_completion_tokens"),
        "messages": len(body["messages"]),
        # The turn's own prompt (its last message), counted as a server counts it.
        "prompt_tokens": len(enc.encode(last["content"], allowed_special="all")),
        "input_sequence_length": r["metrics"]["input_sequence_length"]["value"],
        "output_sequence_length": r["metrics"]["output_sequence_length"]["value"],
    }
    if "tools" in body:
        req["tools"] = body["tools"]
    if sys.argv[3:] == ["--bodies"]:
        req["sent_messages"] = body["messages"]
    requests.append(req)
requests.sort(key=lambda q: (q["credit_offset_ms"], q["conversation_id"], q["turn_index"]))
summary = json.load(open(f"{run}/art/profile_export_aiperf.json"))
fixture = {
    "command": open(f"{run}/command.txt").read().strip(),
    "profiling_phase": summary["input_config"]["phases"][0],
    "requests": requests,
}
with open(out, "w") as f:
    json.dump(fixture, f, indent=1)
    f.write("\n")
