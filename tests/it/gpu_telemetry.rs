//! End-to-end GPU telemetry: `ringperf profile` (the binary) against in-process mocks serving a
//! DCGM exporter page at `/dcgm/metrics`; the exports are checked against the pages the mock
//! says it served and against statistics recomputed here from the JSONL the run wrote. Also:
//! unreachable default exporters, a garbage page, `--no-gpu-telemetry` and the rejected
//! `--gpu-telemetry` values.

use crate::common;

use common::{read_json, read_jsonl};

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use ringperf_mock::mock::{MetricsMode, MockConfig, MockServer, OutputLen};
use ringperf_wire::prom::{SeriesValue, parse_scrape};

/// AIPerf 0.13's DCGM mapping, written out again here (not taken from the crate) so that the
/// test checks the crate's table: `(JSONL key, DCGM field, scale, counter)`.
const MAPPING: [(&str, &str, f64, bool); 11] = [
    ("nvidia_power_usage", "DCGM_FI_DEV_POWER_USAGE", 1.0, false),
    (
        "nvidia_energy_consumption",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        1e-9,
        true,
    ),
    ("nvidia_gpu_utilization", "DCGM_FI_DEV_GPU_UTIL", 1.0, false),
    (
        "nvidia_memory_utilization",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        1.0,
        false,
    ),
    (
        "nvidia_memory_used",
        "DCGM_FI_DEV_FB_USED",
        1.048576e-3,
        false,
    ),
    ("nvidia_temperature", "DCGM_FI_DEV_GPU_TEMP", 1.0, false),
    (
        "nvidia_sm_utilization",
        "DCGM_FI_PROF_SM_ACTIVE",
        100.0,
        false,
    ),
    (
        "nvidia_decoder_utilization",
        "DCGM_FI_DEV_DEC_UTIL",
        1.0,
        false,
    ),
    (
        "nvidia_encoder_utilization",
        "DCGM_FI_DEV_ENC_UTIL",
        1.0,
        false,
    ),
    ("nvidia_xid_errors", "DCGM_FI_DEV_XID_ERRORS", 1.0, true),
    (
        "nvidia_power_violation",
        "DCGM_FI_DEV_POWER_VIOLATION",
        1e-3,
        true,
    ),
];

const GRACE_NS: u64 = 666_000_000;

fn mock(gpus: u32, mode: MetricsMode) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(16),
        metrics_mode: mode,
        dcgm_gpus: gpus,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn profile(server: &MockServer, dir: &Path, requests: u32, extra: &[&str]) -> Output {
    common::profile_binary(
        server,
        dir,
        requests,
        extra,
        &[("AIPERF_GPU_COLLECTION_INTERVAL", "0.05")],
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `(gpu label, value)` of every sample of `name` on a page.
fn samples(page: &str, name: &str) -> Vec<(u32, f64)> {
    let s = parse_scrape(page.as_bytes()).expect("the mock's page parses");
    s.families
        .iter()
        .filter(|f| f.name == name)
        .flat_map(|f| f.series.iter())
        .filter_map(|(labels, v)| {
            let gpu = labels.iter().find(|(k, _)| k == "gpu")?.1.parse().ok()?;
            match v {
                SeriesValue::Scalar(x) => Some((gpu, *x)),
                SeriesValue::Histogram(_) => None,
            }
        })
        .collect()
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn gpu_csv_table(csv: &str) -> Vec<Vec<String>> {
    let at = csv.find("Endpoint,GPU_Index").expect("the GPU table");
    csv[at..]
        .lines()
        .map(|l| {
            l.trim_end_matches('\r')
                .split(',')
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

#[test]
fn dcgm_exports_match_the_pages_the_mock_served() {
    let server = mock(2, MetricsMode::Vllm);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://{}/dcgm/metrics", server.addr);
    let out = profile(
        &server,
        dir.path(),
        40,
        &[
            "--gpu-telemetry",
            "dashboard",
            &url,
            "--no-server-metrics",
            "--warmup-request-count",
            "10",
        ],
    );
    let pages = server.dcgm_pages();
    assert!(
        pages.len() >= 3,
        "baseline, periodic and final scrapes: {}",
        pages.len()
    );
    assert!(
        pages.iter().any(|p| p.in_flight > 0),
        "the scrapes saw the load"
    );

    // JSONL: one line per GPU per page, in page order, each value the page's, scaled.
    let lines = read_jsonl(&dir.path().join("gpu_telemetry_export.jsonl"));
    assert_eq!(lines.len(), 2 * pages.len());
    for (pair, page) in lines.chunks(2).zip(&pages) {
        for (g, line) in pair.iter().enumerate() {
            let keys: Vec<&str> = line
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(
                keys,
                [
                    "gpu_index",
                    "gpu_uuid",
                    "gpu_model_name",
                    "pci_bus_id",
                    "device",
                    "hostname",
                    "platform",
                    "timestamp_ns",
                    "telemetry_source_url",
                    "telemetry_data"
                ]
            );
            assert_eq!(line["gpu_index"], g);
            assert_eq!(
                line["gpu_uuid"],
                ringperf_mock::mock::gpu_uuid(g as u32).as_str()
            );
            assert_eq!(line["gpu_model_name"], "NVIDIA H100 80GB HBM3");
            assert_eq!(line["device"], format!("nvidia{g}").as_str());
            assert_eq!(line["hostname"], "mock-dcgm");
            assert_eq!(line["platform"], "nvidia");
            assert_eq!(line["telemetry_source_url"], url.as_str());
            // Stamped once the page was read: after the mock made it.
            assert!(line["timestamp_ns"].as_u64().expect("ns") >= page.wall_ns);
            let data = line["telemetry_data"].as_object().expect("telemetry_data");
            let data_keys: Vec<&str> = data.keys().map(String::as_str).collect();
            let want_keys: Vec<&str> = MAPPING.iter().map(|m| m.0).collect();
            assert_eq!(data_keys, want_keys);
            for (key, field, scale, _) in MAPPING {
                let raw = samples(&page.body, field)
                    .into_iter()
                    .find(|s| s.0 == g as u32)
                    .expect("on the page")
                    .1;
                assert_eq!(data[key].as_f64(), Some(raw * scale), "{key} of GPU {g}");
            }
        }
        assert_eq!(pair[0]["timestamp_ns"], pair[1]["timestamp_ns"]);
    }
    // Power follows the load the mock had when it made the page.
    for (pair, page) in lines.chunks(2).zip(&pages) {
        assert_eq!(
            pair[1]["telemetry_data"]["nvidia_power_usage"].as_f64(),
            Some(ringperf_mock::mock::power_w(1, page.in_flight))
        );
    }

    // The statistics, recomputed from the JSONL over AIPerf's window.
    let manifest = read_json(&dir.path().join("phase_manifest.json"));
    let phase = manifest["phases"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["phase_kind"] == "profiling"))
        .expect("the profiling phase");
    let start = phase["start_ns"].as_u64().expect("start_ns");
    let end = phase["end_ns"].as_u64().expect("end_ns") + GRACE_NS;
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    let t = &doc["telemetry_data"];
    assert_eq!(
        t["summary"]["endpoints_configured"],
        serde_json::json!([url])
    );
    assert_eq!(
        t["summary"]["endpoints_successful"],
        serde_json::json!([url])
    );
    let display = format!("{}/dcgm", server.addr);
    let gpus = &t["endpoints"][&display]["gpus"];
    let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).expect("csv");
    let table = gpu_csv_table(&csv);
    assert_eq!(table[0].last().map(String::as_str), Some("Hostname"));
    let mut csv_rows = table[1..].iter().filter(|r| r.len() > 1);
    for g in 0..2u64 {
        let gj = &gpus[format!("gpu_{g}")];
        assert_eq!(gj["gpu_index"], g);
        assert_eq!(
            gj["gpu_uuid"],
            ringperf_mock::mock::gpu_uuid(g as u32).as_str()
        );
        assert_eq!(gj["gpu_name"], "NVIDIA H100 80GB HBM3");
        assert_eq!(gj["platform"], "nvidia");
        assert_eq!(gj["hostname"], "mock-dcgm");
        let series = |key: &str| -> Vec<(u64, f64)> {
            lines
                .iter()
                .filter(|l| l["gpu_index"] == g)
                .map(|l| {
                    (
                        l["timestamp_ns"].as_u64().expect("ns"),
                        l["telemetry_data"][key].as_f64().expect("value"),
                    )
                })
                .collect()
        };
        for (key, _, _, counter) in MAPPING {
            let all = series(key);
            let window: Vec<f64> = all
                .iter()
                .filter(|s| s.0 >= start && s.0 <= end)
                .map(|s| s.1)
                .collect();
            assert!(!window.is_empty(), "{key}: samples in the window");
            let m = &gj["metrics"][key];
            let row = csv_rows.next().expect("a CSV row per metric");
            assert_eq!(row[0], display);
            assert_eq!(row[1], g.to_string());
            if counter {
                let before = all.iter().rev().find(|s| s.0 < start).map(|s| s.1);
                let base = before.unwrap_or(window[0]);
                let delta = (window[window.len() - 1] - base).max(0.0);
                assert!(
                    close(m["avg"].as_f64().expect("avg"), delta),
                    "{key}: {m} vs {delta}"
                );
                assert_eq!(
                    m.as_object().map(|o| o.len()),
                    Some(2),
                    "{key}: unit and avg only"
                );
                assert_eq!(row[6], format!("{delta:.2}"));
                assert!(row[7..20].iter().all(String::is_empty), "{row:?}");
                continue;
            }
            let n = window.len() as f64;
            let avg = window.iter().sum::<f64>() / n;
            let std = if window.len() > 1 {
                (window.iter().map(|v| (v - avg).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            } else {
                0.0
            };
            let mut sorted = window.clone();
            sorted.sort_by(f64::total_cmp);
            let got = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("{key}.{k}: {m}"));
            assert!(close(got("avg"), avg), "{key}");
            assert!(close(got("std"), std), "{key}");
            assert!(close(got("sum"), window.iter().sum()), "{key}");
            assert_eq!(got("min"), sorted[0], "{key}");
            assert_eq!(got("max"), sorted[sorted.len() - 1], "{key}");
            assert_eq!(m["count"], window.len(), "{key}");
            for q in [1, 5, 10, 25, 50, 75, 90, 95, 99] {
                assert!(
                    close(got(&format!("p{q}")), percentile(&sorted, f64::from(q))),
                    "{key} p{q}"
                );
            }
            assert_eq!(row[6], format!("{avg:.2}"), "{key}");
            assert_eq!(row[19], format!("{std:.2}"), "{key}");
        }
    }
    // Warmup was scraped: the counters' baseline is a sample before profiling started.
    assert!(
        lines
            .iter()
            .any(|l| l["timestamp_ns"].as_u64() < Some(start)),
        "a baseline before profiling"
    );
    // The energy counter integrated power while the run lasted: it grew.
    assert!(gpus["gpu_0"]["metrics"]["nvidia_energy_consumption"]["avg"].as_f64() > Some(0.0));

    // The energy-efficiency figures, recomputed from the JSONL: energy is the counters' growth
    // over the GPU window, average power that energy over the profiling window (no grace),
    // fleet power the sum of each GPU's mean power over the profiling window.
    let phase_end = end - GRACE_NS;
    let (mut energy_j, mut fleet_w) = (0.0, 0.0);
    for g in 0..2u64 {
        let series = |key: &str| -> Vec<(u64, f64)> {
            lines
                .iter()
                .filter(|l| l["gpu_index"] == g)
                .map(|l| {
                    let ts = l["timestamp_ns"].as_u64().expect("ns");
                    (ts, l["telemetry_data"][key].as_f64().expect("value"))
                })
                .collect()
        };
        let e = series("nvidia_energy_consumption");
        let base = e.iter().rev().find(|s| s.0 < start).expect("a baseline").1;
        let last = e
            .iter()
            .rev()
            .find(|s| s.0 <= end)
            .expect("in the window")
            .1;
        energy_j += (last - base).max(0.0) * 1e6;
        let p: Vec<f64> = series("nvidia_power_usage")
            .into_iter()
            .filter(|s| s.0 >= start && s.0 <= phase_end)
            .map(|s| s.1)
            .collect();
        fleet_w += p.iter().sum::<f64>() / p.len() as f64;
    }
    let metric = |tag: &str| doc[tag]["avg"].as_f64().unwrap_or_else(|| panic!("{tag}"));
    assert!(energy_j > 0.0);
    assert!(close(metric("nvidia_total_gpu_energy"), energy_j));
    assert!(close(metric("nvidia_total_gpu_power"), fleet_w));
    let avg_w = energy_j / ((phase_end - start) as f64 / 1e9);
    assert!(close(metric("nvidia_average_gpu_power"), avg_w));
    let requests = metric("request_count");
    assert!(close(
        metric("nvidia_energy_per_request"),
        energy_j / requests
    ));
    assert!(close(
        metric("nvidia_energy_per_output_token"),
        energy_j * 1000.0 / metric("total_osl")
    ));
    assert!(close(
        metric("nvidia_energy_delay_product"),
        energy_j / requests * metric("request_latency") / 1000.0
    ));
    assert!(close(
        metric("nvidia_performance_per_watt"),
        metric("request_throughput") / avg_w
    ));
    // `profile_binary` runs at concurrency 2: the energy per user divides by it.
    assert!(close(metric("nvidia_energy_per_user"), energy_j / 2.0));
    assert!(doc.get("nvidia_goodput_per_watt").is_none(), "no --goodput");
    assert!(csv.contains("\nTotal GPU Energy (J),"), "{csv}");

    // input_config as AIPerf 0.13 echoes `--gpu-telemetry dashboard URL`.
    assert_eq!(
        doc["input_config"]["gpu_telemetry"],
        serde_json::json!({
            "enabled": true,
            "urls": [url],
            "collector": "dcgm",
            "mode": "realtime_dashboard"
        })
    );
    // The GPU scraper's own thread is accounted for beside the others.
    let threads: Vec<&str> = doc["ringperf"]["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(threads.contains(&"gpu_scraper"), "{threads:?}");

    // Console: one table per GPU.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ringperf | GPU Telemetry Summary"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("{display} | GPU 1 | NVIDIA H100 80GB HBM3")));
    assert!(stdout.contains("NVIDIA GPU Power Usage (W)"));
    // The platform panel, then the power-efficiency table, before the per-GPU tables.
    let panel = stdout
        .find("─ GPU Telemetry Platform ─")
        .expect("the panel");
    let table = stdout
        .find("GPU Power Efficiency (NVIDIA)")
        .expect("the table");
    let summary = stdout
        .find("GPU Telemetry Summary")
        .expect("the GPU tables");
    assert!(panel < table && table < summary, "{stdout}");
}

#[test]
fn unreachable_default_exporters_cost_a_note_and_leave_an_empty_block() {
    for port in [9400, 9401] {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "this test needs nothing listening on localhost:{port}"
        );
    }
    let server = mock(0, MetricsMode::Vllm);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = profile(&server, dir.path(), 4, &["--no-server-metrics"]);
    let err = stderr(&out);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("GPU telemetry"))
        .collect();
    assert_eq!(
        notes,
        ["ringperf: GPU telemetry disabled: no DCGM exporter reachable"],
        "{err}"
    );
    assert!(!dir.path().join("gpu_telemetry_export.jsonl").exists());
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    let t = &doc["telemetry_data"];
    assert_eq!(t["summary"]["endpoints_configured"], serde_json::json!([]));
    assert_eq!(t["summary"]["endpoints_successful"], serde_json::json!([]));
    assert_eq!(t["endpoints"], serde_json::json!({}));
    assert_eq!(t["error_summary"], serde_json::json!([]));
    let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).expect("csv");
    assert!(csv.ends_with("p99,std\r\n"), "header, no rows");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("GPU Telemetry"));
}

#[test]
fn garbage_dcgm_page_disables_that_endpoint_and_the_others_carry_on() {
    let garbage = mock(0, MetricsMode::Garbage);
    let good = mock(1, MetricsMode::Vllm);
    let dir = tempfile::tempdir().expect("tempdir");
    let bad_url = format!("http://{}/metrics", garbage.addr);
    let good_url = format!("http://{}/dcgm/metrics", good.addr);
    let out = profile(
        &good,
        dir.path(),
        6,
        &[
            "--gpu-telemetry",
            &bad_url,
            &good_url,
            "--no-server-metrics",
        ],
    );
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("WARNING")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains(&format!("Disabling GPU telemetry collection for {bad_url}"))
            && warnings[0].contains("--no-gpu-telemetry"),
        "{}",
        warnings[0]
    );
    // No TRT-LLM probe for a DCGM exporter.
    assert!(!err.contains("prometheus/metrics"), "{err}");
    let lines = read_jsonl(&dir.path().join("gpu_telemetry_export.jsonl"));
    assert!(!lines.is_empty());
    assert!(
        lines
            .iter()
            .all(|l| l["telemetry_source_url"] == good_url.as_str())
    );
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(
        doc["telemetry_data"]["summary"]["endpoints_successful"],
        serde_json::json!([good_url])
    );
}

#[test]
fn no_gpu_telemetry_scrapes_nothing_and_writes_no_gpu_file() {
    let server = mock(2, MetricsMode::Vllm);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = profile(
        &server,
        dir.path(),
        4,
        &["--no-gpu-telemetry", "--no-server-metrics"],
    );
    // Not even the default exporters were probed: no note.
    assert!(server.dcgm_pages().is_empty());
    assert!(!dir.path().join("gpu_telemetry_export.jsonl").exists());
    assert!(!stderr(&out).contains("GPU telemetry"), "{}", stderr(&out));
    let doc = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(doc["telemetry_data"]["endpoints"], serde_json::json!({}));
}

#[test]
fn local_gpu_libraries_and_custom_csv_are_rejected_by_name() {
    for (value, says) in [
        ("pynvml", "pynvml"),
        ("amdsmi", "amdsmi"),
        ("my_gpu_metrics.csv", "CSV"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(["profile", "-m", "m", "--url", "http://127.0.0.1:9"])
            .args(["--gpu-telemetry", value])
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = stderr(&out);
        assert!(err.contains(says), "{value}: {err}");
        if value != "my_gpu_metrics.csv" {
            assert!(err.contains("use DCGM exporter URLs"), "{err}");
            assert!(err.contains("needs a GPU machine to be tested"), "{err}");
        }
    }
    // As AIPerf: the flag and its negation together are refused.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "m", "--url", "http://127.0.0.1:9"])
        .args([
            "--gpu-telemetry",
            "http://127.0.0.1:9/metrics",
            "--no-gpu-telemetry",
        ])
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("Cannot use both --no-gpu-telemetry and --gpu-telemetry"));
}

/// AIPerf 0.13's own output for pages of this mock (see `tests/data/aiperf-gpu-telemetry/`):
/// ringperf's statistics of the same records, over the same window, are AIPerf's block and
/// table.
/// The records of AIPerf's `gpu_telemetry_export.jsonl` lines.
fn aiperf_records(
    lines: &[serde_json::Value],
) -> Vec<ringperf_metrics::gpu_telemetry::records::GpuRecord> {
    use ringperf_metrics::gpu_telemetry::fields::{FIELDS, by_key};
    use ringperf_metrics::gpu_telemetry::records::{GpuMeta, GpuRecord};
    lines
        .iter()
        .map(|l| {
            let s = |k: &str| l[k].as_str().map(str::to_owned);
            let mut values = [None; FIELDS.len()];
            for (k, v) in l["telemetry_data"].as_object().expect("telemetry_data") {
                values[by_key(k).expect("a known key")] = v.as_f64();
            }
            GpuRecord {
                ts_ns: l["timestamp_ns"].as_u64().expect("ns"),
                meta: GpuMeta {
                    index: l["gpu_index"].as_u64().expect("index") as u32,
                    uuid: s("gpu_uuid").unwrap_or_default(),
                    model_name: s("gpu_model_name").unwrap_or_default(),
                    pci_bus_id: s("pci_bus_id"),
                    device: s("device"),
                    hostname: s("hostname"),
                    namespace: None,
                    pod_name: None,
                },
                values,
                source_url: s("telemetry_source_url").unwrap_or_default(),
            }
        })
        .collect()
}

#[test]
fn statistics_of_aiperfs_records_are_aiperfs_block_and_table() {
    use ringperf_metrics::gpu_telemetry::summary::summarize_all;

    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-gpu-telemetry");
    let lines = read_jsonl(&data.join("gpu_telemetry_export.jsonl"));
    let records = aiperf_records(&lines);
    // Our own JSONL rendering of a record is AIPerf's line.
    for (r, l) in records.iter().zip(&lines) {
        assert_eq!(&r.to_json(), l);
    }
    let window = read_json(&data.join("window.json"));
    let t = summarize_all(
        &[records],
        window["start_ns"].as_u64().expect("start"),
        window["end_ns"].as_u64().expect("end"),
    );
    let theirs = read_json(&data.join("telemetry_data.json"));
    assert_eq!(
        serde_json::json!(t.urls()),
        theirs["summary"]["endpoints_successful"]
    );
    let ours = t.endpoints_json();
    fn same(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
        match (a, b) {
            (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
                let kx: Vec<&String> = x.keys().collect();
                let ky: Vec<&String> = y.keys().collect();
                assert_eq!(kx, ky, "{path}");
                for (k, v) in x {
                    same(v, &y[k], &format!("{path}.{k}"));
                }
            }
            (serde_json::Value::Number(x), serde_json::Value::Number(y)) => {
                let (x, y) = (x.as_f64().expect("x"), y.as_f64().expect("y"));
                assert!(close(x, y), "{path}: {x} vs {y}");
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }
    same(&ours, &theirs["endpoints"], "endpoints");
    let csv = std::fs::read_to_string(data.join("gpu_table.csv")).expect("csv");
    let table = gpu_csv_table(&csv);
    let header: Vec<String> = ringperf_metrics::export::telemetry::GPU_TABLE_HEADER
        .iter()
        .map(|h| (*h).to_owned())
        .chain(t.optional_headers().into_iter().map(str::to_owned))
        .collect();
    assert_eq!(table[0], header);
    let rows = t.csv_rows(&ringperf_metrics::export::telemetry::GPU_TABLE_HEADER[6..]);
    let theirs_rows: Vec<Vec<String>> =
        table[1..].iter().filter(|r| r.len() > 1).cloned().collect();
    assert_eq!(rows, theirs_rows);
}

/// AIPerf 0.13's energy-efficiency figures of one run against the mock's DCGM page
/// (tests/data/aiperf-gpu-energy): from AIPerf's own samples, window and phase results,
/// ringperf computes the same metrics, in the same order, and prints the same console panel and
/// table and the same CSV rows.
#[test]
fn energy_efficiency_of_aiperfs_run_is_aiperfs() {
    use ringperf_metrics::aggregate::{MetricDef, MetricResult, ResultValue, Summary};
    use ringperf_metrics::gpu_telemetry::energy::{Fleet, efficiency};

    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-gpu-energy");
    let records = aiperf_records(&read_jsonl(&data.join("gpu_telemetry_export.jsonl")));
    let facts = read_json(&data.join("energy.json"));
    let w = &facts["window"];
    let fleet = Fleet::measure(
        &[records],
        w["start_ns"].as_u64().expect("start"),
        w["requests_end_ns"].as_u64().expect("end"),
    );
    // The phase's results as AIPerf reported them (display units; latency back to ns).
    let mut summary = Summary {
        results: facts["inputs"]
            .as_object()
            .expect("inputs")
            .iter()
            .map(|(tag, v)| {
                let def = MetricDef::by_tag(tag).expect("a known tag");
                let v = def.from_display(v.as_f64().expect("a number"));
                MetricResult {
                    def,
                    adjusted: false,
                    value: ResultValue::Scalar(v),
                }
            })
            .collect(),
        error_summary: Vec::new(),
        dispatch_lag: None,
        receive_lag: None,
        kernel_rtt: None,
        spec_decode_histogram: Vec::new(),
        skipped_context_overflows: 0,
    };
    let ours = efficiency(&fleet, &summary, facts["concurrency"].as_u64());
    let theirs = facts["results"].as_object().expect("results");
    let tags: Vec<&str> = ours.iter().map(|r| r.def.tag).collect();
    let their_tags: Vec<&str> = theirs.keys().map(String::as_str).collect();
    assert_eq!(tags, their_tags, "the same metrics in AIPerf's order");
    for r in &ours {
        let t = &theirs[r.def.tag];
        assert_eq!(t["unit"], r.def.shown_unit().as_str(), "{}", r.def.tag);
        let (a, b) = (r.avg(), t["avg"].as_f64().expect("avg"));
        // The window's ends are known to the microsecond: 1e-5 relative covers the average
        // power and what divides by it; the rest agree to rounding.
        assert!((a - b).abs() <= 1e-5 * b.abs(), "{}: {a} vs {b}", r.def.tag);
    }
    summary.results.extend(ours);

    // Console: the platform panel and the one-column table, line for line (AIPerf's Rich output
    // pads the title and puts two blank lines between them).
    let console = ringperf_metrics::export::render_gpu_power(&summary, &["nvidia"]);
    let lines = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.trim_end().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let want = std::fs::read_to_string(data.join("console.txt")).expect("console");
    assert_eq!(lines(&console), lines(&want));
    assert!(ringperf_metrics::export::render_gpu_power(&summary, &[]).is_empty());

    // CSV: the energy rows of the scalar section, in AIPerf's places among the others.
    let csv = ringperf_metrics::export::csv::summary_csv(&summary);
    let headers: Vec<String> = summary
        .results
        .iter()
        .filter(|r| r.def.tag.starts_with("nvidia_"))
        .map(|r| format!("{} (", r.def.header))
        .collect();
    let energy_rows = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| headers.iter().any(|h| l.starts_with(h.as_str())))
            .map(str::to_owned)
            .collect()
    };
    let want = std::fs::read_to_string(data.join("scalar_section.csv")).expect("csv");
    assert_eq!(energy_rows(&csv), energy_rows(&want));
    assert_eq!(energy_rows(&want).len(), 11);
}
