//! Client artifacts end to end against the in-process mock: the raw export checked against the
//! mock's own record of every body it received and every reply it sent, and the key sets of
//! the raw and timeslice exports against AIPerf 0.13's own files (`tests/data/aiperf-client/`).

use crate::common;
use common::{config, read_json, read_jsonl};

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use ringperf_metrics::aggregate::REGISTRY;
use ringperf_mock::mock::TruthEntry;
use serde_json::Value;

/// The text a client received: `delta.content` of every streamed chunk, or `message.content`.
fn reply_text(line: &Value) -> String {
    let mut text = String::new();
    for r in line["responses"].as_array().expect("responses") {
        let chunks: Vec<String> = match (r.get("packets"), r.get("text")) {
            (Some(p), _) => p
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["name"] == "data" && p["value"] != "[DONE]")
                .map(|p| p["value"].as_str().unwrap().to_string())
                .collect(),
            (None, Some(t)) => vec![t.as_str().unwrap().to_string()],
            (None, None) => panic!("a response is SSE packets or text: {r}"),
        };
        for c in chunks {
            let v: Value = serde_json::from_str(&c).expect("JSON chunk");
            let choice = &v["choices"][0];
            let content = choice["delta"]["content"]
                .as_str()
                .or_else(|| choice["message"]["content"].as_str());
            text.push_str(content.unwrap_or(""));
        }
    }
    text
}

fn check_raw(streaming: bool) {
    let server = common::recording_mock(5);
    let dir = tempfile::tempdir().unwrap();
    let stream = if streaming { "--streaming" } else { "" };
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} {stream} --concurrency 2 --request-count 8 \
         --isl 10 --osl 5 --random-seed 3 --export-level raw --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (8, 0));

    let path = dir.path().join("profile_export_raw.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = read_jsonl(&path);
    let truth: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    assert_eq!(lines.len(), 8, "one line per request");
    assert_eq!(truth.len(), 8);
    // The per-record JSONL is written at the raw level too.
    assert_eq!(
        read_jsonl(&dir.path().join("profile_export.jsonl")).len(),
        8
    );

    let mut seen = BTreeSet::new();
    for (line, raw_line) in lines.iter().zip(text.lines()) {
        let id = line["metadata"]["x_request_id"].as_str().unwrap();
        assert!(seen.insert(id.to_string()), "each request once");
        let t = &truth[id];
        // The payload is the body the mock received, byte for byte, spliced in last.
        let body = std::str::from_utf8(t.request_body.as_deref().unwrap()).unwrap();
        assert!(
            raw_line.ends_with(&format!(",\"payload\":{body}}}")),
            "payload of {id} is the body received: {body} vs {raw_line}"
        );
        // The reply is the text the mock sent.
        assert_eq!(reply_text(line), t.reply_text.clone().unwrap(), "{id}");
        assert_eq!(line["status"], 200);
        let h = &line["request_headers"];
        assert_eq!(h["X-Request-ID"], id);
        assert_eq!(
            h["X-Correlation-ID"].as_str(),
            t.correlation_id.as_deref(),
            "{id}"
        );
        assert_eq!(
            h["Accept"],
            if streaming {
                "text/event-stream"
            } else {
                "application/json"
            }
        );
        // Causality on one clock: the client started writing before the mock had read the
        // request, and received each token write after the mock made it.
        let start = line["start_perf_ns"].as_u64().unwrap();
        assert!(
            start <= t.arrival_ns,
            "{id}: start {start} > arrival {}",
            t.arrival_ns
        );
        let stamps: Vec<u64> = line["responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["perf_ns"].as_u64().unwrap())
            .collect();
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{id}: {stamps:?}");
        if streaming {
            // Role chunk, 5 token chunks, finish/usage chunk(s), [DONE].
            let last = line["responses"].as_array().unwrap().last().unwrap();
            assert_eq!(last["packets"][0]["value"], "[DONE]");
            assert!(stamps.len() >= 7, "{id}: {} messages", stamps.len());
            assert!(
                stamps[0] >= t.head_ns,
                "{id}: first message before the mock wrote it"
            );
        } else {
            assert_eq!(stamps.len(), 1);
            assert!(stamps[0] >= t.end_ns, "{id}: body before the mock wrote it");
        }
    }
}

#[test]
fn raw_export_matches_the_mock_truth_streaming() {
    check_raw(true);
}

#[test]
fn raw_export_matches_the_mock_truth_non_streaming() {
    check_raw(false);
}

/// Every key path of a JSON value (`a.b`, `a[].c`), objects recursively, array items merged.
fn key_paths(v: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

fn paths(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    key_paths(v, "", &mut out);
    out
}

fn aiperf_fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/aiperf-client")
        .join(name)
}

/// A raw line of ringperf has exactly the keys of AIPerf's for the same streaming run
/// (metadata keys AIPerf has and ringperf does not write yet are listed and excluded).
#[test]
fn raw_export_keys_match_aiperf() {
    let server = common::recording_mock(5);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --concurrency 1 --request-count 2 \
         --isl 8 --osl 5 --random-seed 1 --export-level raw --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).unwrap();
    let ours: BTreeSet<String> = read_jsonl(&dir.path().join("profile_export_raw.jsonl"))
        .iter()
        .flat_map(paths)
        .collect();
    let theirs: BTreeSet<String> = read_jsonl(&aiperf_fixture("profile_export_raw.jsonl"))
        .iter()
        .flat_map(paths)
        .filter(|p| !p.starts_with(".payload."))
        .collect();
    let ours: BTreeSet<String> = ours
        .into_iter()
        .filter(|p| !p.starts_with(".payload."))
        .collect();
    // Metadata AIPerf writes that ringperf's per-record export does not have yet (shared with
    // profile_export.jsonl, owned there).
    let pending: BTreeSet<&str> = [
        ".metadata.phase_index",
        ".metadata.profiling_index",
        ".metadata.phase_name",
        ".metadata.phase_kind",
        ".metadata.root_correlation_id",
    ]
    .into();
    let theirs: BTreeSet<String> = theirs
        .into_iter()
        .filter(|p| !pending.contains(p.as_str()))
        .collect();
    // ringperf's own key, written only when some read completed several SSE messages at once.
    let ours: BTreeSet<String> = ours
        .into_iter()
        .filter(|p| !pending.contains(p.as_str()) && p != ".metadata.coalesced_reads")
        .collect();
    assert_eq!(ours, theirs);

    // The summary's run id and run_info as AIPerf writes them.
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let theirs = read_json(&aiperf_fixture("profile_export_aiperf.json"));
    for doc in [&summary, &theirs] {
        let id = doc["benchmark_id"].as_str().unwrap();
        assert_eq!(id.len(), 12, "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{id}"
        );
        assert_eq!(doc["run_info"]["benchmark_id"], doc["benchmark_id"]);
        assert_eq!(doc["run_info"]["trial"], 0);
    }
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&summary["run_info"]), keys(&theirs["run_info"]));
}

/// Client timeslices: every profiling record counted in exactly one slice (slice request
/// counts sum to the run's), slices contiguous on AIPerf's grid, and the JSON and CSV have the
/// keys, stats and columns of AIPerf's for the same kind of run.
#[test]
fn timeslices_cover_every_record_and_match_aiperf_keys() {
    // Tokens spaced in time, as in AIPerf's run (an ITL of 0 has no per-user throughput).
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(5),
        ttft: std::time::Duration::from_millis(2),
        itl: std::time::Duration::from_millis(1),
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --concurrency 2 --request-count 12 \
         --isl 8 --osl 5 --slice-duration 0.005 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).unwrap();
    let doc = read_json(&dir.path().join("profile_export_aiperf_timeslices.json"));
    let slices = doc["timeslices"].as_array().unwrap();
    assert!(!slices.is_empty());
    let counted: f64 = slices
        .iter()
        .map(|s| s["request_count"]["avg"].as_f64().unwrap())
        .sum();
    assert_eq!(counted, 12.0, "every record in exactly one slice");
    // Slices sit on one grid of 5 ms from the first request's start.
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let t0 = records
        .iter()
        .map(|r| r["metadata"]["request_start_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    for (i, s) in slices.iter().enumerate() {
        let (start, end) = (
            s["start_ns"].as_u64().unwrap(),
            s["end_ns"].as_u64().unwrap(),
        );
        assert_eq!((start - t0) % 5_000_000, 0, "slice {i} on the grid");
        let last = i + 1 == slices.len();
        if s.get("is_complete").is_some() {
            assert!(last, "only the last slice can be partial");
            assert_eq!(s["is_complete"], false);
            assert!(end - start <= 5_000_000);
        } else {
            assert_eq!(end - start, 5_000_000);
        }
        // Each slice's count is the number of records that started in it.
        let n = records
            .iter()
            .filter(|r| {
                let t = r["metadata"]["request_start_ns"].as_u64().unwrap();
                t >= start && t < start + 5_000_000
            })
            .count();
        assert_eq!(
            s["request_count"]["avg"].as_f64().unwrap(),
            n as f64,
            "slice {i}"
        );
    }

    // Key sets against AIPerf's files: top level, and the stats of one distribution metric.
    let theirs = read_json(&aiperf_fixture("profile_export_aiperf_timeslices.json"));
    let top = |v: &Value| {
        v.as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(top(&doc), top(&theirs));
    let stats = |v: &Value| top(&v["timeslices"][0]["request_latency"]);
    assert_eq!(stats(&doc), stats(&theirs));
    // The metric set of the slices is AIPerf's (no `credit_to_start_latency`, no
    // `effective_latency`: AIPerf adds those to the whole run only), less the metrics ringperf
    // does not define; `is_complete` depends on where the run ended.
    let known = |tag: &str| {
        let base = tag.strip_prefix("adj_").unwrap_or(tag);
        ["start_ns", "end_ns"].contains(&tag) || REGISTRY.iter().any(|d| d.tag == base)
    };
    let metric_set = |v: &Value| -> BTreeSet<String> {
        v["timeslices"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s.as_object().unwrap().keys().cloned())
            .filter(|k| k != "is_complete" && known(k))
            .collect()
    };
    assert_eq!(metric_set(&doc), metric_set(&theirs));
    for s in slices {
        assert!(s.get("effective_latency").is_none() && s.get("credit_to_start_latency").is_none());
    }
    let csv =
        std::fs::read_to_string(dir.path().join("profile_export_aiperf_timeslices.csv")).unwrap();
    let their_csv =
        std::fs::read_to_string(aiperf_fixture("profile_export_aiperf_timeslices.csv")).unwrap();
    assert_eq!(
        csv.split("\r\n").next(),
        their_csv.split("\r\n").next(),
        "CSV header"
    );
    // The stats written per distribution metric, in order.
    let latency_stats = |text: &str| -> Vec<String> {
        text.split("\r\n")
            .filter(|l| l.starts_with("0,") && l.contains(",Request Latency,"))
            .map(|l| l.rsplit(',').nth(1).unwrap().to_string())
            .collect()
    };
    assert_eq!(latency_stats(&csv), latency_stats(&their_csv));
}
