//! The controller against AIPerf 0.13's own: each case drives it with the windows AIPerf's
//! controller classes were driven with (2 s windows, a 4 s sustain, `request_latency p95 < 500`
//! unless said otherwise) and checks the control values it set and how it ended.

use super::super::settings::{ControlVariable, Op, SlaFilter, Stat};
use super::super::window::Sample;
use super::*;

fn base(max: f64) -> Settings {
    Settings {
        variable: ControlVariable::Concurrency,
        min: 1.0,
        max,
        assessment_period_s: 2.0,
        sustain_s: 4.0,
        min_completed: 1,
        step_policy: StepPolicy::SlaMargin,
        base_step: 10,
        max_step_multiplier: 4,
        step_percent: 25.0,
        sla: vec![SlaFilter {
            metric_tag: "request_latency".into(),
            stat: Some(Stat::P95),
            op: Op::Lt,
            threshold: 500.0,
        }],
    }
}

fn fixed(max: f64, pct: f64) -> Settings {
    Settings {
        step_policy: StepPolicy::FixedPercentStep,
        step_percent: pct,
        ..base(max)
    }
}

/// `n` successes of `ms` each (and `errors` errors) over 2 s.
fn window(ms: f64, n: usize, errors: u64) -> WindowStats {
    WindowStats {
        samples: (0..n)
            .map(|_| Sample {
                latency_ns: (ms * 1e6) as u64,
                ..Sample::default()
            })
            .collect(),
        errors,
        elapsed_s: 2.0,
        ..WindowStats::default()
    }
}

/// Drives `c` with windows made from the value in force, each 2 s after the last, until it
/// ends or the windows run out; the values set (the start first, each change after).
fn drive(c: &mut Controller, windows: &[&dyn Fn(f64) -> WindowStats]) -> Vec<f64> {
    c.start();
    let mut set = vec![c.value()];
    for (i, w) in windows.iter().enumerate() {
        if c.done() {
            break;
        }
        let before = c.value();
        let t = 2.0 * (i + 1) as f64;
        c.assess(&w(before), t, (t * 1e9) as u64);
        if c.value() != before {
            set.push(c.value());
        }
    }
    set
}

fn pattern(p: &str) -> Vec<Box<dyn Fn(f64) -> WindowStats>> {
    p.chars()
        .map(|x| {
            let ms = if x == 'P' { 100.0 } else { 900.0 };
            Box::new(move |_: f64| window(ms, 5, 0)) as Box<dyn Fn(f64) -> WindowStats>
        })
        .collect()
}

fn run(s: Settings, windows: &[Box<dyn Fn(f64) -> WindowStats>]) -> (Controller, Vec<f64>) {
    let mut c = Controller::new(s).expect("valid");
    let refs: Vec<&dyn Fn(f64) -> WindowStats> = windows.iter().map(|b| b.as_ref()).collect();
    let set = drive(&mut c, &refs);
    (c, set)
}

fn same(
    n: usize,
    f: impl Fn(f64) -> WindowStats + Copy + 'static,
) -> Vec<Box<dyn Fn(f64) -> WindowStats>> {
    (0..n)
        .map(|_| Box::new(f) as Box<dyn Fn(f64) -> WindowStats>)
        .collect()
}

fn memory(c: &Controller) -> (Option<f64>, Option<f64>, Option<f64>, (u64, u64)) {
    (
        c.boundary(),
        c.last_passing(),
        c.first_failing(),
        c.sustain_windows(),
    )
}

#[test]
fn v1_sla_margin_climbs_by_thirty_to_the_maximum() {
    let (c, set) = run(base(64.0), &same(10, |_| window(100.0, 5, 0)));
    assert_eq!(set, [1.0, 31.0, 61.0, 64.0]);
    assert_eq!(c.ending(), Some(&Ending::MaxReached));
    assert_eq!(memory(&c), (None, Some(64.0), None, (0, 0)));
    let (c, set) = run(base(100.0), &same(10, |_| window(1.0, 5, 0)));
    assert_eq!(set, [1.0, 31.0, 61.0, 91.0, 100.0]);
    assert_eq!(c.ending().map(Ending::status), Some("incomplete"));
}

#[test]
fn v2_a_first_failing_window_ends_it() {
    let (c, set) = run(base(64.0), &same(10, |_| window(900.0, 5, 0)));
    assert_eq!(set, [1.0]);
    assert_eq!(c.ending(), Some(&Ending::NoSustainable));
    assert_eq!(memory(&c), (None, None, Some(1.0), (0, 0)));
}

#[test]
fn v3_doubling_holds_the_last_passing_value() {
    let (c, set) = run(fixed(64.0, 100.0), &same(12, |v| window(50.0 * v, 5, 0)));
    assert_eq!(set, [1.0, 2.0, 4.0, 8.0, 16.0, 8.0]);
    assert_eq!(c.ending(), Some(&Ending::SustainCompleted));
    assert_eq!(memory(&c), (Some(8.0), Some(8.0), Some(16.0), (2, 2)));
    // V3b: sla_margin jumps 1 → 31, fails, and holds 1 (no search between).
    let (c, set) = run(base(64.0), &same(12, |v| window(20.0 * v, 5, 0)));
    assert_eq!(set, [1.0, 31.0, 1.0]);
    assert_eq!(memory(&c), (Some(1.0), Some(1.0), Some(31.0), (2, 2)));
    let mut c = c;
    assert!(!c.take_events().is_empty());
    c.phase_ended(false);
    assert!(
        c.take_events().is_empty(),
        "an ended controller says nothing more"
    );
}

#[test]
fn v4_v5_one_recovery_then_a_pass_or_the_end() {
    let (c, set) = run(fixed(64.0, 25.0), &pattern("PPPFFPPP"));
    assert_eq!(set, [1.0, 2.0, 3.0, 4.0, 3.0, 2.0]);
    assert_eq!(c.ending(), Some(&Ending::SustainCompleted));
    assert_eq!(memory(&c), (Some(3.0), Some(2.0), Some(4.0), (2, 1)));
    let (c, set) = run(fixed(64.0, 25.0), &pattern("PPPFFF"));
    assert_eq!(set, [1.0, 2.0, 3.0, 4.0, 3.0, 2.0]);
    assert_eq!(c.ending(), Some(&Ending::SustainFailedAfterRecovery));
    assert_eq!(memory(&c), (Some(3.0), Some(3.0), Some(4.0), (2, 0)));
}

#[test]
fn v6_a_pass_rearms_the_recovery() {
    let mut s = base(64.0);
    s.sustain_s = 100.0;
    let (c, set) = run(s, &pattern("PPFFPFF"));
    assert_eq!(set, [1.0, 31.0, 61.0, 31.0, 21.0, 11.0]);
    assert_eq!(c.ending(), Some(&Ending::SustainFailedAfterRecovery));
    assert_eq!(memory(&c), (Some(31.0), Some(21.0), Some(61.0), (4, 1)));
}

#[test]
fn v7_failing_at_the_minimum_is_unrecoverable() {
    let (c, set) = run(fixed(8.0, 25.0), &pattern("PFF"));
    assert_eq!(set, [1.0, 2.0, 1.0]);
    assert_eq!(c.ending(), Some(&Ending::SustainUnrecoverable));
    assert_eq!(memory(&c), (Some(1.0), Some(1.0), Some(2.0), (1, 0)));
}

#[test]
fn v8_short_windows_are_inconclusive() {
    let mut s = fixed(8.0, 25.0);
    s.min_completed = 5;
    let ws: Vec<Box<dyn Fn(f64) -> WindowStats>> = [2, 5, 0, 5]
        .into_iter()
        .map(|n| Box::new(move |_: f64| window(100.0, n, 0)) as Box<dyn Fn(f64) -> WindowStats>)
        .collect();
    let (mut c, set) = run(s, &ws);
    assert_eq!(set, [1.0, 2.0, 3.0]);
    assert!(!c.done());
    let events = c.take_events();
    let inconclusive: Vec<u64> = (events.iter())
        .filter(|e| e.reason == "inconclusive: completed request count below minimum")
        .map(|e| e.iteration)
        .collect();
    assert_eq!(inconclusive, [0, 2]);
    let rejected: Vec<&str> = (c.candidates().iter())
        .filter(|k| !k.accepted)
        .map(|k| k.rejection)
        .collect();
    assert_eq!(rejected, ["insufficient_samples", "insufficient_samples"]);
}

#[test]
fn v9_all_error_windows_fail() {
    let mut ws = same(2, |_| window(100.0, 5, 0));
    ws.extend(same(3, |_| window(0.0, 0, 3)));
    let (mut c, set) = run(fixed(8.0, 25.0), &ws);
    assert_eq!(set, [1.0, 2.0, 3.0, 2.0, 1.0]);
    assert_eq!(c.ending(), Some(&Ending::SustainFailedAfterRecovery));
    assert_eq!(memory(&c), (Some(2.0), Some(2.0), Some(3.0), (2, 0)));
    let events = c.take_events();
    let boundary = events
        .iter()
        .find(|e| e.kind == EventKind::BoundaryDiscovered)
        .unwrap();
    assert_eq!(boundary.reason, "all requests failed in assessment window");
    let (c, set) = run(fixed(8.0, 25.0), &same(1, |_| window(0.0, 0, 2)));
    assert_eq!(set, [1.0]);
    assert_eq!(c.ending(), Some(&Ending::NoSustainable));
}

#[test]
fn v10_errors_beside_successes_do_not_touch_a_latency_sla() {
    let (c, set) = run(fixed(4.0, 100.0), &same(5, |_| window(100.0, 1, 9)));
    assert_eq!(set, [1.0, 2.0, 4.0]);
    assert_eq!(c.ending(), Some(&Ending::MaxReached));
}

#[test]
fn v11_a_rate_steps_by_whole_numbers_and_is_clamped() {
    let mut s = fixed(6.0, 25.0);
    s.variable = ControlVariable::RequestRate;
    s.min = 0.5;
    let (c, set) = run(s, &same(12, |_| window(100.0, 5, 0)));
    assert_eq!(set, [0.5, 1.5, 2.5, 3.5, 4.5, 6.0]);
    assert_eq!(c.last_passing(), Some(6.0));
}

#[test]
fn v12_the_smallest_margin_binds() {
    let mut s = base(200.0);
    s.sla.push(SlaFilter {
        metric_tag: "throughput".into(),
        stat: Some(Stat::Avg),
        op: Op::Gt,
        threshold: 1.0,
    });
    let (mut c, set) = run(s, &same(3, |_| window(300.0, 5, 0)));
    assert_eq!(set, [1.0, 11.0, 21.0, 31.0]);
    let events = c.take_events();
    let d = events
        .iter()
        .find(|e| e.kind == EventKind::Decision)
        .unwrap();
    assert_eq!(d.binding_sla.as_deref(), Some("request_latency:p95:lt:500"));
    assert_eq!(d.step_size, Some(10.0));
    assert_eq!(
        d.sla_values,
        [
            ("request_latency:p95:lt:500".to_string(), 300.0),
            ("throughput:avg:gt:1".to_string(), 2.5)
        ]
    );
}

#[test]
fn steps_by_margin_and_by_percent_as_aiperf_tabulates_them() {
    let c = Controller::new(base(64.0)).unwrap();
    for (p95, want) in [
        (0.0, 40.0),
        (1.0, 30.0),
        (125.0, 30.0),
        (126.0, 20.0),
        (250.0, 20.0),
        (251.0, 10.0),
        (375.0, 10.0),
        (600.0, 10.0),
    ] {
        let v = [("request_latency:p95:lt:500".to_string(), p95)];
        assert_eq!(c.step(10.0, &v), want, "p95 {p95}");
    }
    assert_eq!(c.step(10.0, &[]), 10.0);
    let c = Controller::new(fixed(64.0, 25.0)).unwrap();
    for (v, want) in [
        (1.0, 1.0),
        (4.0, 1.0),
        (5.0, 2.0),
        (8.0, 2.0),
        (9.0, 3.0),
        (13.0, 4.0),
        (22.0, 6.0),
        (35.0, 9.0),
        (55.0, 14.0),
    ] {
        assert_eq!(c.step(v, &[]), want, "current {v}");
    }
    // 100 × 0.07 is 7.000000000000001 in binary floating point: 8.
    let c = Controller::new(fixed(640.0, 7.0)).unwrap();
    assert_eq!(c.step(100.0, &[]), 8.0);
}

/// The boundary run of AIPerf against the capacity-4 mock, replayed from its events' window
/// values: the same events, reasons and iterations.
#[test]
fn the_boundary_fixture_replays() {
    let mut s = fixed(16.0, 100.0);
    s.sustain_s = 6.0;
    s.min_completed = 5;
    s.sla = vec![SlaFilter {
        metric_tag: "request_latency".into(),
        stat: Some(Stat::Avg),
        op: Op::Lt,
        threshold: 260.0,
    }];
    let mut c = Controller::new(s).unwrap();
    c.start();
    // (avg ms, successes, end of the window in s from the strategy's start)
    for (ms, n, t) in [
        (176.16, 11, 2.005),
        (175.69, 22, 4.005),
        (176.06, 44, 6.005),
        (326.60, 45, 8.005),
        (175.45, 37, 10.006),
        (175.25, 46, 12.006),
        (175.56, 44, 14.011),
    ] {
        c.assess(&window(ms, n, 0), t, (t * 1e9) as u64);
    }
    let got: Vec<(&str, &str, u64, f64, f64)> = c
        .events
        .iter()
        .map(|e| {
            (
                e.kind.name(),
                e.state.name(),
                e.iteration,
                e.before.unwrap_or(e.value),
                e.value,
            )
        })
        .collect();
    let want = [
        ("adaptive_phase_started", "discover", 0, 1.0, 1.0),
        ("adaptive_window", "discover", 0, 1.0, 1.0),
        ("adaptive_decision", "discover", 0, 1.0, 2.0),
        ("adaptive_window", "discover", 1, 2.0, 2.0),
        ("adaptive_decision", "discover", 1, 2.0, 4.0),
        ("adaptive_window", "discover", 2, 4.0, 4.0),
        ("adaptive_decision", "discover", 2, 4.0, 8.0),
        ("adaptive_window", "discover", 3, 8.0, 8.0),
        ("sustain_started", "sustain", 3, 8.0, 4.0),
        ("boundary_discovered", "sustain", 3, 4.0, 4.0),
        ("adaptive_window", "sustain", 4, 4.0, 4.0),
        ("adaptive_decision", "sustain", 4, 4.0, 4.0),
        ("adaptive_window", "sustain", 5, 4.0, 4.0),
        ("adaptive_decision", "sustain", 5, 4.0, 4.0),
        ("adaptive_window", "sustain", 6, 4.0, 4.0),
        ("adaptive_decision", "sustain", 6, 4.0, 4.0),
        ("adaptive_complete", "complete", 6, 4.0, 4.0),
    ];
    assert_eq!(got, want);
    assert_eq!(c.events[8].reason, "holding boundary_value=4");
    assert_eq!(
        c.events[9].reason,
        "SLA value 326.600 breaches configured filters"
    );
    assert_eq!(c.events[16].reason, "sustain_duration_completed");
    assert_eq!(memory(&c), (Some(4.0), Some(4.0), Some(8.0), (3, 3)));
    assert_eq!(c.ending().map(Ending::status), Some("completed"));
}
