#!/usr/bin/env python3
"""Checks a `hash_ids` trace replay against what the mock received, with Python tiktoken and none
of ringperf's code.

    python hash_ids_check.py TRACE_JSONL TRUTH_LOG_JSONL PROFILE_EXPORT_JSONL

TRACE_JSONL is the replayed mooncake_trace file (rows with `input_length` and `hash_ids`, no
session ids, so request `session_N` is row N); TRUTH_LOG_JSONL the mock's truth log written with
`ringperf mock-server --truth-log FILE --record-bodies`; PROFILE_EXPORT_JSONL the run's
per-request records. Prints the trace's ISL, the ISL ringperf reported, tiktoken's count of the
prompts received (`o200k_base`, special tokens as one token each, as a server counts them), the
summed per-request difference, and how many hash ids got a block text (the prompt cut at each
`<|endoftext|>`) equal to another id's. Exits 1 when a prompt is not its row's `input_length`
tokens or has another number of blocks than its row has hash ids.
"""

import collections
import json
import sys


def main(trace, truth, records):
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    rows = [json.loads(line) for line in open(trace, encoding="utf-8")]
    sent = {}
    for line in open(truth, encoding="utf-8"):
        entry = json.loads(line)
        body = entry.get("request_body")
        if body is None:
            continue
        if isinstance(body, str):
            body = json.loads(body)
        sent[entry["request_id"]] = body["messages"][0]["content"]
    reported = received = diff = 0
    text_of_id = {}
    bad = []
    recs = [json.loads(line) for line in open(records, encoding="utf-8")]
    for rec in recs:
        md = rec["metadata"]
        text = sent[md["x_request_id"]]
        n = len(enc.encode(text, allowed_special="all"))
        isl = rec["metrics"]["input_sequence_length"]["value"]
        reported += isl
        received += n
        diff += abs(isl - n)
        row = rows[int(md["conversation_id"].rsplit("_", 1)[1])]
        blocks = text.split("<|endoftext|>")[1:]
        if n != row["input_length"] or len(blocks) != len(row["hash_ids"]):
            bad.append((md["conversation_id"], n, row["input_length"], len(blocks)))
        for hid, block in zip(row["hash_ids"], blocks):
            text_of_id.setdefault(hid, block)
    ids_of_text = collections.defaultdict(set)
    for hid, block in text_of_id.items():
        ids_of_text[block].add(hid)
    sharing = sum(len(ids) for ids in ids_of_text.values() if len(ids) > 1)
    print(
        f"requests {len(recs)}; ISL: trace {sum(r['input_length'] for r in rows)}, reported "
        f"{reported}, tiktoken on what the mock received {received}, summed per-request "
        f"|reported - received| {diff}; hash ids {len(text_of_id)}, sharing a block text with "
        f"another id {sharing}"
    )
    if bad:
        print(f"prompts off their row (conversation, tokens, input_length, blocks): {bad[:5]}")
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
