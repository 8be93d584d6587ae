//! `server_metrics_export.parquet`.
