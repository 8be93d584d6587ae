//! SLO search end to end: the `ringperf profile` binary searching a mock of known capacity
//! (docs/search.md). The mock serves at most 2 requests at once, each for
//! S = TTFT + 5 × ITL = 80 + 5 × 40 = 280 ms; a closed loop of c clients over that capacity
//! waits (c - 2) / 2 × S for a slot, so p95 TTFT is 80 ms up to concurrency 2 and about
//! 80 + 140 = 220 ms at 3. Under a 150 ms TTFT SLA (70 ms from either, room for a loaded
//! machine) the answer is concurrency 2, known before anything runs.

use std::time::Duration;

use ringperf::mock::{MockConfig, OutputLen};

use crate::common::{profile_binary, read_json};

const S_SECONDS: f64 = 0.280;
const CAPACITY: u32 = 2;
const TOKENS: u64 = 6;

#[test]
fn max_concurrency_under_a_ttft_sla_finds_the_mock_capacity() {
    let server = ringperf::mock::start(MockConfig {
        ttft: Duration::from_millis(80),
        itl: Duration::from_millis(40),
        output_tokens: OutputLen::Fixed(TOKENS),
        capacity: CAPACITY,
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out = profile_binary(
        &server,
        dir.path(),
        6,
        &[
            "--search-recipe",
            "max-concurrency-under-sla",
            "--ttft-sla-ms",
            "150",
            "--concurrency-max",
            "8",
            "--no-server-metrics",
        ],
        &[],
    );
    let truth = server.truth();
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer = stdout
        .lines()
        .find(|l| l.starts_with("max throughput under p95 TTFT < 150 ms: "))
        .unwrap_or_else(|| panic!("no answer line in:\n{stdout}"));
    assert!(answer.ends_with(" tok/s at concurrency 2"), "{answer}");

    let h = read_json(&dir.path().join("search_history.json"));
    assert_eq!(h["recipe"], "max-concurrency-under-sla");
    assert_eq!(h["config"]["planner"], "smooth_isotonic");
    assert_eq!(h["convergence_reason"], "smooth_isotonic_precision_reached");
    let b = &h["boundary_summary"];
    assert_eq!(b["swept_dim_path"], "phases.profiling.concurrency");
    assert_eq!(b["feasible_max"]["value"], 2);
    assert_eq!(b["infeasible_min"]["value"], 3);
    assert_eq!(
        b["infeasible_min"]["first_breach"]["metric_tag"],
        "time_to_first_token"
    );
    // The probe doubles from 1 until a fail (4), then bisects [2, 4]: 1, 2, 4, 3.
    let its = h["iterations"].as_array().unwrap();
    let run: Vec<u64> = its
        .iter()
        .map(|i| {
            i["variation_values"]["phases.profiling.concurrency"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(run, [1, 2, 4, 3]);
    let feasible: Vec<bool> = its.iter().map(|i| i["feasible"] == true).collect();
    assert_eq!(feasible, [true, true, false, false]);

    // Each point is a variation of the sweep runner, in its own directory, with the sweep
    // aggregate over them.
    for i in 0..4 {
        let summary = dir
            .path()
            .join(format!("search_iter_{i:04}"))
            .join("profile_export_aiperf.json");
        let s = read_json(&summary);
        // Throughput never beats the capacity: 2 slots × 6 tokens per 280 ms (the mock's
        // plan is a lower bound of every real time, so this holds however slow the machine).
        let tps = s["output_token_throughput"]["avg"].as_f64().unwrap();
        assert!(
            tps <= f64::from(CAPACITY) * TOKENS as f64 / S_SECONDS + 1e-9,
            "{i}: {tps}"
        );
    }
    assert!(
        dir.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json")
            .exists()
    );

    // The mock's own record: 6 requests per point; none waited at concurrency 1 and 2 (the
    // first 12 by arrival), and some did at 3 and 4.
    let entries = truth.entries();
    assert_eq!(entries.len(), 24);
    assert!(entries[..12].iter().all(|e| e.queue_wait_ns == 0));
    assert!(entries[12..].iter().any(|e| e.queue_wait_ns > 0));
}

#[test]
fn search_flags_are_refused_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, says) in [
        (
            vec!["--search-recipe", "max-throughput-ttft-sla"],
            "requires --ttft-sla-ms",
        ),
        (
            vec![
                "--search-recipe",
                "max-concurrency-under-sla",
                "--ttft-sla-ms",
                "50",
                "--search-style",
                "optuna",
            ],
            "Python only",
        ),
        (
            vec![
                "--search-recipe",
                "concurrency-ramp",
                "--concurrency",
                "1,2",
            ],
            "list value",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "-m",
                "m",
                "--url",
                "http://127.0.0.1:9",
                "--streaming",
            ])
            .arg("--artifact-dir")
            .arg(dir.path())
            .args(&flags)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
    }
}
