//! Why a profile run could not be set up or could not write its artifacts: [`RunError`], one
//! message printed once, and the [`SetupKind`] of step that failed. Every kind exits 2 (README,
//! "Stopping, errors and exit codes") except [`SetupKind::Interrupted`], which exits 130;
//! [`crate::Error::exit_code`] says so.

use std::fmt;

/// The step of a run that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupKind {
    /// SIGINT / SIGTERM could not be blocked, or their thread could not start.
    Signals,
    /// The tokenizer could not be loaded.
    Tokenizer,
    /// The embedded mock server could not start.
    MockServer,
    /// The workload: the dataset, a payload template, a request's encoding, `inputs.json`.
    Workload,
    /// TLS: CA certificates, a URL's TLS server name.
    Tls,
    /// A split run: `--start-at` already past, the shard manifest.
    Shard,
    /// The artifact directory, or a file of the run in it.
    Artifacts,
    /// A thread of the run (aggregator, workers) could not start, or panicked.
    Threads,
    /// The concurrency needs more descriptors or ports than the process or kernel allows.
    Limits,
    /// The server's lifecycle (docs/integrations.md): the model was not ready in time, the
    /// KV-cache reset or the profiler start failed.
    ServerLifecycle,
    /// `--api-port`: the live API's port could not be bound.
    Api,
    /// SIGINT / SIGTERM came while the run was being prepared: nothing was sent. Exits 130, as
    /// a cancelled run does.
    Interrupted,
}

/// A setup failure (or an artifact that could not be written): one message, printed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    kind: SetupKind,
    message: String,
}

impl RunError {
    /// A failure of `kind`, said as `message`.
    pub fn new(kind: SetupKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The step that failed.
    pub fn kind(&self) -> SetupKind {
        self.kind
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

impl From<ringperf_metrics::lab::lifecycle::LifecycleError> for RunError {
    fn from(e: ringperf_metrics::lab::lifecycle::LifecycleError) -> Self {
        Self::new(SetupKind::ServerLifecycle, e.to_string())
    }
}

impl From<ringperf_io::net::TlsSetupError> for RunError {
    fn from(e: ringperf_io::net::TlsSetupError) -> Self {
        Self::new(SetupKind::Tls, e.to_string())
    }
}
