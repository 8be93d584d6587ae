//! A config file of several phases (AIPerf 0.13's `benchmark.phases` list): the same file AIPerf
//! 0.13 ran against the mock (`tests/data/aiperf-multiphase/`, README there) — a warmup at
//! concurrency 4, then a Poisson phase at 20/s, then a constant phase at 40/s — run by ringperf
//! against the mock and checked against the mock's truth log, AIPerf's artifacts of the same run
//! and the formulas AIPerf documents for several phases of a kind.

use std::path::Path;
use std::process::Command as Process;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, OutputLen, TruthEntry};
use serde_json::Value;

use crate::common::{read_json, read_jsonl, truth_of};

const AIPERF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aiperf-multiphase");

/// The file's phases: name, phase index, profiling index, requests.
const PHASES: [(&str, u64, Option<u64>, usize); 3] = [
    ("warmup", 0, None, 8),
    ("poisson_20", 1, Some(0), 20),
    ("constant_40", 2, Some(1), 20),
];

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn three_phases_run_in_order_as_aiperf_ran_them() {
    // The mock as AIPerf's run had it: 5 ms to the first token, 1 ms between tokens.
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(16),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-f",
            &format!("{AIPERF}/multiphase.yaml"),
            "--ui",
            "none",
        ])
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let d = dir.path();

    // The mock's truth: 48 requests; each phase starts once the one before it is answered, the
    // warmup holds 4 in flight, the constant phase's requests are 25 ms apart.
    let mut truth = truth_of(&server, 48);
    assert_eq!(truth.len(), 48);
    truth.sort_by_key(|e| e.arrival_ns);
    let (warm, rest) = truth.split_at(8);
    let (poisson, constant) = rest.split_at(20);
    let last_end = |set: &[TruthEntry]| set.iter().map(|e| e.end_ns).max().unwrap();
    assert!(poisson[0].arrival_ns >= last_end(warm));
    assert!(constant[0].arrival_ns >= last_end(poisson));
    let in_flight = |set: &[TruthEntry], t: u64| {
        set.iter()
            .filter(|e| e.arrival_ns <= t && t < e.end_ns)
            .count()
    };
    assert_eq!(
        warm.iter().map(|e| in_flight(warm, e.arrival_ns)).max(),
        Some(4)
    );

    // Every record names its phase as AIPerf's do; the sessions walk the dataset in order across
    // the phases (AIPerf's one sequential sampler): session_000000–07, then 08–27, then 28–47.
    let records = read_jsonl(&d.join("profile_export.jsonl"));
    let aiperf_records = read_jsonl(&Path::new(AIPERF).join("artifacts/profile_export.jsonl"));
    assert_eq!(records.len(), 48);
    let tags = |rs: &[Value]| {
        let mut t: Vec<(String, u64, Option<u64>, String, String)> = rs
            .iter()
            .map(|r| {
                let m = &r["metadata"];
                (
                    m["phase_name"].as_str().unwrap().to_string(),
                    m["phase_index"].as_u64().unwrap(),
                    m["profiling_index"].as_u64(),
                    m["benchmark_phase"].as_str().unwrap().to_string(),
                    m["conversation_id"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        t.sort();
        t
    };
    assert_eq!(tags(&records), tags(&aiperf_records));
    // The constant phase: each request meant to go 25 ms after the one before.
    let mut intended: Vec<u64> = (records.iter())
        .filter(|r| r["metadata"]["phase_name"] == "constant_40")
        .map(|r| r["metadata"]["credit_issued_ns"].as_u64().unwrap())
        .collect();
    intended.sort_unstable();
    for w in intended.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap.abs_diff(25_000_000) < 1_000,
            "{gap} ns between intended sends"
        );
    }
    for (name, index, profiling, n) in PHASES {
        let mine: Vec<&Value> = records
            .iter()
            .filter(|r| r["metadata"]["phase_name"] == name)
            .collect();
        assert_eq!(mine.len(), n, "{name}");
        for r in &mine {
            assert_eq!(r["metadata"]["phase_index"].as_u64(), Some(index));
            assert_eq!(r["metadata"]["profiling_index"].as_u64(), profiling);
        }
        let nums: std::collections::BTreeSet<u64> = mine
            .iter()
            .map(|r| r["metadata"]["session_num"].as_u64().unwrap())
            .collect();
        assert_eq!(
            nums,
            (0..n as u64).collect(),
            "{name}: session_num restarts"
        );
    }

    // The manifest: AIPerf's entries, key for key, in AIPerf's order; each phase's server
    // metrics from the scrapes sent during it, headed and keyed as AIPerf's.
    let manifest = read_json(&d.join("phase_manifest.json"));
    let aiperf_manifest = read_json(Path::new(MANIFEST));
    let (mine, theirs) = (
        manifest["phases"].as_array().unwrap(),
        aiperf_manifest["phases"].as_array().unwrap(),
    );
    assert_eq!(mine.len(), 3);
    for ((m, a), (name, index, profiling, n)) in mine.iter().zip(theirs).zip(PHASES) {
        assert_eq!(keys(m), keys(a), "{name}");
        assert_eq!(m["server_metrics_json"], a["server_metrics_json"], "{name}");
        let sm = read_json(&d.join(m["server_metrics_json"].as_str().unwrap()));
        let aiperf_sm = read_json(
            &Path::new(AIPERF)
                .join("artifacts")
                .join(a["server_metrics_json"].as_str().unwrap()),
        );
        assert_eq!(keys(&sm["phase"]), keys(&aiperf_sm["phase"]), "{name}");
        assert_eq!(keys(&sm["data"]), keys(&aiperf_sm["data"]), "{name}");
        for k in ["phase_name", "phase_index", "profiling_index", "phase_kind"] {
            assert_eq!(sm["phase"][k], aiperf_sm["phase"][k], "{name}: {k}");
            assert_eq!(sm["data"][k], aiperf_sm["data"][k], "{name}: data.{k}");
        }
        // Its scrapes were sent during the phase: the data's span starts inside it.
        let data_start = sm["data"]["start_ns"].as_u64().unwrap();
        assert!(data_start >= m["start_ns"].as_u64().unwrap(), "{name}");
        assert!(data_start <= m["end_ns"].as_u64().unwrap(), "{name}");
        assert_eq!(m["phase_name"], name);
        assert_eq!(m["phase_index"].as_u64(), Some(index));
        assert_eq!(m["profiling_index"].as_u64(), profiling);
        assert_eq!(m["total_request_count"].as_u64(), Some(n as u64));
        assert_eq!(m["metrics_json"], a["metrics_json"]);
        assert_eq!(m["metrics_csv"], a["metrics_csv"]);
        let phase = read_json(&d.join(m["metrics_json"].as_str().unwrap()));
        let aiperf_phase = read_json(
            &Path::new(AIPERF)
                .join("artifacts")
                .join(a["metrics_json"].as_str().unwrap()),
        );
        assert_eq!(phase["request_count"]["avg"].as_f64(), Some(n as f64));
        let mut mine_keys = keys(&phase);
        mine_keys.retain(|k| k != "ringperf");
        assert_eq!(mine_keys, keys(&aiperf_phase), "{name}");
    }

    // The results: the two profiling phases together; their duration the sum of each phase's
    // start to its last response, and the rates over it (AIPerf's rule for several phases of a
    // kind), computed here from the manifest and the records.
    let summary = read_json(&d.join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(40.0));
    let mut active_ns = 0u64;
    for m in &mine[1..] {
        let name = m["phase_name"].as_str().unwrap();
        let last = records
            .iter()
            .filter(|r| r["metadata"]["phase_name"] == name)
            .map(|r| r["metadata"]["request_end_ns"].as_u64().unwrap())
            .max()
            .unwrap();
        active_ns += last - m["start_ns"].as_u64().unwrap();
    }
    let duration = summary["benchmark_duration"]["avg"].as_f64().unwrap();
    assert!(
        (duration - active_ns as f64 / 1e9).abs() < 1e-6,
        "{duration} s against {active_ns} ns"
    );
    let throughput = summary["request_throughput"]["avg"].as_f64().unwrap();
    assert!((throughput - 40.0 / duration).abs() < 1e-9, "{throughput}");
    assert_eq!(
        summary["warmup_metrics"]["request_count"]["avg"].as_f64(),
        Some(8.0)
    );
    // The echo lists the three phases as the file gives them.
    let phases = &summary["input_config"]["phases"];
    let aiperf_summary = read_json(&Path::new(AIPERF).join("artifacts/profile_export_aiperf.json"));
    assert_eq!(phases, &aiperf_summary["input_config"]["phases"]);
}

const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aiperf-multiphase/artifacts/phase_manifest.json"
);

/// A later profiling phase's `cancellation` (AIPerf's phase key; the flags set the first
/// profiling phase's): every request of that phase is cancelled after its delay, as AIPerf's
/// 499 `RequestCancellationError`, and none of the phase before it; the echo writes the key.
#[test]
fn a_later_profiling_phase_cancels_its_own_requests() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(300),
        itl: Duration::from_millis(20),
        output_tokens: OutputLen::Fixed(4),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let (_dir, out_dir) = run_phases(
        &format!(
            "benchmark:\n  model: mock-model\n  endpoint: {{url: 'http://{}', type: chat, streaming: true}}\n  dataset: {{type: synthetic, entries: 8, prompts: {{isl: 8, osl: 4}}}}\n  tokenizer: {{name: builtin}}\n  phases:\n    - {{name: steady, kind: profiling, type: concurrency, concurrency: 2, requests: 4}}\n    - {{name: cancelling, kind: profiling, type: concurrency, concurrency: 2, requests: 4, cancellation: {{rate: 100, delay: 0.05}}}}\n",
            server.addr
        ),
        &["--no-server-metrics", "--random-seed", "5"],
    );
    let records = read_jsonl(&out_dir.join("profile_export.jsonl"));
    assert_eq!(records.len(), 8);
    for r in &records {
        let cancelling = r["metadata"]["phase_name"] == "cancelling";
        assert_eq!(r["metadata"]["was_cancelled"], cancelling, "{r}");
        if cancelling {
            assert_eq!(r["error"]["code"], 499, "{r}");
        } else {
            assert!(r.get("error").is_none(), "{r}");
        }
    }
    let doc = read_json(&out_dir.join("profile_export_aiperf.json"));
    assert_eq!(
        doc["input_config"]["phases"][1]["cancellation"],
        serde_json::json!({"rate": 100.0, "delay": 0.05})
    );
    // The mock answered none of the cancelled requests.
    let answered = truth_of(&server, 4).iter().filter(|e| e.completed).count();
    assert_eq!(answered, 4);
}

/// A later profiling phase's `rate_series` (inline points here; a file's path is read the same
/// way): its requests are scheduled at the series' rates — 20/s, then 40/s from 0.2 s — while the
/// phase before it keeps its own load; the echo writes the points.
#[test]
fn a_later_profiling_phase_follows_its_own_rate_series() {
    follows_stepped_series(
        "    - {name: steady, kind: profiling, type: concurrency, concurrency: 1, requests: 2}\n    - {name: stepped, kind: profiling, type: constant, requests: 12, rate_series: {points: [{time_s: 0, qps: 20}, {time_s: 0.2, qps: 40}]}}\n",
        ("stepped", 1),
        14,
    );
}

#[test]
fn the_first_profiling_phase_follows_inline_rate_series_points() {
    // The points inline on the phase the flags express (a series file is
    // `--request-rate-series`), the list form.
    follows_stepped_series(
        "    - {name: profiling, type: constant, requests: 12, rate_series: [{time_s: 0, qps: 20}, {time_s: 0.2, qps: 40}]}\n",
        ("profiling", 0),
        12,
    );
}

/// Runs the phases `phases` against the mock, where the phase named `name` (echoed at `index`
/// of `input_config.phases`) sends 12 requests at a series of 20/s until 0.2 s and 40/s after,
/// and `total` requests go in all; checks the scheduler's intended times and the echo.
fn follows_stepped_series(phases: &str, (name, index): (&str, usize), total: usize) {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(2),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let (_dir, out_dir) = run_phases(
        &format!(
            "benchmark:\n  model: mock-model\n  endpoint: {{url: 'http://{}', type: chat, streaming: true}}\n  dataset: {{type: synthetic, entries: 8, prompts: {{isl: 8, osl: 2}}}}\n  tokenizer: {{name: builtin}}\n  phases:\n{phases}",
            server.addr
        ),
        &["--no-server-metrics"],
    );
    let records = read_jsonl(&out_dir.join("profile_export.jsonl"));
    assert_eq!(records.len(), total);
    let mut intended: Vec<u64> = records
        .iter()
        .filter(|r| r["metadata"]["phase_name"] == name)
        .map(|r| r["metadata"]["credit_issued_ns"].as_u64().unwrap())
        .collect();
    intended.sort_unstable();
    assert_eq!(intended.len(), 12);
    let gaps_ms: Vec<f64> = intended
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e6)
        .collect();
    // 20/s before 0.2 s (50 ms apart), 40/s after (25 ms apart); the scheduler's intended times,
    // not measured ones.
    let near = |g: f64, want: f64| (g - want).abs() < 2.0;
    assert!(
        near(gaps_ms[0], 50.0) && near(gaps_ms[1], 50.0),
        "{gaps_ms:?}"
    );
    assert!(gaps_ms[5..].iter().all(|g| near(*g, 25.0)), "{gaps_ms:?}");
    let doc = read_json(&out_dir.join("profile_export_aiperf.json"));
    assert_eq!(
        doc["input_config"]["phases"][index]["rate_series"]["points"][1],
        serde_json::json!({"time_s": 0.2, "qps": 40.0})
    );
}

/// Runs the config file `yaml` (the flags `extra` beside it) into a fresh artifact directory,
/// which it returns with its temporary parent; the run must exit 0.
fn run_phases(yaml: &str, extra: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("phases.yaml");
    std::fs::write(&f, yaml).unwrap();
    let out_dir = dir.path().join("out");
    let out = Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f", f.to_str().unwrap(), "--ui", "none"])
        .arg("--artifact-dir")
        .arg(&out_dir)
        .args(extra)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, out_dir)
}
