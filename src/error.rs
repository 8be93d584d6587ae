//! Every way a `ringperf` command can fail, and the exit code each one gives.
//!
//! The exit codes are README's "Stopping, errors and exit codes" table: every failure here is
//! a usage or setup error, 2. A run that ran ends with its own [`crate::run::Outcome`] code
//! (0, 1, 3, 5, 130), a merge with [`crate::merge::Outcome`]'s (0, 1, 4); neither is an error.

use std::fmt;

use crate::cli::UnsupportedFlag;
use crate::config::ConfigError;
use crate::config::mock::MockArgsError;
use crate::merge::MergeError;
use crate::run::RunError;
use ringperf_metrics::server_metrics::Error as ReprocessError;
use ringperf_plot::plot::PlotError;

/// A command that failed. `Display` is the line printed after `ringperf: `, with the
/// command's own prefix (`merge: `, `plot: `, …) where it has one.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An AIPerf flag ringperf does not support (refused before parsing).
    Unsupported(UnsupportedFlag),
    /// `profile`: a bad flag or value.
    Config(ConfigError),
    /// `profile`: SIGINT / SIGTERM could not be blocked before start-up.
    Signals(std::io::Error),
    /// `profile`: the run could not be set up or its artifacts written.
    Run(RunError),
    /// `profile`: a sweep refused or failed (docs/sweeps.md).
    Sweep(crate::sweep::SweepError),
    /// `profile`: an SLO search refused or failed (docs/search.md).
    Search(crate::search::SearchError),
    /// `server-metrics`: a bad flag or value.
    ServerMetricsConfig(ConfigError),
    /// `server-metrics`: the JSONL could not be re-processed.
    ServerMetrics(ReprocessError),
    /// `merge`: refused or failed.
    Merge(MergeError),
    /// `plot`: no report written.
    Plot(PlotError),
    /// `mock-server`: a bad flag or value.
    MockServerConfig(MockArgsError),
    /// `mock-server`: the server could not start (or its signals could not be blocked).
    MockServer(std::io::Error),
    /// `analyze-trace`, `synthesize`: the trace could not be read or the output written.
    TraceTool(crate::trace_tools::TraceToolError),
    /// `chat`: a bad URL or tokenizer, or a failed `--quick` turn.
    Chat(crate::chat::ChatError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unsupported(e) => write!(f, "{e}"),
            Error::Config(e) => write!(f, "{e}"),
            Error::Signals(e) => write!(f, "cannot block SIGINT/SIGTERM: {e}"),
            Error::Run(e) => write!(f, "{e}"),
            Error::Sweep(e) => write!(f, "{e}"),
            Error::Search(e) => write!(f, "{e}"),
            Error::ServerMetricsConfig(e) => write!(f, "server-metrics: {e}"),
            Error::ServerMetrics(e) => write!(f, "server-metrics: {e}"),
            Error::Merge(e) => write!(f, "merge: {e}"),
            Error::Plot(e) => write!(f, "plot: {e}"),
            Error::MockServerConfig(e) => write!(f, "mock-server: {e}"),
            Error::MockServer(e) => write!(f, "mock-server: {e}"),
            Error::TraceTool(e) => write!(f, "{e}"),
            Error::Chat(e) => write!(f, "chat: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Unsupported(e) => Some(e),
            Error::Config(e) | Error::ServerMetricsConfig(e) => Some(e),
            Error::Signals(e) | Error::MockServer(e) => Some(e),
            Error::Run(e) => Some(e),
            Error::Sweep(e) => Some(e),
            Error::Search(e) => Some(e),
            Error::ServerMetrics(e) => Some(e),
            Error::Merge(e) => Some(e),
            Error::Plot(e) => Some(e),
            Error::MockServerConfig(e) => Some(e),
            Error::TraceTool(e) => Some(e),
            Error::Chat(e) => Some(e),
        }
    }
}

impl From<UnsupportedFlag> for Error {
    fn from(e: UnsupportedFlag) -> Self {
        Error::Unsupported(e)
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

impl From<RunError> for Error {
    fn from(e: RunError) -> Self {
        Error::Run(e)
    }
}

impl From<crate::sweep::SweepError> for Error {
    fn from(e: crate::sweep::SweepError) -> Self {
        match e {
            // A variation refused by `profile`'s own checks exits as that refusal would.
            crate::sweep::SweepError::Run(r) => Error::Run(r),
            e => Error::Sweep(e),
        }
    }
}

impl From<crate::search::SearchError> for Error {
    fn from(e: crate::search::SearchError) -> Self {
        match e {
            crate::search::SearchError::Sweep(s) => Error::from(s),
            e => Error::Search(e),
        }
    }
}

impl From<MergeError> for Error {
    fn from(e: MergeError) -> Self {
        Error::Merge(e)
    }
}

impl From<PlotError> for Error {
    fn from(e: PlotError) -> Self {
        Error::Plot(e)
    }
}

impl From<MockArgsError> for Error {
    fn from(e: MockArgsError) -> Self {
        Error::MockServerConfig(e)
    }
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::run::SetupKind;

    fn io_error() -> io::Error {
        io::Error::from(io::ErrorKind::PermissionDenied)
    }

    const SLICE_MSG: &str = "--slice-duration must be a positive number of seconds";

    /// A [`ConfigError`] as the flag validation makes one.
    fn config_error() -> ConfigError {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "ringperf",
            "server-metrics",
            "--from-jsonl",
            "x.jsonl",
            "--slice-duration",
            "0",
        ])
        .expect("the flags parse");
        let crate::cli::Command::ServerMetrics(args) = cli.command else {
            panic!("server-metrics parses as itself");
        };
        crate::config::reprocess_options(&args).expect_err("a zero slice is refused")
    }

    /// One of every kind, with the line `main` prints after `ringperf: ` for it.
    fn every_kind() -> Vec<(Error, String)> {
        let io_msg = io_error().to_string();
        vec![
            (
                Error::Unsupported(UnsupportedFlag {
                    flag: "--foo".into(),
                }),
                "the AIPerf flag `--foo` is not supported by ringperf yet (docs/flags.md lists \
                 what is); remove it to run"
                    .into(),
            ),
            (Error::Config(config_error()), SLICE_MSG.into()),
            (
                Error::Signals(io_error()),
                format!("cannot block SIGINT/SIGTERM: {io_msg}"),
            ),
            (
                Error::Run(RunError::new(SetupKind::Tokenizer, "no tokenizer")),
                "no tokenizer".into(),
            ),
            (
                Error::ServerMetricsConfig(config_error()),
                format!("server-metrics: {SLICE_MSG}"),
            ),
            (
                Error::ServerMetrics(ReprocessError::EmptyWindow {
                    start_ns: 9,
                    end_ns: 3,
                }),
                "server-metrics: the window is empty: --start-ns 9 is after the end 3".into(),
            ),
            (
                Error::Merge(MergeError::Refused("no shard".into())),
                "merge: no shard".into(),
            ),
            (
                Error::Merge(MergeError::Failed("cut".into())),
                "merge: cut".into(),
            ),
            (
                Error::Plot(PlotError::Render(
                    ringperf_plot::plot::render::RenderError::Font,
                )),
                "plot: cannot draw a chart: the embedded font cannot be read".into(),
            ),
            (
                Error::MockServerConfig(MockArgsError::DcgmLogWithoutGpus),
                format!("mock-server: {}", MockArgsError::DcgmLogWithoutGpus),
            ),
            (
                Error::MockServer(io_error()),
                format!("mock-server: {io_msg}"),
            ),
        ]
    }

    #[test]
    fn every_error_kind_exits_2_as_the_readme_table_says() {
        for (e, _) in every_kind() {
            assert_eq!(crate::exit::of_error(&e), 2, "{e:?}");
        }
    }

    #[test]
    fn every_error_kind_prints_its_command_prefix_and_message() {
        for (e, line) in every_kind() {
            assert_eq!(e.to_string(), line, "{e:?}");
        }
    }

    #[test]
    fn every_setup_kind_of_a_run_exits_2_but_an_interruption() {
        use SetupKind::*;
        for kind in [
            Signals,
            Tokenizer,
            MockServer,
            Workload,
            Tls,
            Shard,
            Artifacts,
            Threads,
            Limits,
            ServerLifecycle,
        ] {
            let e = Error::from(RunError::new(kind, "m"));
            assert_eq!(crate::exit::of_error(&e), 2, "{kind:?}");
            assert_eq!(e.to_string(), "m");
        }
        let e = Error::from(RunError::new(Interrupted, "m"));
        assert_eq!(
            crate::exit::of_error(&e),
            130,
            "a run interrupted while prepared exits as cancelled"
        );
    }
}
