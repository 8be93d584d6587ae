//! The plan, the variant parser, the convergence decision and the frontier, against
//! hand-computed expectations (and AIPerf 0.13's own seed derivation for one value).

use std::path::Path;

use super::SweepError;
use super::convergence::{decide, decide_distribution};
use super::output::pareto;
use super::plan::{
    Convergence, ConvergenceMode, ParamValue, SweepMode, SweepPlan, SweepType, derive_seed,
    extract_lists, parse_variant,
};
use crate::plan::Plan;

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// The plan of `ringperf profile <flags>` (with a model and URL so the line parses).
fn plan(flags: &str) -> Result<Option<SweepPlan>, SweepError> {
    let a = argv(&format!(
        "ringperf profile --model m --url http://127.0.0.1:1 {flags}"
    ));
    let lists = extract_lists(&a)?;
    let mut base = Plan::parse(&lists.placeholder_argv).expect("placeholder parses");
    base.command = a;
    SweepPlan::from_cli(&base, &lists.lists)
}

fn labels(p: &SweepPlan) -> Vec<String> {
    p.variations.iter().map(|v| v.label.clone()).collect()
}

#[test]
fn lists_are_cut_to_their_first_element_for_clap() {
    let l = extract_lists(&argv(
        "ringperf profile --concurrency 1,2,4 --isl=128,256 --request-rate 10 --model a,b",
    ))
    .unwrap();
    assert_eq!(
        l.placeholder_argv,
        argv("ringperf profile --concurrency 1 --isl 128 --request-rate 10 --model a,b")
    );
    assert_eq!(l.lists.len(), 2);
    assert_eq!(l.lists[0].0.names[0], "--concurrency");
    assert_eq!(
        l.lists[0].1,
        vec![
            ParamValue::Whole(1),
            ParamValue::Whole(2),
            ParamValue::Whole(4)
        ]
    );
    assert_eq!(l.lists[1].0.path, "datasets.main.prompts.isl.mean");
}

#[test]
fn bad_list_elements_are_refused() {
    let e = extract_lists(&argv("ringperf profile --concurrency 1,x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--concurrency: `x` in the list is not a non-negative whole number"
    );
    let e = extract_lists(&argv("ringperf profile --request-rate 1,,2")).unwrap_err();
    assert!(
        e.to_string()
            .contains("`` in the list is not a finite number"),
        "{e}"
    );
    let e = extract_lists(&argv(
        "ringperf profile --concurrency 1,2 --concurrency 3,4",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("given a list twice"), "{e}");
}

#[test]
fn no_list_no_variant_is_no_sweep() {
    assert!(plan("--concurrency 4 --sweep-type zip").unwrap().is_none());
}

#[test]
fn grid_is_the_product_with_paths_sorted_last_fastest() {
    // Given rate first: the paths sort concurrency < rate, so concurrency is the outer loop.
    let p = plan("--request-rate 10,20.5 --concurrency 1,2")
        .unwrap()
        .unwrap();
    assert_eq!(p.sweep_type, SweepType::Grid);
    assert_eq!(
        labels(&p),
        [
            "phases.profiling.concurrency=1, phases.profiling.rate=10.0",
            "phases.profiling.concurrency=1, phases.profiling.rate=20.5",
            "phases.profiling.concurrency=2, phases.profiling.rate=10.0",
            "phases.profiling.concurrency=2, phases.profiling.rate=20.5",
        ]
    );
    let dirs: Vec<String> = p.variations.iter().map(|v| v.dir_name()).collect();
    assert_eq!(
        dirs,
        [
            "concurrency_1__rate_10.0",
            "concurrency_1__rate_20.5",
            "concurrency_2__rate_10.0",
            "concurrency_2__rate_20.5"
        ]
    );
    let idx: Vec<usize> = p.variations.iter().map(|v| v.index).collect();
    assert_eq!(idx, [0, 1, 2, 3]);
    // The dataset path sorts before the phase path.
    let p = plan("--concurrency 1,2 --isl 128,256").unwrap().unwrap();
    assert_eq!(p.variations[1].dir_name(), "mean_128__concurrency_2");
    assert_eq!(p.variations[2].dir_name(), "mean_256__concurrency_1");
    assert_eq!(
        serde_json::Value::Object(p.variations[2].values_json()),
        serde_json::json!({"datasets.main.prompts.isl.mean": 256, "phases.profiling.concurrency": 1})
    );
}

#[test]
fn zip_pairs_elements_and_refuses_unequal_lengths() {
    let p = plan("--concurrency 1,2,3 --osl 64,32,16 --sweep-type zip")
        .unwrap()
        .unwrap();
    assert_eq!(p.sweep_type, SweepType::Zip);
    assert_eq!(
        labels(&p),
        [
            "datasets.main.prompts.osl.mean=64, phases.profiling.concurrency=1",
            "datasets.main.prompts.osl.mean=32, phases.profiling.concurrency=2",
            "datasets.main.prompts.osl.mean=16, phases.profiling.concurrency=3",
        ]
    );
    let e = plan("--concurrency 1,2 --request-rate 1,2,3 --sweep-type zip").unwrap_err();
    assert_eq!(
        e.to_string(),
        "zip sweep parameters must all have equal length; got \
         {'phases.profiling.concurrency': 2, 'phases.profiling.rate': 3}."
    );
}

#[test]
fn the_variant_parser() {
    assert_eq!(
        parse_variant("fast: concurrency=8, isl=128").unwrap(),
        (
            Some("fast".to_string()),
            vec![
                ("concurrency".to_string(), "8".to_string()),
                ("isl".to_string(), "128".to_string())
            ]
        )
    );
    assert_eq!(
        parse_variant(" request_rate=2.5,,extra='a b' ").unwrap(),
        (
            None,
            vec![
                ("request_rate".to_string(), "2.5".to_string()),
                ("extra".to_string(), "a b".to_string())
            ]
        )
    );
    // A `:` after an `=` is part of a value, not a name.
    assert_eq!(parse_variant("url=http://h:1").unwrap().0, None);
    for (bad, why) in [
        ("", "it is empty"),
        ("x:", "empty body"),
        (":a=1", "empty name before ':'"),
        ("concurrency", "token 'concurrency' is missing '='"),
        ("=3", "empty key in token '=3'"),
        ("c=1, c=2", "duplicate key 'c'"),
    ] {
        let e = parse_variant(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
}

#[test]
fn variants_make_scenarios_named_or_numbered() {
    let p = plan("--variant small:isl=128,osl=16 --variant concurrency=4,streaming=true")
        .unwrap()
        .unwrap();
    assert_eq!(p.sweep_type, SweepType::Scenarios);
    assert_eq!(labels(&p), ["small", "v1"]);
    assert_eq!(p.variations[0].dir_name(), "small");
    assert_eq!(p.variations[1].dir_name(), "v1");
    // Applied to the plan: the swept value set, the other key as its switch, the seed the
    // variation's; each given.
    let v = p.plan_of(&p.variations[1], 0).unwrap();
    assert_eq!(v.settings.concurrency, Some(4));
    assert!(v.settings.streaming);
    assert_eq!(v.settings.random_seed, Some(43));
    for id in ["concurrency", "streaming", "random_seed"] {
        assert!(v.given(id), "{id}");
    }
    let v = p.plan_of(&p.variations[0], 0).unwrap();
    assert_eq!((v.settings.isl_mean, v.settings.osl_mean), (128, Some(16)));
    assert_eq!(v.given["isl_mean"], ["128"]);
    assert!(!v.settings.streaming && !v.given("streaming"));
    // AIPerf's record of a variant's overrides (tests/data/aiperf-sweep/variants/, the
    // `benchmark` value of `small: isl=16, concurrency=1`).
    let p = plan("--variant small:isl=16,concurrency=1 --variant big:isl=64,concurrency=2")
        .unwrap()
        .unwrap();
    assert_eq!(
        p.variations[0].benchmark_override(),
        r#"{"datasets":[{"name":"main","prompts":{"isl":{"mean":16}}}],"phases":[{"concurrency":1,"name":"profiling"}]}"#
    );
    assert_eq!(
        plan("--variant concurrency=2").unwrap_err().to_string(),
        "--variant: single occurrence is rejected. Use the individual --isl/--osl/--concurrency \
         flags for a one-off; --variant is for multi-variant sweeps. Pass --variant at least \
         twice to declare a ScenarioSweep."
    );
    assert_eq!(
        plan("--variant concurrency=2 --variant concurrency=3 --concurrency 1,2")
            .unwrap_err()
            .to_string(),
        "--variant is mutually exclusive with magic-list flags ['concurrency'] (e.g. \
         --concurrency 1,2,4). Drop one: magic-lists declare a Cartesian sweep, --variant \
         declares hand-picked scenarios."
    );
}

#[test]
fn a_variation_replaces_every_spelling_of_its_flag() {
    let p = plan("--isl=100 --concurrency=1,2 --random-seed 5")
        .unwrap()
        .unwrap();
    let v = p.plan_of(&p.variations[1], 0).unwrap();
    assert_eq!(v.settings.concurrency, Some(2));
    assert_eq!(v.settings.random_seed, Some(6));
    assert_eq!(v.given["concurrency"], ["2"]);
    assert_eq!(v.given["random_seed"], ["6"]);
    // The settings the sweep does not vary stay as given, and the command line echoed is the
    // sweep's own.
    assert_eq!(v.settings.isl_mean, 100);
    assert_eq!(v.given["isl_mean"], ["100"]);
    assert!(v.command.join(" ").contains("--concurrency=1,2"));
    // A planner's own point, on an alias of the flag given: the value given is replaced.
    let v = super::Variation::new(
        9,
        vec![super::Override {
            flag: super::SweepableFlag::lookup("synthetic_input_tokens_mean").unwrap(),
            value: ParamValue::Whole(64),
        }],
    );
    assert_eq!(v.label, "datasets.main.prompts.isl.mean=64");
    let v = p.plan_of(&v, 0).unwrap();
    assert_eq!(v.settings.isl_mean, 64);
    assert_eq!(v.given["isl_mean"], ["64"]);
    assert_eq!(v.settings.random_seed, Some(14));
}

#[test]
fn loop_order_and_directories_of_both_modes() {
    let p = plan("--concurrency 1,2 --num-profile-runs 3")
        .unwrap()
        .unwrap();
    assert_eq!(p.mode, SweepMode::Repeated);
    assert_eq!(
        p.run_order(),
        [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    );
    let base = Path::new("/a");
    assert_eq!(
        p.run_dir(base, &p.variations[1], 2),
        Path::new("/a/profile_runs/trial_0003/concurrency_2")
    );
    assert_eq!(
        p.aggregate_dir(base, &p.variations[1]),
        Path::new("/a/aggregate/concurrency_2")
    );
    assert_eq!(
        p.sweep_aggregate_dir(base),
        Path::new("/a/aggregate/sweep_aggregate")
    );
    let p = plan("--concurrency 1,2 --num-profile-runs 3 --parameter-sweep-mode independent")
        .unwrap()
        .unwrap();
    assert_eq!(
        p.run_order(),
        [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    );
    assert_eq!(
        p.run_dir(base, &p.variations[0], 1),
        Path::new("/a/concurrency_1/profile_runs/trial_0002")
    );
    assert_eq!(
        p.aggregate_dir(base, &p.variations[0]),
        Path::new("/a/concurrency_1/aggregate")
    );
    assert_eq!(p.sweep_aggregate_dir(base), Path::new("/a/sweep_aggregate"));
    // One trial: no trial level.
    let p = plan("--concurrency 1,2").unwrap().unwrap();
    assert_eq!(
        p.run_dir(base, &p.variations[0], 0),
        Path::new("/a/concurrency_1")
    );
    assert_eq!(
        p.aggregate_dir(base, &p.variations[0]),
        Path::new("/a/aggregate/concurrency_1")
    );
    assert_eq!(p.sweep_aggregate_dir(base), Path::new("/a/sweep_aggregate"));
}

#[test]
fn seeds_per_variation_and_trial() {
    // No seed given: AIPerf's 42, plus the variation's index.
    let p = plan("--concurrency 1,2,4 --num-profile-runs 2")
        .unwrap()
        .unwrap();
    let seeds: Vec<Option<u64>> = p.variations.iter().map(|v| p.seed_of(v, 1)).collect();
    assert_eq!(seeds, [Some(42), Some(43), Some(44)]);
    let p = plan("--concurrency 1,2 --random-seed 7 --parameter-sweep-same-seed")
        .unwrap()
        .unwrap();
    assert_eq!(p.seed_of(&p.variations[1], 0), Some(7));
    let p = plan("--concurrency 1,2 --no-set-consistent-seed")
        .unwrap()
        .unwrap();
    assert_eq!(p.seed_of(&p.variations[1], 0), None);
    // Per trial: AIPerf's derive_variation_seed(42, "phases.profiling.concurrency=2:trial:1")
    // is 2368206805607971697 (computed with AIPerf 0.13 itself).
    let p = plan("--concurrency 1,2 --num-profile-runs 2 --vary-seed-per-trial")
        .unwrap()
        .unwrap();
    assert_eq!(
        p.seed_of(&p.variations[1], 1),
        Some(2_368_206_805_607_971_697)
    );
    assert_eq!(
        derive_seed(42, "phases.profiling.concurrency=1:trial:0"),
        7_641_521_854_746_410_498
    );
}

#[test]
fn a_sharded_sweep_is_planned_as_any_other() {
    // A sharded sweep is planned as any other (each run is a shard; docs/scale-out.md).
    let p = plan("--concurrency 2,4 --shard-count 2 --shard-index 0")
        .expect("planned")
        .expect("a sweep");
    assert_eq!(p.variations.len(), 2);
    // Adaptive convergence is not: each shard would stop after its own trial count.
    let e = plan("--concurrency 2,4 --shard-count 2 --shard-index 0 --convergence-metric x")
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot be combined with --shard-count"),
        "{e}"
    );
}

#[test]
fn distribution_mode_needs_the_records() {
    // Accepted, with its own default threshold (AIPerf: a KS p-value of 0.05).
    let p =
        plan("--concurrency 1,2 --convergence-metric x --convergence-mode distribution").unwrap();
    let c = p.unwrap().convergence.unwrap();
    assert_eq!((c.mode, c.threshold), (ConvergenceMode::Distribution, 0.05));
    // Without per-request records: AIPerf's message.
    let e = plan(
        "--concurrency 1,2 --convergence-metric x --convergence-mode distribution \
         --export-level summary",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains(
            "--convergence-mode distribution requires per-request JSONL data, but \
             --export-level is set to 'summary'"
        ),
        "{e}"
    );
}

fn ci(threshold: f64) -> Convergence {
    Convergence {
        metric: "time_to_first_token".into(),
        stat: "avg".into(),
        mode: ConvergenceMode::CiWidth,
        threshold,
        min_runs: 3,
    }
}

#[test]
fn convergence_stops_when_the_ci_narrows() {
    // [100, 102, 98]: mean 100, s = 2, se = 2 / sqrt(3); t(0.975, 2) = 4.302652729749462
    // (scipy); width / mean = 2 * 4.3026527 * 1.1547005 / 100 = 0.0993655.
    let d = decide(&ci(0.10), vec![100.0, 102.0, 98.0], 0.95);
    assert!(d.converged);
    assert!((d.figure.unwrap() - 0.099_365_508_47).abs() < 1e-9, "{d:?}");
    // Twice the spread: 0.1987310 is not below 0.10.
    let d = decide(&ci(0.10), vec![100.0, 104.0, 96.0], 0.95);
    assert!(!d.converged);
    assert!((d.figure.unwrap() - 0.198_731_016_94).abs() < 1e-9, "{d:?}");
    // Fewer than three trials are never judged, however tight.
    let d = decide(&ci(0.10), vec![100.0, 100.0], 0.95);
    assert!(!d.converged && d.figure.is_none());
    // A zero mean is never converged.
    assert!(!decide(&ci(0.10), vec![0.0, 0.0, 0.0], 0.95).converged);
    // CV: s / mean = 2 / 100.
    let cv = Convergence {
        mode: ConvergenceMode::Cv,
        threshold: 0.05,
        ..ci(0.0)
    };
    let d = decide(&cv, vec![100.0, 102.0, 98.0], 0.95);
    assert!(d.converged && (d.figure.unwrap() - 0.02).abs() < 1e-12);
    assert!(!decide(&cv, vec![100.0, 110.0, 90.0], 0.95).converged);
}

#[test]
fn the_pareto_frontier_of_throughput_against_latency() {
    // (throughput, p99 latency): (140, 70) is beaten by (150, 60) on both; the rest trade.
    let pts = [(100.0, 50.0), (150.0, 60.0), (140.0, 70.0), (90.0, 40.0)];
    assert_eq!(pareto(&pts), [0, 1, 3]);
    // A tie on both is no domination: both stay.
    assert_eq!(pareto(&[(1.0, 1.0), (1.0, 1.0)]), [0, 1]);
}

/// A variation result with the given means (one trial each) and client verdict.
fn result(
    p: &SweepPlan,
    index: usize,
    means: &[(&str, f64)],
    fell_behind: bool,
) -> super::VariationResult {
    use ringperf_metrics::aggregate::confidence::Confidence;
    use ringperf_metrics::export::aggregate::{Aggregate, AggregateMetric, RunResult};
    let metrics = means
        .iter()
        .map(|(k, v)| AggregateMetric {
            key: (*k).to_string(),
            stats: Confidence::single(*v),
            unit: "x".into(),
        })
        .collect();
    super::VariationResult {
        variation: p.variations[index].clone(),
        trials: Vec::new(),
        runs: vec![RunResult {
            label: "run_0001".into(),
            outcome: Ok(Vec::new()),
        }],
        aggregate: Some(Aggregate {
            num_runs: 1,
            run_labels: vec!["run_0001".into()],
            failed_runs: Vec::new(),
            confidence_level: 0.95,
            cooldown_seconds: 0.0,
            single_run: true,
            metrics,
        }),
        client_fell_behind: fell_behind,
        cancelled: false,
        convergence: None,
    }
}

/// A variation whose client fell behind is marked in the table and the aggregate, and is
/// never the best configuration nor on the frontier, however good its figures.
#[test]
fn a_variation_whose_client_fell_behind_is_never_chosen() {
    let p = plan("--concurrency 1,2,4 --num-profile-runs 2")
        .unwrap()
        .unwrap();
    let rs = vec![
        result(
            &p,
            0,
            &[
                ("request_throughput_avg", 10.0),
                ("time_to_first_token_p99", 5.0),
                ("output_token_throughput_avg", 384.2),
            ],
            false,
        ),
        result(
            &p,
            1,
            &[
                ("request_throughput_avg", 20.0),
                ("time_to_first_token_p99", 8.0),
            ],
            false,
        ),
        // Best on both objectives, but the client fell behind.
        result(
            &p,
            2,
            &[
                ("request_throughput_avg", 99.0),
                ("time_to_first_token_p99", 1.0),
            ],
            true,
        ),
    ];
    assert!(!rs[2].usable() && rs[1].usable());
    let doc = super::output::sweep_json(&p, &rs);
    assert_eq!(
        doc["best_configurations"]["best_throughput"]["parameters"],
        serde_json::json!({"concurrency": 2})
    );
    assert_eq!(
        doc["best_configurations"]["best_latency_p99"]["parameters"],
        serde_json::json!({"concurrency": 1})
    );
    assert_eq!(
        doc["pareto_optimal"],
        serde_json::json!([{"concurrency": 1}, {"concurrency": 2}])
    );
    let per = doc["per_combination_metrics"].as_array().unwrap();
    assert_eq!(per[2]["client_fell_behind"], true);
    assert!(per[0].get("client_fell_behind").is_none());

    let table = super::output::render_table(&rs);
    let lines: Vec<&str> = table.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines[0].contains("phases.profiling.concurrency"), "{table}");
    assert!(
        lines[0].contains("trials") && lines[0].trim_end().ends_with("client"),
        "{table}"
    );
    assert!(lines[2].contains("384.20"), "{table}");
    assert!(lines[4].trim_end().ends_with("fell behind"), "{table}");
    assert!(!lines[3].contains("fell behind"), "{table}");
    // Nobody fell behind: no client column.
    let table = super::output::render_table(&rs[..2]);
    assert!(!table.contains("client"), "{table}");
}

/// A variant that turns a switch off puts it back to its default, not given, and changes
/// nothing else; a variant key that is no flag, or a value its flag refuses, refuses the
/// variation by its label.
#[test]
fn a_variant_switch_turned_off_is_its_default_and_bad_keys_are_refused() {
    let p = plan("--streaming --variant off:streaming=false --variant on:concurrency=2")
        .unwrap()
        .unwrap();
    let v = p.plan_of(&p.variations[0], 0).unwrap();
    assert!(!v.settings.streaming && !v.given("streaming"));
    assert_eq!(v.settings.model_names, ["m"]);
    assert!(v.given("model_names"));
    let v = p.plan_of(&p.variations[1], 0).unwrap();
    assert!(v.settings.streaming && v.given("streaming"));
    let p = plan("--variant a:no_such_flag=1 --variant b:concurrency=2")
        .unwrap()
        .unwrap();
    let e = p.plan_of(&p.variations[0], 0).unwrap_err();
    assert!(
        matches!(&e, SweepError::Variation { label, .. } if label == "a"),
        "{e}"
    );
    let p = plan("--variant a:endpoint_type=nope --variant b:concurrency=2")
        .unwrap()
        .unwrap();
    assert!(p.plan_of(&p.variations[0], 0).is_err());
}

fn ks(threshold: f64) -> Convergence {
    Convergence {
        mode: ConvergenceMode::Distribution,
        ..ci(threshold)
    }
}

fn run_of(values: std::ops::Range<i32>) -> Vec<f64> {
    values.map(f64::from).collect()
}

#[test]
fn distribution_pools_the_earlier_runs_against_the_last() {
    // Three like runs: D = 0, p = 1 > 0.05.
    let d = decide_distribution(&ks(0.05), vec![run_of(0..10), run_of(0..10), run_of(0..10)]);
    assert!(d.converged && d.figure == Some(1.0), "{d:?}");
    // The last run all above the 20 pooled values: D = 1, and only the two extreme lattice
    // paths of C(30, 10) reach it: p = 2 / 30045015.
    let d = decide_distribution(
        &ks(0.05),
        vec![run_of(0..10), run_of(0..10), run_of(100..110)],
    );
    assert!(!d.converged, "{d:?}");
    assert!(
        (d.figure.unwrap() - 2.0 / 30_045_015.0).abs() < 1e-20,
        "{d:?}"
    );
    // Pooled, not run 1 alone: runs 1 and 2 differ, and their union is run 3's values. Run 1
    // alone against run 3 would give D = 1/2.
    let d = decide_distribution(&ks(0.05), vec![run_of(0..5), run_of(5..10), run_of(0..10)]);
    assert_eq!(d.figure, Some(1.0), "{d:?}");
}

#[test]
fn distribution_is_judged_from_the_third_run_and_strictly_above() {
    // Two identical runs: not judged yet.
    let d = decide_distribution(&ks(0.05), vec![run_of(0..10), run_of(0..10)]);
    assert!(!d.converged && d.figure.is_none(), "{d:?}");
    // p = 1 is not above a threshold of 1: the comparison is strict.
    let d = decide_distribution(&ks(1.0), vec![run_of(0..10), run_of(0..10), run_of(0..10)]);
    assert!(!d.converged && d.figure == Some(1.0), "{d:?}");
    // Fewer than two values on a side: not converged.
    let d = decide_distribution(&ks(0.05), vec![run_of(0..1), run_of(0..1), run_of(0..1)]);
    assert!(!d.converged && d.figure.is_none(), "{d:?}");
    let d = decide_distribution(&ks(0.05), vec![vec![], vec![], run_of(0..10)]);
    assert!(!d.converged && d.figure.is_none(), "{d:?}");
}
