//! `inferencex-agentx-mvp`'s locks, against AIPerf 0.13's messages (its run of the same flags:
//! tests/it/agentic.rs has the end-to-end one).

use super::*;

fn plan(flags: &str) -> Plan {
    let line = format!("ringperf profile -m m {flags}");
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    Plan::parse(&argv).expect("parses")
}

fn weka() -> Loader {
    Loader::File(Some(DatasetKind::WekaTrace))
}

#[test]
fn no_scenario_changes_nothing_and_an_unknown_one_is_refused() {
    assert_eq!(apply(&plan("--concurrency 2"), &weka(), 7), Ok(None));
    let e = apply(&plan("--scenario nope"), &weka(), 7).unwrap_err();
    assert_eq!(
        e.message(),
        "Unknown scenario 'nope'. Valid scenarios: inferencex-agentx-mvp"
    );
}

/// AIPerf's own run (`--input-file DIR --custom-dataset-type weka_trace --concurrency 2
/// --benchmark-duration 15 --random-seed 7 --scenario inferencex-agentx-mvp --unsafe-override`):
/// the two violations it warned of, the settings it filled.
#[test]
fn a_local_trace_for_15_s_overridden_runs_with_aiperfs_two_violations() {
    let p = plan(
        "--streaming --concurrency 2 --benchmark-duration 15 --random-seed 7 \
         --scenario inferencex-agentx-mvp --unsafe-override",
    );
    let (run, out) = apply(&p, &weka(), 99).unwrap().unwrap();
    let shown: Vec<String> = out.violations.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "--custom-dataset-type / --input-file: got 'weka_trace (local, unpinned)', required \
             'pinned --public-dataset alias or --hf-weka-dataset \
             semianalysisai/cc-traces-weka-062126' (scenario 'inferencex-agentx-mvp' cannot \
             verify corpus identity for a local weka_trace directory; use a with-subagents \
             --public-dataset alias or --hf-weka-dataset semianalysisai/cc-traces-weka-062126 \
             for submission_valid=true, or pass --unsafe-override for offline smoke tests \
             (submission_valid=false))",
            "--benchmark-duration: got 15.0, required '>=900' (scenario \
             'inferencex-agentx-mvp' requires duration >= 900s to reach steady state and \
             trigger KV offloading)",
        ]
    );
    assert!(!out.submission_valid());
    let a = &run.settings;
    assert!(run.file_only.agentic);
    assert!(a.extra_inputs.contains(&"ignore_eos:true".to_string()));
    assert_eq!(
        a.random_prompt.cache_bust,
        Some(CacheBustArg::FirstTurnPrefix)
    );
    assert_eq!(
        (
            a.agentic.trajectory_start_min_ratio,
            a.agentic.trajectory_start_max_ratio,
            a.agentic.system_idle_gap_cap_seconds
        ),
        (Some(0.0), Some(1.0), Some(10.0))
    );
    assert_eq!((a.benchmark_duration, a.random_seed), (Some(15.0), Some(7)));
    assert_eq!(
        out.notes,
        [
            "Scenario 'inferencex-agentx-mvp': setting profiling-phase \
             timing_mode=agentic_replay.",
            "Scenario 'inferencex-agentx-mvp': injecting extra_inputs.ignore_eos=true (was \
             absent).",
            "Scenario 'inferencex-agentx-mvp': auto-set --cache-bust=first_turn_prefix (was at \
             default none).",
            "Scenario 'inferencex-agentx-mvp': auto-set --trajectory-start-min-ratio=0.0 (was at \
             default 0.25).",
            "Scenario 'inferencex-agentx-mvp': auto-set --trajectory-start-max-ratio=1.0 (was at \
             default 0.75).",
            "Scenario 'inferencex-agentx-mvp': auto-set --system-idle-gap-cap-seconds=10.0 (was \
             unset).",
        ],
        "AIPerf's lines, in its order"
    );
}

#[test]
fn without_the_override_every_violation_is_listed_and_the_run_refused() {
    let p = plan(
        "--request-rate 5 --benchmark-duration 60 --system-idle-gap-cap-seconds 5 \
         --cache-bust system_prefix --scenario inferencex-agentx-mvp",
    );
    let e = apply(&p, &Loader::Public("weka_hf".into(), Some("x/y".into())), 7).unwrap_err();
    let m = e.message();
    assert!(
        m.starts_with("Scenario invariants violated (5 conflicts):\n  - "),
        "{m}"
    );
    for part in [
        "--request-rate / --user-centric-rate / --fixed-schedule: got 'poisson', required \
         'agentic_replay'",
        "--hf-weka-dataset: got 'x/y', required 'semianalysisai/cc-traces-weka-062126'",
        "--cache-bust: got 'system_prefix', required 'first_turn_prefix'",
        "--benchmark-duration: got 60.0, required '>=900'",
        "--system-idle-gap-cap-seconds: got 5.0, required 10.0",
    ] {
        assert!(m.contains(part), "{part} not in {m}");
    }
    assert!(m.ends_with(
        "Pass --unsafe-override to convert to warnings (run will be marked \
         submission_valid=false)."
    ));
}

/// No Weka source at all: refused even with the override, and the run's settings are untouched
/// otherwise (a seed drawn for it, the default duration).
#[test]
fn a_synthetic_run_is_refused_even_overridden() {
    let p = plan("--scenario inferencex-agentx-mvp --unsafe-override");
    let e = apply(&p, &Loader::Synthetic, 7).unwrap_err();
    assert!(
        e.message().contains(
            "These violations cannot be bypassed with --unsafe-override. Provide \
             --public-dataset (e.g. semianalysis_cc_traces_weka_062126)"
        ),
        "{}",
        e.message()
    );
    // A pinned corpus, nothing overridden: valid, with the default duration and a seed.
    let p = plan("--scenario inferencex-agentx-mvp");
    let corpus = Loader::Public("semianalysis_cc_traces_weka_062126".into(), None);
    let (run, out) = apply(&p, &corpus, 7).unwrap().unwrap();
    assert!(out.submission_valid());
    assert_eq!(run.settings.benchmark_duration, Some(1800.0));
    assert_eq!(
        run.settings.random_seed,
        Some(3),
        "the drawn seed's 63 bits"
    );
}

/// AIPerf's converter: under a scenario `--warmup-grace-period` (accepted without
/// `--warmup-duration` there) is the agentic warmup's grace, unless the agentic flag is given.
#[test]
fn the_warmup_grace_period_is_the_agentic_warmups_under_the_scenario() {
    let flags = "--streaming --concurrency 2 --benchmark-duration 900 --random-seed 7 \
                 --scenario inferencex-agentx-mvp --unsafe-override --warmup-grace-period 2.5";
    let (run, _) = apply(&plan(flags), &weka(), 7).unwrap().unwrap();
    assert_eq!(run.settings.agentic.agentic_warmup_grace_period, Some(2.5));
    let both = format!("{flags} --agentic-warmup-grace-period 0.5");
    let (run, _) = apply(&plan(&both), &weka(), 7).unwrap().unwrap();
    assert_eq!(run.settings.agentic.agentic_warmup_grace_period, Some(0.5));
    let (run, _) = apply(
        &plan(&flags.replace("--warmup-grace-period 2.5", "")),
        &weka(),
        7,
    )
    .unwrap()
    .unwrap();
    assert_eq!(run.settings.agentic.agentic_warmup_grace_period, None);
}
