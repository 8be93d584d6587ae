//! AIPerf 0.13's `adaptive_scale` timing mode (issue #38), against what AIPerf did
//! (`tests/data/aiperf-adaptive-scale/`): its verdicts on 84 config files, its `input_config`
//! echo, and runs of the controller against the in-process mock whose control values match
//! AIPerf's runs: the always-met climb, the never-met stop, and the boundary of a mock that
//! serves four requests at once. The mock's own log shows the load the controller set.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::Duration;

use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};
use serde_json::Value;

use crate::common::read_json;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-adaptive-scale")
}

fn ringperf(args: &[&str]) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// AIPerf's verdict on each case of `results.txt`: whether it was valid, and its error as
/// `loc: message` (ringperf prints one line `…failed: loc: message`).
fn verdicts() -> Vec<(String, bool, Option<String>)> {
    let text = std::fs::read_to_string(data().join("validation/results.txt")).unwrap();
    let mut out = Vec::new();
    for block in text.split("=== ").skip(1) {
        let mut lines = block.lines();
        let head = lines.next().unwrap_or_default();
        let Some((name, rc)) = head.split_once(" rc=") else {
            continue;
        };
        let rest: Vec<&str> = lines.collect();
        let valid = rc.trim() == "0";
        let message = (!valid).then(|| {
            let at = rest
                .iter()
                .position(|l| l.starts_with("Error: Configuration validation failed"))
                .expect("an error line");
            let strip = |l: &str| l.trim().split(" [type=").next().unwrap().to_string();
            match rest.get(at + 2) {
                // `loc` on its own line, the message indented under it.
                Some(m) if m.starts_with("  ") && !m.starts_with("    ") => {
                    format!("{}: {}", rest[at + 1].trim(), strip(m))
                }
                _ => strip(rest[at + 1]),
            }
        });
        out.push((name.to_string(), valid, message));
    }
    out
}

#[test]
fn config_validate_gives_aiperfs_verdict_on_each_case() {
    let cases = verdicts();
    assert_eq!(cases.len(), 84, "AIPerf's verdicts");
    let mut wrong = Vec::new();
    for (name, valid, message) in &cases {
        let file = data().join(format!("validation/cases/{name}.yaml"));
        let out = ringperf(&["config", "validate", file.to_str().unwrap()]);
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        let ok = out.status.success() == *valid
            && message
                .as_ref()
                .is_none_or(|m| said.lines().next().unwrap_or("").contains(m.as_str()));
        if !ok {
            wrong.push(format!("{name}: AIPerf {message:?}, ringperf {said}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The two cases whose notes carry no exit code: the adaptive check comes before the
    // phase's own stop-condition check; an adaptive_search sweep refuses adaptive phases.
    let first = |name: &str| {
        let f = data().join(format!("validation/cases/{name}.yaml"));
        let out = ringperf(&["config", "validate", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    assert!(
        first("both_fail").contains(
            "benchmark.phases.0.concurrency: Value error, adaptive_scale requires duration"
        )
    );
    assert!(first("sweep_adaptive").contains(
        "adaptive_search sweeps cannot be combined with adaptive_scale phases: ['profiling']. \
         Use either the outer adaptive_search sweep or per-phase adaptive_scale, not both."
    ));
}

#[test]
fn input_config_echoes_the_adaptive_phases_as_aiperf_did() {
    for run in [
        "always-met",
        "never-met",
        "boundary",
        "request-rate",
        "multi-phase",
        "duration-cut",
        "users-always-met",
        "users-never-met",
        "user-centric-concurrency",
    ] {
        let dir = data().join("runs").join(run);
        let out = ringperf(&[
            "config",
            "expand",
            "--full",
            "--format",
            "json",
            dir.join("config.yaml").to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{run}");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours = &doc["variations"][0]["benchmark"]["phases"];
        let aiperf = &read_json(&dir.join("input_config.json"))["phases"];
        // Key order too: AIPerf's echo puts the adaptive fields first and `sla` after the
        // fields every phase has.
        assert_eq!(
            serde_json::to_string(ours).unwrap(),
            serde_json::to_string(aiperf).unwrap(),
            "{run}"
        );
    }
}

/// Aliases of one field in a block: AIPerf's table order decides, not the file's (AIPerf's
/// own `config expand` of this file showed 7 and 3).
#[test]
fn a_fields_aliases_resolve_in_aiperfs_order() {
    let f = data().join("validation/cases/order_rev.yaml");
    let out = ringperf(&[
        "config",
        "expand",
        "--full",
        "--format",
        "json",
        f.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phase = &doc["variations"][0]["benchmark"]["phases"][0];
    assert_eq!(phase["adaptive_assessment_period"], 7.0);
    assert_eq!(phase["adaptive_control_max"], 3.0);
}

/// How the block is read onto the phase, as AIPerf lowers it: its values over the flat fields
/// beside it, its `sla` in place of the phase's, a disabled block's values kept (and echoed),
/// AIPerf's lenient boolean, a list filter without `stat` echoed without it.
#[test]
fn the_block_is_lowered_onto_the_phase_as_aiperf_lowers_it() {
    let phase = |case: &str| -> Value {
        let f = data().join(format!("validation/cases/{case}.yaml"));
        let out = ringperf(&[
            "config",
            "expand",
            "--full",
            "--format",
            "json",
            f.to_str().unwrap(),
        ]);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["variations"][0]["benchmark"]["phases"][0].clone()
    };
    assert_eq!(
        phase("flat_and_block_conflict")["adaptive_sustain_duration"],
        4.0
    );
    assert_eq!(
        phase("sla_both_levels")["sla"][0]["metric_tag"],
        "time_to_first_token"
    );
    let off = phase("enabled_false_block");
    assert_eq!(off["adaptive_scale"], false);
    assert_eq!(off["adaptive_assessment_period"], 2.0);
    assert_eq!(phase("bool_str_yes")["adaptive_scale"], true);
    let filter = &phase("sla_list_default_stat")["sla"][0];
    assert!(filter.get("stat").is_none(), "{filter}");
}

/// AIPerf's multi-phase run: a warmup, then two adaptive phases, each with its own controller
/// and files, listed in one manifest by their places in the run.
#[test]
fn each_adaptive_phase_has_its_own_controller_and_files() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("multi-phase", &server, dir.path(), &[]));
    server.stop();
    let a = events(dir.path(), "ramp_a");
    assert_eq!(control_values(&a), [1.0, 2.0, 4.0]);
    assert_eq!(
        terminal(&a).1,
        "max_control_value_reached_without_saturation".to_string()
    );
    let b = events(dir.path(), "ramp_b");
    assert_eq!(control_values(&b), [1.0]);
    assert_eq!(
        terminal(&b).1,
        "no_sustainable_concurrency_found".to_string()
    );
    assert_eq!(
        (&b[0]["phase_index"], &b[0]["profiling_index"]),
        (&2.into(), &1.into())
    );
    let aiperf = data().join("runs/multi-phase/artifacts");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("artifacts/adaptive_scale_manifest.json")).unwrap(),
        std::fs::read_to_string(aiperf.join("adaptive_scale_manifest.json")).unwrap()
    );
    assert!(
        !dir.path()
            .join("artifacts/phases/warmup/adaptive_scale_events.jsonl")
            .exists()
    );
}

/// The fixture config of `run` pointed at `server` and written into `out`, with `edit` applied
/// to its text.
fn config_for(run: &str, server: &MockServer, out: &Path, edit: &[(&str, &str)]) -> PathBuf {
    config_at(
        &data().join("runs").join(run).join("config.yaml"),
        &format!("http://{}", server.addr),
        out,
        edit,
    )
}

/// The config file `file` pointed at `url` and written into `out`, with `edit` applied.
fn config_at(file: &Path, url: &str, out: &Path, edit: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(file).unwrap().replace(
        "dir: artifacts",
        &format!("dir: {}", out.join("artifacts").display()),
    );
    let port: String = text
        .split("http://127.0.0.1:")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    text = text.replace(&format!("http://127.0.0.1:{port}"), url);
    for (from, to) in edit {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    let path = out.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn profile(config: &Path) {
    let out = ringperf(&[
        "profile",
        "--config",
        config.to_str().unwrap(),
        "--ui-type",
        "none",
        "--tokenizer",
        "builtin",
        "--no-server-metrics",
        "--no-gpu-telemetry",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn events(dir: &Path, phase: &str) -> Vec<Value> {
    let f = dir
        .join("artifacts/phases")
        .join(phase)
        .join("adaptive_scale_events.jsonl");
    std::fs::read_to_string(&f)
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The control values an event list set: the start, then every change.
fn control_values(ev: &[Value]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for e in ev {
        let v = e["control_value_after"].as_f64().unwrap();
        if out.last() != Some(&v) {
            out.push(v);
        }
    }
    out
}

fn terminal(ev: &[Value]) -> (String, String) {
    let e = ev.last().unwrap();
    assert_eq!(e["phase"], "complete");
    (
        e["event"].as_str().unwrap().into(),
        e["reason"].as_str().unwrap().into(),
    )
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// Every event line and the summary have AIPerf's keys (sorted as it sorts them).
fn same_shape_as_aiperf(dir: &Path, run: &str) {
    let aiperf = data().join("runs").join(run).join("artifacts");
    let line = |d: &Path| -> Value {
        let t = std::fs::read_to_string(d.join("phases/profiling/adaptive_scale_events.jsonl"))
            .unwrap();
        serde_json::from_str(t.lines().next().unwrap()).unwrap()
    };
    assert_eq!(keys(&line(&dir.join("artifacts"))), keys(&line(&aiperf)));
    let summary = |d: &Path| read_json(&d.join("phases/profiling/adaptive_scale_summary.json"));
    let (ours, theirs) = (summary(&dir.join("artifacts")), summary(&aiperf));
    assert_eq!(keys(&ours), keys(&theirs));
    assert_eq!(keys(&ours["candidates"][0]), keys(&theirs["candidates"][0]));
    assert_eq!(
        std::fs::read_to_string(dir.join("artifacts/adaptive_scale_manifest.json")).unwrap(),
        std::fs::read_to_string(aiperf.join("adaptive_scale_manifest.json")).unwrap()
    );
}

fn mock(ttft_ms: u64, itl_ms: u64, capacity: u32) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        output_tokens: OutputLen::Fixed(16),
        capacity,
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// AIPerf's always-met run: p95 latency far under 1000 ms, so every window passes and
/// sla_margin steps by its base step times the margin's multiplier until the maximum.
#[test]
fn always_met_climbs_to_the_maximum() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("always-met", &server, dir.path(), &[]));
    server.stop();
    let ev = events(dir.path(), "profiling");
    let values = control_values(&ev);
    // Each step is the rule's for the window it followed (base 1 times ⌊4 × smallest
    // margin⌋ in [1, 4]); with the p95 under 250 ms AIPerf saw, 1, 4, 7, 10, 13, 16.
    let mut expected = vec![1.0];
    for e in ev.iter().filter(|e| e["event"] == "adaptive_decision") {
        let margin = e["sla_values"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let bound: f64 = k.rsplit(':').next().unwrap().parse().unwrap();
                (bound - v.as_f64().unwrap()) / bound
            })
            .fold(f64::INFINITY, f64::min)
            .max(0.0);
        let step = (margin * 4.0).trunc().clamp(1.0, 4.0);
        let next = (expected.last().unwrap() + step).min(16.0);
        expected.push(next);
    }
    assert_eq!(values, expected);
    let fast = ev
        .iter()
        .filter(|e| e["event"] == "adaptive_window")
        .all(|e| {
            e["sla_values"]["request_latency:p95:lt:1000"]
                .as_f64()
                .unwrap()
                <= 250.0
        });
    if fast {
        assert_eq!(values, [1.0, 4.0, 7.0, 10.0, 13.0, 16.0]);
    }
    assert_eq!(
        terminal(&ev),
        (
            "adaptive_incomplete".into(),
            "max_control_value_reached_without_saturation".into()
        )
    );
    let s = read_json(
        &dir.path()
            .join("artifacts/phases/profiling/adaptive_scale_summary.json"),
    );
    assert_eq!(s["status"], "incomplete");
    assert_eq!(s["last_passing_value"], 16);
    assert_eq!(s["boundary_value"], Value::Null);
    same_shape_as_aiperf(dir.path(), "always-met");
}

/// AIPerf's never-met run: a p95 under 10 ms cannot be met by a 20 ms first token, so the
/// first window ends the phase.
#[test]
fn never_met_stops_after_the_first_window() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("never-met", &server, dir.path(), &[]));
    let truth = server.truth().entries();
    server.stop();
    let ev = events(dir.path(), "profiling");
    assert_eq!(control_values(&ev), [1.0]);
    let names: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "adaptive_phase_started",
            "adaptive_window",
            "adaptive_failed"
        ]
    );
    assert_eq!(
        terminal(&ev).1,
        "no_sustainable_concurrency_found".to_string()
    );
    let s = read_json(
        &dir.path()
            .join("artifacts/phases/profiling/adaptive_scale_summary.json"),
    );
    assert_eq!(s["status"], "failed");
    assert_eq!(s["first_failing_value"], 1);
    // The phase stopped sending there: one request at a time, and nothing near its 30 s.
    let summary = read_json(&dir.path().join("artifacts/profile_export_aiperf.json"));
    let count = summary["request_count"]["avg"].as_f64().unwrap() as usize;
    assert_eq!(count, truth.len());
    assert!(max_in_flight(&truth) <= 1);
    same_shape_as_aiperf(dir.path(), "never-met");
}

fn max_in_flight(truth: &[ringperf_mock::mock::TruthEntry]) -> usize {
    truth
        .iter()
        .map(|r| {
            truth
                .iter()
                .filter(|o| o.arrival_ns <= r.arrival_ns && r.arrival_ns < o.end_ns)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// AIPerf's boundary run: a mock serving 4 requests at once (the rest wait their turn), a
/// doubling step and an average-latency SLA between the latency under 4 and under 8 in
/// flight. AIPerf went 1, 2, 4, 8, failed at 8 and held 4 until the sustain was over; so does
/// ringperf. The mock's times are longer than AIPerf's run had them (150 ms to the first token,
/// 10 ms a token: 300 ms a request alone, about 560 ms on average with 8 in flight, the SLA at
/// 430 ms), and windows 3 s, so that a loaded machine's delays stay far from the threshold.
#[test]
fn boundary_doubles_then_holds_four_against_a_capacity_four_mock() {
    let server = mock(150, 10, 4);
    let dir = tempfile::tempdir().unwrap();
    let config = config_for(
        "boundary",
        &server,
        dir.path(),
        &[("window: 2", "window: 3"), ("lt: 260", "lt: 430")],
    );
    profile(&config);
    let truth = server.truth().entries();
    server.stop();
    let ev = events(dir.path(), "profiling");
    assert_eq!(control_values(&ev), [1.0, 2.0, 4.0, 8.0, 4.0]);
    // AIPerf's events in AIPerf's order (a window too short to judge would add an
    // inconclusive window and move nothing).
    let aiperf = events(&data().join("runs/boundary"), "profiling");
    let shape = |ev: &[Value]| -> Vec<(String, String)> {
        ev.iter()
            .filter(|e| e["reason"] != "inconclusive: completed request count below minimum")
            .map(|e| {
                (
                    e["event"].as_str().unwrap().into(),
                    e["phase"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    // The sustain lasts two 3 s windows here (three 2 s windows in AIPerf's run).
    let mut want = shape(&aiperf);
    want.drain(12..14);
    assert_eq!(shape(&ev), want);
    assert_eq!(
        terminal(&ev),
        (
            "adaptive_complete".into(),
            "sustain_duration_completed".into()
        )
    );
    let started = ev.iter().find(|e| e["event"] == "sustain_started").unwrap();
    assert_eq!(started["reason"], "holding boundary_value=4");
    assert_eq!(started["control_value_before"], 8);
    let s = read_json(
        &dir.path()
            .join("artifacts/phases/profiling/adaptive_scale_summary.json"),
    );
    assert_eq!(s["status"], "completed");
    assert_eq!(
        (
            &s["boundary_value"],
            &s["first_failing_value"],
            &s["last_passing_value"]
        ),
        (&Value::from(4), &Value::from(8), &Value::from(4))
    );
    assert_eq!(s["sla_passed_during_sustain"], true);
    same_shape_as_aiperf(dir.path(), "boundary");

    // The mock's log: every request found at most the controller's value in flight when it
    // arrived (the value in force when the client started it: its record's start, on the
    // wall clock, against the events' stamps), and at 8 the mock really had more than its 4.
    let records: HashMap<String, u64> =
        std::fs::read_to_string(dir.path().join("artifacts/profile_export.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                let m = &r["metadata"];
                (
                    m["x_request_id"].as_str().unwrap().to_string(),
                    m["request_start_ns"].as_u64().unwrap(),
                )
            })
            .collect();
    let changes: Vec<(u64, f64)> = ev
        .iter()
        .map(|e| {
            (
                e["timestamp_ns"].as_u64().unwrap(),
                e["control_value_after"].as_f64().unwrap(),
            )
        })
        .collect();
    // The value in force at `t`; a request started just before a change was logged (the
    // change is applied, then logged) may have the new one.
    let limit_at = |t: u64| {
        let mut v = 1.0_f64;
        for (at, value) in &changes {
            if *at <= t {
                v = *value;
            } else if *at <= t + 100_000_000 {
                v = v.max(*value);
            }
        }
        v
    };
    let mut peak_by_value: HashMap<u64, usize> = HashMap::new();
    for r in &truth {
        let id = r.request_id.expect("a request id").to_string();
        let Some(&start) = records.get(&id) else {
            continue;
        };
        let in_flight = truth
            .iter()
            .filter(|o| o.arrival_ns <= r.arrival_ns && r.arrival_ns < o.end_ns)
            .count();
        let limit = limit_at(start);
        assert!(
            in_flight as f64 <= limit,
            "{in_flight} in flight under a limit of {limit}"
        );
        let peak = peak_by_value.entry(limit as u64).or_default();
        *peak = (*peak).max(in_flight);
    }
    assert_eq!(peak_by_value.get(&1), Some(&1));
    assert_eq!(peak_by_value.get(&2), Some(&2));
    assert_eq!(peak_by_value.get(&4), Some(&4));
    assert!(peak_by_value[&8] > 4, "{peak_by_value:?}");
}

/// AIPerf's request-rate run: a constant phase whose rate doubles from 5 to its `rate`, 40,
/// every window passing.
#[test]
fn request_rate_doubles_to_the_phase_rate() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("request-rate", &server, dir.path(), &[]));
    server.stop();
    let ev = events(dir.path(), "profiling");
    assert_eq!(control_values(&ev), [5.0, 10.0, 20.0, 40.0]);
    assert_eq!(ev[0]["control_value"], serde_json::json!(5.0));
    assert_eq!(
        terminal(&ev).1,
        "max_control_value_reached_without_saturation".to_string()
    );
    // The open loop followed: each window's throughput near its rate (within a third, a loaded
    // machine's margin; the first window counts from before the first request).
    let windows: Vec<(f64, f64)> = (ev.iter())
        .filter(|e| e["event"] == "adaptive_window")
        .map(|e| {
            (
                e["control_value"].as_f64().unwrap(),
                e["throughput"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(windows.len(), 4);
    for (rate, throughput) in &windows[1..] {
        assert!(
            (throughput - rate).abs() <= rate / 3.0,
            "{throughput} at {rate}: {windows:?}"
        );
    }
    same_shape_as_aiperf(dir.path(), "request-rate");
}

/// Each user's gaps between the sends of its turns (`credit_issued_ns`), in ms, with the
/// earlier turn's index, from a `profile_export.jsonl`'s records (or the same metadata alone).
fn user_turn_gaps(records: &[Value]) -> Vec<(u64, f64)> {
    let mut by_user: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
    for r in records {
        let m = r.get("metadata").unwrap_or(r);
        let at = m["credit_issued_ns"].as_u64().unwrap();
        let turn = m["turn_index"].as_u64().unwrap();
        by_user
            .entry(m["x_correlation_id"].as_str().unwrap().to_owned())
            .or_default()
            .push((turn, at));
    }
    (by_user.values_mut())
        .flat_map(|sent| {
            sent.sort_unstable();
            (sent.windows(2))
                .map(|w| (w[0].0, (w[1].1 - w[0].1) as f64 / 1e6))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// AIPerf's users runs: a user_centric phase at 10 requests/s whose controller moves the users
/// from 2, doubling (AIPerf's `set_target_users`). The users present at the start are
/// planned for 2; a raised target starts the new users one stagger (100 ms) apart and every
/// user's next turn comes a turn gap of `users / rate` after the one before (200, 400, 800 ms);
/// the control's state in every event is AIPerf's (its target, the users alive, none retiring
/// or cancelled). Every window passes: 2, 4, 8, then the maximum.
#[test]
fn users_double_to_the_phases_users_with_the_turn_gap_following() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("users-always-met", &server, dir.path(), &[]));
    server.stop();
    let ev = events(dir.path(), "profiling");
    let aiperf_dir = data().join("runs/users-always-met");
    let aiperf = events(&aiperf_dir, "profiling");
    assert_eq!(control_values(&ev), [2.0, 4.0, 8.0]);
    assert_eq!(control_values(&ev), control_values(&aiperf));
    assert_eq!(terminal(&ev), terminal(&aiperf));
    let names = |ev: &[Value]| -> Vec<String> {
        (ev.iter())
            .map(|e| e["event"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&ev), names(&aiperf));
    for (ours, theirs) in ev.iter().zip(&aiperf) {
        assert_eq!(keys(&ours["control"]), keys(&theirs["control"]));
        assert_eq!(
            ours["control"]["target_value"],
            theirs["control"]["target_value"]
        );
        let alive = ours["control"]["active_users"].as_u64().unwrap();
        assert_eq!(ours["control"]["actual_value"], alive);
        assert_eq!(ours["control"]["retiring_users"], 0);
        assert!(alive <= 8, "{ours}");
    }
    // At the start, the users AIPerf plans for 2 with four turns a conversation (one part-way
    // through, one new); at the end, all 8.
    assert_eq!(ev[0]["control"]["active_users"], 2);
    assert_eq!(ev.last().unwrap()["control"]["active_users"], 8);
    // Each user's turns: exactly the turn gap of the target in force when the earlier turn was
    // planned (the answers take 50 ms, well inside it), and it only grows.
    let records = crate::common::read_jsonl(&dir.path().join("artifacts/profile_export.jsonl"));
    let ours = user_turn_gaps(&records);
    let gaps: Vec<f64> = ours.iter().map(|g| g.1).collect();
    for want in [200.0, 400.0, 800.0] {
        assert!(gaps.contains(&want), "{want} ms: {gaps:?}");
    }
    assert!(
        gaps.iter().all(|g| [200.0, 400.0, 800.0].contains(g)),
        "{gaps:?}"
    );
    // AIPerf's own users kept the same gaps (its sends are stamped when issued, not planned:
    // within 15 ms), but for a first turn issued late (a spawn put in front of the one its loop
    // slept for goes when that one does; its next turn keeps to the planned time).
    let theirs = user_turn_gaps(&crate::common::read_jsonl(
        &aiperf_dir.join("records_metadata.jsonl"),
    ));
    for (_, g) in theirs.iter().filter(|g| g.0 > 0) {
        assert!(
            [200.0, 400.0, 800.0].iter().any(|w| (g - w).abs() <= 15.0),
            "AIPerf's gap {g} ms"
        );
    }
    same_shape_as_aiperf(dir.path(), "users-always-met");
}

/// AIPerf's users run whose SLA no window meets: the first window ends the phase at 2 users,
/// as AIPerf's did.
#[test]
fn users_never_met_stops_at_the_smallest_target() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("users-never-met", &server, dir.path(), &[]));
    server.stop();
    let ev = events(dir.path(), "profiling");
    let aiperf = events(&data().join("runs/users-never-met"), "profiling");
    assert_eq!(control_values(&ev), [2.0]);
    assert_eq!(terminal(&ev), terminal(&aiperf));
    let s = read_json(
        &dir.path()
            .join("artifacts/phases/profiling/adaptive_scale_summary.json"),
    );
    assert_eq!(s["status"], "failed");
    assert_eq!(s["first_failing_value"], 2);
    assert_eq!(keys(&s["control"]), keys(&aiperf[0]["control"]));
    same_shape_as_aiperf(dir.path(), "users-never-met");
}

/// A user_centric phase whose adaptive scale moves its concurrency: AIPerf 0.13 runs it as its
/// request-rate strategy runs a phase (Poisson arrivals at the phase's rate, the users and their
/// turn gaps unused) and echoes it as the file gives it; ringperf does the same. The sessions'
/// turns are not a turn gap apart, in AIPerf's run as in ringperf's.
#[test]
fn a_user_centric_phase_moving_its_concurrency_runs_as_a_rate_phase_as_aiperf_runs_it() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for(
        "user-centric-concurrency",
        &server,
        dir.path(),
        &[],
    ));
    server.stop();
    let ev = events(dir.path(), "profiling");
    let aiperf_dir = data().join("runs/user-centric-concurrency");
    let aiperf = events(&aiperf_dir, "profiling");
    assert_eq!(control_values(&ev), [2.0, 4.0, 8.0]);
    assert_eq!(control_values(&ev), control_values(&aiperf));
    assert_eq!(terminal(&ev), terminal(&aiperf));
    same_shape_as_aiperf(dir.path(), "user-centric-concurrency");
    let spread = |gaps: Vec<(u64, f64)>| -> usize {
        let mut ms: Vec<i64> = gaps.iter().map(|g| g.1.round() as i64).collect();
        ms.sort_unstable();
        ms.dedup();
        ms.len()
    };
    let ours = crate::common::read_jsonl(&dir.path().join("artifacts/profile_export.jsonl"));
    let theirs = crate::common::read_jsonl(&aiperf_dir.join("records_metadata.jsonl"));
    // Users' turns would be 200, 400 or 800 ms apart: arrivals are many gaps.
    assert!(spread(user_turn_gaps(&ours)) > 5);
    assert!(spread(user_turn_gaps(&theirs)) > 5);
}

/// `timing_mode: adaptive_scale` without `adaptive_scale`: AIPerf runs the controller all the
/// same (sla_margin from 1 to the explicit maximum 4 in one step).
#[test]
fn timing_mode_alone_runs_the_controller() {
    let server = mock(20, 2, 0);
    let dir = tempfile::tempdir().unwrap();
    profile(&config_for("timing-mode-flat", &server, dir.path(), &[]));
    server.stop();
    let ev = events(dir.path(), "profiling");
    let aiperf = events(&data().join("runs/timing-mode-flat"), "profiling");
    assert_eq!(control_values(&ev), control_values(&aiperf));
    assert_eq!(control_values(&ev), [1.0, 4.0]);
    assert_eq!(terminal(&ev), terminal(&aiperf));
}

/// What AIPerf refuses only when the phase starts: an unknown SLA metric, a stat a rate metric
/// does not have, `timing_mode` without a sustain duration. ringperf refuses them before its
/// first request, with AIPerf's message, and writes no adaptive file.
#[test]
fn phase_start_refusals_give_aiperfs_messages() {
    let refused = crate::common::RefusedPort::new();
    for case in [
        "sla_metric_unsupported",
        "sla_throughput_p95",
        "timing_mode_only",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let runtime = data().join("validation/runtime");
        let config = config_at(
            &runtime.join(format!("{case}.yaml")),
            &format!("http://127.0.0.1:{}", refused.port),
            dir.path(),
            &[],
        );
        let out = ringperf(&[
            "profile",
            "--config",
            config.to_str().unwrap(),
            "--ui-type",
            "none",
            "--tokenizer",
            "builtin",
        ]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{case}");
        let want = std::fs::read_to_string(runtime.join(format!("{case}.error"))).unwrap();
        assert!(said.contains(want.trim()), "{case}: {said}");
        assert!(
            !dir.path()
                .join("artifacts/adaptive_scale_manifest.json")
                .exists()
        );
    }
}

/// Runs AIPerf's validation case `case` (valid in AIPerf) against `server` with a doubling
/// step, 2 s windows and `edit`; its events.
fn run_case(case: &str, server: &MockServer, dir: &Path, edit: &[(&str, &str)]) -> Vec<Value> {
    let mut edits = vec![
        ("duration: 30", "duration: 40"),
        (
            "sustain_duration: 4",
            "sustain_duration: 4\n        window: 2\n        strategy: {step_policy: \
             fixed_percent_step, step_percent: 100}",
        ),
    ];
    let artifacts = format!(
        "\n  artifacts: {{dir: {}}}\n  phases:",
        dir.join("artifacts").display()
    );
    edits.push(("\n  phases:", &artifacts));
    edits.extend_from_slice(edit);
    let file = data().join(format!("validation/cases/{case}.yaml"));
    let config = config_at(&file, &format!("http://{}", server.addr), dir, &edits);
    profile(&config);
    events(dir, "profiling")
}

/// Beyond AIPerf's runs: the other variables ringperf moves, against a mock serving 2 at once
/// (175 ms a request alone). A poisson phase's concurrency (the session limit of its open
/// loop): p95 latency about 350 ms at 4 in flight, 700 at 8, under 500. A closed loop's
/// prefill limit: p95 TTFT about 350 ms at 4 waiting for a first token, 525 at 6, under 440.
#[test]
fn a_rate_phases_concurrency_and_a_prefill_limit_are_moved_too() {
    let server = mock(100, 5, 2);
    let dir = tempfile::tempdir().unwrap();
    let ev = run_case(
        "poisson_concurrency_var_conc",
        &server,
        dir.path(),
        &[("rate: 20", "rate: 200")],
    );
    assert_eq!(control_values(&ev), [1.0, 2.0, 4.0, 8.0, 4.0]);
    assert_eq!(terminal(&ev).1, "sustain_duration_completed".to_string());
    let dir = tempfile::tempdir().unwrap();
    let ev = run_case(
        "var_prefill_ok",
        &server,
        dir.path(),
        &[("lt: 500", "lt: 440")],
    );
    server.stop();
    assert_eq!(control_values(&ev), [1.0, 2.0, 4.0, 6.0, 4.0]);
    assert_eq!(ev[0]["control_variable"], "prefill_concurrency");
    assert_eq!(terminal(&ev).1, "sustain_duration_completed".to_string());
}

/// The controller settings ringperf resolves from the config of `run`, by phase name.
fn settings_of(
    run: &str,
) -> Vec<(
    String,
    std::sync::Arc<ringperf_metrics::adaptive::settings::Settings>,
)> {
    let file = data().join("runs").join(run).join("config.yaml");
    let argv: Vec<String> = ["ringperf", "profile", "-f", file.to_str().unwrap()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let no_env = |_: &str| None;
    let plan = ringperf::invocation::read(&argv, &no_env)
        .unwrap()
        .plan(&argv)
        .unwrap()
        .0;
    let cfg = ringperf::config::Config::from_plan(&plan, false).expect("valid");
    std::iter::once((cfg.profiling_name.clone(), &cfg.profiling))
        .chain(cfg.phases_after.iter().map(|p| (p.name.clone(), &p.config)))
        .filter_map(|(name, p)| p.timing.adaptive.clone().map(|s| (name, s)))
        .collect()
}

/// Each of AIPerf's runs replayed through ringperf's controller: the windows AIPerf's events
/// recorded (their counts and filter values, their times) go in, and out come AIPerf's events,
/// key for key (but the wall-clock stamps and the window throughput, which depends on the
/// window's exact length), and its summary's verdict.
#[test]
fn aiperfs_runs_replayed_through_the_controller_give_its_events() {
    use ringperf_metrics::adaptive::artifacts::{PhaseId, Writer};
    use ringperf_metrics::adaptive::controller::Controller;
    use ringperf_metrics::adaptive::window::{Sample, WindowStats};
    for run in [
        "always-met",
        "never-met",
        "boundary",
        "request-rate",
        "multi-phase",
        "duration-cut",
        "duration-cut-rerun",
        "timing-mode-flat",
        "users-always-met",
        "users-never-met",
        "user-centric-concurrency",
    ] {
        let aiperf_dir = data().join("runs").join(run);
        for (name, settings) in settings_of(run) {
            let theirs = events(&aiperf_dir, &name);
            let out = tempfile::tempdir().unwrap();
            let id = PhaseId {
                name: name.clone(),
                index: theirs[0]["phase_index"].as_u64().unwrap(),
                profiling_index: theirs[0]["profiling_index"].as_u64().unwrap(),
            };
            let writer = Writer::open(
                &out.path().join("artifacts"),
                id,
                settings.variable.integer(),
            )
            .unwrap();
            let mut c = Controller::new((*settings).clone()).unwrap();
            let t0 = theirs[0]["timestamp_ns"].as_u64().unwrap();
            c.start();
            for e in theirs.iter().filter(|e| e["event"] == "adaptive_window") {
                let n = e["sample_count"].as_u64().unwrap() as usize;
                let w = WindowStats {
                    samples: vec![Sample::default(); n],
                    errors: e["error_count"].as_u64().unwrap(),
                    cancelled: e["cancelled"].as_u64().unwrap(),
                    elapsed_s: 1.0,
                    ..WindowStats::default()
                };
                let values: Vec<(String, f64)> = (e["sla_values"].as_object().unwrap().iter())
                    .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(f64::INFINITY)))
                    .collect();
                let ts = e["timestamp_ns"].as_u64().unwrap();
                let judged = e["reason"] == "SLA window evaluated";
                c.assess_given(&w, judged.then_some(values), (ts - t0) as f64 / 1e9, ts);
            }
            // A phase that ended first: its end after the last window.
            if theirs.last().unwrap()["reason"] == "phase_stopped" {
                c.phase_ended(false);
            }
            let mine = c.take_events();
            // A users run: the users alive when AIPerf wrote each event (its run's, not the
            // controller's).
            let alive = |t: &Value| t["control"]["active_users"].as_u64();
            for (i, e) in mine.iter().enumerate() {
                let users = theirs.get(i).and_then(alive);
                writer
                    .events(&c, std::slice::from_ref(e), 0, users)
                    .unwrap();
            }
            let ours = events(out.path(), &name);
            assert_eq!(ours.len(), theirs.len(), "{run}/{name}");
            for (o, t) in ours.iter().zip(&theirs) {
                for (k, v) in t.as_object().unwrap() {
                    if k.starts_with("timestamp") || k == "throughput" {
                        continue;
                    }
                    assert_eq!(&o[k], v, "{run}/{name}: {k} of {}", t["event"]);
                }
                assert_eq!(keys(o), keys(t));
            }
            let summary = aiperf_dir
                .join("artifacts/phases")
                .join(&name)
                .join("adaptive_scale_summary.json");
            if summary.exists() {
                writer.summary(&c, theirs.last().and_then(alive)).unwrap();
                let o = read_json(
                    &out.path()
                        .join("artifacts/phases")
                        .join(&name)
                        .join("adaptive_scale_summary.json"),
                );
                let t = read_json(&summary);
                for k in [
                    "status",
                    "completed_reason",
                    "control_value",
                    "control",
                    "boundary_value",
                    "last_passing_value",
                    "first_failing_value",
                    "result",
                    "sustain_windows",
                    "sustain_passed_windows",
                    "sla_passed_during_sustain",
                    "sla",
                    "totals",
                    "base_step",
                    "max_step_multiplier",
                    "step_percent",
                    "step_policy",
                    "sustain_duration_seconds",
                ] {
                    assert_eq!(o[k], t[k], "{run}/{name}: summary {k}");
                }
                let verdicts = |s: &Value| -> Vec<(Value, Value, Value, Value)> {
                    (s["candidates"].as_array().unwrap().iter())
                        .map(|k| {
                            (
                                k["adaptive_iteration"].clone(),
                                k["candidate_value"].clone(),
                                k["accepted"].clone(),
                                k["rejection_reason"].clone(),
                            )
                        })
                        .collect()
                };
                assert_eq!(verdicts(&o), verdicts(&t), "{run}/{name}: candidates");
            }
        }
    }
}
