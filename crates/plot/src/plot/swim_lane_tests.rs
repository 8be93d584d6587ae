use proptest::prelude::*;

use super::*;

/// One exported record as a JSONL line.
fn line(corr: &str, conv: &str, turn: i64, start: u64, end: u64, extra: &str) -> String {
    format!(
        r#"{{"metadata":{{"x_correlation_id":"{corr}","conversation_id":"{conv}","turn_index":{turn},"request_start_ns":{start},"request_end_ns":{end}{extra}}},"metrics":{{"input_sequence_length":{{"value":{},"unit":"tokens"}},"time_to_first_token":{{"value":1.0,"unit":"ms"}}}}}}"#,
        10 * (turn + 1)
    )
}

#[test]
fn records_group_into_sessions_in_turn_order() {
    let text = [
        line("a", "c0", 1, 30, 40, ""),
        line("b", "c1", 0, 5, 25, ""),
        line("a", "c0", 0, 0, 10, ""),
        // No correlation id: the conversation id is the session.
        line("", "c2", 0, 50, 60, ""),
        // Cancelled, and without an end: left out.
        line("b", "c1", 1, 26, 27, r#","was_cancelled":true"#),
        r#"{"metadata":{"x_correlation_id":"b","request_start_ns":1}}"#.to_string(),
        String::new(),
    ]
    .join("\n");
    let s = sessions_of(&text).unwrap();
    let ids: Vec<(&str, Vec<i64>)> = s
        .iter()
        .map(|s| {
            (
                s.id.as_str(),
                s.turns.iter().map(|t| t.turn_index).collect(),
            )
        })
        .collect();
    assert_eq!(ids, [("a", vec![0, 1]), ("b", vec![0]), ("c2", vec![0])]);
    assert_eq!(s[0].span(), (0, 40));
    assert_eq!(s[0].merged_active(), [(0, 10), (30, 40)]);
    assert_eq!(sessions_of("{}\nnot json\n"), Err(2));
    assert_eq!(sessions_of("[1]"), Err(1));
}

/// Three sessions: A [0, 10], B [5, 15], C [10, 20]: C reuses A's slot (it starts as A ends),
/// B needs its own.
#[test]
fn slots_are_reused_once_their_lane_ended() {
    let text = [
        line("A", "a", 0, 0, 10, ""),
        line("B", "b", 0, 5, 15, ""),
        line("C", "c", 0, 10, 20, ""),
    ]
    .join("\n");
    let s = sessions_of(&text).unwrap();
    let l = lanes(&s);
    let slots: Vec<(&str, usize)> = l.iter().map(|l| (l.root.as_str(), l.slot)).collect();
    assert_eq!(slots, [("A", 0), ("B", 1), ("C", 0)]);
}

/// Overlapping turns of one session are stacked on rows of their own.
#[test]
fn parallel_turns_take_their_own_rows() {
    let t = |s, e| Turn {
        start_ns: s,
        end_ns: e,
        ..Turn::default()
    };
    let (depths, rows) = turn_depths(&[t(0, 10), t(2, 5), t(6, 9), t(10, 12)]);
    assert_eq!((depths, rows), (vec![0, 1, 1, 0], 2));
}

/// A root with three subagents (one tree by `root_correlation_id`): S1 [10, 20] takes the
/// first child row, S2 [15, 30] the next (S1 still runs), S3 [25, 40] S1's row again.
#[test]
fn subagents_nest_under_their_root() {
    let sub = |id: &str, s, e| {
        line(
            id,
            id,
            0,
            s,
            e,
            r#","agent_depth":1,"root_correlation_id":"R""#,
        )
    };
    let text = [
        line("R", "r", 0, 0, 100, r#","root_correlation_id":"R""#),
        sub("S1", 10, 20),
        sub("S2", 15, 30),
        sub("S3", 25, 40),
        line("X", "x", 0, 0, 5, ""),
    ]
    .join("\n");
    let s = sessions_of(&text).unwrap();
    let l = lanes(&s);
    assert_eq!(l.len(), 2, "{l:?}");
    let r = l.iter().find(|l| l.root == "R").unwrap();
    let rows: Vec<(&str, usize, bool)> = r
        .members
        .iter()
        .map(|m| (s[m.session].id.as_str(), m.row0, m.is_sub))
        .collect();
    assert_eq!(
        rows,
        [
            ("R", 0, false),
            ("S1", 1, true),
            ("S2", 2, true),
            ("S3", 1, true)
        ]
    );
    assert_eq!(r.rows, 3);
    // X started with R at 0 and needs a slot of its own.
    assert_ne!(l[0].slot, l[1].slot);
}

/// Without root ids, the parent chain decides; subagents whose parent sent nothing share that
/// absent parent as their lane.
#[test]
fn orphan_subagents_share_their_absent_parent() {
    let sub = |id: &str, parent: &str, s, e| {
        line(
            id,
            id,
            0,
            s,
            e,
            &format!(r#","agent_depth":1,"parent_correlation_id":"{parent}""#),
        )
    };
    let text = [
        sub("S1", "P", 0, 10),
        sub("S2", "P", 5, 15),
        sub("S3", "S1", 6, 8),
    ]
    .join("\n");
    let s = sessions_of(&text).unwrap();
    let l = lanes(&s);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].root, "P");
    assert_eq!(l[0].members.len(), 3);
}

#[test]
fn ramp_and_end_lines_from_either_summary_shape() {
    let v2 = json!({"input_config": {"phases": [
        {"exclude_from_results": true, "concurrency_ramp": {"duration": 1.0}},
        {"concurrency_ramp": {"duration": 5.0}}]},
        "benchmark_duration": {"avg": 12.5}});
    assert_eq!(bench_lines(&v2), (Some(5.0), Some(12.5)));
    let v1 = json!({"input_config": {"loadgen": {"concurrency_ramp_duration": 3,
        "benchmark_duration": 9}}});
    assert_eq!(bench_lines(&v1), (Some(3.0), Some(9.0)));
    assert_eq!(bench_lines(&Value::Null), (None, None));
}

/// New ISL: minus the cached prefix the server reports, else minus the previous turn's ISL.
#[test]
fn new_isl_by_hand() {
    let t = |isl: Option<f64>, cache: Option<f64>| Turn {
        isl,
        cache_read: cache,
        ..Turn::default()
    };
    let s = Session {
        turns: vec![
            t(Some(10.0), None),
            t(Some(25.0), None),
            t(None, None),
            t(Some(40.0), Some(30.0)),
            t(Some(20.0), None),
        ],
        ..Session::default()
    };
    assert_eq!(SwimLane::new_isls(&s), [10.0, 15.0, 0.0, 10.0, 0.0]);
}

fn lane_of(intervals: &[(u64, u64)]) -> SwimLane {
    let text: Vec<String> = intervals
        .iter()
        .enumerate()
        .map(|(i, &(s, e))| line(&format!("s{}", i % 3), "c", i as i64, s, e, ""))
        .collect();
    let sessions = sessions_of(&text.join("\n")).unwrap();
    SwimLane {
        run: "r".into(),
        lanes: lanes(&sessions),
        t0_ns: sessions.iter().map(|s| s.span().0).min().unwrap(),
        sessions,
        ramp_s: None,
        bench_s: None,
    }
}

proptest! {
    /// At every event time, the requests in flight are the records with start ≤ t < end, and
    /// the idle sessions those alive (first start ≤ t < last end) minus them, never below 0;
    /// every lane's sessions never overlap within a slot.
    #[test]
    fn curves_equal_a_brute_force_count(
        iv in proptest::collection::vec((0u64..1_000, 1u64..300), 1..40)
    ) {
        let iv: Vec<(u64, u64)> = iv.into_iter().map(|(s, d)| (s * 1_000_000, (s + d) * 1_000_000)).collect();
        let sl = lane_of(&iv);
        let (active, idle) = sl.concurrency();
        let t0 = sl.t0_ns;
        for &t in &active.ts {
            let ns = t0 + (t * 1e9).round() as u64;
            let brute = iv.iter().filter(|&&(s, e)| s <= ns && ns < e).count() as f64;
            prop_assert_eq!(active.at(t), brute, "t {}", t);
            let alive = sl.sessions.iter().filter(|s| { let (a, b) = s.span(); a <= ns && ns < b }).count() as f64;
            prop_assert_eq!(idle.at(t), (alive - brute).max(0.0));
        }
        let mut by_slot: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
        for l in &sl.lanes {
            by_slot.entry(l.slot).or_default().push(l.span);
        }
        for spans in by_slot.values_mut() {
            spans.sort_unstable();
            for w in spans.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "{:?}", spans);
            }
        }
        // Every request is in exactly one lane member once.
        let drawn: usize = sl.lanes.iter().flat_map(|l| &l.members).map(|m| sl.sessions[m.session].turns.len()).sum();
        prop_assert_eq!(drawn, iv.len());
    }
}
