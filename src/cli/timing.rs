//! When requests go: fixed-schedule replay, user-centric rate, ramps, request cancellation.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimingArgs {
    // ----- Fixed schedule -----
    /// Send each conversation's first turn at its trace timestamp (automatic for a trace whose
    /// first record has a timestamp).
    #[arg(long = "fixed-schedule", help_heading = "Fixed Schedule")]
    pub fixed_schedule: bool,

    /// Keep the chosen timing mode for a timestamped trace instead of replaying its timestamps.
    #[arg(long = "no-fixed-schedule", help_heading = "Fixed Schedule")]
    pub no_fixed_schedule: bool,

    /// Shift the trace so its first kept timestamp is the phase start (the default unless
    /// --fixed-schedule-start-offset is given).
    #[arg(long = "fixed-schedule-auto-offset", help_heading = "Fixed Schedule")]
    pub fixed_schedule_auto_offset: bool,

    /// Skip trace records before this timestamp (ms, inclusive); it becomes the phase start.
    #[arg(long = "fixed-schedule-start-offset", help_heading = "Fixed Schedule")]
    pub fixed_schedule_start_offset: Option<u64>,

    /// Skip trace records after this timestamp (ms, inclusive).
    #[arg(long = "fixed-schedule-end-offset", help_heading = "Fixed Schedule")]
    pub fixed_schedule_end_offset: Option<u64>,

    /// Replay the trace this many times faster than recorded (divides timestamps and delays).
    #[arg(long = "replay-speedup", help_heading = "Conversation Input")]
    pub replay_speedup: Option<f64>,

    // ----- Prefill concurrency -----
    /// Most requests waiting for their first token at once (a slot is taken before a request is
    /// written and given back at its first content response, or at its end).
    #[arg(long = "prefill-concurrency", help_heading = "Load Generator")]
    pub prefill_concurrency: Option<u64>,

    /// Warmup prefill concurrency (defaults to --prefill-concurrency).
    #[arg(long = "warmup-prefill-concurrency", help_heading = "Warmup")]
    pub warmup_prefill_concurrency: Option<u64>,

    // ----- Ramps -----
    /// Seconds to ramp the concurrency from 1 to --concurrency.
    #[arg(long = "concurrency-ramp-duration", help_heading = "Load Generator")]
    pub concurrency_ramp_duration: Option<f64>,

    /// Seconds to ramp the request rate from rate·0.1 s/duration to --request-rate.
    #[arg(long = "request-rate-ramp-duration", help_heading = "Load Generator")]
    pub request_rate_ramp_duration: Option<f64>,

    /// Warmup concurrency ramp in seconds (defaults to --concurrency-ramp-duration).
    #[arg(long = "warmup-concurrency-ramp-duration", help_heading = "Warmup")]
    pub warmup_concurrency_ramp_duration: Option<f64>,

    /// Warmup request-rate ramp in seconds (defaults to --request-rate-ramp-duration).
    #[arg(long = "warmup-request-rate-ramp-duration", help_heading = "Warmup")]
    pub warmup_request_rate_ramp_duration: Option<f64>,

    // ----- User-centric rate -----
    /// Total requests per second shared by --num-users users, each sending one turn every
    /// num_users/rate seconds.
    #[arg(long = "user-centric-rate", help_heading = "User-Centric Rate")]
    pub user_centric_rate: Option<f64>,

    /// Users of --user-centric-rate.
    #[arg(long = "num-users", value_parser = super::parse_whole::<u64>, help_heading = "User-Centric Rate")]
    pub num_users: Option<u64>,

    // ----- Request cancellation -----
    /// Percentage (0-100] of profiling requests cancelled after --request-cancellation-delay.
    #[arg(
        long = "request-cancellation-rate",
        help_heading = "Request Cancellation"
    )]
    pub request_cancellation_rate: Option<f64>,

    /// Seconds after a request is fully sent before it is cancelled (default 0).
    #[arg(
        long = "request-cancellation-delay",
        help_heading = "Request Cancellation"
    )]
    pub request_cancellation_delay: Option<f64>,
}
