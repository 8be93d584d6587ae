//! `--mlflow-*` (docs/integrations.md#mlflow) against a real `mlflow server` (PyPI's `mlflow`;
//! `.ci/run` installs it into target/ci-venv), read back with MLflow's own Python client:
//! params, metrics (every one against the run's own summary JSON), tags, artifacts (their
//! bytes against the local files), and the live values streamed during the run (each metric's
//! history against the run's per-request records).
//!
//! The server is found at `$RINGPERF_MLFLOW`, else `target/ci-venv/bin/mlflow`, else `mlflow` on
//! the PATH; the Python that reads back is the one beside it. Without it the test is skipped
//! (and fails under `CI=true`).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{read_json, require_tool};

fn mlflow_bin() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("RINGPERF_MLFLOW").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-venv/bin/mlflow")),
        Some(PathBuf::from("mlflow")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| crate::common::tool_runs(&p.to_string_lossy(), "--version"))
}

/// A `mlflow server` on a free loopback port, stopped (by its PID) when dropped.
struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM to the server's process group (its workers), which only it leads.
        let _ = Command::new("kill")
            .args(["-TERM", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(bin);
    cmd.args(["server", "--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--workers", "1"])
        .arg("--backend-store-uri")
        .arg(format!(
            "sqlite:///{}",
            dir.path().join("db.sqlite").display()
        ))
        .arg("--artifacts-destination")
        .arg(dir.path().join("artifacts"))
        // No job runner (huey workers and their schedulers): nothing here uses it, and it
        // doubles the server's start-up.
        .env("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd.spawn().expect("mlflow server starts");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
        _dir: dir,
    };
    // Ready when it answers /health (bounded: a server that never comes up fails the test).
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && python(
                bin,
                &format!(
                    "import urllib.request as u; u.urlopen('{}/health').read()",
                    server.url
                ),
                &[],
            )
            .is_some()
        {
            return server;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("mlflow server did not come up in 180 s");
}

/// Runs `code` with the Python beside `bin`; its stdout, or `None` when it failed.
fn python(bin: &Path, code: &str, args: &[&str]) -> Option<String> {
    let py = bin.with_file_name("python");
    let py = if py.exists() {
        py
    } else {
        PathBuf::from("python3")
    };
    let out = Command::new(py)
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What MLflow's client reads back of a run: params, metrics, tags, every artifact's path and
/// the text of the ones asked for.
const READ_BACK: &str = r#"
import json, sys
from mlflow.tracking import MlflowClient
uri, run_id, fetch = sys.argv[1], sys.argv[2], sys.argv[3:]
c = MlflowClient(tracking_uri=uri)
r = c.get_run(run_id)
def walk(p):
    out = []
    for a in c.list_artifacts(run_id, p):
        out += walk(a.path) if a.is_dir else [a.path]
    return out
texts = {}
for f in fetch:
    local = c.download_artifacts(run_id, f)
    texts[f] = open(local).read()
exp = c.get_experiment(r.info.experiment_id)
live = {k: [[m.step, m.value] for m in c.get_metric_history(run_id, k)]
        for k in r.data.metrics if k.startswith("live.")}
print(json.dumps({"params": r.data.params, "metrics": r.data.metrics, "tags": r.data.tags,
                  "artifacts": sorted(walk(None)), "texts": texts, "status": r.info.status,
                  "experiment": exp.name, "run_name": r.info.run_name, "live": live}))
"#;

const MAKE_PARENT: &str = r#"
import sys
from mlflow.tracking import MlflowClient
c = MlflowClient(tracking_uri=sys.argv[1])
e = c.get_experiment_by_name("lab") or c.get_experiment(c.create_experiment("lab"))
print(c.create_run(e.experiment_id, run_name="parent").info.run_id)
"#;

#[test]
fn a_run_reaches_mlflow_with_its_metrics_params_tags_and_artifacts() {
    let bin = mlflow_bin();
    if !require_tool(
        "mlflow",
        bin.is_some(),
        "skipped: no mlflow (pip install mlflow; or set RINGPERF_MLFLOW)",
    ) {
        return;
    }
    let bin = bin.unwrap();
    let server = start(&bin);
    let parent = python(&bin, MAKE_PARENT, &[&server.url])
        .expect("parent run")
        .trim()
        .to_owned();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--mock",
            "--streaming",
            "--ui",
            "none",
        ])
        .args([
            "--tokenizer",
            "builtin",
            "--concurrency",
            "2",
            "--request-count",
            "5",
        ])
        .arg("--artifact-dir")
        .arg(dir.path())
        .args([
            "--mlflow-tracking-uri",
            &server.url,
            "--mlflow-experiment",
            "lab",
        ])
        .args([
            "--mlflow-run-name",
            "first",
            "--mlflow-parent-run-id",
            &parent,
        ])
        .args([
            "--mlflow-tag",
            "team:perf,gpu:none",
            "--mlflow-tag",
            r#"{"site":"lab"}"#,
        ])
        .args(["--mlflow-artifact-glob", "*.json,*.jsonl"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let meta = read_json(&dir.path().join("mlflow_export.json"));
    let run_id = meta["run_id"].as_str().unwrap();
    assert!(
        err.contains(&format!(
            "MLflow run 'first' ({run_id}) logged to {}",
            server.url
        )),
        "{err}"
    );

    let back: Value = serde_json::from_str(
        &python(
            &bin,
            READ_BACK,
            &[
                &server.url,
                run_id,
                "exports/profile_export_aiperf.json",
                "exports/mlflow_export.json",
            ],
        )
        .expect("read back"),
    )
    .unwrap();
    assert_eq!(back["status"], "FINISHED");
    assert_eq!(back["experiment"], "lab");
    assert_eq!(back["run_name"], "first");

    // Every metric against the run's own JSON: `avg` under the tag, each other statistic
    // suffixed, and the request counts.
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for (tag, v) in summary.as_object().unwrap() {
        if v.get("unit").is_none() {
            continue;
        }
        for (stat, x) in v.as_object().unwrap() {
            let Some(x) = x.as_f64() else { continue };
            if stat == "avg" {
                want.insert(tag.clone(), x);
            } else if stat.starts_with('p')
                || ["min", "max", "std", "count", "sum"].contains(&stat.as_str())
            {
                want.insert(format!("{tag}.{stat}"), x);
            }
        }
    }
    want.insert("aiperf.completed_requests".into(), 5.0);
    want.insert("aiperf.total_expected_requests".into(), 5.0);
    // The end-of-run metrics (the live values are checked below).
    let got: BTreeMap<String, f64> = back["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !k.starts_with("live."))
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect();
    assert_eq!(got.len(), want.len());
    for (k, w) in &want {
        let g = got[k];
        assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{k}: {g} vs {w}");
    }
    assert!(got["request_latency"] > 0.0);

    let params = &back["params"];
    assert_eq!(params["endpoint.type"], "chat");
    assert_eq!(params["endpoint.models"], "mock-model");
    assert_eq!(params["loadgen.concurrency"], "2");
    assert_eq!(params["loadgen.request_count"], "5");
    assert_eq!(params["timing.mode"], "concurrency");
    assert_eq!(
        params["output.artifact_directory"],
        dir.path().display().to_string()
    );
    assert_eq!(
        params["aiperf.cli_command"],
        summary["run_info"]["cli_command"]
    );

    let tags = &back["tags"];
    for (k, v) in [
        ("team", "perf"),
        ("gpu", "none"),
        ("site", "lab"),
        ("aiperf.was_cancelled", "false"),
    ] {
        assert_eq!(tags[k], v, "{k}");
    }
    assert_eq!(tags["mlflow.parentRunId"], parent.as_str());
    assert_eq!(tags["benchmark_id"], summary["benchmark_id"]);
    assert_eq!(tags["aiperf.version"], "0.13.0");

    // The globs: the top-level JSON and JSONL files only, under exports/, and the metadata.
    let mut local: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| (n.ends_with(".json") || n.ends_with(".jsonl")) && !n.starts_with('.'))
        .map(|n| format!("exports/{n}"))
        .collect();
    local.sort();
    let arts: Vec<String> = back["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(arts, local);
    assert!(arts.contains(&"exports/mlflow_export.json".to_owned()));
    for f in ["profile_export_aiperf.json", "mlflow_export.json"] {
        assert_eq!(
            back["texts"][format!("exports/{f}")].as_str().unwrap(),
            std::fs::read_to_string(dir.path().join(f)).unwrap(),
            "{f}"
        );
    }
    let keys: Vec<&str> = meta["metric_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(keys, want.keys().map(String::as_str).collect::<Vec<_>>());
    // The run was started for the live values and the end-of-run logging went into it.
    assert_eq!(meta["live_streaming"], true);
    assert_eq!(meta["reused_live_run"], true);
    live_values_are_the_run_s_records(&back["live"], &dir.path().join("profile_export.jsonl"));
}

/// The MLflow instrument of a per-request metric and the factor from its unit in the records
/// file to the value logged: the GenAI conventions' names (durations in seconds), else
/// `aiperf.<tag>` in the base unit (ns, bytes).
fn live_key(tag: &str, unit: &str) -> (String, f64) {
    let semconv = match tag {
        "request_latency" => Some("gen_ai.client.operation.duration"),
        "time_to_first_token" => Some("gen_ai.client.operation.time_to_first_chunk"),
        "inter_token_latency" => Some("gen_ai.client.operation.time_per_output_chunk"),
        "output_token_count" | "input_token_count" => Some("gen_ai.client.token.usage"),
        _ => None,
    };
    let to_base = match unit {
        "ms" => 1e6,
        "KB" => 1024.0,
        _ => 1.0,
    };
    match semconv {
        Some(n) if unit == "ms" => (format!("live.{n}"), 1e-3),
        Some(n) => (format!("live.{n}"), 1.0),
        None => (format!("live.aiperf.{tag}"), to_base),
    }
}

/// Every live history against the records file: per metric, the same values (as a multiset);
/// the steps one counter over every value (0, 1, 2, … with no gap); the timing counters and
/// gauges ending at the phase's own counts.
fn live_values_are_the_run_s_records(live: &Value, jsonl: &Path) {
    let live = live.as_object().unwrap();
    let records: Vec<Value> = std::fs::read_to_string(jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 5);
    let mut want: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in &records {
        for (tag, m) in r["metrics"].as_object().unwrap() {
            let (key, f) = live_key(tag, m["unit"].as_str().unwrap());
            let values: Vec<f64> = match &m["value"] {
                Value::Array(a) => a.iter().map(|x| x.as_f64().unwrap()).collect(),
                x => vec![x.as_f64().unwrap()],
            };
            want.entry(key)
                .or_default()
                .extend(values.iter().map(|v| v * f));
        }
    }
    let history = |k: &str| -> Vec<(u64, f64)> {
        let mut h: Vec<(u64, f64)> = live[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        h.sort_by_key(|p| p.0);
        h
    };
    let mut per_request: Vec<&String> = live
        .keys()
        .filter(|k| !k.starts_with("live.aiperf.timing."))
        .collect();
    per_request.sort();
    assert_eq!(
        per_request,
        want.keys().collect::<Vec<_>>(),
        "the live metrics are the records' metrics"
    );
    for (k, w) in &want {
        let mut g: Vec<f64> = history(k).iter().map(|p| p.1).collect();
        let mut w = w.clone();
        g.sort_by(f64::total_cmp);
        w.sort_by(f64::total_cmp);
        assert_eq!(g.len(), w.len(), "{k}");
        for (g, w) in g.iter().zip(&w) {
            assert!((g - w).abs() <= 1e-9 * w.abs().max(1e-3), "{k}: {g} vs {w}");
        }
    }
    // The same keys as AIPerf 0.13 logged for the same run (tests/data/mlflow_live_aiperf), but
    // for the per-request values AIPerf's records carry and ringperf's do not (run-level
    // aggregates in ringperf, or AIPerf's internal credit latency), as in tests/it/otel.rs.
    let aiperf = crate::common::read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mlflow_live_aiperf/live_keys.json"),
    );
    let only_aiperf = [
        "live.aiperf.request_count",
        "live.aiperf.min_request_timestamp",
        "live.aiperf.max_response_timestamp",
        "live.aiperf.credit_drop_latency",
        "live.aiperf.usage_discrepancy_count",
    ];
    let theirs: Vec<&str> = aiperf["live_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .filter(|k| !only_aiperf.contains(k))
        .collect();
    let mut ours: Vec<&str> = live.keys().map(String::as_str).collect();
    ours.sort_unstable();
    assert_eq!(ours, theirs);
    // AIPerf's values take one step each too: as many steps as values, from 0.
    assert_eq!(aiperf["values"], aiperf["steps"]);
    // One step per value, counted over every live metric together from 0.
    let mut steps: Vec<u64> = live.keys().flat_map(|k| history(k)).map(|p| p.0).collect();
    steps.sort_unstable();
    assert_eq!(steps, (0..steps.len() as u64).collect::<Vec<_>>());
    // The timing domain: cumulative counters that never fall, ending at the phase's counts
    // (5 requests and 5 single-turn sessions, all answered), and the in-flight gauges at 0.
    let completed = records
        .iter()
        .filter(|r| r["metadata"]["was_cancelled"] == false)
        .count() as f64;
    for (name, end) in [
        ("requests.sent", 5.0),
        ("requests.completed", completed),
        ("sessions.sent", 5.0),
        ("sessions.completed", completed),
        ("sessions.turns_total", 5.0),
        ("requests.in_flight", 0.0),
        ("sessions.in_flight", 0.0),
    ] {
        let h = history(&format!("live.aiperf.timing.{name}.profiling"));
        assert_eq!(h.last().unwrap().1, end, "{name}: {h:?}");
        if !name.ends_with("in_flight") {
            assert!(h.windows(2).all(|w| w[0].1 <= w[1].1), "{name}: {h:?}");
        }
        assert!(
            h.iter().all(|p| (0.0..=5.0).contains(&p.1)),
            "{name}: {h:?}"
        );
    }
    let elapsed = history("live.aiperf.timing.phase.elapsed_sec.profiling");
    assert!(elapsed.windows(2).all(|w| w[0].1 <= w[1].1) && elapsed.last().unwrap().1 > 0.0);
    // A phase that did not run, and counters that stayed 0, log nothing.
    assert!(
        !live
            .keys()
            .any(|k| k.ends_with(".warmup") || k.contains("cancelled") || k.contains("errors"))
    );
}

#[test]
fn a_tracking_server_that_is_down_costs_warnings_not_the_run() {
    // A port with nothing listening.
    let refused = crate::common::RefusedPort::new();
    let port = refused.port;
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "m",
            "--mock",
            "--streaming",
            "--ui",
            "none",
        ])
        .args([
            "--tokenizer",
            "builtin",
            "--concurrency",
            "1",
            "--request-count",
            "3",
        ])
        .arg("--artifact-dir")
        .arg(dir.path())
        .args(["--mlflow-tracking-uri", &format!("http://127.0.0.1:{port}")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("warning: MLflow live streaming off"), "{err}");
    assert!(err.contains("warning: MLflow export failed"), "{err}");
    assert!(dir.path().join("profile_export_aiperf.json").exists());
    assert!(!dir.path().join("mlflow_export.json").exists());
}
