//! ringperf-metrics: from records to numbers and files. AIPerf's metric registry, per-record
//! metric values and exact statistics ([`aggregate`]); every artifact a run writes, from the
//! console table to Parquet ([`export`]); the Prometheus server-metrics collection's statistics
//! and files ([`server_metrics`]) and GPU telemetry ([`gpu_telemetry`]); and what wraps a run in
//! a lab's workflow: server lifecycle hooks, MLflow and W&B trackers, OTLP ([`lab`]). It builds
//! on `ringperf-wire` (records, the Prometheus parser) and `ringperf-io` (stop reasons, wake-up
//! counts); no worker, no CLI.

pub mod adaptive;
pub mod aggregate;
pub mod export;
pub mod gpu_telemetry;
pub mod lab;
pub mod server_metrics;
