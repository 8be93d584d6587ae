//! The sweep line against a naive oracle: every curve evaluated point by point (each record's
//! contribution summed directly, O(n) per point) and its time-weighted statistics from the
//! definition (O(n²) over all breakpoints).

use super::*;

/// `v` from `from` on, taken back at `to`: the contribution of one interval at time `t`.
fn bump(from: f64, to: f64, v: f64, t: f64) -> f64 {
    v * (f64::from(u8::from(from <= t)) - f64::from(u8::from(to <= t)))
}

fn naive_prefill_rate(r: &SweepRecord, t: f64) -> f64 {
    match (r.gen_start, r.isl) {
        (Some(g), Some(isl)) if g - r.start > 0.0 => bump(r.start, g, isl / (g - r.start), t),
        _ => 0.0,
    }
}

fn naive_decode_request(r: &SweepRecord, t: f64) -> f64 {
    match (r.gen_start, r.osl) {
        (Some(g), Some(osl)) if r.end - g > 0.0 && osl >= 1.0 => {
            bump(g, r.end, (osl - 1.0) / (r.end - g), t)
        }
        _ => 0.0,
    }
}

fn naive_decode_icl(r: &SweepRecord, t: f64) -> f64 {
    let (Some(g), Some(osl)) = (r.gen_start, r.osl) else {
        return 0.0;
    };
    let k = r.icl.iter().filter(|v| **v > 0.0).count();
    if osl < 1.0 || k == 0 {
        return 0.0;
    }
    let mut sum = 0.0;
    for (i, gap) in r.icl.iter().enumerate() {
        let end = g + r.icl[..=i].iter().sum::<f64>();
        if *gap > 0.0 {
            sum += bump(end - gap, end, (osl - 1.0) / k as f64 / gap, t);
        }
    }
    sum
}

fn naive_in_flight(r: &SweepRecord, t: f64, icl_aware: bool) -> f64 {
    let input = match (r.isl, r.gen_start) {
        (Some(isl), Some(g)) if g > r.start => isl,
        _ => 0.0,
    };
    let mut v = bump(r.start, r.end, input, t);
    let (Some(g), Some(osl)) = (r.gen_start, r.osl) else {
        return v;
    };
    if !icl_aware {
        if r.end - g > 0.0 {
            v += bump(g, r.end, osl, t);
        }
        return v;
    }
    if osl < 1.0 || !r.icl.iter().any(|x| *x >= 0.0) {
        return v;
    }
    v += bump(g, r.end, 1.0, t);
    for (i, gap) in r.icl.iter().enumerate() {
        let at = g + r.icl[..=i].iter().sum::<f64>();
        if *gap >= 0.0 {
            let at = if at >= r.end { r.end.next_down() } else { at };
            v += bump(at, r.end, (osl - 1.0) / r.icl.len() as f64, t);
        }
    }
    v
}

/// Every curve at time `t`, in [`summarize`] order (per-second scale not applied).
fn naive_values(rs: &[SweepRecord], t: f64) -> [f64; 9] {
    let icl_aware = rs.iter().any(|r| !r.icl.is_empty());
    let sum = |f: &dyn Fn(&SweepRecord) -> f64| rs.iter().map(f).sum::<f64>();
    let conc = sum(&|r| bump(r.start, r.end, 1.0, t));
    let dconc = sum(&|r| r.gen_start.map_or(0.0, |g| bump(g, r.end, 1.0, t)));
    let pconc = sum(&|r| r.gen_start.map_or(0.0, |g| bump(r.start, g, 1.0, t)));
    let prefill = sum(&|r| naive_prefill_rate(r, t));
    let decode = if icl_aware {
        sum(&|r| naive_decode_icl(r, t))
    } else {
        sum(&|r| naive_decode_request(r, t))
    };
    let total = prefill + sum(&|r| naive_decode_request(r, t));
    let per = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    [
        conc,
        decode,
        prefill,
        dconc,
        pconc,
        total,
        per(decode, dconc),
        per(prefill, pconc),
        sum(&|r| naive_in_flight(r, t, icl_aware)),
    ]
}

/// Every event time of every record (the curves can change only there).
fn times(rs: &[SweepRecord]) -> Vec<f64> {
    let mut ts = Vec::new();
    for r in rs {
        ts.extend([r.start, r.end, r.end.next_down()]);
        if let Some(g) = r.gen_start {
            ts.push(g);
            let mut at = g;
            for gap in &r.icl {
                at += gap;
                ts.extend([at, at - gap]);
            }
        }
    }
    ts
}

/// `(duration, value)` of every segment of `[from, to]` between consecutive breakpoints.
fn naive_segments(rs: &[SweepRecord], from: f64, to: f64, which: usize) -> Vec<(f64, f64)> {
    let mut b: Vec<f64> = times(rs)
        .into_iter()
        .filter(|t| *t > from && *t < to)
        .collect();
    b.extend([from, to]);
    b.sort_by(f64::total_cmp);
    b.dedup();
    b.windows(2)
        .map(|w| (w[1] - w[0], naive_values(rs, w[0])[which]))
        .filter(|(d, _)| *d > 0.0)
        .collect()
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-6 * scale.max(1e-12)
}

/// Checks fast stats against the naive segments: mean and deviation from the definition,
/// extremes, and each percentile `v` a true time-quantile (the share of time below `v` is at
/// most q and at or below `v` at least q).
fn check(fast: &TimeWeighted, segs: &[(f64, f64)], total: f64, k: f64, what: &str) {
    if segs.is_empty() {
        return;
    }
    let scale = segs.iter().fold(0.0f64, |m, s| m.max(s.1.abs())) * k;
    let avg = segs.iter().map(|(d, v)| d * v).sum::<f64>() / total;
    let var = segs
        .iter()
        .map(|(d, v)| d * (v - avg) * (v - avg))
        .sum::<f64>()
        / total;
    assert!(
        close(fast.avg, avg * k, scale),
        "{what} avg {} vs {}",
        fast.avg,
        avg * k
    );
    assert!(close(fast.std, var.sqrt() * k, scale), "{what} std");
    let min = segs.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
    let max = segs.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
    assert!(
        close(fast.min, min * k, scale),
        "{what} min {} vs {}",
        fast.min,
        min * k
    );
    assert!(
        close(fast.max, max * k, scale),
        "{what} max {} vs {}",
        fast.max,
        max * k
    );
    let covered: f64 = segs.iter().map(|s| s.0).sum();
    for (q, v) in [
        (0.5, fast.p50),
        (0.9, fast.p90),
        (0.95, fast.p95),
        (0.99, fast.p99),
    ] {
        let tol = 1e-6 * scale.max(1e-12);
        let below: f64 = segs.iter().filter(|s| s.1 * k < v - tol).map(|s| s.0).sum();
        let upto: f64 = segs
            .iter()
            .filter(|s| s.1 * k <= v + tol)
            .map(|s| s.0)
            .sum();
        assert!(
            below / covered <= q + 1e-9,
            "{what} p{q}: {below}/{covered} below {v}"
        );
        assert!(
            upto / covered >= q - 1e-9,
            "{what} p{q}: {upto}/{covered} at or below {v}"
        );
    }
}

fn check_all(rs: &[SweepRecord], from: f64, to: f64) {
    let c = curves(rs);
    let results = summarize(&c, from, to);
    let scale = [1.0, 1e9, 1e9, 1.0, 1.0, 1e9, 1e9, 1e9, 1.0];
    for (i, k) in scale.iter().enumerate() {
        let segs = naive_segments(rs, from, to, i);
        check(&results[i].1, &segs, to - from, *k, results[i].0.def().tag);
    }
    // Active variants: only the segments where the mask curve is positive.
    let actives = [(1, 3), (2, 4), (6, 3), (7, 4), (5, 0)];
    for (j, (curve, mask)) in actives.iter().enumerate() {
        let rate = naive_segments(rs, from, to, *curve);
        let on = naive_segments(rs, from, to, *mask);
        // Both lists share the breakpoints, so they align one to one.
        let segs: Vec<(f64, f64)> = rate
            .iter()
            .zip(&on)
            .filter(|(_, m)| m.1 > 1e-9)
            .map(|(r, _)| *r)
            .collect();
        let active: f64 = segs.iter().map(|s| s.0).sum();
        let (id, fast) = &results[9 + j];
        check(fast, &segs, active, 1e9, id.def().tag);
    }
}

fn rec(
    start: f64,
    end: f64,
    gen_start: Option<f64>,
    isl: f64,
    osl: f64,
    icl: &[f64],
) -> SweepRecord {
    SweepRecord {
        start,
        end,
        gen_start,
        isl: Some(isl),
        osl: Some(osl),
        icl: icl.to_vec(),
    }
}

#[test]
fn two_streaming_records_by_hand() {
    // R1: [10, 40), first token 20, chunks at 30 and 40; R2: [30, 50), first token 35, chunk 50.
    let rs = [
        rec(10.0, 40.0, Some(20.0), 100.0, 5.0, &[10.0, 10.0]),
        rec(30.0, 50.0, Some(35.0), 50.0, 3.0, &[15.0]),
    ];
    let r = summarize(&curves(&rs), 0.0, 50.0);
    let get = |id: MetricId| r.iter().find(|x| x.0 == id).map(|x| x.1).unwrap();
    use MetricId as M;
    // Concurrency 0 on [0,10), 1 on [10,30), 2 on [30,40), 1 on [40,50).
    let c = get(M::EffectiveConcurrency);
    assert_eq!(
        (c.avg, c.min, c.max, c.p50, c.p90),
        (1.0, 0.0, 2.0, 1.0, 2.0)
    );
    assert!((c.std - 0.4f64.sqrt()).abs() < 1e-12);
    // Decode (ICL-aware) carries 4 + 2 tokens; prefill 150 tokens; total 150 + 4 + 2.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(
        get(M::EffectiveDecodeThroughput).avg,
        6.0 / 50.0 * 1e9
    ));
    assert!(close(get(M::ActiveDecodeThroughput).avg, 6.0 / 30.0 * 1e9));
    assert!(close(
        get(M::EffectivePrefillThroughput).avg,
        150.0 / 50.0 * 1e9
    ));
    let ap = get(M::ActivePrefillThroughput);
    assert!(close(ap.avg, 10.0 * 1e9) && close(ap.min, 1e10) && close(ap.max, 1e10));
    assert!(close(
        get(M::EffectiveTotalThroughput).avg,
        156.0 / 50.0 * 1e9
    ));
    assert!(close(get(M::ActiveTotalThroughput).avg, 156.0 / 40.0 * 1e9));
    assert!(close(get(M::EffectiveDecodeConcurrency).avg, 35.0 / 50.0));
    assert!(close(get(M::EffectivePrefillConcurrency).avg, 15.0 / 50.0));
    // Per user: 0.2 on [20,35), (0.2 + 2/15)/2 on [35,40), 2/15 on [40,50).
    let per_user = (0.2 * 15.0 + (0.2 + 2.0 / 15.0) / 2.0 * 5.0 + 2.0 / 15.0 * 10.0) / 50.0;
    assert!(close(
        get(M::EffectiveDecodeThroughputPerUser).avg,
        per_user * 1e9
    ));
    assert!(close(get(M::EffectivePrefillThroughputPerUser).avg, 3e9));
    // In flight: 100, 101, 153, 154, (156 for an instant), 51, (53 for an instant), 0.
    let t = get(M::TokensInFlight);
    assert!(close(t.avg, 4055.0 / 50.0), "{}", t.avg);
    assert_eq!((t.min, t.max, t.p50), (0.0, 156.0, 100.0));
    check_all(&rs, 0.0, 50.0);
}

#[test]
fn non_streaming_records_fall_back_to_request_level_and_zero_decode() {
    let rs = [
        SweepRecord {
            start: 0.0,
            end: 10.0,
            gen_start: None,
            isl: Some(5.0),
            osl: Some(4.0),
            icl: vec![],
        },
        SweepRecord {
            start: 5.0,
            end: 20.0,
            ..SweepRecord::default()
        },
    ];
    let r = summarize(&curves(&rs), 0.0, 20.0);
    assert_eq!(r[0].1.avg, 25.0 / 20.0);
    // No first token: no prefill, no decode, nothing in flight but the empty curves' zeros.
    for (id, s) in &r[1..] {
        if !matches!(
            id,
            MetricId::EffectivePrefillConcurrency | MetricId::EffectiveDecodeConcurrency
        ) {
            assert_eq!(*s, TimeWeighted::default(), "{}", id.def().tag);
        }
    }
    // An empty window or no records: all zeros.
    assert_eq!(
        time_weighted(&curves(&rs).concurrency, 3.0, 3.0),
        TimeWeighted::default()
    );
    assert_eq!(
        summarize(&curves(&[]), 0.0, 1.0)[0].1,
        TimeWeighted::default()
    );
}

#[test]
fn request_level_decode_when_no_record_has_chunk_gaps() {
    let rs = [
        rec(0.0, 30.0, Some(10.0), 10.0, 5.0, &[]),
        rec(5.0, 25.0, Some(20.0), 1.0, 1.0, &[]),
    ];
    let c = curves(&rs);
    // (5 − 1) / 20 tokens/ns on [10, 30); the 1-token record decodes nothing.
    assert_eq!(c.decode_throughput.at(15.0), 0.2);
    assert_eq!(c.tokens_in_flight.at(22.0), 10.0 + 5.0 + 1.0 + 1.0);
    check_all(&rs, 0.0, 30.0);
}

fn arb_record() -> impl proptest::strategy::Strategy<Value = SweepRecord> {
    use proptest::prelude::*;
    (
        0u32..60,
        0u32..40,
        proptest::option::of(0u32..30),
        proptest::option::of(0u32..200),
        proptest::option::of(0u32..20),
        proptest::collection::vec(0u32..12, 0..5),
        any::<bool>(),
    )
        .prop_map(|(start, len, ttft, isl, osl, icl, streaming)| {
            let start = f64::from(start);
            let gen_start = ttft.map(|t| start + f64::from(t));
            SweepRecord {
                start,
                end: start + f64::from(len),
                gen_start,
                isl: isl.map(f64::from),
                osl: osl.map(f64::from),
                icl: if streaming && gen_start.is_some() {
                    icl.into_iter().map(f64::from).collect()
                } else {
                    Vec::new()
                },
            }
        })
}

proptest::proptest! {
    /// The sweep line agrees with the naive oracle on random record sets, including records
    /// whose chunks run past their end, zero-length intervals and ties.
    #[test]
    fn qc_sweep_matches_naive(
        rs in proptest::collection::vec(arb_record(), 0..12),
        from in 0u32..20,
        len in 1u32..120,
    ) {
        let from = f64::from(from);
        check_all(&rs, from, from + f64::from(len));
    }
}
