//! Repeated profile runs (`--num-profile-runs`): the binary against its embedded mock. Each run
//! is checked as a complete run in its own directory, and the aggregate files against the
//! statistics recomputed here from the runs' own `profile_export_aiperf.json`.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{read_json, read_jsonl};
use serde_json::Value;

/// `scipy.stats.t.ppf(0.975, 2)` (scipy in the AIPerf venv): the 95 % two-sided t quantile for
/// three runs; printed tables give 4.303.
const T_975_DF2: f64 = 4.302652729749462;

const STATS: [&str; 14] = [
    "avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std",
];

fn ringperf(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringperf"));
    c.arg("profile").args(args);
    c
}

/// A streaming chat run on the embedded mock, fast responses, `extra` appended.
fn mock_run(dir: &Path, extra: &[&str]) -> Command {
    let mut c = ringperf(&[
        "--mock",
        "--mock-ttft-ms",
        "1",
        "--mock-itl-ms",
        "0",
        "--mock-output-tokens",
        "4",
        "--streaming",
        "--isl",
        "8",
        "--ui",
        "none",
        "--no-server-metrics",
    ]);
    c.arg("--artifact-dir").arg(dir).args(extra);
    c
}

fn check_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Every `(tag_stat) -> (unit, per-run values)` of the runs' summaries, the test's own reading
/// of AIPerf's rule: a top-level object with a `unit` is a metric.
fn per_run_values(runs: &[Value]) -> BTreeMap<String, (String, Vec<f64>)> {
    let mut out: BTreeMap<String, (String, Vec<f64>)> = BTreeMap::new();
    for doc in runs {
        for (tag, m) in doc.as_object().unwrap() {
            let Some(unit) = m.get("unit").and_then(Value::as_str) else {
                continue;
            };
            for stat in STATS {
                if let Some(v) = m.get(stat).and_then(Value::as_f64) {
                    let e = out
                        .entry(format!("{tag}_{stat}"))
                        .or_insert_with(|| (unit.to_string(), Vec::new()));
                    e.1.push(v);
                }
            }
        }
    }
    out
}

/// Wall-clock ns of a run's first phase start and last phase end (`phase_manifest.json`; a run of
/// one phase has none: its profiling window).
fn run_span(dir: &Path) -> (u64, u64) {
    if !dir.join("phase_manifest.json").exists() {
        return common::profiling_window(dir);
    }
    let m = read_json(&dir.join("phase_manifest.json"));
    let phases = m["phases"].as_array().unwrap();
    let start = phases.first().unwrap()["start_ns"].as_u64().unwrap();
    let end = phases.last().unwrap()["end_ns"].as_u64().unwrap();
    (start, end)
}

fn phase_names(dir: &Path) -> Vec<String> {
    let m = read_json(&dir.join("phase_manifest.json"));
    m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase_name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn three_runs_and_their_aggregate() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = mock_run(
        dir,
        &[
            "--concurrency",
            "2",
            "--request-count",
            "12",
            "--warmup-request-count",
            "2",
            "--num-profile-runs",
            "3",
            "--profile-run-cooldown-seconds",
            "1.5",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);

    // Three complete runs, each in its own directory; only the first has the warmup.
    let labels = ["run_0001", "run_0002", "run_0003"];
    let mut runs = Vec::new();
    let mut inputs = Vec::new();
    let mut sweep_ids = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        let rd = dir.join("profile_runs").join(label);
        for f in [
            "profile_export_aiperf.json",
            "profile_export_aiperf.csv",
            "profile_export_console.txt",
            ".aiperf_results_ready.json",
        ] {
            assert!(rd.join(f).is_file(), "{label}/{f}");
        }
        let doc = read_json(&rd.join("profile_export_aiperf.json"));
        assert_eq!(doc["request_count"]["avg"].as_f64(), Some(12.0), "{label}");
        assert_eq!(doc["was_cancelled"], false, "{label}");
        let info = &doc["run_info"];
        assert_eq!(info["trial"], i as u64, "{label}");
        assert_eq!(info["run_label"], *label);
        assert_eq!(info["random_seed"], 42, "{label}");
        sweep_ids.push(info["sweep_id"].as_str().unwrap().to_string());
        let echoed = doc["input_config"]["artifacts"]["dir"].as_str().unwrap();
        assert_eq!(
            Path::new(echoed),
            rd,
            "{label}: its own directory, as AIPerf echoes it"
        );
        let records = read_jsonl(&rd.join("profile_export.jsonl"));
        let profiling = records
            .iter()
            .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
            .count();
        assert_eq!(profiling, 12, "{label}");
        // The first run's warmup and profiling phases; the others have one phase and, as in
        // AIPerf, no phase manifest.
        if i == 0 {
            assert_eq!(phase_names(&rd), ["warmup", "profiling"], "{label}");
        } else {
            assert!(!rd.join("phase_manifest.json").exists(), "{label}");
            assert!(!rd.join("phases").exists(), "{label}");
        }
        inputs.push(std::fs::read(rd.join("inputs.json")).unwrap());
        runs.push(doc);
    }
    // No file of a single run at the top: the artifact directory holds the runs and the aggregate.
    assert!(!dir.join("profile_export_aiperf.json").exists());
    // One sequence: one sweep id (a UUID) in every run's run_info.
    assert_eq!(sweep_ids[0].len(), 36);
    assert!(sweep_ids.iter().all(|i| *i == sweep_ids[0]));
    // --set-consistent-seed (the default): seed 42, so every run sent the same prompts.
    assert!(inputs.iter().all(|i| *i == inputs[0]));

    // The cooldown, from the runs' own phase stamps: each run starts at least 1.5 s after the
    // previous one ended.
    for pair in labels.windows(2) {
        let (_, end) = run_span(&dir.join("profile_runs").join(pair[0]));
        let (start, _) = run_span(&dir.join("profile_runs").join(pair[1]));
        assert!(
            start >= end + 1_500_000_000,
            "{} started {} ms after {} ended",
            pair[1],
            (start as i128 - end as i128) / 1_000_000,
            pair[0]
        );
    }

    // The aggregate JSON: every pair present in the runs, each equal to the statistics
    // recomputed here (sample std, se = std/sqrt(3), CI with the t quantile above).
    let agg = read_json(&dir.join("aggregate/profile_export_aiperf_aggregate.json"));
    assert_eq!(agg["schema_version"], "1.0");
    let meta = &agg["metadata"];
    assert_eq!(meta["aggregation_type"], "confidence");
    assert_eq!(meta["num_profile_runs"], 3);
    assert_eq!(meta["num_successful_runs"], 3);
    assert_eq!(meta["failed_runs"], serde_json::json!([]));
    assert_eq!(meta["confidence_level"], 0.95);
    assert_eq!(meta["run_labels"], serde_json::json!(labels));
    assert_eq!(meta["cooldown_seconds"], 1.5);
    assert!(meta.get("single_run").is_none());

    let expected = per_run_values(&runs);
    let metrics = agg["metrics"].as_object().unwrap();
    let mut got_keys: Vec<&String> = metrics.keys().collect();
    got_keys.sort();
    let want_keys: Vec<&String> = expected.keys().collect();
    assert_eq!(got_keys, want_keys);
    assert!(metrics.contains_key("time_to_first_token_p99"));
    for (key, (unit, vals)) in &expected {
        let m = &metrics[key];
        assert_eq!(m["unit"], unit.as_str(), "{key}");
        let n = vals.len() as f64;
        let mean = vals.iter().sum::<f64>() / n;
        let std = (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let se = std / n.sqrt();
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let f = |k: &str| {
            m[k].as_f64()
                .unwrap_or_else(|| panic!("{key}.{k}: {}", m[k]))
        };
        assert!(close(f("mean"), mean), "{key} mean {} vs {mean}", f("mean"));
        assert!(close(f("std"), std), "{key} std");
        assert!(close(f("se"), se), "{key} se");
        assert_eq!((f("min"), f("max")), (min, max), "{key}");
        assert!(close(f("t_critical"), T_975_DF2), "{key} t");
        assert!(close(f("ci_low"), mean - T_975_DF2 * se), "{key} ci_low");
        assert!(close(f("ci_high"), mean + T_975_DF2 * se), "{key} ci_high");
        if mean == 0.0 {
            assert!(m["cv"].is_null(), "{key}: cv inf is null");
        } else {
            assert!(close(f("cv"), std / mean), "{key} cv");
        }
    }

    // The CSV: one row per metric with AIPerf's formatting, then the metadata.
    let csv =
        std::fs::read_to_string(dir.join("aggregate/profile_export_aiperf_aggregate.csv")).unwrap();
    let lines: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(
        lines[0],
        "metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit"
    );
    let rows = &lines[1..=expected.len()];
    for row in rows {
        let cells: Vec<&str> = row.split(',').collect();
        let (unit, vals) = &expected[cells[0]];
        let n = vals.len() as f64;
        let mean = vals.iter().sum::<f64>() / n;
        assert_eq!(cells[1], format!("{mean:.2}"), "{row}");
        assert_eq!(cells[9], format!("{T_975_DF2:.4}"), "{row}");
        assert_eq!(cells[10], unit, "{row}");
    }
    assert_eq!(lines[expected.len() + 1], "");
    assert_eq!(
        &lines[expected.len() + 2..],
        [
            "Aggregation Type,confidence",
            "Total Runs,3",
            "Successful Runs,3",
            "Confidence Level,0.95",
            "Run Labels,\"['run_0001', 'run_0002', 'run_0003']\"",
            "Cooldown Seconds,1.5",
            "",
        ]
    );

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Profile run 3 of 3"), "{stdout}");
    assert!(stdout.contains("Aggregate over 3 of 3 runs"), "{stdout}");
    assert!(
        stdout.contains("profile_export_aiperf_aggregate.json"),
        "{stdout}"
    );
}

/// SIGINT during the second run: that run stops and is written marked cancelled, no third run
/// starts, the aggregate covers the first run alone (degraded: no interval), exit 130.
#[test]
fn sigint_stops_the_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = common::interrupt_once_written(
        mock_run(
            dir,
            &[
                "--concurrency",
                "1",
                "--benchmark-duration",
                "4",
                "--num-profile-runs",
                "3",
            ],
        ),
        &dir.join("profile_runs/run_0002/profile_export.jsonl"),
    );
    check_exit(&out, 130);

    let first = read_json(&dir.join("profile_runs/run_0001/profile_export_aiperf.json"));
    assert_eq!(first["was_cancelled"], false);
    let cut = read_json(&dir.join("profile_runs/run_0002/profile_export_aiperf.json"));
    assert_eq!(cut["was_cancelled"], true);
    assert!(!dir.join("profile_runs/run_0003").exists());

    let agg = read_json(&dir.join("aggregate/profile_export_aiperf_aggregate.json"));
    let meta = &agg["metadata"];
    assert_eq!(meta["num_profile_runs"], 2);
    assert_eq!(meta["num_successful_runs"], 1);
    assert_eq!(meta["single_run"], true);
    assert_eq!(meta["run_labels"], serde_json::json!(["run_0001"]));
    assert_eq!(meta["failed_runs"][0]["label"], "run_0002");
    assert_eq!(meta["failed_runs"][0]["error"], "cancelled by SIGINT");
    // Degraded: the first run's own values, no interval.
    let ttft = &agg["metrics"]["time_to_first_token_avg"];
    let v = first["time_to_first_token"]["avg"].as_f64().unwrap();
    assert_eq!(ttft["mean"].as_f64(), Some(v));
    assert_eq!(ttft["ci_low"].as_f64(), Some(v));
    assert_eq!(ttft["ci_high"].as_f64(), Some(v));
    assert_eq!(ttft["std"].as_f64(), Some(0.0));
    assert!(ttft["t_critical"].is_null());
}

#[test]
fn bad_multi_run_flags_exit_2() {
    for (args, needle) in [
        (
            &["--num-profile-runs", "0"][..],
            "--num-profile-runs must be between 1 and 10",
        ),
        (
            &["--num-profile-runs", "11"][..],
            "--num-profile-runs must be between 1 and 10",
        ),
        (
            &["--num-profile-runs", "3", "--confidence-level", "1.0"][..],
            "--confidence-level must be strictly between 0 and 1",
        ),
        (
            &["--profile-run-cooldown-seconds", "-1"][..],
            "--profile-run-cooldown-seconds must be a non-negative number",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = mock_run(tmp.path(), args).output().unwrap();
        check_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        // Refused before anything ran.
        assert!(!tmp.path().join("profile_runs").exists());
    }
}

/// Every run failed (nothing listens): each run's artifacts are written, no aggregate can be
/// computed and stderr says so; the exit code is a single run's for no success, 1.
#[test]
fn no_successful_run_writes_no_aggregate() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Port 1 on loopback: refused at once.
    let out = ringperf(&[
        "-m",
        "mock-model",
        "--url",
        "http://127.0.0.1:1",
        "--tokenizer",
        "builtin",
        "--isl",
        "8",
        "--ui",
        "none",
        "--no-server-metrics",
        "--request-count",
        "2",
        "--num-profile-runs",
        "2",
    ])
    .arg("--artifact-dir")
    .arg(dir)
    .output()
    .unwrap();
    check_exit(&out, 1);
    for label in ["run_0001", "run_0002"] {
        let doc = read_json(
            &dir.join("profile_runs")
                .join(label)
                .join("profile_export_aiperf.json"),
        );
        assert_eq!(
            doc["error_request_count"]["avg"].as_f64(),
            Some(2.0),
            "{label}"
        );
    }
    assert!(!dir.join("aggregate").exists());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("aggregate: all 2 runs failed"), "{err}");
}

/// One run (the default) is an ordinary run: its files at the top, no run directories.
#[test]
fn one_run_is_a_plain_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = mock_run(dir, &["--request-count", "2", "--num-profile-runs", "1"])
        .output()
        .unwrap();
    check_exit(&out, 0);
    assert!(dir.join("profile_export_aiperf.json").is_file());
    assert!(!dir.join("profile_runs").exists());
    assert!(!dir.join("aggregate").exists());
}

/// SIGINT during the cooldown: no further run starts, the aggregate covers the run done (one:
/// degraded), exit 130. If the cooldown could not be interrupted, the second run would start
/// after it and the checks below would fail.
#[test]
fn sigint_during_the_cooldown() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut child = mock_run(
        dir,
        &[
            "--request-count",
            "4",
            "--num-profile-runs",
            "2",
            "--profile-run-cooldown-seconds",
            "60",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while !line.starts_with("Cooling down") {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "no cooldown: {seen}"
        );
        seen.push_str(&line);
    }
    assert!(line.contains("60.0 s before run 2 of 2"), "{line}");
    // SAFETY: sending SIGINT to the child we spawned; its pid is valid until we wait on it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(!dir.join("profile_runs/run_0002").exists());
    let agg = read_json(&dir.join("aggregate/profile_export_aiperf_aggregate.json"));
    assert_eq!(agg["metadata"]["num_profile_runs"], 1);
    assert_eq!(agg["metadata"]["single_run"], true);
    assert_eq!(agg["metadata"]["failed_runs"], serde_json::json!([]));
    assert!(rest.contains("Aggregate over 1 of 1 runs"), "{rest}");
}

/// A setup error in the first run (here, a tokenizer that is not there) is a setup error of the
/// command: exit 2 with its message, no second run, no aggregate message.
#[test]
fn setup_error_stops_the_sequence() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = mock_run(
        dir,
        &[
            "--request-count",
            "2",
            "--num-profile-runs",
            "2",
            "--tokenizer",
            "/nonexistent/tokenizer.json",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tokenizer"), "{err}");
    assert!(!err.contains("aggregate"), "{err}");
    assert!(!dir.join("profile_runs/run_0002").exists());
    assert!(!dir.join("aggregate").exists());
}
