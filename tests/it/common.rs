//! Helpers shared by the integration tests: a `Config` from a command line, and the run's JSON
//! and JSONL artifacts read back. (Each test binary uses a part of them.)
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command as Process, Output, Stdio};
use std::sync::Arc;

use ringperf::config::Config;
use ringperf_mock::mock::{MockConfig, MockServer, OutputLen, PromptTokenizer};
use serde_json::Value;

/// The validated configuration of a `ringperf profile …` command line (split on whitespace).
pub fn config(line: &str) -> Config {
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    Config::from_plan(&ringperf::plan::Plan::parse(&argv).expect("parses"), false)
        .expect("valid config")
}

/// A loopback port that refuses every connection for as long as this value lives: a TCP socket
/// bound to it that never listens. Binding a listener, noting its port and closing it is racy:
/// tests run in parallel processes, and another test's listener could be given the port between
/// the close and the connect (its server would then accept a connection meant to be refused).
pub struct RefusedPort {
    _socket: socket2::Socket,
    pub port: u16,
}

impl RefusedPort {
    pub fn new() -> Self {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("a TCP socket");
        let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        socket.bind(&any.into()).expect("bind 127.0.0.1:0");
        let port = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .expect("an IPv4 address")
            .port();
        Self {
            _socket: socket,
            port,
        }
    }
}

/// The configuration error of a `ringperf profile …` command line whose flags parse but are
/// refused when the configuration is validated.
pub fn config_error(line: &str) -> ringperf::config::ConfigError {
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    Config::from_plan(&ringperf::plan::Plan::parse(&argv).expect("parses"), false)
        .expect_err("refused")
}

/// A JSON artifact.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("json exists")).expect("valid JSON")
}

/// Spawns `cmd` (stdout and stderr captured), waits until `file` holds its first bytes (at most
/// two minutes), sends the child SIGINT and returns what it printed once it has ended.
pub fn interrupt_once_written(mut cmd: Process, file: &Path) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let step = std::time::Duration::from_millis(20);
    let mut waited = std::time::Duration::ZERO;
    while std::fs::metadata(file).map_or(true, |m| m.len() == 0) {
        assert!(
            waited < std::time::Duration::from_secs(120),
            "{} never written",
            file.display()
        );
        std::thread::sleep(step);
        waited += step;
    }
    // SAFETY: sending SIGINT to the child we spawned; its pid is valid until we wait on it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().expect("the child is waited on")
}

/// A JSONL artifact, every line complete and JSON.
/// A run's profiling window in wall-clock epoch ns: the profiling phase's in its phase manifest
/// (a run of several phases), else the summary's (`ringperf.clock.start_ns` / `end_ns`; a run of
/// one phase has no manifest, as in AIPerf).
pub fn profiling_window(dir: &Path) -> (u64, u64) {
    let manifest = dir.join("phase_manifest.json");
    if manifest.exists() {
        let m = read_json(&manifest);
        let p = m["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase_kind"] == "profiling")
            .expect("a profiling phase");
        return (
            p["start_ns"].as_u64().unwrap(),
            p["end_ns"].as_u64().unwrap(),
        );
    }
    let clock = &read_json(&dir.join("profile_export_aiperf.json"))["ringperf"]["clock"];
    (
        clock["start_ns"].as_u64().unwrap(),
        clock["end_ns"].as_u64().unwrap(),
    )
}

pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("jsonl exists");
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "every JSONL line is complete"
    );
    text.lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// An in-process mock that keeps every request body and reply text in its truth log, answers
/// `tokens` output tokens, and counts prompt tokens exactly (builtin tokenizer).
pub fn recording_mock(tokens: u64) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        output_tokens: OutputLen::Fixed(tokens),
        truth_log: true,
        record_bodies: true,
        prompt_tokenizer: Some(PromptTokenizer(Arc::new(
            ringperf_workload::workload::Tokenizer::builtin(),
        ))),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// The truth log of `server` once it holds `n` entries (a reply's entry is filed just after its
/// last byte is written, so a client that exits on that byte can be faster); at most 5 s.
pub fn truth_of(server: &MockServer, n: usize) -> Vec<ringperf_mock::mock::TruthEntry> {
    let log = server.truth();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while log.len() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    log.entries()
}

/// Runs the `ringperf profile` binary against `server` (streaming chat, concurrency 2, builtin
/// tokenizer) with fast server-metrics collection (50 ms interval, 0.3 s flush period);
/// `extra` flags are appended and `env` variables win over those defaults. The run must exit 0.
pub fn profile_binary(
    server: &MockServer,
    dir: &Path,
    requests: u32,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.3")
        .envs(env.iter().copied())
        .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--concurrency", "2"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--request-count")
        .arg(requests.to_string())
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether a test may use its external `tool` (`present`: the test's own check that it runs).
/// Without it the test is skipped, `skip` printed to say so; under `CI=true` a missing tool fails
/// the test instead, so that CI never passes a test it did not run.
pub fn require_tool(tool: &str, present: bool, skip: &str) -> bool {
    if present {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{tool} is required under CI=true: {skip}"
    );
    eprintln!("{skip}");
    false
}

/// Whether `program arg` runs and exits 0 (a tool's `--version` or `-V`).
pub fn tool_runs(program: &str, arg: &str) -> bool {
    std::process::Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The test binary's allocator: the system's, counting the bytes each thread holds, so that a
/// test can tell what a call keeps ([`live_bytes`]).
struct Counting;

thread_local! {
    static LIVE: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

fn count(delta: i64) {
    // During a thread's teardown the counter may be gone: that thread's count no longer matters.
    let _ = LIVE.try_with(|c| c.set(c.get() + delta));
}

// SAFETY: every call is passed to `System` unchanged; the counting touches a `const`
// thread-local `Cell` only, which never allocates.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        count(-(layout.size() as i64));
        // SAFETY: `ptr` came from `System` with `layout` (every allocation goes there).
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size() as i64);
        // SAFETY: as `alloc`.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        count(new as i64 - layout.size() as i64);
        // SAFETY: as `dealloc` for `ptr` and `layout`; `new` is the caller's valid size.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Bytes allocated and not yet freed by the calling thread (its frees of other threads'
/// allocations counted against it).
pub fn live_bytes() -> i64 {
    LIVE.with(std::cell::Cell::get)
}

/// Every leaf of `v` as `(path, value)`: `.a.b`, `.list[0].c`; an empty mapping or list is a leaf.
pub fn leaves(path: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                leaves(&format!("{path}.{k}"), x, out);
            }
        }
        Value::Array(l) if !l.is_empty() => {
            for (i, x) in l.iter().enumerate() {
                leaves(&format!("{path}[{i}]"), x, out);
            }
        }
        _ => out.push((path.to_string(), v.clone())),
    }
}
