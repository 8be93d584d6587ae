//! Phases that only a config file declares: the ones no `profile` flag can express (a warmup
//! paced unlike the profiling phase, a user-centric warmup, more phases than one warmup and one
//! profiling phase). Each is typed here as AIPerf 0.13's schema has it (`benchmark.phases[]`,
//! docs/config-files.md); the configuration turns each into a phase of the run.

use serde::{Deserialize, Serialize};

use crate::cli::{ArrivalPatternArg, Given, ProfileArgs};

/// How a phase paces its requests (AIPerf's phase `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    /// Closed loop at `concurrency`.
    Concurrency,
    /// Open loop at `rate`, exponential gaps.
    Poisson,
    /// Open loop at `rate`, gamma gaps of shape `smoothness`.
    Gamma,
    /// Open loop at `rate`, equal gaps.
    Constant,
    /// `users` each sending a turn every `users / rate` seconds.
    UserCentric,
    /// A trace's first turns at their timestamps, from the phase's start (a warmup: AIPerf's
    /// plain scheduler, the timestamps unread).
    FixedSchedule,
}

impl Pacing {
    /// AIPerf's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Concurrency => "concurrency",
            Pacing::Poisson => "poisson",
            Pacing::Gamma => "gamma",
            Pacing::Constant => "constant",
            Pacing::UserCentric => "user_centric",
            Pacing::FixedSchedule => "fixed_schedule",
        }
    }

    /// The type named `name`, if ringperf runs it as a phase of its own.
    pub fn of(name: &str) -> Option<Self> {
        Some(match name {
            "concurrency" => Pacing::Concurrency,
            "poisson" => Pacing::Poisson,
            "gamma" => Pacing::Gamma,
            "constant" => Pacing::Constant,
            "user_centric" => Pacing::UserCentric,
            "fixed_schedule" => Pacing::FixedSchedule,
            _ => return None,
        })
    }

    /// Paced by a rate (open loop).
    pub fn rated(self) -> bool {
        matches!(self, Pacing::Poisson | Pacing::Gamma | Pacing::Constant)
    }
}

/// One phase as a config file declares it. Durations are in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSpec {
    pub name: String,
    /// `kind: warmup` (or the name `warmup`): its requests are never in the results.
    pub warmup: bool,
    /// `exclude_from_results` (always with `warmup`).
    pub exclude_from_results: bool,
    pub pacing: Pacing,
    pub requests: Option<u64>,
    pub duration: Option<f64>,
    pub sessions: Option<u64>,
    pub concurrency: Option<u64>,
    pub prefill_concurrency: Option<u64>,
    pub rate: Option<f64>,
    pub smoothness: Option<f64>,
    pub users: Option<u64>,
    pub concurrency_ramp: Option<f64>,
    pub prefill_ramp: Option<f64>,
    pub rate_ramp: Option<f64>,
    /// After issuing stops, how long in-flight requests are waited for (`None`: until they end).
    pub grace_period: Option<f64>,
    /// `adaptive_scale` and its fields, when the file gives any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<super::AdaptiveSpec>,
    /// `cancellation: {rate, delay}` of a profiling phase: the percentage of its requests
    /// cancelled and the seconds after sending (AIPerf's default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancellation: Option<(f64, Option<f64>)>,
    /// `rate_series` of a rated profiling phase: its points `(time_s, qps)`, read from the file
    /// it names or given inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_series: Option<Vec<(f64, f64)>>,
    /// `failed_request_threshold` of a profiling phase: the phase's own error budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_request_threshold: Option<f64>,
    /// AIPerf's `seamless`: the phase starts once the one before it issues nothing more.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub seamless: bool,
    /// A fixed schedule's `auto_offset`, `start_offset` and `end_offset` (ms), as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_offset: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_offset: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_offset: Option<u64>,
    /// Agentic replay's keys on this phase, as given ([`AgenticKeys`]).
    #[serde(default, skip_serializing_if = "AgenticKeys::is_empty")]
    pub agentic: AgenticKeys,
}

/// Agentic replay's keys on a phase other than the first profiling phase. AIPerf 0.13 reads
/// the lanes' settings (start ratios, burst starts, the idle caps, the cache warmup) from the
/// first profiling phase only, so here they are echoed and nothing more; `timing_mode:
/// agentic_replay` makes a later profiling phase replay the run's lanes again (a warmup's is
/// dropped with the warmup in an agentic run, refused in another: AIPerf never ends it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgenticKeys {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    /// An explicit `timing_mode` that changes nothing (the one the phase's type gives, or any
    /// on a warmup, which AIPerf 0.13 always paces by its rate loop): echoed as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_start_min_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory_start_max_ratio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_phase_starts: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_idle_gap_cap_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agentic_warmup_grace_period: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agentic_cache_warmup_duration: Option<f64>,
}

impl AgenticKeys {
    /// None given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl PhaseSpec {
    /// A phase named `name` of `pacing` with no setting given.
    pub fn new(name: &str, pacing: Pacing) -> Self {
        PhaseSpec {
            name: name.to_owned(),
            warmup: false,
            exclude_from_results: false,
            pacing,
            requests: None,
            duration: None,
            sessions: None,
            concurrency: None,
            prefill_concurrency: None,
            rate: None,
            smoothness: None,
            users: None,
            concurrency_ramp: None,
            prefill_ramp: None,
            rate_ramp: None,
            grace_period: None,
            adaptive: None,
            cancellation: None,
            rate_series: None,
            failed_request_threshold: None,
            seamless: false,
            auto_offset: None,
            start_offset: None,
            end_offset: None,
            agentic: AgenticKeys::default(),
        }
    }
}

impl PhaseSpec {
    /// Moves the `--warmup-*` flags the command line gave over a config file's warmup of its
    /// own onto it, each onto its key, as AIPerf's overlay sets the file's warmup: the flags'
    /// settings return to their defaults and leave `given` (the phase carries them now).
    pub fn take_warmup_flags(&mut self, settings: &mut ProfileArgs, given: &mut Given) {
        let mut took = |id: &str| given.remove(id).is_some();
        if took("warmup_request_count") {
            self.requests = settings.warmup_request_count.take();
        }
        if took("warmup_duration") {
            self.duration = settings.warmup_duration.take();
        }
        if took("num_warmup_sessions") {
            self.sessions = settings.num_warmup_sessions.take();
        }
        if took("warmup_concurrency") {
            self.concurrency = settings.warmup_concurrency.take();
        }
        if took("warmup_request_rate") {
            self.rate = settings.warmup_request_rate.take();
            if self.pacing == Pacing::Concurrency {
                self.pacing = Pacing::Poisson;
            }
        }
        if took("warmup_arrival_pattern") {
            match settings.warmup_arrival_pattern.take() {
                Some(ArrivalPatternArg::Constant) => self.pacing = Pacing::Constant,
                Some(ArrivalPatternArg::Gamma) => self.pacing = Pacing::Gamma,
                Some(ArrivalPatternArg::Poisson) => self.pacing = Pacing::Poisson,
                _ => {}
            }
        }
        if took("warmup_grace_period") {
            self.grace_period = settings.warmup_grace_period.take();
        }
        if took("warmup_prefill_concurrency") {
            self.prefill_concurrency = settings.timing.warmup_prefill_concurrency.take();
        }
        if took("warmup_concurrency_ramp_duration") {
            self.concurrency_ramp = settings.timing.warmup_concurrency_ramp_duration.take();
        }
        if took("warmup_request_rate_ramp_duration") {
            self.rate_ramp = settings.timing.warmup_request_rate_ramp_duration.take();
        }
        if took("warmup_prefill_concurrency_ramp_duration") {
            self.prefill_ramp = settings
                .load_shape
                .warmup_prefill_concurrency_ramp_duration
                .take();
        }
    }
}

/// What a config file sets that no flag can: the phases around the ones the flags express, the
/// files written into the artifact directory, a dataset's inline records.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileOnly {
    /// Phases run before the flags' warmup and profiling phases, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases_before: Vec<PhaseSpec>,
    /// The name the file gives the profiling phase the flags express, when not `profiling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_name: Option<String>,
    /// The `rate_series` points the file gives inline on the profiling phase the flags express
    /// (a series file is `--request-rate-series`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_rate_series: Option<Vec<(f64, f64)>>,
    /// The file's profiling phase names a type other than `fixed_schedule`: a timestamped trace
    /// does not turn it into a replay (AIPerf's command line does; its config file runs the type
    /// it names).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiling_paced: bool,
    /// The file's profiling phase (the flags') is `seamless`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiling_seamless: bool,
    /// Phases run after the flags' profiling phase, in order: profiling phases and warmups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases_after: Vec<PhaseSpec>,
    /// A synthetic dataset without `entries`: AIPerf's schema default (100 conversations),
    /// where the command line's rule (the request count, the sessions) would size it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_entries: Option<u64>,
    /// The file's name of its dataset (`default` for the `dataset:` shorthand), echoed as
    /// AIPerf echoes it (the flags' dataset is `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_name: Option<String>,
    /// The file's `plot:` section, checked, with its defaults (written as
    /// `.aiperf-plot-config.yaml` where the run's plots are drawn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plot: Option<serde_json::Value>,
    /// The curves the file names for its ramps (`strategy`): `(phase, ramp key, curve)`, echoed
    /// as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ramp_strategies: Vec<(String, String, String)>,
    /// A server-metrics flag beside the file's own `server_metrics` block: AIPerf then echoes the
    /// block whole, its `discovery` defaults too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_metrics_block_whole: bool,
    /// The keys the file's `server_metrics` block gives (of `enabled`, `urls`, `formats`):
    /// AIPerf echoes those alone unless a flag beside the block is given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_metrics_keys: Vec<String>,
    /// The keys the file's `gpu_telemetry` block gives (of `enabled`, `urls`, `collector`,
    /// `mode`; a URL alone is `enabled` and `urls`): AIPerf echoes those alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_telemetry_keys: Vec<String>,
    /// A `sweep: {type: scenarios}`: each run's variation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<FileScenario>,
    /// `artifacts.user_files`.
    #[serde(default, skip_serializing_if = "super::UserFiles::is_empty")]
    pub user_files: super::UserFiles,
    /// A file dataset's inline `records` (in place of `--input-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_records: Option<super::InlineRecords>,
    /// The profiling phase's `timing_mode: agentic_replay` (no flag sets it in AIPerf 0.13).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agentic: bool,
    /// The file's profiling phase has a `duration` and no `grace_period`: as in AIPerf, its
    /// requests still in flight when the duration is over are cut at once, and no grace is
    /// echoed (the command line's 30 s default is the flags' own), unless
    /// `--benchmark-grace-period` is given beside the file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_grace: bool,
    /// The plan is a config file's: its `input_config` echoes what the file and the flags
    /// beside it set, not the defaults AIPerf's command line writes (plots, telemetry and
    /// server-metrics blocks, the dataset's seed, a derived request count).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_file: bool,
    /// The lengths the file gives as a fixed value (`isl: 512`, `{value: 512}`), by the prefix
    /// of their flags (`--prompt-input-tokens`): echoed `{"value": …}` as AIPerf echoes them,
    /// where a mean is `{"mean": …}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<String>,
    /// The lengths the file gives as a distribution run by its mean (log-normal `median`,
    /// `peaks`, `points`): the flag prefix, the mean it set, and the distribution in AIPerf's
    /// model form, echoed as such while the mean is the file's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drawn: Vec<(String, u64, serde_json::Value)>,
    /// The `min` and `max` the file gives an input or output length, by its flag's prefix:
    /// echoed, never applied (AIPerf 0.13's synthetic prompts and `max_tokens` read the
    /// distribution's mean and spread alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bounds: Vec<(String, Option<f64>, Option<f64>)>,
    /// Keys the file gives that change nothing here and are echoed as given (AIPerf echoes
    /// them): each its dotted place in `input_config` (`models.items.0.lora`, `metrics`) and
    /// its value, put there after what ringperf writes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub echoed: Vec<(String, serde_json::Value)>,
    /// `endpoint.reset_kv_cache.max_retry_seconds`: the reset's retry budget (no flag sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_retry_seconds: Option<f64>,
    /// The first profiling phase's explicit `timing_mode` when it is the one its type gives
    /// (changes nothing; echoed as given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_timing_mode: Option<String>,
    /// The type a file's profiling phase names when its `timing_mode: fixed_schedule` replays
    /// it as a fixed schedule (echoed as written, as AIPerf echoes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_replayed_type: Option<String>,
    /// That phase's rate (a poisson or constant one), echoed and unused by the replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_replayed_rate: Option<f64>,
    /// The file's `sequence_distribution` list: the `--seq-dist` text it set and the entries in
    /// AIPerf's model form, echoed as such while the flag's value is the file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_dist: Option<(String, serde_json::Value)>,
    /// The file's `multi_run.convergence.min_runs`: the fewest trials before the criterion is
    /// judged (no flag sets it; ringperf's default is 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence_min_runs: Option<u32>,
    /// The file's sweep `recipe_name` (AIPerf's audit field: a recipe's name gives the sweep
    /// aggregate its Pareto axes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_recipe: Option<String>,
    /// The search-space paths a file's adaptive search draws log-uniformly (`prior:
    /// log-uniform`; no flag sets a prior).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search_log_priors: Vec<String>,
    /// The file's adaptive search's stop rules when any is given (no flag sets them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_stop: Option<SearchStop>,
    /// The file's sweep `post_process` hook, run once the sweep aggregate is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_post_process: Option<PostProcessSpec>,
    /// The file's `artifacts.summary`, `records` and `raw`, as it gives them (echoed so).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub exports: serde_json::Map<String, serde_json::Value>,
    /// The file's profiling phase's `adaptive_scale` and its fields (no flag sets them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiling_adaptive: Option<super::AdaptiveSpec>,
    /// Agentic replay's keys on the warmup the flags express (echoed; AIPerf reads them from
    /// the profiling phase only).
    #[serde(default, skip_serializing_if = "AgenticKeys::is_empty")]
    pub warmup_agentic: AgenticKeys,
}

impl FileOnly {
    /// Whether the run writes its summary JSON: not when the file says `artifacts.summary:
    /// false` (AIPerf then writes the CSV summary alone, at the top and in each phase).
    pub fn summary_json(&self) -> bool {
        self.exports.get("summary") != Some(&serde_json::Value::Bool(false))
    }

    /// Nothing beyond the flags.
    pub fn is_empty(&self) -> bool {
        self.phases_before.is_empty()
            && self.profiling_name.is_none()
            && self.profiling_rate_series.is_none()
            && !self.profiling_paced
            && !self.profiling_seamless
            && self.server_metrics_keys.is_empty()
            && self.phases_after.is_empty()
            && self.dataset_entries.is_none()
            && self.dataset_name.is_none()
            && self.user_files.is_empty()
            && self.inline_records.is_none()
            && !self.agentic
            && !self.no_grace
            && !self.from_file
            && self.fixed.is_empty()
            && self.bounds.is_empty()
            && self.exports.is_empty()
            && self.profiling_adaptive.is_none()
            && self.warmup_agentic.is_empty()
            && self.gpu_telemetry_keys.is_empty()
            && self.echoed.is_empty()
            && self.reset_retry_seconds.is_none()
            && self.seq_dist.is_none()
            && self.profiling_timing_mode.is_none()
            && self.profiling_replayed_type.is_none()
            && self.profiling_replayed_rate.is_none()
            && self.convergence_min_runs.is_none()
            && self.sweep_recipe.is_none()
            && self.search_stop.is_none()
            && self.search_log_priors.is_empty()
            && self.sweep_post_process.is_none()
    }
}

/// When an adaptive search settles: an N-dimensional one (`bayesian`, `optuna`) stops before its
/// `max_iterations` on AIPerf's three signals — `improvement_patience` points in a row without a
/// better objective, or the last `plateau_window` objectives with a coefficient of variation
/// under `plateau_threshold` —; `monotonic_sla` latches a point's verdict once
/// `monotonic_stability_trials` runs of it agree.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchStop {
    pub plateau_window: u32,
    pub plateau_threshold: f64,
    pub improvement_patience: u32,
    #[serde(default = "two")]
    pub monotonic_stability_trials: u32,
}

fn two() -> u32 {
    2
}

impl Default for SearchStop {
    /// AIPerf 0.13's defaults.
    fn default() -> Self {
        Self {
            plateau_window: 8,
            plateau_threshold: 0.01,
            improvement_patience: 10,
            monotonic_stability_trials: 2,
        }
    }
}

/// A sweep's `post_process: {handler, params, output_filename}`: which of AIPerf's handlers
/// derives a file from the sweep aggregate, its parameters as given, and the file's name under
/// `sweep_aggregate/`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PostProcessSpec {
    pub handler: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    pub output_filename: String,
}

/// One run of a config file's scenario sweep: its label and directory, the values AIPerf
/// reports for it, and what it changes of the file's settings (the file with the run merged in,
/// against the file alone) — applied over the command line's flags, as AIPerf's scenario values
/// are.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileScenario {
    pub label: String,
    pub dir: String,
    /// AIPerf's `values`: the run's flat `values:`, or `benchmark` and the subtree it merges in.
    pub values: Vec<(String, serde_json::Value)>,
    /// The flags whose values the run changes or adds, as a file's settings are given.
    pub set: Vec<crate::cli::parse::Setting>,
    /// The file's flags the run's file no longer sets.
    pub cleared: Vec<String>,
    /// What no flag sets, as the run's file has it.
    pub file_only: Box<FileOnly>,
    /// The run leaves the file's phases before profiling (its warmup) as they are: the run
    /// keeps them as the flags beside the file made them.
    pub keeps_warmup: bool,
}
