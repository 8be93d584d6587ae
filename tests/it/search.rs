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

/// The grid recipes' derived files on the same mock, whose answers are known in advance: a
/// ramp 1, 2, 4 whose request latency is S up to 2 and about 2 × S at 4 (knee 4, past 50 %:
/// 140 ms from either side);
/// and a grid max-concurrency-under-sla over 1, 2, 3, 4 (TTFT p95 < 150 ms: 2 passes, 3
/// fails). Each file's figures are recomputed here from the variations' own summaries, and its
/// key set is the one AIPerf wrote (tests/data/aiperf-search/).
#[test]
fn grid_recipes_write_their_derived_files() {
    let server = ringperf::mock::start(MockConfig {
        ttft: Duration::from_millis(80),
        itl: Duration::from_millis(40),
        output_tokens: OutputLen::Fixed(TOKENS),
        capacity: CAPACITY,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let ramp = tempfile::tempdir().unwrap();
    let ramp_args = [
        "--search-recipe",
        "concurrency-ramp",
        "--concurrency-max",
        "4",
        "--concurrency-steps",
        "3",
        "--degradation-threshold",
        "0.5",
        "--no-server-metrics",
    ];
    let out = profile_binary(&server, ramp.path(), 6, &ramp_args, &[]);
    let grid = tempfile::tempdir().unwrap();
    let grid_args = [
        "--search-recipe",
        "max-concurrency-under-sla",
        "--search-style",
        "grid",
        "--ttft-sla-ms",
        "150",
        "--concurrency-max",
        "4",
        "--no-server-metrics",
    ];
    profile_binary(&server, grid.path(), 6, &grid_args, &[]);
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("degradation_knee.json"), "{stdout}");

    let summary = |dir: &std::path::Path, c: u64| {
        read_json(&dir.join(format!("concurrency_{c}/profile_export_aiperf.json")))
    };
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-search");
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };

    // The knee: one trial, so the request latency block's mean (its avg) per concurrency.
    let knee = read_json(&ramp.path().join("sweep_aggregate/degradation_knee.json"));
    let aiperf = read_json(&data.join("concurrency-ramp/sweep_aggregate/degradation_knee.json"));
    assert_eq!(keys(&knee), keys(&aiperf));
    assert_eq!(keys(&knee["all_points"][0]), keys(&aiperf["all_points"][0]));
    let lat: Vec<(u64, f64)> = [1, 2, 4]
        .map(|c| {
            (
                c,
                summary(ramp.path(), c)["request_latency"]["avg"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .to_vec();
    let cutoff = lat[0].1 * 1.5;
    let first = lat[1..].iter().find(|p| p.1 > cutoff).unwrap();
    assert_eq!(first.0, 4, "the capacity's knee: {lat:?}");
    assert_eq!(knee["threshold_pct"], 0.5);
    assert_eq!(knee["baseline_concurrency"], 1);
    assert_eq!(knee["baseline_p99"].as_f64(), Some(lat[0].1));
    assert_eq!(knee["knee_concurrency"], 4);
    assert_eq!(knee["knee_p99"].as_f64(), Some(first.1));
    let pts: Vec<(u64, f64)> = knee["all_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["concurrency"].as_u64().unwrap(),
                p["p99"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(pts, lat);

    // The SLA boundary: p95 TTFT of each concurrency's own run against 150 ms.
    let breach = read_json(&grid.path().join("sweep_aggregate/sla_breach.json"));
    let aiperf = read_json(&data.join("sla-grid/sweep_aggregate/sla_breach.json"));
    assert_eq!(keys(&breach), keys(&aiperf));
    assert_eq!(
        keys(&breach["all_points"][3]),
        keys(&aiperf["all_points"][3])
    );
    assert_eq!(
        keys(&breach["first_failing_breach"]),
        keys(&aiperf["first_failing_breach"])
    );
    let ttft: Vec<f64> = [1, 2, 3, 4]
        .map(|c| {
            summary(grid.path(), c)["time_to_first_token"]["p95"]
                .as_f64()
                .unwrap()
        })
        .to_vec();
    let feasible: Vec<bool> = breach["all_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["feasible"] == true)
        .collect();
    assert_eq!(
        feasible,
        ttft.iter().map(|&t| t < 150.0).collect::<Vec<_>>()
    );
    assert_eq!(feasible, [true, true, false, false], "{ttft:?}");
    assert_eq!(breach["max_passing_concurrency"], 2);
    assert_eq!(breach["first_failing_concurrency"], 3);
    assert_eq!(
        breach["first_failing_breach"]["observed"].as_f64(),
        Some(ttft[2])
    );
    assert_eq!(breach["monotonicity_check"], true);
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
