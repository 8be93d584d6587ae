//! Input group flags that choose the dataset source: custom files (`--input-file`, `--custom-dataset-type`), public datasets and sampling.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct InputArgs {
    /// Dataset file (or directory, for random_pool and raw_payload); its type is
    /// --custom-dataset-type, or detected from its first record.
    #[arg(long = "input-file", help_heading = "Input")]
    pub input_file: Option<PathBuf>,

    /// Format of --input-file: single_turn, multi_turn, random_pool, mooncake_trace,
    /// raw_payload, inputs_json (`-` spellings accepted). See docs/datasets.md.
    #[arg(long = "custom-dataset-type", help_heading = "Input")]
    pub custom_dataset_type: Option<String>,

    /// Public dataset: `sharegpt`, read from --input-file or AIPerf's cache
    /// (.cache/aiperf/datasets/ShareGPT_V3_unfiltered_cleaned_split.json); never downloaded.
    #[arg(long = "public-dataset", help_heading = "Input")]
    pub public_dataset: Option<String>,

    /// How the next conversation is picked; default per dataset type (sequential for
    /// files and traces, shuffle for synthetic and random_pool).
    #[arg(
        long = "dataset-sampling-strategy",
        value_enum,
        ignore_case = true,
        help_heading = "Input"
    )]
    pub dataset_sampling_strategy: Option<SamplingArg>,

    /// Let agentic replay reuse traces across concurrency lanes (AIPerf: weka/agentic loaders
    /// only; no effect on the dataset types ringperf reads).
    #[arg(
        long = "allow-dataset-wrap",
        overrides_with = "no_allow_dataset_wrap",
        help_heading = "Input"
    )]
    pub allow_dataset_wrap: bool,

    /// Turn --allow-dataset-wrap off (the default).
    #[arg(long = "no-allow-dataset-wrap", help_heading = "Input")]
    pub no_allow_dataset_wrap: bool,

    /// Drop every turn's timestamp and delay at load (turns go back-to-back).
    #[arg(long = "ignore-trace-delays", help_heading = "Input")]
    pub ignore_trace_delays: bool,

    /// The Hugging Face dataset repo of `--public-dataset weka_hf` (given alone, it selects
    /// `weka_hf`): a Weka agent-trace corpus read from the local Hugging Face cache.
    #[arg(long = "hf-weka-dataset", help_heading = "Input")]
    pub hf_weka_dataset: Option<String>,

    /// weka_trace: a later turn waits its recorded `think_time` (when recorded) instead of the
    /// idle gap between the previous request's end and its start.
    #[arg(long = "use-think-time-only", help_heading = "Input")]
    pub use_think_time_only: bool,

    /// weka_trace: leave out traces whose largest request (prompt plus asked output) is longer
    /// than this many tokens.
    #[arg(
        long = "max-context-length",
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "Input"
    )]
    pub max_context_length: Option<u64>,

    /// weka_trace, tracelab, baseten_trace (closed loop): no turn waits longer than this many
    /// seconds after the previous one.
    #[arg(
        long = "inter-turn-delay-cap-seconds",
        help_heading = "Conversation Input"
    )]
    pub inter_turn_delay_cap_seconds: Option<f64>,

    /// baseten_trace: keep each session (and each row without one) with this probability
    /// (0 < r <= 1), drawn from the run's seed.
    #[arg(long = "trace-session-sample-ratio", help_heading = "Input")]
    pub trace_session_sample_ratio: Option<f64>,

    /// baseten_trace: no gap between consecutive request starts longer than this many seconds
    /// (open loop: every row; closed loop: the sessions' starts).
    #[arg(long = "max-idle-gap-cap-seconds", help_heading = "Conversation Input")]
    pub max_idle_gap_cap_seconds: Option<f64>,

    /// baseten_trace: every turn at its recorded time (the default).
    #[arg(long = "open-loop-replay", help_heading = "Conversation Input")]
    pub open_loop_replay: bool,

    /// baseten_trace: a session's later turns follow the previous answer, after the recorded
    /// gap less the previous request's recorded duration (closed loop).
    #[arg(long = "no-open-loop-replay", help_heading = "Conversation Input")]
    pub no_open_loop_replay: bool,

    /// baseten_trace: every row its own single-turn session, at its recorded time.
    #[arg(long = "open-loop-strict", help_heading = "Conversation Input")]
    pub open_loop_strict: bool,

    /// baseten_trace: send no `hash_ids` / `block_size` body fields.
    #[arg(long = "omit-kv-hints", help_heading = "Conversation Input")]
    pub omit_kv_hints: bool,

    /// baseten_trace: ask for at least the recorded output (`min_tokens`; the default).
    #[arg(long = "force-min-tokens", help_heading = "Conversation Input")]
    pub force_min_tokens: bool,

    /// baseten_trace: no `min_tokens` in the body.
    #[arg(long = "no-force-min-tokens", help_heading = "Conversation Input")]
    pub no_force_min_tokens: bool,

    /// weka_trace: every gap between two request starts of a trace longer than this many
    /// seconds is cut to it (the trace's timeline is compressed).
    #[arg(long = "trace-idle-gap-cap-seconds", help_heading = "Load Generator")]
    pub trace_idle_gap_cap_seconds: Option<f64>,

    /// `--synthesis-*`: a mooncake trace reshaped at load (docs/commands.md, "synthesize"),
    /// under AIPerf's `Synthesis` heading in `--help`.
    #[command(flatten, next_help_heading = "Synthesis")]
    #[serde(flatten)]
    pub synthesis: super::trace_tools::SynthesisArgs,

    /// Tokens per `hash_ids` block of trace prompts (default 512).
    #[arg(
        long = "prompt-input-tokens-block-size",
        visible_aliases = ["synthetic-input-tokens-block-size", "isl-block-size"],
        help_heading = "Input Sequence Length (ISL)"
    )]
    pub block_size: Option<usize>,
}

/// `--dataset-sampling-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SamplingArg {
    Sequential,
    Random,
    Shuffle,
}
