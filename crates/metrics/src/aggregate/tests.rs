//! Accumulator tests on small hand-built runs; every expectation is computed by hand.

use super::testing::facts;
use super::*;
use ringperf_wire::record::{RecordFacts, RequestError, Usage};

const W: u64 = 1_700_000_000_000_000_000;

/// Record 1: start 1_000, content 11_000/13_000/16_000, ISL 100, OSL 5, wall start W+100.
/// Record 2: start 2_000, content 22_000/32_000, ISL 200, OSL 3, wall start W+1_000.
/// Record 3: error 500, ISL 50.
pub(crate) fn three_records() -> Vec<RecordFacts> {
    let r1 = RecordFacts {
        request_start_wall_ns: W + 100,
        ..facts()
    };
    let r2 = RecordFacts {
        session_num: 1,
        intended_ns: 1_500,
        start_ns: 2_000,
        content_stamps_ns: vec![22_000, 32_000],
        first_output_stamp_ns: Some(22_000),
        input_tokens: Some(200),
        output_tokens: Some(3),
        request_start_wall_ns: W + 1_000,
        ..facts()
    };
    let r3 = RecordFacts {
        session_num: 2,
        content_stamps_ns: vec![],
        input_tokens: Some(50),
        output_tokens: None,
        error: Some(Box::new(RequestError::new(
            Some(500),
            "Internal Server Error",
            "boom",
        ))),
        ..facts()
    };
    vec![r1, r2, r3]
}

fn run(cfg: &MetricConfig, records: &[RecordFacts]) -> Summary {
    let mut acc = Accumulator::new(cfg.clone());
    for f in records {
        acc.add(f, &record_metrics(cfg, f));
    }
    acc.finish()
}

fn dist(s: &Summary, tag: &str) -> Stats {
    match &s.get(tag).unwrap_or_else(|| panic!("missing {tag}")).value {
        ResultValue::Dist(d) => d.clone(),
        other => panic!("{tag} is not a distribution: {other:?}"),
    }
}

#[test]
fn counts_duration_and_throughputs() {
    let s = run(&MetricConfig::new(true, false), &three_records());
    assert_eq!(s.value(MetricId::RequestCount), Some(2.0));
    assert_eq!(s.value(MetricId::ErrorRequestCount), Some(1.0));
    assert_eq!(s.value(MetricId::CompletedRequestCount), Some(3.0));
    assert_eq!(s.value(MetricId::RequestErrorRate), Some(100.0 / 3.0));
    // min start W+100; max end max(W+100+15_000, W+1_000+30_000) = W+31_000 → 30_900 ns.
    assert_eq!(s.value(MetricId::BenchmarkDuration), Some(30_900.0));
    let secs = 30_900e-9;
    assert_eq!(s.value(MetricId::RequestThroughput), Some(2.0 / secs));
    assert_eq!(s.value(MetricId::TotalOsl), Some(8.0));
    assert_eq!(s.value(MetricId::TotalIsl), Some(300.0));
    assert_eq!(s.value(MetricId::TotalOutputTokens), Some(8.0));
    assert_eq!(s.value(MetricId::TotalErrorIsl), Some(50.0));
    assert_eq!(s.value(MetricId::OutputTokenThroughput), Some(8.0 / secs));
    assert_eq!(s.value(MetricId::InputTokenThroughput), Some(300.0 / secs));
    assert_eq!(s.value(MetricId::TotalTokenThroughput), Some(308.0 / secs));
    assert!(s.value(MetricId::TotalReasoningTokens).is_none());
    assert!(s.value(MetricId::UsageDiscrepancyCount).is_none());
    assert_eq!(s.error_summary.len(), 1);
    assert_eq!(s.error_summary[0].count, 1);
    assert_eq!(s.error_summary[0].code, Some(500));
}

#[test]
fn distributions_and_error_adjusted() {
    let s = run(&MetricConfig::new(true, false), &three_records());
    let ttft = dist(&s, "time_to_first_token");
    assert_eq!(
        (ttft.avg, ttft.min, ttft.max, ttft.count),
        (15_000.0, 10_000.0, 20_000.0, 2)
    );
    // ITL: (15_000−10_000)/4 = 1_250 and (30_000−20_000)/2 = 5_000.
    let itl = dist(&s, "inter_token_latency");
    assert_eq!((itl.min, itl.max), (1_250.0, 5_000.0));
    // ICL flattens [2_000, 3_000] and [10_000].
    let icl = dist(&s, "inter_chunk_latency");
    assert_eq!((icl.count, icl.sum, icl.pct[4]), (3, 15_000.0, 3_000.0));
    let err_isl = dist(&s, "error_isl");
    assert_eq!((err_isl.count, err_isl.avg), (1, 50.0));
    // adj_ttft = [10_000, 20_000, inf]: nearest p50 idx 1, p99 idx 1.98 → 2.
    let adj = dist(&s, "adj_time_to_first_token");
    assert_eq!(adj.count, 3);
    assert_eq!(adj.percentile("p50"), Some(20_000.0));
    assert_eq!(adj.percentile("p99"), Some(f64::INFINITY));
    assert_eq!(adj.std, None);
    assert_eq!(
        s.get("adj_time_to_first_token").unwrap().header(),
        "Time to First Token (error-adjusted)"
    );
    assert!(s.get("adj_request_latency").is_some());
    assert!(s.get("adj_time_to_second_token").is_none());
    // Dispatch lag: 100, 500, 100 ns.
    let lag = s.dispatch_lag.clone().unwrap();
    assert_eq!((lag.p50_ns, lag.max_ns, lag.count), (100.0, 500.0, 3));
    assert!((lag.p99_ns - 492.0).abs() < 1e-9);
}

#[test]
fn non_streaming_run_has_no_streaming_results() {
    let mut recs = three_records();
    recs.truncate(2);
    let s = run(&MetricConfig::new(false, false), &recs);
    for tag in [
        "time_to_first_token",
        "inter_token_latency",
        "inter_chunk_latency",
    ] {
        assert!(s.get(tag).is_none(), "{tag}");
    }
    assert!(s.get("request_latency").is_some());
    assert!(s.get("adj_request_latency").is_none(), "no errors, no adj_");
}

#[test]
fn usage_discrepancy_threshold_is_strict() {
    let with_usage = |prompt: u64| RecordFacts {
        usage: Some(Usage {
            prompt_tokens: Some(prompt),
            ..Usage::default()
        }),
        ..facts()
    };
    // ISL 100: 110 → exactly 10 % (not counted), 111 → 11 % (counted), 95 → 5 %.
    let recs = [with_usage(110), with_usage(111), with_usage(95)];
    let s = run(&MetricConfig::new(true, false), &recs);
    assert_eq!(s.value(MetricId::UsageDiscrepancyCount), Some(1.0));
    assert_eq!(s.value(MetricId::TotalUsagePromptTokens), Some(316.0));
    let s = run(&MetricConfig::new(true, true), &recs);
    assert!(s.value(MetricId::UsageDiscrepancyCount).is_none());
}

#[test]
fn osl_mismatch_threshold_is_min_of_pct_and_tokens() {
    let rec = |osl: u64, req: u64| RecordFacts {
        output_tokens: Some(osl),
        requested_osl: Some(req),
        ..facts()
    };
    // req 100: limit min(5, 50) = 5 → diff 5 no, diff 6 yes.
    // req 2000: limit min(100, 50) = 50 → diff 50 no, diff 60 yes.
    let recs = [rec(95, 100), rec(94, 100), rec(1950, 2000), rec(1940, 2000)];
    let s = run(&MetricConfig::new(true, false), &recs);
    assert_eq!(s.value(MetricId::OslMismatchCount), Some(2.0));
    let pct = dist(&s, "osl_mismatch_diff_pct");
    assert_eq!(pct.min, -6.0);
}

#[test]
fn error_summary_groups_and_sorts() {
    let err = |code, msg: &str| RecordFacts {
        error: Some(Box::new(RequestError::new(code, "E", msg))),
        ..facts()
    };
    let recs = [
        err(Some(500), "a"),
        err(None, "b"),
        err(None, "b"),
        err(Some(500), "a"),
        err(None, "b"),
    ];
    let s = run(&MetricConfig::new(true, false), &recs);
    let got: Vec<_> = s
        .error_summary
        .iter()
        .map(|e| (e.code, e.message.as_str(), e.count))
        .collect();
    assert_eq!(got, vec![(None, "b", 3), (Some(500), "a", 2)]);
    assert!(s.value(MetricId::RequestCount).is_none());
    assert!(s.value(MetricId::BenchmarkDuration).is_none());
    assert_eq!(s.value(MetricId::RequestErrorRate), Some(100.0));
    assert!(
        s.get("adj_request_latency").is_none(),
        "no base values, no adj_"
    );
}

/// A valid streaming record: TTFT and latency in whole ms, `osl` output tokens, wall start W.
fn timed(session: u64, ttft_ms: u64, latency_ms: u64, osl: u64) -> RecordFacts {
    RecordFacts {
        session_num: session,
        start_ns: 1_000,
        content_stamps_ns: vec![1_000 + ttft_ms * 1_000_000, 1_000 + latency_ms * 1_000_000],
        first_output_stamp_ns: Some(1_000 + ttft_ms * 1_000_000),
        output_tokens: Some(osl),
        request_start_wall_ns: W,
        ..facts()
    }
}

/// Six records, hand-computed (ITL = (latency − TTFT) / (OSL − 1)):
/// A: TTFT 40, latency 100, OSL 5 → ITL 15 ms; B: TTFT 50, latency 200, OSL 11 → ITL 15 ms;
/// C: TTFT 100, latency 250, OSL 6 → ITL 30 ms; D: TTFT 20, latency 300, OSL 2 → ITL 280 ms;
/// E: an error; F: valid but without any content (no latency at all).
fn slo_run() -> Vec<RecordFacts> {
    let mut e = timed(4, 1, 2, 1);
    e.content_stamps_ns.clear();
    e.error = Some(Box::new(RequestError::new(
        Some(500),
        "Internal Server Error",
        "boom",
    )));
    let mut f = timed(5, 1, 2, 1);
    f.content_stamps_ns.clear();
    f.first_output_stamp_ns = None;
    vec![
        timed(0, 40, 100, 5),
        timed(1, 50, 200, 11),
        timed(2, 100, 250, 6),
        timed(3, 20, 300, 2),
        e,
        f,
    ]
}

fn with_slos(slos: &[(MetricId, f64)]) -> MetricConfig {
    MetricConfig {
        goodput: slos.to_vec(),
        ..MetricConfig::new(true, false)
    }
}

fn good_flags(cfg: &MetricConfig) -> Vec<Option<i64>> {
    slo_run()
        .iter()
        .map(
            |f| match record_metrics(cfg, f).get(MetricId::GoodRequestCount) {
                Some(MetricValue::Int(v)) => Some(*v),
                None => None,
                other => panic!("{other:?}"),
            },
        )
        .collect()
}

#[test]
fn goodput_counts_hand_computed() {
    use MetricId as M;
    const MS: f64 = 1e6;
    // Latency at or under 250 ms: A, B and C (exactly 250); D is over, F has no latency, E
    // is an error and gets no per-record value at all.
    let cfg = with_slos(&[(M::RequestLatency, 250.0 * MS)]);
    assert_eq!(
        good_flags(&cfg),
        vec![Some(1), Some(1), Some(1), Some(0), None, Some(0)]
    );
    let s = run(&cfg, &slo_run());
    assert_eq!(s.value(M::GoodRequestCount), Some(3.0));
    // Duration: every valid request starts at W, the last response is at W + 300 ms.
    assert_eq!(s.value(M::BenchmarkDuration), Some(300.0 * MS));
    assert_eq!(s.value(M::Goodput), Some(3.0 / 0.3));
    // 3 good of 6 attempted (5 valid + 1 error).
    assert_eq!(s.value(M::GoodRequestFraction), Some(0.5));

    // Every SLO must hold: ITL at or under 15 ms leaves A and B.
    let cfg = with_slos(&[
        (M::RequestLatency, 250.0 * MS),
        (M::InterTokenLatency, 15.0 * MS),
    ]);
    let s = run(&cfg, &slo_run());
    assert_eq!(s.value(M::GoodRequestCount), Some(2.0));
    assert_eq!(s.value(M::GoodRequestFraction), Some(2.0 / 6.0));

    // Larger is better for OSL (at or over 5): A only (B's TTFT 50 > 45, D's OSL 2 < 5).
    let cfg = with_slos(&[
        (M::TimeToFirstToken, 45.0 * MS),
        (M::OutputSequenceLength, 5.0),
    ]);
    assert_eq!(
        good_flags(&cfg),
        vec![Some(1), Some(0), Some(0), Some(0), None, Some(0)]
    );
    assert_eq!(run(&cfg, &slo_run()).value(M::GoodRequestCount), Some(1.0));

    // Nobody good: the count is 0 and goodput 0, not absent.
    let cfg = with_slos(&[(M::RequestLatency, 1.0 * MS)]);
    let s = run(&cfg, &slo_run());
    assert_eq!(s.value(M::GoodRequestCount), Some(0.0));
    assert_eq!(s.value(M::Goodput), Some(0.0));
    assert_eq!(s.value(M::GoodRequestFraction), Some(0.0));

    // Without --goodput none of the three exists, per record or in the summary.
    let cfg = MetricConfig::new(true, false);
    assert_eq!(good_flags(&cfg), vec![None; 6]);
    let s = run(&cfg, &slo_run());
    for id in [M::GoodRequestCount, M::Goodput, M::GoodRequestFraction] {
        assert!(s.result(id).is_none(), "{}", id.def().tag);
    }
}

#[test]
fn goodput_fraction_of_an_all_error_run() {
    let mut e = timed(0, 1, 2, 1);
    e.error = Some(Box::new(RequestError::new(
        Some(500),
        "Internal Server Error",
        "boom",
    )));
    let cfg = with_slos(&[(MetricId::RequestLatency, 1e9)]);
    let s = run(&cfg, &[e]);
    // No valid record: no count, no goodput; the fraction is 0 over 1 attempt.
    assert!(s.result(MetricId::GoodRequestCount).is_none());
    assert!(s.result(MetricId::Goodput).is_none());
    assert_eq!(s.value(MetricId::GoodRequestFraction), Some(0.0));
}

/// Two streaming records in a phase that started at wall `W` (times below are ns after `W`):
/// R1 credit 5, sent 10, content 20/30/40, ends 40, ISL 100, OSL 5, usage 100 prompt / 40 cached;
/// R2 credit 28, sent 30, content 35/50, ends 50, ISL 50, OSL 3, usage 50 prompt / 10 cached.
fn two_overlapping() -> Vec<RecordFacts> {
    let rec = |credit: u64, start: u64, stamps: Vec<u64>, isl: u64, osl: u64, cached: u64| {
        let end = *stamps.last().unwrap_or(&start);
        RecordFacts {
            intended_ns: start,
            start_ns: start,
            credit_issued_wall_ns: W + credit,
            request_start_wall_ns: W + start,
            request_end_wall_ns: W + end,
            end_ns: end,
            first_output_stamp_ns: stamps.first().copied(),
            content_stamps_ns: stamps,
            input_tokens: Some(isl),
            output_tokens: Some(osl),
            usage: Some(Usage {
                prompt_tokens: Some(isl),
                prompt_cache_read_tokens: Some(cached),
                ..Usage::default()
            }),
            ..facts()
        }
    };
    vec![
        rec(5, 10, vec![20, 30, 40], 100, 5, 40),
        rec(28, 30, vec![35, 50], 50, 3, 10),
    ]
}

#[test]
fn sweep_credit_and_cache_metrics_by_hand() {
    let cfg = MetricConfig::new(true, false);
    let mut acc = Accumulator::new(cfg.clone());
    for f in two_overlapping() {
        acc.add(&f, &record_metrics(&cfg, &f));
    }
    let s = acc.finish_from(Some(W));
    let tw = |tag: &str| match &s.get(tag).unwrap_or_else(|| panic!("missing {tag}")).value {
        ResultValue::TimeWeighted(t) => *t,
        other => panic!("{tag}: {other:?}"),
    };
    // Window [W, W + 50]: concurrency 0 on [0,10), 1 on [10,30), 2 on [30,40), 1 on [40,50).
    let c = tw("effective_concurrency");
    assert_eq!(
        (c.avg, c.min, c.max, c.p50, c.p99),
        (1.0, 0.0, 2.0, 1.0, 2.0)
    );
    // 6 decoded tokens (OSL − 1 each) over 50 ns; over the 30 ns something decodes.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(
        tw("effective_decode_throughput").avg,
        6.0 / 50.0 * 1e9
    ));
    assert!(close(tw("active_decode_throughput").avg, 6.0 / 30.0 * 1e9));
    assert!(close(
        tw("effective_prefill_throughput").avg,
        150.0 / 50.0 * 1e9
    ));
    assert!(close(
        tw("effective_total_throughput").avg,
        156.0 / 50.0 * 1e9
    ));
    assert!(close(tw("active_total_throughput").avg, 156.0 / 40.0 * 1e9));
    assert!(close(tw("tokens_in_flight").avg, 4055.0 / 50.0));
    // Without the phase start the window is the records' own span [10, 50].
    let own = acc
        .finish()
        .get("effective_concurrency")
        .map(MetricResult::avg);
    assert_eq!(own, Some(50.0 / 40.0));
    // Credit to start: 5 and 2 ns; effective latency: 35 and 22 ns.
    let c2s = dist(&s, "credit_to_start_latency");
    assert_eq!((c2s.avg, c2s.min, c2s.max, c2s.count), (3.5, 2.0, 5.0, 2));
    let eff = dist(&s, "effective_latency");
    assert_eq!(
        (eff.avg, eff.min, eff.max, eff.sum),
        (28.5, 22.0, 35.0, 57.0)
    );
    // Prompt cache: 40 + 10 of 100 + 50 prompt tokens.
    assert_eq!(
        s.value(MetricId::TotalUsagePromptCacheReadTokens),
        Some(50.0)
    );
    assert!(close(
        s.value(MetricId::OverallUsagePromptCacheReadPct).unwrap(),
        100.0 / 3.0
    ));
    assert_eq!(dist(&s, "usage_prompt_cache_read_tokens").avg, 25.0);
    // The JSON shape of a sweep metric: AIPerf's SweepLineStats fields only.
    let j = crate::export::json::metric_json(s.get("effective_concurrency").unwrap());
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "unit", "avg", "p50", "p90", "p95", "p99", "min", "max", "std"
        ]
    );
    assert_eq!(j["unit"], "requests");
}

/// Fixed-schedule records sent `lag_ms` after their trace timestamp `ts_ms` (wall stamps small
/// enough to be exact in an f64).
fn scheduled(ts_ms: u64, lag_ms: u64) -> RecordFacts {
    RecordFacts {
        scheduled_send_ms: Some(ts_ms as f64),
        request_start_wall_ns: 5_000_000_000 + (ts_ms + lag_ms) * 1_000_000,
        ..facts()
    }
}

#[test]
fn replay_schedule_lag_is_anchored_at_the_least_late_request() {
    let cfg = MetricConfig {
        fixed_schedule: true,
        ..MetricConfig::new(true, false)
    };
    // Lags 2, 0, 5, 1, 600 ms: anchored at 0 and sorted, [0, 1, 2, 5, 600]. An error record
    // and a turn without a timestamp (sent after its predecessor's answer) do not count.
    let mut records: Vec<RecordFacts> = [(0, 2), (100, 0), (200, 5), (300, 1), (400, 600)]
        .into_iter()
        .map(|(ts, lag)| scheduled(ts, lag))
        .collect();
    records.push(RecordFacts {
        error: Some(Box::new(RequestError::new(
            Some(500),
            "Internal Server Error",
            "x",
        ))),
        ..scheduled(500, 9_000)
    });
    records.push(facts());
    let s = run(&cfg, &records);
    let v = |tag: &str| s.get(tag).unwrap_or_else(|| panic!("{tag}")).avg();
    // Linear percentiles at index q/100 · 4: 2 → 2; 3.6 → 5 + 0.6·595; 3.96 → 5 + 0.96·595.
    assert_eq!(v("replay_sched_lag_p50"), 2.0);
    assert!((v("replay_sched_lag_p90") - 362.0).abs() < 1e-9);
    assert!((v("replay_sched_lag_p99") - 576.2).abs() < 1e-9);
    assert_eq!(v("replay_sched_degraded"), 1.0, "p99 over 500 ms");
    assert_eq!(
        s.get("replay_sched_lag_p50").unwrap().def.shown_unit(),
        Unit::Milliseconds
    );

    // Under the threshold: not degraded.
    let s = run(&cfg, &records[..4]);
    assert_eq!(s.get("replay_sched_degraded").unwrap().avg(), 0.0);
    // Not a fixed schedule: no such metric.
    let s = run(&MetricConfig::new(true, false), &records);
    assert!(s.get("replay_sched_lag_p50").is_none());
    assert!(s.get("replay_sched_degraded").is_none());
}

#[test]
fn endpoints_without_tokens_report_zero_output_tokens_while_the_client_counts() {
    let cfg = MetricConfig {
        produces_tokens: false,
        ..MetricConfig::new(false, false)
    };
    let embedding = RecordFacts {
        content_stamps_ns: vec![16_000],
        output_tokens: Some(0),
        ..facts()
    };
    let s = run(&cfg, &[embedding.clone(), embedding.clone()]);
    let osl = dist(&s, "output_sequence_length");
    assert_eq!((osl.count, osl.max), (2, 0.0));
    // The token metrics that no dependency needs stay out.
    for tag in ["output_token_count", "total_osl", "output_token_throughput"] {
        assert!(s.get(tag).is_none(), "{tag}");
    }
    // Server counts: the usage differences (and so their dependency) are off.
    let server = MetricConfig {
        use_server_token_count: true,
        ..cfg
    };
    assert!(
        run(&server, &[embedding])
            .get("output_sequence_length")
            .is_none()
    );
}

/// The servers' wordings of a prompt over the model's context, and messages that are not.
#[test]
fn context_overflow_messages_are_recognised_in_any_case() {
    use super::accumulator::is_context_overflow;
    for m in [
        // vLLM's 400.
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
        // OpenAI's error code, inside its JSON body.
        r#"{"error":{"message":"...","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        // Anthropic.
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Input exceeds the model's Context Length",
    ] {
        assert!(is_context_overflow(m), "{m}");
    }
    for m in [
        "Internal Server Error",
        "rate limit exceeded",
        "",
        "context window full",
    ] {
        assert!(!is_context_overflow(m), "{m}");
    }
}
