//! `--otel-url` (docs/integrations.md): a run's metrics exported over OTLP/HTTP to a real
//! receiver — tests/tools/otlp_receiver.py, which decodes every export with the official
//! generated classes of the `opentelemetry-proto` package (`.ci/run` installs it into
//! target/ci-venv) — and every data point checked against the run's own
//! profile_export_aiperf.json. The receiver's Python is `$RINGPERF_OTLP_PYTHON`, else
//! target/ci-venv/bin/python, else python3, the first that imports the package; without one
//! the tests are skipped (and fail under `CI=true`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{read_json, require_tool};

fn python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("RINGPERF_OTLP_PYTHON").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-venv/bin/python")),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", "import opentelemetry.proto.collector.metrics.v1"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The receiver on a free loopback port, stopped (by its PID) when dropped.
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    fn start(py: &Path, fail: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("exports.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/otlp_receiver.py");
        let mut child = Command::new(py)
            .arg(&script)
            .arg(&out)
            .args(["--fail", &fail.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the receiver prints its port");
        Self {
            child,
            port,
            out,
            _dir: dir,
        }
    }

    /// Every export received, in order.
    fn exports(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn profile(url: &str, dir: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--mock", "--streaming"])
        .args(["--ui", "none", "--tokenizer", "builtin"])
        .arg("--artifact-dir")
        .arg(dir)
        .args(["--otel-url", url])
        .args(extra)
        .output()
        .unwrap()
}

fn attr<'a>(attrs: &'a Value, key: &str) -> Option<&'a Value> {
    attrs
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn num(v: &Value) -> f64 {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap()
}

/// The histograms of one export: name → (unit, data points).
fn metrics(export: &Value) -> Vec<(String, String, Vec<Value>)> {
    let rm = &export["request"]["resourceMetrics"][0];
    assert_eq!(rm["scopeMetrics"][0]["scope"]["name"], "aiperf.records");
    rm["scopeMetrics"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("histogram").is_some())
        .map(|m| {
            let h = &m["histogram"];
            assert_eq!(
                h["aggregationTemporality"],
                "AGGREGATION_TEMPORALITY_CUMULATIVE"
            );
            (
                m["name"].as_str().unwrap().to_owned(),
                m["unit"].as_str().unwrap().to_owned(),
                h["dataPoints"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

/// The profiling points' (count, sum, min, max), after `scale`.
fn totals(points: &[Value], scale: f64, token_type: Option<&str>) -> (u64, f64, f64, f64) {
    let mut t = (0u64, 0.0, f64::INFINITY, f64::NEG_INFINITY);
    for p in points {
        let a = &p["attributes"];
        if attr(a, "aiperf.benchmark_phase").unwrap()["stringValue"] != "profiling" {
            continue;
        }
        if let Some(tt) = token_type
            && attr(a, "gen_ai.token.type").unwrap()["stringValue"] != tt
        {
            continue;
        }
        let count = num(&p["count"]) as u64;
        let buckets: u64 = p["bucketCounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| num(b) as u64)
            .sum();
        assert_eq!(buckets, count, "buckets add up to the count: {p}");
        t.0 += count;
        t.1 += num(&p["sum"]) * scale;
        t.2 = t.2.min(num(&p["min"]) * scale);
        t.3 = t.3.max(num(&p["max"]) * scale);
    }
    t
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Checks a metric's profiling totals against the JSON's figures of `tag`.
fn check_against_json(json: &Value, tag: &str, got: (u64, f64, f64, f64), what: &str) {
    let j = &json[tag];
    assert_eq!(got.0, j["count"].as_u64().unwrap(), "{what} count vs {tag}");
    for (k, v) in [("sum", got.1), ("min", got.2), ("max", got.3)] {
        let want = j[k].as_f64().unwrap();
        assert!(close(v, want), "{what} {k} {v} vs {tag} {want}");
    }
}

#[test]
fn a_run_streams_its_metrics_to_an_otlp_receiver_live_and_at_the_end() {
    let py = python();
    if !require_tool(
        "opentelemetry-proto",
        py.is_some(),
        "skipped: no python with opentelemetry-proto (pip install opentelemetry-proto; or set \
         RINGPERF_OTLP_PYTHON)",
    ) {
        return;
    }
    let rx = Receiver::start(&py.unwrap(), 0);
    let dir = tempfile::tempdir().unwrap();
    // One at a time, 300 ms each: the run lasts over 3 s, so a live export (every 2 s) comes
    // before the final one.
    let out = profile(
        &format!("127.0.0.1:{}", rx.port),
        dir.path(),
        &[
            "--concurrency",
            "1",
            "--request-count",
            "10",
            "--mock-ttft-ms",
            "300",
            "--mock-itl-ms",
            "1",
            "--mock-output-tokens",
            "3",
            "--otel-resource-attributes",
            "team=perf,site=lab",
            "--gen-ai-provider",
            "lab-vllm",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("OTLP"), "no export warning: {err}");
    let json = read_json(&dir.path().join("profile_export_aiperf.json"));
    // The echo, in the shape AIPerf 0.13 writes for the same flags (`aiperf profile … --otel-url
    // 127.0.0.1:PORT --otel-resource-attributes team=perf --gen-ai-provider lab-vllm --stream
    // metrics` wrote `{"metrics_url": "http://127.0.0.1:PORT/v1/metrics",
    // "stream_metrics_enabled": true, "stream_timing_enabled": false,
    // "custom_resource_attributes": {"team": "perf"}, "gen_ai_provider": "lab-vllm"}`).
    assert_eq!(
        json["input_config"]["otel"],
        serde_json::json!({
            "metrics_url": format!("http://127.0.0.1:{}/v1/metrics", rx.port),
            "custom_resource_attributes": {"team": "perf", "site": "lab"},
            "gen_ai_provider": "lab-vllm",
        })
    );
    let exports = rx.exports();
    assert!(
        exports.len() >= 2,
        "a live export and the final one: {}",
        exports.len()
    );
    for e in &exports {
        assert_eq!(e["content_type"], "application/x-protobuf");
    }

    // The live export saw part of the run; the last one all of it.
    let count_of = |e: &Value| {
        let m = metrics(e);
        let (_, _, p) = m
            .iter()
            .find(|(n, _, _)| n == "gen_ai.client.operation.duration")
            .unwrap();
        totals(p, 1.0, None).0
    };
    assert!(count_of(&exports[0]) < 10, "the first export is live");
    let last = exports.last().unwrap();
    assert_eq!(count_of(last), 10);
    // The timing domain beside them (`--stream` not given: both): live, at most the one
    // request of `--concurrency 1` in flight; at the end, all 10 sent and answered.
    let live = timing_values(&exports[0], "profiling");
    assert!(live["aiperf.timing.requests.sent"] <= 10.0, "{live:?}");
    assert!(live["aiperf.timing.requests.in_flight"] <= 1.0, "{live:?}");
    let end = timing_values(last, "profiling");
    assert_eq!(end["aiperf.timing.requests.sent"], 10.0);
    assert_eq!(end["aiperf.timing.requests.completed"], 10.0);
    assert_eq!(end["aiperf.timing.requests.in_flight"], 0.0);

    // The resource: AIPerf's attributes, then the user's.
    let res = &last["request"]["resourceMetrics"][0]["resource"]["attributes"];
    let s = |k: &str| attr(res, k).map(|v| v["stringValue"].clone());
    assert_eq!(s("service.name").unwrap(), "aiperf");
    assert_eq!(s("aiperf.endpoint.type").unwrap(), "chat");
    assert_eq!(s("aiperf.model.name").unwrap(), "mock-model");
    assert_eq!(s("team").unwrap(), "perf");
    assert_eq!(s("site").unwrap(), "lab");

    // Every metric against the JSON: the GenAI ones in seconds against milliseconds, the
    // aiperf.* ones in their base unit (ns against ms, or the JSON's own unit).
    let semconv = [
        ("gen_ai.client.operation.duration", "request_latency", None),
        (
            "gen_ai.client.operation.time_to_first_chunk",
            "time_to_first_token",
            None,
        ),
        (
            "gen_ai.client.operation.time_per_output_chunk",
            "inter_token_latency",
            None,
        ),
        (
            "gen_ai.client.token.usage",
            "output_token_count",
            Some("output"),
        ),
    ];
    let mut checked = 0;
    for (name, unit, points) in metrics(last) {
        if let Some((_, tag, tt)) = semconv.iter().find(|(n, _, _)| *n == name) {
            let scale = if unit == "s" { 1e3 } else { 1.0 };
            check_against_json(&json, tag, totals(&points, scale, *tt), &name);
            for p in &points {
                let a = &p["attributes"];
                assert_eq!(
                    attr(a, "gen_ai.operation.name").unwrap()["stringValue"],
                    "chat"
                );
                assert_eq!(
                    attr(a, "gen_ai.provider.name").unwrap()["stringValue"],
                    "lab-vllm"
                );
                assert_eq!(
                    attr(a, "gen_ai.request.model").unwrap()["stringValue"],
                    "mock-model"
                );
            }
            checked += 1;
            continue;
        }
        let tag = name.strip_prefix("aiperf.").expect("aiperf.<tag>");
        let json_unit = json[tag]["unit"]
            .as_str()
            .unwrap_or_else(|| panic!("{tag} in the JSON"));
        let scale = match (unit.as_str(), json_unit) {
            ("ns", "ms") => 1e-6,
            ("B", "KB") => 1.0 / 1024.0,
            (a, b) if a == b => 1.0,
            (a, b) => panic!("{name}: unit {a} against the JSON's {b}"),
        };
        check_against_json(&json, tag, totals(&points, scale, None), &name);
        checked += 1;
    }
    assert!(checked >= 10, "{checked} metrics checked");
    same_shape_as_aiperf(last);
}

fn keys(attrs: &Value) -> Vec<String> {
    let mut k: Vec<String> = attrs
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap().to_owned())
        .collect();
    k.sort();
    k
}

/// ringperf's export against AIPerf 0.13's for the same flags (tests/data/otel_aiperf).
fn same_shape_as_aiperf(ours: &Value) {
    let theirs = read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/otel_aiperf/last_export.json"),
    );
    let res = |e: &Value| keys(&e["request"]["resourceMetrics"][0]["resource"]["attributes"]);
    // AIPerf's SDK adds telemetry.sdk.*; its benchmark id is known before the run.
    let mut want: Vec<String> = res(&theirs)
        .into_iter()
        .filter(|k| !k.starts_with("telemetry.sdk.") && k != "aiperf.benchmark.id")
        .collect();
    want.push("site".into());
    want.sort();
    assert_eq!(res(ours), want);
    let by_name = |e: &Value| -> Vec<(String, Value)> {
        e["request"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["name"].as_str().unwrap().to_owned(), m.clone()))
            .collect()
    };
    let ours = by_name(ours);
    // Per-request values AIPerf's records carry and ringperf's do not (they are run-level
    // aggregates or AIPerf's internal credit latency in ringperf).
    let only_aiperf = [
        "aiperf.request_count",
        "aiperf.min_request_timestamp",
        "aiperf.max_response_timestamp",
        "aiperf.credit_drop_latency",
        "aiperf.usage_discrepancy_count",
    ];
    for (name, t) in by_name(&theirs) {
        let Some((_, o)) = ours.iter().find(|(n, _)| *n == name) else {
            assert!(only_aiperf.contains(&name.as_str()), "{name} missing");
            continue;
        };
        assert_eq!(o["unit"], t["unit"], "{name}");
        assert_eq!(o["description"], t["description"], "{name}");
        let (op, tp) = (
            &o["histogram"]["dataPoints"][0],
            &t["histogram"]["dataPoints"][0],
        );
        assert_eq!(op["explicitBounds"], tp["explicitBounds"], "{name}");
        assert_eq!(keys(&op["attributes"]), keys(&tp["attributes"]), "{name}");
    }
}

/// A receiver that is down, or answers 500: one warning line, the run and its files whole, and
/// what a later export carries is cumulative (the 500'd export's records are not lost).
#[test]
fn a_failing_receiver_is_a_warning_and_loses_nothing_of_the_run() {
    let py = python();
    if !require_tool(
        "opentelemetry-proto",
        py.is_some(),
        "skipped: no python with opentelemetry-proto",
    ) {
        return;
    }
    // Down: a port nobody listens on.
    let refused = crate::common::RefusedPort::new();
    let port = refused.port;
    let dir = tempfile::tempdir().unwrap();
    let fast = [
        "--concurrency",
        "2",
        "--request-count",
        "6",
        "--mock-ttft-ms",
        "1",
    ];
    let out = profile(&format!("http://127.0.0.1:{port}"), dir.path(), &fast);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("warning: OTLP export to").count(), 1, "{err}");
    let json = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(json["request_count"]["avg"].as_f64(), Some(6.0), "{json}");

    // 500 to the first (live) export, then 200: the final one carries every record.
    let rx = Receiver::start(&py.unwrap(), 1);
    let dir = tempfile::tempdir().unwrap();
    let slow = [
        "--concurrency",
        "1",
        "--request-count",
        "8",
        "--mock-ttft-ms",
        "300",
        "--mock-output-tokens",
        "2",
    ];
    let out = profile(&format!("127.0.0.1:{}", rx.port), dir.path(), &slow);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("HTTP 500"), "{err}");
    let exports = rx.exports();
    let last = exports.last().expect("the final export arrives");
    let json = read_json(&dir.path().join("profile_export_aiperf.json"));
    let m = metrics(last);
    let (_, _, p) = m
        .iter()
        .find(|(n, _, _)| n == "gen_ai.client.operation.duration")
        .unwrap();
    check_against_json(&json, "request_latency", totals(p, 1e3, None), "duration");
    assert_eq!(totals(p, 1.0, None).0, 8);
}

/// The timing sums of one export: name → value of the point of `phase`.
fn timing_values(export: &Value, phase: &str) -> std::collections::BTreeMap<String, f64> {
    timing_metrics(export)
        .iter()
        .filter_map(|m| {
            let p = m["sum"]["dataPoints"].as_array()?.iter().find(|p| {
                attr(&p["attributes"], "aiperf.benchmark_phase").unwrap()["stringValue"] == phase
            })?;
            Some((m["name"].as_str()?.to_owned(), num(&p["asDouble"])))
        })
        .collect()
}

fn timing_metrics(export: &Value) -> Vec<Value> {
    export["request"]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["name"].as_str().unwrap().starts_with("aiperf.timing."))
        .cloned()
        .collect()
}

/// `--stream timing`: AIPerf's phase counters and gauges only, each point checked against the
/// run's own records and phase JSON (sent and completed per phase, in flight ending at 0), and
/// their shape against AIPerf 0.13's export for the same flags (tests/data/otel_aiperf).
#[test]
fn the_timing_domain_streams_each_phase_s_counters_and_gauges() {
    let py = python();
    if !require_tool(
        "opentelemetry-proto",
        py.is_some(),
        "skipped: no python with opentelemetry-proto",
    ) {
        return;
    }
    let rx = Receiver::start(&py.unwrap(), 0);
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let out = profile(
        &format!("127.0.0.1:{}", rx.port),
        dir.path(),
        &[
            "--request-count",
            "4",
            "--concurrency",
            "1",
            "--warmup-request-count",
            "2",
            "--gen-ai-provider",
            "lab-vllm",
            "--stream",
            "timing",
            "--mock-ttft-ms",
            "1",
        ],
    );
    let wall = started.elapsed().as_secs_f64();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let exports = rx.exports();
    let last = exports.last().expect("an export");
    // No histogram: the metrics domain is off.
    assert!(metrics(last).is_empty());
    let ours = timing_metrics(last);
    let theirs = timing_metrics(&read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/otel_aiperf/timing_last_export.json"),
    ));
    let names = |ms: &[Value]| {
        let mut n: Vec<String> = ms
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_owned())
            .collect();
        n.sort();
        n
    };
    // The same instruments as AIPerf's (a counter that stayed 0 and a gauge never moved from 0
    // are not sent by either), with the same unit, description, kind and point attributes.
    assert_eq!(names(&ours), names(&theirs));
    for t in &theirs {
        let o = ours.iter().find(|m| m["name"] == t["name"]).unwrap();
        for k in ["unit", "description"] {
            assert_eq!(o[k], t[k], "{} {k}", t["name"]);
        }
        for k in ["isMonotonic", "aggregationTemporality"] {
            assert_eq!(o["sum"][k], t["sum"][k], "{} {k}", t["name"]);
        }
        let attrs = |m: &Value| -> Vec<Vec<String>> {
            m["sum"]["dataPoints"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| keys(&p["attributes"]))
                .collect()
        };
        assert_eq!(attrs(o), attrs(t), "{}", t["name"]);
    }
    // Every point against the run's records (both phases are in the records file; the warmup
    // count also against its phase JSON).
    let records: Vec<Value> = std::fs::read_to_string(dir.path().join("profile_export.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answered = |phase: &str| -> (f64, f64) {
        let mine: Vec<&Value> = records
            .iter()
            .filter(|r| r["metadata"]["benchmark_phase"] == phase)
            .collect();
        let cancelled = mine
            .iter()
            .filter(|r| r["metadata"]["was_cancelled"] == true)
            .count();
        (mine.len() as f64, (mine.len() - cancelled) as f64)
    };
    let warmup = read_json(&dir.path().join("phases/warmup/profile_export_aiperf.json"));
    assert_eq!(
        warmup["request_count"]["avg"].as_f64(),
        Some(answered("warmup").0)
    );
    for (phase, expected) in [("warmup", 2.0), ("profiling", 4.0)] {
        let v = timing_values(last, phase);
        let (sent, completed) = answered(phase);
        assert_eq!(sent, expected, "{phase}");
        assert_eq!(v["aiperf.timing.requests.sent"], sent, "{phase}");
        assert_eq!(v["aiperf.timing.requests.completed"], completed, "{phase}");
        // Single-turn: a session per request.
        assert_eq!(v["aiperf.timing.sessions.sent"], sent, "{phase}");
        assert_eq!(v["aiperf.timing.sessions.completed"], completed, "{phase}");
        assert_eq!(v["aiperf.timing.sessions.turns_total"], sent, "{phase}");
        assert_eq!(v["aiperf.timing.requests.in_flight"], 0.0, "{phase}");
        assert_eq!(v["aiperf.timing.sessions.in_flight"], 0.0, "{phase}");
        let elapsed = v["aiperf.timing.phase.elapsed_sec"];
        assert!(
            elapsed > 0.0 && elapsed < wall,
            "{phase}: {elapsed} of {wall} s"
        );
        let expected_attr = timing_metrics(last)[0]["sum"]["dataPoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["attributes"])
            .find(|a| attr(a, "aiperf.benchmark_phase").unwrap()["stringValue"] == phase)
            .and_then(|a| attr(a, "aiperf.total_expected_requests"))
            .map(|x| num(&x["intValue"]));
        assert_eq!(expected_attr, Some(expected), "{phase}");
    }
}

/// A companion without `--otel-url` is refused, as AIPerf refuses it.
#[test]
fn otel_companions_need_the_url() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "m", "--mock", "--stream", "metrics"])
        .args(["--gen-ai-provider", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--stream, --gen-ai-provider requires --otel-url to be set"),
        "{err}"
    );
}
