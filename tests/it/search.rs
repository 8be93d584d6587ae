//! SLO search end to end: the `ringperf profile` binary searching a mock of known capacity
//! (docs/search.md). The mock serves at most 2 requests at once, each for
//! S = TTFT + 5 × ITL = 80 + 5 × 40 = 280 ms; a closed loop of c clients over that capacity
//! waits (c - 2) / 2 × S for a slot, so p95 TTFT is 80 ms up to concurrency 2 and about
//! 80 + 140 = 220 ms at 3. Under a 150 ms TTFT SLA (70 ms from either, room for a loaded
//! machine) the answer is concurrency 2, known before anything runs.

use std::time::Duration;

use ringperf_mock::mock::{MockConfig, OutputLen};
use serde_json::json;

use crate::common::{profile_binary, read_json};

const S_SECONDS: f64 = 0.280;
const CAPACITY: u32 = 2;
const TOKENS: u64 = 6;

#[test]
fn max_concurrency_under_a_ttft_sla_finds_the_mock_capacity() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(80),
        itl: Duration::from_millis(40),
        output_tokens: OutputLen::Fixed(TOKENS),
        capacity: CAPACITY,
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out = profile_binary(
        &server,
        dir.path(),
        6,
        &[
            "--search-recipe",
            "max-concurrency-under-sla",
            "--ttft-sla-ms",
            "150",
            "--concurrency-max",
            "8",
            "--no-server-metrics",
            // The planner is the subject, not the verdict: one slow dispatch of 6 in a debug
            // build on a loaded machine must not make a point infeasible.
            "--max-client-lag-us",
            "1000000",
        ],
        &[],
    );
    let truth = server.truth();
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer = stdout
        .lines()
        .find(|l| l.starts_with("max throughput under p95 TTFT < 150 ms: "))
        .unwrap_or_else(|| panic!("no answer line in:\n{stdout}"));
    assert!(answer.ends_with(" tok/s at concurrency 2"), "{answer}");

    let h = read_json(&dir.path().join("search_history.json"));
    assert_eq!(h["recipe"], "max-concurrency-under-sla");
    assert_eq!(h["config"]["planner"], "smooth_isotonic");
    assert_eq!(h["convergence_reason"], "smooth_isotonic_precision_reached");
    let b = &h["boundary_summary"];
    assert_eq!(b["swept_dim_path"], "phases.profiling.concurrency");
    assert_eq!(b["feasible_max"]["value"], 2);
    assert_eq!(b["infeasible_min"]["value"], 3);
    assert_eq!(
        b["infeasible_min"]["first_breach"]["metric_tag"],
        "time_to_first_token"
    );
    // The probe doubles from 1 until a fail (4), then bisects [2, 4]: 1, 2, 4, 3.
    let its = h["iterations"].as_array().unwrap();
    let run: Vec<u64> = its
        .iter()
        .map(|i| {
            i["variation_values"]["phases.profiling.concurrency"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(run, [1, 2, 4, 3]);
    let feasible: Vec<bool> = its.iter().map(|i| i["feasible"] == true).collect();
    assert_eq!(feasible, [true, true, false, false]);
    // Progress: an adaptive search cannot know how many points it will run (it printed
    // "variation 3 of 3", "4 of 4"), only its bound, `max_iterations`.
    let max = h["config"]["max_iterations"].as_u64().unwrap();
    let progress: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("Search point "))
        .collect();
    assert_eq!(progress.len(), 4, "{stdout}");
    for (k, line) in progress.iter().enumerate() {
        let want = format!(
            "Search point {} (at most {max}) (search_iter_{k:04}), trial 1 of 1",
            k + 1
        );
        assert!(line.starts_with(&want), "{line}");
    }
    assert!(!stdout.contains("Sweep variation"), "{stdout}");

    // Each point is a variation of the sweep runner, in its own directory, with the sweep
    // aggregate over them.
    for i in 0..4 {
        let summary = dir
            .path()
            .join(format!("search_iter_{i:04}"))
            .join("profile_export_aiperf.json");
        let s = read_json(&summary);
        // Throughput never beats the capacity: 2 slots × 6 tokens per 280 ms (the mock's
        // plan is a lower bound of every real time, so this holds however slow the machine).
        let tps = s["output_token_throughput"]["avg"].as_f64().unwrap();
        assert!(
            tps <= f64::from(CAPACITY) * TOKENS as f64 / S_SECONDS + 1e-9,
            "{i}: {tps}"
        );
    }
    // The sweep aggregate of an adaptive search: AIPerf's metadata keys (as its
    // max-throughput-ttft-sla run wrote them), the recipe's axes, and the SLA verdicts of the
    // four points (2 feasible, 2 not, as the history says).
    let doc = read_json(
        &dir.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-search");
    let aiperf = read_json(
        &data.join("max-throughput-ttft-sla/sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    assert_eq!(key_list(&doc["metadata"]), key_list(&aiperf["metadata"]));
    let sla_grid =
        read_json(&data.join("sla-grid/sweep_aggregate/profile_export_aiperf_sweep.json"));
    assert_eq!(
        doc["metadata"]["pareto_axes"],
        sla_grid["metadata"]["pareto_axes"]
    );
    let c = &doc["metadata"]["sla_constraints"];
    assert_eq!(
        (c["feasible_count"].as_u64(), c["infeasible_count"].as_u64()),
        (Some(2), Some(2))
    );
    // The points as AIPerf lists them: by the swept flag's short name, each distinct value
    // once, in the order proposed (AIPerf's own search: `{"concurrency": 1}`, …).
    let params: Vec<&serde_json::Value> =
        (doc["per_combination_metrics"].as_array().unwrap().iter())
            .map(|c| &c["parameters"])
            .collect();
    assert_eq!(
        params,
        [1, 2, 4, 3]
            .map(|c| serde_json::json!({"concurrency": c}))
            .iter()
            .collect::<Vec<_>>()
    );
    assert_eq!(
        aiperf["per_combination_metrics"][0]["parameters"],
        serde_json::json!({"concurrency": 1})
    );
    assert_eq!(
        doc["metadata"]["sweep_parameters"],
        serde_json::json!([{"name": "concurrency", "values": [1, 2, 4, 3]}])
    );
    assert_eq!(doc["metadata"]["num_combinations"], 4);

    // The mock's own record: 6 requests per point; none waited at concurrency 1 and 2 (the
    // first 12 by arrival), and some did at 3 and 4.
    let entries = truth.entries();
    assert_eq!(entries.len(), 24);
    assert!(entries[..12].iter().all(|e| e.queue_wait_ns == 0));
    assert!(entries[12..].iter().any(|e| e.queue_wait_ns > 0));
}

/// The grid recipes' derived files on the same mock, whose answers are known in advance: a
/// ramp 1, 2, 4 whose request latency is S up to 2 and about 2 × S at 4 (knee 4, past 50 %:
/// 140 ms from either side);
/// and a grid max-concurrency-under-sla over 1, 2, 3, 4 (TTFT p95 < 150 ms: 2 passes, 3
/// fails). Each file's figures are recomputed here from the variations' own summaries, and its
/// key set is the one AIPerf wrote (tests/data/aiperf-search/).
#[test]
fn grid_recipes_write_their_derived_files() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(80),
        itl: Duration::from_millis(40),
        output_tokens: OutputLen::Fixed(TOKENS),
        capacity: CAPACITY,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let ramp = tempfile::tempdir().unwrap();
    let ramp_args = [
        "--search-recipe",
        "concurrency-ramp",
        "--concurrency-max",
        "4",
        "--concurrency-steps",
        "3",
        "--degradation-threshold",
        "0.5",
        "--no-server-metrics",
        // The planner is the subject, not the verdict: one slow dispatch of 6 in a debug
        // build on a loaded machine must not make a point infeasible.
        "--max-client-lag-us",
        "1000000",
    ];
    let out = profile_binary(&server, ramp.path(), 6, &ramp_args, &[]);
    let grid = tempfile::tempdir().unwrap();
    let grid_args = [
        "--search-recipe",
        "max-concurrency-under-sla",
        "--search-style",
        "grid",
        "--ttft-sla-ms",
        "150",
        "--concurrency-max",
        "4",
        "--no-server-metrics",
        // The planner is the subject, not the verdict: one slow dispatch of 6 in a debug
        // build on a loaded machine must not make a point infeasible.
        "--max-client-lag-us",
        "1000000",
    ];
    profile_binary(&server, grid.path(), 6, &grid_args, &[]);
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("degradation_knee.json"), "{stdout}");
    // A grid knows its points: 1, 2, 4.
    for k in 1..=3 {
        assert!(
            stdout.contains(&format!("Sweep variation {k} of 3 (")),
            "{stdout}"
        );
    }

    let summary = |dir: &std::path::Path, c: u64| {
        read_json(&dir.join(format!("concurrency_{c}/profile_export_aiperf.json")))
    };
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-search");
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };

    // The knee: one trial, so the request latency block's mean (its avg) per concurrency.
    let knee = read_json(&ramp.path().join("sweep_aggregate/degradation_knee.json"));
    let aiperf = read_json(&data.join("concurrency-ramp/sweep_aggregate/degradation_knee.json"));
    assert_eq!(keys(&knee), keys(&aiperf));
    assert_eq!(keys(&knee["all_points"][0]), keys(&aiperf["all_points"][0]));
    let lat: Vec<(u64, f64)> = [1, 2, 4]
        .map(|c| {
            (
                c,
                summary(ramp.path(), c)["request_latency"]["avg"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .to_vec();
    let cutoff = lat[0].1 * 1.5;
    let first = lat[1..].iter().find(|p| p.1 > cutoff).unwrap();
    assert_eq!(first.0, 4, "the capacity's knee: {lat:?}");
    assert_eq!(knee["threshold_pct"], 0.5);
    assert_eq!(knee["baseline_concurrency"], 1);
    assert_eq!(knee["baseline_p99"].as_f64(), Some(lat[0].1));
    assert_eq!(knee["knee_concurrency"], 4);
    assert_eq!(knee["knee_p99"].as_f64(), Some(first.1));
    let pts: Vec<(u64, f64)> = knee["all_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["concurrency"].as_u64().unwrap(),
                p["p99"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(pts, lat);

    // The SLA boundary: p95 TTFT of each concurrency's own run against 150 ms.
    let breach = read_json(&grid.path().join("sweep_aggregate/sla_breach.json"));
    let aiperf = read_json(&data.join("sla-grid/sweep_aggregate/sla_breach.json"));
    assert_eq!(keys(&breach), keys(&aiperf));
    assert_eq!(
        keys(&breach["all_points"][3]),
        keys(&aiperf["all_points"][3])
    );
    assert_eq!(
        keys(&breach["first_failing_breach"]),
        keys(&aiperf["first_failing_breach"])
    );
    let ttft: Vec<f64> = [1, 2, 3, 4]
        .map(|c| {
            summary(grid.path(), c)["time_to_first_token"]["p95"]
                .as_f64()
                .unwrap()
        })
        .to_vec();
    let feasible: Vec<bool> = breach["all_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["feasible"] == true)
        .collect();
    assert_eq!(
        feasible,
        ttft.iter().map(|&t| t < 150.0).collect::<Vec<_>>()
    );
    assert_eq!(feasible, [true, true, false, false], "{ttft:?}");
    assert_eq!(breach["max_passing_concurrency"], 2);
    assert_eq!(breach["first_failing_concurrency"], 3);
    assert_eq!(
        breach["first_failing_breach"]["observed"].as_f64(),
        Some(ttft[2])
    );
    assert_eq!(breach["monotonicity_check"], true);

    // The sweep aggregate's SLA constraints and Pareto axes, with AIPerf's keys in its order.
    let doc = read_json(
        &grid
            .path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    let aiperf = read_json(&data.join("sla-grid/sweep_aggregate/profile_export_aiperf_sweep.json"));
    assert_eq!(keys(&doc["metadata"]), keys(&aiperf["metadata"]));
    assert_eq!(
        doc["metadata"]["pareto_axes"],
        aiperf["metadata"]["pareto_axes"]
    );
    let c = &doc["metadata"]["sla_constraints"];
    assert_eq!(keys(c), keys(&aiperf["metadata"]["sla_constraints"]));
    assert_eq!(
        c["active_filters"],
        json!([{"metric_tag": "time_to_first_token", "stat": "p95", "op": "lt", "threshold": 150.0}])
    );
    assert_eq!(
        (c["feasible_count"].as_u64(), c["infeasible_count"].as_u64()),
        (Some(2), Some(2))
    );
}

#[test]
fn search_flags_are_refused_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    for (flags, says) in [
        (
            vec!["--search-recipe", "max-throughput-ttft-sla"],
            "requires --ttft-sla-ms",
        ),
        (
            vec![
                "--search-recipe",
                "max-concurrency-under-sla",
                "--ttft-sla-ms",
                "50",
                "--search-style",
                "optuna",
            ],
            "Python only",
        ),
        (
            vec![
                "--search-recipe",
                "concurrency-ramp",
                "--concurrency",
                "1,2",
            ],
            "list value",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "-m",
                "m",
                "--url",
                "http://127.0.0.1:9",
                "--streaming",
            ])
            .arg("--artifact-dir")
            .arg(dir.path())
            .args(&flags)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
    }
}

/// `ringperf profile` on `server` with `extra`, without the `--concurrency` of
/// `profile_binary` (a recipe taking a concurrency list).
fn profile_recipe(server: &ringperf_mock::mock::MockServer, dir: &std::path::Path, extra: &[&str]) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--request-count", "4"])
        // The recipes are the subject, not the client-health verdict.
        .args([
            "--no-server-metrics",
            "--max-client-lag-us",
            "1000000",
            "--url",
        ])
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn key_list(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// `decode-itl-curve` (concurrency 1, 2 × OSL 4, 8) and `pareto-sweep` (16/4, 32/8 × 1, 2) on
/// a fast mock: each cell of the ITL surface is its variation's own average ITL, each Pareto
/// cell its variation's TTFT and output token throughput, with the frontier recomputed here;
/// the files and the sweep aggregate's `metadata` have AIPerf's keys
/// (tests/data/aiperf-search/decode-itl-curve, pareto-sweep).
#[test]
fn itl_surface_and_pareto_recipes_write_their_files() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(64),
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dec = tempfile::tempdir().unwrap();
    profile_recipe(
        &server,
        dec.path(),
        &[
            "--search-recipe",
            "decode-itl-curve",
            "--concurrency-max",
            "2",
            "--concurrency-steps",
            "2",
            "--osl-min",
            "4",
            "--osl-max",
            "8",
            "--osl-steps",
            "2",
        ],
    );
    let par = tempfile::tempdir().unwrap();
    profile_recipe(
        &server,
        par.path(),
        &[
            "--search-recipe",
            "pareto-sweep",
            "--isl-osl-pairs",
            "16/4,32/8",
            "--concurrency",
            "1,2",
        ],
    );
    server.stop();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-search");
    let aiperf = |p: &str| read_json(&data.join(p));

    let surface = read_json(&dec.path().join("sweep_aggregate/decode_itl_surface.json"));
    let want = aiperf("decode-itl-curve/sweep_aggregate/decode_itl_surface.json");
    assert_eq!(key_list(&surface), key_list(&want));
    assert_eq!(key_list(&surface["surface"]), key_list(&want["surface"]));
    assert_eq!(surface["surface"]["concurrency_axis"], json!([1.0, 2.0]));
    assert_eq!(surface["surface"]["osl_axis"], json!([4.0, 8.0]));
    for (i, c) in [1, 2].into_iter().enumerate() {
        for (j, o) in [4, 8].into_iter().enumerate() {
            let s = read_json(&dec.path().join(format!(
                "osl_{o}__concurrency_{c}/profile_export_aiperf.json"
            )));
            assert_eq!(s["output_sequence_length"]["avg"].as_f64(), Some(o as f64));
            assert_eq!(
                surface["surface"]["itl_grid"][i][j].as_f64(),
                s["inter_token_latency"]["avg"].as_f64(),
                "cell ({c}, {o})"
            );
        }
    }
    let meta = &read_json(
        &dec.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    )["metadata"];
    let want_meta =
        &aiperf("decode-itl-curve/sweep_aggregate/profile_export_aiperf_sweep.json")["metadata"];
    assert_eq!(key_list(meta), key_list(want_meta));

    let pareto = read_json(&par.path().join("sweep_aggregate/pareto_sweep.json"));
    let want = aiperf("pareto-sweep/sweep_aggregate/pareto_sweep.json");
    assert_eq!(key_list(&pareto), key_list(&want));
    assert_eq!(key_list(&pareto["cells"][0]), key_list(&want["cells"][0]));
    let mut cells = Vec::new();
    for (isl, osl) in [(16, 4), (32, 8)] {
        for c in [1, 2] {
            let s = read_json(&par.path().join(format!(
                "isl_{isl}__osl_{osl}__concurrency_{c}/profile_export_aiperf.json"
            )));
            let x = s["time_to_first_token"]["avg"].as_f64().unwrap();
            let y = s["output_token_throughput"]["avg"].as_f64().unwrap();
            cells.push((isl, osl, c, x, y));
        }
    }
    let got: Vec<(u64, u64, u64, f64, f64, bool)> = pareto["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["isl"].as_u64().unwrap(),
                c["osl"].as_u64().unwrap(),
                c["concurrency"].as_u64().unwrap(),
                c["x"].as_f64().unwrap(),
                c["y"].as_f64().unwrap(),
                c["pareto_optimal"].as_bool().unwrap(),
            )
        })
        .collect();
    let want: Vec<(u64, u64, u64, f64, f64, bool)> = cells
        .iter()
        .map(|&(i, o, c, x, y)| {
            let beaten = cells
                .iter()
                .any(|p| p.3 <= x && p.4 >= y && (p.3 < x || p.4 > y));
            (i, o, c, x, y, !beaten)
        })
        .collect();
    assert_eq!(got, want);
    let doc = read_json(
        &par.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    let want_doc = aiperf("pareto-sweep/sweep_aggregate/profile_export_aiperf_sweep.json");
    assert_eq!(key_list(&doc["metadata"]), key_list(&want_doc["metadata"]));
    assert_eq!(
        doc["metadata"]["pareto_axes"],
        want_doc["metadata"]["pareto_axes"]
    );
    let names: Vec<&str> = doc["metadata"]["sweep_parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["concurrency", "isl", "osl"]);
    assert_eq!(
        doc["metadata"]["sweep_parameters"][1]["values"],
        json!([16, 32])
    );
    assert_eq!(doc["metadata"]["num_combinations"], 8);
}

/// `--search-sla` on a plain sweep (AIPerf 0.13 accepts and ignores it; ringperf applies it):
/// a mock serving one request at a time for 20 + 3 × 2 = 26 ms, so at concurrency 1 TTFT is
/// about 20 ms and at 3 a request waits up to two services first (p95 about 72 ms): under
/// p95 TTFT < 45 ms (25 ms from either) concurrency 1 is feasible and 3 is not, each verdict
/// checked against the variation's own summary; the frontier holds feasible variations only.
#[test]
fn search_sla_marks_a_plain_sweeps_feasible_variations() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(4),
        capacity: 1,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    profile_recipe(
        &server,
        dir.path(),
        &[
            "--concurrency",
            "1,3",
            "--search-sla",
            "time_to_first_token:p95:lt:45",
        ],
    );
    server.stop();
    let doc = read_json(
        &dir.path()
            .join("sweep_aggregate/profile_export_aiperf_sweep.json"),
    );
    let p95: Vec<f64> = [1, 3]
        .map(|c| {
            read_json(
                &dir.path()
                    .join(format!("concurrency_{c}/profile_export_aiperf.json")),
            )["time_to_first_token"]["p95"]
                .as_f64()
                .unwrap()
        })
        .to_vec();
    assert!(p95[0] < 45.0 && p95[1] >= 45.0, "{p95:?}");
    let c = &doc["metadata"]["sla_constraints"];
    assert_eq!(
        c["active_filters"],
        json!([{"metric_tag": "time_to_first_token", "stat": "p95", "op": "lt", "threshold": 45.0}])
    );
    assert_eq!(
        (c["feasible_count"].as_u64(), c["infeasible_count"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(doc["metadata"].get("pareto_axes").is_none());
    // The best and the frontier are chosen among the feasible variations: concurrency 1 alone.
    assert_eq!(doc["pareto_optimal"], json!([{"concurrency": 1}]));
    for best in doc["best_configurations"].as_object().unwrap().values() {
        assert_eq!(best["parameters"], json!({"concurrency": 1}), "{best}");
    }
    assert!(doc["best_configurations"].get("best_throughput").is_some());
}

/// `--search-sla-tier`: one adaptive search finds each tier's own boundary on the mock of known
/// capacity. p95 TTFT is 80 ms up to concurrency 2, about 220 ms at 3, 360 ms at 4 (two
/// requests wait one service time S) and 500 ms or more from 5; so a 150 ms tier holds up to
/// 2 and a 430 ms tier up to 4 (70 ms from either side). The history has AIPerf's multi-tier
/// keys (tests/data/aiperf-search/sla-tiers/).
#[test]
fn sla_tiers_each_find_their_boundary_on_the_mock() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(80),
        itl: Duration::from_millis(40),
        output_tokens: OutputLen::Fixed(TOKENS),
        capacity: CAPACITY,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out = profile_binary(
        &server,
        dir.path(),
        6,
        &[
            "--search-space",
            "phases.profiling.concurrency:1,8:int",
            "--search-metric",
            "output_token_throughput",
            "--search-direction",
            "maximize",
            "--search-max-iterations",
            "10",
            "--search-sla-tier",
            "tight:time_to_first_token:p95:lt:150",
            "--search-sla-tier",
            "loose:time_to_first_token:p95:lt:430",
            "--no-server-metrics",
            // The planner is the subject, not the verdict: one slow dispatch of 6 in a debug
            // build on a loaded machine must not make a point infeasible.
            "--max-client-lag-us",
            "1000000",
        ],
        &[],
    );
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (label, ms, c) in [("tight", 150, 2), ("loose", 430, 4)] {
        let head = format!("tier {label} (p95 TTFT < {ms} ms): concurrency {c}, max throughput ");
        assert!(
            stdout.lines().any(|l| l.starts_with(&head)),
            "no {head:?} in:\n{stdout}"
        );
    }
    let h = read_json(&dir.path().join("search_history.json"));
    let aiperf = read_json(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/aiperf-search/sla-tiers/search_history.json"
    )));
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&h), keys(&aiperf), "top-level keys");
    assert_eq!(keys(&h["tier_metadata"]), keys(&aiperf["tier_metadata"]));
    assert_eq!(
        keys(&h["tier_results"][0]),
        keys(&aiperf["tier_results"][0])
    );
    assert_eq!(
        keys(&h["boundary_summary"]),
        keys(&aiperf["boundary_summary"])
    );
    assert_eq!(h["config"]["tiers"][0]["label"], "tight");
    assert_eq!(h["convergence_reason"], "multi_tier_all_converged");
    let tiers = h["tier_results"].as_array().unwrap();
    assert_eq!(tiers[0]["boundary_concurrency"], 2);
    assert_eq!(tiers[0]["bracket_upper"], 3);
    assert_eq!(tiers[1]["boundary_concurrency"], 4);
    assert_eq!(tiers[1]["bracket_upper"], 5);
    assert_eq!(tiers[0]["convergence_status"], "converged");
    assert_eq!(
        tiers[0]["binding_constraint"]["metric_tag"],
        "time_to_first_token"
    );
    // The tiers share their metric and stat: tight is stricter than loose.
    assert_eq!(
        h["tier_metadata"]["ordering_pairs"],
        json!([{"strict": "tight", "lenient": "loose"}])
    );
    // Doubling until a tier fails (4 fails tight), bisecting tight (3), then loose's missing
    // upper bound (8) and its bisection (6, 5).
    let run: Vec<u64> = h["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["variation_values"]["phases.profiling.concurrency"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(run, [1, 2, 4, 3, 8, 6, 5]);
    assert_eq!(h["boundary_summary"]["feasible_max"]["value"], 4);
}

/// A point where the client itself fell behind is never the answer, by default (no
/// `--max-client-lag-us`): every send blocked 30 ms by the stall hook (a sleep, not a wait for
/// a CPU) makes each point's dispatch lag ~30 ms against the default 1 ms limit. Both the grid
/// and the adaptive search then have no answer although every point met the SLA, and the line
/// under the answer names the excluded points and why; the sweep table marks them.
#[test]
fn points_where_the_client_fell_behind_are_excluded_and_named() {
    let server = ringperf_mock::mock::start(MockConfig::default()).expect("mock starts");
    let run = |dir: &std::path::Path, extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .env(ringperf_engine::worker::TEST_STALL_ENV, "30")
            .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
            .args(["--tokenizer", "builtin", "--request-count", "4"])
            .args(["--no-server-metrics", "--workers-max", "1", "--url"])
            .arg(format!("http://{}", server.addr))
            .arg("--artifact-dir")
            .arg(dir)
            .args(["--search-recipe", "max-concurrency-under-sla"])
            .args(["--ttft-sla-ms", "10000", "--concurrency-max", "2"])
            .args(extra)
            .output()
            .expect("the binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(
            out.status.code(),
            Some(0),
            "no --max-client-lag-us: {stdout}"
        );
        stdout
    };
    let grid = tempfile::tempdir().unwrap();
    let stdout = run(grid.path(), &["--search-style", "grid"]);
    assert!(
        stdout.contains("max concurrency under p95 TTFT < 10000 ms: no point met the SLA"),
        "{stdout}"
    );
    let excluded = stdout
        .lines()
        .find(|l| l.starts_with("excluded: "))
        .unwrap_or_else(|| panic!("no excluded line: {stdout}"));
    assert!(
        excluded.starts_with("excluded: concurrency 1; concurrency 2 — the client fell behind"),
        "{excluded}"
    );
    // The sweep table (printed on a terminal only, as AIPerf does; always kept in the sweep
    // aggregate) marks both points in its `client` column.
    let table =
        std::fs::read_to_string(grid.path().join("sweep_aggregate/sweep_table.txt")).unwrap();
    let marked = table
        .lines()
        .filter(|l| l.trim_end().ends_with("fell behind"))
        .count();
    assert_eq!(marked, 2, "{table}");
    assert!(stdout.contains("Sweep Table: "), "{stdout}");
    // The grid's sla_breach.json agrees with the answer: no point passes, each marked.
    let breach = read_json(&grid.path().join("sweep_aggregate/sla_breach.json"));
    assert_eq!(
        breach["max_passing_concurrency"],
        serde_json::Value::Null,
        "{breach}"
    );
    for p in breach["all_points"].as_array().unwrap() {
        assert_eq!(p["feasible"], false, "{p}");
        assert_eq!(p["client_fell_behind"], true, "{p}");
    }

    let adaptive = tempfile::tempdir().unwrap();
    let stdout = run(adaptive.path(), &["--search-max-iterations", "2"]);
    let answer = stdout
        .lines()
        .find(|l| l.starts_with("max throughput under p95 TTFT < 10000 ms: "))
        .unwrap_or_else(|| panic!("no answer line: {stdout}"));
    // The planner probes up from concurrency 1; with 1 infeasible it stops there.
    assert!(answer.ends_with("no point met the SLA (1 run)"), "{answer}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("excluded: concurrency 1")),
        "{stdout}"
    );
    let h = read_json(&adaptive.path().join("search_history.json"));
    let its = h["iterations"].as_array().unwrap();
    assert!(!its.is_empty());
    assert!(
        its.iter()
            .all(|i| i["client_fell_behind"] == true && i["feasible"] == false),
        "{its:?}"
    );
    server.stop();
}
