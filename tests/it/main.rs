//! The integration tests, one binary: each module drives the built `ringperf` binary or the
//! library's engine against the in-process mock on loopback. One binary instead of one per file
//! links the engine once (docs/testing.md); `cargo nextest run` still runs every test in its own
//! process.

mod common;

mod aiperf_keys;
mod architecture;
mod artifacts;
mod cli;
mod compact;
mod dashboard;
mod datasets;
mod deploy;
mod e2e;
mod endpoints;
mod endpoints_mm;
mod exit_codes;
mod exports;
mod faults;
mod first_run;
mod form_endpoints;
mod gpu_telemetry;
mod health;
mod http_trace;
mod image_source;
mod input_config;
mod lifecycle;
mod limits;
mod load_shape;
mod media_endpoints;
mod merge;
mod mlflow;
mod multimodal;
mod multirun;
mod otel;
mod outputs;
mod plot;
mod plot_sweep;
mod pool;
mod random_prompt;
mod receive;
mod requests;
mod search;
mod server_metrics;
mod server_metrics_phases;
mod sessions;
mod shards;
mod startup;
mod sweep;
mod swim_lane;
mod tls;
mod tokenizer;
mod trace_tools;
mod video_generation;
mod wandb;
mod yaml_config;
