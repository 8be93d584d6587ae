//! What wraps a run in a lab's workflow (docs/integrations.md): the server's lifecycle
//! ([`lifecycle`]: waiting for the model, resetting its KV cache, its profiler around the
//! profiling phase), the experiment trackers ([`mlflow`], [`wandb`]), the OTLP metrics export
//! ([`otel`], [`otlp`]) and what is streamed during the run (MLflow's live values and the
//! `timing` domain: [`live`], [`timing`]), over a small blocking client ([`http`]).

pub mod http;
pub mod lifecycle;
pub mod live;
pub mod mlflow;
pub mod otel;
pub mod otlp;
pub mod timing;
pub mod wandb;
