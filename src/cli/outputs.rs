//! Three flags of AIPerf 0.13 about what a run reads from its answers and leaves behind:
//! `--per-chunk-usage` (Endpoint group: the server's usage on every streamed chunk, and the
//! first chunk's token count in inter-token latency), `--export-outputs-json` (Output group:
//! `outputs.json`, the generated text of every request) and `--plot-required` (Output group: a
//! report that `--auto-plot` could not make fails the run). Resolved in `config::outputs`.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OutputsArgs {
    /// Ask for token usage on every streamed chunk (stream_options.continuous_usage_stats, a
    /// vLLM / TRT-LLM extension): inter-token latency then divides the decode time by the
    /// tokens after the first content chunk's real count instead of OSL - 1. Needs
    /// --use-server-token-count, --streaming and --endpoint-type chat.
    #[arg(long = "per-chunk-usage", help_heading = "Endpoint")]
    pub per_chunk_usage: bool,

    /// With --auto-plot, a report that cannot be made fails the run (exit code 1, every other
    /// artifact written) instead of a warning.
    #[arg(long = "plot-required", help_heading = "Output")]
    pub plot_required: bool,

    /// Write outputs.json in the artifact directory: each profiling request's generated text
    /// with its identifiers and main per-request metrics.
    #[arg(long = "export-outputs-json", help_heading = "Output")]
    pub export_outputs_json: bool,
}
