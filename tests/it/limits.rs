//! A concurrency the process cannot open is refused before the run starts (issue #22:
//! `--concurrency 100000` ran, 96.5 % of its requests failing, and exited 0); one it can open
//! runs within the limit (#41: waiting slots hold no descriptor).

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

/// A closed loop's concurrency ramp holds one timer descriptor per worker, not one per waiting
/// slot (#41, 100,000 streams over shards of ~16,700 under a 20,000-descriptor limit): under a
/// limit that fits 300 sockets but not a timerfd beside each, a 300-slot ramp on io_uring sends
/// every request, all 300 in flight at once, with no error and no descriptor wait.
#[test]
#[cfg_attr(
    missing_tool_prlimit,
    ignore = "prlimit is not on PATH (docs/testing.md)"
)]
fn a_concurrency_ramp_holds_no_descriptor_per_waiting_slot() {
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
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(2),
        ttft: std::time::Duration::from_millis(1500),
        truth_log: true,
        ..Default::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let (slots, nofile) = (300, 420);
    let out = std::process::Command::new("timeout")
        .args(["-s", "KILL", "120", "prlimit"])
        .arg(format!("--nofile={nofile}:{nofile}"))
        .arg(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--tokenizer",
            "builtin",
            "--streaming",
        ])
        .args(["--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"])
        .args(["--io-driver", "uring", "--workers-max", "1", "--isl", "8"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .args(["--concurrency", &slots.to_string()])
        .args(["--request-count", &slots.to_string()])
        .args(["--concurrency-ramp-duration", "0.5"])
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .expect("prlimit runs the binary");
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let j = common::read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(
        j["request_count"]["avg"].as_f64(),
        Some(slots as f64),
        "{e}"
    );
    assert_eq!(j["error_summary"], serde_json::json!([]), "{e}");
    let health = &j["ringperf"]["client_health"];
    // The verdict itself is timing (a loaded CI host can lag by a millisecond); what this test is
    // about is that no connect waited for a descriptor.
    assert_eq!(health["observed"].get("descriptor_waits"), None, "{health}");
    assert!(
        !health["reasons"].to_string().contains("file descriptors"),
        "{health}"
    );
    let truth = common::truth_of(&server, slots);
    assert_eq!(truth.len(), slots);
    let most = truth
        .iter()
        .map(|t| {
            truth
                .iter()
                .filter(|u| u.arrival_ns <= t.arrival_ns && t.arrival_ns < u.end_ns)
                .count()
        })
        .max();
    assert_eq!(
        most,
        Some(slots),
        "the ramp's slots were all in flight at once"
    );
}
