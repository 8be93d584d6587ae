//! A concurrency the process cannot open is refused before the run starts (issue #22:
//! `--concurrency 100000` ran, 96.5 % of its requests failing, and exited 0).

use std::process::Output;

use crate::common;

/// The binary under `prlimit --nofile=N:N` (soft and hard, so ringperf cannot raise it) against
/// `server`, closed loop at `concurrency`.
fn run_limited(
    server: &ringperf_mock::mock::MockServer,
    nofile: u32,
    concurrency: u32,
    dir: &std::path::Path,
) -> Output {
    std::process::Command::new("timeout")
        .args(["-s", "KILL", "120", "prlimit"])
        .arg(format!("--nofile={nofile}:{nofile}"))
        .arg(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--tokenizer", "builtin"])
        .args(["--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--concurrency")
        .arg(concurrency.to_string())
        .args(["--request-count", "40", "--isl", "8"])
        .arg("--artifact-dir")
        .arg(dir)
        .output()
        .expect("prlimit runs the binary")
}

#[test]
#[cfg_attr(
    missing_tool_prlimit,
    ignore = "prlimit is not on PATH (docs/testing.md)"
)]
fn a_concurrency_over_the_descriptor_limit_is_refused_before_any_request() {
    let present = std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_ok();
    if !common::require_tool(
        "prlimit",
        present,
        "SKIP: prlimit (util-linux) is not installed",
    ) {
        return;
    }
    let server = common::recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    // 200 sockets cannot fit in 64 descriptors.
    let out = run_limited(&server, 64, 200, &dir.path().join("over"));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    for part in [
        "--concurrency 200 needs about",
        "limit of 64 (RLIMIT_NOFILE",
        "ulimit -n",
    ] {
        assert!(e.contains(part), "{part}: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
    assert_eq!(
        server.truth().entries().len(),
        0,
        "no request was sent: {e}"
    );
    assert!(
        !dir.path()
            .join("over")
            .join("profile_export.jsonl")
            .exists(),
        "no artifact of a run that did not start"
    );
    // Within the same limit, a small concurrency runs every request.
    let out = run_limited(&server, 64, 4, &dir.path().join("within"));
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert_eq!(server.truth().entries().len(), 40, "{e}");
}
