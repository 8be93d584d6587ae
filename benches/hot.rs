//! Criterion benches of every hot routine, on real captures from a vLLM server
//! (`benches/data/`, copied from `reference/fixtures/`).
//!
//! Each bench checks its answer against an independent computation before it is timed, and sets
//! a throughput so criterion reports bytes/s or elements/s next to the time.
//!
//! The Prometheus text parser (`prom`) is benched on a vLLM `/metrics` page captured under load
//! (`tests/data/`), the page the scraper parses every 333 ms per endpoint.

use std::borrow::Cow;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use ringperf_metrics::aggregate::{MetricConfig, MetricId, MetricValue, Stats, record_metrics};
use ringperf_metrics::export::jsonl::{encode_line, record_line};
use ringperf_wire::endpoint::{EndpointKind, ParsedResponse, parse_record};
use ringperf_wire::http::{BodyDecoder, BodyKind, Status, parse_head};
use ringperf_wire::record::ring::{Doorbell, ring, ring_with_bell};
use ringperf_wire::record::{Event, EventForm, Phase, RawRecord, RecordFacts, Usage};
use ringperf_wire::sse::Framer;

// `cargo bench --features mimalloc`: the same benches on mimalloc (docs/why-crates.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Response head of a real streaming vLLM chat response (CRLF, ends with the blank line).
const STREAM_HEAD: &[u8] = include_bytes!("data/vllm-cpu-chat-stream.headers.txt");
/// Body of that response: 19 SSE messages, the last `data: [DONE]`.
const STREAM_SSE: &[u8] = include_bytes!("data/vllm-cpu-chat-stream.sse.txt");
/// Response head of a real non-streaming vLLM chat response.
const NONSTREAM_HEAD: &[u8] = include_bytes!("data/vllm-cpu-chat-nonstream.headers.txt");
/// Body of that response.
const NONSTREAM_JSON: &[u8] = include_bytes!("data/vllm-cpu-chat-nonstream.json");

/// SSE messages in [`STREAM_SSE`], counted by hand: 19 `data:` lines, one per message.
const STREAM_MESSAGES: usize = 19;

/// The stream's body as uvicorn sends it: one chunk per SSE message, then the last chunk.
fn chunked_stream() -> Vec<u8> {
    let mut out = Vec::with_capacity(STREAM_SSE.len() + 16 * STREAM_MESSAGES);
    for msg in split_messages(STREAM_SSE) {
        out.extend_from_slice(format!("{:x}\r\n", msg.len()).as_bytes());
        out.extend_from_slice(msg);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Splits an SSE body into messages, each with its `\n\n` terminator (a naive twin of the
/// framer, written independently for the assertions).
fn split_messages(body: &[u8]) -> Vec<&[u8]> {
    let text = std::str::from_utf8(body).unwrap_or("");
    text.split_inclusive("\n\n").map(str::as_bytes).collect()
}

/// The concatenated `delta.content` of every chunk, computed with serde_json (independent of
/// the endpoint parser).
fn expected_output_text() -> String {
    let mut text = String::new();
    for msg in split_messages(STREAM_SSE) {
        let line = std::str::from_utf8(msg).unwrap_or("").trim();
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(data) else {
            continue;
        };
        if let Some(c) = v["choices"][0]["delta"]["content"].as_str() {
            text.push_str(c);
        }
    }
    text
}

/// A successful record as a worker would hand it over: realistic ids, stamps and byte counts
/// (the JSONL encoder writes them all).
fn record(body: Vec<u8>, events: Vec<Event>, is_sse: bool) -> RawRecord {
    let id = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
    let mut r = ringperf_wire::record::testing::record(body, events, is_sse);
    r.credit.index = 7;
    r.credit.intended_ns = 1;
    r.request_id = id;
    r.correlation_id = id;
    r.start_ns = 10;
    r.head_ns = Some(20);
    r.conn_reused = true;
    r.bytes_sent = 100;
    r.bytes_received = 5_000;
    r
}

/// Parses the response head in `wire` and decodes its body into `body`; whether the body
/// ended (`None`: a bad head or body).
fn decode_body(wire: &[u8], body: &mut Vec<u8>) -> Option<bool> {
    let Ok(Status::Complete(head)) = parse_head(wire) else {
        return None;
    };
    let mut decoder = BodyDecoder::new(BodyKind::from_head(&head, false));
    let rest = wire.get(head.head_len..).unwrap_or(&[]);
    decoder.feed(rest, body).ok().map(|feed| feed.done)
}

/// What the worker does with the bytes of one response: head, chunked body, SSE framing,
/// one [`Event`] per message. Returns the number of events.
fn worker_path(wire: &[u8], body: &mut Vec<u8>, events: &mut Vec<Event>) -> usize {
    body.clear();
    events.clear();
    let Some(done) = decode_body(wire, body) else {
        return 0;
    };
    let mut framer = Framer::new();
    while let Some(r) = framer.next_message(body) {
        events.push(Event {
            stamp_ns: 5,
            start: r.start as u32,
            end: r.end as u32,
            lag_ns: None,
            form: EventForm::Raw,
        });
    }
    if done {
        while let Some(r) = framer.finish(body) {
            events.push(Event {
                stamp_ns: 5,
                start: r.start as u32,
                end: r.end as u32,
                lag_ns: None,
                form: EventForm::Raw,
            });
        }
    }
    events.len()
}

/// [`worker_path`] with compact records: each message's delta is extracted by the chat
/// compactor into `text` (a declined message is copied raw) and the raw bytes are dropped.
fn worker_path_compact(
    wire: &[u8],
    body: &mut Vec<u8>,
    text: &mut Vec<u8>,
    events: &mut Vec<Event>,
) -> usize {
    body.clear();
    text.clear();
    events.clear();
    let Some(extract) = EndpointKind::Chat.descriptor().compact else {
        return 0;
    };
    let Some(done) = decode_body(wire, body) else {
        return 0;
    };
    let mut framer = Framer::new();
    let mut push = |r: std::ops::Range<usize>, body: &[u8], events: &mut Vec<Event>| {
        let message = body.get(r).unwrap_or(&[]);
        let start = text.len();
        let form = extract(message, text).unwrap_or_else(|| {
            text.truncate(start);
            text.extend_from_slice(message);
            EventForm::Kept
        });
        events.push(Event {
            stamp_ns: 5,
            start: start as u32,
            end: text.len() as u32,
            lag_ns: None,
            form,
        });
    };
    while let Some(r) = framer.next_message(body) {
        push(r, body, events);
    }
    if done {
        while let Some(r) = framer.finish(body) {
            push(r, body, events);
        }
    }
    framer.compact(body);
    events.len()
}

fn bench_http_head(c: &mut Criterion) {
    let mut g = c.benchmark_group("http_head");
    for (name, head, sse, chunked) in [
        ("vllm_stream", STREAM_HEAD, true, true),
        ("vllm_nonstream", NONSTREAM_HEAD, false, false),
    ] {
        match parse_head(head) {
            Ok(Status::Complete(h)) => {
                assert_eq!(h.status, 200);
                assert_eq!(h.head_len, head.len());
                assert_eq!(h.event_stream, sse);
                assert_eq!(h.chunked, chunked);
                assert!(h.keep_alive);
                if !chunked {
                    assert_eq!(h.content_length, Some(NONSTREAM_JSON.len() as u64));
                }
            }
            other => panic!("{name}: head did not parse: {other:?}"),
        }
        g.throughput(Throughput::Bytes(head.len() as u64));
        g.bench_function(name, |b| b.iter(|| parse_head(black_box(head))));
    }
    g.finish();
}

fn bench_chunked(c: &mut Criterion) {
    let wire = chunked_stream();
    let mut out = Vec::with_capacity(STREAM_SSE.len());
    let feed = BodyDecoder::new(BodyKind::Chunked)
        .feed(&wire, &mut out)
        .expect("chunked body decodes");
    assert!(feed.done);
    assert_eq!(feed.consumed, wire.len());
    assert_eq!(out, STREAM_SSE);

    let mut g = c.benchmark_group("chunked_decode");
    g.throughput(Throughput::Bytes(wire.len() as u64));
    g.bench_function("vllm_stream_one_chunk_per_event", |b| {
        b.iter(|| {
            out.clear();
            let mut d = BodyDecoder::new(BodyKind::Chunked);
            d.feed(black_box(&wire), &mut out)
        })
    });
    g.finish();
}

fn bench_sse(c: &mut Criterion) {
    let expected: Vec<usize> = split_messages(STREAM_SSE)
        .iter()
        .scan(0usize, |at, m| {
            let start = *at;
            *at += m.len();
            Some(start)
        })
        .collect();
    let mut framer = Framer::new();
    let mut starts = Vec::new();
    while let Some(r) = framer.next_message(STREAM_SSE) {
        starts.push(r.start);
    }
    assert_eq!(starts.len(), STREAM_MESSAGES);
    assert_eq!(starts, expected);

    let mut g = c.benchmark_group("sse_framing");
    g.throughput(Throughput::Bytes(STREAM_SSE.len() as u64));
    g.bench_function("vllm_chat_stream", |b| {
        b.iter(|| {
            let mut f = Framer::new();
            let mut n = 0usize;
            while let Some(r) = f.next_message(black_box(STREAM_SSE)) {
                n += r.end - r.start;
            }
            n
        })
    });
    g.finish();
}

fn bench_worker_path(c: &mut Criterion) {
    let mut wire = STREAM_HEAD.to_vec();
    wire.extend_from_slice(&chunked_stream());
    let mut body = Vec::with_capacity(STREAM_SSE.len());
    let mut events = Vec::with_capacity(64);
    assert_eq!(worker_path(&wire, &mut body, &mut events), STREAM_MESSAGES);
    assert_eq!(body, STREAM_SSE);

    let mut g = c.benchmark_group("worker_path");
    g.throughput(Throughput::Elements(STREAM_MESSAGES as u64));
    g.bench_function("head_chunked_sse_per_event", |b| {
        b.iter(|| worker_path(black_box(&wire), &mut body, &mut events))
    });
    let mut text = Vec::with_capacity(1024);
    assert_eq!(
        worker_path_compact(&wire, &mut body, &mut text, &mut events),
        STREAM_MESSAGES
    );
    // Only the usage chunk is kept raw.
    let kept = events.iter().filter(|e| e.form == EventForm::Kept).count();
    assert_eq!(kept, 1);
    g.bench_function("head_chunked_sse_compact_per_event", |b| {
        b.iter(|| worker_path_compact(black_box(&wire), &mut body, &mut text, &mut events))
    });
    g.finish();
}

fn bench_parse_record(c: &mut Criterion) {
    let events: Vec<Event> = {
        let mut f = Framer::new();
        let mut v = Vec::new();
        let mut stamp = 100;
        while let Some(r) = f.next_message(STREAM_SSE) {
            v.push(Event {
                stamp_ns: stamp,
                start: r.start as u32,
                end: r.end as u32,
                lag_ns: None,
                form: EventForm::Raw,
            });
            stamp += 1_000;
        }
        v
    };
    let stream = record(STREAM_SSE.to_vec(), events, true);
    let mut out = ParsedResponse::default();
    parse_record(EndpointKind::Chat, &stream, &mut out);
    assert!(out.error.is_none(), "{:?}", out.error);
    let text = expected_output_text();
    assert!(!text.is_empty());
    assert_eq!(out.output_text, text);
    let usage = out.usage.clone().expect("the last chunk carries usage");
    assert_eq!(usage.prompt_tokens, Some(22));
    assert_eq!(usage.completion_tokens, Some(16));

    let nonstream = record(
        NONSTREAM_JSON.to_vec(),
        vec![Event {
            stamp_ns: 100,
            start: 0,
            end: NONSTREAM_JSON.len() as u32,
            lag_ns: None,
            form: EventForm::Raw,
        }],
        false,
    );
    let v: serde_json::Value = serde_json::from_slice(NONSTREAM_JSON).expect("the capture is JSON");
    let mut out2 = ParsedResponse::default();
    parse_record(EndpointKind::Chat, &nonstream, &mut out2);
    assert!(out2.error.is_none(), "{:?}", out2.error);
    assert_eq!(
        out2.output_text,
        v["choices"][0]["message"]["content"].as_str().unwrap_or("")
    );
    assert_eq!(out2.content_responses(), 1);

    // The same stream as the worker now records it: compact events, the raw body dropped.
    let compact = {
        let mut wire = STREAM_HEAD.to_vec();
        wire.extend_from_slice(&chunked_stream());
        let (mut body, mut text, mut events) = (Vec::new(), Vec::new(), Vec::new());
        worker_path_compact(&wire, &mut body, &mut text, &mut events);
        for (e, raw) in events.iter_mut().zip(&stream.events) {
            e.stamp_ns = raw.stamp_ns;
        }
        let mut r = record(Vec::new(), events, true);
        r.text = text;
        r
    };
    let mut out3 = ParsedResponse::default();
    parse_record(EndpointKind::Chat, &compact, &mut out3);
    assert_eq!(out3, out, "a compact record parses as the raw one");

    let mut g = c.benchmark_group("parse_record");
    g.throughput(Throughput::Elements(STREAM_MESSAGES as u64));
    g.bench_function("vllm_chat_stream_per_event", |b| {
        b.iter(|| parse_record(EndpointKind::Chat, black_box(&stream), &mut out))
    });
    g.bench_function("vllm_chat_stream_compact_per_event", |b| {
        b.iter(|| parse_record(EndpointKind::Chat, black_box(&compact), &mut out3))
    });
    g.throughput(Throughput::Bytes(NONSTREAM_JSON.len() as u64));
    g.bench_function("vllm_chat_nonstream", |b| {
        b.iter(|| parse_record(EndpointKind::Chat, black_box(&nonstream), &mut out2))
    });
    g.finish();
}

/// The fields the chat parser reads from one response object, as a plain serde shape that both
/// sonic-rs and simd-json decode (the production `endpoint::wire::Body` is crate-private).
#[derive(serde::Deserialize)]
struct ChatObject<'a> {
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<ChatChoice<'a>>,
    #[serde(default)]
    usage: Option<ChatUsage>,
}

#[derive(serde::Deserialize)]
struct ChatChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<ChatMessage<'a>>,
    #[serde(default, borrow)]
    message: Option<ChatMessage<'a>>,
}

#[derive(serde::Deserialize)]
struct ChatMessage<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// What the aggregator extracts from a response: the output text and the usage counts.
#[derive(Debug, Default, PartialEq)]
struct ChatAnswer {
    text: String,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl ChatAnswer {
    fn add(&mut self, obj: &ChatObject<'_>) {
        if let Some(u) = &obj.usage {
            self.prompt_tokens = u.prompt_tokens;
            self.completion_tokens = u.completion_tokens;
        }
        let Some(choice) = obj.choices.first() else {
            return;
        };
        let data = match obj.object.as_deref() {
            Some("chat.completion") => choice.message.as_ref(),
            Some("chat.completion.chunk") => choice.delta.as_ref(),
            _ => None,
        };
        if let Some(content) = data.and_then(|d| d.content.as_deref()) {
            self.text.push_str(content);
        }
    }
}

/// The JSON payload of every `data:` message of the stream capture (`[DONE]` left out).
fn stream_payloads() -> Vec<&'static [u8]> {
    split_messages(STREAM_SSE)
        .into_iter()
        .filter_map(|m| m.strip_prefix(b"data: "))
        .map(|m| m.trim_ascii_end())
        .filter(|m| *m != b"[DONE]")
        .collect()
}

/// sonic-rs from the immutable body, as `endpoint::kinds::chat::parse` does.
fn answer_sonic(payloads: &[&[u8]], out: &mut ChatAnswer) {
    out.text.clear();
    for p in payloads {
        if let Ok(obj) = sonic_rs::from_slice::<ChatObject<'_>>(p) {
            out.add(&obj);
        }
    }
}

/// simd-json parses in place, so each payload is first copied into a reused scratch buffer (the
/// record's body stays intact for the raw exports); its parse buffers are reused too.
fn answer_simd(
    payloads: &[&[u8]],
    scratch: &mut Vec<u8>,
    buffers: &mut simd_json::Buffers,
    out: &mut ChatAnswer,
) {
    out.text.clear();
    for p in payloads {
        scratch.clear();
        scratch.extend_from_slice(p);
        if let Ok(obj) =
            simd_json::serde::from_slice_with_buffers::<ChatObject<'_>>(scratch, buffers)
        {
            out.add(&obj);
        }
    }
}

fn bench_response_parse(c: &mut Criterion) {
    let stream = stream_payloads();
    assert_eq!(stream.len(), STREAM_MESSAGES - 1);
    let nonstream: Vec<&[u8]> = vec![NONSTREAM_JSON.trim_ascii_end()];
    let v: serde_json::Value = serde_json::from_slice(NONSTREAM_JSON).expect("the capture is JSON");
    let expected = [
        (
            "vllm_chat_stream",
            &stream,
            ChatAnswer {
                text: expected_output_text(),
                prompt_tokens: Some(22),
                completion_tokens: Some(16),
            },
        ),
        (
            "vllm_chat_nonstream",
            &nonstream,
            ChatAnswer {
                text: v["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                prompt_tokens: v["usage"]["prompt_tokens"].as_u64(),
                completion_tokens: v["usage"]["completion_tokens"].as_u64(),
            },
        ),
    ];
    let mut scratch = Vec::new();
    let mut buffers = simd_json::Buffers::default();
    let mut g = c.benchmark_group("response_parse");
    for (name, payloads, want) in expected {
        assert!(!want.text.is_empty());
        let mut sonic = ChatAnswer::default();
        answer_sonic(payloads, &mut sonic);
        assert_eq!(sonic, want, "{name}: sonic-rs");
        let mut simd = ChatAnswer::default();
        answer_simd(payloads, &mut scratch, &mut buffers, &mut simd);
        assert_eq!(simd, want, "{name}: simd-json");
        let bytes: usize = payloads.iter().map(|p| p.len()).sum();
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(format!("{name}/sonic_rs"), |b| {
            b.iter(|| answer_sonic(black_box(payloads), &mut sonic))
        });
        g.bench_function(format!("{name}/simd_json"), |b| {
            b.iter(|| answer_simd(black_box(payloads), &mut scratch, &mut buffers, &mut simd))
        });
    }
    g.finish();
}

fn bench_ring(c: &mut Criterion) {
    let (tx, rx) = ring(1024);
    let rec = Box::new(record(STREAM_SSE.to_vec(), Vec::new(), true));
    let id = rec.request_id;
    assert!(tx.try_push(rec).is_ok());
    let held = rx.pop().expect("the pushed record comes back");
    assert_eq!(held.request_id, id);
    assert_eq!(held.body, STREAM_SSE);
    assert!(rx.pop().is_none());

    let mut slot = Some(held);
    let mut g = c.benchmark_group("ring");
    g.throughput(Throughput::Elements(1));
    g.bench_function("push_pop_one_record", |b| {
        b.iter(|| {
            if let Some(r) = slot.take() {
                slot = match tx.try_push(black_box(r)) {
                    Ok(()) => rx.pop(),
                    Err(back) => Some(back),
                };
            }
        })
    });
    // The same with the aggregator's doorbell (the consumer awake, as in a busy run): each push
    // pays the check whether the consumer sleeps, never a wake. The two side by side, one run:
    // the busy path's cost of the idle aggregator's sleep.
    let bell = Doorbell::new();
    let (btx, brx) = ring_with_bell(1024, u64::MAX, Some(bell.clone()));
    g.bench_function("push_pop_one_record_with_doorbell", |b| {
        b.iter(|| {
            if let Some(r) = slot.take() {
                slot = match btx.try_push(black_box(r)) {
                    Ok(()) => brx.pop(),
                    Err(back) => Some(back),
                };
            }
        })
    });
    g.finish();
    assert_eq!(bell.wakes(), 0, "nobody slept: no wake");
    let held = slot.expect("the record survives the bench");
    assert_eq!(held.request_id, id);
}

fn bench_stats(c: &mut Criterion) {
    // 0..=100_000 in a scrambled order: the NumPy-linear percentile q of these is exactly
    // q * 1000, the mean 50_000.
    const N: u64 = 100_001;
    let values: Vec<f64> = (0..N).map(|i| ((i * 7_919) % N) as f64).collect();
    let s = Stats::compute(&values).expect("non-empty");
    assert_eq!(s.count, N);
    assert_eq!(s.min, 0.0);
    assert_eq!(s.max, 100_000.0);
    assert_eq!(s.avg, 50_000.0);
    assert_eq!(
        s.pct,
        [1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0].map(|q| q * 1_000.0)
    );

    let mut g = c.benchmark_group("stats");
    g.throughput(Throughput::Elements(N));
    g.bench_function("compute_100k", |b| {
        b.iter(|| Stats::compute(black_box(&values)))
    });
    g.finish();
}

/// A streaming profiling record with 101 content responses (so a 100-entry inter-chunk latency
/// list), server usage and a request ack, as the aggregator sees it.
fn streaming_facts() -> RecordFacts {
    const START: u64 = 1_000_000;
    let stamps: Vec<u64> = (0..101u64)
        .map(|i| START + 20_000_000 + i * 1_000_000 + (i * 7_919) % 50_000)
        .collect();
    RecordFacts {
        phase: Phase::Profiling,
        session_num: 12_345,
        x_request_id: uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
        x_correlation_id: uuid::Uuid::from_u128(0xfedc_ba98_7654_3210_fedc_ba98_7654_3210),
        conversation_id: "conv-000042".into(),
        turn_index: 0,
        worker_id: 3,
        intended_ns: START - 500,
        start_ns: START,
        head_ns: Some(START + 15_000_000),
        end_ns: stamps[100] + 100_000,
        credit_issued_wall_ns: 1_763_000_000_123_456_789,
        request_start_wall_ns: 1_763_000_000_123_457_000,
        request_ack_wall_ns: Some(1_763_000_000_138_457_000),
        request_end_wall_ns: 1_763_000_000_244_000_000,
        first_output_stamp_ns: Some(stamps[0]),
        content_stamps_ns: stamps,
        input_tokens: Some(512),
        output_tokens: Some(100),
        reasoning_tokens: None,
        usage: Some(Usage {
            prompt_tokens: Some(512),
            completion_tokens: Some(100),
            total_tokens: Some(612),
            ..Usage::default()
        }),
        requested_osl: Some(100),
        scheduled_send_ms: None,
        error: None,
        was_cancelled: false,
        conn_reused: true,
        bytes_sent: 2_048,
        bytes_received: 40_000,
        trace: Some(ringperf_wire::record::HttpTrace {
            request_start_ns: START - 2_000,
            connect_ns: None,
            reused: true,
            send_end_ns: Some(START + 30_000),
            request_bytes: 1_800,
            request_chunks: 1,
            response_start_ns: Some(START + 15_000_000),
            response_end_ns: Some(START + 130_000_000),
            response_chunks: 101,
            response_bytes: 38_000,
            local: None,
        }),
        first_content_chunk_tokens: None,
        receive: ringperf_wire::record::ReceiveFacts::default(),
        audio_seconds: None,
        media: ringperf_wire::record::MediaFacts::default(),
        spec_decode: None,
        prefix_blocks: None,
        lineage: None,
        source: None,
    }
}

fn bench_jsonl(c: &mut Criterion) {
    let f = streaming_facts();
    let m = record_metrics(&MetricConfig::new(true, false), &f);
    match m.get(MetricId::InterChunkLatency) {
        Some(MetricValue::List(l)) => assert_eq!(l.len(), 100),
        other => panic!("no 100-entry ICL list: {other:?}"),
    }
    let oracle = serde_json::to_vec(&record_line(&f, &m).expect("a line")).expect("serializes");
    let mut line = Vec::with_capacity(4096);
    assert!(encode_line(&mut line, &f, &m).expect("encodes"));
    assert_eq!(
        String::from_utf8_lossy(&line),
        String::from_utf8_lossy(&oracle),
        "direct encoding differs from the Value form"
    );

    let mut g = c.benchmark_group("jsonl");
    g.throughput(Throughput::Elements(1));
    g.bench_function("jsonl_record", |b| {
        b.iter(|| {
            line.clear();
            encode_line(&mut line, black_box(&f), black_box(&m)).expect("encodes");
            black_box(line.len())
        })
    });
    g.bench_function("jsonl_record_value", |b| {
        b.iter(|| {
            line.clear();
            let v = record_line(black_box(&f), black_box(&m)).expect("a line");
            serde_json::to_writer(&mut line, &v).expect("serializes");
            black_box(line.len())
        })
    });
    g.finish();
}

/// A real vLLM `/metrics` page, captured during load (92 families: counters, gauges,
/// histograms and two summaries).
const METRICS_PAGE: &[u8] = include_bytes!("../tests/data/vllm-cpu-metrics-during-load.txt");

/// Families of the page by a naive scan, independent of the parser: one per `# TYPE` line, a
/// counter without its `_total` suffix, less the summaries (docs/output-formats.md), the names the
/// collector never keeps and the families with no sample line.
fn expected_families(page: &str) -> Vec<String> {
    let samples: Vec<&str> = page
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    page.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| {
            let mut it = rest.split_whitespace();
            let name = it.next()?;
            let kind = it.next()?;
            let family = match kind {
                "summary" => return None,
                "counter" => name.strip_suffix("_total").unwrap_or(name),
                _ => name,
            };
            let has_sample = samples.iter().any(|s| s.starts_with(name));
            (has_sample && !ringperf_wire::prom::is_skipped_family_name(family))
                .then(|| family.to_string())
        })
        .collect()
}

fn bench_prom(c: &mut Criterion) {
    let page = std::str::from_utf8(METRICS_PAGE).unwrap_or("");
    let parsed = ringperf_wire::prom::parse_scrape(METRICS_PAGE).expect("the page parses");
    let names: Vec<String> = parsed.families.iter().map(|f| f.name.clone()).collect();
    assert_eq!(names, expected_families(page), "families of the page");
    let mut g = c.benchmark_group("prom");
    g.throughput(Throughput::Bytes(METRICS_PAGE.len() as u64));
    g.bench_function("parse_scrape_vllm_page", |b| {
        b.iter(|| ringperf_wire::prom::parse_scrape(black_box(METRICS_PAGE)))
    });
    g.finish();
}

criterion_group!(
    hot,
    bench_prom,
    bench_http_head,
    bench_chunked,
    bench_sse,
    bench_worker_path,
    bench_parse_record,
    bench_response_parse,
    bench_ring,
    bench_stats,
    bench_jsonl
);

/// `PhaseCounters::start_session`, the pipeline's one lock (crates/engine/src/worker/mod.rs): a new session
/// takes its index and its first request's under a `std::sync::Mutex`. Uncontended, and with two
/// threads starting sessions back to back (far harder than a run: a session starts at most once
/// per request, and a request is microseconds of system calls). `two_threads` is the time of one
/// call on each thread while the other calls too.
fn bench_start_session(c: &mut Criterion) {
    use ringperf_engine::worker::PhaseCounters;
    use ringperf_workload::schedule::Shard;
    let counters = PhaseCounters::default();
    assert_eq!(counters.start_session(Shard::WHOLE, 2, 9), Some((0, 0)));
    assert_eq!(counters.start_session(Shard::WHOLE, 2, 9), Some((1, 1)));
    assert_eq!(counters.start_session(Shard::WHOLE, 2, 9), None);

    let mut g = c.benchmark_group("start_session");
    g.throughput(Throughput::Elements(1));
    let counters = PhaseCounters::default();
    g.bench_function("uncontended", |b| {
        b.iter(|| counters.start_session(Shard::WHOLE, u64::MAX, u64::MAX))
    });
    g.bench_function("two_threads", |b| {
        b.iter_custom(|iters| {
            let counters = PhaseCounters::default();
            let go = std::sync::Barrier::new(2);
            let run = || {
                go.wait();
                let t = std::time::Instant::now();
                for _ in 0..iters {
                    black_box(counters.start_session(Shard::WHOLE, u64::MAX, u64::MAX));
                }
                t.elapsed()
            };
            std::thread::scope(|s| {
                let other = s.spawn(run);
                let mine = run();
                (mine + other.join().expect("the other thread ends")) / 2
            })
        })
    });
    g.finish();
}

criterion_group!(sessions, bench_start_session);
criterion_main!(hot, sessions);
