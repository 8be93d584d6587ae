//! `--per-chunk-usage`, `--export-outputs-json` and `--plot-required` end to end: real runs of
//! the binary against the in-process mock, every count and text checked against the mock's
//! truth log (what it generated, how many tokens each chunk carried), the file's shape against
//! AIPerf 0.13's own `outputs.json` (tests/data/aiperf-outputs-json/).

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, OutputLen, PromptTokenizer};
use serde_json::Value;

const OSL: u64 = 10;
const TOKENS_PER_EVENT: u64 = 3;

/// A mock that answers `OSL` tokens, `TOKENS_PER_EVENT` to a chunk, and keeps bodies and texts.
fn chunking_mock() -> ringperf_mock::mock::MockServer {
    ringperf_mock::mock::start(MockConfig {
        output_tokens: OutputLen::Fixed(OSL),
        tokens_per_event: TOKENS_PER_EVENT as usize,
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(3),
        truth_log: true,
        record_bodies: true,
        prompt_tokenizer: Some(PromptTokenizer(Arc::new(
            ringperf_workload::workload::Tokenizer::builtin(),
        ))),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// `(record, truth entry)` of every request of the run in `dir`.
fn records_with_truth(
    dir: &Path,
    server: &ringperf_mock::mock::MockServer,
) -> Vec<(Value, ringperf_mock::mock::TruthEntry)> {
    let truth = server.truth();
    common::read_jsonl(&dir.join("profile_export.jsonl"))
        .into_iter()
        .map(|r| {
            let id = r["metadata"]["x_request_id"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let t = truth.get(&id).expect("the mock saw the request");
            (r, t)
        })
        .collect()
}

fn metric(r: &Value, tag: &str) -> f64 {
    r["metrics"][tag]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("{tag} in {r}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// With `--per-chunk-usage` the request asks for usage on every chunk, OSL is the server's
/// count, and ITL is `(latency − TTFT) / (OSL − tokens of the first chunk)`, the first chunk's
/// tokens being what the mock put in it (`min(tokens per event, OSL)` by its truth log);
/// without the flag the same run divides by `OSL − 1`.
#[test]
fn per_chunk_usage_divides_the_decode_time_by_the_tokens_after_the_first_chunk() {
    let server = chunking_mock();
    let tmp = tempfile::tempdir().unwrap();
    let (with, without) = (tmp.path().join("with"), tmp.path().join("without"));
    let base = ["--use-server-token-count", "--osl", "10", "--isl", "16"];
    let flagged: Vec<&str> = base.iter().copied().chain(["--per-chunk-usage"]).collect();
    common::profile_binary(&server, &with, 4, &flagged, &[]);
    let n_with = server.truth().len();
    common::profile_binary(&server, &without, 4, &base, &[]);
    let mut timed = 0;
    for (dir, per_chunk) in [(&with, true), (&without, false)] {
        let records = records_with_truth(dir, &server);
        assert_eq!(records.len(), 4, "{}", dir.display());
        for (r, t) in records {
            let body = String::from_utf8_lossy(t.request_body.as_deref().unwrap()).into_owned();
            assert_eq!(
                body.contains(r#""continuous_usage_stats":true"#),
                per_chunk,
                "{body}"
            );
            let osl = t.content_tokens + t.reasoning_tokens;
            assert_eq!(osl, OSL);
            assert_eq!(metric(&r, "output_sequence_length"), osl as f64);
            let first_chunk = t.tokens_per_event.min(osl);
            assert_eq!(first_chunk, TOKENS_PER_EVENT);
            let divisor = if per_chunk {
                osl - first_chunk
            } else {
                osl - 1
            };
            let decode = metric(&r, "request_latency") - metric(&r, "time_to_first_token");
            let itl = metric(&r, "inter_token_latency");
            assert!(
                close(itl, decode / divisor as f64),
                "ITL {itl} ms, decode {decode} ms over {divisor} tokens ({})",
                dir.display()
            );
            // Chunks a late start sent in one write have no decode time and no rate per user.
            if itl > 0.0 {
                assert!(close(
                    metric(&r, "output_token_throughput_per_user"),
                    1e3 / itl
                ));
                timed += 1;
            }
        }
    }
    assert!(timed > 0, "some request's chunks arrived apart");
    // The first run's requests were the first four the mock saw.
    assert_eq!(n_with, 4);
}

/// `outputs.json`: one entry per profiling request, its text what the mock generated for it,
/// its ids, times and metrics those of the record; every key and value shape as in AIPerf's own
/// recording of a streamed run.
#[test]
fn outputs_json_holds_what_the_mock_generated_in_aiperfs_shape() {
    let server = chunking_mock();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = common::profile_binary(
        &server,
        &dir,
        5,
        &["--export-outputs-json", "--warmup-request-count", "2"],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let path = dir.join("outputs.json");
    assert!(
        stdout.contains(&format!("Outputs JSON: {}", path.display())),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.ends_with('\n'), "no final newline, as AIPerf");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let aiperf: Value = serde_json::from_str(
        &std::fs::read_to_string("tests/data/aiperf-outputs-json/streaming.json").unwrap(),
    )
    .unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&doc), keys(&aiperf));
    assert_eq!(doc["schema_version"], aiperf["schema_version"]);
    let entries = doc["data"].as_array().unwrap();
    let model = &aiperf["data"][0];
    // Profiling requests only (the warmup's two are not there), sorted by session.
    let records = records_with_truth(&dir, &server);
    let profiling: Vec<&(Value, _)> = records
        .iter()
        .filter(|(r, _)| r["metadata"]["benchmark_phase"] == "profiling")
        .collect();
    assert_eq!(entries.len(), 5);
    assert_eq!(profiling.len(), 5);
    let sessions: Vec<u64> = entries
        .iter()
        .map(|e| e["session_num"].as_u64().unwrap())
        .collect();
    assert!(sessions.windows(2).all(|w| w[0] <= w[1]), "{sessions:?}");
    let ids: BTreeSet<&str> = entries
        .iter()
        .map(|e| e["x_request_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 5);
    for e in entries {
        assert_eq!(keys(e), keys(model));
        assert_eq!(keys(&e["metrics"]), keys(&model["metrics"]));
        for (k, v) in e.as_object().unwrap() {
            let same_shape = match k.as_str() {
                "metrics" => v.is_object(),
                _ => {
                    (v.is_string(), v.is_u64(), v.is_null())
                        == (model[k].is_string(), model[k].is_u64(), model[k].is_null())
                }
            };
            assert!(same_shape, "{k}: {v} (AIPerf: {})", model[k]);
        }
        let (r, t) = profiling
            .iter()
            .find(|(r, _)| r["metadata"]["x_request_id"] == e["x_request_id"])
            .expect("a profiling record");
        assert_eq!(e["response_text"].as_str(), t.reply_text.as_deref());
        let md = &r["metadata"];
        for k in [
            "session_num",
            "conversation_id",
            "turn_index",
            "request_start_ns",
            "request_end_ns",
        ] {
            assert_eq!(e[k], md[k], "{k}");
        }
        for (tag, v) in e["metrics"].as_object().unwrap() {
            assert_eq!(v, &r["metrics"][tag]["value"], "{tag}");
        }
        assert_eq!(e["metrics"]["output_sequence_length"], OSL);
    }
}

fn profile_mock(dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--mock", "--streaming", "--ui", "none"])
        .args([
            "--request-count",
            "3",
            "--mock-ttft-ms",
            "1",
            "--mock-itl-ms",
            "0",
        ])
        .args(["--mock-output-tokens", "4", "--no-server-metrics"])
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("the binary runs")
}

/// `--auto-plot --plot-required`: a report that cannot be made (the artifact directory holds a
/// file named `plots`, as in AIPerf's recording, tests/data/aiperf-plot-required/) fails the run
/// with AIPerf's exit code 1, every other artifact written; without `--plot-required` the same
/// failure is a warning and the run exits 0; with a report that can be made it exits 0.
#[test]
fn plot_required_fails_the_run_only_when_the_report_cannot_be_made() {
    let recorded =
        std::fs::read_to_string("tests/data/aiperf-plot-required/multi_run_plots_is_a_file.txt")
            .unwrap();
    let aiperf_code: i32 = recorded
        .lines()
        .find_map(|l| l.strip_prefix("exit code: "))
        .unwrap()
        .parse()
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for (name, required, blocked, code) in [
        ("required-blocked", true, true, aiperf_code),
        ("optional-blocked", false, true, 0),
        ("required-clear", true, false, 0),
    ] {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if blocked {
            std::fs::write(dir.join("plots"), b"").unwrap();
        }
        let mut extra = vec!["--auto-plot"];
        if required {
            extra.push("--plot-required");
        }
        let out = profile_mock(&dir, &extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{name}: {err}");
        for f in [
            "profile_export_aiperf.json",
            "profile_export_aiperf.csv",
            "profile_export.jsonl",
        ] {
            assert!(dir.join(f).is_file(), "{name}: {f}");
        }
        let summary = common::read_json(&dir.join("profile_export_aiperf.json"));
        assert_eq!(
            summary["input_config"]["artifacts"]["plot_required"], required,
            "{name}"
        );
        assert_eq!(dir.join("report.html").is_file(), !blocked, "{name}");
        if blocked {
            let said = if required {
                "auto-plot failed and --plot-required is given"
            } else {
                "ringperf: auto-plot: "
            };
            assert!(err.contains(said) && err.contains("plots"), "{name}: {err}");
        }
    }
    // Without --auto-plot it makes no report and says it has no effect.
    let dir = tmp.path().join("no-auto-plot");
    let out = profile_mock(&dir, &["--plot-required"]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: --plot-required has no effect: without --auto-plot"),
        "{err}"
    );
    assert!(!dir.join("report.html").exists());
}
