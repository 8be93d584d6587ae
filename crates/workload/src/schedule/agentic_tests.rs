//! Trajectories of AIPerf's own Weka fixtures, against the instants, turns and offsets AIPerf
//! 0.13's trajectory source gives for them.

use std::path::Path;

use ringperf_wire::endpoint::{EndpointKind, PayloadParams};

use super::*;
use crate::workload::Tokenizer;
use crate::workload::loader::WekaParams;
use crate::workload::loader::weka::load;
use crate::workload::prepared::prepare;
use ringperf_wire::conversation::Sampling;

fn weka(file: &str) -> Prepared {
    let tok = Tokenizer::builtin();
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/weka/traces"
    ))
    .join(file);
    let d = load(&path, &WekaParams::default(), &tok, 1).expect("the fixture loads");
    prepare(d, EndpointKind::Chat, &PayloadParams::default(), &tok)
}

fn picker(d: &Prepared) -> TemplatePicker {
    TemplatePicker::with_sampling(d.root_count(), 0, Sampling::Sequential)
}

fn at(r: f64) -> StartRange {
    StartRange { min: r, max: r }
}

/// `one_subagent.json`: root turns at 0 s and 6 s, a subagent spawned by the first at 2 s that
/// ends at 5 s and is joined by the second.
#[test]
fn a_quarter_in_the_subagent_is_alive_and_the_root_waits_for_it() {
    let d = weka("one_subagent.json");
    let t = build(&d, &mut picker(&d), 1, at(0.25), 7).unwrap();
    assert_eq!(t.draws, 1);
    let lane = &t.lanes[0];
    // The tree spans 0..6000 ms: a quarter in is 1500 ms.
    assert_eq!(lane.t_star_ms, Some(1500.0));
    let child = d.conversations[0].branches()[0].children[0];
    assert_eq!(
        lane.streams,
        [
            Stream {
                conversation: 0,
                next: 1,
                offset_ms: 4500.0,
                waiting: true,
                branch: None,
            },
            Stream {
                conversation: child,
                next: 0,
                offset_ms: 500.0,
                waiting: false,
                branch: Some(0),
            },
        ]
    );
    // Warmup sends the root's first turn (the subagent had sent nothing by t*); profiling sends
    // the subagent 500 ms in (at once in a burst), the root when it has finished.
    assert_eq!(warm_schedule(&d, &t.lanes, false, None), [(0, 0, 0.0)]);
    assert_eq!(profile_offsets(lane, false, None), [None, Some(500.0)]);
    assert_eq!(profile_offsets(lane, true, None), [None, Some(0.0)]);
    // A 0.2 s idle cap moves the lane's first request to 200 ms.
    assert_eq!(
        profile_offsets(lane, false, Some(200.0)),
        [None, Some(200.0)]
    );
}

#[test]
fn half_way_the_subagent_is_done_and_the_root_goes_at_its_time() {
    let d = weka("one_subagent.json");
    let t = build(&d, &mut picker(&d), 1, at(0.5), 7).unwrap();
    let lane = &t.lanes[0];
    assert_eq!(lane.t_star_ms, Some(3000.0));
    assert_eq!(
        lane.streams,
        [Stream {
            conversation: 0,
            next: 1,
            offset_ms: 3000.0,
            waiting: false,
            branch: None,
        }],
        "the subagent's only call (2 s) is before t*"
    );
    assert_eq!(profile_offsets(lane, false, None), [Some(3000.0)]);
}

/// At the end of the span the root resumes at its last turn; a concurrency over the traces is
/// refused when the run would repeat them and may not.
#[test]
fn the_last_instant_resumes_the_last_turn_and_a_wrap_is_refused_as_aiperf_refuses() {
    let d = weka("one_subagent.json");
    // t* = 6000 ms: the root's last turn is at it (sent in profiling).
    let t = build(&d, &mut picker(&d), 1, at(1.0), 7).unwrap();
    assert_eq!(t.lanes[0].streams[0].next, 1);
    assert_eq!(
        check_wrap(
            1,
            2,
            &Bounds {
                duration: true,
                ..Bounds::default()
            }
        ),
        Err(TrajectoryError::Wrap {
            concurrency: 2,
            pool: 1
        })
    );
    assert!(check_wrap(1, 2, &Bounds::default()).is_ok(), "one pass");
    let sessions = Bounds {
        sessions: Some(1),
        duration: true,
        ..Bounds::default()
    };
    assert!(check_wrap(1, 2, &sessions).is_ok(), "sessions fit the pool");
    let allowed = Bounds {
        duration: true,
        wrap_allowed: true,
        ..Bounds::default()
    };
    assert!(check_wrap(1, 2, &allowed).is_ok());
}

/// Lanes on one trace draw their own instants (the lane is in the seed): the draws are NumPy's
/// for AIPerf's derived seed.
#[test]
fn each_lane_draws_its_own_instant_as_aiperf_does() {
    let d = weka("one_subagent.json");
    let t = build(&d, &mut picker(&d), 3, StartRange::default(), 7).unwrap();
    assert_eq!(t.lanes.len(), 3);
    assert_eq!(t.draws, 3, "the sampler wraps over the one trace");
    let want: Vec<f64> = (0..3)
        .map(|lane| {
            let seed = aiperf_derive(7, &format!("trace_sa:{lane}"));
            NpRandom::new(seed).uniform(1500.0, 4500.0)
        })
        .collect();
    let got: Vec<f64> = t.lanes.iter().map(|l| l.t_star_ms.unwrap()).collect();
    assert_eq!(got, want);
    assert!(got[0] != got[1] && got[1] != got[2]);
}

/// Spread warmup: every lane reaches its t* at the same moment, so the request furthest before
/// its t* goes first.
#[test]
fn spread_warmup_lines_every_lane_up_on_its_t_star() {
    let d = weka("one_subagent.json");
    let mut t = build(&d, &mut picker(&d), 2, at(0.25), 7).unwrap();
    // Lane 1 resumed half way: its warm turn (0 ms) is 3000 ms before its t*.
    t.lanes[1] = snapshot(&d, 0, 3000.0).unwrap();
    assert_eq!(
        warm_schedule(&d, &t.lanes, false, None),
        [(0, 0, 1500.0), (1, 0, 0.0)]
    );
    assert_eq!(
        warm_schedule(&d, &t.lanes, true, None),
        [(0, 0, 0.0), (1, 0, 0.0)]
    );
    // Leads capped at 1 s: both are 1000 ms before t*.
    assert_eq!(
        warm_schedule(&d, &t.lanes, false, Some(1000.0)),
        [(0, 0, 0.0), (1, 0, 0.0)]
    );
}
