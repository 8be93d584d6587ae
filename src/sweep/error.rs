//! Why a sweep command line is refused, or a sweep could not run.

use std::fmt;

use crate::run::RunError;

/// A refused sweep, with AIPerf 0.13's reason where AIPerf refuses it too.
#[derive(Debug)]
#[non_exhaustive]
pub enum SweepError {
    /// An element of a list is not a number of the flag's kind.
    BadListValue {
        /// The flag as written (`--isl`), or its canonical name.
        flag: String,
        /// The element.
        value: String,
        /// The flag takes whole numbers.
        whole: bool,
    },
    /// The same flag carries a list twice.
    ListedTwice {
        /// The flag's canonical name.
        flag: &'static str,
    },
    /// `--sweep-type zip` with lists of unequal length.
    ZipLengths {
        /// `(path, length)` of every list.
        lengths: Vec<(String, usize)>,
    },
    /// One `--variant` only.
    SingleVariant,
    /// A `--variant` that does not parse.
    BadVariant {
        /// The variant as given.
        spec: String,
        /// What is wrong.
        why: String,
    },
    /// `--variant` beside list values.
    VariantsWithLists {
        /// The list-valued flags.
        flags: Vec<&'static str>,
    },
    /// List values with `--fixed-schedule`.
    FixedSchedule,
    /// A sweep of a `--scenario` run (without `--unsafe-override`).
    Scenario(String),
    /// A sharded sweep's barrier: another shard failed, or never finished a run.
    ShardBarrier {
        /// The run (1-based, in the sweep's order) the shards were waiting after.
        run: usize,
        /// What happened.
        why: String,
    },
    /// A config file's `artifacts.summary: false`: no summary JSON for the runs' results.
    SummaryOff,
    /// A negative or non-finite `--parameter-sweep-cooldown-seconds`.
    BadCooldown {
        /// The value.
        value: f64,
    },
    /// A `--convergence-*` value refused.
    Convergence(crate::config::convergence::ConvergenceError),
    /// A variation's command line is refused by `profile`'s own checks.
    Variation {
        /// The variation's label.
        label: String,
        /// The refusal.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A variation's run could not be set up or its artifacts written.
    Run(RunError),
    /// The sweep's own files could not be written.
    Write {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// `--concurrency` as AIPerf's field name (`concurrency`, `request_rate`).
fn field_name(flag: &str) -> String {
    flag.trim_start_matches("--").replace('-', "_")
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::BadListValue { flag, value, whole } => write!(
                f,
                "{flag}: `{value}` in the list is not {}",
                if *whole {
                    "a non-negative whole number"
                } else {
                    "a finite number"
                }
            ),
            SweepError::ListedTwice { flag } => {
                write!(f, "{flag} is given a list twice: give one list")
            }
            SweepError::ZipLengths { lengths } => {
                let parts: Vec<String> =
                    lengths.iter().map(|(p, n)| format!("'{p}': {n}")).collect();
                write!(
                    f,
                    "zip sweep parameters must all have equal length; got {{{}}}.",
                    parts.join(", ")
                )
            }
            SweepError::SingleVariant => f.write_str(
                "--variant: single occurrence is rejected. Use the individual \
                 --isl/--osl/--concurrency flags for a one-off; --variant is for multi-variant \
                 sweeps. Pass --variant at least twice to declare a ScenarioSweep.",
            ),
            SweepError::BadVariant { spec, why } => write!(f, "--variant '{spec}': {why}"),
            SweepError::VariantsWithLists { flags } => {
                let names: Vec<String> = flags
                    .iter()
                    .map(|n| format!("'{}'", field_name(n)))
                    .collect();
                write!(
                    f,
                    "--variant is mutually exclusive with magic-list flags [{}] (e.g. \
                     --concurrency 1,2,4). Drop one: magic-lists declare a Cartesian sweep, \
                     --variant declares hand-picked scenarios.",
                    names.join(", ")
                )
            }
            SweepError::Scenario(s) => write!(f, "{}", scenario_sweep(s)),
            SweepError::FixedSchedule => f.write_str(
                "Parameter sweeps (e.g., --concurrency 1,2) cannot be used with --fixed-schedule \
                 mode (including the auto-promotion of trace datasets with per-record \
                 timestamps). Fixed schedule replays exact timing patterns from the trace, which \
                 is incompatible with varying parameter values. Use a single parameter value, or \
                 pass --no-fixed-schedule to keep your rate/concurrency mode and ignore the trace \
                 timestamps.",
            ),
            SweepError::ShardBarrier { run, why } => {
                write!(f, "sharded sweep, after run {run}: {why}")
            }
            SweepError::SummaryOff => f.write_str(&crate::config::outputs::summary_off(
                "a sweep or a search",
                true,
            )),
            SweepError::BadCooldown { value } => write!(
                f,
                "--parameter-sweep-cooldown-seconds must be a non-negative number of seconds, \
                 not {value}"
            ),
            SweepError::Convergence(e) => e.fmt(f),
            SweepError::Variation { label, source } => {
                write!(f, "variation {label}: {source}")
            }
            SweepError::Run(e) => write!(f, "{e}"),
            SweepError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for SweepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SweepError::Variation { source, .. } => Some(source.as_ref()),
            SweepError::Run(e) => Some(e),
            SweepError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<RunError> for SweepError {
    fn from(e: RunError) -> Self {
        SweepError::Run(e)
    }
}

/// AIPerf's refusal of a sweep of a scenario run (a warning under `--unsafe-override`).
pub fn scenario_sweep(scenario: &str) -> String {
    format!(
        "scenario '{scenario}' does not support parameter sweeps; a scenario locks one fixed \
         configuration, so a sweep would multiply it into diverging runs. Pass a single value for \
         each swept flag (e.g. one --concurrency value, not a list) or drop the sweep / \
         --scenario."
    )
}
