//! The server-lifecycle flags of the Endpoint group (docs/integrations.md): waiting for the
//! model before the first run, the KV-cache reset before each run, and the server's profiler
//! around the profiling phase. Resolved in `config::lab`.

use clap::Args;

pub use ringperf_metrics::lab::lifecycle::WaitMode;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// The MLflow flags of the Output group (docs/integrations.md#mlflow).
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MlflowArgs {
    /// An MLflow tracking server (http://host:port). Setting it logs each run there once its
    /// files are written: metrics, params, tags and the artifact files.
    #[arg(
        long = "mlflow-tracking-uri",
        value_name = "URI",
        help_heading = "Output"
    )]
    pub mlflow_tracking_uri: Option<String>,

    /// MLflow experiment name (default aiperf; made when missing).
    #[arg(
        long = "mlflow-experiment",
        value_name = "NAME",
        help_heading = "Output"
    )]
    pub mlflow_experiment: Option<String>,

    /// MLflow run name (default aiperf-<first 8 characters of the benchmark id>).
    #[arg(long = "mlflow-run-name", value_name = "NAME", help_heading = "Output")]
    pub mlflow_run_name: Option<String>,

    /// Extra run tags as key:value pairs (e.g. --mlflow-tag team:perf), comma-separated or
    /// repeated, or a JSON object.
    #[arg(long = "mlflow-tag", value_name = "KEY:VALUE", num_args = 1.., action = clap::ArgAction::Append, help_heading = "Output")]
    pub mlflow_tag: Vec<String>,

    /// Make the run a child of this MLflow run.
    #[arg(
        long = "mlflow-parent-run-id",
        value_name = "RUN_ID",
        help_heading = "Output"
    )]
    pub mlflow_parent_run_id: Option<String>,

    /// Which files of the artifact directory are uploaded (globs, repeated or comma-separated;
    /// default: the exports, timeslices and plots).
    #[arg(long = "mlflow-artifact-glob", value_name = "GLOB", num_args = 1.., value_delimiter = ',', action = clap::ArgAction::Append, help_heading = "Output")]
    pub mlflow_artifact_glob: Vec<String>,
}

/// The Weights & Biases flags of the Output group (docs/integrations.md#weights--biases).
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WandbArgs {
    /// Weights & Biases project name. Setting it makes a W&B run of each run with the `wandb`
    /// Python package (WANDB_MODE=offline writes it under <artifact-dir>/wandb/ for `wandb
    /// sync`).
    #[arg(long = "wandb-project", value_name = "NAME", help_heading = "Output")]
    pub wandb_project: Option<String>,

    /// Weights & Biases entity (team or user); default: the API key's own.
    #[arg(long = "wandb-entity", value_name = "NAME", help_heading = "Output")]
    pub wandb_entity: Option<String>,

    /// Weights & Biases run name (default aiperf-<first 8 characters of the benchmark id>).
    #[arg(long = "wandb-run-name", value_name = "NAME", help_heading = "Output")]
    pub wandb_run_name: Option<String>,

    /// Extra run tags, repeated or comma-separated.
    #[arg(long = "wandb-tag", value_name = "TAG", num_args = 1.., value_delimiter = ',', action = clap::ArgAction::Append, help_heading = "Output")]
    pub wandb_tag: Vec<String>,
}
