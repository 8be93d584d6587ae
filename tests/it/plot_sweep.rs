//! `ringperf plot` on sweep and search directories (#23), read from what AIPerf 0.13 itself
//! wrote (`tests/data/aiperf-sweep/`, `tests/data/aiperf-search/`): every plotted value equals
//! the number in AIPerf's files (read here independently), the computed Pareto frontier equals
//! AIPerf's own `pareto_optimal` where AIPerf wrote one, the chosen point is AIPerf's answer, and
//! the SLA line and the chosen ring are where they belong in the SVG.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::read_json;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn plot(dirs: &[&Path], out: &Path) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("plot")
        .args(dirs)
        .arg("--output")
        .arg(out)
        .output()
        .expect("binary runs")
}

/// `ringperf plot` of `dirs` into a new directory (kept alive by the returned guard), which must
/// succeed, and the report's data block.
fn plotted(dirs: &[&Path]) -> (tempfile::TempDir, Value) {
    let out = tempfile::tempdir().unwrap();
    let o = plot(dirs, out.path());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    let data = data_block(&html);
    (out, data)
}

fn data_block(html: &str) -> Value {
    let open = r#"<script type="application/json" id="ringperf-data">"#;
    let start = html.find(open).expect("a data block") + open.len();
    let end = start + html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..end].replace("<\\/", "</")).unwrap()
}

fn chart<'a>(data: &'a Value, id: &str) -> &'a Value {
    data["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no chart {id}"))
}

fn series<'a>(chart: &'a Value, name: &str) -> &'a Value {
    chart["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .unwrap_or_else(|| panic!("no series {name} in {}", chart["id"]))
}

fn points(series: &Value) -> Vec<(f64, f64)> {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

/// A statistic as AIPerf's sweep file holds it: `<tag>_<stat>.mean` with trials, else
/// `<tag>.<stat>`.
fn aiperf_stat(metrics: &Value, tag: &str, stat: &str) -> f64 {
    metrics[format!("{tag}_{stat}")]["mean"]
        .as_f64()
        .or_else(|| metrics[tag][stat].as_f64())
        .unwrap_or_else(|| panic!("{tag} {stat} not in the fixture"))
}

const SWEEPS: [(&str, &str); 6] = [
    (
        "concurrency",
        "sweep_aggregate/profile_export_aiperf_sweep.json",
    ),
    (
        "trials-repeated",
        "aggregate/sweep_aggregate/profile_export_aiperf_sweep.json",
    ),
    (
        "trials-independent",
        "sweep_aggregate/profile_export_aiperf_sweep.json",
    ),
    ("grid", "sweep_aggregate/profile_export_aiperf_sweep.json"),
    ("zip", "sweep_aggregate/profile_export_aiperf_sweep.json"),
    (
        "variants",
        "sweep_aggregate/profile_export_aiperf_sweep.json",
    ),
];

/// The id of a chart of the `k`-th sweep of one report (`-2`, `-3`, … after the first).
fn nth(id: &str, k: usize) -> String {
    if k == 0 {
        id.to_string()
    } else {
        format!("{id}-{}", k + 1)
    }
}

#[test]
fn aiperf_sweeps_plot_with_the_numbers_of_their_files() {
    // All six in one report (one render of the per-request charts; CI time).
    let dirs: Vec<PathBuf> = SWEEPS
        .iter()
        .map(|(name, _)| fixture("aiperf-sweep").join(name))
        .collect();
    let refs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (out, data) = plotted(&refs);
    for (k, (name, file)) in SWEEPS.into_iter().enumerate() {
        let doc = read_json(&dirs[k].join(file));
        let combos = doc["per_combination_metrics"].as_array().unwrap();
        for id in [
            "ttft_vs_throughput",
            "sweep-request-latency-vs-throughput",
            "sweep-ttft-vs-throughput",
            "pareto_curve_throughput_vs_latency",
        ] {
            for ext in ["png", "svg"] {
                let f = out
                    .path()
                    .join("plots")
                    .join(format!("{}.{ext}", nth(id, k)));
                assert!(f.is_file(), "{name}: {} missing", f.display());
            }
        }
        let m = |c: &Value, tag: &str, stat: &str| aiperf_stat(&c["metrics"], tag, stat);
        // AIPerf's own chart: TTFT avg against request throughput avg, one point per variation.
        let want: Vec<(f64, f64)> = combos
            .iter()
            .map(|c| {
                (
                    m(c, "time_to_first_token", "avg"),
                    m(c, "request_throughput", "avg"),
                )
            })
            .collect();
        let got = points(series(
            chart(&data, &nth("ttft_vs_throughput", k)),
            "variations",
        ));
        assert_eq!(got, want, "{name}: ttft_vs_throughput");
        // Throughput against p50 and p99 latency.
        for (id, tag) in [
            ("sweep-request-latency-vs-throughput", "request_latency"),
            ("sweep-ttft-vs-throughput", "time_to_first_token"),
        ] {
            for stat in ["p50", "p99"] {
                let want: Vec<(f64, f64)> = combos
                    .iter()
                    .map(|c| (m(c, "output_token_throughput", "avg"), m(c, tag, stat)))
                    .collect();
                let s = series(chart(&data, &nth(id, k)), stat);
                assert_eq!(points(s), want, "{name}: {id} {stat}");
            }
        }
        let pareto = chart(&data, &nth("pareto_curve_throughput_vs_latency", k));
        let want: Vec<(f64, f64)> = combos
            .iter()
            .map(|c| {
                (
                    m(c, "time_to_first_token", "p99"),
                    m(c, "request_throughput", "avg"),
                )
            })
            .collect();
        assert_eq!(points(series(pareto, "variations")), want, "{name}");
        // Where AIPerf computed a frontier (with trials), ringperf's is the same.
        let sweep = &data["sweeps"][k];
        let aiperf_front = doc["pareto_optimal"].as_array().unwrap();
        if !aiperf_front.is_empty() {
            let labels: Vec<&str> = sweep["variations"]
                .as_array()
                .unwrap()
                .iter()
                .zip(combos)
                .filter(|(_, c)| aiperf_front.contains(&c["parameters"]))
                .map(|(v, _)| v["label"].as_str().unwrap())
                .collect();
            assert_eq!(sweep["pareto"], serde_json::json!(labels), "{name}");
            assert_eq!(sweep["aiperf_pareto"], sweep["pareto"], "{name}");
        }
        if name == "trials-independent" {
            // Spelled out, so that a reader sees what AIPerf wrote: two of the three.
            assert_eq!(
                sweep["pareto"],
                serde_json::json!(["concurrency 2", "concurrency 4"])
            );
        }
        if name == "trials-repeated" {
            assert_eq!(
                sweep["pareto"],
                serde_json::json!(["concurrency 1", "concurrency 2", "concurrency 4"])
            );
        }
        if name == "variants" {
            let labels: Vec<&Value> = sweep["variations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| &v["label"])
                .collect();
            assert_eq!(labels, ["small", "big"]);
        }
    }
}

/// `(cx, cy, r, fill, stroke)` of every `<circle>` of an SVG.
fn circles(svg: &str) -> Vec<(i64, i64, String, String, String)> {
    let attr = |el: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        el.find(&key)
            .map(|i| {
                let rest = &el[i + key.len()..];
                rest[..rest.find('"').unwrap()].to_string()
            })
            .unwrap_or_default()
    };
    svg.split("<circle")
        .skip(1)
        .map(|el| {
            let el = &el[..el.find("/>").unwrap()];
            (
                attr(el, "cx").parse().unwrap(),
                attr(el, "cy").parse().unwrap(),
                attr(el, "r"),
                attr(el, "fill"),
                attr(el, "stroke"),
            )
        })
        .collect()
}

/// The pixel y of the one horizontal threshold line (`#0000A0`, 3 px wide).
fn threshold_y(svg: &str) -> i64 {
    let lines: Vec<&str> = svg
        .split("<polyline")
        .skip(1)
        .filter(|el| el.contains("stroke=\"#0000A0\"") && el.contains("stroke-width=\"3\""))
        .collect();
    assert_eq!(lines.len(), 1, "one SLA line");
    let pts = lines[0].split("points=\"").nth(1).unwrap();
    let ys: Vec<i64> = pts[..pts.find('"').unwrap()]
        .split_whitespace()
        .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(
        ys.len() >= 2 && ys.iter().all(|&y| y == ys[0]),
        "horizontal: {ys:?}"
    );
    ys[0]
}

/// The "within SLA" (green) and "outside SLA" (red) points' fill in the SVG.
const WITHIN_FILL: &str = "#00963C";
const OUTSIDE_FILL: &str = "#D21E28";

/// The legend of an SVG as (series name, swatch fill, swatch stroke): plotters draws each
/// entry's swatch as a 14 × 10 `<rect>` at the height of the entry's `<text>`.
fn legend(svg: &str) -> Vec<(String, String, String)> {
    let attr = |el: &str, name: &str| -> String {
        let key = format!(" {name}=\"");
        el.find(&key)
            .map(|i| {
                let rest = &el[i + key.len()..];
                rest[..rest.find('"').unwrap()].to_string()
            })
            .unwrap_or_default()
    };
    let texts: Vec<(String, String)> = svg
        .split("<text")
        .skip(1)
        .map(|el| {
            let body = &el[el.find('>').unwrap() + 1..el.find("</text>").unwrap()];
            (attr(el, "y"), body.trim().to_string())
        })
        .collect();
    svg.split("<rect")
        .skip(1)
        .filter(|el| attr(el, "width") == "14" && attr(el, "height") == "10")
        .filter_map(|el| {
            let y = attr(el, "y");
            let (_, name) = texts.iter().find(|(ty, _)| *ty == y)?;
            Some((name.clone(), attr(el, "fill"), attr(el, "stroke")))
        })
        .collect()
}

#[test]
fn a_search_plots_its_sla_line_and_its_answer() {
    let dir = fixture("aiperf-search/max-throughput-ttft-sla");
    let history = read_json(&dir.join("search_history.json"));
    let (out, data) = plotted(&[&dir]);
    let sweep = &data["sweeps"][0];
    assert_eq!(sweep["kind"], "max-throughput-ttft-sla");
    assert_eq!(
        sweep["slas"], history["config"]["sla_filters"],
        "the SLA is the search's"
    );
    // The answer is AIPerf's best trial.
    let best = &history["best_trials"][0];
    let idx = best["iteration_idx"].as_u64().unwrap();
    let conc = best["variation_values"]["phases.profiling.concurrency"]
        .as_u64()
        .unwrap();
    assert_eq!(
        sweep["chosen"]["label"],
        format!("#{idx} concurrency {conc}")
    );
    // Every iteration is a point at its concurrency and its own run's p95 TTFT, split by the
    // SLA (p95 TTFT < 15 ms).
    let iterations = history["iterations"].as_array().unwrap();
    let c = chart(&data, "sla-time_to_first_token-p95");
    assert_eq!(c["x_label"], "concurrency");
    assert_eq!(c["y_label"], "time_to_first_token p95 (ms)");
    let within = points(series(c, "within SLA"));
    let outside = points(series(c, "outside SLA"));
    assert_eq!(series(c, "within SLA")["color"], WITHIN_FILL);
    assert_eq!(series(c, "outside SLA")["color"], OUTSIDE_FILL);
    assert_eq!(within.len() + outside.len(), iterations.len());
    let mut concurrencies = Vec::new();
    let mut highest: f64 = 0.0;
    for it in iterations {
        let i = it["iteration_idx"].as_u64().unwrap();
        let run = read_json(&dir.join(format!(
            "search_iter_{i:04}/profile_runs/run_0001/profile_export_aiperf.json"
        )));
        let x = it["variation_values"]["phases.profiling.concurrency"]
            .as_f64()
            .unwrap();
        let p = (x, run["time_to_first_token"]["p95"].as_f64().unwrap());
        concurrencies.push(x);
        highest = highest.max(p.1);
        // AIPerf's own verdict on the iteration agrees with the side it is drawn on.
        assert_eq!(it["feasible"].as_bool(), Some(p.1 < 15.0), "iteration {i}");
        let side = if p.1 < 15.0 { &within } else { &outside };
        assert!(side.contains(&p), "iteration {i} at {p:?}");
        if i == idx {
            assert_eq!(points(series(c, "best feasible trial")), [p]);
        }
    }
    // The SLA line at 15 ms across the concurrencies run; the axes hold every point and it.
    let lo = concurrencies.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = concurrencies.iter().copied().fold(0.0, f64::max);
    assert_eq!(points(series(c, "SLA: ")), [(lo, 15.0), (hi, 15.0)]);
    let (xr, yr) = (&c["x_range"], &c["y_range"]);
    assert!(
        xr[0].as_f64().unwrap() < lo && xr[1].as_f64().unwrap() > hi,
        "{xr}"
    );
    assert_eq!(yr[0], 0.0);
    assert!(yr[1].as_f64().unwrap() > highest.max(15.0), "{yr}");
    // In the SVG: the points within below the SLA line, those outside above it (y grows
    // downwards), the chosen ring on a point within, and the legend's colours.
    let svg =
        std::fs::read_to_string(out.path().join("plots/sla-time_to_first_token-p95.svg")).unwrap();
    let y = threshold_y(&svg);
    let cs = circles(&svg);
    let of = |fill: &str| -> Vec<(i64, i64)> {
        cs.iter()
            .filter(|c| c.2 == "3" && c.3 == fill)
            .map(|c| (c.0, c.1))
            .collect()
    };
    let (w, o) = (of(WITHIN_FILL), of(OUTSIDE_FILL));
    assert_eq!((w.len(), o.len()), (within.len(), outside.len()));
    assert!(w.iter().all(|p| p.1 >= y), "within below the line");
    assert!(o.iter().all(|p| p.1 <= y), "outside above the line");
    let rings: Vec<(i64, i64)> = cs
        .iter()
        .filter(|c| c.2 == "9" && c.4 == "#FF8C00")
        .map(|c| (c.0, c.1))
        .collect();
    assert_eq!(rings.len(), 1, "one chosen ring");
    assert!(w.contains(&rings[0]), "the ring is on a point within");
    let legend = legend(&svg);
    for (name, fill) in [("within SLA", WITHIN_FILL), ("outside SLA", OUTSIDE_FILL)] {
        assert!(
            legend.iter().any(|(n, f, _)| n == name && f == fill),
            "{name} in {fill}: {legend:?}"
        );
    }
}

/// AIPerf's grid `max-concurrency-under-sla` (`sla-grid/`): its answer is `sla_breach.json`'s
/// `max_passing_concurrency`, and each concurrency is drawn at its p99 request latency, within
/// or outside the 30 ms SLA as the file's `all_points` say.
#[test]
fn a_grid_search_plots_its_sla_and_its_sla_breach_answer() {
    let dir = fixture("aiperf-search/sla-grid");
    let breach = read_json(&dir.join("sweep_aggregate/sla_breach.json"));
    let doc = read_json(&dir.join("sweep_aggregate/profile_export_aiperf_sweep.json"));
    let (_out, data) = plotted(&[&dir]);
    let sweep = &data["sweeps"][0];
    assert_eq!(sweep["kind"], "max-concurrency-under-sla");
    assert_eq!(
        sweep["chosen"]["label"],
        format!("concurrency {}", breach["max_passing_concurrency"])
    );
    let c = chart(&data, "sla-request_latency-p99");
    assert_eq!(c["x_label"], "concurrency");
    assert_eq!(c["y_label"], "request_latency p99 (ms)");
    let (within, outside) = (
        points(series(c, "within SLA")),
        points(series(c, "outside SLA")),
    );
    for (p, combo) in breach["all_points"]
        .as_array()
        .unwrap()
        .iter()
        .zip(doc["per_combination_metrics"].as_array().unwrap())
    {
        let x = p["concurrency"].as_f64().unwrap();
        assert_eq!(combo["parameters"]["concurrency"].as_f64(), Some(x));
        let xy = (x, aiperf_stat(&combo["metrics"], "request_latency", "p99"));
        let side = if p["feasible"] == true {
            &within
        } else {
            &outside
        };
        assert!(
            side.contains(&xy),
            "{xy:?} on the feasible={} side",
            p["feasible"]
        );
    }
    assert_eq!(within.len() + outside.len(), 7);
    let chosen = breach["max_passing_concurrency"].as_f64().unwrap();
    let ring = points(series(c, "max_passing_concurrency"));
    assert_eq!(ring.len(), 1);
    assert_eq!(ring[0].0, chosen);
    assert_eq!(points(series(c, "SLA: ")), [(1.0, 30.0), (16.0, 30.0)]);
}

#[test]
fn a_concurrency_ramp_plots_its_knee_and_threshold() {
    let dir = fixture("aiperf-search/concurrency-ramp");
    let knee = read_json(&dir.join("sweep_aggregate/degradation_knee.json"));
    let (out, data) = plotted(&[&dir]);
    let sweep = &data["sweeps"][0];
    assert_eq!(sweep["kind"], "concurrency-ramp");
    assert_eq!(
        sweep["chosen"]["label"],
        format!("concurrency {}", knee["knee_concurrency"])
    );
    assert_eq!(sweep["chosen"]["why"], "knee");
    let sla = &sweep["slas"][0];
    let threshold =
        knee["baseline_p99"].as_f64().unwrap() * (1.0 + knee["threshold_pct"].as_f64().unwrap());
    assert_eq!(sla["threshold"].as_f64().unwrap(), threshold);
    // One trial: AIPerf's "p99" is the mean request latency, so the line is drawn on avg, and
    // the baseline is concurrency 1's avg.
    assert_eq!(sla["stat"], "avg");
    let c1 = &sweep["variations"][0];
    assert_eq!(c1["label"], "concurrency 1");
    assert_eq!(c1["stats"]["request_latency_avg"], knee["baseline_p99"]);
    // Each concurrency at its mean latency; the knee's ring on the knee's.
    let c = chart(&data, "sla-request_latency-avg");
    assert_eq!(c["x_label"], "concurrency");
    let mut all = points(series(c, "within SLA"));
    all.extend(points(series(c, "outside SLA")));
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let want: Vec<(f64, f64)> = sweep["variations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["parameters"]["concurrency"].as_f64().unwrap(),
                v["stats"]["request_latency_avg"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(all, want);
    let k = knee["knee_concurrency"].as_f64().unwrap();
    let ring = points(series(c, "knee"));
    assert_eq!(ring, [*want.iter().find(|p| p.0 == k).unwrap()]);
    let svg =
        std::fs::read_to_string(out.path().join("plots/sla-request_latency-avg.svg")).unwrap();
    threshold_y(&svg);
    let rings = circles(&svg)
        .into_iter()
        .filter(|c| c.2 == "9" && c.4 == "#FF8C00")
        .count();
    assert_eq!(rings, 1);
}

#[test]
fn unusable_sweep_directories_are_named_and_skipped() {
    let bad = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bad.path().join("sweep_aggregate")).unwrap();
    std::fs::write(
        bad.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
        "{\"per_combination_metrics\": [",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = plot(&[bad.path()], out.path());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("profile_export_aiperf_sweep.json: not valid JSON"),
        "{err}"
    );
    // Beside a usable sweep, it is skipped with the same message and the report is written.
    let good = fixture("aiperf-sweep/concurrency");
    let o = plot(&[bad.path(), good.as_path()], out.path());
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("skipped") && err.contains("not valid JSON"),
        "{err}"
    );
    assert!(out.path().join("report.html").is_file());
}

#[test]
fn a_variation_with_aiperf_trials_plots_its_trials() {
    // AIPerf names a sweep's trials `trial_NNNN` (`run_NNNN` outside sweeps): the variation
    // directory of an independent-trials sweep is a multi-run directory with them.
    let dir = fixture("aiperf-sweep/trials-independent/concurrency_2");
    let (_o, data) = plotted(&[&dir]);
    let input = &data["inputs"][0];
    let runs: Vec<&Value> = input["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["label"])
        .collect();
    assert_eq!(runs, ["trial_0001"], "the trial the fixture keeps");
    let agg = read_json(&dir.join("aggregate/profile_export_aiperf_aggregate.json"));
    assert_eq!(
        input["aggregate"]["request_throughput_avg"],
        agg["metrics"]["request_throughput_avg"]
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_one_trial_sweep_draws_its_variations_runs_and_reports_beside_itself() {
    // The fixture keeps one variation's run summary (concurrency_2): that variation is also an
    // input of the report, labelled as in the sweep; the report goes into the sweep's directory.
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixture("aiperf-sweep/concurrency"), tmp.path());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("plot")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(tmp.path().join("report.html").is_file());
    assert!(!tmp.path().join("concurrency_2/report.html").exists());
    let data = data_block(&std::fs::read_to_string(tmp.path().join("report.html")).unwrap());
    let inputs = data["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 1, "only concurrency_2 holds a run");
    assert_eq!(inputs[0]["label"], "concurrency 2");
    assert!(
        inputs[0]["dir"]
            .as_str()
            .unwrap()
            .ends_with("concurrency_2")
    );
    assert!(chart(&data, "ttft-cdf")["series"].is_array());
}
