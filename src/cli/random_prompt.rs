//! Random-window prompt lengths and cache-bust markers: `--random-range-ratio`,
//! `--random-corpus-style`, `--cache-bust` (docs/synthetic.md). Checked in
//! [`crate::config::random_prompt`].

use clap::{Args, ValueEnum};

/// `--random-corpus-style`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CorpusStyleArg {
    Vllm,
    Sglang,
}

/// `--cache-bust`: where the marker goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum CacheBustArg {
    None,
    SystemPrefix,
    SystemSuffix,
    FirstTurnPrefix,
    FirstTurnSuffix,
    WarmupIsolationSystem,
    WarmupIsolationFirstTurn,
}

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RandomPromptArgs {
    /// Draw ISL and OSL uniformly from a window around --isl and --osl (both required): a
    /// float, or `{"input": r, "output": r}` (vllm style only).
    #[arg(
        long = "random-range-ratio",
        help_heading = "Input Sequence Length (ISL)"
    )]
    pub random_range_ratio: Option<String>,

    /// Window of --random-range-ratio: vllm `[floor(m(1-r)), ceil(m(1+r))]`, sglang
    /// `[max(1, int(m·r)), m]` [default: vllm].
    #[arg(
        long = "random-corpus-style",
        value_enum,
        ignore_case = true,
        help_heading = "Input Sequence Length (ISL)"
    )]
    pub random_corpus_style: Option<CorpusStyleArg>,

    /// Inject a per-session `[rid:<digest>]` marker (system_/first_turn_ prefix or suffix), or
    /// `[warmup]` during warmup only (warmup_isolation_*), at send time [default: none].
    #[arg(
        long = "cache-bust",
        value_enum,
        ignore_case = true,
        help_heading = "Cache Bust"
    )]
    pub cache_bust: Option<CacheBustArg>,
}
