//! `--scenario NAME` and `--unsafe-override` (docs/timing.md, "Scenarios"): a named benchmark
//! whose settings are locked, as AIPerf 0.13 locks them. AIPerf ships one,
//! `inferencex-agentx-mvp`: agentic replay of the SemiAnalysis Weka corpora, streaming,
//! `ignore_eos`, a first-turn cache-bust marker, at least 900 s, trajectories over the whole of
//! each trace, a 10 s system-idle cap, recorded timing untouched.
//!
//! Each lock fills a setting left at its default (a note says so) or, when the user set it
//! otherwise, is a violation. Violations refuse the run with every one of them listed, unless
//! `--unsafe-override` turns them into warnings and the run is marked `submission_valid: false`
//! in `profile_export_aiperf.json`. A run without a Weka source is refused even then.

use crate::cli::ProfileArgs;
use crate::cli::random_prompt::CacheBustArg;
use crate::plan::Plan;
use ringperf_workload::workload::loader::DatasetKind;

use super::ConfigError;

/// AIPerf 0.13's scenarios.
pub const SCENARIOS: &[&str] = &[AGENTX];
const AGENTX: &str = "inferencex-agentx-mvp";
/// The one Hugging Face corpus whose identity the scenario can vouch for.
const AGENTX_HF_REPO: &str = "semianalysisai/cc-traces-weka-062126";
const MIN_DURATION_S: f64 = 900.0;
const DEFAULT_DURATION_S: f64 = 1800.0;
const SYSTEM_IDLE_CAP_S: f64 = 10.0;
/// The loaders it accepts: the Weka corpora with subagents (by their `--public-dataset` alias), a
/// Hugging Face Weka corpus, a local Weka trace.
const LOADERS: &[&str] = &[
    "semianalysis_cc_traces_weka_with_subagents",
    "semianalysis_cc_traces_weka_with_subagents_256k",
    "semianalysis_cc_traces_weka_with_subagents_060226",
    "semianalysis_cc_traces_weka_with_subagents_060226_256k",
    "semianalysis_cc_traces_weka_with_subagents_060526",
    "semianalysis_cc_traces_weka_with_subagents_060526_256k",
    "semianalysis_cc_traces_weka_with_subagents_060826",
    "semianalysis_cc_traces_weka_with_subagents_060826_256k",
    "semianalysis_cc_traces_weka_061326",
    "semianalysis_cc_traces_weka_061326_256k",
    "semianalysis_cc_traces_weka_061526",
    "semianalysis_cc_traces_weka_061526_256k",
    "semianalysis_cc_traces_weka_062126",
    "semianalysis_cc_traces_weka_062126_256k",
    "weka_trace",
    "weka_hf",
];

/// AIPerf's refusal of an unknown name.
pub fn unknown(name: &str) -> String {
    format!(
        "Unknown scenario '{name}'. Valid scenarios: {}",
        SCENARIOS.join(", ")
    )
}

/// A value as AIPerf's message shows it (Python's `repr`).
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    Text(String),
    Number(f64),
    Whole(u64),
    Bool(bool),
    None,
}

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shown::Text(s) => write!(f, "'{s}'"),
            Shown::Number(v) if v.fract() == 0.0 && v.abs() < 1e16 => write!(f, "{v:.1}"),
            Shown::Number(v) => write!(f, "{v}"),
            Shown::Whole(v) => write!(f, "{v}"),
            Shown::Bool(true) => f.write_str("True"),
            Shown::Bool(false) => f.write_str("False"),
            Shown::None => f.write_str("None"),
        }
    }
}

/// One setting the scenario does not allow.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub flag: &'static str,
    pub current: Shown,
    pub required: Shown,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: got {}, required {} ({})",
            self.flag, self.current, self.required, self.message
        )
    }
}

/// What the scenario did to a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub name: &'static str,
    /// The settings it filled, as notes for the run log.
    pub notes: Vec<String>,
    /// Violations let through by `--unsafe-override`.
    pub violations: Vec<Violation>,
}

impl Outcome {
    /// The run may be submitted: nothing was overridden.
    pub fn submission_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Where the run's dataset comes from, as the scenario sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Loader {
    /// No `--input-file` nor `--public-dataset`.
    Synthetic,
    /// A file of this type (named, or detected from the file).
    File(Option<DatasetKind>),
    /// A public dataset: its name, and the Hugging Face repository of `--hf-weka-dataset`.
    Public(String, Option<String>),
}

impl Loader {
    /// AIPerf's name of the loader, when the scenario knows it.
    fn name(&self) -> Option<String> {
        match self {
            Loader::Synthetic | Loader::File(None) => None,
            Loader::File(Some(k)) => Some(k.as_str().to_string()),
            Loader::Public(name, _) => Some(name.clone()),
        }
    }
}

/// The dataset source of `args`, as the scenario sees it (`detected`: the type the input file
/// was detected as, when none is named).
pub fn loader_of(args: &ProfileArgs, detected: Option<DatasetKind>) -> Loader {
    let i = &args.input;
    if let Some(repo) = &i.hf_weka_dataset {
        return Loader::Public("weka_hf".into(), Some(repo.clone()));
    }
    if let Some(p) = &i.public_dataset {
        return Loader::Public(p.clone(), None);
    }
    if i.input_file.is_some() {
        let named = i
            .custom_dataset_type
            .as_deref()
            .and_then(DatasetKind::parse);
        return Loader::File(named.or(detected));
    }
    Loader::Synthetic
}

/// Applies the scenario `plan` names, if any: the plan to run (its locked settings filled) and
/// what was done; the error listing the violations when they are not overridden. A run given no
/// seed gets `drawn_seed` (less its top bit, as AIPerf draws 63 bits).
///
/// # Errors
/// An unknown scenario, a run without a Weka source, or violations without `--unsafe-override`.
pub fn apply(
    plan: &Plan,
    loader: &Loader,
    drawn_seed: u64,
) -> Result<Option<(Plan, Outcome)>, ConfigError> {
    let Some(name) = plan.settings.agentic.scenario.as_deref() else {
        return Ok(None);
    };
    if name != AGENTX {
        return Err(ConfigError::flag(unknown(name)));
    }
    let mut plan = plan.clone();
    let given = |id: &str| plan.given.contains_key(id);
    let mut v: Vec<Violation> = Vec::new();
    let mut notes = Vec::new();
    let mut note = |s: String| notes.push(format!("Scenario '{AGENTX}': {s}"));
    let scen = format!("scenario '{AGENTX}'");
    let explicit = (
        given("trajectory_start_min_ratio"),
        given("trajectory_start_max_ratio"),
        given("system_idle_gap_cap_seconds"),
        given("cache_bust"),
    );
    let a: &mut ProfileArgs = &mut plan.settings;
    // 1. The timing mode: a rate, user-centric or fixed-schedule phase conflicts.
    let conflicting = if a.timing.fixed_schedule {
        Some("fixed_schedule")
    } else if a.timing.user_centric_rate.is_some() {
        Some("user_centric")
    } else if a.request_rate.is_some() || a.load_shape.request_rate_series.is_some() {
        Some(match a.arrival_pattern {
            Some(crate::cli::ArrivalPatternArg::Constant) => "constant",
            Some(crate::cli::ArrivalPatternArg::Gamma) => "gamma",
            _ => "poisson",
        })
    } else {
        None
    };
    match conflicting {
        Some(ty) => v.push(Violation {
            flag: "--request-rate / --user-centric-rate / --fixed-schedule",
            current: Shown::Text(ty.into()),
            required: Shown::Text("agentic_replay".into()),
            message: format!(
                "{scen} requires timing_mode=agentic_replay; do not pass --request-rate / \
                 --arrival-pattern / --user-centric-rate / --fixed-schedule (or declare a \
                 rate-shaped phase) alongside --scenario"
            ),
        }),
        None => {
            if !plan.file_only.agentic {
                note("setting profiling-phase timing_mode=agentic_replay.".into());
            }
            plan.file_only.agentic = true;
        }
    }
    // 2. Streaming (ringperf has no `--no-streaming` to conflict with).
    if !a.streaming {
        a.streaming = true;
        note("forcing --streaming=true (was unset).".into());
    }
    // 3. `ignore_eos` in every body.
    let eos = a
        .extra_inputs
        .iter()
        .find_map(|e| e.strip_prefix("ignore_eos:").map(str::trim));
    match eos {
        None => {
            a.extra_inputs.push("ignore_eos:true".into());
            note("injecting extra_inputs.ignore_eos=true (was absent).".into());
        }
        Some(x) if ["false", "0", "no"].contains(&x.to_ascii_lowercase().as_str()) => {
            let current = match x.to_ascii_lowercase().as_str() {
                "false" => Shown::Bool(false),
                "0" => Shown::Whole(0),
                _ => Shown::Text(x.to_string()),
            };
            v.push(Violation {
                flag: "extra_inputs.ignore_eos",
                current,
                required: Shown::Bool(true),
                message: format!("{scen} requires ignore_eos=true"),
            });
        }
        Some(_) => {}
    }
    // 4. Recorded timing kept.
    if a.input.ignore_trace_delays {
        v.push(Violation {
            flag: "--ignore-trace-delays",
            current: Shown::Bool(true),
            required: Shown::Bool(false),
            message: format!(
                "{scen} replays recorded trace timing; --ignore-trace-delays would null every \
                 per-turn timestamp/delay and dispatch all turns back-to-back, falsifying the \
                 workload"
            ),
        });
    }
    // 6. No client-side input truncation.
    if let Some(max) = a.input.synthesis.max_isl {
        v.push(Violation {
            flag: "--synthesis-max-isl",
            current: Shown::Whole(max),
            required: Shown::None,
            message: format!(
                "{scen} forbids client-side input truncation; --synthesis-max-isl drops traces \
                 whose input length exceeds the cap, falsifying the workload"
            ),
        });
    }
    // 7. A Weka source, and one whose identity is known.
    let mut allowed: Vec<&str> = LOADERS.to_vec();
    allowed.sort_unstable();
    let detected = loader.name();
    let mut hard = false;
    if !detected.as_deref().is_some_and(|d| allowed.contains(&d)) {
        let display = format!(
            "any of [{}]",
            allowed
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let (current, message) = if *loader == Loader::Synthetic {
            hard = true;
            (
                Shown::Text("synthetic".into()),
                format!(
                    "{scen} requires loader={display}; got synthetic (CLI default when \
                     --public-dataset / --input-file is omitted). --unsafe-override cannot \
                     bypass a missing weka loader"
                ),
            )
        } else {
            (
                detected.clone().map_or(Shown::None, Shown::Text),
                format!("{scen} requires loader={display}"),
            )
        };
        v.push(Violation {
            flag: "--input-file (loader)",
            current,
            required: Shown::Text(display),
            message,
        });
    }
    if detected.as_deref() == Some("weka_trace") {
        v.push(Violation {
            flag: "--custom-dataset-type / --input-file",
            current: Shown::Text("weka_trace (local, unpinned)".into()),
            required: Shown::Text(format!(
                "pinned --public-dataset alias or --hf-weka-dataset {AGENTX_HF_REPO}"
            )),
            message: format!(
                "{scen} cannot verify corpus identity for a local weka_trace directory; use a \
                 with-subagents --public-dataset alias or --hf-weka-dataset {AGENTX_HF_REPO} for \
                 submission_valid=true, or pass --unsafe-override for offline smoke tests \
                 (submission_valid=false)"
            ),
        });
    }
    if let Loader::Public(name, repo) = loader
        && name == "weka_hf"
        && repo.as_deref() != Some(AGENTX_HF_REPO)
    {
        v.push(Violation {
            flag: "--hf-weka-dataset",
            current: repo.clone().map_or(Shown::None, Shown::Text),
            required: Shown::Text(AGENTX_HF_REPO.into()),
            message: format!(
                "{scen} only allows --public-dataset weka_hf with \
                 hf_weka_dataset={AGENTX_HF_REPO}"
            ),
        });
    }
    // 8. A first-turn prefix marker, so that repeated traces never share a cache entry.
    match (a.random_prompt.cache_bust, explicit.3) {
        (Some(CacheBustArg::FirstTurnPrefix), _) => {}
        (Some(other), true) => {
            let shown = cache_bust_name(other);
            v.push(Violation {
                flag: "--cache-bust",
                current: Shown::Text(shown.into()),
                required: Shown::Text("first_turn_prefix".into()),
                message: format!(
                    "{scen} requires cache_bust.target=first_turn_prefix; got {shown}"
                ),
            });
        }
        _ => {
            a.random_prompt.cache_bust = Some(CacheBustArg::FirstTurnPrefix);
            note("auto-set --cache-bust=first_turn_prefix (was at default none).".into());
        }
    }
    // 9. Long enough for a steady state.
    let duration = match a.benchmark_duration {
        Some(d) => d,
        None => {
            a.benchmark_duration = Some(DEFAULT_DURATION_S);
            note(format!(
                "auto-set --benchmark-duration={DEFAULT_DURATION_S:.0} (was unset)."
            ));
            DEFAULT_DURATION_S
        }
    };
    if duration < MIN_DURATION_S {
        v.push(Violation {
            flag: "--benchmark-duration",
            current: Shown::Number(duration),
            required: Shown::Text(format!(">={MIN_DURATION_S:.0}")),
            message: format!(
                "{scen} requires duration >= {MIN_DURATION_S:.0}s to reach steady state and \
                 trigger KV offloading"
            ),
        });
    }
    // 10. Trajectories over the whole of each trace.
    let g = &mut a.agentic;
    for (set, slot, value, flag, was) in [
        (
            explicit.0,
            &mut g.trajectory_start_min_ratio,
            0.0,
            "min",
            0.25,
        ),
        (
            explicit.1,
            &mut g.trajectory_start_max_ratio,
            1.0,
            "max",
            0.75,
        ),
    ] {
        if !set && *slot != Some(value) {
            *slot = Some(value);
            note(format!(
                "auto-set --trajectory-start-{flag}-ratio={value:.1} (was at default {was})."
            ));
        }
    }
    // 11-12. Recorded gaps kept.
    if let Some(cap) = a.input.inter_turn_delay_cap_seconds {
        v.push(Violation {
            flag: "--inter-turn-delay-cap-seconds",
            current: Shown::Number(cap),
            required: Shown::None,
            message: format!(
                "{scen} preserves original inter-turn timing and forbids a per-turn delay cap"
            ),
        });
    }
    if let Some(cap) = a.input.trace_idle_gap_cap_seconds {
        v.push(Violation {
            flag: "--trace-idle-gap-cap-seconds",
            current: Shown::Number(cap),
            required: Shown::None,
            message: format!(
                "{scen} preserves original per-trace request timing and forbids timeline \
                 compression"
            ),
        });
    }
    // 13. The system-idle cap.
    match (explicit.2, a.agentic.system_idle_gap_cap_seconds) {
        (true, Some(c)) if c != SYSTEM_IDLE_CAP_S => v.push(Violation {
            flag: "--system-idle-gap-cap-seconds",
            current: Shown::Number(c),
            required: Shown::Number(SYSTEM_IDLE_CAP_S),
            message: format!(
                "{scen} limits only globally idle replay time to {SYSTEM_IDLE_CAP_S:.1} seconds"
            ),
        }),
        (true, _) => {}
        (false, _) => {
            a.agentic.system_idle_gap_cap_seconds = Some(SYSTEM_IDLE_CAP_S);
            note(format!(
                "auto-set --system-idle-gap-cap-seconds={SYSTEM_IDLE_CAP_S:.1} (was unset)."
            ));
        }
    }
    // Not a lock: under a scenario `--warmup-grace-period` is the agentic warmup's grace when
    // `--agentic-warmup-grace-period` is not given (AIPerf's converter routes it so).
    if a.agentic.agentic_warmup_grace_period.is_none() {
        a.agentic.agentic_warmup_grace_period = a.warmup_grace_period;
    }
    // 14. A seed, so that the run can be repeated.
    if a.random_seed.is_none() {
        let seed = drawn_seed >> 1;
        a.random_seed = Some(seed);
        note(format!("auto-set random_seed={seed} (was unset)."));
    }
    if hard {
        return Err(ConfigError::flag(lock_error(&v, false)));
    }
    if !v.is_empty() && !plan.settings.agentic.unsafe_override {
        return Err(ConfigError::flag(lock_error(&v, true)));
    }
    Ok(Some((
        plan,
        Outcome {
            name: AGENTX,
            notes,
            violations: v,
        },
    )))
}

fn cache_bust_name(c: CacheBustArg) -> &'static str {
    match c {
        CacheBustArg::None => "none",
        CacheBustArg::SystemPrefix => "system_prefix",
        CacheBustArg::SystemSuffix => "system_suffix",
        CacheBustArg::FirstTurnPrefix => "first_turn_prefix",
        CacheBustArg::FirstTurnSuffix => "first_turn_suffix",
        CacheBustArg::WarmupIsolationSystem => "warmup_isolation_system",
        CacheBustArg::WarmupIsolationFirstTurn => "warmup_isolation_first_turn",
    }
}

/// AIPerf's refusal listing every violation.
fn lock_error(v: &[Violation], bypassable: bool) -> String {
    let joined: Vec<String> = v.iter().map(ToString::to_string).collect();
    let hint = if bypassable {
        "Pass --unsafe-override to convert to warnings (run will be marked \
         submission_valid=false)."
    } else {
        "These violations cannot be bypassed with --unsafe-override. Provide --public-dataset \
         (e.g. semianalysis_cc_traces_weka_062126) or --hf-weka-dataset \
         semianalysisai/cc-traces-weka-062126."
    };
    format!(
        "Scenario invariants violated ({} conflict{}):\n  - {}\n{hint}",
        v.len(),
        if v.len() == 1 { "" } else { "s" },
        joined.join("\n  - ")
    )
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
