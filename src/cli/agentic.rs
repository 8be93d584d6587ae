//! Agentic replay's phase settings (docs/timing.md, "Agentic replay"): where in each trace the
//! lanes resume, whether they start together, how long the system may stay idle; inert unless the
//! profiling phase's timing mode is `agentic_replay` (a config file's, or a scenario's), as in
//! AIPerf. Resolved in `config::timing`. And the scenario that locks them (`config::scenario`).

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgenticArgs {
    /// Agentic replay: earliest point of each trace's span a lane resumes at, 0–1 (default
    /// 0.25).
    #[arg(long = "trajectory-start-min-ratio", help_heading = "Load Generator")]
    pub trajectory_start_min_ratio: Option<f64>,

    /// Agentic replay: latest point of each trace's span a lane resumes at, 0–1 (default 0.75).
    #[arg(long = "trajectory-start-max-ratio", help_heading = "Load Generator")]
    pub trajectory_start_max_ratio: Option<f64>,

    /// Agentic replay: every lane's first request at the start of its phase, instead of each at
    /// its place in the trace.
    #[arg(long = "burst-phase-starts", help_heading = "Load Generator")]
    pub burst_phase_starts: bool,

    /// Agentic replay: while no request is in flight, every pending wait is brought forward so
    /// that the next request goes within this many seconds.
    #[arg(long = "system-idle-gap-cap-seconds", help_heading = "Load Generator")]
    pub system_idle_gap_cap_seconds: Option<f64>,

    /// Agentic replay: once its last priming request is sent, the warmup waits at most this many
    /// seconds for the answers, then cuts the rest (default: no limit).
    #[arg(long = "agentic-warmup-grace-period", help_heading = "Warmup")]
    pub agentic_warmup_grace_period: Option<f64>,

    /// Agentic replay: after the warmup's priming requests, this many more seconds of the
    /// lanes' trees sent back to back, one output token each, before profiling goes on from
    /// where they are (default: none).
    #[arg(long = "agentic-cache-warmup-duration", help_heading = "Warmup")]
    pub agentic_cache_warmup_duration: Option<f64>,

    /// A named benchmark whose settings are locked (AIPerf's `inferencex-agentx-mvp`).
    #[arg(long = "scenario", help_heading = "Scenario")]
    pub scenario: Option<String>,

    /// Turn the scenario's violations into warnings (the run is marked
    /// `submission_valid: false`).
    #[arg(long = "unsafe-override", help_heading = "Scenario")]
    pub unsafe_override: bool,
}
