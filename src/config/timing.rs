//! Validation of the timing flags (`cli::timing`): fixed schedule, user-centric rate, ramps and
//! request cancellation, with AIPerf 0.13's cross-flag rules (`config/flags/_converter_profiling.py`,
//! `_converter_warmup.py`, `config/phases.py`). Every error is one message, exit code 2.

use std::sync::Arc;
use std::time::Duration;

use super::{ConfigError, Load, PhaseConfig, err};
use crate::cli::ProfileArgs;
use ringperf_workload::schedule::{CancelPlan, FixedSchedule, RateSeries, Window};

/// How a phase is paced beyond its [`Load`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// The phase's [`Load`] (closed loop, or open loop at a rate).
    Load,
    /// Trace replay: first turns at their timestamps (`--fixed-schedule`). The phase's `load`
    /// carries only the `--concurrency` cap (`Load::Rate { cap, .. }`; its rate is unused).
    FixedSchedule(FixedSchedule),
    /// `--user-centric-rate rate --num-users users`. The phase's `load` is
    /// `Load::Rate { rate, cap, .. }` with the same total rate.
    UserCentric { rate: f64, users: u64 },
    /// Agentic replay (a config file's `timing_mode: agentic_replay`): one lane per slot of the
    /// phase's `Load::Concurrency`, each a trace resumed mid-way (docs/timing.md).
    Agentic(Agentic),
}

/// Agentic replay's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agentic {
    /// `--trajectory-start-min-ratio` / `--trajectory-start-max-ratio`.
    pub range: ringperf_workload::schedule::agentic::StartRange,
    /// `--burst-phase-starts`.
    pub burst: bool,
    /// `--trace-idle-gap-cap-seconds`, in ms: no lane's first request is later than this after
    /// the profiling phase starts, and no warmup request leads its lane's `t*` by more.
    pub idle_cap_ms: Option<f64>,
    /// `--system-idle-gap-cap-seconds`: the profiling phase is never idle longer.
    pub system_idle_cap: Option<Duration>,
    /// `--agentic-warmup-grace-period`: how long the warmup waits for its answers after its last
    /// request (`None`: as long as they take). With a cache warmup: after its end, by default
    /// the larger of the benchmark's grace period and `min(duration, 300 s)`.
    pub warmup_grace: Option<Duration>,
    /// `--agentic-cache-warmup-duration`: the accelerated stage after the priming requests.
    pub cache_warmup: Option<Duration>,
}

/// The accelerated cache warmup's default drain: at most this long.
const CACHE_WARMUP_GRACE_MAX: Duration = Duration::from_secs(300);

/// The profiling phase of `timing_mode: agentic_replay`: its closed loop becomes lanes; the
/// trajectory flags are checked as AIPerf checks them.
pub fn agentic(args: &ProfileArgs, phase: &mut PhaseConfig) -> Result<(), ConfigError> {
    let a = &args.agentic;
    for (v, flag) in [
        (a.trajectory_start_min_ratio, "--trajectory-start-min-ratio"),
        (a.trajectory_start_max_ratio, "--trajectory-start-max-ratio"),
    ] {
        if let Some(v) = v
            && !(0.0..=1.0).contains(&v)
        {
            return err(format!("{flag} must be between 0 and 1 (got {v})"));
        }
    }
    let mut range = ringperf_workload::schedule::agentic::StartRange::default();
    range.min = a.trajectory_start_min_ratio.unwrap_or(range.min);
    range.max = a.trajectory_start_max_ratio.unwrap_or(range.max);
    if range.min > range.max {
        return err(format!(
            "--trajectory-start-min-ratio ({}) must be <= --trajectory-start-max-ratio ({}).",
            range.min, range.max
        ));
    }
    use crate::cli::random_prompt::CacheBustArg;
    if matches!(
        args.random_prompt.cache_bust,
        Some(CacheBustArg::WarmupIsolationSystem | CacheBustArg::WarmupIsolationFirstTurn)
    ) {
        return err(
            "cache_bust targets warmup_isolation_system and warmup_isolation_first_turn are not \
             compatible with agentic_replay timing mode: Turn objects mutated during warmup \
             persist into profiling sessions. Use cache_bust=none for agentic_replay workloads \
             or one of the RID-based targets (system_prefix, first_turn_prefix, etc.) for \
             per-trajectory isolation.",
        );
    }
    if !matches!(phase.load, Load::Concurrency(_)) {
        return err(
            "AGENTIC_REPLAY timing mode requires concurrency to be set on TimingConfig (sourced \
             from the profiling phase concurrency).",
        );
    }
    let system_idle_cap = match a.system_idle_gap_cap_seconds {
        None => None,
        Some(s) if (0.0..1e9).contains(&s) => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return err(format!(
                "--system-idle-gap-cap-seconds must be at least 0 (got {s})"
            ));
        }
    };
    let warmup_grace = match a.agentic_warmup_grace_period {
        None => None,
        Some(s) if (0.0..1e9).contains(&s) => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return err(format!(
                "--agentic-warmup-grace-period must be at least 0 (got {s})"
            ));
        }
    };
    let cache_warmup = match a.agentic_cache_warmup_duration {
        None => None,
        Some(s) if s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
        Some(s) => {
            return err(format!(
                "--agentic-cache-warmup-duration must be greater than 0 (got {s})"
            ));
        }
    };
    // AIPerf: an explicit agentic grace wins; a cache warmup's drain is bounded by the larger of
    // the benchmark's grace period and min(duration, 300 s); a plain warmup waits for all.
    let warmup_grace = warmup_grace.or_else(|| {
        cache_warmup.map(|d| {
            let default = d.min(CACHE_WARMUP_GRACE_MAX);
            phase.grace.map_or(default, |g| g.max(default))
        })
    });
    phase.timing.mode = Mode::Agentic(Agentic {
        range,
        burst: a.burst_phase_starts,
        idle_cap_ms: args.input.trace_idle_gap_cap_seconds.map(|s| s * 1000.0),
        system_idle_cap,
        warmup_grace,
        cache_warmup,
    });
    Ok(())
}

/// Agentic replay's warmup (AIPerf's `agentic.warmup`, in place of any other): each lane's
/// sessions alive at `t*` send their turn before it, then the phase ends.
pub fn agentic_warmup(profiling: &PhaseConfig) -> PhaseConfig {
    PhaseConfig {
        load: profiling.load,
        request_count: None,
        sessions: None,
        duration: None,
        grace: None,
        timing: PhaseTiming {
            mode: profiling.timing.mode,
            ..PhaseTiming::default()
        },
    }
}

/// `--request-cancellation-rate` / `--request-cancellation-delay`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cancellation {
    /// Percentage of requests, in (0, 100].
    pub rate_pct: f64,
    /// From the moment the request is fully written.
    pub delay: Duration,
}

impl Cancellation {
    /// The per-request decision for a run seeded with `seed`.
    pub fn plan(&self, seed: u64) -> CancelPlan {
        CancelPlan::new(self.rate_pct, self.delay, seed)
    }
}

/// The timing settings of one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTiming {
    pub mode: Mode,
    /// `--request-rate-ramp-duration` (rate-paced phases only).
    pub rate_ramp: Option<Duration>,
    /// `--concurrency-ramp-duration`: slot `i` of `N` starts at
    /// [`ringperf_workload::schedule::concurrency_slot_start_ns`].
    pub concurrency_ramp: Option<Duration>,
    /// Profiling only: warmup requests are never cancelled.
    pub cancellation: Option<Cancellation>,
    /// `--prefill-concurrency`: most requests of the phase waiting for their first token.
    pub prefill_concurrency: Option<u64>,
    /// `--prefill-concurrency-ramp-duration`: the prefill limit grows from 1, as the
    /// concurrency ramp does (only with a prefill limit).
    pub prefill_ramp: Option<Duration>,
    /// `--request-rate-series` (profiling only): the phase's `Load::Rate` rate is its first
    /// point's.
    pub rate_series: Option<Arc<RateSeries>>,
    /// AIPerf's `adaptive_scale` (a config file's phase only): the controller's settings.
    pub adaptive: Option<Arc<ringperf_metrics::adaptive::settings::Settings>>,
}

impl Default for PhaseTiming {
    fn default() -> Self {
        Self {
            mode: Mode::Load,
            rate_ramp: None,
            concurrency_ramp: None,
            cancellation: None,
            prefill_concurrency: None,
            prefill_ramp: None,
            rate_series: None,
            adaptive: None,
        }
    }
}

/// A prefill limit: at least 1, and at most the phase's concurrency if set (docs/timing.md).
fn prefill(
    v: Option<u64>,
    concurrency: Option<u64>,
    prefix: &str,
) -> Result<Option<u64>, ConfigError> {
    match (v, concurrency) {
        (Some(0), _) => err(format!("--{prefix}prefill-concurrency must be at least 1")),
        (Some(p), Some(c)) if p > c => err(format!(
            "--{prefix}prefill-concurrency ({p}) must be at most the concurrency ({c})"
        )),
        (v, _) => Ok(v),
    }
}

fn ramp(v: Option<f64>, flag: &str) -> Result<Option<Duration>, ConfigError> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(_) => err(format!("{flag} must be a positive number of seconds")),
    }
}

/// `--fixed-schedule`: replay a trace's timestamps, in a window, at a speed.
fn fixed_schedule(args: &ProfileArgs) -> Result<Mode, ConfigError> {
    let t = &args.timing;
    for (given, flag) in [
        (args.request_rate.is_some(), "--request-rate"),
        (
            args.load_shape.request_rate_series.is_some(),
            "--request-rate-series",
        ),
        (t.user_centric_rate.is_some(), "--user-centric-rate"),
        (args.arrival_smoothness.is_some(), "--arrival-smoothness"),
    ] {
        if given {
            return err(format!(
                "--fixed-schedule replays the trace's timestamps; {flag} cannot be combined \
                 with it"
            ));
        }
    }
    if t.fixed_schedule_auto_offset && t.fixed_schedule_start_offset.is_some() {
        return err(
            "--fixed-schedule-auto-offset and --fixed-schedule-start-offset are mutually \
             exclusive",
        );
    }
    if let (Some(s), Some(e)) = (t.fixed_schedule_start_offset, t.fixed_schedule_end_offset)
        && s > e
    {
        return err(format!(
            "--fixed-schedule-start-offset ({s}) must be at most \
             --fixed-schedule-end-offset ({e})"
        ));
    }
    let speedup = match t.replay_speedup {
        None => 1.0,
        Some(x) if x.is_finite() && x > 0.0 => x,
        Some(_) => return err("--replay-speedup must be a positive number"),
    };
    Ok(Mode::FixedSchedule(FixedSchedule {
        // AIPerf 0.13: auto-offset unless a start offset is given.
        auto_offset: t.fixed_schedule_start_offset.is_none(),
        window: Window {
            start_ms: t.fixed_schedule_start_offset,
            end_ms: t.fixed_schedule_end_offset,
            applied_at_load: false,
        },
        speedup,
    }))
}

/// `--request-rate-series FILE`, read and checked (AIPerf 0.13's rules and sentences): not
/// beside `--request-rate` or `--user-centric-rate`, only on a rate-paced phase. Without the
/// flag, a config file's points given inline on its profiling phase (`inline`, checked as the
/// file read them; the flag's file replaces them, as a flag overrides the file).
fn rate_series(
    args: &ProfileArgs,
    mode: &Mode,
    inline: Option<&[(f64, f64)]>,
) -> Result<Option<Arc<RateSeries>>, ConfigError> {
    let Some(path) = &args.load_shape.request_rate_series else {
        if inline.is_some() && args.request_rate.is_some() {
            return err("rate and rate_series are mutually exclusive (the series sets the rate)");
        }
        return inline
            .map(|points| {
                let (t, q) = points.iter().copied().unzip();
                RateSeries::new(t, q)
                    .map(Arc::new)
                    .map_err(|e| ConfigError::file(format!("rate_series: {e}")))
            })
            .transpose();
    };
    if args.request_rate.is_some() {
        return err("--request-rate and --request-rate-series are mutually exclusive");
    }
    match mode {
        Mode::UserCentric { .. } => {
            return err("--request-rate-series is not supported with --user-centric-rate");
        }
        Mode::FixedSchedule(_) => {
            return err(
                "--request-rate-series can only be used with rate-controlled scheduling, not \
                 with --fixed-schedule (the trace's timestamps drive it)",
            );
        }
        Mode::Load | Mode::Agentic(_) => {}
    }
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::file(format!(
            "--request-rate-series: cannot read request-rate series JSON '{shown}': {e}"
        ))
    })?;
    let series = RateSeries::parse(&text)
        .map_err(|e| ConfigError::file(format!("--request-rate-series '{shown}': {e}")))?;
    Ok(Some(Arc::new(series)))
}

/// `--user-centric-rate` over `--num-users`.
fn user_centric(args: &ProfileArgs, rate: f64) -> Result<Mode, ConfigError> {
    let t = &args.timing;
    if !(rate.is_finite() && rate > 0.0) {
        return err("--user-centric-rate must be a positive number of requests per second");
    }
    if args.request_rate.is_some() {
        return err("--user-centric-rate and --request-rate both set the rate; pass only one");
    }
    if args.arrival_smoothness.is_some() {
        return err("--arrival-smoothness needs --arrival-pattern gamma with --request-rate");
    }
    let users = match t.num_users {
        None => return err("--user-centric-rate needs --num-users"),
        Some(0) => return err("--num-users must be at least 1"),
        Some(u) => u,
    };
    Ok(Mode::UserCentric { rate, users })
}

/// `--request-cancellation-rate` (a percentage) and `--request-cancellation-delay` (seconds).
fn cancellation(
    rate: Option<f64>,
    delay: Option<f64>,
) -> Result<Option<Cancellation>, ConfigError> {
    Ok(match (rate, delay) {
        (None, None) => None,
        (None, Some(_)) => {
            return err("--request-cancellation-delay needs --request-cancellation-rate");
        }
        (Some(r), d) => {
            if !(r > 0.0 && r <= 100.0) {
                return err("--request-cancellation-rate must be a percentage in (0, 100]");
            }
            let d = d.unwrap_or(0.0);
            if !(d.is_finite() && (0.0..1e9).contains(&d)) {
                return err(
                    "--request-cancellation-delay must be a non-negative number of seconds",
                );
            }
            Some(Cancellation {
                rate_pct: r,
                delay: Duration::from_secs_f64(d),
            })
        }
    })
}

/// The profiling phase's timing mode, ramps and cancellation.
///
/// # Errors
/// A flag out of range, a flag without the flag it needs, or two modes at once.
pub fn profiling_timing(
    args: &ProfileArgs,
    inline_series: Option<&[(f64, f64)]>,
) -> Result<PhaseTiming, ConfigError> {
    let t = &args.timing;
    let offsets_given = t.fixed_schedule_auto_offset
        || t.fixed_schedule_start_offset.is_some()
        || t.fixed_schedule_end_offset.is_some();
    if offsets_given && !t.fixed_schedule {
        return err("--fixed-schedule-{auto,start,end}-offset need --fixed-schedule");
    }
    if t.fixed_schedule && t.no_fixed_schedule {
        return err("--fixed-schedule and --no-fixed-schedule contradict each other");
    }
    // A trace file may still turn the phase into a fixed schedule (`promote_trace`), which
    // then checks it.
    if t.replay_speedup.is_some() && !t.fixed_schedule && args.input.input_file.is_none() {
        return err(SPEEDUP_NEEDS_SCHEDULE);
    }
    if t.replay_speedup
        .is_some_and(|x| !(x.is_finite() && x > 0.0))
    {
        return err("--replay-speedup must be a positive number");
    }
    if t.num_users.is_some() && t.user_centric_rate.is_none() {
        return err(
            "--num-users needs --user-centric-rate (or drop --num-users to use the \
             concurrency or request-rate mode)",
        );
    }
    let mode = if t.fixed_schedule {
        fixed_schedule(args)?
    } else if let Some(rate) = t.user_centric_rate {
        user_centric(args, rate)?
    } else {
        Mode::Load
    };

    let rate_series = rate_series(args, &mode, inline_series)?;
    let rate_ramp = ramp(t.request_rate_ramp_duration, "--request-rate-ramp-duration")?;
    let rate_paced = args.request_rate.is_some()
        || rate_series.is_some()
        || matches!(mode, Mode::UserCentric { .. });
    if rate_ramp.is_some() && !rate_paced {
        return err(
            "--request-rate-ramp-duration needs rate pacing (--request-rate or \
             --user-centric-rate)",
        );
    }
    let concurrency_ramp = ramp(t.concurrency_ramp_duration, "--concurrency-ramp-duration")?;

    let cancellation = cancellation(t.request_cancellation_rate, t.request_cancellation_delay)?;
    let prefill_concurrency = prefill(t.prefill_concurrency, args.concurrency, "")?;
    let s = &args.load_shape;
    let prefill_ramp = ramp(
        s.prefill_concurrency_ramp_duration,
        "--prefill-concurrency-ramp-duration",
    )?
    .filter(|_| prefill_concurrency.is_some());
    Ok(PhaseTiming {
        mode,
        rate_ramp,
        concurrency_ramp,
        cancellation,
        prefill_concurrency,
        prefill_ramp,
        rate_series,
        adaptive: None,
    })
}

/// The warmup phase's ramps (each inherited from the profiling flag unless its `--warmup-*`
/// flag is given). Warmup is never a fixed schedule or user-centric and never cancels.
///
/// # Errors
/// A ramp out of range, or `--warmup-request-rate-ramp-duration` on a warmup without a rate.
pub fn warmup_timing(args: &ProfileArgs, warmup_load: &Load) -> Result<PhaseTiming, ConfigError> {
    let t = &args.timing;
    let concurrency_ramp = ramp(
        t.warmup_concurrency_ramp_duration
            .or(t.concurrency_ramp_duration),
        "--warmup-concurrency-ramp-duration",
    )?;
    let rate_ramp = ramp(
        t.warmup_request_rate_ramp_duration
            .or(t.request_rate_ramp_duration),
        "--warmup-request-rate-ramp-duration",
    )?;
    let rate_ramp = match (rate_ramp, warmup_load) {
        (Some(_), Load::Concurrency(_)) if t.warmup_request_rate_ramp_duration.is_some() => {
            return err(
                "--warmup-request-rate-ramp-duration needs a rate-paced warmup \
                 (--warmup-request-rate)",
            );
        }
        // An inherited rate ramp does not apply to a closed-loop warmup (AIPerf drops it).
        (_, Load::Concurrency(_)) => None,
        (r, Load::Rate { .. }) => r,
    };
    let warmup_concurrency = args.warmup_concurrency.or(args.concurrency);
    let prefill_concurrency = prefill(
        t.warmup_prefill_concurrency.or(t.prefill_concurrency),
        warmup_concurrency,
        "warmup-",
    )?;
    let s = &args.load_shape;
    let prefill_ramp = ramp(
        s.warmup_prefill_concurrency_ramp_duration
            .or(s.prefill_concurrency_ramp_duration),
        "--warmup-prefill-concurrency-ramp-duration",
    )?
    .filter(|_| prefill_concurrency.is_some());
    Ok(PhaseTiming {
        mode: Mode::Load,
        rate_ramp,
        concurrency_ramp,
        cancellation: None,
        prefill_concurrency,
        prefill_ramp,
        adaptive: None,
        rate_series: None,
    })
}

/// The prefill ramps where they change nothing (AIPerf accepts them there): one warning line
/// each, as docs/flags.md "Flags per mode" has it.
pub fn load_shape_unused(args: &ProfileArgs, warmup: Option<&PhaseConfig>) -> Vec<String> {
    let s = &args.load_shape;
    let mut w = Vec::new();
    if s.prefill_concurrency_ramp_duration.is_some() && args.timing.prefill_concurrency.is_none() {
        w.push(
            "--prefill-concurrency-ramp-duration has no effect: there is no prefill limit to \
             ramp (--prefill-concurrency sets one)"
                .to_owned(),
        );
    }
    if s.warmup_prefill_concurrency_ramp_duration.is_some() {
        let why = match warmup {
            None => Some(
                "there is no warmup phase (--warmup-request-count, --warmup-duration or \
                 --num-warmup-sessions starts one)",
            ),
            Some(p) if p.timing.prefill_concurrency.is_none() => Some(
                "the warmup has no prefill limit to ramp (--warmup-prefill-concurrency or \
                 --prefill-concurrency sets one)",
            ),
            Some(_) => None,
        };
        if let Some(why) = why {
            w.push(format!(
                "--warmup-prefill-concurrency-ramp-duration has no effect: {why}"
            ));
        }
    }
    w
}

/// `--user-centric-rate` needs multi-turn sessions: AIPerf 0.13 rejects a conversation turn
/// mean (`--conversation-turn-mean`) below 2. For the prompt-shaping side to call once that
/// flag exists.
///
/// # Errors
/// User-centric mode with a turn mean below 2.
pub fn check_user_centric_turns(timing: &PhaseTiming, turn_mean: f64) -> Result<(), ConfigError> {
    if matches!(timing.mode, Mode::UserCentric { .. }) && turn_mean < 2.0 {
        return err(
            "--user-centric-rate needs multi-turn sessions (--conversation-turn-mean of at \
             least 2); for single-turn workloads use --request-rate",
        );
    }
    Ok(())
}

/// `--replay-speedup` without a fixed schedule to speed up.
const SPEEDUP_NEEDS_SCHEDULE: &str = "--replay-speedup needs --fixed-schedule, or a trace \
    replayed on its timestamps (it scales a trace's timestamps)";

/// `--replay-speedup` after the trace's promotion: refused when the phase is not a fixed
/// schedule after all.
///
/// # Errors
/// The speedup is given and the phase is not a fixed schedule.
pub fn check_speedup(args: &ProfileArgs, phase: &PhaseConfig) -> Result<(), ConfigError> {
    if args.timing.replay_speedup.is_some() && !matches!(phase.timing.mode, Mode::FixedSchedule(_))
    {
        return err(SPEEDUP_NEEDS_SCHEDULE);
    }
    Ok(())
}

/// AIPerf's trace auto-promotion: a trace dataset whose first record has a timestamp turns
/// the profiling phase into a fixed schedule unless `--no-fixed-schedule` is given. For the
/// dataset side to call once it knows `is_timestamped_trace`; `records` is the dataset's record
/// count, the default request count of a replay. Returns whether the phase was promoted.
///
/// # Errors
/// A rate mode chosen explicitly against a timestamped trace.
pub fn promote_trace(
    args: &ProfileArgs,
    phase: &mut PhaseConfig,
    is_timestamped_trace: bool,
    records: u64,
) -> Result<bool, ConfigError> {
    let already = matches!(phase.timing.mode, Mode::FixedSchedule(_));
    if already || !is_timestamped_trace || args.timing.no_fixed_schedule {
        if already && args.request_count.is_none() && phase.duration.is_none() {
            phase.request_count = Some(records);
        }
        return Ok(false);
    }
    let mut conflicts = Vec::new();
    if args.request_rate.is_some() {
        conflicts.push("--request-rate");
    }
    if args.load_shape.request_rate_series.is_some() {
        conflicts.push("--request-rate-series");
    }
    if args.timing.user_centric_rate.is_some() {
        conflicts.push("--user-centric-rate");
    }
    if args.arrival_smoothness.is_some() {
        conflicts.push("--arrival-smoothness");
    }
    if !conflicts.is_empty() {
        return err(format!(
            "the trace has per-record timestamps and would be replayed on a fixed schedule, but \
             {} cannot be combined with that; drop them, or pass --no-fixed-schedule to keep \
             your timing mode and ignore the timestamps",
            conflicts.join(", ")
        ));
    }
    phase.timing.mode = Mode::FixedSchedule(FixedSchedule {
        auto_offset: true,
        window: Window::default(),
        // Checked positive where the timing was resolved.
        speedup: args.timing.replay_speedup.unwrap_or(1.0),
    });
    phase.load = Load::Rate {
        rate: 0.0,
        arrival: super::Arrival::Constant,
        cap: args.concurrency,
    };
    if args.request_count.is_none() && phase.duration.is_none() {
        phase.request_count = Some(records);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use serde_json::json;

    use crate::config::{Config, ConfigError, Load};

    fn cfg(extra: &str) -> Result<Config, ConfigError> {
        let line = format!("ringperf profile -m m -u 127.0.0.1:1 --streaming {extra}");
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false)
    }

    fn series_file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    const SERIES: &str = r#"{"points": [{"time_s": 0, "qps": 5}, {"time_s": 1, "qps": 20}]}"#;

    #[test]
    fn a_series_paces_the_profiling_phase_at_its_first_rate() {
        let f = series_file(SERIES);
        let path = f.path().display();
        let c = cfg(&format!("--request-rate-series {path} --concurrency 2")).unwrap();
        // AIPerf: Poisson unless --arrival-pattern says otherwise, capped by --concurrency.
        assert_eq!(
            c.profiling.load,
            Load::Rate {
                rate: 5.0,
                arrival: crate::config::Arrival::Poisson,
                cap: Some(2)
            }
        );
        let s = c.profiling.timing.rate_series.as_deref().unwrap();
        assert_eq!(
            s.points().collect::<Vec<_>>(),
            vec![(0.0, 5.0), (1.0, 20.0)]
        );
        // input_config as AIPerf 0.13 wrote it for the same flags (a run against the mock):
        // the series replaces `rate`.
        let phase = &c.input_config()["phases"][0];
        assert_eq!(phase["type"], "poisson");
        assert_eq!(phase["concurrency"], 2);
        assert!(phase.get("rate").is_none(), "{phase}");
        assert_eq!(
            phase["rate_series"],
            json!({"points": [{"time_s": 0.0, "qps": 5.0}, {"time_s": 1.0, "qps": 20.0}]})
        );
        // A warmup gets no rate from a series: closed loop at --concurrency, as AIPerf's.
        let c = cfg(&format!(
            "--request-rate-series {path} --arrival-pattern gamma --arrival-smoothness 2 \
             --request-rate-ramp-duration 0.3 --warmup-request-count 3"
        ))
        .unwrap();
        assert_eq!(c.warmup.as_ref().unwrap().load, Load::Concurrency(1));
        assert_eq!(c.warmup.as_ref().unwrap().timing.rate_ramp, None);
        let phases = c.input_config()["phases"].clone();
        assert_eq!(phases[0]["type"], "concurrency");
        assert_eq!(phases[1]["type"], "gamma");
        assert_eq!(phases[1]["rate_ramp"], json!({"duration": 0.3}));
        assert_eq!(phases[1]["smoothness"], json!(2.0));
        let keys: Vec<&String> = phases[1].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "kind",
                "type",
                "requests",
                "rate_ramp",
                "rate_series",
                "smoothness"
            ]
        );
    }

    #[test]
    fn a_series_is_refused_where_aiperf_refuses_it() {
        let f = series_file(SERIES);
        let path = f.path().display();
        for (flags, needle) in [
            ("--request-rate 5", "mutually exclusive"),
            (
                "--user-centric-rate 5 --num-users 2",
                "not supported with --user-centric-rate",
            ),
            ("--fixed-schedule", "--request-rate-series cannot"),
        ] {
            let e = cfg(&format!("--request-rate-series {path} {flags}")).expect_err(flags);
            assert!(e.message().contains(needle), "{flags}: {e}");
        }
        let one = series_file(r#"[{"time_s": 0, "qps": 5}]"#);
        let e = cfg(&format!("--request-rate-series {}", one.path().display())).unwrap_err();
        assert!(e.message().contains("at least two points"), "{e}");
        assert_eq!(e.kind(), crate::config::ErrorKind::File);
        let e = cfg("--request-rate-series /nonexistent/series.json").unwrap_err();
        assert!(
            e.message().contains("cannot read request-rate series JSON"),
            "{e}"
        );
    }

    /// AIPerf 0.13 echoes a phase's prefill limit (`--prefill-concurrency 2` against the mock:
    /// `"concurrency": 4, "prefill_concurrency": 2`); a warmup inherits it.
    #[test]
    fn prefill_concurrency_is_echoed_as_aiperf() {
        let c = cfg("--concurrency 4 --prefill-concurrency 2").unwrap();
        assert_eq!(c.input_config()["phases"][0]["prefill_concurrency"], 2);
        let c = cfg("--concurrency 4 --prefill-concurrency 3 --warmup-request-count 3").unwrap();
        let phases = c.input_config()["phases"].clone();
        assert_eq!(phases[0]["name"], "warmup");
        assert_eq!(phases[0]["prefill_concurrency"], 3);
        assert_eq!(phases[1]["prefill_concurrency"], 3);
        assert!(
            cfg("--concurrency 4").unwrap().input_config()["phases"][0]
                .get("prefill_concurrency")
                .is_none()
        );
    }

    #[test]
    fn prefill_ramps_resolve_inherit_and_echo_as_aiperf() {
        let c = cfg(
            "--concurrency 4 --prefill-concurrency 3 --prefill-concurrency-ramp-duration 1 \
             --warmup-request-count 3",
        )
        .unwrap();
        let one_s = Some(std::time::Duration::from_secs(1));
        assert_eq!(c.profiling.timing.prefill_ramp, one_s);
        assert_eq!(c.warmup.as_ref().unwrap().timing.prefill_ramp, one_s);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // AIPerf 0.13's echo of these flags (a run against the mock), both phases.
        for p in c.input_config()["phases"].as_array().unwrap() {
            assert_eq!(p["prefill_concurrency"], 3, "{p}");
            assert_eq!(p["prefill_ramp"], json!({"duration": 1.0}), "{p}");
            let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
            let at = |k: &str| keys.iter().position(|x| *x == k).unwrap();
            assert!(at("concurrency") < at("prefill_concurrency"));
            assert!(at("prefill_concurrency") < at("prefill_ramp"));
        }
        // The warmup twin applies to the warmup only.
        let c = cfg(
            "--concurrency 4 --prefill-concurrency 3 --warmup-request-count 3 \
             --warmup-prefill-concurrency-ramp-duration 0.5",
        )
        .unwrap();
        assert_eq!(c.profiling.timing.prefill_ramp, None);
        assert_eq!(
            c.warmup.as_ref().unwrap().timing.prefill_ramp,
            Some(std::time::Duration::from_millis(500))
        );
        // Where there is nothing to ramp, one warning line each (AIPerf accepts them).
        let c = cfg("--concurrency 4 --prefill-concurrency-ramp-duration 1").unwrap();
        assert_eq!(c.profiling.timing.prefill_ramp, None);
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].starts_with("--prefill-concurrency-ramp-duration has no effect"));
        // AIPerf echoes the given ramp all the same.
        assert_eq!(
            c.input_config()["phases"][0]["prefill_ramp"],
            json!({"duration": 1.0})
        );
        let c = cfg(
            "--concurrency 4 --prefill-concurrency 2 --warmup-prefill-concurrency-ramp-duration 1",
        )
        .unwrap();
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(c.warnings[0].contains("there is no warmup phase"));
        for bad in ["0", "-1", "nan"] {
            let e = cfg(&format!(
                "--concurrency 4 --prefill-concurrency 2 --prefill-concurrency-ramp-duration={bad}"
            ))
            .unwrap_err();
            assert!(
                e.message().contains("positive number of seconds"),
                "{bad}: {e}"
            );
        }
    }
}
