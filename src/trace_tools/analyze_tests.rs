//! The analysis against a hand-made trace whose answer is worked out below, and against
//! AIPerf 0.13's own report on 300 rows of the Mooncake trace (tests/data/aiperf-analyze-trace/).

use std::path::{Path, PathBuf};

use super::*;

fn row(isl: u64, osl: u64, ids: &[i64]) -> TraceRow {
    TraceRow {
        input_length: isl,
        output_length: osl,
        hash_ids: ids.to_vec(),
    }
}

/// Block size 4. Rows: [1,2,3], [1,2,5], [7,8], [1,2] and one without blocks.
/// (position, id) pairs seen twice or more: (0,1) and (1,2).
/// Context: 2 shared of 3 → 8; 8; none shared → 0; all shared → the whole 6; no blocks → 0.
/// Hit rates (ids seen before the first new one): 0/3, 2/3, 0/2, 2/2 (the blockless row has none).
/// Leading runs: [1]×3, [1,2]×3, [1,2,3], [1,2,5], [7], [7,8]: 6 distinct, 6 of 10 reused.
/// First blocks: 1 begins three rows, 7 one → one prefix group.
#[test]
fn hand_made_trace() {
    let rows = [
        row(10, 2, &[1, 2, 3]),
        row(12, 4, &[1, 2, 5]),
        row(8, 6, &[7, 8]),
        row(6, 8, &[1, 2]),
        row(3, 0, &[]),
    ];
    let s = analyze(&rows, 4);
    assert_eq!(s.total_requests, 5);
    assert_eq!(s.unique_prefixes, 6);
    assert_eq!(s.num_prefix_groups, 1);
    assert_eq!(s.prefix_reuse_ratio, 0.6);
    assert!((s.cache_hit_rate - 5.0 / 12.0).abs() < 1e-15);
    assert_eq!((s.min_isl, s.max_isl, s.avg_isl), (3, 12, 7.8));
    assert_eq!((s.min_osl, s.max_osl, s.avg_osl), (0, 8, 4.0));
    assert_eq!(
        s.context_length_stats,
        MetricStats::of(&[8.0, 8.0, 0.0, 6.0, 0.0])
    );
    assert_eq!(
        s.unique_prompt_length_stats,
        MetricStats::of(&[2.0, 4.0, 8.0, 0.0, 3.0])
    );
    let hits = s.hit_rate_stats.expect("rows with blocks");
    assert_eq!((hits.min, hits.max), (0.0, 1.0));
    // Sorted 0, 0, 2/3, 1: the median is between 0 and 2/3.
    assert!((hits.median - 1.0 / 3.0).abs() < 1e-15);
}

#[test]
fn a_trace_without_blocks_has_no_hit_rates() {
    let s = analyze(&[row(5, 1, &[]), row(7, 2, &[])], 512);
    assert_eq!(s.hit_rate_stats, None);
    assert_eq!((s.cache_hit_rate, s.unique_prefixes), (0.0, 0));
    assert!(render(&s).contains("N/A"));
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// Every figure of AIPerf's report on the same 300 rows, to the last bit (NumPy's pairwise sums,
/// `statistics.mean`'s exact mean).
#[test]
fn same_report_as_aiperf_on_300_mooncake_rows() {
    let rows = read_rows(&data("mooncake-conversation/first-300.jsonl")).expect("reads");
    let ours = serde_json::to_value(analyze(&rows, 512)).expect("serializes");
    let text = std::fs::read_to_string(data("aiperf-analyze-trace/report.json")).expect("fixture");
    let theirs: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    let (ours, theirs) = (ours.as_object().unwrap(), theirs.as_object().unwrap());
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (key, want) in theirs {
        let got = &ours[key];
        let pairs: Vec<(String, f64, f64)> = match want {
            serde_json::Value::Object(m) => m
                .iter()
                .map(|(k, v)| {
                    (
                        format!("{key}.{k}"),
                        v.as_f64().unwrap(),
                        got[k].as_f64().unwrap(),
                    )
                })
                .collect(),
            v => vec![(key.clone(), v.as_f64().unwrap(), got.as_f64().unwrap())],
        };
        for (name, want, got) in pairs {
            assert_eq!(
                want.to_bits(),
                got.to_bits(),
                "{name}: AIPerf {want}, ours {got}"
            );
        }
    }
}

#[test]
fn bad_rows_name_their_line_and_field() {
    let dir = std::env::temp_dir().join(format!("ringperf-analyze-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.jsonl");
    for (text, want) in [
        (
            "{\"input_length\": 1}\n\n{\"input_length\": -3}\n",
            ":3: field \"input_length\"",
        ),
        (
            "{\"input_length\": 1, \"hash_ids\": [1, \"x\"]}\n",
            ":1: field \"hash_ids\"",
        ),
        ("{\"input_length\": 1}\n[1]\n", ":2: expected a JSON object"),
        ("{\"input_length\": 1\n", ":1: "),
    ] {
        std::fs::write(&path, text).unwrap();
        let e = read_rows(&path).expect_err(text).to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn numbers_are_grouped_by_thousands() {
    assert_eq!(grouped(14233.236), "14,233.24");
    assert_eq!(grouped(120633.0), "120,633.00");
    assert_eq!(grouped(0.1725), "0.17");
    assert_eq!(grouped(-1234.5), "-1,234.50");
    assert_eq!(grouped_int(7814), "7,814");
    assert_eq!(grouped_int(1000), "1,000");
}
