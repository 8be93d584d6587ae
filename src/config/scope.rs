//! No silent ignores: where each `ringperf profile` flag acts, and what a flag given where it
//! does not act gets (docs/flags.md, "Flags per mode").
//!
//! The flag table (`cli::flags`) gives every clap argument of `profile` its [`Scope`], the
//! modes in which it changes the run. [`check`] reads the row of every flag given on the command line against the
//! [`Mode`] the run resolved to: a combination AIPerf 0.13 refuses is refused (a flag error,
//! exit code 2) with a sentence that says what AIPerf's says; one AIPerf accepts but that would
//! change nothing gets one warning line. A flag whose combinations are checked where its value
//! is resolved has the scope [`Scope::Resolved`], naming that module. A test walks clap's
//! definition so that a new flag cannot be added without a row.

use super::ConfigError;
use crate::cli::flags;
pub use crate::cli::flags::Scope;
use ringperf_wire::endpoint::EndpointKind;
use ringperf_workload::workload::loader::DatasetKind;

/// Where the prompts come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Synthetic,
    /// `--input-file`, with its `--custom-dataset-type` if given.
    File(Option<DatasetKind>),
    /// `--public-dataset`.
    Public,
}

/// What the run resolved to, as far as the flags' scopes need it.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    pub endpoint: EndpointKind,
    pub source: Source,
    /// Streaming after the endpoint's say.
    pub streaming: bool,
    pub runs: u32,
    pub server_metrics: bool,
    pub records: bool,
    pub mock: bool,
    pub kernel_stamps: bool,
    pub warmup: bool,
    /// The profiling phase replays a trace's timestamps.
    pub fixed_schedule: bool,
    /// `--arrival-pattern concurrency-burst` beside an open-loop `--request-rate`.
    pub burst_with_rate: bool,
    /// Most requests the profiling phase keeps in flight, when bounded.
    pub max_in_flight: Option<u64>,
    /// The profiling phase is agentic replay.
    pub agentic: bool,
    /// The plan is a config file's: its `multi_run` block keeps its settings when the run
    /// count comes down to one (AIPerf refuses only the command line's).
    pub file: bool,
}

/// The checks' outcome: the warnings to print, one line each.
pub type Warnings = Vec<String>;

/// Reads the row of every flag `given` (clap ids) against `mode`.
///
/// # Errors
/// The first refused combination, naming the flags (the synthetic-only ones all together).
pub fn check(given: impl Fn(&str) -> bool, mode: &Mode) -> Result<Warnings, ConfigError> {
    let mut warnings = Vec::new();
    let mut synthetic_only = Vec::new();
    for (id, scope) in flags::scopes() {
        if !given(id) {
            continue;
        }
        if scope == Scope::Synthetic && mode.source != Source::Synthetic {
            synthetic_only.push(flag_names(id));
            continue;
        }
        match verdict(id, scope, mode) {
            Verdict::Acts => {}
            Verdict::Refused(m) => return Err(ConfigError::flag(m)),
            Verdict::Warned(m) => warnings.push(m),
        }
    }
    if !synthetic_only.is_empty() {
        let (what, verb) = match synthetic_only.len() {
            1 => ("", "shapes"),
            _ => ("each of ", "shape"),
        };
        return Err(ConfigError::flag(format!(
            "{what}{} {verb} synthetic prompts only, and with --input-file or --public-dataset \
             the dataset's records are the prompts (AIPerf refuses this too): remove the \
             flag{}, or drop --input-file / --public-dataset to generate synthetic prompts",
            synthetic_only.join(", "),
            if synthetic_only.len() == 1 { "" } else { "s" }
        )));
    }
    Ok(warnings)
}

enum Verdict {
    Acts,
    Refused(String),
    Warned(String),
}

fn verdict(id: &str, scope: Scope, m: &Mode) -> Verdict {
    let name = || flag_names(id);
    let warn = |why: String| Verdict::Warned(format!("{} has no effect: {why}", name()));
    match scope {
        Scope::Any | Scope::Resolved(_) | Scope::Synthetic => Verdict::Acts,
        Scope::SyntheticOrPool => batch_size(m, &name()),
        Scope::HashTrace => match m.source {
            Source::Synthetic => {
                warn("ringperf's synthetic prompts have no hash ids (only trace files do)".into())
            }
            Source::File(None | Some(DatasetKind::MooncakeTrace)) => Verdict::Acts,
            Source::File(Some(k)) => Verdict::Refused(format!(
                "{} only applies to hash-id traces (mooncake_trace), not to \
                 --custom-dataset-type {} (AIPerf refuses this too); drop the flag",
                name(),
                k.as_str()
            )),
            Source::Public => Verdict::Refused(format!(
                "{} only applies to synthetic prompts or hash-id traces (mooncake_trace), not \
                 to --public-dataset (AIPerf refuses this too); drop the flag",
                name()
            )),
        },
        Scope::Entries => match m.source {
            Source::Synthetic | Source::File(None | Some(DatasetKind::RandomPool)) => Verdict::Acts,
            Source::File(Some(k)) => warn(format!(
                "the records of a {} file are the dataset (only random_pool draws entries)",
                k.as_str()
            )),
            Source::Public => warn(
                "the public dataset's records are the dataset (only random_pool draws entries)"
                    .into(),
            ),
        },
        Scope::TraceDelays => match m.source {
            Source::Synthetic | Source::Public => {
                warn("only an --input-file has timestamps or delays to drop".into())
            }
            Source::File(_) if m.fixed_schedule => warn(
                "under a fixed schedule the trace's timestamps drive the run (as in AIPerf)".into(),
            ),
            Source::File(_) => Verdict::Acts,
        },
        Scope::ArrivalPattern if m.burst_with_rate => warn(
            "concurrency-burst is the closed loop's pattern; with --request-rate the arrivals \
             are Poisson (as in AIPerf)"
                .into(),
        ),
        Scope::StreamingEndpoint if !m.endpoint.descriptor().supports_streaming => warn(format!(
            "--endpoint-type {} cannot stream, so requests are sent without streaming (as \
             AIPerf does)",
            m.endpoint.as_str()
        )),
        Scope::GeneratesTokens if !m.endpoint.descriptor().produces_tokens => warn(format!(
            "--endpoint-type {} generates no tokens and is sent no output limit",
            m.endpoint.as_str()
        )),
        Scope::ChatOnly if m.endpoint != EndpointKind::Chat => warn(format!(
            "only --endpoint-type chat has two names for its output limit, not {}",
            m.endpoint.as_str()
        )),
        Scope::VideoJobs if m.endpoint != EndpointKind::VideoGeneration => warn(format!(
            "only --endpoint-type video-generation produces video content to download, not {}",
            m.endpoint.as_str()
        )),
        Scope::Rankings if !m.endpoint.is_rankings() => warn(format!(
            "it shapes rankings requests, and --endpoint-type {} is not a rankings type",
            m.endpoint.as_str()
        )),
        Scope::MultiRun if m.runs <= 1 && !m.file => Verdict::Refused(format!(
            "{} only applies to repeated runs (--num-profile-runs over 1), as in AIPerf: drop it \
             or add --num-profile-runs 2 or more",
            name()
        )),
        Scope::MultiRunInterval if m.runs <= 1 => {
            warn("a single run has no confidence interval (--num-profile-runs is 1)".into())
        }
        Scope::ServerMetricsUrls if !m.server_metrics => Verdict::Refused(
            "--server-metrics and --no-server-metrics cannot be used together (AIPerf refuses \
             the pair too): give one or the other"
                .into(),
        ),
        Scope::ServerMetricsFiles if !m.server_metrics => {
            warn("--no-server-metrics collects nothing to write".into())
        }
        Scope::RecordsFile if !m.records => {
            warn("--export-level summary writes no per-request records to hold the trace".into())
        }
        Scope::Streamed if !m.streaming => prefill_needs_streaming(&name()),
        Scope::StreamedWarmup if !m.warmup => warn(
            "there is no warmup phase (--warmup-request-count, --warmup-duration or \
             --num-warmup-sessions starts one)"
                .into(),
        ),
        Scope::StreamedWarmup if !m.streaming => prefill_needs_streaming(&name()),
        Scope::ConcurrencyRamp if m.max_in_flight.is_none_or(|c| c <= 1) => warn(
            "the profiling phase has no concurrency above 1 to ramp to (--concurrency sets one)"
                .into(),
        ),
        Scope::Mock if !m.mock => {
            warn("it shapes the embedded mock's replies, and --mock is not given".into())
        }
        Scope::NotMock if m.mock => {
            warn("with --mock every request goes to the embedded mock server".into())
        }
        Scope::KernelStamps if !m.kernel_stamps => warn(
            "wake-ups are batched only with kernel receive stamps (--timestamps kernel)".into(),
        ),
        Scope::Inert(why) => warn(format!("{why}, which ringperf does not have")),
        Scope::Agentic if !m.agentic => warn(
            "it only concerns agentic replay (a config file's `timing_mode: agentic_replay`), \
             which this run is not"
                .into(),
        ),
        _ => Verdict::Acts,
    }
}

fn batch_size(m: &Mode, name: &str) -> Verdict {
    match m.source {
        Source::Synthetic => Verdict::Acts,
        Source::File(Some(DatasetKind::RandomPool)) => Verdict::Acts,
        Source::File(kind) => Verdict::Refused(format!(
            "{name} with --input-file needs --custom-dataset-type random_pool (given: {}), as \
             in AIPerf: set that type, or drop --input-file to generate synthetic prompts",
            kind.map_or("none", DatasetKind::as_str)
        )),
        Source::Public => Verdict::Refused(format!(
            "{name} applies to synthetic prompts or a random_pool --input-file, not to \
             --public-dataset (AIPerf refuses this too)"
        )),
    }
}

fn prefill_needs_streaming(name: &str) -> Verdict {
    Verdict::Refused(format!(
        "{name} needs --streaming (on an endpoint that streams): a prefill slot is given back \
         at the first token, which only a stream reports (AIPerf refuses this too)"
    ))
}

pub use crate::cli::parse::flag_names;

#[cfg(test)]
mod tests;
