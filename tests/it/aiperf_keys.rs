//! AIPerf 0.13's last missing keys (issue #22): `output_sequence_length` for embeddings, the
//! replay schedule family of a fixed-schedule replay, a repeated profile's per-run
//! `input_config` sections, and the phase fields of `server_metrics_export.jsonl`. Each is
//! compared with what AIPerf 0.13 itself wrote for the same command against ringperf's mock
//! (`tests/data/aiperf-keys/README.md`): run-dependent values by kind, definitional ones exactly.
//! (`input_config.slos` is in `tests/data/aiperf-input-config/goodput_slos.json`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};
use serde_json::Value;

use crate::common::{self, read_json, read_jsonl};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aiperf-keys");

/// The mock as the fixtures' runs had it: 5 ms to the first token, 1 ms between tokens, 16.
fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(16),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// `ringperf profile` with the fixtures' common flags, then `args`; it must exit 0.
fn profile(server: &MockServer, dir: &Path, args: &[&str]) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--model", "mock-model", "--tokenizer", "builtin"])
        .args([
            "--ui-type",
            "none",
            "--workers-max",
            "1",
            "--random-seed",
            "1",
        ])
        .args(["--no-gpu-telemetry"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The metric objects of a profile export: top-level objects with a `unit`.
fn metric_keys(doc: &Value) -> BTreeSet<String> {
    doc.as_object()
        .expect("an object")
        .iter()
        .filter(|(_, v)| v.get("unit").is_some())
        .map(|(k, _)| k.clone())
        .collect()
}

/// The keys of an object, in order.
fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn embeddings_report_an_output_sequence_length_of_zero_as_aiperf_does() {
    let theirs = read_json(&Path::new(DIR).join("embeddings_profile_export_aiperf.json"));
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    profile(
        &server,
        dir.path(),
        &[
            "--no-server-metrics",
            "--endpoint-type",
            "embeddings",
            "--request-count",
            "10",
            "--concurrency",
            "2",
            "--isl",
            "16",
        ],
    );
    let ours = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(metric_keys(&ours), metric_keys(&theirs));
    for k in metric_keys(&theirs) {
        assert_eq!(keys(&ours[&k]), keys(&theirs[&k]), "{k}");
        assert_eq!(ours[&k]["unit"], theirs[&k]["unit"], "{k}");
    }
    // Definitional: no output token in an embedding, for each of the 10 requests.
    assert_eq!(
        ours["output_sequence_length"],
        theirs["output_sequence_length"]
    );
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 10);
    for r in &records {
        assert_eq!(
            r["metrics"]["output_sequence_length"],
            serde_json::json!({"value": 0, "unit": "tokens"})
        );
    }
}

/// NumPy's linear percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let idx = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = idx.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (idx - lo as f64) * (sorted[hi] - sorted[lo])
}

#[test]
fn fixed_schedule_replay_reports_the_replay_schedule_family_as_aiperf_does() {
    replay_schedule_family(&[]);
}

/// Sped up, the schedule a record is held to is the sped-up one: its send lag is measured
/// against the credit's time, not the trace's raw timestamp (which would add 3/4 of every
/// row's offset to its lag here).
#[test]
fn a_sped_up_replay_measures_its_lag_against_the_sped_up_schedule() {
    replay_schedule_family(&["--replay-speedup", "4"]);
}

fn replay_schedule_family(extra: &[&str]) {
    let data = Path::new(DIR).join("trace");
    let theirs = read_json(&data.join("profile_export_aiperf.json"));
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    let trace = data.join("mooncake_conversation_16.jsonl");
    let mut args = vec![
        "--no-server-metrics",
        "--endpoint-type",
        "chat",
        "--streaming",
        "--input-file",
        trace.to_str().unwrap(),
        "--custom-dataset-type",
        "mooncake_trace",
        "--fixed-schedule",
    ];
    args.extend_from_slice(extra);
    profile(&server, dir.path(), &args);
    let ours = read_json(&dir.path().join("profile_export_aiperf.json"));
    let family = [
        "replay_sched_lag_p50",
        "replay_sched_lag_p90",
        "replay_sched_lag_p99",
        "replay_sched_degraded",
    ];
    for k in family {
        assert_eq!(keys(&ours[k]), keys(&theirs[k]), "{k}");
        assert_eq!(ours[k]["unit"], theirs[k]["unit"], "{k}");
        assert!(ours[k]["avg"].is_f64(), "{k}: {}", ours[k]);
    }
    // AIPerf writes the family last, after the run-level latencies.
    let top: Vec<&str> = keys(&ours)
        .into_iter()
        .filter(|k| *k != "ringperf")
        .collect();
    assert_eq!(top[top.len() - 4..], family);

    // The same figures from another path: each record's send time minus the time the schedule
    // meant (its credit), anchored at the least late. The export computes them from f64
    // epoch-scale offsets, as AIPerf does: 1e-3 ms covers their 256 ns resolution.
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 16);
    let offsets: Vec<i128> = records
        .iter()
        .map(|r| {
            let md = &r["metadata"];
            i128::from(md["request_start_ns"].as_u64().unwrap())
                - i128::from(md["credit_issued_ns"].as_u64().unwrap())
        })
        .collect();
    let min = *offsets.iter().min().unwrap();
    let mut lag_ms: Vec<f64> = offsets.iter().map(|o| (o - min) as f64 / 1e6).collect();
    lag_ms.sort_by(f64::total_cmp);
    for (k, q) in [
        ("replay_sched_lag_p50", 50.0),
        ("replay_sched_lag_p90", 90.0),
        ("replay_sched_lag_p99", 99.0),
    ] {
        let got = ours[k]["avg"].as_f64().unwrap();
        let want = percentile(&lag_ms, q);
        assert!((got - want).abs() <= 1e-3, "{k}: {got} vs {want}");
    }
    let p99 = ours["replay_sched_lag_p99"]["avg"].as_f64().unwrap();
    let degraded = if p99 > 500.0 { 1.0 } else { 0.0 };
    assert_eq!(
        ours["replay_sched_degraded"]["avg"].as_f64(),
        Some(degraded)
    );

    // The CSV: the same four rows, in the scalar section, in AIPerf's order.
    let rows = |csv: &str| -> Vec<String> {
        csv.lines()
            .filter(|l| l.starts_with("Replay Schedule"))
            .map(|l| l.split(',').next().unwrap().to_owned())
            .collect()
    };
    let their_csv = std::fs::read_to_string(data.join("profile_export_aiperf.csv")).unwrap();
    let our_csv =
        std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).expect("csv");
    assert_eq!(rows(&our_csv), rows(&their_csv));
    assert_eq!(rows(&their_csv).len(), 4);
}

#[test]
fn each_run_of_a_repeated_profile_echoes_the_default_top_level_sections() {
    let theirs = read_json(&Path::new(DIR).join("multi_run_0001_profile_export_aiperf.json"));
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    profile(
        &server,
        dir.path(),
        &[
            "--no-server-metrics",
            "--endpoint-type",
            "chat",
            "--streaming",
            "--num-profile-runs",
            "2",
            "--request-count",
            "6",
            "--concurrency",
            "2",
            "--isl",
            "16",
            "--osl",
            "16",
        ],
    );
    let tail = ["logging", "metrics", "unsafe_override"];
    let their_ic = &theirs["input_config"];
    assert_eq!(keys(their_ic)[keys(their_ic).len() - 3..], tail);
    for run in ["run_0001", "run_0002"] {
        let path: PathBuf = [dir.path(), Path::new("profile_runs"), Path::new(run)]
            .iter()
            .collect();
        let ours = read_json(&path.join("profile_export_aiperf.json"));
        let ic = &ours["input_config"];
        assert_eq!(keys(ic)[keys(ic).len() - 3..], tail, "{run}");
        for k in tail {
            assert_eq!(ic[k], their_ic[k], "{run}: {k}");
        }
        // Every setting, those at their defaults too, as AIPerf's run wrote them; but for the
        // mock's address and the run's own directory.
        let (mut a, mut r) = (Vec::new(), Vec::new());
        common::leaves("", their_ic, &mut a);
        common::leaves("", ic, &mut r);
        let own = |p: &str| p == ".endpoint.urls[0]" || p == ".artifacts.dir";
        for (p, v) in &a {
            let ours = r.iter().find(|(q, _)| q == p).map(|(_, w)| w);
            assert!(
                own(p) || ours == Some(v),
                "{run}{p}: AIPerf {v}, ringperf {ours:?}"
            );
        }
        for (p, w) in &r {
            assert!(
                a.iter().any(|(q, _)| q == p),
                "{run}{p}: ringperf {w}, AIPerf nothing"
            );
        }
    }
}

/// A line's phase fields, in order, with their values.
type PhaseFields = Vec<(String, Value)>;

/// The phase fields of a server-metrics JSONL line, in order, with their values.
fn phase_fields(line: &Value) -> PhaseFields {
    const FIELDS: [&str; 5] = [
        "benchmark_phase",
        "phase_index",
        "profiling_index",
        "phase_name",
        "phase_kind",
    ];
    line.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn server_metrics_jsonl_lines_carry_aiperfs_phase_fields() {
    let theirs = read_jsonl(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/aiperf-server-metrics-unique/server_metrics_export.jsonl"),
    );
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://{}/metrics", server.addr);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.3")
        .args(["profile", "--model", "mock-model", "--tokenizer", "builtin"])
        .args(["--ui-type", "none", "--streaming", "--concurrency", "2"])
        .args(["--warmup-request-count", "4", "--request-count", "40"])
        .args(["--isl", "8", "--osl", "16", "--no-gpu-telemetry"])
        .args(["--server-metrics-formats", "json", "jsonl"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--server-metrics")
        .arg(&url)
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{out:?}");
    let ours = read_jsonl(&dir.path().join("server_metrics_export.jsonl"));
    // Per phase (none: the baseline scrape), the fields AIPerf wrote on each of its lines.
    let by_phase = |lines: &[Value]| -> Vec<(Option<String>, PhaseFields)> {
        let mut seen = Vec::new();
        for l in lines {
            let p = l["benchmark_phase"].as_str().map(str::to_owned);
            let f = phase_fields(l);
            if !seen.iter().any(|(q, _)| *q == p) {
                seen.push((p, f));
            } else {
                let first = &seen.iter().find(|(q, _)| *q == p).unwrap().1;
                assert_eq!(&f, first, "every line of one phase has the same fields");
            }
        }
        seen
    };
    let theirs = by_phase(&theirs);
    let ours = by_phase(&ours);
    assert_eq!(theirs.len(), 3, "baseline, warmup and profiling lines");
    assert_eq!(ours, theirs);
}
