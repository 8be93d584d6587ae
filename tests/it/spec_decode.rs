//! Speculative decoding: vLLM's per-request `metrics.speculative_decoding` read into AIPerf
//! 0.13's `spec_decode_*` metrics, against AIPerf's own run (tests/data/aiperf-spec-decode) and
//! end to end against the mock that reports them.

use crate::common;

use common::{read_json, read_jsonl};

use std::path::Path;
use std::time::Duration;

use ringperf_metrics::aggregate::{
    Accumulator, ConsoleGroup, MetricConfig, MetricValue, record_metrics,
};
use ringperf_mock::mock::{MockConfig, MockServer, OutputLen, SpecDecodeStats};
use ringperf_wire::record::spec_decode::SpecDecode;
use serde_json::{Value, json};

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-spec-decode")
}

/// vLLM's payload of the mock's stats (the shape the mock sends).
fn payload(s: &SpecDecodeStats, k: u32) -> Value {
    json!({
        "mean_acceptance_length": s.mean_acceptance_length(),
        "draft_acceptance_rate": s.draft_acceptance_rate(),
        "acceptance_histogram": s.histogram,
        "num_accepted_draft_tokens": s.accepted,
        "num_draft_tokens": s.drafted,
        "num_spec_steps": s.steps,
        "num_spec_tokens": k,
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// AIPerf ran against the mock reporting 3 drafts a step; each request's payload is a function
/// of its completion tokens, which AIPerf's records give. Read by ringperf, the same payloads
/// give AIPerf's per-request values, its eleven results, its pooled histogram, CSV rows and
/// console section.
#[test]
fn spec_decode_of_aiperfs_run_is_aiperfs() {
    let cfg = MetricConfig::new(true, false);
    let mut acc = Accumulator::new(cfg.clone());
    for line in read_jsonl(&data().join("records.jsonl")) {
        let m = &line["metrics"];
        let tokens = m["usage_completion_tokens"]["value"]
            .as_u64()
            .expect("tokens");
        let stats = SpecDecodeStats::of(tokens, 3);
        let spec = SpecDecode::from_vllm(&payload(&stats, 3)).expect("a valid payload");
        let facts = ringperf_wire::record::RecordFacts {
            spec_decode: Some(spec),
            ..ringperf_metrics::aggregate::testing::facts()
        };
        let ours = record_metrics(&cfg, &facts);
        for tag in [
            "spec_decode_acceptance_length",
            "spec_decode_draft_acceptance_rate",
            "spec_decode_accepted_per_verified",
            "spec_decode_steps",
            "spec_decode_accepted_draft_tokens",
            "spec_decode_draft_tokens",
        ] {
            let (_, v) = (ours.values.iter())
                .find(|(id, _)| id.def().tag == tag)
                .unwrap_or_else(|| panic!("{tag}"));
            let v = match v {
                MetricValue::Int(n) => *n as f64,
                MetricValue::Float(f) => *f,
                other => panic!("{other:?}"),
            };
            let want = m[tag]["value"].as_f64().expect("AIPerf's value");
            assert!(close(v, want), "{tag}: {v} vs {want}");
        }
        acc.add(&facts, &ours);
    }
    let summary = acc.finish();
    let theirs = read_json(&data().join("summary.json"));
    let histogram: serde_json::Map<String, Value> = (summary.spec_decode_histogram.iter())
        .map(|(j, c)| (j.to_string(), json!(c)))
        .collect();
    assert_eq!(
        Value::Object(histogram),
        theirs["pooled_spec_decode_acceptance_histogram"]
    );
    let mut compared = 0;
    for r in summary
        .results
        .iter()
        .filter(|r| r.def.tag.contains("spec_decode") || r.def.tag.ends_with("draft_tokens"))
    {
        let ours = ringperf_metrics::export::json::metric_json(r);
        let want = &theirs[r.def.tag];
        let keys =
            |v: &Value| -> Vec<String> { v.as_object().expect("o").keys().cloned().collect() };
        assert_eq!(keys(&ours), keys(want), "{}", r.def.tag);
        for (k, w) in want.as_object().expect("o") {
            match w.as_f64() {
                Some(w) => assert!(
                    close(ours[k].as_f64().expect("n"), w),
                    "{}.{k}: {} vs {w}",
                    r.def.tag,
                    ours[k]
                ),
                None => assert_eq!(&ours[k], w, "{}.{k}", r.def.tag),
            }
        }
        compared += 1;
    }
    assert_eq!(compared, 11);
    // CSV: AIPerf's rows, in its order.
    let csv = ringperf_metrics::export::csv::summary_csv(&summary);
    let want = std::fs::read_to_string(data().join("csv_rows.csv")).expect("csv");
    let wanted: Vec<&str> = want.lines().collect();
    let rows: Vec<&str> = csv.lines().filter(|l| wanted.contains(l)).collect();
    assert_eq!(rows, wanted);
    // Console: the table's rows and the histogram's line.
    use ringperf_metrics::export::console::{render_table, rows_of};
    let table = render_table("t", &rows_of(&summary, ConsoleGroup::SpecDecode));
    let line =
        ringperf_metrics::aggregate::spec_decode::histogram_line(&summary.spec_decode_histogram)
            .expect("a line");
    let cells = |text: &str| -> Vec<Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| l.split('│').map(|c| c.trim().to_owned()).collect())
            .collect()
    };
    let want = std::fs::read_to_string(data().join("console.txt")).expect("console");
    assert_eq!(cells(&table), cells(&want));
    assert_eq!(want.lines().last().map(str::trim), Some(line.as_str()));
}

fn mock(k: u32) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Uniform { min: 5, max: 40 },
        spec_decode: k,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// The run's per-request values and pooled histogram, checked against the mock's payload of
/// each request's completion tokens; streamed (the usage chunk carries it) and not (the body).
#[test]
fn the_mocks_payloads_become_aiperfs_metrics_streamed_and_not() {
    let server = mock(4);
    for (streaming, endpoint) in [(true, "chat"), (false, "chat"), (false, "completions")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = if streaming {
            common::profile_binary(&server, dir.path(), 30, &["--no-server-metrics"], &[])
        } else {
            // A whole body carries the stats beside its usage.
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
                .args(["profile", "-m", "mock-model", "--ui", "none", "--tokenizer"])
                .args(["builtin", "--endpoint-type", endpoint, "--concurrency", "2"])
                .args(["--request-count", "30", "--no-server-metrics", "--url"])
                .arg(format!("http://{}", server.addr))
                .arg("--artifact-dir")
                .arg(dir.path())
                .output()
                .expect("runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out
        };
        let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
        let mut pooled = [0u64; 5];
        let (mut steps, mut accepted, mut drafted) = (0, 0, 0);
        for r in &records {
            let m = &r["metrics"];
            let tokens = m["usage_completion_tokens"]["value"]
                .as_u64()
                .expect("usage");
            let s = SpecDecodeStats::of(tokens, 4);
            assert_eq!(m["spec_decode_steps"]["value"], s.steps);
            assert_eq!(m["spec_decode_accepted_draft_tokens"]["value"], s.accepted);
            assert_eq!(m["spec_decode_draft_tokens"]["value"], s.drafted);
            assert!(close(
                m["spec_decode_acceptance_length"]["value"]
                    .as_f64()
                    .expect("len"),
                s.mean_acceptance_length()
            ));
            for (p, c) in pooled.iter_mut().zip(&s.histogram) {
                *p += c;
            }
            (steps, accepted, drafted) =
                (steps + s.steps, accepted + s.accepted, drafted + s.drafted);
        }
        assert_eq!(records.len(), 30);
        let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
        let want: serde_json::Map<String, Value> = (pooled.iter().enumerate())
            .filter(|(_, c)| **c > 0)
            .map(|(j, c)| (j.to_string(), json!(c)))
            .collect();
        assert_eq!(
            doc["pooled_spec_decode_acceptance_histogram"],
            Value::Object(want)
        );
        assert_eq!(doc["total_spec_decode_steps"]["avg"], steps as f64);
        assert!(close(
            doc["spec_decode_token_weighted_acceptance_length"]["avg"]
                .as_f64()
                .expect("avg"),
            1.0 + accepted as f64 / steps as f64
        ));
        assert!(close(
            doc["spec_decode_overall_draft_acceptance_rate"]["avg"]
                .as_f64()
                .expect("avg"),
            accepted as f64 / drafted as f64 * 100.0
        ));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("LLM Metrics: Spec Decode"), "{stdout}");
        assert!(
            stdout.contains("  Accepted drafts per step (% of steps):  0: "),
            "{stdout}"
        );
    }
}

#[test]
fn without_stats_there_are_no_spec_decode_figures() {
    let server = mock(0);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::profile_binary(&server, dir.path(), 5, &["--no-server-metrics"], &[]);
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert!(
        doc.as_object()
            .expect("o")
            .keys()
            .all(|k| !k.contains("spec_decode") && !k.ends_with("draft_tokens"))
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Spec Decode"));
}
