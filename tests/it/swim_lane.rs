//! `ringperf analyze swim-lane` (docs/plots.md): the lanes and curves of a run, checked against
//! AIPerf 0.13's own swim lane of the same records (tests/data/aiperf-swim-lane/README.md) and
//! against the records of a multi-turn run against the mock.

use std::path::Path;

use serde_json::Value;

use crate::common::read_json;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aiperf-swim-lane");

/// Numbers equal to within 1e-9 (relative), everything else equal; paths in the message.
fn same(ours: &Value, theirs: &Value, at: &str) {
    match (ours, theirs) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0), "{at}: {a} against {b}");
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{at}: lengths");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                same(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            let keys = |m: &serde_json::Map<String, Value>| m.keys().cloned().collect::<Vec<_>>();
            let (mut ka, mut kb) = (keys(a), keys(b));
            ka.sort();
            kb.sort();
            assert_eq!(ka, kb, "{at}: keys");
            for (k, v) in a {
                same(v, &b[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(ours, theirs, "{at}"),
    }
}

/// AIPerf's records (6 conversations of 1–5 turns at concurrency 3) give AIPerf's payload:
/// the same sessions in the same slots and rows, the same turns and gaps, the same curves.
#[test]
fn the_payload_of_aiperfs_records_is_aiperfs() {
    let sl = ringperf::plot::swim_lane::load(&Path::new(FIXTURE).join("run"), None).unwrap();
    let ours = sl.payload(Some(3));
    let theirs = read_json(&Path::new(FIXTURE).join("aiperf_payload.json"));
    same(&ours, &theirs, "payload");
}
