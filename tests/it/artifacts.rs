//! The run-level artifacts around the summary: per-phase exports and their manifest, the
//! results-ready marker and the GPU-telemetry sections, checked against the run's own records
//! (the JSONL) and the main summary.

use crate::common;

use std::path::Path;

use common::{config, read_json, read_jsonl};
use serde_json::Value;

/// Records of one phase in the JSONL: (successes, errors).
fn phase_counts(records: &[Value], phase: &str) -> (u64, u64) {
    let of_phase = records
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == phase);
    let (mut ok, mut err) = (0, 0);
    for r in of_phase {
        if r["error"].is_null() {
            ok += 1;
        } else {
            err += 1;
        }
    }
    (ok, err)
}

fn run_with_warmup_and_faults(dir: &Path) -> ringperf::run::Outcome {
    let cfg = config(&format!(
        "ringperf profile --mock --mock-faults status=503:0.3 --mock-ttft-ms 1 --mock-itl-ms 0 \
         --mock-output-tokens 4 --streaming --concurrency 2 --request-count 24 \
         --warmup-request-count 6 --isl 8 --ui none --artifact-dir {}",
        dir.display()
    ));
    ringperf::run::run(cfg).expect("the run completes")
}

#[test]
fn phase_exports_and_manifest_agree_with_the_records() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = run_with_warmup_and_faults(dir);
    assert_eq!(out.successes + out.errors, 24);
    let records = read_jsonl(&dir.join("profile_export.jsonl"));
    let main = read_json(&dir.join("profile_export_aiperf.json"));

    let manifest = read_json(&dir.join("phase_manifest.json"));
    assert_eq!(manifest["schema_version"], 1);
    let phases = manifest["phases"].as_array().expect("phases list");
    let names: Vec<&str> = phases
        .iter()
        .map(|p| p["phase_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["warmup", "profiling"]);

    for (i, entry) in phases.iter().enumerate() {
        let name = entry["phase_name"].as_str().unwrap();
        assert_eq!(entry["phase_index"].as_u64(), Some(i as u64));
        assert_eq!(entry["phase_kind"], name);
        let (ok, err) = phase_counts(&records, name);
        assert_eq!(
            entry["successful_request_count"].as_u64(),
            Some(ok),
            "{name}"
        );
        assert_eq!(entry["error_request_count"].as_u64(), Some(err), "{name}");
        assert_eq!(entry["total_request_count"].as_u64(), Some(ok + err));
        let errors: u64 = entry["error_summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["count"].as_u64().unwrap())
            .sum();
        assert_eq!(errors, err, "{name}: error_summary counts");
        assert!(entry["start_ns"].as_u64().unwrap() <= entry["end_ns"].as_u64().unwrap());

        // The phase's own summary files, named in the manifest.
        let json_rel = entry["metrics_json"].as_str().unwrap();
        assert_eq!(
            json_rel,
            format!("phases/{name}/profile_export_aiperf.json")
        );
        let phase_json = read_json(&dir.join(json_rel));
        assert_eq!(phase_json["request_count"]["avg"].as_f64(), Some(ok as f64));
        assert!(phase_json.get("warmup_metrics").is_none());
        assert!(phase_json.get("telemetry_data").is_none());
        let csv_rel = entry["metrics_csv"].as_str().unwrap();
        let csv = std::fs::read_to_string(dir.join(csv_rel)).unwrap();
        assert!(csv.contains("Request Count"), "{csv}");
        assert!(!csv.contains("GPU_Index"));
    }
    assert!(phases[0]["profiling_index"].is_null());
    assert_eq!(phases[1]["profiling_index"], 0);
    // Warmup ends before profiling starts.
    assert!(phases[0]["end_ns"].as_u64() <= phases[1]["start_ns"].as_u64());

    // The profiling phase's document is the main one's metrics.
    let profiling = read_json(&dir.join("phases/profiling/profile_export_aiperf.json"));
    assert_eq!(profiling["request_latency"], main["request_latency"]);
    assert_eq!(profiling["start_time"], main["start_time"]);
    assert_eq!(
        read_json(&dir.join("phases/warmup/profile_export_aiperf.json"))["request_latency"],
        main["warmup_metrics"]["request_latency"]
    );
}

#[test]
fn ready_marker_and_telemetry_sections() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run_with_warmup_and_faults(dir);
    let marker = std::fs::read_to_string(dir.join(".aiperf_results_ready.json")).unwrap();
    assert_eq!(
        marker,
        r#"{"ready":true,"was_cancelled":false,"partial":false}"#
    );
    // No temporary marker is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let main = read_json(&dir.join("profile_export_aiperf.json"));
    let t = &main["telemetry_data"];
    assert_eq!(t["summary"]["endpoints_configured"], Value::Array(vec![]));
    assert_eq!(t["summary"]["endpoints_successful"], Value::Array(vec![]));
    assert_eq!(t["summary"]["start_time"], main["start_time"]);
    assert_eq!(t["endpoints"], Value::Object(Default::default()));
    // Just before `input_config`, as AIPerf places it.
    let keys: Vec<&String> = main.as_object().unwrap().keys().collect();
    let at = keys.iter().position(|k| *k == "telemetry_data").unwrap();
    assert_eq!(keys[at + 1], "input_config");

    let csv = std::fs::read_to_string(dir.join("profile_export_aiperf.csv")).unwrap();
    assert!(
        csv.ends_with(
            "\r\n\r\n\r\nEndpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,min,max,sum,\
             p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n"
        ),
        "{csv}"
    );
}

/// Every file in `dir` (relative paths), found by walking it.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// The footer lists every file the run wrote: a run with every export on (warmup phase files,
/// the four server-metrics formats, timeslices, raw records, GPU telemetry, `--auto-plot`)
/// leaves no file in its directory that the footer does not name (a folder line, ending with
/// `/`, names what is under it), and names no file that is not there. The directory listing
/// is the ground truth.
#[test]
fn the_footer_lists_every_file_written() {
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(4),
        metrics_mode: ringperf_mock::mock::MetricsMode::Vllm,
        dcgm_gpus: 1,
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let gpu_url = format!("http://{}/dcgm/metrics", server.addr);
    let out = common::profile_binary(
        &server,
        dir.path(),
        6,
        &[
            "--warmup-request-count",
            "2",
            "--server-metrics-formats",
            "json",
            "csv",
            "jsonl",
            "parquet",
            "--slice-duration",
            "0.1",
            "--export-level",
            "raw",
            "--gpu-telemetry",
            &gpu_url,
            "--auto-plot",
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("CSV Export: "))
        .filter_map(|l| l.split_once(": ").map(|(_, rest)| rest))
        // "Plots: DIR/ (N charts, …)": the folder.
        .map(|rest| rest.split(" (").next().unwrap())
        .collect();
    assert!(listed.len() > 10, "{stdout}");
    let (folders, files): (Vec<&str>, Vec<&str>) = listed
        .iter()
        .partition(|p| p.ends_with(std::path::MAIN_SEPARATOR));
    for f in &files {
        assert!(Path::new(f).is_file(), "listed but absent: {f}\n{stdout}");
    }
    let written = files_under(dir.path());
    for kind in [
        "inputs.json",
        "gpu_telemetry_export.jsonl",
        "server_metrics_export.jsonl",
    ] {
        assert!(
            written.contains(&kind.into()),
            "the run wrote {kind}: {written:?}"
        );
    }
    for rel in written {
        let path = dir.path().join(&rel);
        let named = files.iter().any(|f| Path::new(f) == path)
            || folders.iter().any(|d| path.starts_with(d));
        assert!(named, "{} is not in the footer:\n{stdout}", rel.display());
    }
}
