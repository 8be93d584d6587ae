//! Parameter sweeps (docs/sweeps.md): the binary against the mock. A sweep's variations are
//! checked against the mock's truth log and against the same flags run once on their own; the
//! directory layout and key sets against AIPerf 0.13's own recording of the same sweeps
//! (tests/data/aiperf-sweep/, its README has the commands); a signal mid-sweep.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use common::{read_json, read_jsonl};
use serde_json::Value;

fn check_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ringperf profile` against `url`: streaming chat, builtin tokenizer, short prompts, no
/// server metrics, `extra` appended.
fn against(url: &str, dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringperf"));
    c.args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--isl", "16", "--osl", "4"])
        .args(["--no-server-metrics", "--url", url])
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra);
    c
}

/// The embedded mock, fast answers.
fn mock_run(dir: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringperf"));
    c.args([
        "profile",
        "--mock",
        "--mock-ttft-ms",
        "1",
        "--mock-itl-ms",
        "0",
    ])
    .args(["--mock-output-tokens", "4", "--streaming"])
    .args(["--ui", "none", "--no-server-metrics", "--artifact-dir"])
    .arg(dir)
    .args(extra);
    c
}

/// The `x_request_id`s of a run's profiling records.
fn request_ids(run: &Path) -> BTreeSet<String> {
    read_jsonl(&run.join("profile_export.jsonl"))
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .map(|r| r["metadata"]["x_request_id"].as_str().unwrap().to_string())
        .collect()
}

/// A 3-point concurrency sweep: each variation sent exactly its requests (the mock's truth
/// log, matched by request id), carries its place in `run_info`, and sent the very bodies
/// that the same flags send in a run of their own.
#[test]
fn a_concurrency_sweep_is_its_single_runs() {
    let server = common::recording_mock(4);
    let url = format!("http://{}", server.addr);
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("sweep");
    let out = against(
        &url,
        &sweep,
        &["--concurrency", "1,2,4", "--request-count", "6"],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);
    let truth = server.truth().entries();
    assert_eq!(truth.len(), 18, "three variations of six requests");
    let by_id: BTreeMap<String, _> = truth
        .iter()
        .map(|t| (t.request_id.unwrap().to_string(), t))
        .collect();

    let mut sweep_ids = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for (i, c) in [1u64, 2, 4].iter().enumerate() {
        let run = sweep.join(format!("concurrency_{c}"));
        let doc = read_json(&run.join("profile_export_aiperf.json"));
        assert_eq!(doc["request_count"]["avg"].as_f64(), Some(6.0), "c={c}");
        let info = &doc["run_info"];
        assert_eq!(info["variation_index"], i as u64);
        assert_eq!(
            info["variation_label"],
            format!("phases.profiling.concurrency={c}")
        );
        assert_eq!(
            info["variation_values"],
            serde_json::json!({"phases.profiling.concurrency": c})
        );
        assert_eq!(info["trial"], 0);
        assert_eq!(info["run_label"], "run_0001");
        assert_eq!(info["random_seed"], 42 + i as u64);
        assert!(info["cli_command"].as_str().unwrap().contains("'1,2,4'"));
        sweep_ids.insert(info["sweep_id"].as_str().unwrap().to_string());
        // The run's concurrency is the variation's.
        assert_eq!(doc["input_config"]["phases"][0]["concurrency"], *c, "c={c}");
        // Its six requests are six the mock answered, none shared with another variation.
        let ids = request_ids(&run);
        assert_eq!(ids.len(), 6);
        for id in &ids {
            assert!(by_id.contains_key(id), "c={c}: {id} not in the truth log");
            assert!(seen.insert(id.clone()), "{id} in two variations");
        }
    }
    assert_eq!(sweep_ids.len(), 1, "one sweep id");

    // The same flags as a run of its own (concurrency 2 is variation 1: seed 43) send the
    // same request bodies.
    let bodies = |ids: &BTreeSet<String>| -> Vec<Vec<u8>> {
        let entries = server.truth().entries();
        let mut b: Vec<Vec<u8>> = entries
            .iter()
            .filter(|t| ids.contains(&t.request_id.unwrap().to_string()))
            .map(|t| t.request_body.as_deref().unwrap().to_vec())
            .collect();
        b.sort();
        b
    };
    let single = tmp.path().join("single");
    let out = against(
        &url,
        &single,
        &[
            "--concurrency",
            "2",
            "--request-count",
            "6",
            "--random-seed",
            "43",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);
    let in_sweep = bodies(&request_ids(&sweep.join("concurrency_2")));
    assert_eq!(in_sweep, bodies(&request_ids(&single)));
    assert_eq!(in_sweep.len(), 6);

    // The sweep aggregate: one combination per variation, each with its request count.
    let agg = read_json(&sweep.join("sweep_aggregate/profile_export_aiperf_sweep.json"));
    let per = agg["per_combination_metrics"].as_array().unwrap();
    let params: Vec<&Value> = per.iter().map(|c| &c["parameters"]).collect();
    assert_eq!(
        params,
        [
            &serde_json::json!({"concurrency": 1}),
            &serde_json::json!({"concurrency": 2}),
            &serde_json::json!({"concurrency": 4})
        ]
    );
    for c in per {
        assert_eq!(c["metrics"]["request_count"]["mean"].as_f64(), Some(6.0));
    }
    assert_eq!(agg["num_profile_runs"], 3);
    assert_eq!(agg["metadata"]["num_combinations"], 3);
}

/// The files a ringperf run and an AIPerf run both write (ringperf writes more; AIPerf's
/// `run_config.json` and logs are not ringperf's).
const SHARED_FILES: [&str; 8] = [
    "profile_export_aiperf.json",
    "profile_export_aiperf.csv",
    "profile_export_console.txt",
    ".aiperf_results_ready.json",
    "profile_export_aiperf_aggregate.json",
    "profile_export_aiperf_aggregate.csv",
    "profile_export_aiperf_sweep.json",
    "profile_export_aiperf_sweep.csv",
];

/// The paths of AIPerf's recorded tree (`tree.txt`) that ringperf must write too: the shared
/// files.
fn aiperf_paths(fixture: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(fixture.join("tree.txt"))
        .unwrap()
        .lines()
        .filter(|l| SHARED_FILES.iter().any(|f| l.ends_with(f)))
        .map(String::from)
        .collect()
}

/// The shared files under `dir`, relative (not ringperf's own per-phase exports, `phases/`).
fn our_paths(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, at: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(at).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if SHARED_FILES.iter().any(|f| p.ends_with(f))
                && !p.strip_prefix(root).unwrap().iter().any(|c| c == "phases")
            {
                out.insert(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// `--concurrency 1,2,4 --num-profile-runs 2`, both loop orders: the same paths as AIPerf's
/// recording of the same sweep, and the same keys in the sweep aggregate, its metadata and a
/// variation's aggregate metadata (ringperf adds `client_fell_behind` to the latter).
#[test]
fn layout_and_keys_are_aiperfs() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-sweep");
    for (name, extra) in [
        ("trials-repeated", &[][..]),
        (
            "trials-independent",
            &["--parameter-sweep-mode", "independent"][..],
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut args = vec![
            "--concurrency",
            "1,2,4",
            "--request-count",
            "3",
            "--num-profile-runs",
            "2",
            // The layout is the subject: no variation is marked for one slow dispatch of a
            // debug build on a loaded machine.
            "--max-client-lag-us",
            "1000000",
        ];
        args.extend_from_slice(extra);
        let out = mock_run(dir, &args).output().unwrap();
        check_exit(&out, 0);
        let fixture = data.join(name);
        assert_eq!(our_paths(dir), aiperf_paths(&fixture), "{name}");

        let sweep_rel = if name == "trials-repeated" {
            "aggregate/sweep_aggregate/profile_export_aiperf_sweep.json"
        } else {
            "sweep_aggregate/profile_export_aiperf_sweep.json"
        };
        let ours = read_json(&dir.join(sweep_rel));
        let theirs = read_json(&fixture.join(sweep_rel));
        assert_eq!(keys(&ours), keys(&theirs), "{name}");
        assert_eq!(keys(&ours["metadata"]), keys(&theirs["metadata"]), "{name}");
        assert_eq!(ours["metadata"], theirs["metadata"], "{name}");
        let combo = &ours["per_combination_metrics"][0];
        assert_eq!(keys(combo), ["parameters", "metrics"]);
        let m = &combo["metrics"]["request_throughput_avg"];
        assert_eq!(
            keys(m),
            keys(&theirs["per_combination_metrics"][0]["metrics"]["request_throughput_avg"])
        );
        assert_eq!(
            keys(&ours["best_configurations"]),
            keys(&theirs["best_configurations"])
        );

        let agg_rel = if name == "trials-repeated" {
            "aggregate/concurrency_2/profile_export_aiperf_aggregate.json"
        } else {
            "concurrency_2/aggregate/profile_export_aiperf_aggregate.json"
        };
        let ours = read_json(&dir.join(agg_rel));
        let theirs = read_json(&fixture.join(agg_rel));
        assert_eq!(keys(&ours), keys(&theirs), "{name}");
        let mut want = keys(&theirs["metadata"]);
        want.push("client_fell_behind".into());
        let mut got = keys(&ours["metadata"]);
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}");
        for k in [
            "variation_label",
            "variation_values",
            "sweep_mode",
            "run_labels",
        ] {
            assert_eq!(ours["metadata"][k], theirs["metadata"][k], "{name}: {k}");
        }
        // Every run's run_info names its variation and trial as AIPerf's do.
        let run = if name == "trials-repeated" {
            dir.join("profile_runs/trial_0002/concurrency_4")
        } else {
            dir.join("concurrency_4/profile_runs/trial_0002")
        };
        let info = &read_json(&run.join("profile_export_aiperf.json"))["run_info"];
        assert_eq!(info["trial"], 1);
        assert_eq!(info["run_label"], "run_0002");
        assert_eq!(info["variation_index"], 2);
        assert_eq!(info["random_seed"], 44);
    }
}

/// A grid of two lists, a zip of the same and two variants: AIPerf's variation directories,
/// sweep metadata and per-variation parameters (tests/data/aiperf-sweep/grid, zip, variants).
#[test]
fn grid_and_zip_directories_are_aiperfs() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-sweep");
    let lists = [
        "--concurrency",
        "1,2",
        "--isl",
        "16,64",
        "--request-count",
        "2",
    ];
    let variants = [
        "--variant",
        "small: isl=16, concurrency=1",
        "--variant",
        "big: isl=64, concurrency=2",
        "--request-count",
        "2",
    ];
    for (name, args) in [
        ("grid", lists.to_vec()),
        ("zip", [&lists[..], &["--sweep-type", "zip"]].concat()),
        ("variants", variants.to_vec()),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut c = mock_run(dir, &args);
        let out = c.output().unwrap();
        check_exit(&out, 0);
        let fixture = data.join(name);
        assert_eq!(our_paths(dir), aiperf_paths(&fixture), "{name}");
        let rel = "sweep_aggregate/profile_export_aiperf_sweep.json";
        let ours = read_json(&dir.join(rel));
        let theirs = read_json(&fixture.join(rel));
        assert_eq!(ours["metadata"], theirs["metadata"], "{name}");
        let params = |d: &Value| -> Vec<Value> {
            d["per_combination_metrics"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["parameters"].clone())
                .collect()
        };
        assert_eq!(params(&ours), params(&theirs), "{name}");
    }
}

/// SIGINT while the second variation runs: it ends as a cancelled run, the third never starts,
/// the sweep aggregate covers the first alone, exit 130.
#[test]
fn sigint_stops_the_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let out = common::interrupt_once_written(
        mock_run(
            dir,
            &["--concurrency", "1,2,4", "--benchmark-duration", "4"],
        ),
        &dir.join("concurrency_2/profile_export.jsonl"),
    );
    check_exit(&out, 130);
    let first = read_json(&dir.join("concurrency_1/profile_export_aiperf.json"));
    assert_eq!(first["was_cancelled"], false);
    let cut = read_json(&dir.join("concurrency_2/profile_export_aiperf.json"));
    assert_eq!(cut["was_cancelled"], true);
    assert!(!dir.join("concurrency_4").exists());
    let agg = read_json(&dir.join("sweep_aggregate/profile_export_aiperf_sweep.json"));
    let per = agg["per_combination_metrics"].as_array().unwrap();
    assert_eq!(per.len(), 1);
    assert_eq!(per[0]["parameters"], serde_json::json!({"concurrency": 1}));
    assert_eq!(agg["num_profile_runs"], 2);
    assert_eq!(agg["failed_runs"].as_array().unwrap().len(), 1);
}

/// AIPerf's refusals, before anything runs: exit 2 and its message.
#[test]
fn refusals_exit_2_with_aiperfs_message() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, msg) in [
        (
            &[
                "--concurrency",
                "1,2",
                "--request-rate",
                "1,2,3",
                "--sweep-type",
                "zip",
            ][..],
            "zip sweep parameters must all have equal length",
        ),
        (
            &["--variant", "concurrency=2"][..],
            "--variant: single occurrence is rejected",
        ),
        (
            &["--concurrency", "1,x"][..],
            "--concurrency: `x` in the list is not a non-negative whole number",
        ),
    ] {
        let out = mock_run(tmp.path(), args).output().unwrap();
        check_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(msg), "{args:?}: {err}");
    }
    // A variation that `profile` refuses is refused before any variation runs.
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--mock", "--ui", "none", "--artifact-dir"])
        .arg(tmp.path().join("v"))
        .args([
            "--variant",
            "a:concurrency=1",
            "--variant",
            "b:prefill_concurrency=4",
        ])
        .output()
        .unwrap();
    check_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("variation b: --prefill-concurrency needs --streaming"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.path().join("v").exists(), "nothing ran");
    // A trace with timestamps is a fixed schedule: lists are refused with it.
    let trace = tmp.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\":0,\"input_length\":8,\"output_length\":2}\n",
    )
    .unwrap();
    let out = mock_run(
        &tmp.path().join("fs"),
        &[
            "--concurrency",
            "1,2",
            "--input-file",
            trace.to_str().unwrap(),
            "--custom-dataset-type",
            "mooncake_trace",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "Parameter sweeps (e.g., --concurrency 1,2) cannot be used with --fixed-schedule"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Adaptive convergence on a metric whose every trial is the same (`request_count`: the CI
/// has zero width): judged from the third trial on, so three trials run of the cap of five,
/// for a plain repeated profile and for each variation of a sweep.
#[test]
fn convergence_stops_the_trials_once_stable() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let out = mock_run(
        &plain,
        &[
            "--request-count",
            "2",
            "--num-profile-runs",
            "5",
            "--convergence-metric",
            "request_count",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);
    assert!(plain.join("profile_runs/run_0003").is_dir());
    assert!(!plain.join("profile_runs/run_0004").exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("request_count_avg converged after 3 runs"),
        "{stdout}"
    );
    let agg = read_json(&plain.join("aggregate/profile_export_aiperf_aggregate.json"));
    assert_eq!(agg["metadata"]["num_profile_runs"], 3);

    let sweep = tmp.path().join("sweep");
    let out = mock_run(
        &sweep,
        &[
            "--concurrency",
            "1,2",
            "--request-count",
            "2",
            "--num-profile-runs",
            "4",
            "--convergence-metric",
            "request_count",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);
    for c in ["concurrency_1", "concurrency_2"] {
        assert!(
            sweep.join("profile_runs/trial_0003").join(c).is_dir(),
            "{c}"
        );
        assert!(
            !sweep.join("profile_runs/trial_0004").join(c).exists(),
            "{c}"
        );
    }
    // Without trials there is nothing to converge: AIPerf's refusal.
    let out = mock_run(
        &tmp.path().join("one"),
        &["--convergence-metric", "request_count"],
    )
    .output()
    .unwrap();
    check_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--convergence-metric requires --num-profile-runs > 1")
    );
}

/// The per-request values of `metric` in a run's `profile_export.jsonl`: profiling records
/// without an error.
fn request_values(run: &Path, metric: &str) -> Vec<f64> {
    read_jsonl(&run.join("profile_export.jsonl"))
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling" && r["error"].is_null())
        .filter_map(|r| r["metrics"][metric]["value"].as_f64())
        .collect()
}

/// The KS p-value of run `k`'s values (1-based) against runs 1..k-1 pooled, recomputed from
/// the runs' own files.
fn ks_p_value(runs: &Path, metric: &str, k: usize) -> f64 {
    let values: Vec<Vec<f64>> = (1..=k)
        .map(|i| request_values(&runs.join(format!("run_{i:04}")), metric))
        .collect();
    let pooled: Vec<f64> = values[..k - 1].iter().flatten().copied().collect();
    ringperf::run::ks::ks_2samp(&pooled, &values[k - 1])
        .unwrap()
        .p_value
}

/// `--convergence-mode distribution`: after each run from the third, the last run's
/// per-request TTFTs against the earlier runs' pooled; the runs stop at the first run whose
/// p-value (recomputed here from the runs' `profile_export.jsonl`) is above the threshold,
/// and not before; the console line gives that p-value. A high threshold (0.6) on the mock's
/// jittery TTFTs makes the runs stop anywhere from the third to the cap; the rule is checked
/// whatever the draw. Then a sweep on a metric every run repeats exactly (the ISL: p = 1):
/// each variation stops at its third trial, never at its second.
#[test]
fn distribution_convergence_stops_at_the_first_p_value_above_the_threshold() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let (cap, threshold) = (5, 0.6);
    let out = mock_run(
        &plain,
        &[
            "--request-count",
            "10",
            "--concurrency",
            "2",
            "--num-profile-runs",
            "5",
            "--convergence-metric",
            "time_to_first_token",
            "--convergence-mode",
            "distribution",
            "--convergence-threshold",
            "0.6",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let runs = plain.join("profile_runs");
    let ran = (1..=cap)
        .take_while(|k| runs.join(format!("run_{k:04}")).is_dir())
        .count();
    assert!(ran >= 3, "{stdout}");
    for k in 3..=ran {
        let p = ks_p_value(&runs, "time_to_first_token", k);
        let converged = p > threshold;
        // Not before: every earlier judgement was at or under the threshold.
        if k < ran {
            assert!(
                !converged,
                "run {k}: p {p} > {threshold}, yet run {} ran",
                k + 1
            );
        }
        let verdict = if converged {
            format!("converged after {k} runs (KS p-value {p:.4} > 0.6)")
        } else {
            format!("not yet converged after {k} runs (KS p-value {p:.4} <= 0.6)")
        };
        assert!(stdout.contains(&verdict), "{verdict} not in {stdout}");
    }
    if ran < cap {
        assert!(ks_p_value(&runs, "time_to_first_token", ran) > threshold);
    }
    let agg = read_json(&plain.join("aggregate/profile_export_aiperf_aggregate.json"));
    assert_eq!(agg["metadata"]["num_profile_runs"], ran);
    // AIPerf's collated JSON: the runs' per-request values pooled, recomputed here.
    let col = read_json(&plain.join("aggregate/profile_export_aiperf_collated.json"));
    let top: Vec<&str> = col
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        top,
        [
            "schema_version",
            "aiperf_version",
            "description",
            "metadata",
            "metrics"
        ]
    );
    let meta: Vec<&str> = col["metadata"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        meta,
        [
            "aggregation_type",
            "num_profile_runs",
            "num_successful_runs",
            "failed_runs",
            "run_labels",
            "cooldown_seconds"
        ]
    );
    let per_run: Vec<Vec<f64>> = (1..=ran)
        .map(|k| request_values(&runs.join(format!("run_{k:04}")), "time_to_first_token"))
        .collect();
    let mut all: Vec<f64> = per_run.iter().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let ttft = &col["metrics"]["time_to_first_token"];
    let combined = &ttft["combined"];
    assert_eq!(combined["count"], all.len());
    let mean = all.iter().sum::<f64>() / all.len() as f64;
    let rank = 0.9 * (all.len() - 1) as f64;
    let (lo, t) = (rank.floor() as usize, rank - rank.floor());
    let p90 = all[lo] + (all[(lo + 1).min(all.len() - 1)] - all[lo]) * t;
    for (key, want) in [("mean", mean), ("p90", p90)] {
        let got = combined[key].as_f64().unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want.abs(),
            "{key}: {got} against {want}"
        );
    }
    for (k, values) in per_run.iter().enumerate() {
        assert_eq!(ttft["per_run"][k]["label"], format!("run_{:04}", k + 1));
        assert_eq!(ttft["per_run"][k]["count"], values.len());
    }

    let sweep = tmp.path().join("sweep");
    let out = mock_run(
        &sweep,
        &[
            "--concurrency",
            "1,2",
            "--parameter-sweep-mode",
            "independent",
            "--request-count",
            "2",
            "--num-profile-runs",
            "4",
            "--convergence-metric",
            "input_sequence_length",
            "--convergence-mode",
            "distribution",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 0);
    for c in ["concurrency_1", "concurrency_2"] {
        let runs = sweep.join(c).join("profile_runs");
        assert!(runs.join("trial_0003").is_dir(), "{c}");
        assert!(!runs.join("trial_0004").exists(), "{c}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "input_sequence_length distribution converged after 3 runs (KS p-value 1.0000 > 0.05)"
        ),
        "{stdout}"
    );
    // Without per-request records there is nothing to compare: AIPerf's refusal.
    let out = mock_run(
        &tmp.path().join("summary"),
        &[
            "--num-profile-runs",
            "3",
            "--convergence-metric",
            "time_to_first_token",
            "--convergence-mode",
            "distribution",
            "--export-level",
            "summary",
        ],
    )
    .output()
    .unwrap();
    check_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--convergence-mode distribution requires per-request JSONL data")
    );
}

/// On a terminal (`script` gives the run a pseudo-terminal) the sweep table is printed again
/// after each variation, with the variations ended so far, as AIPerf prints it; the last one
/// is the whole sweep's. (It was printed once, at the end.)
#[test]
fn the_sweep_table_grows_after_each_variation() {
    if !common::require_tool(
        "script",
        common::tool_runs("script", "--version"),
        "skipped: no `script` (util-linux) to give the run a terminal",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cmd = mock_run(
        tmp.path(),
        &["--concurrency", "1,2,4", "--request-count", "4"],
    );
    let line: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy()))
        .collect();
    let out = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    check_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    // Each table: its header line, then one row per variation ended (the concurrency first).
    let tables: Vec<Vec<u64>> = text
        .split("output_token_throughput")
        .skip(1)
        .map(|t| {
            t.lines()
                .skip(1)
                .map_while(|l| {
                    let first = l.split_whitespace().next()?;
                    first.parse::<u64>().ok().or_else(|| {
                        // The rule under the header.
                        (!first.chars().any(|c| c.is_ascii_alphanumeric())).then_some(0)
                    })
                })
                .filter(|&c| c > 0)
                .collect()
        })
        .collect();
    assert_eq!(tables, [vec![1], vec![1, 2], vec![1, 2, 4]], "{text}");
}
