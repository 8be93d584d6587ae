//! Every exit code of `ringperf`, decided here and nowhere else (README, "Stopping, errors and
//! exit codes"): from a command's top-level error, a profile's outcome (a single run, a sweep or
//! a search: the outcome of their runs together), or a merge's outcome. `main` asks; the force
//! quit (a second Ctrl-C, the dashboard's stop key pressed twice) is handed [`force_quit`].

use crate::Error;
use crate::merge::MergeError;
use crate::run::{Outcome, SetupKind, StopReason};

/// The run completed and at least one request succeeded.
pub const OK: u8 = 0;
/// No request succeeded.
pub const NO_SUCCESS: u8 = 1;
/// A usage or setup error: nothing was measured.
pub const USAGE: u8 = 2;
/// `--failed-request-threshold` was crossed.
pub const ERROR_BUDGET: u8 = 3;
/// `ringperf merge`: a shard failed or is missing (the merged artifacts are written anyway).
pub const INCOMPLETE_MERGE: u8 = 4;
/// `--max-client-lag-us` was given and the client fell behind.
pub const CLIENT_BEHIND: u8 = 5;
/// Cancelled by SIGINT / SIGTERM.
pub const CANCELLED: u8 = 130;

/// A command's failure: a usage or setup error, but a run interrupted by a signal while it was
/// prepared is a cancelled run.
pub fn of_error(e: &Error) -> u8 {
    match e {
        Error::Run(e) if e.kind() == SetupKind::Interrupted => CANCELLED,
        Error::Merge(MergeError::Refused(_) | MergeError::Failed(_))
        | Error::Unsupported(_)
        | Error::Config(_)
        | Error::Signals(_)
        | Error::Run(_)
        | Error::Sweep(_)
        | Error::Search(_)
        | Error::ServerMetricsConfig(_)
        | Error::ServerMetrics(_)
        | Error::Plot(_)
        | Error::MockServerConfig(_)
        | Error::MockServer(_)
        | Error::TraceTool(_)
        | Error::Chat(_) => USAGE,
    }
}

/// A profile run that ended: cancelled by a signal, the error budget crossed, no request
/// succeeded, the client fell behind under `--max-client-lag-us`, else success.
pub fn of_run(o: &Outcome) -> u8 {
    match &o.stopped {
        Some(StopReason::Signal(_)) => CANCELLED,
        Some(StopReason::ErrorBudget { .. }) => ERROR_BUDGET,
        None if o.successes == 0 => NO_SUCCESS,
        None if o.fails_client_health() => CLIENT_BEHIND,
        None => OK,
    }
}

/// A merge that ended: a shard failed or is missing, else no request succeeded, else a shard
/// fell behind under its `--max-client-lag-us`, else success.
pub fn of_merge(o: &crate::merge::Outcome) -> u8 {
    match (o.complete, o.successes) {
        (false, _) => INCOMPLETE_MERGE,
        (true, 0) => NO_SUCCESS,
        (true, _) if o.fails_client_health => CLIENT_BEHIND,
        (true, _) => OK,
    }
}

/// A run's code once `--auto-plot` failed under `--plot-required`: 1 where the run would exit 0
/// (AIPerf's failed plot callback), the run's own otherwise.
pub fn with_required_plot_failed(run: u8) -> u8 {
    if run == OK { NO_SUCCESS } else { run }
}

/// The force quit: ends the process at once, cancelled.
pub fn force_quit() -> ! {
    std::process::exit(i32::from(CANCELLED))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn run(successes: u64, stopped: Option<StopReason>, behind: bool) -> Outcome {
        Outcome {
            successes,
            errors: 1,
            stopped,
            client_fell_behind: behind,
            client_lag_enforced: true,
            artifact_dir: PathBuf::from("out"),
        }
    }

    #[test]
    fn a_run_exits_with_the_worst_of_what_happened() {
        assert_eq!(of_run(&run(3, None, false)), 0);
        assert_eq!(of_run(&run(3, None, true)), 5);
        assert_eq!(of_run(&run(0, None, true)), 1);
        // Fell behind without --max-client-lag-us: reported, not the exit code.
        let reported = Outcome {
            client_lag_enforced: false,
            ..run(3, None, true)
        };
        assert_eq!(of_run(&reported), 0);
        let budget = StopReason::ErrorBudget {
            failed: 5,
            total: 10,
            threshold: 0.1,
            phase: None,
        };
        assert_eq!(of_run(&run(3, Some(budget), true)), 3);
        assert_eq!(
            of_run(&run(3, Some(StopReason::Signal("SIGINT")), true)),
            130
        );
    }

    #[test]
    fn a_merge_exits_four_when_a_shard_is_missing_whatever_else() {
        let merge = |complete, successes, behind| crate::merge::Outcome {
            artifact_dir: PathBuf::from("m"),
            complete,
            successes,
            client_fell_behind: behind,
            fails_client_health: behind,
        };
        assert_eq!(of_merge(&merge(true, 5, false)), 0);
        assert_eq!(of_merge(&merge(true, 0, false)), 1);
        assert_eq!(of_merge(&merge(false, 5, false)), 4);
        assert_eq!(of_merge(&merge(false, 0, true)), 4);
        assert_eq!(of_merge(&merge(true, 5, true)), 5);
        assert_eq!(of_merge(&merge(true, 0, true)), 1);
        assert_eq!(of_error(&Error::Merge(MergeError::Refused("x".into()))), 2);
        assert_eq!(of_error(&Error::Merge(MergeError::Failed("x".into()))), 2);
    }
}
