//! A line read back against the record it was written from: the live metrics, the facts that
//! recompute them, and the same line again, byte for byte.

use proptest::prelude::*;

use super::*;
use ringperf_metrics::aggregate::testing::facts;
use ringperf_metrics::aggregate::{MetricConfig, record_metrics};
use ringperf_metrics::export::jsonl::encode_line;
use ringperf_wire::record::HttpTrace;

/// The line the live run writes for `f`, or `None` when it writes none.
fn line_of(cfg: &MetricConfig, f: &RecordFacts) -> Option<(Vec<u8>, RecordMetrics)> {
    let m = record_metrics(cfg, f);
    let mut out = Vec::new();
    encode_line(&mut out, f, &m).unwrap().then_some((out, m))
}

/// The metrics a line gives back for live metrics `m` (module docs): `requested_osl` only
/// beside an OSL-mismatch diff, and 1 when no token came out.
fn expected(m: &RecordMetrics) -> RecordMetrics {
    let mut want = m.clone();
    let diff = m.f64(MetricId::OslMismatchDiffPct);
    let osl = int_of(m, MetricId::OutputSequenceLength);
    want.values
        .retain(|(id, _)| *id != MetricId::RequestedOsl || diff.is_some());
    if osl == Some(0)
        && let Some((_, v)) = want
            .values
            .iter_mut()
            .find(|(id, _)| *id == MetricId::RequestedOsl)
    {
        *v = MetricValue::Int(1);
    }
    want
}

fn check(cfg: &MetricConfig, f: &RecordFacts) -> Result<(), TestCaseError> {
    let Some((line, m)) = line_of(cfg, f) else {
        return Ok(());
    };
    // The live run's clock origin: its monotonic stamps come back as they were.
    let origin = f.request_start_wall_ns - f.start_ns;
    let back = parse_line(&line, origin).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&back.metrics, &expected(&m));
    // The rebuilt facts are enough to compute the same metrics again…
    if f.trace.is_none() {
        prop_assert_eq!(&record_metrics(cfg, &back.facts), &back.metrics);
    }
    // …and to write the same line.
    let mut again = Vec::new();
    encode_line(&mut again, &back.facts, &back.metrics).unwrap();
    prop_assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(&line)
    );
    prop_assert_eq!(
        (
            back.facts.intended_ns,
            back.facts.start_ns,
            back.facts.end_ns
        ),
        (f.intended_ns, f.start_ns, f.end_ns)
    );
    prop_assert_eq!(back.facts.phase, f.phase);
    prop_assert_eq!(&back.facts.error, &f.error);
    Ok(())
}

const W: u64 = 1_750_000_000_000_000_000;

prop_compose! {
    fn usage()(
        prompt in proptest::option::of(0u64..200_000),
        completion in proptest::option::of(0u64..20_000),
        reasoning in proptest::option::of(0u64..2_000),
        cached in proptest::option::of(0u64..100_000),
        total in proptest::option::of(0u64..300_000),
    ) -> Usage {
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            reasoning_tokens: reasoning,
            prompt_cache_read_tokens: cached,
            total_tokens: total,
            ..Usage::default()
        }
    }
}

prop_compose! {
    /// Any record the aggregator could build: stamps up to hours, any token counts.
    fn record()(
        lag_ns in 0u64..50_000_000,
        start_off in 0u64..3_600_000_000_000,
        ttft_ns in 0u64..60_000_000_000,
        gaps in proptest::collection::vec(0u64..2_000_000_000, 0..8),
        tail_ns in 0u64..1_000_000,
        ack_ns in proptest::option::of(0u64..1_000_000_000),
        input in proptest::option::of(0u64..200_000),
        output in proptest::option::of(0u64..20_000),
        reasoning in proptest::option::of(0u64..2_000),
        usage in proptest::option::of(usage()),
        requested in proptest::option::of(0u64..20_000),
        failed in proptest::bool::weighted(0.2),
        code in proptest::option::of(400u16..600),
        warmup in proptest::bool::weighted(0.2),
        worker in 0u16..64,
        cancelled in proptest::bool::ANY,
    ) -> RecordFacts {
        let start = W + start_off;
        let mut stamps = vec![start + ttft_ns];
        for g in gaps {
            stamps.push(stamps.last().unwrap() + g);
        }
        let end = stamps.last().unwrap() + tail_ns;
        RecordFacts {
            phase: if warmup { Phase::Warmup } else { Phase::Profiling },
            session_num: start_off % 1_000,
            x_request_id: uuid::Uuid::from_u128(u128::from(start_off) << 7 | 5),
            x_correlation_id: uuid::Uuid::from_u128(u128::from(ttft_ns) | 1 << 100),
            conversation_id: format!("conv-\"{}\"", start_off % 7),
            turn_index: (ttft_ns % 3) as u32,
            worker_id: worker,
            intended_ns: start - lag_ns,
            start_ns: start,
            head_ns: ack_ns.map(|a| start + a),
            end_ns: end,
            credit_issued_wall_ns: start - lag_ns,
            request_start_wall_ns: start,
            request_ack_wall_ns: ack_ns.map(|a| start + a),
            request_end_wall_ns: end,
            first_output_stamp_ns: stamps.get(usize::from(reasoning.is_some())).copied(),
            content_stamps_ns: if failed { Vec::new() } else { stamps },
            input_tokens: input,
            output_tokens: if failed { None } else { output },
            reasoning_tokens: if failed { None } else { reasoning },
            usage: if failed { None } else { usage },
            requested_osl: requested,
            scheduled_send_ms: None,
            error: failed.then(|| Box::new(RequestError::new(code, "Bad \"thing\"", "it\nfailed"))),
            was_cancelled: cancelled,
            conn_reused: false,
            bytes_sent: 0,
            bytes_received: 0,
            trace: None,
            first_content_chunk_tokens: None,
            receive: Default::default(),
            audio_seconds: None,
            media: Default::default(),
            spec_decode: None,
            prefix_blocks: None,
            lineage: None,
            source: None,
        }
    }
}

fn configs() -> impl Strategy<Value = MetricConfig> {
    (
        proptest::bool::ANY,
        proptest::bool::ANY,
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(streaming, server_counts, goodput)| MetricConfig {
            goodput: if goodput {
                vec![
                    (MetricId::RequestLatency, 5e9),
                    (MetricId::OutputTokenThroughputPerUser, 10.0),
                ]
            } else {
                Vec::new()
            },
            ..MetricConfig::new(streaming, server_counts)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Every record's line gives back its live metrics exactly, facts that recompute them, and
    /// the same bytes when written again.
    #[test]
    fn qc_parse_line_matches_the_live_record(cfg in configs(), f in record()) {
        check(&cfg, &f)?;
    }
}

#[test]
fn streaming_record_round_trips() {
    let cfg = MetricConfig::new(true, false);
    let f = RecordFacts {
        requested_osl: Some(8),
        scheduled_send_ms: None,
        usage: Some(Usage {
            prompt_tokens: Some(110),
            completion_tokens: Some(4),
            ..Usage::default()
        }),
        first_content_chunk_tokens: None,
        receive: ringperf_wire::record::ReceiveFacts {
            lag_ns: vec![7, 9],
            coalesced_reads: 2,
            tcp_rtt_us: Some(41),
        },
        ..facts()
    };
    check(&cfg, &f).unwrap();
    let (line, _) = line_of(&cfg, &f).unwrap();
    let back = parse_line(&line, f.request_start_wall_ns - f.start_ns).unwrap();
    // The coalesced-read count comes back; the per-event lags are not in a line.
    assert_eq!(back.facts.receive.coalesced_reads, 2);
    assert_eq!(back.facts.receive.tcp_rtt_us, Some(41));
    assert!(back.facts.receive.lag_ns.is_empty());
    // The hidden requested OSL comes back from the −37.5 % diff.
    assert_eq!(back.facts.requested_osl, Some(8));
    assert_eq!(
        back.metrics.get(MetricId::RequestedOsl),
        Some(&MetricValue::Int(8))
    );
    // ITL: (15_000 − 10_000) / 4 ns, the live formula's own value.
    assert_eq!(back.metrics.f64(MetricId::InterTokenLatency), Some(1_250.0));
    assert_eq!(back.facts.content_stamps_ns, [11_000, 13_000, 16_000]);
    // Another origin moves every monotonic stamp alike: the dispatch lag stays 100 ns.
    let back = parse_line(&line, 0).unwrap();
    assert_eq!(back.facts.start_ns - back.facts.intended_ns, 100);
    assert_eq!(back.facts.start_ns, f.request_start_wall_ns);
}

#[test]
fn reasoning_and_an_empty_answer_round_trip() {
    let cfg = MetricConfig::new(true, false);
    // Thinking efficiency (hidden) 4 / 5, rebuilt.
    check(
        &cfg,
        &RecordFacts {
            reasoning_tokens: Some(4),
            ..facts()
        },
    )
    .unwrap();
    // No token at all: a −100 % diff whatever was asked; counted as a mismatch all the same.
    let f = RecordFacts {
        output_tokens: Some(0),
        requested_osl: Some(300),
        scheduled_send_ms: None,
        ..facts()
    };
    check(&cfg, &f).unwrap();
    let back = parse_line(&line_of(&cfg, &f).unwrap().0, 0).unwrap();
    assert_eq!(back.facts.requested_osl, Some(1));
}

#[test]
fn error_and_trace_records_round_trip() {
    let cfg = MetricConfig::new(true, false);
    let failed = RecordFacts {
        error: Some(Box::new(RequestError::new(
            None,
            "ReadTimeout",
            "no answer",
        ))),
        ..facts()
    };
    check(&cfg, &failed).unwrap();
    let back = parse_line(&line_of(&cfg, &failed).unwrap().0, 0).unwrap();
    assert_eq!(back.facts.input_tokens, Some(100));
    assert_eq!(back.facts.output_tokens, None);

    // The HTTP trace metrics: ns in ms, bytes in KiB, counts and the reuse flag.
    let traced = RecordFacts {
        trace: Some(HttpTrace {
            request_start_ns: 1_000,
            connect_ns: Some((1_000, 1_777)),
            reused: false,
            send_end_ns: Some(2_003),
            request_bytes: 1_234_567,
            request_chunks: 1,
            response_start_ns: Some(11_000),
            response_end_ns: Some(16_000),
            response_chunks: 3,
            response_bytes: 999,
            local: None,
        }),
        ..facts()
    };
    check(&cfg, &traced).unwrap();
    let back = parse_line(&line_of(&cfg, &traced).unwrap().0, 0).unwrap();
    assert_eq!(
        back.metrics.get(MetricId::HttpReqDataSent),
        Some(&MetricValue::Int(1_234_567))
    );
    assert_eq!(
        back.metrics.get(MetricId::HttpReqConnecting),
        Some(&MetricValue::Int(777))
    );
}

#[test]
fn requested_osl_inverts_the_diff() {
    for osl in 1..400i64 {
        for r in (1..6_000i64).step_by(7) {
            let diff = (osl as f64 - r as f64) / r as f64 * 100.0;
            assert_eq!(requested_osl(osl, diff), Some(r), "osl {osl}, asked {r}");
        }
    }
    assert_eq!(requested_osl(0, -100.0), Some(1));
}

#[test]
fn malformed_lines_say_what_is_wrong() {
    let (line, _) = line_of(&MetricConfig::new(true, false), &facts()).unwrap();
    let text = String::from_utf8(line).unwrap();
    let err = |s: &str| parse_line(s.as_bytes(), 0).unwrap_err().to_string();
    assert!(err(&text[..text.len() / 2]).contains("EOF"), "torn line");
    assert!(err("[]").contains("expected struct"));
    let renamed = text.replace("\"request_latency\"", "\"request_latencyy\"");
    assert!(err(&renamed).contains("`request_latencyy` is not a per-request metric"));
    let unit = text.replacen("\"unit\":\"ms\"", "\"unit\":\"sec\"", 1);
    assert!(
        err(&unit).contains("is in sec, expected ms"),
        "{}",
        err(&unit)
    );
    let phase = text.replace(
        "\"benchmark_phase\":\"profiling\"",
        "\"benchmark_phase\":\"x\"",
    );
    assert!(err(&phase).contains("unknown benchmark_phase `x`"));
    let worker = text.replace("\"worker_0\"", "\"w0\"");
    assert!(err(&worker).contains("worker_id `w0`"));
    let id = text.replacen("00000000-0000-0000-0000-000000000001", "nope", 1);
    assert!(err(&id).contains("x_request_id `nope`"), "{}", err(&id));
}
