//! Agentic replay (`timing_mode: agentic_replay`) end to end: AIPerf's own Weka fixtures replayed
//! against the mock, beside what AIPerf 0.13 did with the same files, seed and settings
//! (tests/data/weka/agentic/expected.json): the instant each lane resumes at, the sessions alive
//! then, what the warmup primes, when each lane's first profiling request goes, and the order in
//! which finished lanes draw their next traces.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/weka")
}

/// AIPerf's intended times are its credits' (a few ms behind its timers); ringperf's are the
/// timers'. Both within this of each other.
const TOLERANCE_MS: f64 = 15.0;

/// A run of the three fixtures (AIPerf's directory order: multi_model, one_subagent,
/// terminal_subagent) at concurrency 2 for `duration` s, with the phase keys `phase`.
struct Run {
    stderr: String,
    records: Vec<Value>,
    truth: Vec<ringperf_mock::mock::TruthEntry>,
    /// Each phase's start, ns (the records' clock).
    starts: HashMap<String, u64>,
    export: Value,
}

/// A directory holding the Weka traces `files` of tests/data/weka/traces.
fn traces_of(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        std::fs::copy(data().join("traces").join(f), dir.path().join(f)).unwrap();
    }
    dir
}

/// AIPerf's three fixtures, in its directory order.
const FIXTURES: [&str; 3] = [
    "multi_model.json",
    "one_subagent.json",
    "terminal_subagent.json",
];

/// `ringperf profile --config FILE`, the file replaying the traces in `traces` against `addr`
/// with agentic replay at seed `seed`, `dataset` and `phase` keys added to its dataset and its
/// profiling phase, its artifacts in `out`; the binary's output.
fn agentic_run(
    addr: std::net::SocketAddr,
    traces: &Path,
    seed: u64,
    (dataset, phase): (&[&str], &[&str]),
    out: &Path,
) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agentic.yaml");
    let lines = |keys: &[&str], indent: &str| -> String {
        keys.iter().map(|k| format!("{indent}{k}\n")).collect()
    };
    std::fs::write(
        &config,
        format!(
            "schemaVersion: \"2.0\"\nrandomSeed: {seed}\nbenchmark:\n  model: mock-model\n  \
             endpoint:\n    url: http://{addr}\n    type: chat\n    streaming: true\n  dataset:\n    \
             type: file\n    path: {}\n    format: weka_trace\n{}  tokenizer:\n    name: builtin\n  \
             phases:\n    - name: profiling\n      type: concurrency\n      \
             timingMode: agentic_replay\n{}  artifacts:\n    dir: {}\n",
            traces.display(),
            lines(dataset, "    "),
            lines(phase, "      "),
            out.display()
        ),
    )
    .unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "--ui",
            "simple",
            "--no-server-metrics",
            "--config",
        ])
        .arg(&config)
        .output()
        .expect("the binary runs")
}

fn run(seed: u64, duration: f64, phase: &[&str]) -> Run {
    let traces = traces_of(&FIXTURES);
    let server = common::recording_mock(8);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let concurrency = "concurrency: 2".to_string();
    let duration = format!("duration: {duration}");
    let mut keys = vec![concurrency.as_str(), duration.as_str()];
    keys.extend(phase);
    let out = agentic_run(server.addr, traces.path(), seed, (&[], &keys), &out_dir);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let records: Vec<Value> = common::read_jsonl(&out_dir.join("profile_export.jsonl"))
        .into_iter()
        .map(|r| r["metadata"].clone())
        .collect();
    // AIPerf writes no phase manifest for one profiling phase (its own warmup has no place in
    // the file's list): the phases' starts are ringperf's `ringperf.phases`.
    assert!(!out_dir.join("phase_manifest.json").exists());
    let export = common::read_json(&out_dir.join("profile_export_aiperf.json"));
    let starts = export["ringperf"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["start_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    let truth = common::truth_of(&server, records.len());
    Run {
        stderr,
        records,
        truth,
        starts,
        export,
    }
}

fn expected(case: &str) -> Value {
    common::read_json(&data().join("agentic/expected.json"))[case].clone()
}

/// The records of `phase`, by intended time.
fn phase_records<'a>(r: &'a Run, phase: &str) -> Vec<&'a Value> {
    let mut v: Vec<&Value> = (r.records.iter())
        .filter(|m| m["phase_name"] == phase)
        .collect();
    v.sort_by_key(|m| m["credit_issued_ns"].as_u64());
    v
}

fn at_ms(r: &Run, phase: &str, m: &Value) -> f64 {
    (m["credit_issued_ns"].as_u64().unwrap() - r.starts[phase]) as f64 / 1e6
}

/// Everything the run and AIPerf's agree on, for case `case`.
fn check(case: &str, r: &Run) {
    let want = expected(case);
    // The instants: AIPerf's draws, printed to the microsecond.
    for (i, lane) in want["lanes"].as_array().unwrap().iter().enumerate() {
        let line = format!(
            "lane={i:02}  t*={:.3} ms  root_next={}/2  live={}",
            lane["t_star_ms"].as_f64().unwrap(),
            lane["streams"][0]["next"],
            lane["streams"].as_array().unwrap().len()
        );
        assert!(r.stderr.contains(&line), "{line} not in\n{}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("trace_id={}", lane["root"].as_str().unwrap())),
            "{}",
            r.stderr
        );
    }
    // Warmup: each session alive at t* with a turn before it sends that turn, asking for one
    // token, with the turns before it as history, at AIPerf's place in the spread.
    let warm = phase_records(r, "agentic.warmup");
    let want_warm = want["warmup"].as_array().unwrap();
    assert_eq!(warm.len(), want_warm.len());
    let mut warm_ids = HashMap::new();
    for w in want_warm {
        let m = warm
            .iter()
            .find(|m| m["conversation_id"] == w["conversation"] && m["turn_index"] == w["turn"])
            .unwrap_or_else(|| panic!("no warmup request for {w}"));
        let got = at_ms(r, "agentic.warmup", m);
        assert!(
            (got - w["at_ms"].as_f64().unwrap()).abs() < TOLERANCE_MS,
            "{w}: at {got} ms"
        );
        let id = m["x_correlation_id"].as_str().unwrap().to_owned();
        let t = (r.truth.iter())
            .find(|t| t.correlation_id.as_deref() == Some(id.as_str()))
            .expect("the mock saw it");
        let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
        assert_eq!(body["max_completion_tokens"], 1, "{w}");
        assert_eq!(
            body["messages"].as_array().unwrap().len() as u64,
            w["messages"]
        );
        warm_ids.insert(w["lane"].as_u64().unwrap(), id);
    }
    // Profiling: each lane's first request, when AIPerf sent it, on the warmed session's id when
    // AIPerf kept it.
    let prof = phase_records(r, "profiling");
    for (lane, f) in want["first_profiling"].as_object().unwrap() {
        // A resumed session keeps its warmup id (another lane may send the same turn of the
        // same trace sooner, from its start); a subagent not warmed has a new one.
        let warmed = warm_ids.get(&lane.parse::<u64>().unwrap());
        let m = prof
            .iter()
            .find(|m| {
                m["conversation_id"] == f["conversation"]
                    && m["turn_index"] == f["turn"]
                    && (f["same_id_as_warmup"] != true
                        || m["x_correlation_id"].as_str() == warmed.map(String::as_str))
            })
            .unwrap_or_else(|| panic!("lane {lane}: no {f}"));
        let got = at_ms(r, "profiling", m);
        assert!(
            (got - f["at_ms"].as_f64().unwrap()).abs() < TOLERANCE_MS,
            "lane {lane} {f}: at {got} ms"
        );
    }
    // Finished lanes draw their next roots from the one sampler, in order after the lanes'
    // own: the directory's third trace, then the first, the second...
    let roots = ["trace_multi", "trace_sa", "trace_term"];
    // (Two lanes drawing within a moment of each other may send their first turns in either
    // order.)
    let starts: Vec<&str> = prof
        .iter()
        .filter(|m| m["turn_index"] == 0 && m["agent_depth"] == 0)
        .map(|m| m["conversation_id"].as_str().unwrap())
        .collect();
    assert!(starts.len() >= 6, "{} recycles", starts.len());
    let mut first_two = starts[..2].to_vec();
    first_two.sort_unstable();
    assert_eq!(first_two, [roots[0], roots[2]], "draws 2 and 3");
    let counts = roots.map(|root| starts.iter().filter(|s| **s == root).count());
    let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(hi - lo <= 2, "round-robin over the traces: {counts:?}");
    // Every subagent's request is its tree's: same root id as the root's.
    let by_id: HashMap<&str, &Value> = prof
        .iter()
        .map(|m| (m["x_correlation_id"].as_str().unwrap(), *m))
        .collect();
    for m in prof.iter().filter(|m| m["agent_depth"] == 1) {
        let root = m["root_correlation_id"].as_str().unwrap();
        if let Some(parent) = by_id.get(root) {
            assert_eq!(parent["agent_depth"], 0);
        }
    }
    // The prefix-cache bound is AIPerf's figure for the same sessions (within the few
    // requests by which the two runs' lengths differ).
    let hit = r.export["theoretical_prefix_cache_hit"]["avg"]
        .as_f64()
        .unwrap();
    assert!((20.0..35.0).contains(&hit), "{hit}");
}

/// Spread: the lanes resume a quarter to three quarters in; the warmup lines both lanes up on
/// their instants (the second waits 489 ms); each lane's root goes at its offset.
#[test]
fn seed_7_resumes_both_lanes_where_aiperf_did() {
    let r = run(7, 4.0, &[]);
    check("a_s7", &r);
}

/// Seed 42 puts lane 0 before its subagent's call: the subagent goes 385 ms in and the root,
/// waiting for it, goes as soon as it has finished.
#[test]
fn seed_42_starts_the_live_subagent_and_holds_its_root_for_it() {
    let r = run(42, 4.0, &[]);
    check("a_s42", &r);
    let prof = phase_records(&r, "profiling");
    let child = prof
        .iter()
        .find(|m| m["conversation_id"] == "trace_multi::sa:agent_001")
        .unwrap();
    let root = prof
        .iter()
        .find(|m| m["conversation_id"] == "trace_multi" && m["turn_index"] == 1)
        .unwrap();
    assert!(
        root["credit_issued_ns"].as_u64() >= child["request_end_ns"].as_u64(),
        "the root's join waits for the subagent: {root} {child}"
    );
    // Its recorded delay (5 s) is not waited after the join.
    let gap =
        root["credit_issued_ns"].as_u64().unwrap() - child["request_end_ns"].as_u64().unwrap();
    assert!(gap < 100_000_000, "{gap} ns");
}

/// `--burst-phase-starts` with both ratios at 0.25: every warmup request at once, every lane's
/// earliest request at the profiling start.
#[test]
fn burst_starts_every_lane_at_once() {
    let r = run(
        7,
        4.0,
        &[
            "trajectoryStartMinRatio: 0.25",
            "trajectoryStartMaxRatio: 0.25",
            "burstPhaseStarts: true",
        ],
    );
    check("b_ratio025_burst_s7", &r);
    let phases = r.export["input_config"]["phases"].clone();
    assert_eq!(
        phases,
        serde_json::json!([{
            "name": "profiling",
            "kind": "profiling",
            "type": "concurrency",
            "duration": 4.0,
            "concurrency": 2,
            "timing_mode": "agentic_replay",
            "trajectory_start_min_ratio": 0.25,
            "trajectory_start_max_ratio": 0.25,
            "burst_phase_starts": true
        }]),
        "the file's one phase, as AIPerf echoes it (no grace: the file gives none)"
    );
}

/// More lanes than traces, when the run may not repeat them, and a phase without a concurrency:
/// AIPerf's errors.
#[test]
fn refusals_are_aiperfs() {
    let traces = data().join("traces/one_subagent.json");
    let run = |phase: &str| {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("c.yaml");
        std::fs::write(
            &config,
            format!(
                "benchmark:\n  model: mock-model\n  endpoint:\n    url: http://127.0.0.1:9\n  \
                 dataset:\n    type: file\n    path: {}\n    format: weka_trace\n  tokenizer:\n    \
                 name: builtin\n  phases:\n{phase}",
                traces.display()
            ),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(["profile", "--ui", "none", "--no-server-metrics", "--config"])
            .arg(&config)
            .arg("--artifact-dir")
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, e) = run(
        "    - {name: profiling, type: concurrency, concurrency: 2, duration: 5, timingMode: agentic_replay}\n",
    );
    assert_ne!(code, Some(0));
    assert!(
        e.contains(
            "concurrency 2 exceeds the 1 distinct loaded traces while dataset wrapping is disabled"
        ),
        "{e}"
    );
    let (code, e) = run(
        "    - {name: profiling, type: poisson, rate: 5, duration: 5, timingMode: agentic_replay}\n",
    );
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains("AGENTIC_REPLAY timing mode requires concurrency to be set on TimingConfig"),
        "{e}"
    );
    let (code, e) = run(
        "    - {name: profiling, type: concurrency, concurrency: 1, duration: 5, timingMode: agentic_replay, trajectoryStartMinRatio: 0.8, trajectoryStartMaxRatio: 0.2}\n",
    );
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains(
            "--trajectory-start-min-ratio (0.8) must be <= --trajectory-start-max-ratio (0.2)."
        ),
        "{e}"
    );
    // The cache warmup outside agentic replay (AIPerf's message, tests/data/aiperf-flag-configs).
    let (code, e) = run(
        "    - {name: profiling, type: concurrency, concurrency: 1, duration: 5, agenticCacheWarmupDuration: 2}\n",
    );
    assert_eq!(code, Some(2), "{e}");
    assert!(
        e.contains(
            "--agentic-cache-warmup-duration requires the agentic_replay timing mode (set today \
             by --scenario inferencex-agentx-mvp); the profiling phase(s) are not agentic_replay."
        ),
        "{e}"
    );
}

/// `--system-idle-gap-cap-seconds 0.5`: at the profiling start nothing is in flight and the
/// first request (lane 0's root, 2433 ms in) is brought to 500 ms; lane 1's root, recorded 488 ms
/// after it, is brought forward by that shift too (and by any later one: lane 0's recycling
/// leaves idle instants of its own). The run log sums the jumps.
#[test]
fn the_system_idle_cap_brings_the_first_requests_forward_together() {
    let r = run(7, 3.0, &["systemIdleGapCapSeconds: 0.5"]);
    let warm = phase_records(&r, "agentic.warmup");
    let prof = phase_records(&r, "profiling");
    // Each lane's resumed root: its warmup session's id.
    let first = |conv: &str| {
        let id = &warm.iter().find(|m| m["conversation_id"] == conv).unwrap()["x_correlation_id"];
        let m = prof.iter().find(|m| &m["x_correlation_id"] == id).unwrap();
        at_ms(&r, "profiling", m)
    };
    let (lane0, lane1) = (first("trace_multi"), first("trace_sa"));
    assert!((lane0 - 500.0).abs() < TOLERANCE_MS, "lane 0 at {lane0} ms");
    assert!(
        lane1 < 500.0 + 2921.599 - 2433.338 + TOLERANCE_MS && lane1 > lane0,
        "lane 1 at {lane1} ms"
    );
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("system-idle cap: limit 0.5 s, "))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    let skipped: f64 = line
        .rsplit(", ")
        .next()
        .and_then(|t| t.strip_suffix(" s skipped"))
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(skipped >= 1.933 - 0.015, "{line}");
    assert_eq!(
        r.export["input_config"]["phases"][0]["system_idle_gap_cap_seconds"],
        0.5
    );
}

/// `--scenario inferencex-agentx-mvp --unsafe-override` on a local Weka directory, as AIPerf 0.13
/// ran it (tests/data/weka/agentic/scenario.json, for 15 s; 3 s here): the settings it filled
/// (the same lines), the two violations it let through (the same warnings, the duration's
/// figure aside), the run replayed as agentic, `input_config` and the `metadata` block AIPerf
/// wrote.
#[test]
fn the_agentx_scenario_overridden_runs_as_aiperf_ran_it() {
    let want = common::read_json(&data().join("agentic/scenario.json"));
    let traces = traces_of(&FIXTURES);
    let server = common::recording_mock(8);
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--endpoint-type", "chat"])
        .args(["--streaming", "--tokenizer", "builtin", "--input-file"])
        .arg(traces.path())
        .args(["--custom-dataset-type", "weka_trace", "--concurrency", "2"])
        .args(["--benchmark-duration", "3", "--random-seed", "7"])
        .args(["--scenario", "inferencex-agentx-mvp", "--unsafe-override"])
        .args(["--ui", "none", "--no-server-metrics", "--url"])
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    for n in want["notes"].as_array().unwrap() {
        let line = format!("ringperf: {}", n.as_str().unwrap());
        assert!(e.contains(&line), "{line} not in {e}");
    }
    for w in want["warnings"].as_array().unwrap() {
        let line = format!("ringperf: warning: {}", w.as_str().unwrap())
            .replace("got 15.0, required", "got 3.0, required");
        assert!(e.contains(&line), "{line} not in {e}");
    }
    let j = common::read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(j["metadata"], want["metadata"]);
    let mut phases = want["phases"].clone();
    phases[0]["duration"] = serde_json::json!(3.0);
    assert_eq!(j["input_config"]["phases"], phases);
    assert_eq!(j["input_config"]["scenario"], want["scenario"]);
    assert_eq!(j["input_config"]["unsafe_override"], true);
    // Replayed as agentic: the warmup primed the lanes, every body asked to ignore EOS and
    // carried its tree's cache-bust marker once, in its first user message (AIPerf's layout: a
    // later turn's in the first turn's message, a subagent's the root's).
    assert_eq!(j["ringperf"]["phases"][0]["name"], "agentic.warmup");
    let truth = common::truth_of(&server, 4);
    for t in &truth {
        let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
        assert_eq!(body["ignore_eos"], true);
        let text = body.to_string();
        assert_eq!(text.matches("[rid:").count(), 1, "{body}");
        let first_user = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap();
        assert!(first_user.to_string().contains("[rid:"), "{body}");
    }
}

/// A mock whose model's context is 21,000 tokens (vLLM's 400 beyond it), counting prompts with
/// the builtin tokenizer: kv-cache-tester's trace 0403 goes over it mid-trace.
fn context_limited_mock() -> ringperf_mock::mock::MockServer {
    ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(4),
        max_model_len: Some(21_000),
        truth_log: true,
        prompt_tokenizer: Some(ringperf_mock::mock::PromptTokenizer(std::sync::Arc::new(
            ringperf_workload::workload::Tokenizer::builtin(),
        ))),
        ..Default::default()
    })
    .expect("mock starts")
}

/// A prompt over the model's context (the mock's `--mock-max-model-len`, vLLM's 400) ends the
/// trajectory: a real kv-cache-tester trace whose prompts grow turn by turn is resumed from its
/// start; the first turn over the limit fails, no later turn of that session is sent, and the
/// lane starts the trace again. Every such failure is counted in `context_overflow_count`.
#[test]
fn a_prompt_over_the_context_ends_the_trajectory_and_is_counted() {
    let traces = traces_of(&["kvct_trace_0403.json"]);
    let server = context_limited_mock();
    let dir = tempfile::tempdir().unwrap();
    let out = agentic_run(
        server.addr,
        traces.path(),
        7,
        (
            &[
                "traceIdleGapCapSeconds: 0.02",
                "synthesis: {allowDatasetWrap: true}",
            ],
            &[
                "concurrency: 1",
                "duration: 2",
                "trajectoryStartMinRatio: 0",
                "trajectoryStartMaxRatio: 0",
            ],
        ),
        &dir.path().join("out"),
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let records: Vec<Value> = common::read_jsonl(&dir.path().join("out/profile_export.jsonl"));
    let prof: Vec<&Value> = records
        .iter()
        .filter(|r| r["metadata"]["phase_name"] == "profiling")
        .collect();
    // (A request in flight when the duration ends is cut: the file's phase has no grace.)
    let failed: Vec<&&Value> = (prof.iter())
        .filter(|r| {
            r.get("error").is_some()
                && r["error"]["message"] != "Request was cancelled at the end of the grace period"
        })
        .collect();
    assert!(!failed.is_empty(), "no prompt went over the limit");
    // The first turn over the limit: every failure is it, and no later turn was sent.
    let over = failed[0]["metadata"]["turn_index"].as_u64().unwrap();
    assert!(over > 0 && over < 25, "turn {over} of 26");
    for f in &failed {
        assert_eq!(f["metadata"]["turn_index"].as_u64(), Some(over), "{f}");
        let m = f["error"]["message"].as_str().unwrap();
        assert!(m.contains("maximum context length is 21000 tokens"), "{m}");
    }
    assert!(
        prof.iter()
            .all(|r| r["metadata"]["turn_index"].as_u64().unwrap() <= over),
        "a turn after the overflow was sent"
    );
    let starts = prof
        .iter()
        .filter(|r| r["metadata"]["turn_index"] == 0)
        .count();
    assert!(starts >= 2, "the lane started the trace again ({starts})");
    let j = common::read_json(&dir.path().join("out/profile_export_aiperf.json"));
    assert_eq!(
        j["context_overflow_count"]["avg"].as_f64(),
        Some(failed.len() as f64),
        "{}",
        j["context_overflow_count"]
    );
    let cut = prof.iter().filter(|r| r.get("error").is_some()).count() - failed.len();
    assert!(cut <= 1, "{cut} cut at the end (concurrency 1)");
    assert_eq!(
        j["error_request_count"]["avg"].as_f64(),
        Some((failed.len() + cut) as f64)
    );
}

/// Under the scenario (AIPerf's skip path) a prompt over the model's context leaves every metric
/// and per-request file: the mock refused some requests as over its context, yet no record of
/// them is in the JSONL, no error is counted, and the export counts exactly the refusals as
/// `skipped_context_overflow_count` and `context_overflow_count`; the overflow rate voids the
/// submission.
#[test]
fn under_the_scenario_a_prompt_over_the_context_leaves_every_metric_and_is_counted_apart() {
    let traces = traces_of(&["kvct_trace_0403.json"]);
    let server = context_limited_mock();
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--endpoint-type", "chat"])
        .args(["--streaming", "--tokenizer", "builtin", "--input-file"])
        .arg(traces.path())
        .args(["--custom-dataset-type", "weka_trace", "--concurrency", "1"])
        .args(["--benchmark-duration", "2", "--random-seed", "7"])
        .args(["--trajectory-start-min-ratio", "0"])
        .args(["--trajectory-start-max-ratio", "0"])
        .args([
            "--trace-idle-gap-cap-seconds",
            "0.02",
            "--allow-dataset-wrap",
        ])
        .args(["--scenario", "inferencex-agentx-mvp", "--unsafe-override"])
        .args(["--ui", "none", "--no-server-metrics", "--url"])
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let refused = server.context_overflows();
    assert!(refused >= 1, "no prompt went over the limit");
    let records: Vec<Value> = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert!(records.iter().all(|r| r.get("error").is_none()));
    let prof = records
        .iter()
        .filter(|r| r["metadata"]["phase_name"] == "profiling")
        .count() as f64;
    let j = common::read_json(&dir.path().join("profile_export_aiperf.json"));
    // Every record written is a request the mock answered.
    let answered = common::truth_of(&server, records.len()).len();
    assert_eq!(records.len(), answered);
    assert_eq!(j["request_count"]["avg"].as_f64(), Some(prof));
    assert!(
        j.get("error_request_count").is_none(),
        "{}",
        j["error_request_count"]
    );
    assert_eq!(j["error_summary"], serde_json::json!([]));
    // The refusals, counted apart: the warmup's in its block, the rest in the run's.
    let warm = j["warmup_metrics"]["context_overflow_count"]["avg"]
        .as_f64()
        .unwrap_or(0.0);
    let skipped = j["skipped_context_overflow_count"]["avg"].as_f64().unwrap();
    assert_eq!(skipped + warm, refused as f64);
    assert_eq!(j["context_overflow_count"]["avg"].as_f64(), Some(skipped));
    assert_eq!(j["skipped_context_overflow_count"]["unit"], "requests");
    let reasons = j["metadata"]["submission_invalid_reasons"]
        .as_array()
        .unwrap();
    assert_eq!(
        reasons.contains(&Value::from("context_overflow_rate_exceeded")),
        skipped / (prof + skipped) > 0.01,
        "{reasons:?}"
    );
}

/// The barriers between streams: a subagent whose calls are a chain and a one-call sidecar
/// (tests/data/weka/traces/barrier_sidecar.json). The sidecar (recorded at 1.3 s) waits for the
/// chain's first call (ended at 1.2 s), the chain's second (1.5 s) for the sidecar (ended at
/// 1.4 s). Against a mock 600 ms to the first token each answer ends 300 ms after its
/// follower's own time (the sidecar's place after the spawn; the chain's recorded idle after
/// its first answer), so both are held: the mock's truth log shows each arriving after the
/// answer it waits for ended, which without the barrier they would not by 300 ms.
#[test]
fn a_request_waits_for_the_requests_of_other_streams_the_trace_ended_before_it() {
    let traces = traces_of(&["barrier_sidecar.json"]);
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: std::time::Duration::from_millis(600),
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(2),
        truth_log: true,
        ..Default::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let out = agentic_run(
        server.addr,
        traces.path(),
        7,
        (
            &[],
            &[
                "concurrency: 1",
                "duration: 2.5",
                "gracePeriod: 5",
                "trajectoryStartMinRatio: 0",
                "trajectoryStartMaxRatio: 0",
            ],
        ),
        &dir.path().join("out"),
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let records = common::read_jsonl(&dir.path().join("out/profile_export.jsonl"));
    let truth = common::truth_of(&server, records.len());
    // The first tree's requests by (stream, turn): when each reached the server, when its
    // answer ended.
    let first_root = &records[0]["metadata"]["root_correlation_id"];
    let mut at: std::collections::HashMap<(String, u64), (u64, u64)> = Default::default();
    for r in &records {
        let m = &r["metadata"];
        if &m["root_correlation_id"] != first_root {
            continue;
        }
        let id: uuid::Uuid = m["x_request_id"].as_str().unwrap().parse().unwrap();
        let t = (truth.iter())
            .find(|t| t.request_id == Some(id))
            .expect("every request reached the mock");
        let stream = m["conversation_id"].as_str().unwrap();
        let kind = if stream.contains(":aux:") {
            "sidecar"
        } else {
            stream
        };
        at.insert(
            (kind.to_string(), m["turn_index"].as_u64().unwrap()),
            (t.arrival_ns, t.end_ns),
        );
    }
    let get = |s: &str, k| {
        at.get(&(s.to_string(), k))
            .copied()
            .unwrap_or_else(|| panic!("{s} {k} not sent: {at:?}"))
    };
    let chain = "barrier_sidecar::sa:agent_001";
    let ms = |ns: u64| ns as f64 / 1e6;
    let (chain_0, sidecar, chain_1) = (get(chain, 0), get("sidecar", 0), get(chain, 1));
    assert!(
        sidecar.0 >= chain_0.1,
        "the sidecar arrived {:.1} ms before the chain's first answer ended",
        ms(chain_0.1 - sidecar.0)
    );
    assert!(
        chain_1.0 >= sidecar.1,
        "the chain's second call arrived {:.1} ms before the sidecar's answer ended",
        ms(sidecar.1 - chain_1.0)
    );
}

/// `--agentic-cache-warmup-duration` (AIPerf's accelerated cache warmup) on two real traces:
/// after the priming requests, the lanes' trees go on in the warmup, every request asking for
/// one token (the mock's record of each body); each session then goes on in profiling from the
/// turn after its last in the warmup, on the same correlation id, and no turn of a session is
/// sent twice.
#[test]
fn the_cache_warmup_runs_the_trees_on_and_profiling_resumes_where_it_left_them() {
    let traces = traces_of(&["kvct_trace_0489.json", "kvct_trace_0527.json"]);
    let server = common::recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let out = agentic_run(
        server.addr,
        traces.path(),
        7,
        (
            &["traceIdleGapCapSeconds: 1"],
            &[
                "concurrency: 2",
                "duration: 1.5",
                "agenticCacheWarmupDuration: 1",
            ],
        ),
        &dir.path().join("out"),
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let records = common::read_jsonl(&dir.path().join("out/profile_export.jsonl"));
    let truth = common::truth_of(&server, records.len());
    let j = common::read_json(&dir.path().join("out/profile_export_aiperf.json"));
    assert_eq!(
        j["input_config"]["phases"][0]["agentic_cache_warmup_duration"],
        1.0
    );
    let mut warm: std::collections::HashMap<String, Vec<u64>> = Default::default();
    let mut prof: std::collections::HashMap<String, Vec<u64>> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for r in &records {
        let m = &r["metadata"];
        // (A request in flight when the duration ends is cut: the file's phase has no grace.)
        let cut = r["error"]["message"] == "Request was cancelled at the end of the grace period";
        assert!(r.get("error").is_none() || cut, "{r}");
        let id = m["x_correlation_id"].as_str().unwrap().to_string();
        let turn = m["turn_index"].as_u64().unwrap();
        assert!(
            seen.insert((id.clone(), turn)),
            "{id} turn {turn} sent twice"
        );
        let rid: uuid::Uuid = m["x_request_id"].as_str().unwrap().parse().unwrap();
        let t = (truth.iter())
            .find(|t| t.request_id == Some(rid))
            .expect("every request reached the mock");
        let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
        let asked = body["max_completion_tokens"].as_u64();
        if m["phase_name"] == "agentic.warmup" {
            assert_eq!(asked, Some(1), "a warmup request asked for {asked:?}");
            warm.entry(id).or_default().push(turn);
        } else {
            assert_eq!(m["phase_name"], "profiling");
            prof.entry(id).or_default().push(turn);
        }
    }
    // The trees went on in the warmup: sessions sent several turns there.
    assert!(
        warm.values().any(|turns| turns.len() >= 3),
        "no session went on in the warmup: {warm:?}"
    );
    // Profiling resumed sessions the warmup left, each at its next turn.
    let mut resumed = 0;
    for (id, turns) in &prof {
        if let Some(w) = warm.get(id) {
            let last = w.iter().max().unwrap();
            let first = turns.iter().min().unwrap();
            assert_eq!(
                *first,
                last + 1,
                "{id}: warmup up to {last}, profiling from {first}"
            );
            resumed += 1;
        }
    }
    assert!(resumed >= 1, "no session went on into profiling");
}

/// `--agentic-warmup-grace-period 0.1` (`agenticWarmupGracePeriod` on the phase): the warmup's
/// last priming request goes 489 ms in (seed 7); its answers, 800 ms slow, are cut 100 ms
/// later, and profiling starts then.
#[test]
fn the_agentic_warmup_grace_period_cuts_the_priming_answers() {
    let traces = traces_of(&FIXTURES);
    let server = ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(2),
        ttft: std::time::Duration::from_millis(800),
        ..Default::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let phase = [
        "concurrency: 2",
        "duration: 3.5",
        "agenticWarmupGracePeriod: 0.1",
    ];
    let out = agentic_run(
        server.addr,
        traces.path(),
        7,
        (&[], &phase),
        &dir.path().join("out"),
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let records = common::read_jsonl(&dir.path().join("out/profile_export.jsonl"));
    let warm: Vec<&Value> = records
        .iter()
        .filter(|r| r["metadata"]["phase_name"] == "agentic.warmup")
        .collect();
    assert_eq!(warm.len(), 2);
    for r in &warm {
        assert_eq!(
            r["error"]["message"], "Request was cancelled at the end of the grace period",
            "{r}"
        );
    }
    let j = common::read_json(&dir.path().join("out/profile_export_aiperf.json"));
    let w = &j["ringperf"]["phases"][0];
    assert_eq!(w["name"], "agentic.warmup");
    let took_ms = (w["end_ns"].as_u64().unwrap() - w["start_ns"].as_u64().unwrap()) as f64 / 1e6;
    assert!(
        (560.0..780.0).contains(&took_ms),
        "the warmup ended {took_ms} ms in"
    );
    assert_eq!(
        j["input_config"]["phases"][0]["agentic_warmup_grace_period"],
        0.1
    );
}

/// AIPerf's overlap at issue, on a real kv-cache-tester trace: `kvct_trace_0291`'s root turn 15
/// (recorded 15.6 s long) spawns two subagents. `agent_001` was recorded starting 3 s after the
/// turn's start (its timeline compressed by `--trace-idle-gap-cap-seconds 3`), while the turn was
/// still running: it starts 3 s after the turn is sent, not after its answer. `agent_002`
/// started after the turn had ended: it starts when the answer comes. AIPerf 0.13's run of the
/// same file, seed and settings sent them 2,999.9 ms after the turn and 3.1 ms after its answer.
#[test]
fn a_subagent_that_overlapped_its_spawning_request_starts_while_it_runs() {
    let traces = traces_of(&["kvct_trace_0291.json"]);
    let server = common::recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let out = agentic_run(
        server.addr,
        traces.path(),
        7,
        (
            &["traceIdleGapCapSeconds: 3"],
            &["concurrency: 1", "duration: 5"],
        ),
        &dir.path().join("out"),
    );
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    // AIPerf resumed the same turn (13) at the same instant.
    assert!(e.contains("lane=00  t*=38086.488 ms  root_next=13/"), "{e}");
    let records = common::read_jsonl(&dir.path().join("out/profile_export.jsonl"));
    let find = |conv: &str, turn: u64| {
        records
            .iter()
            .map(|r| &r["metadata"])
            .find(|m| {
                m["phase_name"] == "profiling"
                    && m["conversation_id"] == conv
                    && m["turn_index"] == turn
            })
            .unwrap_or_else(|| panic!("no {conv} turn {turn}"))
    };
    let ns = |m: &Value, k: &str| m[k].as_u64().unwrap() as f64 / 1e6;
    let parent = find("trace_0291", 15);
    let a1 = find("trace_0291::sa:agent_001", 0);
    let a2 = find("trace_0291::sa:agent_002", 0);
    let after_issue = ns(a1, "credit_issued_ns") - ns(parent, "credit_issued_ns");
    assert!(
        (after_issue - 3000.0).abs() < TOLERANCE_MS,
        "agent_001 {after_issue} ms after its spawning turn was sent"
    );
    let after_answer = ns(a2, "credit_issued_ns") - ns(parent, "request_end_ns");
    assert!(
        (0.0..TOLERANCE_MS).contains(&after_answer),
        "agent_002 {after_answer} ms after the answer"
    );
    let j = common::read_json(&dir.path().join("out/profile_export_aiperf.json"));
    assert_eq!(
        j["branch_stats"]["children_delayed"], 1,
        "{}",
        j["branch_stats"]
    );
}
