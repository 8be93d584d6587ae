//! Flags of `ringperf analyze-trace` and `ringperf validate` (AIPerf 0.13's commands of the same
//! names; docs/commands.md). Their logic is in `crate::trace_tools`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::trace_tools::agentic;
use crate::trace_tools::synthesize::{self, SynthesisParams};

/// Flags of `ringperf analyze-trace`.
#[derive(Debug, Args, Clone)]
pub struct AnalyzeTraceArgs {
    /// Path to input mooncake trace JSONL file.
    #[arg(value_name = "INPUT_FILE", required_unless_present = "input_file_flag")]
    pub input_file: Option<PathBuf>,
    /// The same, as a flag.
    #[arg(
        long = "input-file",
        value_name = "INPUT_FILE",
        conflicts_with = "input_file"
    )]
    pub input_file_flag: Option<PathBuf>,
    /// KV cache block size for analysis.
    #[arg(long = "block-size", default_value_t = 512)]
    pub block_size: u64,
    /// Optional output path for analysis report (JSON).
    #[arg(long = "output-file")]
    pub output_file: Option<PathBuf>,
}

impl AnalyzeTraceArgs {
    /// The trace, given as the argument or the flag.
    pub fn input(&self) -> PathBuf {
        self.input_file
            .clone()
            .or_else(|| self.input_file_flag.clone())
            .unwrap_or_default()
    }
}

/// What `ringperf validate` checks a file as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValidateTarget {
    /// A mooncake trace (JSONL, one request a row).
    MooncakeTrace,
}

/// Flags of `ringperf validate`.
#[derive(Debug, Args, Clone)]
pub struct ValidateArgs {
    /// Artifact format to validate.
    #[arg(
        value_enum,
        value_name = "TARGET",
        required_unless_present = "target_flag"
    )]
    pub target: Option<ValidateTarget>,
    /// The same, as a flag.
    #[arg(
        long = "target",
        value_enum,
        value_name = "TARGET",
        conflicts_with = "target"
    )]
    pub target_flag: Option<ValidateTarget>,
    /// Path to the artifact file.
    #[arg(long = "input", value_name = "PATH")]
    pub input: PathBuf,
}

/// What `ringperf synthesize` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SynthesizeTarget {
    /// A new mooncake trace from a recorded one, its prefix tree reshaped (`--synthesis-*`).
    MooncakeTrace,
    /// AIPerf's agentic-coding session generator (`--num-sessions`, `--config`, `--max-isl`,
    /// `--max-osl`): a run directory with `dataset.jsonl`, `manifest.json`, `quality.json`.
    AgenticCode,
}

/// The `--synthesis-*` options (AIPerf 0.13's names, defaults and ranges).
#[derive(Debug, Args, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SynthesisArgs {
    /// Multiplier for timestamp scaling in synthesized traces.
    #[arg(long = "synthesis-speedup-ratio", default_value_t = 1.0)]
    pub speedup_ratio: f64,
    /// Multiplier for core prefix branch lengths in the radix tree.
    #[arg(long = "synthesis-prefix-len-multiplier", default_value_t = 1.0)]
    pub prefix_len_multiplier: f64,
    /// Number of independent radix trees to distribute traces across.
    #[arg(long = "synthesis-prefix-root-multiplier", default_value_t = 1)]
    pub prefix_root_multiplier: u32,
    /// Multiplier for leaf path (unique prompt) lengths.
    #[arg(long = "synthesis-prompt-len-multiplier", default_value_t = 1.0)]
    pub prompt_len_multiplier: f64,
    /// Multiplier for output lengths in synthesized traces.
    #[arg(long = "synthesis-output-len-multiplier", default_value_t = 1.0)]
    pub output_len_multiplier: f64,
    /// Maximum input sequence length (`profile`: longer rows are dropped before synthesis;
    /// synthesized rows are capped).
    #[arg(long = "synthesis-max-isl")]
    pub max_isl: Option<u64>,
    /// Maximum output sequence length cap.
    #[arg(long = "synthesis-max-osl")]
    pub max_osl: Option<u64>,
}

impl Default for SynthesisArgs {
    /// AIPerf's identities: nothing reshaped, nothing filtered or capped.
    fn default() -> Self {
        Self {
            speedup_ratio: 1.0,
            prefix_len_multiplier: 1.0,
            prefix_root_multiplier: 1,
            prompt_len_multiplier: 1.0,
            output_len_multiplier: 1.0,
            max_isl: None,
            max_osl: None,
        }
    }
}

impl SynthesisArgs {
    /// The options as the synthesizer's parameters, for blocks of `block_size` tokens and `seed`.
    pub fn params(&self, block_size: u64, seed: u64) -> SynthesisParams {
        SynthesisParams {
            speedup_ratio: self.speedup_ratio,
            prefix_len_multiplier: self.prefix_len_multiplier,
            prefix_root_multiplier: self.prefix_root_multiplier,
            prompt_len_multiplier: self.prompt_len_multiplier,
            output_len_multiplier: self.output_len_multiplier,
            max_isl: self.max_isl,
            max_osl: self.max_osl,
            block_size,
            seed,
        }
    }
}

/// Flags of `ringperf synthesize`.
#[derive(Debug, Args, Clone)]
pub struct SynthesizeArgs {
    /// Dataset workload to synthesize.
    #[arg(value_enum, value_name = "TARGET")]
    pub target: SynthesizeTarget,
    /// mooncake-trace: the recorded mooncake trace (JSONL) to synthesize from.
    #[arg(long = "input-file")]
    pub input_file: Option<PathBuf>,
    /// Where the output goes. mooncake-trace: the synthesized trace (JSONL; default
    /// synthesized_trace.jsonl). agentic-code: the parent directory of the run directory
    /// (default: the current directory).
    #[arg(long = "output")]
    pub output: Option<PathBuf>,
    /// mooncake-trace: tokens per hash id block of the trace.
    #[arg(long = "block-size", default_value_t = 512)]
    pub block_size: u64,
    /// Random seed for reproducibility.
    #[arg(long = "seed", default_value_t = 42)]
    pub seed: u64,
    /// agentic-code: number of sessions to generate.
    #[arg(long = "num-sessions", default_value_t = 1000)]
    pub num_sessions: u64,
    /// agentic-code: a config JSON, a previous run's manifest.json, or a bundled config's name
    /// (default: built-in defaults).
    #[arg(long = "config")]
    pub config: Option<String>,
    /// agentic-code: maximum input sequence length (overrides the config's max_prompt_tokens).
    #[arg(long = "max-isl", id = "agentic_max_isl")]
    pub max_isl: Option<u64>,
    /// agentic-code: maximum output sequence length (overrides generation_length.max).
    #[arg(long = "max-osl", id = "agentic_max_osl")]
    pub max_osl: Option<u64>,
    #[command(flatten)]
    pub synthesis: SynthesisArgs,
}

impl SynthesizeArgs {
    /// `ringperf synthesize` with these flags.
    ///
    /// # Errors
    /// As [`synthesize::run_command`] and [`agentic::run`].
    pub fn run(&self) -> Result<(), crate::trace_tools::TraceToolError> {
        match self.target {
            SynthesizeTarget::MooncakeTrace => synthesize::run_command(
                self.input_file.as_deref(),
                self.output
                    .as_deref()
                    .unwrap_or(std::path::Path::new("synthesized_trace.jsonl")),
                &self.synthesis.params(self.block_size, self.seed),
            ),
            SynthesizeTarget::AgenticCode => {
                if self.input_file.is_some() {
                    return Err(crate::trace_tools::TraceToolError::Usage(
                        "synthesize agentic-code takes no --input-file: it generates sessions \
                         from a distribution config (--config)"
                            .into(),
                    ));
                }
                agentic::run(&agentic::Request {
                    num_sessions: self.num_sessions,
                    output: self.output.as_deref().unwrap_or(std::path::Path::new(".")),
                    config: self.config.as_deref(),
                    seed: self.seed,
                    max_isl: self.max_isl,
                    max_osl: self.max_osl,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;

    use super::ValidateTarget;
    use crate::cli::{Cli, Command};

    #[test]
    fn analyze_trace_takes_the_file_as_argument_or_flag() {
        for argv in [
            &["ringperf", "analyze-trace", "t.jsonl"][..],
            &["ringperf", "analyze-trace", "--input-file", "t.jsonl"][..],
        ] {
            let Ok(Cli {
                command: Command::AnalyzeTrace(a),
            }) = Cli::try_parse_from(argv)
            else {
                panic!("{argv:?} does not parse as analyze-trace")
            };
            assert_eq!((a.input(), a.block_size), (PathBuf::from("t.jsonl"), 512));
        }
        assert!(Cli::try_parse_from(["ringperf", "analyze-trace"]).is_err());
    }

    #[test]
    fn validate_takes_the_target_as_argument_or_flag() {
        for argv in [
            &["ringperf", "validate", "mooncake-trace", "--input", "f"][..],
            &[
                "ringperf",
                "validate",
                "--target",
                "mooncake-trace",
                "--input",
                "f",
            ][..],
        ] {
            let Ok(Cli {
                command: Command::Validate(v),
            }) = Cli::try_parse_from(argv)
            else {
                panic!("{argv:?} does not parse as validate")
            };
            assert_eq!(
                v.target.or(v.target_flag),
                Some(ValidateTarget::MooncakeTrace)
            );
        }
        assert!(Cli::try_parse_from(["ringperf", "validate", "sharegpt", "--input", "f"]).is_err());
    }
}
