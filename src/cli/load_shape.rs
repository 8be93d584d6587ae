//! Load shape over time (docs/timing.md "Load shape"): a request rate that follows a
//! piecewise-linear series, and a prefill limit that grows over a ramp. Resolved in
//! `config::timing`.

use std::path::PathBuf;

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadShapeArgs {
    /// JSON file of request-rate points (`[{"time_s": 0, "qps": 5}, …]` or `{"points": […]}`):
    /// the rate is interpolated linearly between them and holds the last one after it
    /// (instead of --request-rate).
    #[arg(
        long = "request-rate-series",
        value_name = "FILE",
        help_heading = "Load Generator"
    )]
    pub request_rate_series: Option<PathBuf>,

    /// Seconds to ramp the prefill concurrency from 1 to --prefill-concurrency.
    #[arg(
        long = "prefill-concurrency-ramp-duration",
        help_heading = "Load Generator"
    )]
    pub prefill_concurrency_ramp_duration: Option<f64>,

    /// Warmup prefill concurrency ramp in seconds (defaults to
    /// --prefill-concurrency-ramp-duration).
    #[arg(
        long = "warmup-prefill-concurrency-ramp-duration",
        help_heading = "Warmup"
    )]
    pub warmup_prefill_concurrency_ramp_duration: Option<f64>,
}
