//! Per-phase server metrics of a live run (`ringperf profile`, the binary, against the in-process
//! mock): `phases/<phase>/server_metrics.json` against AIPerf 0.13's own files
//! (`tests/data/aiperf-phases/`), the scrape counts against the collector's own JSONL record, and
//! the warmup and profiling windows against the server's counter.

use crate::common;

use common::read_json;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use ringperf_mock::mock::{MetricsMode, MockConfig, MockServer, OutputLen};
use serde_json::Value;

const AIPERF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aiperf-phases");
const PHASES: [&str; 2] = ["warmup", "profiling"];

fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(16),
        metrics_mode: MetricsMode::Vllm,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// `ringperf profile` with 4 warmup and `requests` profiling requests, fast collection timing.
fn profile(server: &MockServer, dir: &Path, requests: u32, extra: &[&str]) {
    let mut args = vec!["--warmup-request-count", "4"];
    args.extend_from_slice(extra);
    common::profile_binary(server, dir, requests, &args, &[]);
}

/// Every key path of `v`: list items merged, the endpoint key and the bucket bounds generic.
/// Counter `rate_avg` / `rate_min` / `rate_max` / `rate_std` and `is_complete` are left out:
/// whether a phase holds a complete timeslice depends on how long it ran.
fn key_paths(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k.starts_with("rate_") || k == "is_complete" {
                    continue;
                }
                let k = if path.ends_with(".endpoint_summaries") {
                    "<endpoint>"
                } else if path.ends_with(".buckets") {
                    "<le>"
                } else {
                    k.as_str()
                };
                let p = format!("{path}.{k}");
                key_paths(x, &p, out);
                out.insert(p);
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{path}[]"), out);
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

/// Sum of `stats.total` over every series of counter `name` in a `metrics` object.
fn counter_total(metrics: &Value, name: &str) -> f64 {
    metrics[name]["series"]
        .as_array()
        .unwrap_or_else(|| panic!("{name} exported"))
        .iter()
        .map(|s| s["stats"]["total"].as_f64().expect("total"))
        .sum()
}

#[test]
fn per_phase_server_metrics_match_aiperfs_files_and_the_collectors_record() {
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let extra = [
        "--slice-duration",
        "0.2",
        "--server-metrics-formats",
        "json",
        "jsonl",
    ];
    profile(&server, d, 20, &extra);
    let url = format!("http://{}/metrics", server.addr);
    let display = server.addr.to_string();
    let manifest = read_json(&d.join("phase_manifest.json"));
    let main = read_json(&d.join("server_metrics_export.json"));
    let run_id = main["benchmark_id"].as_str().unwrap();
    // The collector's own record: one JSONL line per unique update, tagged with the phase the
    // scrape was sent in.
    let jsonl = std::fs::read_to_string(d.join("server_metrics_export.jsonl")).unwrap();
    let lines: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut phase_fetches = 0;
    for (i, phase) in PHASES.into_iter().enumerate() {
        let rel = format!("phases/{phase}/server_metrics.json");
        let ours = read_json(&d.join(&rel));
        let theirs = read_json(&Path::new(AIPERF).join(&rel));
        // The median update interval exists only when the phase saw two updates or more, which
        // depends on how the phase's scrapes fell; every other key path is AIPerf's.
        let info = &ours["data"]["endpoint_summaries"][&display]["info"];
        let median = ".data.endpoint_summaries.<endpoint>.info.median_update_interval_ms";
        let (mut mine, mut aiperfs) = (paths(&ours), paths(&theirs));
        assert_eq!(
            mine.remove(median),
            info["unique_updates"].as_u64().unwrap() >= 2,
            "{rel}: {info}"
        );
        aiperfs.remove(median);
        let missing: Vec<_> = aiperfs.difference(&mine).collect();
        let extra: Vec<_> = mine.difference(&aiperfs).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{rel}: missing {missing:?}, extra {extra:?}"
        );
        let entry = &manifest["phases"][i];
        assert_eq!(entry["server_metrics_json"], rel.as_str());
        assert_eq!(ours["phase"]["start_ns"], entry["start_ns"]);
        assert_eq!(ours["phase"]["end_ns"], entry["end_ns"]);
        assert_eq!(ours["data"]["benchmark_id"], run_id);
        assert_eq!(ours["data"]["endpoints_successful"][0], url.as_str());

        let tagged: Vec<u64> = lines
            .iter()
            .filter(|l| l["benchmark_phase"] == phase)
            .map(|l| l["timestamp_ns"].as_u64().unwrap())
            .collect();
        assert_eq!(
            info["unique_updates"].as_u64(),
            Some(tagged.len() as u64),
            "{phase}"
        );
        assert_eq!(
            info["first_update_ns"].as_u64(),
            tagged.first().copied(),
            "{phase}"
        );
        assert_eq!(
            info["last_update_ns"].as_u64(),
            tagged.last().copied(),
            "{phase}"
        );
        let fetches = info["total_fetches"].as_u64().unwrap();
        // Each phase has its start scrape and its end scrape (the end-of-warmup scrape, the
        // final scrape after the flush period).
        assert!(
            fetches >= 2 && fetches >= tagged.len() as u64,
            "{phase}: {info}"
        );
        assert_eq!(ours["data"]["start_ns"], info["first_fetch_ns"]);
        assert_eq!(ours["data"]["end_ns"], info["last_fetch_ns"]);
        phase_fetches += fetches;
        // The per-phase statistics are the whole-run export's for that phase.
        let block = if phase == "warmup" {
            "warmup_metrics"
        } else {
            "metrics"
        };
        let metrics = &ours["data"]["endpoint_summaries"][&display]["metrics"];
        for name in ["vllm:request_success", "vllm:generation_tokens"] {
            assert_eq!(
                counter_total(metrics, name),
                counter_total(&main[block], name),
                "{phase} {name}"
            );
        }
    }
    // The baseline scrape, before warmup, belongs to no phase.
    let all = main["summary"]["endpoint_info"][&url]["total_fetches"]
        .as_u64()
        .unwrap();
    assert!(phase_fetches < all, "{phase_fetches} of {all}");
    // The warmup window ends at the end-of-warmup scrape and profiling's reference is that
    // scrape (or a later one with the same count), so the two windows tile the server's
    // success counter from the baseline (before any request) to the final scrape (after all):
    // exactly the 24 requests.
    let warm = &read_json(&d.join("phases/warmup/server_metrics.json"))["data"];
    let prof = &read_json(&d.join("phases/profiling/server_metrics.json"))["data"];
    let total = |doc: &Value| {
        counter_total(
            &doc["endpoint_summaries"][&display]["metrics"],
            "vllm:request_success",
        )
    };
    assert_eq!(total(warm) + total(prof), 24.0);
    assert!(total(warm) >= 1.0, "warmup saw its requests");
    // `phase_time_ranges.warmup` ends at the end-of-warmup scrape, past the phase's own end.
    let range = &main["summary"]["phase_time_ranges"]["warmup"];
    assert_eq!(range["end_ns"], warm["end_ns"]);
    assert!(range["end_ns"].as_u64() > manifest["phases"][0]["end_ns"].as_u64());
}

#[test]
fn no_server_metrics_no_per_phase_file() {
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    profile(&server, dir.path(), 4, &["--no-server-metrics"]);
    let manifest = read_json(&dir.path().join("phase_manifest.json"));
    for (i, phase) in PHASES.into_iter().enumerate() {
        assert!(
            !dir.path()
                .join(format!("phases/{phase}/server_metrics.json"))
                .exists()
        );
        assert!(manifest["phases"][i].get("server_metrics_json").is_none());
        assert!(manifest["phases"][i].get("metrics_json").is_some());
    }
}
