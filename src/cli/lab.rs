//! The server-lifecycle flags of the Endpoint group (docs/integrations.md): waiting for the
//! model before the first run, the KV-cache reset before each run, and the server's profiler
//! around the profiling phase. Resolved in `config::lab`.

use clap::Args;

pub use crate::lab::lifecycle::WaitMode;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default)]
pub struct LifecycleArgs {
    /// Seconds to wait for the endpoint to be ready before benchmarking (0: do not wait). The
    /// default mode sends a one-token request to check the model is loaded and answers.
    #[arg(
        long = "wait-for-model-timeout",
        value_name = "SECONDS",
        default_value_t = 0.0,
        help_heading = "Endpoint"
    )]
    pub wait_for_model_timeout: f64,

    /// How readiness is probed: 'models' (GET /v1/models lists the model), 'inference' (a
    /// one-token request is answered below 500) or 'both' (models, then inference).
    #[arg(
        long = "wait-for-model-mode",
        value_enum,
        ignore_case = true,
        default_value = "inference",
        help_heading = "Endpoint"
    )]
    pub wait_for_model_mode: WaitMode,

    /// Seconds between readiness probe attempts.
    #[arg(
        long = "wait-for-model-interval",
        value_name = "SECONDS",
        default_value_t = 5.0,
        help_heading = "Endpoint"
    )]
    pub wait_for_model_interval: f64,

    /// Reset the server's KV cache (POST to the endpoint's origin) before each run, trial and
    /// sweep variation.
    #[arg(long = "reset-kv-cache", help_heading = "Endpoint")]
    pub reset_kv_cache: bool,

    /// Timeout in seconds of each reset call (default 30). Given alone, it turns the reset on.
    #[arg(
        long = "reset-kv-cache-timeout-seconds",
        value_name = "SECONDS",
        help_heading = "Endpoint"
    )]
    pub reset_kv_cache_timeout_seconds: Option<f64>,

    /// Path of the reset call, from '/' (default /reset_prefix_cache). Given alone, it turns
    /// the reset on.
    #[arg(
        long = "reset-kv-cache-path",
        value_name = "PATH",
        help_heading = "Endpoint"
    )]
    pub reset_kv_cache_path: Option<String>,

    /// Start the server's profiler just before the profiling phase and stop it just after.
    #[arg(long = "server-profiler", help_heading = "Endpoint")]
    pub server_profiler: bool,

    /// Timeout in seconds of each profiler call (default 30). Given alone, it turns the
    /// profiler calls on.
    #[arg(
        long = "server-profiler-timeout-seconds",
        value_name = "SECONDS",
        help_heading = "Endpoint"
    )]
    pub server_profiler_timeout_seconds: Option<f64>,

    /// Path of the profiler start call, from '/' (default /start_profile). Given alone, it
    /// turns the profiler calls on.
    #[arg(
        long = "server-profiler-start-path",
        value_name = "PATH",
        help_heading = "Endpoint"
    )]
    pub server_profiler_start_path: Option<String>,

    /// Path of the profiler stop call, from '/' (default /stop_profile). Given alone, it turns
    /// the profiler calls on.
    #[arg(
        long = "server-profiler-stop-path",
        value_name = "PATH",
        help_heading = "Endpoint"
    )]
    pub server_profiler_stop_path: Option<String>,
}
