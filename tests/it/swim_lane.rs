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
            assert!(
                (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
                "{at}: {a} against {b}"
            );
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
    let sl = ringperf_plot::plot::swim_lane::load(&Path::new(FIXTURE).join("run"), None).unwrap();
    let ours = sl.payload(Some(3));
    let theirs = read_json(&Path::new(FIXTURE).join("aiperf_payload.json"));
    same(&ours, &theirs, "payload");
}

/// The PNG's width and height from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

/// The viewer's embedded payload.
pub(crate) fn payload_of(html: &str) -> Value {
    let tag = "id=\"swim-lane-data\">";
    let start = html.find(tag).expect("the data element") + tag.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).expect("JSON data")
}

/// A multi-turn run against the mock, then `ringperf analyze swim-lane DIR -c 2 --html`: a PNG
/// and a viewer whose data holds every record once, in its session, at its own times.
#[test]
fn a_multi_turn_run_draws_every_request_once() {
    let server = crate::common::recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--ui", "none", "--streaming"])
        .args([
            "--tokenizer",
            "builtin",
            "--no-server-metrics",
            "--no-gpu-telemetry",
        ])
        .args(["--concurrency", "2", "--conversation-num", "4"])
        .args(["--conversation-turn-mean", "3", "--isl", "8", "--osl", "4"])
        .args([
            "--random-seed",
            "2",
            "--url",
            &format!("http://{}", server.addr),
        ])
        .arg("--artifact-dir")
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["analyze", "swim-lane", "-c", "2", "--html"])
        .arg(&run)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("saved {}", run.join("swim_lane.png").display())),
        "{said}"
    );
    let (w, h) = png_size(&std::fs::read(run.join("swim_lane.png")).unwrap());
    assert_eq!(w, 1800);
    assert!(h >= 600, "{h}");
    let payload = payload_of(&std::fs::read_to_string(run.join("swim_lane.html")).unwrap());
    let records = crate::common::read_jsonl(&run.join("profile_export.jsonl"));
    assert_eq!(records.len(), 12, "4 conversations of 3 turns");
    let t0 = records
        .iter()
        .map(|r| r["metadata"]["request_start_ns"].as_u64().unwrap())
        .min()
        .unwrap();
    let mut drawn = 0;
    for s in payload["sessions"].as_array().unwrap() {
        for (i, t) in s["turns"].as_array().unwrap().iter().enumerate() {
            // The record of this session and turn: its times, seconds from the first start.
            let r = records
                .iter()
                .find(|r| {
                    r["metadata"]["x_correlation_id"] == s["id"] && r["metadata"]["turn_index"] == i
                })
                .expect("a record for each bar");
            let secs = |k: &str| (r["metadata"][k].as_u64().unwrap() - t0) as f64 / 1e9;
            assert!((t[0].as_f64().unwrap() - secs("request_start_ns")).abs() < 6e-5);
            assert!((t[1].as_f64().unwrap() - secs("request_end_ns")).abs() < 6e-5);
            drawn += 1;
        }
    }
    assert_eq!(drawn, records.len());
    assert_eq!(payload["target"], 2);
    // Concurrency 2: two sessions at a time, so two slots and never more than two requests.
    assert_eq!(payload["nSlots"], 2);
    assert!(payload["peakActive"].as_u64().unwrap() <= 2);
}

/// AIPerf's messages and exit codes: no directory or `--out` with several is 2; a directory
/// without records is skipped with its reason, exit 1, the others still drawn.
#[test]
fn bad_arguments_and_missing_runs_as_aiperf() {
    let swim = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(["analyze", "swim-lane"])
            .args(args)
            .output()
            .unwrap()
    };
    let o = swim(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least one run directory is required"));
    let o = swim(&["a", "b", "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out only valid with a single run dir"));
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    std::fs::create_dir(&good).unwrap();
    std::fs::copy(
        Path::new(FIXTURE).join("run/profile_export.jsonl"),
        good.join("profile_export.jsonl"),
    )
    .unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("profile_export.jsonl"), "\n").unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["analyze", "swim-lane"])
        .arg(&empty)
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no valid records in"), "{err}");
    assert!(good.join("swim_lane.png").is_file());
    assert!(!empty.join("swim_lane.png").exists());
}

/// `ringperf plot` of a multi-turn run puts its swim lane in report.html (inline SVG, PNG and
/// SVG files); a run of single-turn sessions gets none.
#[test]
fn the_report_shows_a_multi_turn_runs_swim_lane() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    for f in ["profile_export.jsonl", "profile_export_aiperf.json"] {
        std::fs::copy(Path::new(FIXTURE).join("run").join(f), run.join(f)).unwrap();
    }
    let plot = |d: &Path| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .arg("plot")
            .arg(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(d.join("report.html")).unwrap()
    };
    let html = plot(&run);
    assert!(html.contains("<h2>Sessions: "), "a swim-lane section");
    assert!(html.contains("id=\"chart-swim_lane-0\""));
    let svg = std::fs::read_to_string(run.join("plots/swim_lane-0.svg")).unwrap();
    roxmltree::Document::parse(&svg).expect("the SVG parses");
    png_size(&std::fs::read(run.join("plots/swim_lane-0.png")).unwrap());
    // The same records with each turn made a session of its own: no swim lane.
    let single = dir.path().join("single");
    std::fs::create_dir(&single).unwrap();
    let text = std::fs::read_to_string(run.join("profile_export.jsonl")).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["metadata"]["x_correlation_id"] = Value::from(format!("s{i}"));
            v["metadata"]["turn_index"] = Value::from(0);
            v.to_string()
        })
        .collect();
    std::fs::write(single.join("profile_export.jsonl"), lines.join("\n")).unwrap();
    std::fs::copy(
        run.join("profile_export_aiperf.json"),
        single.join("profile_export_aiperf.json"),
    )
    .unwrap();
    let html = plot(&single);
    assert!(!html.contains("<h2>Sessions: "));
    assert!(!single.join("plots/swim_lane-0.svg").exists());
}
