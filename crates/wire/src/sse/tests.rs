//! Framer tests: hand-written streams, the real vLLM captures end to end (chunked body → framer
//! → message data), and property tests against the naive oracle and across arbitrary splits.

use std::ops::Range;

use proptest::prelude::*;

use super::naive;
use super::*;
use crate::http::{BodyDecoder, BodyKind};

const CHAT: &[u8] = include_bytes!("../../../../fuzz/seeds/sse/vllm-cpu-chat-stream.sse.txt");
const COMPLETIONS: &[u8] =
    include_bytes!("../../../../fuzz/seeds/sse/vllm-cpu-completions-stream.sse.txt");

/// Appends `body` cut at `cuts`, draining the framer after each append, then finishing.
fn frame_in_pieces(body: &[u8], cuts: &[usize]) -> Vec<Range<usize>> {
    let mut buf = Vec::new();
    let mut framer = Framer::new();
    let mut spans = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&body.len())) {
        let end = end.clamp(start, body.len());
        buf.extend_from_slice(&body[start..end]);
        start = end;
        while let Some(span) = framer.next_message(&buf) {
            spans.push(span);
        }
    }
    while let Some(span) = framer.finish(&buf) {
        spans.push(span);
    }
    assert_eq!(framer.finish(&buf), None, "finish keeps returning None");
    spans
}

/// Like [`frame_in_pieces`] but compacting the buffer after every append; spans are mapped
/// back to offsets of the whole body.
fn frame_compacting(body: &[u8], cuts: &[usize]) -> Vec<Range<usize>> {
    let mut buf = Vec::new();
    let mut framer = Framer::new();
    let mut spans = Vec::new();
    let mut dropped = 0;
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&body.len())) {
        let end = end.clamp(start, body.len());
        buf.extend_from_slice(&body[start..end]);
        start = end;
        while let Some(span) = framer.next_message(&buf) {
            spans.push(span.start + dropped..span.end + dropped);
        }
        dropped += framer.compact(&mut buf);
    }
    while let Some(span) = framer.finish(&buf) {
        spans.push(span.start + dropped..span.end + dropped);
    }
    spans
}

fn texts<'b>(body: &'b [u8], spans: &[Range<usize>]) -> Vec<&'b [u8]> {
    spans.iter().map(|r| &body[r.clone()]).collect()
}

#[test]
fn lf_crlf_and_cr_streams() {
    for body in [
        &b"data: a\n\ndata: b\n\n"[..],
        b"data: a\r\n\r\ndata: b\r\n\r\n",
        b"data: a\r\rdata: b\r\r",
        b"\n\r\ndata: a\n\r\ndata: b\r\n\n\n\n",
    ] {
        assert_eq!(
            texts(body, &frame_in_pieces(body, &[])),
            [b"data: a", b"data: b"]
        );
    }
}

#[test]
fn multi_line_messages_keep_inner_terminators() {
    let body = b": c\r\nevent: error\r\ndata: x\r\n\r\n";
    let spans = frame_in_pieces(body, &[]);
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0], 0..26);
    assert_eq!(&body[0..26], b": c\r\nevent: error\r\ndata: x");
}

#[test]
fn whitespace_only_messages_are_skipped() {
    let body = b" \n\t\n\ndata: a\n\n  \n\n";
    assert_eq!(texts(body, &frame_in_pieces(body, &[])), [b"data: a"]);
}

#[test]
fn trailing_data_without_delimiter() {
    let body = b"data: a\n\ndata: b\ndata: c";
    let mut framer = Framer::new();
    assert_eq!(framer.next_message(body), Some(0..7));
    assert_eq!(framer.next_message(body), None);
    assert_eq!(framer.finish(body), Some(9..24));
    assert_eq!(framer.finish(body), None);
    assert_eq!(framer.next_message(body), None);

    let body = b"data: a\n\ndata: b\r\n";
    assert_eq!(
        texts(body, &frame_in_pieces(body, &[])),
        [b"data: a", b"data: b"]
    );
    let body = b"data: a\n\n \r\n";
    assert_eq!(texts(body, &frame_in_pieces(body, &[])), [b"data: a"]);
}

#[test]
fn finish_returns_unread_complete_messages_first() {
    let body = b"data: a\n\ndata: b\n\ndata: c";
    let mut framer = Framer::new();
    assert_eq!(framer.finish(body), Some(0..7));
    assert_eq!(framer.finish(body), Some(9..16));
    assert_eq!(framer.finish(body), Some(18..25));
    assert_eq!(framer.finish(body), None);
}

/// A stream that starts with a UTF-8 byte order mark keeps its first event (the SSE standard
/// drops one mark at the start), however the mark is cut across reads; a mark anywhere else, or
/// a second one, is text.
#[test]
fn a_leading_byte_order_mark_is_dropped() {
    let mut body = b"\xEF\xBB\xBF".to_vec();
    for i in 0..16 {
        body.extend_from_slice(format!("data: {{\"i\": {i}}}\n\n").as_bytes());
    }
    for cuts in [vec![], vec![1], vec![2], vec![1, 2], vec![3], vec![5]] {
        let spans = frame_in_pieces(&body, &cuts);
        assert_eq!(spans.len(), 16, "{cuts:?}");
        let mut scratch = Vec::new();
        for (i, span) in spans.iter().enumerate() {
            let msg = &body[span.clone()];
            let MessageData::Json(at) = message_data(msg, &mut scratch) else {
                panic!("{cuts:?}: message {i} has no data: {msg:?}");
            };
            assert_eq!(
                at.bytes(msg, &scratch),
                format!("{{\"i\": {i}}}").as_bytes()
            );
        }
        assert_eq!(frame_compacting(&body, &cuts), spans, "{cuts:?}");
    }
    // Only one, only at the start.
    let twice = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: 1\n\n";
    assert_eq!(
        texts(twice, &frame_in_pieces(twice, &[])),
        [&twice[3..twice.len() - 2]]
    );
    let later = b"data: 1\n\n\xEF\xBB\xBFdata: 2\n\n";
    assert_eq!(frame_in_pieces(later, &[]), [0..7, 9..19]);
    // A stream that is a cut-off mark is that text.
    assert_eq!(
        frame_in_pieces(b"\xEF\xBB", &[]),
        [Range { start: 0, end: 2 }]
    );
    assert_eq!(frame_in_pieces(b"", &[]), []);
}

#[test]
fn crlf_split_between_cr_and_lf() {
    // The LF arriving later completes the CRLF; it is not an empty line.
    let body = b"data: a\r\ndata: b\r\n\r\n";
    for cut in 0..=body.len() {
        let spans = frame_in_pieces(body, &[cut]);
        assert_eq!((spans.len(), &spans[0]), (1, &(0..16)), "cut at {cut}");
    }
    let mut framer = Framer::new();
    assert_eq!(framer.next_message(b"data: a\r"), None);
    assert_eq!(framer.next_message(b"data: a\r\n"), None);
    assert_eq!(framer.next_message(b"data: a\r\n\r"), Some(0..7));
}

#[test]
fn compaction_keeps_the_pending_message() {
    let mut framer = Framer::new();
    let mut buf = b"data: a\n\ndata: b".to_vec();
    assert_eq!(framer.next_message(&buf), Some(0..7));
    assert_eq!(framer.next_message(&buf), None);
    assert_eq!(framer.retained_from(), 9);
    assert_eq!(framer.compact(&mut buf), 9);
    assert_eq!(buf, b"data: b");
    buf.extend_from_slice(b"\n\n");
    assert_eq!(framer.next_message(&buf), Some(0..7));
}

/// Chunk-encodes `payload` into chunks of `size` bytes.
fn chunked(payload: &[u8], size: usize) -> Vec<u8> {
    let mut wire = Vec::new();
    for chunk in payload.chunks(size) {
        wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        wire.extend_from_slice(chunk);
        wire.extend_from_slice(b"\r\n");
    }
    wire.extend_from_slice(b"0\r\n\r\n");
    wire
}

/// Decodes a chunked wire read by read, framing after each read: the worker's loop.
fn vllm_messages(
    fixture: &[u8],
    chunk_size: usize,
    read_size: usize,
) -> (Vec<u8>, Vec<Range<usize>>) {
    let wire = chunked(fixture, chunk_size);
    let mut decoder = BodyDecoder::new(BodyKind::Chunked);
    let mut body = Vec::new();
    let mut framer = Framer::new();
    let mut spans = Vec::new();
    let mut done = false;
    for read in wire.chunks(read_size) {
        let feed = decoder.feed(read, &mut body).unwrap();
        assert_eq!(feed.consumed, read.len());
        while let Some(span) = framer.next_message(&body) {
            spans.push(span);
        }
        done = feed.done;
    }
    assert!(done);
    while let Some(span) = framer.finish(&body) {
        spans.push(span);
    }
    assert_eq!(body, fixture);
    (body, spans)
}

fn check_vllm(fixture: &[u8], messages: usize, object: &str) {
    for (chunk_size, read_size) in [
        (fixture.len(), fixture.len() + 64),
        (211, 64),
        (7, 13),
        (1, 1),
    ] {
        let (body, spans) = vllm_messages(fixture, chunk_size, read_size);
        assert_eq!(spans.len(), messages);
        let mut scratch = Vec::new();
        let mut values = Vec::new();
        for r in &spans {
            let message = &body[r.clone()];
            match message_data(message, &mut scratch) {
                MessageData::Json(at) => values.push(serde_json::from_slice::<serde_json::Value>(
                    at.bytes(message, &scratch),
                )),
                other => {
                    assert_eq!(other, MessageData::Done);
                    assert_eq!(message, b"data: [DONE]", "only [DONE] is not JSON");
                }
            }
        }
        assert_eq!(
            values.len(),
            messages - 1,
            "every message but [DONE] is JSON"
        );
        let values: Vec<serde_json::Value> = values.into_iter().map(Result::unwrap).collect();
        assert!(values.iter().all(|v| v["object"] == object));
        let usage = &values[values.len() - 1];
        assert_eq!(usage["usage"]["completion_tokens"], 16);
    }
}

#[test]
fn vllm_chat_stream_end_to_end() {
    check_vllm(CHAT, 19, "chat.completion.chunk");
}

#[test]
fn vllm_completions_stream_end_to_end() {
    check_vllm(COMPLETIONS, 18, "text_completion");
}

/// One generated message: its lines (no terminators) and whether it has a `data` field.
fn message_strategy() -> impl Strategy<Value = Vec<String>> {
    let line = prop_oneof![
        "data: \\{\"t\":\"[a-z ]{0,12}\"\\}",
        "data:[ -~]{0,20}",
        Just("data: [DONE]".to_string()),
        ": [ -~]{0,10}",
        Just("event: error".to_string()),
        Just("event: message".to_string()),
        "id: [0-9]{1,4}",
    ];
    proptest::collection::vec(line, 1..5)
}

fn render(messages: &[Vec<String>], terminator: &str) -> Vec<u8> {
    let mut body = String::new();
    for lines in messages {
        for line in lines {
            body.push_str(line);
            body.push_str(terminator);
        }
        body.push_str(terminator);
    }
    body.into_bytes()
}

proptest! {
    #[test]
    fn qc_framer_split_invariance(
        messages in proptest::collection::vec(message_strategy(), 0..8),
        terminator in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        drop_final_delimiter in any::<bool>(),
        bom in any::<bool>(),
        cuts in proptest::collection::btree_set(0usize..600, 0..16),
    ) {
        let mut body = render(&messages, terminator);
        if drop_final_delimiter && !messages.is_empty() {
            body.truncate(body.len() - 2 * terminator.len());
        }
        if bom {
            body.splice(0..0, *b"\xEF\xBB\xBF");
        }
        let cuts: Vec<usize> = cuts.into_iter().collect();
        let whole = frame_in_pieces(&body, &[]);
        prop_assert_eq!(whole.len(), messages.len());
        for (span, lines) in whole.iter().zip(&messages) {
            let joined = lines.join(terminator);
            prop_assert_eq!(&body[span.clone()], joined.as_bytes());
            let mut scratch = Vec::new();
            let data = message_data(&body[span.clone()], &mut scratch);
            // AIPerf's repair rule (docs/endpoints.md): while the previous field's value starts
            // with `{` and does not end with `}`, a line not starting with `data:` continues
            // that value instead of being a field of its own — even `event: error`.
            // Fields split at `\n` only, as AIPerf splits them; with lone-CR line ends (which
            // the framer honours, as the SSE standard says) the message is one field line.
            let field_lines = if terminator == "\r" {
                vec![lines.join("\r")]
            } else {
                lines.clone()
            };
            let mut open_json = false;
            let mut expect_error = false;
            for l in &field_lines {
                if open_json && !l.starts_with("data:") {
                    open_json = !l.trim_end().ends_with('}');
                    continue;
                }
                // Any field's value opens a repair, not only data's (the previous field value,
                // docs/endpoints.md "Streams (SSE)").
                let v = l.split_once(':').map_or("", |(_, v)| v.trim());
                open_json = v.starts_with('{') && !v.ends_with('}');
                expect_error |= *l == "event: error";
            }
            prop_assert_eq!(matches!(data, MessageData::Error(_)), expect_error);
        }
        prop_assert_eq!(&frame_in_pieces(&body, &cuts), &whole);
        prop_assert_eq!(&frame_compacting(&body, &cuts), &whole);
        prop_assert_eq!(&naive::messages(&body), &whole);
    }

    #[test]
    fn qc_framer_matches_naive(
        body in proptest::collection::vec(
            prop_oneof![Just(b'\r'), Just(b'\n'), Just(b' '), Just(b'd'), Just(b':'), any::<u8>()],
            0..120,
        ),
        cuts in proptest::collection::btree_set(0usize..120, 0..10),
    ) {
        let cuts: Vec<usize> = cuts.into_iter().collect();
        let expected = naive::messages(&body);
        prop_assert_eq!(&frame_in_pieces(&body, &[]), &expected);
        prop_assert_eq!(&frame_in_pieces(&body, &cuts), &expected);
        prop_assert_eq!(&frame_compacting(&body, &cuts), &expected);
    }

    #[test]
    fn qc_message_data_on_arbitrary_bytes(
        bytes in proptest::collection::vec(
            prop_oneof![
                Just(b'\r'), Just(b'\n'), Just(b':'), Just(b'{'), Just(b'}'), Just(b'"'),
                Just(b' '), Just(b'd'), Just(b'a'), Just(b't'), any::<u8>()
            ],
            0..120,
        ),
    ) {
        let mut scratch = Vec::new();
        match message_data(&bytes, &mut scratch) {
            MessageData::Json(at) => {
                let range = match at {
                    DataRef::Message(s, e) => { prop_assert!(e <= bytes.len()); s..e }
                    DataRef::Scratch(s, e) => { prop_assert!(e <= scratch.len()); s..e }
                };
                prop_assert!(range.start < range.end);
                let json = at.bytes(&bytes, &scratch);
                prop_assert!(!json.is_empty() && json != b"[DONE]");
                prop_assert_eq!(json, json.trim_ascii(), "values are stripped");
            }
            MessageData::Error(text) => {
                prop_assert!(text.starts_with("Error occurred in SSE response: "));
            }
            MessageData::Skip | MessageData::Done => {}
        }
    }
}
