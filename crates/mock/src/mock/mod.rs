//! The mock OpenAI-compatible server used by tests, the README demo and perf work.
//!
//! It serves `POST /v1/chat/completions` and `POST /v1/completions` (streamed as vLLM does, or
//! whole), `GET /v1/models`, `GET /health` and a vLLM-shaped `GET /metrics`, with a configured
//! time to first token, inter-token delay and output length. It is written independently of the
//! client's `http` and `sse` modules (httparse for the request head, responses written by hand), so
//! the two never share a blind spot, and it is built to cost far less per request than any client.
//!
//! `usage.prompt_tokens`: with a [`PromptTokenizer`] (what `--mock` and `mock-server` use) it is
//! exact, the tokenizer's count of the prompt texts, cached per distinct body so the cost is paid
//! once per dataset entry; without one it is approximate, the whitespace-separated words. Output
//! text is made of words that are each exactly one `o200k_base` token, so output counts are exact.
//! Which words: a function of [`MockConfig::seed`] and the request body's bytes only (see
//! `tokens::reply_start`), so the same request gets the same reply in every run, whichever thread
//! serves it and whatever came before; multi-turn tests can predict the history a client sends
//! back.
//!
//! Threads: `threads` OS threads, each optionally pinned, each with its own monoio runtime. The
//! listening socket is bound once and every thread accepts on its own duplicate of it
//! (`try_clone`), so the port is known before any thread starts (port 0 works) and the kernel
//! hands each connection to whichever thread is waiting. A connection stays on the thread that
//! accepted it.
//!
//! Pacing and ground truth: the head (and chat's role chunk) go out on arrival, the first token
//! event `ttft` after arrival, each next one `itl` after the previous write, and the finish /
//! usage / `[DONE]` events with the last token event. Waits use `ringperf_io::timer` (the client's
//! precise timer): on io_uring a timerfd per connection, made on its first real wait and read
//! through the ring, so each delay is kept to tens of µs, never early; on epoll monoio's
//! millisecond timer (up to ~1 ms late). Why gaps count from the previous write rather than from
//! a fixed grid: see `respond`.
//! Every event with its own intended time gets its own write; events due at the same instant
//! (zero delays) share one, which keeps the zero-delay mock far cheaper than any client. With
//! `truth_log` on, the server stamps (raw `CLOCK_MONOTONIC`) each request's arrival and the instant
//! just before each write, and keeps its `X-Correlation-ID`; with [`MockConfig::record_bodies`]
//! as well, the request body and the reply text. See [`TruthLog`].
//!
//! Faults: [`MockConfig::faults`] makes a seeded share of completion requests misbehave (resets,
//! error statuses, silence, trickling, broken chunk framing, garbage or `event: error` SSE, huge
//! bodies; see [`Fault`] and, for the `--mock-faults` syntax, [`FaultList`]); the truth log
//! records which request got which. [`MockServer::pause`] / [`MockServer::resume`] make the
//! server go away (listener and connections closed) and come back on the same port.
//!
//! # Layers
//!
//! Bottom to top; a file imports only files listed before it (never one beside or above it), and
//! this file only declares the modules and re-exports their public items.
//!
//! 1. Data and wire encoding, no server state: `capacity` (the queue of a mock with at most N
//!    requests in service), `tokens` (output words, seeded generator), `fault`
//!    (fault kinds and their syntax), `body` (request bodies), `metrics` (counters and the
//!    vLLM page); then `wire` (response bytes, and `send`), `truth` (the truth log) and
//!    `settings` ([`MockConfig`] and its parts).
//! 2. Fault actions: `misbehave`, on whatever stream or buffer it is handed.
//! 3. Thread state: `shared` (what every server thread reads), `fast` (the fast mode's precomputed
//!    stream bytes), then `worker` (one thread's state, shared by
//!    its connections).
//! 4. The connection loop: `respond` (completion responses) and `metrics_modes` (the metrics
//!    routes), under `conn` (one connection); then `tls`, which terminates HTTPS
//!    ([`MockConfig::tls`]) and relays the plaintext to a `conn` connection.
//! 5. The server: `server` (threads, accept loop, [`MockServer`]), then `serve` (run until a
//!    signal, write the truth log).
//!
//! Outside itself the mock uses `ringperf_wire::clock`, `ringperf_wire::endpoint`, `ringperf_io::signals`,
//! `ringperf_io::timer` and the tokenizer of `ringperf_workload::workload`; never `ringperf::cli` or `ringperf::config` (the `mock-server` flags
//! are validated into a [`MockConfig`] by `config::mock`).

mod apis;
mod body;
mod capacity;
mod conn;
mod control;
mod dcgm;
mod fast;
mod fault;
pub mod media;
mod metrics;
mod metrics_modes;
mod misbehave;
mod respond;
mod serve;
mod server;
mod settings;
mod shared;
mod tls;
mod tokens;
mod truth;
mod videos;
mod wire;
mod worker;

#[cfg(test)]
mod tests;

pub use control::ControlCall;
pub use dcgm::{DcgmPage, gpu_uuid, power_w};
pub use fault::{
    Fault, FaultList, FaultParseError, FaultSpec, SLOW_LORIS_BYTE_INTERVAL, SSE_ERROR_COMMENT,
    validate as validate_faults,
};
pub use metrics_modes::sglang_spec_values;
pub use serve::serve;
pub use server::{MockServer, start};
pub use settings::{Driver, MetricsMode, MockConfig, MockTls, OutputLen, PromptTokenizer};
pub use truth::{TruthEntry, TruthLog};
pub use videos::{VideoJob, VideoJobConfig};
pub use wire::SpecDecodeStats;

/// The head the mock answers a streamed request with (a kept-alive connection), byte for byte,
/// for tests that compare what a client recorded with what the mock sent.
#[must_use]
pub fn stream_response_head() -> Vec<u8> {
    let mut out = Vec::new();
    wire::stream_head(&mut out, false);
    out
}
