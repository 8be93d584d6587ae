//! `ringperf plot` and `profile --auto-plot` (#9 item 2) end to end: real runs against the
//! embedded mock, then the report checked against the run's own files: every chart is in the
//! page as inline SVG and as PNG / SVG files, the page's data block holds the JSONL's values,
//! the side-by-side chart holds the summaries' values, and a headless Chromium renders it.

use crate::common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The charts of every report (one per id, files `plots/<id>.{png,svg}`).
const RECORD_CHARTS: [&str; 8] = [
    "ttft-cdf",
    "ttft-over-time",
    "itl-cdf",
    "itl-over-time",
    "request-latency-cdf",
    "request-latency-over-time",
    "request-throughput-over-time",
    "output-token-throughput-over-time",
];
const SIDE_BY_SIDE: [&str; 2] = [
    "sweep-request-latency-vs-throughput",
    "sweep-ttft-vs-throughput",
];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A streamed run against the embedded mock, with server-metric timeslices.
fn profile(dir: &Path, concurrency: &str, extra: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "--mock",
            "--streaming",
            "--concurrency",
            concurrency,
        ])
        .args([
            "--request-count",
            "12",
            "--mock-ttft-ms",
            "4",
            "--mock-itl-ms",
            "1",
        ])
        .args(["--slice-duration", "0.2"])
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.3")
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

fn plot(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("plot")
        .args(args)
        .output()
        .expect("binary runs")
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// The profiling lines of `profile_export.jsonl`.
fn jsonl(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("profile_export.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["metadata"]["benchmark_phase"] != "warmup")
        .collect()
}

/// The page's `<script type="application/json">` block.
fn data_block(html: &str) -> Value {
    let open = r#"<script type="application/json" id="ringperf-data">"#;
    let start = html.find(open).expect("a data block") + open.len();
    let end = start + html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..end]).expect("the block is JSON")
}

fn chart<'a>(data: &'a Value, id: &str) -> &'a Value {
    data["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("chart {id} in the data block"))
}

fn ys(series: &Value) -> Vec<f64> {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_f64().unwrap())
        .collect()
}

/// Decodes a PNG and checks it is a drawing: several colours, many pixels off white.
fn assert_png_drawn(path: &Path) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut buf).expect("PNG data decodes");
    let bytes = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = bytes.chunks(channels).collect();
    let colours: HashSet<&[u8]> = pixels.iter().copied().collect();
    let background = pixels[0];
    let drawn = pixels.iter().filter(|p| **p != background).count();
    assert!(
        colours.len() > 2,
        "{}: {} colours",
        path.display(),
        colours.len()
    );
    assert!(
        drawn > pixels.len() / 200,
        "{}: only {drawn} of {} pixels differ from the background",
        path.display(),
        pixels.len()
    );
}

fn assert_svg_file(path: &Path) {
    let s = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&s)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(
        doc.root_element().tag_name().name(),
        "svg",
        "{}",
        path.display()
    );
}

/// The page needs nothing from elsewhere: no script, stylesheet, font or image by URL.
fn assert_self_contained(html: &str) {
    for bad in ["<script src", "<link", "@import", "url(", "<img", "<iframe"] {
        assert!(!html.contains(bad), "the page holds `{bad}`");
    }
    assert_eq!(
        html.matches("<script").count(),
        1,
        "one script element: the JSON data block"
    );
}

#[test]
fn one_run_report_holds_every_chart_with_the_runs_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    profile(&dir, "2", &[]);
    let out = plot(&[&dir]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html_path = dir.join("report.html");
    assert!(
        text(&out.stdout).contains(&format!("Report: {}", html_path.display())),
        "{}",
        text(&out.stdout)
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_self_contained(&html);
    let data = data_block(&html);

    // Server metrics: the mock's export has timeslices; each metric with them is a chart.
    let sm = read_json(&dir.join("server_metrics_export.json"));
    let with_slices: Vec<String> = sm["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, m)| {
            m["series"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["timeslices"].as_array().is_some_and(|t| !t.is_empty()))
        })
        // The file stem: `vllm:x` → `vllm_x` (a colon is no file name everywhere).
        .map(|(n, _)| format!("server-{}", n.replace(':', "_")))
        .collect();
    assert!(!with_slices.is_empty(), "the mock's export has timeslices");
    let drawn: Vec<&str> = with_slices.iter().take(12).map(String::as_str).collect();
    for id in RECORD_CHARTS.iter().chain(&drawn) {
        assert!(
            html.contains(&format!("<figure id=\"chart-{id}\"")),
            "chart {id} in the page"
        );
        chart(&data, id);
        assert_png_drawn(&dir.join("plots").join(format!("{id}.png")));
        assert_svg_file(&dir.join("plots").join(format!("{id}.svg")));
    }
    assert!(!html.contains("No server-metrics timeslices"));
    let figures = html.matches("<figure").count();
    assert_eq!(
        html.matches("<svg").count(),
        figures,
        "every figure has its inline SVG"
    );
    for id in SIDE_BY_SIDE {
        assert!(
            !html.contains(&format!("chart-{id}")),
            "one run: no side-by-side chart"
        );
    }

    // The data block's records are the JSONL's profiling records, in order.
    let lines = jsonl(&dir);
    assert_eq!(lines.len(), 12);
    let requests = data["inputs"][0]["runs"][0]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), lines.len());
    for (r, l) in requests.iter().zip(&lines) {
        for tag in [
            "time_to_first_token",
            "inter_token_latency",
            "request_latency",
        ] {
            assert_eq!(r[tag], l["metrics"][tag]["value"], "{tag}");
        }
        assert_eq!(r["request_start_ns"], l["metadata"]["request_start_ns"]);
        assert_eq!(r["request_end_ns"], l["metadata"]["request_end_ns"]);
    }
    // Charted values: per-request TTFT in JSONL order, the CDF's sorted TTFTs, the per-second
    // counts summing to the records and their output tokens.
    let ttfts: Vec<f64> = lines
        .iter()
        .map(|l| {
            l["metrics"]["time_to_first_token"]["value"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(ys(&chart(&data, "ttft-over-time")["series"][0]), ttfts);
    let mut sorted = ttfts.clone();
    sorted.sort_by(f64::total_cmp);
    let cdf_x: Vec<f64> = chart(&data, "ttft-cdf")["series"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[0].as_f64().unwrap())
        .collect();
    assert_eq!(cdf_x, sorted);
    let per_sec = ys(&chart(&data, "request-throughput-over-time")["series"][0]);
    assert_eq!(per_sec.iter().sum::<f64>(), lines.len() as f64);
    let tokens: f64 = lines
        .iter()
        .map(|l| {
            l["metrics"]["output_sequence_length"]["value"]
                .as_f64()
                .unwrap()
        })
        .sum();
    let tok_sec = ys(&chart(&data, "output-token-throughput-over-time")["series"][0]);
    assert_eq!(tok_sec.iter().sum::<f64>(), tokens);
}

#[test]
fn two_directories_are_side_by_side_with_the_summaries_values() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("c1"), tmp.path().join("c4"));
    profile(&a, "1", &[]);
    profile(&b, "4", &[]);
    let out_dir = tmp.path().join("report");
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("plot")
        .args([&a, &b])
        .arg("--output")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!a.join("report.html").exists(), "--output decides");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert_self_contained(&html);
    let data = data_block(&html);
    for id in SIDE_BY_SIDE {
        assert!(html.contains(&format!("<figure id=\"chart-{id}\"")), "{id}");
        assert_png_drawn(&out_dir.join("plots").join(format!("{id}.png")));
        assert_svg_file(&out_dir.join("plots").join(format!("{id}.svg")));
    }
    let sweep = chart(&data, "sweep-request-latency-vs-throughput");
    let (sa, sb) = (
        read_json(&a.join("profile_export_aiperf.json")),
        read_json(&b.join("profile_export_aiperf.json")),
    );
    for (k, stat) in ["p50", "p99"].iter().enumerate() {
        let s = &sweep["series"][k];
        assert_eq!(s["name"], format!("{stat} request latency"));
        let points = s["points"].as_array().unwrap();
        assert_eq!(points.len(), 2, "one point per directory");
        for (p, summary) in points.iter().zip([&sa, &sb]) {
            assert_eq!(p[0], summary["output_token_throughput"]["avg"]);
            assert_eq!(p[1], summary["request_latency"][stat]);
        }
        assert_eq!(
            s["labels"],
            serde_json::json!(["concurrency 1", "concurrency 4"])
        );
    }
    // Both runs' records are drawn, one series each.
    assert_eq!(
        chart(&data, "ttft-over-time")["series"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// Copies a run's files (not its plots) into `to`.
fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_multi_run_directory_shows_its_intervals_and_every_runs_records() {
    // The layout of `--num-profile-runs` (branch multirun): profile_runs/run_NNNN/ and
    // aggregate/profile_export_aiperf_aggregate.json, made here from two real runs.
    let tmp = tempfile::tempdir().unwrap();
    let (r1, r2) = (tmp.path().join("r1"), tmp.path().join("r2"));
    profile(&r1, "2", &[]);
    profile(&r2, "2", &[]);
    let multi = tmp.path().join("multi");
    copy_run(&r1, &multi.join("profile_runs/run_0001"));
    copy_run(&r2, &multi.join("profile_runs/run_0002"));
    let interval = |m: f64, half: f64| serde_json::json!({"mean": m, "std": half, "ci_low": m - half, "ci_high": m + half, "unit": "ms"});
    let aggregate = serde_json::json!({
        "schema_version": "1.0",
        "metadata": {"aggregation_type": "confidence", "num_profile_runs": 2},
        "metrics": {
            "output_token_throughput_avg": interval(900.0, 40.0),
            "request_latency_p50": interval(30.0, 2.0),
            "request_latency_p99": interval(45.0, 5.0),
            "time_to_first_token_p50": interval(5.0, 0.5),
            "time_to_first_token_p99": interval(8.0, 1.0),
            "time_to_first_token_avg": interval(5.5, 0.25),
        }
    });
    std::fs::create_dir_all(multi.join("aggregate")).unwrap();
    std::fs::write(
        multi.join("aggregate/profile_export_aiperf_aggregate.json"),
        aggregate.to_string(),
    )
    .unwrap();
    let out = plot(&[&multi]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(multi.join("report.html")).unwrap();
    let data = data_block(&html);
    // The table: mean ± half width [low, high].
    assert!(
        html.contains("5.500 ± 0.250 <small>[5.250, 5.750]</small>"),
        "{html}"
    );
    // Error bars: the aggregate's intervals.
    let s = &chart(&data, "sweep-request-latency-vs-throughput")["series"][1];
    assert_eq!(s["points"], serde_json::json!([[900.0, 45.0]]));
    assert_eq!(s["x_err"], serde_json::json!([[860.0, 940.0]]));
    assert_eq!(s["y_err"], serde_json::json!([[40.0, 50.0]]));
    // Each run's records, as its own series.
    let runs = data["inputs"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let over_time = chart(&data, "ttft-over-time")["series"].as_array().unwrap();
    assert_eq!(over_time.len(), 2);
    for (series, dir) in over_time.iter().zip([&r1, &r2]) {
        let want: Vec<f64> = jsonl(dir)
            .iter()
            .map(|l| {
                l["metrics"]["time_to_first_token"]["value"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ys(series), want);
    }
    assert!(over_time[1]["name"].as_str().unwrap().ends_with("run_0002"));
}

#[test]
fn no_usable_directory_exits_2_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let garbled = tmp.path().join("garbled");
    std::fs::create_dir(&garbled).unwrap();
    std::fs::write(garbled.join("profile_export_aiperf.json"), "{\"trunc").unwrap();
    let missing = tmp.path().join("missing");
    let out = plot(&[&empty, &garbled, &missing]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.starts_with("ringperf: plot: no usable input:"), "{err}");
    assert!(
        err.contains(&format!("{}: no profile_export.jsonl", empty.display())),
        "{err}"
    );
    assert!(
        err.contains("not valid JSON"),
        "the garbled file is named: {err}"
    );
    assert!(
        err.contains(&format!("{}: not a directory", missing.display())),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(!empty.join("report.html").exists());

    // A usable directory beside a bad one: the report, and the bad one named.
    let good = tmp.path().join("good");
    // Without server metrics the page says there are none.
    profile(&good, "1", &["--no-server-metrics"]);
    assert!(!good.join("server_metrics_export.json").exists());
    let out = plot(&[&good, &missing]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("skipped {}: not a directory", missing.display())),
        "{err}"
    );
    let html = std::fs::read_to_string(good.join("report.html")).unwrap();
    assert!(html.contains("No server-metrics timeslices"));
    assert!(!html.contains("id=\"chart-server-"));
}

#[test]
fn auto_plot_writes_the_report_after_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = profile(&dir, "2", &["--auto-plot"]);
    assert!(
        text(&out.stdout).contains(&format!("Report: {}", dir.join("report.html").display())),
        "{}",
        text(&out.stdout)
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let data = data_block(&html);
    assert_eq!(
        data["inputs"][0]["runs"][0]["requests"]
            .as_array()
            .unwrap()
            .len(),
        jsonl(&dir).len()
    );
    for id in RECORD_CHARTS {
        assert_png_drawn(&dir.join("plots").join(format!("{id}.png")));
    }
    let summary = read_json(&dir.join("profile_export_aiperf.json"));
    assert_eq!(summary["input_config"]["artifacts"]["auto_plot"], true);

    // `--no-auto-plot` after it wins, as the last flag does in AIPerf.
    let off = tmp.path().join("off");
    profile(&off, "2", &["--auto-plot", "--no-auto-plot"]);
    assert!(!off.join("report.html").exists());
    assert!(!html.contains("No per-request records"));

    // A new run into the directory removes the earlier run's report and says so.
    let again = profile(&dir, "2", &[]);
    assert!(!dir.join("report.html").exists(), "the old report is gone");
    let err = text(&again.stderr);
    assert!(
        err.contains("of an earlier run from") && err.contains("report.html"),
        "{err}"
    );

    // A summary-only run: the report says it has no records.
    let summary_only = tmp.path().join("summary");
    profile(
        &summary_only,
        "2",
        &["--export-level", "summary", "--auto-plot"],
    );
    assert!(!summary_only.join("profile_export.jsonl").exists());
    let html = std::fs::read_to_string(summary_only.join("report.html")).unwrap();
    assert!(html.contains("No per-request records"), "{html}");
}

/// A search or sweep against a mock that serves 2 requests at a time (the rest wait, so TTFT
/// grows past concurrency 2): `extra` picks the search.
fn search(dir: &Path, extra: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--mock", "--streaming", "--ui", "none"])
        .args([
            "--request-count",
            "8",
            "--mock-ttft-ms",
            "5",
            "--mock-itl-ms",
            "1",
        ])
        .args(["--mock-output-tokens", "8", "--mock-capacity", "2"])
        // The charts are the subject: a point is not left out for one slow dispatch of a debug
        // build on a loaded machine (the client-health verdict's own tests are elsewhere).
        .args(["--max-client-lag-us", "1000000"])
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    out
}

fn plotted_data(dir: &Path) -> Value {
    let out = plot(&[dir]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    data_block(&std::fs::read_to_string(dir.join("report.html")).unwrap())
}

fn series<'a>(chart: &'a Value, name: &str) -> Option<&'a Value> {
    chart["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
}

fn points(series: &Value) -> Vec<(f64, f64)> {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

/// The SLA chart of a search: each point at (concurrency, p95 TTFT as the search judged it:
/// the mean over the point's trials in `aggregate/<point>/`), green within the 20 ms SLA and
/// red outside, the SLA line at 20 ms across the concurrencies run, the chosen point ringed.
/// `behind` are the points whose client fell behind: hollow, in a series of their own.
fn check_sla_chart(
    data: &Value,
    points_run: &[(String, f64)],
    agg: &Path,
    chosen: (f64, &str),
    behind: &[f64],
) {
    let c = chart(data, "sla-time_to_first_token-p95");
    assert_eq!(c["x_label"], "concurrency");
    assert_eq!(c["y_label"], "time_to_first_token p95 (ms)");
    assert_eq!(
        c["title"],
        "SLA time_to_first_token p95 < 20 by concurrency"
    );
    let within = series(c, "within SLA").expect("a within series");
    let outside = series(c, "outside SLA").expect("an outside series");
    assert_eq!(within["color"], "#00963C", "within SLA is green");
    assert_eq!(outside["color"], "#D21E28", "outside SLA is red");
    let excluded = series(c, "client fell behind (excluded)");
    assert_eq!(excluded.is_some(), !behind.is_empty());
    let (mut lo, mut hi, mut top) = (f64::INFINITY, 0.0_f64, 20.0_f64);
    for (name, x) in points_run {
        let a = read_json(&agg.join(name).join("profile_export_aiperf_aggregate.json"));
        let p = (
            *x,
            a["metrics"]["time_to_first_token_p95"]["mean"]
                .as_f64()
                .unwrap(),
        );
        (lo, hi, top) = (lo.min(p.0), hi.max(p.0), top.max(p.1));
        let side = if behind.contains(x) {
            excluded.unwrap()
        } else if p.1 < 20.0 {
            within
        } else {
            outside
        };
        assert!(
            points(side).contains(&p),
            "{name} at {p:?} in {}",
            side["name"]
        );
        if *x == chosen.0 {
            let ring = series(c, chosen.1).expect("the chosen ring");
            assert_eq!(
                (ring["kind"].as_str(), points(ring)),
                (Some("chosen"), vec![p])
            );
        }
    }
    let drawn = [Some(within), Some(outside), excluded]
        .into_iter()
        .flatten()
        .map(|s| points(s).len())
        .sum::<usize>();
    assert_eq!(drawn, points_run.len(), "every point once");
    if let Some(e) = excluded {
        assert_eq!(e["kind"], "excluded");
        assert_eq!(e["color"], "#6E6E6E");
    }
    let line = series(c, "SLA: time_to_first_token p95 < 20").expect("the SLA line");
    assert_eq!(line["kind"], "threshold");
    assert_eq!(points(line), [(lo, 20.0), (hi, 20.0)]);
    let (xr, yr) = (&c["x_range"], &c["y_range"]);
    assert!(
        xr[0].as_f64().unwrap() < lo && xr[1].as_f64().unwrap() > hi,
        "{xr}"
    );
    assert_eq!(yr[0], 0.0);
    assert!(yr[1].as_f64().unwrap() > top, "{yr} holds {top}");
}

#[test]
fn an_adaptive_search_plots_each_point_against_its_sla() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("search");
    search(
        &dir,
        &[
            "--search-recipe",
            "max-concurrency-under-sla",
            "--ttft-sla-ms",
            "20",
            "--concurrency-max",
            "16",
            "--search-max-iterations",
            "4",
        ],
    );
    let history = read_json(&dir.join("search_history.json"));
    let run: Vec<(String, f64)> = history["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            let i = it["iteration_idx"].as_u64().unwrap();
            let x = it["variation_values"]["phases.profiling.concurrency"]
                .as_f64()
                .unwrap();
            (format!("search_iter_{i:04}"), x)
        })
        .collect();
    assert_eq!(run.len(), 4);
    let best = &history["best_trials"][0];
    let best_x = best["variation_values"]["phases.profiling.concurrency"]
        .as_f64()
        .unwrap();
    let data = plotted_data(&dir);
    let sweep = &data["sweeps"][0];
    assert_eq!(sweep["kind"], "max-concurrency-under-sla");
    assert_eq!(
        sweep["chosen"]["label"],
        format!("#{} concurrency {best_x}", best["iteration_idx"])
    );
    let agg = dir.join("aggregate");
    check_sla_chart(&data, &run, &agg, (best_x, "best feasible trial"), &[]);

    // A point whose run says its client fell behind: drawn hollow, apart, whatever its TTFT.
    let (name, x) = run.iter().find(|(_, x)| *x != best_x).unwrap().clone();
    let summary_path = dir.join(&name).join("profile_export_aiperf.json");
    let mut summary = read_json(&summary_path);
    summary["ringperf"]["client_health"]["kept_up"] = Value::Bool(false);
    std::fs::write(&summary_path, summary.to_string()).unwrap();
    let data = plotted_data(&dir);
    check_sla_chart(&data, &run, &agg, (best_x, "best feasible trial"), &[x]);
    let v = data["sweeps"][0]["variations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["parameters"]["phases.profiling.concurrency"].as_f64() == Some(x))
        .unwrap();
    assert_eq!(v["client_fell_behind"], true);
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("fell behind (excluded)"), "the table says so");
    // Hollow in the SVG: a circle with no fill, the grey stroke.
    let svg = std::fs::read_to_string(dir.join("plots/sla-time_to_first_token-p95.svg")).unwrap();
    assert_eq!(
        svg.matches(r##"r="5" opacity="1" fill="none" stroke="#6E6E6E""##)
            .count(),
        1,
        "one hollow circle"
    );
    assert_png_drawn(&dir.join("plots/sla-time_to_first_token-p95.png"));
}

#[test]
fn a_grid_search_plots_its_sla_and_the_concurrency_it_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("grid");
    let out = search(
        &dir,
        &[
            "--search-recipe",
            "max-concurrency-under-sla",
            "--search-style",
            "grid",
            "--ttft-sla-ms",
            "20",
            "--concurrency-max",
            "8",
            "--concurrency-steps",
            "4",
        ],
    );
    let breach = read_json(&dir.join("sweep_aggregate/sla_breach.json"));
    let answer = breach["max_passing_concurrency"]
        .as_f64()
        .expect("an answer");
    // The console's answer and the file's agree.
    assert!(
        text(&out.stdout).contains(&format!("max concurrency under p95 TTFT < 20 ms: {answer}")),
        "{}",
        text(&out.stdout)
    );
    let run: Vec<(String, f64)> = breach["all_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let c = p["concurrency"].as_f64().unwrap();
            (format!("concurrency_{c}"), c)
        })
        .collect();
    let data = plotted_data(&dir);
    assert_eq!(data["sweeps"][0]["kind"], "max-concurrency-under-sla");
    check_sla_chart(
        &data,
        &run,
        &dir.join("aggregate"),
        (answer, "max_passing_concurrency"),
        &[],
    );
    // Concurrency 8 queues 6 of 8 requests behind the mock's 2: outside the SLA.
    let c = chart(&data, "sla-time_to_first_token-p95");
    assert!(!points(series(c, "outside SLA").unwrap()).is_empty());
    // The variations' own runs are drawn too, one series each.
    assert_eq!(
        chart(&data, "ttft-cdf")["series"].as_array().unwrap().len(),
        run.len()
    );
}

/// `--auto-plot` after a sweep and after a search: the report of the whole directory, as
/// `ringperf plot DIR` draws it (both used to end without one, saying nothing).
#[test]
fn auto_plot_after_a_sweep_and_a_search_draws_their_directory() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, extra) in [
        ("sweep", &["--concurrency", "1,2"][..]),
        (
            "search",
            &[
                "--search-recipe",
                "max-concurrency-under-sla",
                "--ttft-sla-ms",
                "20",
                "--concurrency-max",
                "4",
                "--search-max-iterations",
                "2",
            ][..],
        ),
    ] {
        let dir = tmp.path().join(name);
        let mut args = extra.to_vec();
        args.push("--auto-plot");
        let out = search(&dir, &args);
        let report = dir.join("report.html");
        assert!(
            text(&out.stdout).contains(&format!("Report: {}", report.display())),
            "{name}: {}",
            text(&out.stdout)
        );
        let data = data_block(&std::fs::read_to_string(&report).unwrap());
        let variations = data["sweeps"][0]["variations"].as_array().unwrap();
        assert_eq!(variations.len(), 2, "{name}");
        assert_png_drawn(&dir.join("plots/ttft_vs_throughput.png"));
        if name == "search" {
            chart(&data, "sla-time_to_first_token-p95");
        }
    }
}

/// TTFTs of a run's profiling records, sorted.
fn sorted_ttfts(lines: &[Value]) -> Vec<f64> {
    let mut v: Vec<f64> = lines
        .iter()
        .map(|l| {
            l["metrics"]["time_to_first_token"]["value"]
                .as_f64()
                .unwrap()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// `deploy/local-shards.sh`'s layout: `<base>/shard-<i>/` and `<base>/merged/`. Plotting the
/// base draws the merged run beside each shard, each named so, into the base.
#[test]
fn a_directory_of_shards_plots_the_merged_run_beside_each_shard() {
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: std::time::Duration::from_millis(4),
        itl: std::time::Duration::from_millis(1),
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts");
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("run");
    let start_at = ringperf_wire::clock::wall_now_ns() + 1_500_000_000;
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_ringperf"))
                .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
                .args(["--tokenizer", "builtin", "--no-server-metrics"])
                .args(["--concurrency", "2", "--request-count", "8"])
                .arg("--url")
                .arg(format!("http://{}", server.addr))
                .args(["--shard-index", &i.to_string(), "--shard-count", "2"])
                .args(["--start-at", &start_at.to_string()])
                .arg("--artifact-dir")
                .arg(base.join(format!("shard-{i}")))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the binary runs")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let merge = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("merge")
        .arg(base.join("shard-0"))
        .arg(base.join("shard-1"))
        .arg("--artifact-dir")
        .arg(base.join("merged"))
        .output()
        .unwrap();
    assert!(merge.status.success(), "{}", text(&merge.stderr));

    let data = plotted_data(&base);
    let labels: Vec<&str> = data["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "concurrency 2 (merged from 2 shards)",
            "concurrency 2 (shard 0 of 2)",
            "concurrency 2 (shard 1 of 2)"
        ]
    );
    // Each series holds its directory's records: the merged run's are the shards' together.
    let cdf = chart(&data, "ttft-cdf")["series"].as_array().unwrap();
    let xs = |s: &Value| -> Vec<f64> {
        s["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_f64().unwrap())
            .collect()
    };
    let (s0, s1) = (jsonl(&base.join("shard-0")), jsonl(&base.join("shard-1")));
    assert_eq!(xs(&cdf[1]), sorted_ttfts(&s0));
    assert_eq!(xs(&cdf[2]), sorted_ttfts(&s1));
    let both: Vec<Value> = s0.into_iter().chain(s1).collect();
    assert_eq!(xs(&cdf[0]), sorted_ttfts(&both));
    // Side by side, one point per directory.
    let side = chart(&data, "sweep-ttft-vs-throughput");
    assert_eq!(side["series"][0]["labels"], serde_json::json!(labels));
}

/// A config file's two profiling phases: each phase its own series in the per-request charts
/// (its records, by `phase_name`), the run labelled by its phases.
#[test]
fn a_run_of_several_phases_draws_each_phase() {
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: std::time::Duration::from_millis(5),
        itl: std::time::Duration::from_millis(1),
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("phases");
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/aiperf-multiphase/multiphase.yaml"
        ))
        .args(["--ui", "none"])
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", &dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = plotted_data(&dir);
    let label = "poisson_20 + constant_40";
    assert_eq!(data["inputs"][0]["label"], label);
    let lines = jsonl(&dir);
    for id in ["ttft-cdf", "ttft-over-time", "request-throughput-over-time"] {
        let names: Vec<&str> = chart(&data, id)["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                format!("{label}: poisson_20"),
                format!("{label}: constant_40")
            ],
            "{id}"
        );
    }
    let cdf = chart(&data, "ttft-cdf");
    for (k, phase) in ["poisson_20", "constant_40"].iter().enumerate() {
        let of_phase: Vec<Value> = lines
            .iter()
            .filter(|l| l["metadata"]["phase_name"] == *phase)
            .cloned()
            .collect();
        assert_eq!(of_phase.len(), 20, "{phase}");
        let xs: Vec<f64> = cdf["series"][k]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_f64().unwrap())
            .collect();
        assert_eq!(xs, sorted_ttfts(&of_phase), "{phase}");
        let per_sec = ys(&chart(&data, "request-throughput-over-time")["series"][k]);
        assert_eq!(per_sec.iter().sum::<f64>(), 20.0, "{phase}");
    }
}

/// Chromium as `.ci/run` finds it (`command -v chromium`): the first `chromium`, else
/// `chromium-browser` (Ubuntu's older name), on `PATH`. Only at fixed paths, a chromium
/// elsewhere on `PATH` (/usr/local/bin, /snap/bin) made CI install nothing and this test fail.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .into_iter()
        .find_map(|name| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
}

fn chromium_cmd(bin: &Path, profile_dir: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile_dir.display()));
    c
}

#[test]
#[cfg_attr(
    missing_tool_chromium,
    ignore = "chromium is not on PATH (docs/testing.md)"
)]
fn headless_chromium_renders_the_charts() {
    let bin = chromium();
    if !common::require_tool(
        "chromium",
        bin.is_some(),
        "SKIPPED: no chromium (apt-get install chromium); the report was not rendered",
    ) {
        return;
    }
    let bin = bin.expect("chromium is present");
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("c1"), tmp.path().join("c3"));
    profile(&a, "1", &[]);
    profile(&b, "3", &[]);
    let out = plot(&[&a, &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = a.join("report.html");
    let url = format!("file://{}", report.display());

    let dom = chromium_cmd(&bin, &tmp.path().join("profile-dom"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    let dom_text = text(&dom.stdout);
    let html = std::fs::read_to_string(&report).unwrap();
    let figures = html.matches("<figure").count();
    assert!(figures >= RECORD_CHARTS.len() + SIDE_BY_SIDE.len());
    assert_eq!(
        dom_text.matches("<svg").count(),
        figures,
        "every chart's SVG is in the rendered DOM: {}",
        text(&dom.stderr)
    );
    for id in RECORD_CHARTS.iter().chain(&SIDE_BY_SIDE) {
        assert!(dom_text.contains(&format!("id=\"chart-{id}\"")), "{id}");
    }

    let shot = tmp.path().join("report.png");
    let run = chromium_cmd(&bin, &tmp.path().join("profile-shot"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,3000")
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(shot.exists(), "no screenshot: {}", text(&run.stderr));
    assert_png_drawn(&shot);
    if let Ok(keep) = std::env::var("RINGPERF_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
