//! The direct encoder against the `Value` form ([`record_line`] + `serde_json`), byte for byte,
//! on random records and on hand-written lines.

use proptest::prelude::*;

use super::*;
use crate::aggregate::testing::facts;
use crate::aggregate::{MetricConfig, record_metrics};
use ringperf_wire::record::{Phase, RequestError, Usage};

/// The oracle: the `Value` tree serialized by `serde_json`, or `None` for no line.
fn oracle(f: &RecordFacts, m: &RecordMetrics) -> Option<Vec<u8>> {
    record_line(f, m).map(|v| serde_json::to_vec(&v).unwrap())
}

/// The direct encoder's bytes, or `None` for no line; checks that "no line" appends nothing.
fn fast(f: &RecordFacts, m: &RecordMetrics) -> Option<Vec<u8>> {
    let mut out = b"prefix".to_vec();
    let wrote = encode_line(&mut out, f, m).unwrap();
    if !wrote {
        assert_eq!(out, b"prefix", "no line must leave the buffer alone");
        return None;
    }
    Some(out.split_off(6))
}

fn same(f: &RecordFacts, m: &RecordMetrics) -> Result<(), TestCaseError> {
    let want = oracle(f, m);
    let got = fast(f, m);
    prop_assert_eq!(
        got.as_deref().map(String::from_utf8_lossy),
        want.as_deref().map(String::from_utf8_lossy)
    );
    Ok(())
}

/// Text with the characters JSON escaping cares about: controls, quotes, backslashes, DEL,
/// line/paragraph separators and any other scalar value.
fn text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => any::<char>(),
        2 => (0u8..0x20).prop_map(char::from),
        1 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', '\u{2028}', '\u{2029}', 'é', '😀']),
        3 => prop::char::range('a', 'z'),
    ];
    prop::collection::vec(ch, 0..24).prop_map(|v| v.into_iter().collect())
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0),
        -1e6f64..1e6,
        0.0f64..1e12,
        (0u64..1_000_000).prop_map(|n| n as f64 / 1000.0),
    ]
}

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![any::<i64>(), 0i64..10_000_000_000, -1000i64..1000]
}

fn value() -> impl Strategy<Value = MetricValue> {
    prop_oneof![
        int().prop_map(MetricValue::Int),
        float().prop_map(MetricValue::Float),
        prop::collection::vec(int(), 0..8).prop_map(MetricValue::List),
    ]
}

/// Any metrics of the registry (shown or not), in any order, repeats possible.
fn metrics() -> impl Strategy<Value = RecordMetrics> {
    prop::collection::vec((0..REGISTRY.len(), value()), 0..14).prop_map(|v| RecordMetrics {
        values: v.into_iter().map(|(i, x)| (REGISTRY[i].id, x)).collect(),
    })
}

fn error() -> impl Strategy<Value = Option<RequestError>> {
    prop::option::of(
        (prop::option::of(any::<u16>()), text(), text())
            .prop_map(|(code, kind, message)| RequestError::new(code, kind, message)),
    )
}

/// Random facts; only the fields a line shows vary.
fn random_facts() -> impl Strategy<Value = RecordFacts> {
    (
        (
            any::<bool>(),
            any::<u64>(),
            any::<u128>(),
            any::<u128>(),
            text(),
            any::<u32>(),
            any::<u16>(),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            prop::option::of(any::<u64>()),
            any::<u64>(),
            error(),
            any::<bool>(),
            prop_oneof![Just(0u32), any::<u32>()],
            prop::option::of(any::<u32>()),
        ),
    )
        .prop_map(
            |(
                (warmup, session, xr, xc, conv, turn, worker),
                (credit, start, ack, end, error, cancelled, coalesced_reads, tcp_rtt_us),
            )| RecordFacts {
                phase: if warmup {
                    Phase::Warmup
                } else {
                    Phase::Profiling
                },
                session_num: session,
                x_request_id: uuid::Uuid::from_u128(xr),
                x_correlation_id: uuid::Uuid::from_u128(xc),
                conversation_id: conv,
                turn_index: turn,
                worker_id: worker,
                credit_issued_wall_ns: credit,
                request_start_wall_ns: start,
                request_ack_wall_ns: ack,
                request_end_wall_ns: end,
                error: error.map(Box::new),
                was_cancelled: cancelled,
                first_content_chunk_tokens: None,
                receive: ringperf_wire::record::ReceiveFacts {
                    lag_ns: Vec::new(),
                    coalesced_reads,
                    tcp_rtt_us,
                },
                ..facts()
            },
        )
}

/// Plausible request facts, so the metrics come from `record_metrics` itself.
fn computed_facts() -> impl Strategy<Value = RecordFacts> {
    (
        prop::collection::vec(1u64..50_000_000, 0..40),
        prop::option::of(0u64..5000),
        prop::option::of(0u64..5000),
        prop::option::of(0u64..500),
        prop::option::of((0u64..5000, 0u64..5000)),
        prop::option::of(0u64..5000),
        error(),
        random_facts(),
    )
        .prop_map(
            |(gaps, isl, osl, reasoning, usage, requested, error, base)| {
                let start = base.start_ns;
                let stamps: Vec<u64> = gaps
                    .iter()
                    .scan(start, |t, g| {
                        *t += g;
                        Some(*t)
                    })
                    .collect();
                RecordFacts {
                    end_ns: stamps.last().copied().unwrap_or(start) + 10,
                    first_output_stamp_ns: stamps.first().copied(),
                    content_stamps_ns: stamps,
                    input_tokens: isl,
                    output_tokens: osl,
                    reasoning_tokens: reasoning,
                    usage: usage.map(|(p, c)| Usage {
                        prompt_tokens: Some(p),
                        completion_tokens: Some(c),
                        total_tokens: Some(p + c),
                        ..Usage::default()
                    }),
                    requested_osl: requested,
                    scheduled_send_ms: None,
                    error: error.map(Box::new),
                    ..base
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_records_match_the_value_form(f in random_facts(), m in metrics()) {
        same(&f, &m)?;
    }

    #[test]
    fn computed_records_match_the_value_form(
        f in computed_facts(),
        streaming in any::<bool>(),
        server_counts in any::<bool>(),
    ) {
        let m = record_metrics(&MetricConfig::new(streaming, server_counts), &f);
        same(&f, &m)?;
    }

    #[test]
    fn strings_escape_like_serde_json(s in text()) {
        let mut out = Vec::new();
        put_str(&mut out, &s);
        prop_assert_eq!(out, serde_json::to_vec(&s).unwrap());
    }
}

/// A whole line written out by hand: metadata order, optional ack, integer and display-unit
/// values, an ICL list, NaN as null, and an error whose message needs escaping.
#[test]
fn hand_written_line() {
    let f = RecordFacts {
        phase: Phase::Warmup,
        session_num: 3,
        conversation_id: "c\"1".into(),
        turn_index: 2,
        worker_id: 7,
        credit_issued_wall_ns: 10,
        request_start_wall_ns: 20,
        request_ack_wall_ns: Some(25),
        request_end_wall_ns: 30,
        error: Some(Box::new(RequestError::new(
            Some(503),
            "Service Unavailable",
            "line1\nline2\t\u{1}\\é",
        ))),
        was_cancelled: true,
        ..facts()
    };
    let m = RecordMetrics {
        values: vec![
            (MetricId::TimeToFirstToken, MetricValue::Int(1_500_000)),
            (MetricId::OutputSequenceLength, MetricValue::Int(5)),
            (
                MetricId::InterChunkLatency,
                MetricValue::List(vec![2_000, 30_000]),
            ),
            (
                MetricId::OutputTokenThroughputPerUser,
                MetricValue::Float(f64::NAN),
            ),
            (MetricId::RequestCount, MetricValue::Int(1)),
        ],
    };
    let want = concat!(
        r#"{"metadata":{"session_num":3,"#,
        r#""x_request_id":"00000000-0000-0000-0000-000000000001","#,
        r#""x_correlation_id":"00000000-0000-0000-0000-000000000002","#,
        r#""conversation_id":"c\"1","turn_index":2,"credit_issued_ns":10,"#,
        r#""request_start_ns":20,"request_ack_ns":25,"request_end_ns":30,"#,
        r#""worker_id":"worker_7","record_processor_id":"record_processor_0","#,
        r#""benchmark_phase":"warmup","phase_index":0,"phase_name":"warmup","#,
        r#""phase_kind":"warmup","was_cancelled":true,"context_overflow_skip":false,"#,
        r#""agent_depth":0,"root_correlation_id":"00000000-0000-0000-0000-000000000002"},"#,
        r#""metrics":{"#,
        r#""time_to_first_token":{"value":1.5,"unit":"ms"},"#,
        r#""output_sequence_length":{"value":5,"unit":"tokens"},"#,
        r#""inter_chunk_latency":{"value":[0.002,0.03],"unit":"ms"},"#,
        r#""output_token_throughput_per_user":{"value":null,"unit":"tokens/sec/user"}},"#,
        r#""error":{"code":503,"type":"Service Unavailable","#,
        r#""message":"line1\nline2\t\u0001\\é"}}"#,
    );
    assert_eq!(String::from_utf8(fast(&f, &m).unwrap()).unwrap(), want);
    assert_eq!(String::from_utf8(oracle(&f, &m).unwrap()).unwrap(), want);
}

/// A repeated metric keeps its first place and its last value, as a map insert does.
#[test]
fn repeated_metric_keeps_first_place_last_value() {
    let f = facts();
    let m = RecordMetrics {
        values: vec![
            (MetricId::OutputSequenceLength, MetricValue::Int(1)),
            (MetricId::InputSequenceLength, MetricValue::Int(2)),
            (MetricId::OutputSequenceLength, MetricValue::Int(3)),
        ],
    };
    let line = String::from_utf8(fast(&f, &m).unwrap()).unwrap();
    assert!(line.ends_with(
        r#""metrics":{"output_sequence_length":{"value":3,"unit":"tokens"},"input_sequence_length":{"value":2,"unit":"tokens"}}}"#
    ));
    assert_eq!(Some(line.into_bytes()), oracle(&f, &m));
}

/// Only hidden metrics and no error: no line; an error alone: a line with empty metrics.
#[test]
fn no_line_without_metrics_or_error() {
    let f = facts();
    let hidden = RecordMetrics {
        values: vec![(MetricId::RequestCount, MetricValue::Int(1))],
    };
    assert_eq!(fast(&f, &hidden), None);
    assert_eq!(oracle(&f, &hidden), None);
    let err = RecordFacts {
        error: Some(Box::new(RequestError::new(None, "ReadTimeout", ""))),
        ..facts()
    };
    let line = String::from_utf8(fast(&err, &hidden).unwrap()).unwrap();
    assert!(line.ends_with(r#""metrics":{},"error":{"type":"ReadTimeout","message":""}}"#));
}

/// Metric keys are unique (so deduplicating by id is deduplicating by key) and need no escaping.
#[test]
fn registry_tags_are_unique_plain_keys() {
    let mut tags: Vec<&str> = REGISTRY.iter().map(|d| d.tag).collect();
    assert!(tags.iter().all(|t| {
        t.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
    }));
    tags.sort_unstable();
    let n = tags.len();
    tags.dedup();
    assert_eq!(tags.len(), n);
}

/// The writer itself emits the encoded line plus a newline, and counts only lines written.
#[test]
fn writer_emits_encoded_lines() {
    let cfg = MetricConfig::new(true, false);
    let f = facts();
    let m = record_metrics(&cfg, &f);
    let mut w = JsonlWriter::new(Vec::new(), 0);
    w.write(&f, &m).unwrap();
    w.write(&f, &RecordMetrics::default()).unwrap();
    w.write(&f, &m).unwrap();
    assert_eq!(w.lines(), 2);
    let mut want = oracle(&f, &m).unwrap();
    want.push(b'\n');
    let one = want.clone();
    want.extend_from_slice(&one);
    assert_eq!(w.close().unwrap(), want);
}
