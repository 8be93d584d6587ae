#!/usr/bin/env python3
"""Write small Baseten-style Parquet traces for AIPerf 0.13 baseten_trace ground truth."""
import os
import pyarrow as pa
import pyarrow.parquet as pq

OUT = os.path.dirname(os.path.abspath(__file__)) + "/traces"
os.makedirs(OUT, exist_ok=True)
T0 = 1_700_000_000_000

SCHEMA = pa.schema([
    ("timestamp_start_unix_ms", pa.int64()),
    ("prompt", pa.string()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("total_hashes", pa.list_(pa.int64())),
    ("provided_session_id", pa.string()),
    ("poor_man_session_id", pa.int64()),
    ("duration_e2e_ms", pa.int64()),
    ("block_size", pa.int64()),
    ("duration_ttft_ms", pa.int64()),
    ("request_canceled", pa.bool_()),
])

def table(rows, schema):
    cols = {f.name: [r.get(f.name) for r in rows] for f in schema}
    return pa.table(cols, schema=schema)

def write(name, rows, schema=SCHEMA):
    t = table(rows, schema)
    pq.write_table(t, f"{OUT}/{name}")
    print(name, t.num_rows, "rows", t.schema.names)

# (a) multi.parquet: 3 sessions, 2-3 turns, 60 s idle gap, rows deliberately not in time order.
multi = [
    # session sess-B (starts at +1000)
    dict(timestamp_start_unix_ms=T0 + 1000, prompt="Tell me about rivers.", input_tokens=6,
         output_tokens=12, total_hashes=[201, 202], provided_session_id="sess-B", poor_man_session_id=20,
         duration_e2e_ms=400, block_size=16, duration_ttft_ms=50, request_canceled=False),
    # session sess-A (starts at +0)
    dict(timestamp_start_unix_ms=T0 + 0, prompt="Hello there, can you explain how photosynthesis works in green plants?",
         input_tokens=15, output_tokens=20, total_hashes=[101, 102, 103], provided_session_id="sess-A",
         poor_man_session_id=10, duration_e2e_ms=800, block_size=16, duration_ttft_ms=90, request_canceled=False),
    dict(timestamp_start_unix_ms=T0 + 2000, prompt="Thanks. Now summarize that in one sentence please.",
         input_tokens=40, output_tokens=8, total_hashes=[101, 102, 103, 104], provided_session_id="sess-A",
         poor_man_session_id=10, duration_e2e_ms=None, block_size=None, duration_ttft_ms=None, request_canceled=False),
    dict(timestamp_start_unix_ms=T0 + 3000, prompt="Which ones are longest?", input_tokens=25,
         output_tokens=0, total_hashes=None, provided_session_id="sess-B", poor_man_session_id=20,
         duration_e2e_ms=100, block_size=None, duration_ttft_ms=None, request_canceled=True),
    dict(timestamp_start_unix_ms=T0 + 4500, prompt="Great, and what about the dark reactions of the Calvin cycle and its enzymes?",
         input_tokens=70, output_tokens=30, total_hashes=[], provided_session_id="sess-A",
         poor_man_session_id=10, duration_e2e_ms=900, block_size=32, duration_ttft_ms=70, request_canceled=False),
    # 60 s global idle gap (4500 -> 64500)
    dict(timestamp_start_unix_ms=T0 + 66000, prompt="And the third question.", input_tokens=90,
         output_tokens=4, total_hashes=[301, 302, 303, 304, 305, 306], provided_session_id="sess-C",
         poor_man_session_id=30, duration_e2e_ms=200, block_size=16, duration_ttft_ms=20, request_canceled=False),
    dict(timestamp_start_unix_ms=T0 + 64500, prompt="Write a haiku about autumn leaves falling slowly.",
         input_tokens=11, output_tokens=16, total_hashes=[301, 302], provided_session_id="sess-C",
         poor_man_session_id=30, duration_e2e_ms=1200, block_size=16, duration_ttft_ms=60, request_canceled=False),
    dict(timestamp_start_unix_ms=T0 + 65500, prompt="Another one, about winter snow.", input_tokens=60,
         output_tokens=16, total_hashes=[301, 302, 303, 304], provided_session_id="sess-C",
         poor_man_session_id=30, duration_e2e_ms=300, block_size=16, duration_ttft_ms=40, request_canceled=False),
]
write("multi.parquet", multi)

# (b) nosession.parquet: no session columns; includes a timestamp tie.
S_NOSESS = pa.schema([f for f in SCHEMA if f.name not in ("provided_session_id", "poor_man_session_id")])
nosess = [
    dict(timestamp_start_unix_ms=T0 + 1500, prompt="Count from one to five.", input_tokens=7, output_tokens=10,
         total_hashes=[1, 2], block_size=8, duration_e2e_ms=100),
    dict(timestamp_start_unix_ms=T0 + 0, prompt="What is the capital of France?", input_tokens=8, output_tokens=5,
         total_hashes=None, block_size=None, duration_e2e_ms=None),
    dict(timestamp_start_unix_ms=T0 + 500, prompt="Name three primary colors.", input_tokens=6, output_tokens=0,
         total_hashes=[7], block_size=8, duration_e2e_ms=50),
    dict(timestamp_start_unix_ms=T0 + 500, prompt="Say hello in Spanish.", input_tokens=5, output_tokens=3,
         total_hashes=[9, 10, 11], block_size=8, duration_e2e_ms=60),
]
write("nosession.parquet", nosess, S_NOSESS)

# (c) poor.parquet: only poor_man_session_id (int), one null id row.
S_POOR = pa.schema([
    ("timestamp_start_unix_ms", pa.int64()), ("prompt", pa.string()), ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()), ("poor_man_session_id", pa.int64()), ("duration_e2e_ms", pa.int64()),
])
poor = [
    dict(timestamp_start_unix_ms=T0 + 0, prompt="Describe a cat.", input_tokens=4, output_tokens=6,
         poor_man_session_id=7, duration_e2e_ms=300),
    dict(timestamp_start_unix_ms=T0 + 200, prompt="Describe a dog.", input_tokens=4, output_tokens=6,
         poor_man_session_id=3, duration_e2e_ms=300),
    dict(timestamp_start_unix_ms=T0 + 1200, prompt="Now compare the cat to a lion.", input_tokens=20,
         output_tokens=9, poor_man_session_id=7, duration_e2e_ms=400),
    dict(timestamp_start_unix_ms=T0 + 2000, prompt="Now compare the dog to a wolf.", input_tokens=20,
         output_tokens=9, poor_man_session_id=3, duration_e2e_ms=400),
    dict(timestamp_start_unix_ms=T0 + 800, prompt="Orphan row without a session.", input_tokens=5,
         output_tokens=2, poor_man_session_id=None, duration_e2e_ms=100),
]
write("poor.parquet", poor, S_POOR)

# (d) invalid files
S_MISS = pa.schema([f for f in SCHEMA if f.name != "output_tokens"])
write("bad_missing_col.parquet", [dict(timestamp_start_unix_ms=T0, prompt="hi there", input_tokens=2,
                                       provided_session_id="x")], S_MISS)
write("bad_negative.parquet", [
    dict(timestamp_start_unix_ms=T0, prompt="negative tokens row", input_tokens=-5, output_tokens=3,
         provided_session_id="x"),
    dict(timestamp_start_unix_ms=T0 + 100, prompt="fine row", input_tokens=5, output_tokens=3,
         provided_session_id="x"),
])
S_INTPROMPT = pa.schema([("prompt", pa.int64()) if f.name == "prompt" else f for f in SCHEMA])
write("bad_nonstring_prompt.parquet", [
    dict(timestamp_start_unix_ms=T0, prompt=12345, input_tokens=5, output_tokens=3, provided_session_id="x"),
], S_INTPROMPT)
write("bad_empty.parquet", [], SCHEMA)   # valid schema, zero rows
open(f"{OUT}/bad_zero_bytes.parquet", "wb").close()  # not a parquet file at all
