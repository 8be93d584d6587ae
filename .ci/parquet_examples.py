"""Runs the DuckDB and pandas example queries of AIPerf's server-metrics Parquet schema doc,
unchanged, on a server_metrics_export.parquet written by ringperf.

Run from a directory holding server_metrics_export.parquet, artifacts/*/server_metrics_export.parquet
and run_*/server_metrics_export.parquet (.ci/run prepares it). Fails when a query errors or when
the queries that must see rows (the mock serves these vLLM metrics) return none.
"""

import json

import duckdb
import matplotlib

matplotlib.use("Agg")

# ----- DuckDB (the doc's "Example Queries", verbatim) -----
QUERIES = [
    """-- Time-series for a specific metric
SELECT timestamp_ns, value
FROM 'server_metrics_export.parquet'
WHERE metric_name = 'vllm:kv_cache_usage_perc'
ORDER BY timestamp_ns;""",
    """-- Filter by label
SELECT timestamp_ns, value
FROM 'server_metrics_export.parquet'
WHERE metric_name = 'vllm:request_success'
 AND model_name = 'Qwen/Qwen3-0.6B'
ORDER BY timestamp_ns;""",
    """-- Histogram bucket distribution at final timestamp
SELECT bucket_le, bucket_count
FROM 'server_metrics_export.parquet'
WHERE metric_name = 'vllm:e2e_request_latency_seconds'
 AND timestamp_ns = (SELECT MAX(timestamp_ns) FROM 'server_metrics_export.parquet'
 WHERE metric_name = 'vllm:e2e_request_latency_seconds')
ORDER BY CAST(REPLACE(bucket_le, '+Inf', '999999') AS DOUBLE);""",
    """-- Aggregate across multiple runs (handles schema differences)
SELECT metric_name, AVG(value) as avg_value
FROM read_parquet('artifacts/*/server_metrics_export.parquet', union_by_name=true)
WHERE metric_type = 'gauge'
GROUP BY metric_name;""",
    """-- Compare endpoints
SELECT endpoint_url, metric_name, AVG(value) as avg_value
FROM 'server_metrics_export.parquet'
WHERE metric_type = 'gauge'
GROUP BY endpoint_url, metric_name;""",
    # Best practices: cross-file analysis.
    """-- DuckDB
SELECT * FROM read_parquet('run_*/server_metrics_export.parquet', union_by_name=true);""",
]

for q in QUERIES:
    rows = duckdb.sql(q).fetchall()
    title = q.splitlines()[0]
    print(f"duckdb {title}: {len(rows)} rows")
    assert rows, f"no rows for: {q}"

# Memory-efficient processing: DuckDB direct query.
result = duckdb.query("""
 SELECT AVG(value) FROM 'server_metrics_export.parquet'
 WHERE metric_name = 'vllm:kv_cache_usage_perc'
""").fetchone()
assert result is not None and result[0] is not None, result

# ----- pandas (verbatim) -----
import pandas as pd

df = pd.read_parquet('server_metrics_export.parquet')

# Filter to gauge metrics
gauges = df[df['metric_type'] == 'gauge']

# Time-series plot
kv_usage = df[df['metric_name'] == 'vllm:kv_cache_usage_perc']
kv_usage.plot(x='timestamp_ns', y='value', title='KV Cache Usage')

# Pivot histogram buckets
hist = df[df['metric_name'] == 'vllm:e2e_request_latency_seconds']
pivot = hist.pivot(index='timestamp_ns', columns='bucket_le', values='bucket_count')

assert len(gauges) and len(kv_usage) and len(pivot), (len(gauges), len(kv_usage), len(pivot))
print(f"pandas: {len(df)} rows, {len(gauges)} gauge rows, pivot {pivot.shape}")

# pandas, cross-file (verbatim)
import pandas as pd
from pathlib import Path

dfs = [pd.read_parquet(p) for p in Path('.').glob('run_*/server_metrics_export.parquet')]
combined = pd.concat(dfs, ignore_index=True)
assert len(combined) == 2 * len(df)

# ----- Reading metadata (pyarrow, verbatim) -----
import pyarrow.parquet as pq
import json

metadata = pq.read_metadata('server_metrics_export.parquet')
schema_metadata = metadata.schema.to_arrow_schema().metadata

# Access specific fields
benchmark_id = schema_metadata[b'aiperf.benchmark_id'].decode()
config = json.loads(schema_metadata[b'aiperf.input_config'])
label_columns = json.loads(schema_metadata[b'aiperf.label_columns'])

with open('server_metrics_export.json') as f:
    assert json.load(f)['benchmark_id'] == benchmark_id
print(f"metadata: benchmark_id {benchmark_id}, label columns {label_columns}")
print("parquet schema doc examples: OK")
