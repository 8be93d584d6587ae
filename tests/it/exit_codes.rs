//! README's exit-code table, end to end through the binary, for the rows the other modules do
//! not already drive through it: 1 (no request succeeded), 3 (`--failed-request-threshold`),
//! and 2 for the failures of `server-metrics` and `mock-server`. (0: `cli`, `first_run`; 2 for
//! `profile` flags, URLs, the tokenizer and the artifact directory: `cli`, `datasets`; 2 for
//! `merge` and `plot`: `merge`, `plot`; 4: `merge`; 5: `health`; 130: `e2e`, `multirun`.)

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `ringperf profile` against a port nothing listens on, with `extra` flags.
fn profile_refused(dir: &Path, extra: &[&str]) -> Output {
    let refused = crate::common::RefusedPort::new();
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--concurrency", "2"])
        .args(["--no-server-metrics", "--no-gpu-telemetry"])
        .arg("--url")
        .arg(format!("http://127.0.0.1:{}", refused.port))
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("the binary runs")
}

/// Runs the binary with `args`; a process still running after `limit` is killed and fails
/// the test (a server that should not have started).
fn run_bounded(args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{args:?} still running after {limit:?}: {}",
                text(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("wait")
}

#[test]
fn no_request_succeeded_exits_1_and_names_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = profile_refused(dir.path(), &["--request-count", "4", "--isl", "8"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ringperf: no request succeeded (4 failed); most common error: "),
        "{err}"
    );
    // Every artifact is still written.
    assert!(dir.path().join("profile_export_aiperf.json").is_file());
}

/// A refused connection names the URL it was for, `scheme://host:port/path`, in every record's
/// error, in the JSON's `error_summary` and in the end-of-run line.
#[test]
fn a_refused_connection_names_its_url() {
    let dir = tempfile::tempdir().unwrap();
    let refused = crate::common::RefusedPort::new();
    let port = refused.port;
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--ui",
            "none",
            "--tokenizer",
            "builtin",
        ])
        .args([
            "--no-server-metrics",
            "--no-gpu-telemetry",
            "--request-count",
            "3",
        ])
        .args(["--isl", "8", "--endpoint-type", "completions", "--url"])
        .arg(format!("127.0.0.1:{port}/base"))
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let url = format!("http://127.0.0.1:{port}/base/v1/completions");
    let message = format!("cannot connect to {url}: Connection refused (os error 111)");
    assert!(
        err.contains(&format!(
            "most common error: {message} (ClientConnectorError)"
        )),
        "{err}"
    );
    let recs = crate::common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len(), 3);
    for r in recs {
        assert_eq!(r["error"]["message"], message.as_str(), "{r}");
    }
    let summary = crate::common::read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(
        summary["error_summary"][0]["error_details"]["message"],
        message.as_str()
    );
}

#[test]
fn failed_request_threshold_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let out = profile_refused(
        dir.path(),
        &[
            "--request-count",
            "2000",
            "--isl",
            "8",
            "--failed-request-threshold",
            "0.5",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("ringperf: stopping: "), "{err}");
    assert!(err.contains("over --failed-request-threshold 0.5"), "{err}");
    assert!(dir.path().join("profile_export_aiperf.json").is_file());
}

#[test]
fn server_metrics_failures_exit_2_with_the_command_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let missing = missing.to_str().unwrap();
    // A flag error.
    let out = run_bounded(
        &[
            "server-metrics",
            "--from-jsonl",
            missing,
            "--slice-duration",
            "0",
        ],
        Duration::from_secs(60),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("ringperf: server-metrics: --slice-duration must be a positive number"),
        "{err}"
    );
    // An input that cannot be read.
    let out = run_bounded(
        &["server-metrics", "--from-jsonl", missing],
        Duration::from_secs(60),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("ringperf: server-metrics: "), "{err}");
    assert!(err.contains(missing), "{err}");
}

#[test]
fn mock_server_failures_exit_2_with_the_command_named() {
    // A flag error: the address does not parse.
    let out = run_bounded(
        &["mock-server", "--bind", "not-an-address"],
        Duration::from_secs(60),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("ringperf: mock-server: --bind not-an-address: "),
        "{err}"
    );
    // A flag error: a DCGM log without the DCGM page.
    let out = run_bounded(
        &["mock-server", "--dcgm-log", "/tmp/never-written.jsonl"],
        Duration::from_secs(60),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("ringperf: mock-server: --dcgm-log needs"),
        "{err}"
    );
    // The server cannot start: an address of no local interface (TEST-NET-1) cannot be bound.
    let out = run_bounded(
        &["mock-server", "--bind", "192.0.2.1:8000"],
        Duration::from_secs(120),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("ringperf: mock-server: "), "{err}");
}
