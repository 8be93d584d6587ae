//! The mock OpenAI-compatible server used by tests, the README demo and perf work.
//!
//! It serves `POST /v1/chat/completions` and `POST /v1/completions` (streamed as vLLM does, or
//! whole), `GET /v1/models`, `GET /health` and a vLLM-shaped `GET /metrics`, with a configured
//! time to first token, inter-token delay and output length. It is written independently of the
//! client's `http` and `sse` modules (httparse for the request head, responses written by hand), so
//! the two never share a blind spot, and it is built to cost far less per request than any client.
//!
//! `usage.prompt_tokens` is approximate: the whitespace-separated words of the prompt texts (a
//! tokenizer would cost more than everything else the mock does per request). Output text is made
//! of words that are each exactly one `o200k_base` token, so output counts are exact.
//!
//! Threads: `threads` OS threads, each optionally pinned, each with its own monoio runtime. The
//! listening socket is bound once and every thread accepts on its own duplicate of it
//! (`try_clone`), so the port is known before any thread starts (port 0 works) and the kernel
//! hands each connection to whichever thread is waiting. A connection stays on the thread that
//! accepted it.
//!
//! Pacing and ground truth: the head (and chat's role chunk) go out on arrival, the first token
//! event `ttft` after arrival, each next one `itl` after the previous write (monoio timers, 1 ms
//! resolution, never early), and the finish / usage / `[DONE]` events with the last token event.
//! Every event with its own intended time gets its own write; events due at the same instant
//! (zero delays) share one, which keeps the zero-delay mock far cheaper than any client. With
//! `truth_log` on, the server stamps (raw `CLOCK_MONOTONIC`) each request's arrival and the instant
//! just before each write. See [`TruthLog`].
//!
//! Faults: [`MockConfig::faults`] makes a seeded share of completion requests misbehave (resets,
//! error statuses, silence, trickling, broken chunk framing, garbage or `event: error` SSE, huge
//! bodies; see [`Fault`] and, for the `--mock-faults` syntax, [`FaultList`]); the truth log
//! records which request got which. [`MockServer::pause`] / [`MockServer::resume`] make the
//! server go away (listener and connections closed) and come back on the same port.

mod body;
mod conn;
mod fault;
mod metrics;
mod metrics_modes;
mod misbehave;
mod respond;
mod serve;
mod server;
mod tokens;
mod truth;
mod wire;

pub use serve::serve;

#[cfg(test)]
mod tests;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use fault::{
    Fault, FaultList, FaultParseError, FaultSpec, SLOW_LORIS_BYTE_INTERVAL, SSE_ERROR_COMMENT,
    validate as validate_faults,
};
pub use metrics_modes::MetricsMode;
pub use truth::{TruthEntry, TruthLog};

/// How many output tokens a request gets (before the request's own max tokens cap).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OutputLen {
    /// Always `n` tokens.
    Fixed(u64),
    /// Uniform in `min..=max`, drawn per request from the seeded generator.
    Uniform {
        /// Smallest length.
        min: u64,
        /// Largest length (inclusive).
        max: u64,
    },
}

/// Which monoio driver the server threads run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum Driver {
    /// io_uring when the kernel allows it, else the epoll driver.
    #[default]
    Auto,
    /// io_uring only; start fails if it is unavailable.
    Uring,
    /// The epoll (legacy) driver.
    Legacy,
}

/// Everything the mock server can be told.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MockConfig {
    /// Address to listen on; port 0 picks a free port (see [`MockServer::addr`]).
    pub bind: SocketAddr,
    /// Server threads (at least 1).
    pub threads: usize,
    /// Cores to pin the threads to (thread `i` to `pin_cores[i % len]`); `None` leaves them free.
    /// A refused pin is reported on stderr and otherwise ignored.
    pub pin_cores: Option<Vec<usize>>,
    /// Delay from a request's arrival to its first token event.
    pub ttft: Duration,
    /// Delay between consecutive token events.
    pub itl: Duration,
    /// Output (content) tokens per request.
    pub output_tokens: OutputLen,
    /// Tokens packed into one SSE event (1 = one token per event; more, like vLLM under load).
    pub tokens_per_event: usize,
    /// Reasoning tokens streamed first as `reasoning_content` (0 = none). They count towards the
    /// request's max tokens, before the content.
    pub reasoning_tokens: usize,
    /// Seed of the output lengths and words.
    pub seed: u64,
    /// Model name served and reported.
    pub model: String,
    /// Keep the per-request [`TruthLog`].
    pub truth_log: bool,
    /// monoio driver choice.
    pub io_driver: Driver,
    /// Cap the output at the request's `max_completion_tokens` / `max_tokens` (as a real server
    /// does); `false` always sends the configured length.
    pub respect_max_tokens: bool,
    /// Faults injected into completion requests, each into its share of them (see [`Fault`] and
    /// [`FaultList`] for the command-line syntax). Empty: every request is served normally.
    pub faults: Vec<FaultSpec>,
    /// What `/metrics` and `/prometheus/metrics` answer.
    #[serde(default)]
    pub metrics_mode: MetricsMode,
    /// Count `usage.prompt_tokens` exactly with this tokenizer (the text of the payload's
    /// messages or prompt, joined by a space, as a client counts its ISL), cached per distinct
    /// body; without it the count is approximate (whitespace words).
    #[serde(skip)]
    pub prompt_tokenizer: Option<PromptTokenizer>,
}

/// A shared tokenizer for exact prompt counts (compared by identity).
#[derive(Clone)]
pub struct PromptTokenizer(pub Arc<crate::workload::Tokenizer>);

impl std::fmt::Debug for PromptTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PromptTokenizer")
    }
}

impl PartialEq for PromptTokenizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for MockConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            threads: 1,
            pin_cores: None,
            ttft: Duration::ZERO,
            itl: Duration::ZERO,
            output_tokens: OutputLen::Fixed(16),
            tokens_per_event: 1,
            reasoning_tokens: 0,
            seed: 0,
            model: "mock-model".to_owned(),
            truth_log: false,
            io_driver: Driver::Auto,
            respect_max_tokens: true,
            faults: Vec::new(),
            metrics_mode: MetricsMode::Vllm,
            prompt_tokenizer: None,
        }
    }
}

/// A running mock server. Dropping it stops it.
pub struct MockServer {
    /// The address the server listens on (the real port when `bind` had port 0).
    pub addr: SocketAddr,
    truth: Arc<TruthLog>,
    inner: Option<server::Running>,
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Binds, spawns the server threads and returns once every thread is serving.
///
/// Fails when the address cannot be bound, a runtime cannot be built (e.g. [`Driver::Uring`]
/// without io_uring), or the config is unusable (zero `tokens_per_event`).
pub fn start(cfg: MockConfig) -> io::Result<MockServer> {
    let running = server::Running::start(cfg)?;
    Ok(MockServer {
        addr: running.addr(),
        truth: running.truth(),
        inner: Some(running),
    })
}

impl MockServer {
    /// The truth log (empty unless `truth_log` was set).
    pub fn truth(&self) -> Arc<TruthLog> {
        Arc::clone(&self.truth)
    }

    /// The current `/metrics` page.
    pub fn metrics_text(&self) -> String {
        self.inner
            .as_ref()
            .map(server::Running::metrics_text)
            .unwrap_or_default()
    }

    /// The server goes away: stops accepting, closes the listening socket and every connection
    /// (in-flight responses are cut and are not in the truth log), and joins the threads. Clients
    /// then get connection refused until [`Self::resume`]. Does nothing when already paused.
    pub fn pause(&mut self) {
        if let Some(r) = self.inner.as_mut() {
            r.pause();
        }
    }

    /// The server comes back on the same address (same port), with the same configuration,
    /// truth log and metrics (the per-thread generators start again from the seed). Does nothing
    /// when not paused. Fails when the
    /// address cannot be bound again (another process took the port meanwhile).
    pub fn resume(&mut self) -> io::Result<()> {
        match self.inner.as_mut() {
            Some(r) => r.resume(),
            None => Ok(()),
        }
    }

    /// Whether the server is paused (see [`Self::pause`]).
    pub fn is_paused(&self) -> bool {
        self.inner.as_ref().is_some_and(server::Running::is_paused)
    }

    /// Stops accepting, ends every thread (in-flight responses are cut) and joins them.
    pub fn stop(mut self) {
        if let Some(r) = self.inner.take() {
            r.stop();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(r) = self.inner.take() {
            r.stop();
        }
    }
}

/// Runs a server until `stop` receives a message or its sender is dropped; `ready` is called
/// with the server once it is serving (e.g. to print the address).
pub fn run_until(
    cfg: MockConfig,
    stop: &crossbeam_channel::Receiver<()>,
    ready: impl FnOnce(&MockServer),
) -> io::Result<()> {
    let server = start(cfg)?;
    ready(&server);
    let _ = stop.recv();
    server.stop();
    Ok(())
}

/// Runs a server until the process receives SIGINT or SIGTERM, without a truth log file (see
/// [`serve`], which it is).
pub fn run_forever(cfg: MockConfig) -> io::Result<()> {
    serve(cfg, None)
}
