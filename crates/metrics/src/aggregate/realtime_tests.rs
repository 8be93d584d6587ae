use super::*;
use crate::aggregate::stats::linear;

/// Deterministic values with ties, for the selection oracle.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) % 97) as f64 * 0.37 + (x >> 60) as f64
        })
        .collect()
}

#[test]
fn qc_percentiles_matches_linear_over_the_sorted_values() {
    let mut scratch = Vec::new();
    for n in [1, 2, 3, 4, 5, 7, 10, 63, 100, 101, 1000, 2049] {
        for seed in 0..5 {
            let v = values(n, seed);
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            for qs in [LATENCY_QS, TOKEN_QS, [0.0, 1.0, 99.9, 100.0]] {
                let want = qs.map(|q| linear(&sorted, q));
                let got = percentiles(&v, qs, &mut scratch).unwrap();
                assert_eq!(
                    got.map(f64::to_bits),
                    want.map(f64::to_bits),
                    "n={n} qs={qs:?}"
                );
            }
        }
    }
    assert_eq!(percentiles(&[], LATENCY_QS, &mut scratch), None);
}

#[test]
fn wide_values_align_in_columns_as_aiperf_lays_them_out() {
    // The figures of the example in AIPerf 0.13's `_render_realtime_block`.
    let mut f = Figures {
        done: 641,
        ok: 641,
        err: 0,
        request_throughput: Some(13.1),
        input_token_throughput: Some(1_097_271.0),
        output_token_throughput: Some(10_441.0),
        ttft_ms: Some([30.0, 48.0, 106.0, 155.0]),
        itl_ms: Some([5.0, 5.0, 5.0, 5.0]),
        e2e_ms: Some([2_241.0, 4_853.0, 13_526.0, 22_003.0]),
        interactivity: Some([200.0, 201.0, 211.0, 254.0]),
        isl: Some([67_234.0, 97_141.0, 179_564.0, 384_325.0]),
        osl: Some([443.0, 967.0, 2_034.0, 4_396.0]),
        total_isl: Some(53_555_186.0),
        total_osl: Some(509_605.0),
        theoretical_prefix_cache_hit: None,
        srv: Vec::new(),
    };
    let want = "\
[realtime 00:49 profiling]
  rps=14.2 (avg 13.1)  tput_in=1,097,271/s  tput_out=10,441/s  done=641 ok=641 err=0
  ttft    p50=   30ms  p75=   48ms  p95=   106ms  p99=   155ms
  itl     p50=    5ms  p75=    5ms  p95=     5ms  p99=     5ms
  e2e     p50=2,241ms  p75=4,853ms  p95=13,526ms  p99=22,003ms
  intvty  p50=    200  p75=    201  p95=     211  p99=     254  (1/tpot tok/s)
  isl     p50= 67,234  p75= 97,141  p90= 179,564  p99= 384,325  (tokens)
  osl     p50=    443  p75=    967  p90=   2,034  p99=   4,396  (tokens)
  tot     in=53,555,186  out=509,605";
    // 71 records in the last 5 s.
    assert_eq!(render(&f, 49.9, Some((570, 44.9))), want);
    // An agent trace's theoretical hit rate and the server's snapshot: one row each, the label
    // padded to the column and one space, as AIPerf's code writes them.
    f.theoretical_prefix_cache_hit = Some(97.46);
    f.srv = vec![
        ("prefix_cache_hit_rate", 91.25),
        ("unique_input_tokens_srv", 4_689_250.5),
        ("kv_cache_usage_pct", 43.21),
        ("num_running", 7.9),
        ("input_token_throughput_srv", 1_096_000.4),
        ("output_token_throughput_srv", 10_400.6),
    ];
    let rows = format!(
        "{want}\n  trace  theoretical_prefix_cache_hit=97.5%\n  srv    prefix_cache_hit=91.2% \
         unique_in_srv=4,689,250 kv_usage=43.2% queue=7r/0w tput_in_srv=1,096,000/s \
         tput_out_srv=10,401/s"
    );
    assert_eq!(render(&f, 49.9, Some((570, 44.9))), rows);
}

#[test]
fn missing_figures_print_dashes_and_rows_without_values_are_left_out() {
    let f = Figures {
        done: 3,
        ok: 0,
        err: 3,
        ..Figures::default()
    };
    let want = "\
[realtime 1:01:05 profiling]
  rps=- (avg -)  tput_in=-/s  tput_out=-/s  done=3 ok=0 err=3
  ttft    p50=-  p75=-  p95=-  p99=-
  itl     p50=-  p75=-  p95=-  p99=-
  e2e     p50=-  p75=-  p95=-  p99=-
  intvty  p50=-  p75=-  p95=-  p99=-  (1/tpot tok/s)";
    assert_eq!(render(&f, 3665.9, None), want);
    // Same instant as the previous block: no rate.
    assert!(render(&f, 10.0, Some((1, 10.0))).contains("rps=0.0 (avg -)"));
    assert_eq!(render(&Figures::default(), 1.0, None), "");
    // Below a millisecond, Python's rounding of halves to even, widths per column.
    let f = Figures {
        done: 1,
        ok: 1,
        ttft_ms: Some([0.4, 0.999, 1.5, 2.5]),
        ..Figures::default()
    };
    let got = render(&f, 0.0, None);
    assert!(
        got.contains("ttft    p50=<1ms  p75=<1ms  p95=2ms  p99=2ms"),
        "{got}"
    );
}

/// One record of the fixture (AIPerf's display units).
#[derive(serde::Deserialize)]
struct FixtureRecord {
    request_start_ns: u64,
    request_end_ns: u64,
    error: bool,
    time_to_first_token: Option<f64>,
    inter_token_latency: Option<f64>,
    request_latency: Option<f64>,
    output_token_throughput_per_user: Option<f64>,
    input_sequence_length: Option<f64>,
    output_sequence_length: Option<f64>,
}

#[derive(serde::Deserialize)]
struct FixtureBlock {
    elapsed_s: f64,
    figures_records: usize,
    lines: Vec<String>,
}

/// The figures of AIPerf's first `n` records, computed as [`crate::aggregate::Accumulator`]
/// computes them from its columns.
fn fixture_figures(records: &[FixtureRecord], n: usize, scratch: &mut Vec<f64>) -> Figures {
    let rs = &records[..n];
    let col = |get: fn(&FixtureRecord) -> Option<f64>| -> Vec<f64> {
        rs.iter().filter(|r| !r.error).filter_map(get).collect()
    };
    let ok = rs.iter().filter(|r| !r.error).count() as u64;
    let start = rs.iter().map(|r| r.request_start_ns).min().unwrap();
    let end = rs.iter().map(|r| r.request_end_ns).max().unwrap();
    let secs = (end - start) as f64 / 1e9;
    let isl: f64 = col(|r| r.input_sequence_length).iter().sum();
    let osl: f64 = col(|r| r.output_sequence_length).iter().sum();
    let mut pct = |get, qs| percentiles(&col(get), qs, scratch);
    Figures {
        done: n as u64,
        ok,
        err: n as u64 - ok,
        request_throughput: Some(ok as f64 / secs),
        input_token_throughput: Some(isl / secs),
        output_token_throughput: Some(osl / secs),
        ttft_ms: pct(|r| r.time_to_first_token, LATENCY_QS),
        itl_ms: pct(|r| r.inter_token_latency, LATENCY_QS),
        e2e_ms: pct(|r| r.request_latency, LATENCY_QS),
        interactivity: pct(|r| r.output_token_throughput_per_user, LATENCY_QS),
        isl: pct(|r| r.input_sequence_length, TOKEN_QS),
        osl: pct(|r| r.output_sequence_length, TOKEN_QS),
        total_isl: Some(isl),
        total_osl: Some(osl),
        ..Figures::default()
    }
}

/// `(done, ok, err)` of a block's summary row.
fn counts(summary: &str) -> (u64, u64, u64) {
    let n = |key: &str| {
        let at = summary.find(key).unwrap() + key.len();
        summary[at..]
            .split(' ')
            .next()
            .unwrap()
            .replace(',', "")
            .parse()
            .unwrap()
    };
    (n("done="), n("ok="), n("err="))
}

/// The rate of a summary row (`rps=R`), and the row without it.
fn split_rate(summary: &str) -> (f64, String) {
    let at = summary.find("rps=").unwrap() + 4;
    let end = at + summary[at..].find(' ').unwrap();
    (
        summary[at..end].parse().unwrap(),
        format!("{}{}", &summary[..at], &summary[end..]),
    )
}

#[test]
fn blocks_of_aiperf_own_run_are_rendered_from_its_records() {
    // tests/data/aiperf-realtime-block/README.md: AIPerf 0.13's blocks of a 400-request run
    // against ringperf's mock, and that run's per-record values.
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/aiperf-realtime-block"
    );
    let records: Vec<FixtureRecord> = std::fs::read_to_string(format!("{dir}/records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let blocks: Vec<FixtureBlock> =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/blocks.json")).unwrap())
            .unwrap();
    assert_eq!(records.len(), 400);
    assert_eq!(blocks.len(), 14);
    let mut scratch = Vec::new();
    let mut prev: Option<(u64, f64)> = None;
    for b in &blocks {
        let mut f = fixture_figures(&records, b.figures_records, &mut scratch);
        // The counts AIPerf printed (its counter may lag its accumulator by a record).
        (f.done, f.ok, f.err) = counts(&b.lines[1]);
        let got = render(&f, b.elapsed_s, prev);
        let got: Vec<&str> = got.lines().collect();
        assert_eq!(got.len(), b.lines.len(), "{got:#?}");
        for (i, (g, w)) in got.iter().zip(&b.lines).enumerate() {
            if i == 1 {
                // The rate since the last block: its instants are known to the log's
                // millisecond only.
                let ((gr, g), (wr, w)) = (split_rate(g), split_rate(w));
                assert!((gr - wr).abs() <= 0.1 + 1e-9, "{gr} vs {wr}");
                assert_eq!(g, w);
            } else {
                assert_eq!(g, w);
            }
        }
        prev = Some((f.done, b.elapsed_s));
    }
}

#[test]
fn the_final_figures_match_aiperf_export() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/aiperf-realtime-block"
    );
    let records: Vec<FixtureRecord> = std::fs::read_to_string(format!("{dir}/records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let fin: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}/final.json")).unwrap())
            .unwrap();
    let f = fixture_figures(&records, records.len(), &mut Vec::new());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    let stat = |tag: &str, key: &str| fin[tag][key].as_f64().unwrap();
    for (tag, got, keys) in [
        (
            "time_to_first_token",
            f.ttft_ms,
            ["p50", "p75", "p95", "p99"],
        ),
        (
            "inter_token_latency",
            f.itl_ms,
            ["p50", "p75", "p95", "p99"],
        ),
        ("request_latency", f.e2e_ms, ["p50", "p75", "p95", "p99"]),
        (
            "output_token_throughput_per_user",
            f.interactivity,
            ["p50", "p75", "p95", "p99"],
        ),
        ("input_sequence_length", f.isl, ["p50", "p75", "p90", "p99"]),
        (
            "output_sequence_length",
            f.osl,
            ["p50", "p75", "p90", "p99"],
        ),
    ] {
        let got = got.unwrap();
        for (g, k) in got.iter().zip(keys) {
            assert!(
                close(*g, stat(tag, k)),
                "{tag} {k}: {g} vs {}",
                stat(tag, k)
            );
        }
    }
    // The final rates are over the phase's window (from its start), the block's over the
    // records' own span (AIPerf's realtime summary has no window): not compared.
    assert_eq!(f.total_isl, Some(stat("total_isl", "avg")));
    assert_eq!(f.total_osl, Some(stat("total_osl", "avg")));
}
