//! `server_metrics_export.jsonl`: one slim line per non-duplicate scrape.
