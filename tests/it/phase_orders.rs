//! Phases in any order (AIPerf 0.13's `benchmark.phases` list): two warmups before profiling, a
//! warmup between two profiling phases, a warmup after the last profiling phase. Each file is
//! the one AIPerf 0.13 ran against the mock (`tests/data/aiperf-phases-more/`, README there);
//! ringperf runs it against the mock and its artifacts are checked against AIPerf's: the layout
//! file for file, the phase manifest phase for phase, the records' phase tags, the top-level
//! request counts; and against the records themselves: each phase starts after the one before
//! it is answered, and profiling's duration is the sum of its phases' spans (AIPerf's rule).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, OutputLen};
use serde_json::Value;

use crate::common::{read_json, read_jsonl};
use crate::template_runs::files_under;

const AIPERF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aiperf-phases-more");

/// Runs AIPerf's file of `case` with ringperf against the mock, as AIPerf ran it (`URL`, `OUT`);
/// returns the artifact directory with its temporary parent.
fn run_case(case: &str) -> (tempfile::TempDir, PathBuf) {
    let name = Path::new(case).file_name().unwrap().to_str().unwrap();
    let file = Path::new(AIPERF).join(case).join(format!("{name}.yaml"));
    run_file(case, &file, &[])
}

/// Runs the config file `file` with the flags `extra` beside it, as [`run_case`].
fn run_file(case: &str, file: &Path, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(16),
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("artifacts");
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f"])
        .arg(file)
        .args(["--ui", "none"])
        .args(extra)
        .env("URL", format!("http://{}", server.addr))
        .env("OUT", &out_dir)
        .env(
            "TRACE",
            Path::new(AIPERF).join("fixed_schedule/trace.jsonl"),
        )
        .env("TRACES", Path::new(AIPERF).join("agentic/traces"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The console's footer, for the tests that read it.
    std::fs::write(dir.path().join("stdout.txt"), &out.stdout).unwrap();
    (dir, out_dir)
}

/// `ringperf profile -f FILE` (`how` "profile", with the flags `extra`) or `ringperf config
/// validate FILE` ("validate") on a file of AIPerf's that it is meant to refuse (`URL` a closed
/// port, `TRACE` the fixture's trace): its exit code and stderr.
fn refusal(how: &str, file: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringperf"));
    match how {
        "validate" => cmd.args(["config", "validate"]).arg(file),
        _ => cmd.args(["profile", "-f"]).arg(file).args(["--ui", "none"]),
    };
    let out = cmd
        .args(extra)
        .env("URL", "http://127.0.0.1:9")
        .env(
            "TRACE",
            Path::new(AIPERF).join("fixed_schedule/trace.jsonl"),
        )
        .env("TRACES", Path::new(AIPERF).join("agentic/traces"))
        .env("OUT", std::env::temp_dir().join("ringperf-refused-run"))
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// AIPerf's layout of `case` (`files.txt`: size and path a line), `logs/` left out.
fn aiperfs_files(case: &str) -> BTreeSet<String> {
    std::fs::read_to_string(Path::new(AIPERF).join(case).join("files.txt"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(_, f)| f.to_owned()))
        .filter(|f| !f.starts_with("logs/"))
        .collect()
}

/// Each manifest phase: index, profiling index, name, kind, requests, the files it names.
fn manifest(path: &Path) -> Vec<Value> {
    let m = read_json(path);
    assert_eq!(m["schema_version"], 1);
    (m["phases"].as_array().unwrap().iter())
        .map(|p| {
            serde_json::json!([
                p["phase_index"],
                p["profiling_index"],
                p["phase_name"],
                p["phase_kind"],
                p["total_request_count"],
                p["metrics_json"],
                p["metrics_csv"],
                p["server_metrics_json"],
            ])
        })
        .collect()
}

/// How many records carry each phase tag: (phase index, kind, name, profiling index).
fn tags(path: &Path) -> BTreeMap<String, usize> {
    let mut n = BTreeMap::new();
    for r in read_jsonl(path) {
        let m = &r["metadata"];
        let tag = format!(
            "{} {} {} {}",
            m["phase_index"], m["benchmark_phase"], m["phase_name"], m["profiling_index"]
        );
        *n.entry(tag).or_default() += 1;
    }
    n
}

/// The configuration ringperf's summary `doc` echoed, key for key as AIPerf's `aiperf` echoed
/// it, but for the mock's address, the artifact directory and the dataset's path.
fn same_input_config(case: &str, doc: &Value, aiperf: &Value) {
    let (mut a, mut r) = (Vec::new(), Vec::new());
    crate::common::leaves("", &aiperf["input_config"], &mut a);
    crate::common::leaves("", &doc["input_config"], &mut r);
    let own = |p: &str| p.contains("urls[") || p == ".artifacts.dir" || p.ends_with("].path");
    a.retain(|(p, _)| !own(p));
    r.retain(|(p, _)| !own(p));
    assert_eq!(r, a, "{case}: input_config");
}

/// Checks ringperf's run of `case` against AIPerf's; returns ringperf's records and manifest.
fn checks_against_aiperf(case: &str) -> (Vec<Value>, Value) {
    checks_against_aiperf_in(case, None)
}

/// [`checks_against_aiperf`]; `seamless`, with the phases' concurrency when they have one: each
/// phase after the first starts before the last answer of the one before it, and never more
/// than that concurrency requests are in flight at once; `None`: each starts after that answer.
fn checks_against_aiperf_in(case: &str, seamless: Option<Option<i64>>) -> (Vec<Value>, Value) {
    let (_tmp, out) = run_case(case);
    let theirs = Path::new(AIPERF).join(case).join("artifacts");
    // The layout: AIPerf's files, ringperf's plan beside them.
    let mut ours = files_under(&out);
    assert!(ours.remove("plan.json"), "{case}: no plan.json");
    assert_eq!(ours, aiperfs_files(case), "{case}");
    assert_eq!(
        manifest(&out.join("phase_manifest.json")),
        manifest(&theirs.join("phase_manifest.json")),
        "{case}"
    );
    assert_eq!(
        tags(&out.join("profile_export.jsonl")),
        tags(&theirs.join("profile_export.jsonl")),
        "{case}"
    );
    // The run's results: every profiling phase's requests; `warmup_metrics`, every warmup's.
    let (doc, aiperf) = (
        read_json(&out.join("profile_export_aiperf.json")),
        read_json(&theirs.join("profile_export_aiperf.json")),
    );
    let count = |d: &Value| d["request_count"]["avg"].clone();
    assert_eq!(count(&doc), count(&aiperf), "{case}");
    assert_eq!(
        count(&doc["warmup_metrics"]),
        count(&aiperf["warmup_metrics"]),
        "{case}: warmup_metrics"
    );
    same_input_config(case, &doc, &aiperf);
    // Each phase's own summary counts its own requests.
    let m = read_json(&out.join("phase_manifest.json"));
    let phases = m["phases"].as_array().unwrap();
    for p in phases {
        let own = read_json(&out.join(p["metrics_json"].as_str().unwrap()));
        assert_eq!(
            own["request_count"]["avg"].as_f64(),
            p["total_request_count"].as_f64(),
            "{case}: {}",
            p["phase_name"]
        );
    }
    // In order: a phase's first request is sent after the last answer of the phase before it.
    let records = read_jsonl(&out.join("profile_export.jsonl"));
    let span = |i: u64| {
        let of: Vec<&Value> = (records.iter())
            .filter(|r| r["metadata"]["phase_index"] == i)
            .collect();
        let start = of
            .iter()
            .map(|r| r["metadata"]["request_start_ns"].as_u64().unwrap());
        let end = of
            .iter()
            .map(|r| r["metadata"]["request_end_ns"].as_u64().unwrap());
        (start.min().unwrap(), end.max().unwrap())
    };
    for i in 1..phases.len() as u64 {
        if seamless.is_some() {
            // The phase started (the manifest's start) before the last answer of the one before
            // it (that phase's end in the manifest, as AIPerf writes it).
            let (start, end_before) = (
                phases[i as usize]["start_ns"].as_u64().unwrap(),
                phases[i as usize - 1]["end_ns"].as_u64().unwrap(),
            );
            assert!(
                start < end_before,
                "{case}: phase {i} waited for the one before"
            );
            assert_eq!(
                end_before,
                span(i - 1).1,
                "{case}: phase {} ends with its last answer",
                i - 1
            );
        } else {
            assert!(
                span(i - 1).1 <= span(i).0,
                "{case}: phase {i} overlaps the one before"
            );
        }
    }
    if let Some(Some(cap)) = seamless {
        let mut edges: Vec<(u64, i64)> = (records.iter())
            .flat_map(|r| {
                let m = &r["metadata"];
                [
                    (m["request_start_ns"].as_u64().unwrap(), 1),
                    (m["request_end_ns"].as_u64().unwrap(), -1),
                ]
            })
            .collect();
        edges.sort_unstable();
        let most = (edges.iter())
            .scan(0i64, |n, (_, d)| {
                *n += d;
                Some(*n)
            })
            .max();
        assert!(most <= Some(cap), "{case}: {most:?} in flight at once");
    }
    // Several profiling phases: the duration is each one's start (the manifest's) to its last answer,
    // summed; its window, the first profiling phase's start to the last one's end.
    let profiling: Vec<&Value> = (phases.iter())
        .filter(|p| p["phase_kind"] == "profiling")
        .collect();
    let active_ns: u64 = (profiling.iter())
        .map(|p| {
            let i = p["phase_index"].as_u64().unwrap();
            span(i).1 - p["start_ns"].as_u64().unwrap()
        })
        .sum();
    let duration_s = doc["benchmark_duration"]["avg"].as_f64().unwrap();
    assert!(
        profiling.len() < 2 || (duration_s - active_ns as f64 / 1e9).abs() < 1e-6,
        "{case}: {duration_s} s against {active_ns} ns"
    );
    let clock = &doc["ringperf"]["clock"];
    assert_eq!(clock["start_ns"], profiling[0]["start_ns"], "{case}");
    assert_eq!(
        clock["end_ns"],
        profiling[profiling.len() - 1]["end_ns"],
        "{case}"
    );
    (records, m)
}

/// The trace's first turns, ms after its first: 1,000 to 1,300 ms (`fixed_schedule/trace.jsonl`).
const TRACE_OFFSETS_MS: [u64; 6] = [0, 40, 80, 120, 200, 300];

/// Phase `index` of a run sent its requests at the trace's offsets from the phase's start (the
/// scheduler's intended times, to the ms).
fn follows_the_trace(records: &[Value], manifest: &Value, index: u64) {
    let start = manifest["phases"][index as usize]["start_ns"]
        .as_u64()
        .unwrap();
    let mut at: Vec<u64> = (records.iter())
        .filter(|r| r["metadata"]["phase_index"] == index)
        .map(|r| (r["metadata"]["credit_issued_ns"].as_u64().unwrap() - start) / 1_000_000)
        .collect();
    at.sort_unstable();
    assert_eq!(at, TRACE_OFFSETS_MS, "phase {index}");
}

#[test]
fn a_fixed_schedule_phase_after_the_first_replays_the_whole_trace_from_its_own_start() {
    // As AIPerf's run: the concurrency phase takes the first 4 conversations, the schedule
    // replays all 6 from the trace's first.
    let (records, manifest) = checks_against_aiperf("fixed_schedule/fs_later");
    follows_the_trace(&records, &manifest, 1);
}

#[test]
fn two_fixed_schedule_phases_replay_the_trace_twice() {
    let (records, manifest) = checks_against_aiperf("fixed_schedule/fs_twice");
    follows_the_trace(&records, &manifest, 0);
    follows_the_trace(&records, &manifest, 1);
}

#[test]
fn a_fixed_schedule_warmup_runs_its_requests_as_aiperf_runs_them() {
    // AIPerf's warmup runs on its plain scheduler: its 6 requests at its concurrency 2, the
    // timestamps unread (all sent in well under the trace's 300 ms).
    let (records, _) = checks_against_aiperf("fixed_schedule/fs_warmup_bounded");
    let warmup: Vec<&Value> = (records.iter())
        .filter(|r| r["metadata"]["phase_index"] == 0)
        .collect();
    assert_eq!(warmup.len(), 6);
    // Never more than 2 in flight: each request starts after all but one of those before it
    // ended.
    let mut spans: Vec<(u64, u64)> = (warmup.iter())
        .map(|r| {
            let m = &r["metadata"];
            (
                m["request_start_ns"].as_u64().unwrap(),
                m["request_end_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    spans.sort_unstable();
    for (i, (start, _)) in spans.iter().enumerate() {
        let open = spans[..i].iter().filter(|(_, end)| end > start).count();
        assert!(open < 2, "{spans:?}");
    }
}

#[test]
fn a_fixed_schedule_warmup_without_requests_is_refused() {
    // AIPerf 0.13 never ends it (`fixed_schedule/fs_warmup`: 6.3 million requests in 600 s).
    let file = Path::new(AIPERF).join("fixed_schedule/fs_warmup/fs_warmup.yaml");
    let (code, stderr) = refusal("profile", &file, &[]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("benchmark.phases.warmup: a fixed_schedule warmup needs requests"),
        "{stderr}"
    );
}

/// `timing_mode: fixed_schedule` on a concurrency phase (`fixed_schedule/fs_timing_mode`): the
/// explicit mode wins, as in AIPerf 0.13: the trace's timestamps are replayed (0, 40, 80, 120,
/// 200 and 300 ms after the first) and the phase is echoed with its type as written; over a
/// dataset without timestamps it is refused before the run (AIPerf's run of
/// `fs_timing_mode_synthetic` failed at its start, exit 1: "missing timestamp_ms").
#[test]
fn a_concurrency_phases_fixed_schedule_mode_replays_the_trace_as_aiperf_did() {
    // The same on a poisson phase, whose rate is echoed and unused (`fs_timing_mode_poisson`).
    for name in ["fs_timing_mode", "fs_timing_mode_poisson"] {
        replays_as_aiperf_did(name);
    }
    let synthetic = "fixed_schedule/fs_timing_mode_synthetic";
    let said =
        std::fs::read_to_string(Path::new(AIPERF).join(synthetic).join("stdout.txt")).unwrap();
    assert!(said.contains("missing timestamp_ms"));
    let file = Path::new(AIPERF)
        .join(synthetic)
        .join("fs_timing_mode_synthetic.yaml");
    let (code, stderr) = refusal("profile", &file, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("this dataset has none"), "{stderr}");
}

fn replays_as_aiperf_did(name: &str) {
    let case = format!("fixed_schedule/{name}");
    let file = Path::new(AIPERF).join(&case).join(format!("{name}.yaml"));
    let (_tmp, out) = run_file(&case, &file, &["--no-server-metrics"]);
    let theirs = Path::new(AIPERF).join(&case).join("artifacts");
    let offsets = |records: Vec<Value>, stamp: &str| -> Vec<f64> {
        let mut t: Vec<u64> = (records.iter())
            .map(|r| {
                let m = r.get("metadata").unwrap_or(r);
                m[stamp].as_u64().unwrap()
            })
            .collect();
        t.sort_unstable();
        t.iter().map(|x| (x - t[0]) as f64 / 1e6).collect()
    };
    let trace = [0.0, 40.0, 80.0, 120.0, 200.0, 300.0];
    let ours = offsets(
        read_jsonl(&out.join("profile_export.jsonl")),
        "credit_issued_ns",
    );
    let aiperf = offsets(
        read_jsonl(&theirs.join("profile_export.metadata.jsonl")),
        "request_start_ns",
    );
    for (got, what) in [(&ours, 2.0), (&aiperf, 5.0)] {
        assert_eq!(got.len(), trace.len());
        for (g, t) in got.iter().zip(trace) {
            assert!((g - t).abs() < what, "{got:?}");
        }
    }
    let doc = read_json(&out.join("profile_export_aiperf.json"));
    let want = read_json(&theirs.join("input_config.json"));
    assert_eq!(
        doc["input_config"]["phases"], want["input_config"]["phases"],
        "{name}"
    );
    assert_ne!(doc["input_config"]["phases"][0]["type"], "fixed_schedule");
}

/// A warmup's `rate_series` (`rate_series/rs_warmup`): a phase of its own, run and echoed as
/// AIPerf ran it, its requests paced by the series (10/s at the start, rising toward 40/s), as in
/// AIPerf's run.
#[test]
fn a_warmups_rate_series_paces_it_as_aiperfs_did() {
    let case = "rate_series/rs_warmup";
    let (records, _) = checks_against_aiperf(case);
    let gaps = |records: &[Value], stamp: &str| {
        let mut t: Vec<u64> = (records.iter())
            .filter(|r| r["metadata"]["benchmark_phase"] == "warmup")
            .map(|r| r["metadata"][stamp].as_u64().unwrap())
            .collect();
        t.sort_unstable();
        t.windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e6)
            .collect::<Vec<f64>>()
    };
    let theirs = gaps(
        &read_jsonl(
            &Path::new(AIPERF)
                .join(case)
                .join("artifacts/profile_export.jsonl"),
        ),
        "request_start_ns",
    );
    // ringperf's intended times: 100 ms at 10/s, then shorter with each 100 ms update.
    let ours = gaps(&records, "credit_issued_ns");
    assert_eq!((ours.len(), theirs.len()), (11, 11));
    assert!((ours[0] - 100.0).abs() < 2.0, "{ours:?}");
    for g in [&ours, &theirs] {
        assert!(g.windows(2).all(|w| w[1] <= w[0] + 2.0), "{g:?}");
        assert!(g[10] < 35.0 && g[10] > 24.0, "{g:?}");
    }
}

/// `artifacts.summary: false`: AIPerf's layout (no summary JSON at the top or in a phase, the
/// CSVs written), its manifest (no `metrics_json`), its records' phases, its request count (the
/// CSV's), and a footer without the JSON line.
#[test]
fn a_summary_turned_off_leaves_out_the_json_as_aiperf_does() {
    let case = "summary_off";
    let (tmp, out) = run_case(case);
    let theirs = Path::new(AIPERF).join(case).join("artifacts");
    let mut ours = files_under(&out);
    assert!(ours.remove("plan.json"), "no plan.json");
    assert_eq!(ours, aiperfs_files(case));
    assert!(
        !ours
            .iter()
            .any(|f| f.ends_with("profile_export_aiperf.json"))
    );
    assert_eq!(
        manifest(&out.join("phase_manifest.json")),
        manifest(&theirs.join("phase_manifest.json"))
    );
    assert_eq!(
        tags(&out.join("profile_export.jsonl")),
        tags(&theirs.join("profile_export.jsonl"))
    );
    let count = |dir: &Path| {
        let csv = std::fs::read_to_string(dir.join("profile_export_aiperf.csv")).unwrap();
        (csv.lines())
            .find_map(|l| l.strip_prefix("Request Count,").map(str::to_owned))
            .expect("a request count row")
    };
    assert_eq!(count(&out), count(&theirs));
    // Each phase's CSV is in its folder, and the manifest names it.
    let m = read_json(&out.join("phase_manifest.json"));
    for p in m["phases"].as_array().unwrap() {
        assert!(out.join(p["metrics_csv"].as_str().unwrap()).is_file());
        assert!(p.get("metrics_json").is_none());
    }
    // The footer: a CSV line, no JSON line (the server metrics' JSON line stays).
    let footer = |path: PathBuf| {
        let said = std::fs::read_to_string(path).unwrap();
        let has = |label: &str| said.lines().any(|l| l.starts_with(label));
        (has("CSV Export: "), has("JSON Export: "))
    };
    assert_eq!(
        footer(Path::new(AIPERF).join(case).join("stdout.txt")),
        (true, false)
    );
    assert_eq!(footer(tmp.path().join("stdout.txt")), (true, false));
}

/// Several runs beside `artifacts.summary: false` read results that are not written: AIPerf
/// runs them and counts each failed (exit 1); ringperf says so before it starts (exit 2).
#[test]
fn repeated_runs_beside_a_summary_turned_off_are_refused() {
    let case = "summary_off_repeated";
    let said = std::fs::read_to_string(Path::new(AIPERF).join(case).join("stdout.txt")).unwrap();
    assert!(said.contains("All runs failed - cannot compute aggregate statistics"));
    let file = Path::new(AIPERF).join(case).join(format!("{case}.yaml"));
    let (code, stderr) = refusal("profile", &file, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("benchmark.artifacts.summary: false beside repeated runs")
            && stderr.contains("No metrics found in artifacts"),
        "{stderr}"
    );
    // A sweep of the other file, and its shards, for the same reason.
    let file = Path::new(AIPERF).join("summary_off/summary_off.yaml");
    let shard = ["--shard-count", "2", "--shard-index", "0"];
    let shard = [&shard[..], &["--start-at", "2030-01-01T00:00:00Z"]].concat();
    for extra in [&["--concurrency", "1,2"][..], &shard] {
        let (code, stderr) = refusal("profile", &file, extra);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("benchmark.artifacts.summary: false beside"),
            "{extra:?}: {stderr}"
        );
    }
}

#[test]
fn two_warmups_run_before_profiling_as_aiperf_ran_them() {
    checks_against_aiperf("two_warmups");
}

#[test]
fn a_warmup_between_two_profiling_phases_runs_as_aiperf_ran_it() {
    checks_against_aiperf("cooldown");
}

#[test]
fn a_warmup_after_the_last_profiling_phase_runs_as_aiperf_ran_it() {
    checks_against_aiperf("warmup_rate_then_profiling_with_warmup_after");
}

#[test]
fn warmup_flags_beside_two_warmups_set_the_first_as_aiperf_sets_it() {
    // AIPerf's run: `--warmup-request-count 3 --warmup-concurrency 1` beside `two_warmups.yaml`
    // made its first warmup 3 requests at concurrency 1 and left the second alone.
    let case = "cli_overlay/warmup_flags";
    let (_tmp, out) = run_file(
        case,
        &Path::new(AIPERF).join(case).join("two_warmups.yaml"),
        &["--warmup-request-count", "3", "--warmup-concurrency", "1"],
    );
    let theirs = Path::new(AIPERF).join(case).join("artifacts");
    assert_eq!(
        manifest(&out.join("phase_manifest.json")),
        manifest(&theirs.join("phase_manifest.json"))
    );
    let phases = |d: &Path| {
        read_json(&d.join("profile_export_aiperf.json"))["input_config"]["phases"].clone()
    };
    assert_eq!(phases(&out), phases(&theirs));
}

#[test]
fn a_profiling_flag_beside_two_profiling_phases_is_refused_as_aiperf_refuses_it() {
    let file = Path::new(AIPERF).join("cli_overlay/request_count_two_profiling/cooldown.yaml");
    let (code, stderr) = refusal("profile", &file, &["--request-count", "5"]);
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains(
            "CLI loadgen flags target the profiling phase, but this config has 2 profiling \
             phases: p1, p2. Set the value in YAML or use an explicit phase path."
        ),
        "{stderr}"
    );
}

/// A run of [`failing_phases`]: its exit code, stderr, each phase's (name, requests) from the
/// manifest, and the phases it echoes.
type Failing = (Option<i32>, String, Vec<(String, u64)>, Value);

/// Runs two profiling phases `p1` (12 requests) and `p2` (20), each `concurrency: 2` unless
/// its keys say otherwise (`p1_extra`, `p2_extra` are added to them), against a mock that
/// answers every request with HTTP 500;
/// returns the exit code, stderr and each phase's (name, requests) from the manifest (none
/// when one phase ran).
fn failing_phases(p1_extra: &str, p2_extra: &str) -> Failing {
    use ringperf_mock::mock::{Fault, FaultSpec};
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(2),
        faults: vec![FaultSpec {
            kind: Fault::Status(500),
            fraction: 1.0,
        }],
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("phases.yaml");
    std::fs::write(
        &file,
        format!(
            "benchmark:\n  model: mock-model\n  endpoint: {{url: 'http://{}', type: chat, streaming: true}}\n  dataset: {{type: synthetic, entries: 8, prompts: {{isl: 8, osl: 2}}}}\n  tokenizer: {{name: builtin}}\n  phases:\n    - {{name: p1, kind: profiling, requests: 12{p1_extra}}}\n    - {{name: p2, kind: profiling, requests: 20{p2_extra}}}\n",
            server.addr
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-f"])
        .arg(&file)
        .args(["--ui", "none", "--no-server-metrics", "--artifact-dir"])
        .arg(&out_dir)
        .output()
        .expect("runs");
    let manifest = out_dir.join("phase_manifest.json");
    let phases = if manifest.is_file() {
        (read_json(&manifest)["phases"].as_array().unwrap().iter())
            .map(|p| {
                (
                    p["phase_name"].as_str().unwrap().to_owned(),
                    p["total_request_count"].as_u64().unwrap(),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let doc = read_json(&out_dir.join("profile_export_aiperf.json"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        phases,
        doc["input_config"]["phases"].clone(),
    )
}

#[test]
fn a_later_profiling_phase_stops_the_run_on_its_own_error_budget() {
    // As AIPerf's `failed_request_threshold/threshold_hit`: the first phase, with no budget of
    // its own, runs whole though every request fails; the second stops once 10 of its own
    // records (max(concurrency, 10)) are over its 0.05.
    // Paced at 10/s, so that the stop (the aggregator's, on the 10th record) comes before the
    // phase's last request is sent.
    let (code, stderr, phases, echoed) = failing_phases(
        ", type: concurrency, concurrency: 2",
        ", type: constant, rate: 10, failed_request_threshold: 0.05",
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "10 of 10 requests of phase p2 failed (100.0 %), over its failed_request_threshold 0.05"
        ),
        "{stderr}"
    );
    assert_eq!(phases[0], ("p1".to_owned(), 12));
    assert_eq!(phases[1].0, "p2");
    // The 10 counted, and those sent before the stop reached the scheduler; not all 20.
    assert!((10..20).contains(&phases[1].1), "{phases:?}");
    // Echoed where AIPerf echoes it: after the fields every phase has, before the rate's.
    let keys: Vec<&String> = echoed[1].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "name",
            "kind",
            "type",
            "requests",
            "failed_request_threshold",
            "rate"
        ]
    );
    assert_eq!(echoed[1]["failed_request_threshold"], 0.05);
}

#[test]
fn a_first_phase_s_error_budget_is_its_own_and_ends_the_run() {
    // The budget of the first phase counts its records only; crossed, no later phase runs (one
    // phase ran: no manifest, as AIPerf).
    let (code, stderr, phases, echoed) = failing_phases(
        ", type: constant, rate: 10, failed_request_threshold: 0.05",
        ", type: concurrency, concurrency: 2",
    );
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("10 of 10 requests failed (100.0 %), over --failed-request-threshold 0.05"),
        "{stderr}"
    );
    assert!(phases.is_empty(), "{phases:?}");
    assert_eq!(echoed[0]["failed_request_threshold"], 0.05);
    // A budget that is never crossed leaves both phases whole.
    let (code, stderr, phases, _) = failing_phases(
        ", type: concurrency, concurrency: 2",
        ", type: concurrency, concurrency: 2, failed_request_threshold: 1",
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(phases, [("p1".to_owned(), 12), ("p2".to_owned(), 20)]);
}

#[test]
fn a_scenario_run_s_variables_render_the_file_for_that_run_as_aiperf_renders_it() {
    // AIPerf's run of `scenario_variables`: `small` sets conc 1, `derived` conc 3 and nreq
    // "{{ conc * 2 }}" (6) and a tag that reads conc, `extra_phase` no variables (the file's).
    let case = "scenario_variables";
    let (_tmp, out) = run_case(case);
    let theirs = Path::new(AIPERF).join(case).join("artifacts");
    let files: BTreeSet<String> = files_under(&out)
        .into_iter()
        .filter(|f| !f.ends_with("plan.json") && !f.ends_with("sweep_table.txt"))
        .collect();
    let aiperf: BTreeSet<String> = aiperfs_files(case)
        .into_iter()
        .filter(|f| !f.contains("/logs/") && !f.ends_with("run_config.json"))
        .collect();
    assert_eq!(files, aiperf);
    for run in ["small", "derived", "extra_phase"] {
        assert_eq!(
            manifest(&out.join(run).join("phase_manifest.json")),
            manifest(&theirs.join(run).join("phase_manifest.json")),
            "{run}"
        );
        let echoed = |d: &Path| {
            let c =
                read_json(&d.join(run).join("profile_export_aiperf.json"))["input_config"].clone();
            (c["phases"].clone(), c["endpoint"]["headers"].clone())
        };
        assert_eq!(echoed(&out), echoed(&theirs), "{run}");
    }
}

#[test]
fn a_seamless_phase_starts_as_the_one_before_stops_sending_as_aiperf_runs_it() {
    // Two closed loops at concurrency 2: the second takes the first's slots as its last
    // requests return (AIPerf's run: p2 starts 20 ms before p1's last answer, 2 in flight at
    // most); the manifest's end of p1 is its last answer, after p2's start.
    let (_, manifest) = checks_against_aiperf_in("seamless/seamless", Some(Some(2)));
    let p = &manifest["phases"];
    assert!(p[1]["start_ns"].as_u64() < p[0]["end_ns"].as_u64(), "{p}");
    // A warmup then a seamless profiling phase.
    checks_against_aiperf_in("seamless/seamless_after_warmup", Some(Some(2)));
    // On a warmup AIPerf reads the key and ignores it: the phases run one after another.
    checks_against_aiperf("seamless/seamless_on_warmup");
}

#[test]
fn a_seamless_rate_phase_starts_once_the_one_before_has_sent_everything() {
    // Two Poisson phases at 20/s, no concurrency: the second starts with the first's last request in flight
    // (AIPerf's run: 20 ms before its answer).
    checks_against_aiperf_in("seamless/seamless_rate", Some(None));
}

#[test]
fn seamless_on_the_first_phase_is_refused_as_aiperf_refuses_it() {
    let file = Path::new(AIPERF).join("seamless/seamless_first/seamless_first.yaml");
    let (code, stderr) = refusal("validate", &file, &[]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(
            "Phase config 'p1' cannot have seamless=True because it is first. Seamless \
             transitions only apply to subsequent phase configs."
        ),
        "{stderr}"
    );
}

#[test]
fn a_repeated_run_drops_every_warmup_after_the_first_run() {
    // AIPerf's default (`disable_warmup_after_first`): the second run has neither the warmup
    // before profiling nor the one after it; one phase left, so no manifest.
    let case = "warmup_rate_then_profiling_with_warmup_after";
    let file = Path::new(AIPERF).join(case).join(format!("{case}.yaml"));
    let (_tmp, out) = run_file(case, &file, &["--num-profile-runs", "2"]);
    let first = out.join("profile_runs/run_0001");
    let second = out.join("profile_runs/run_0002");
    assert_eq!(
        manifest(&first.join("phase_manifest.json")).len(),
        3,
        "the first run has its three phases"
    );
    assert!(!second.join("phase_manifest.json").exists());
    let names = |d: &Path| -> Vec<String> {
        let doc = read_json(&d.join("profile_export_aiperf.json"));
        (doc["input_config"]["phases"].as_array().unwrap().iter())
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&first), ["warmup", "profiling", "w_end"]);
    assert_eq!(names(&second), ["profiling"]);
    let records = read_jsonl(&second.join("profile_export.jsonl"));
    assert_eq!(records.len(), 6);
    assert!(
        records
            .iter()
            .all(|r| r["metadata"]["benchmark_phase"] == "profiling")
    );
}

#[test]
fn a_variable_only_the_runs_define_is_an_error_where_aiperf_meets_it_first() {
    // The file is rendered with its own variables first, in its order: the run's use of `nreq`
    // (defined by no variables block of the file) is the first undefined name, as AIPerf says.
    let file = Path::new(AIPERF).join("scenario_variables/validate_only/var_only_in_runs.yaml");
    let (code, stderr) = refusal("validate", &file, &[]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains(
            "Jinja2 template error at 'sweep.runs.2.benchmark.phases.1.requests': 'nreq' is \
             undefined"
        ),
        "{stderr}"
    );
}

/// Checks ringperf's run of the agentic case `case` (`agentic/`) against AIPerf's: the layout
/// file for file, the manifest's phases (their places, names and files; their request counts
/// follow the phases' durations), the records' phase tags, the warmup's count (its primed
/// lanes) and `input_config`; returns ringperf's records' metadata and AIPerf's.
fn agentic_against_aiperf(case: &str) -> (Vec<Value>, Vec<Value>) {
    let case = format!("agentic/{case}");
    let name = case.rsplit('/').next().unwrap_or_default();
    let file = Path::new(AIPERF).join(&case).join(format!("{name}.yaml"));
    let (_tmp, out) = run_file(&case, &file, &["--no-server-metrics", "--no-gpu-telemetry"]);
    let theirs = Path::new(AIPERF).join(&case).join("artifacts");
    let mut ours = files_under(&out);
    assert!(ours.remove("plan.json"), "{case}: no plan.json");
    assert_eq!(ours, aiperfs_files(&case), "{case}");
    let phases = |dir: &Path| -> Option<Vec<Value>> {
        let path = dir.join("phase_manifest.json");
        path.exists().then(|| {
            (manifest(&path).into_iter())
                .map(|mut p| {
                    p[4] = Value::Null;
                    p
                })
                .collect()
        })
    };
    assert_eq!(phases(&out), phases(&theirs), "{case}");
    let kinds = |path: &Path| -> BTreeSet<String> { tags(path).into_keys().collect() };
    assert_eq!(
        kinds(&out.join("profile_export.jsonl")),
        kinds(&theirs.join("profile_export.jsonl")),
        "{case}"
    );
    let (doc, aiperf) = (
        read_json(&out.join("profile_export_aiperf.json")),
        read_json(&theirs.join("profile_export_aiperf.json")),
    );
    let count = |d: &Value| d["warmup_metrics"]["request_count"]["avg"].clone();
    assert_eq!(count(&doc), count(&aiperf), "{case}: warmup_metrics");
    same_input_config(&case, &doc, &aiperf);
    let metadata = |path: &Path| -> Vec<Value> {
        let mut v: Vec<Value> = (read_jsonl(path).into_iter())
            .map(|r| r["metadata"].clone())
            .collect();
        v.sort_by_key(|m| m["request_start_ns"].as_u64());
        v
    };
    (
        metadata(&out.join("profile_export.jsonl")),
        metadata(&theirs.join("profile_export.jsonl")),
    )
}

/// The records of the phase `name`, by start.
fn of_phase<'a>(records: &'a [Value], name: &str) -> Vec<&'a Value> {
    (records.iter())
        .filter(|m| m["phase_name"] == name)
        .collect()
}

/// An agentic run's declared warmup, with agentic keys on it: echoed, not run; agentic
/// replay's own warmup in its place, numbered nowhere, and one profiling phase: no manifest.
#[test]
fn an_agentic_runs_declared_warmup_is_echoed_and_not_run_as_aiperf_runs_it() {
    let (ours, _) = agentic_against_aiperf("declared_warmup");
    assert!(of_phase(&ours, "warmup").is_empty());
    let warm = of_phase(&ours, "agentic.warmup");
    assert!(!warm.is_empty());
    assert!(warm.iter().all(|m| m.get("phase_index").is_none()));
    // The profiling phase's place in the file's list counts the declared warmup.
    assert!(
        of_phase(&ours, "profiling")
            .iter()
            .all(|m| m["phase_index"] == 1)
    );
}

/// A second agentic profiling phase replays the run's lanes again from where they resume: its
/// first request is the session the first phase resumed first, on the same correlation id, in
/// AIPerf's run as in ringperf's.
#[test]
fn a_later_agentic_phase_resumes_the_run_s_lanes_again_as_aiperf_does() {
    let (ours, theirs) = agentic_against_aiperf("two_agentic");
    for run in [&ours, &theirs] {
        let (p1, p2) = (of_phase(run, "p1"), of_phase(run, "p2"));
        assert_eq!(p1[0]["x_correlation_id"], p2[0]["x_correlation_id"]);
        assert_eq!(
            (&p1[0]["conversation_id"], &p1[0]["turn_index"]),
            (&p2[0]["conversation_id"], &p2[0]["turn_index"])
        );
        assert_ne!(p2[0]["turn_index"], 0, "resumed mid-way");
    }
}

/// An agentic phase, then a plain one: the plain phase's sessions start from their first turn.
#[test]
fn a_plain_phase_after_an_agentic_one_runs_as_its_type_as_aiperf_runs_it() {
    let (ours, _) = agentic_against_aiperf("agentic_then_plain");
    let p2 = of_phase(&ours, "p2");
    assert!(!p2.is_empty());
    assert_eq!(p2[0]["turn_index"], 0);
}

/// A plain run whose warmup has agentic replay's keys: read, echoed, nothing changed.
#[test]
fn agentic_keys_on_a_plain_warmup_are_echoed_and_change_nothing() {
    let (ours, _) = agentic_against_aiperf("keys_on_a_plain_warmup");
    assert_eq!(of_phase(&ours, "warmup").len(), 4);
    assert_eq!(of_phase(&ours, "profiling").len(), 6);
}

/// A plain first phase, then an agentic one: no `agentic.warmup` (the first profiling phase is
/// not agentic), and the later phase resumes its lanes mid-way, unprimed.
#[test]
fn an_agentic_phase_after_a_plain_one_resumes_its_lanes_unprimed_as_aiperf_does() {
    let (ours, theirs) = agentic_against_aiperf("plain_then_agentic");
    for run in [&ours, &theirs] {
        assert!(of_phase(run, "agentic.warmup").is_empty());
        assert_ne!(of_phase(run, "p2")[0]["turn_index"], 0);
    }
}

/// A warmup between an agentic phase and a later one is not run (AIPerf drops every warmup of
/// an agentic run), and the later phase keeps its place in the file's list.
#[test]
fn a_later_warmup_of_an_agentic_run_is_not_run_as_aiperf_runs_it() {
    let (ours, _) = agentic_against_aiperf("later_warmup");
    assert!(of_phase(&ours, "cool").is_empty());
    assert!(of_phase(&ours, "p2").iter().all(|m| m["phase_index"] == 2));
}

/// `timing_mode: agentic_replay` on a warmup before a plain profiling phase: AIPerf validates
/// it and its run never ended (killed; `exit.txt`); ringperf refuses it by name.
#[test]
fn an_agentic_warmup_before_a_plain_profiling_phase_is_refused() {
    let case = Path::new(AIPERF).join("agentic/agentic_warmup_plain_profiling");
    let aiperf = std::fs::read_to_string(case.join("exit.txt")).unwrap();
    assert!(aiperf.contains("validate_exit=0") && aiperf.contains("profile_exit=124"));
    let (code, stderr) = refusal(
        "validate",
        &case.join("agentic_warmup_plain_profiling.yaml"),
        &[],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "benchmark.phases.warmup.timing_mode: agentic_replay on a warmup before a \
             profiling phase that is not agentic replay"
        ),
        "{stderr}"
    );
}
