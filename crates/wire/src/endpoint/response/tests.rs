//! Response extraction against the real vLLM captures and hand-written chunks.

use super::*;
use crate::record::testing::{json_record, sse_record};
use crate::record::{Event, EventForm};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data");

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

fn parse(kind: EndpointKind, rec: &RawRecord) -> ParsedResponse {
    let mut out = ParsedResponse::default();
    parse_record(kind, rec, &mut out);
    out
}

fn usage(prompt: u64, completion: u64, total: u64) -> Usage {
    Usage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        total_tokens: Some(total),
        ..Usage::default()
    }
}

// The streamed and non-streamed captures came from the same seeded server, so the streamed
// deltas must concatenate to exactly the non-streamed text.
const CHAT_TEXT: &str = " replyrite of made!oxrompt Yellow QueueOlivePartNumberc01 under 226";
const COMPLETION_TEXT: &str =
    " reply it of made 682oxOver Yellow QueueOlivePartNumber receive01 under 226";

#[test]
fn vllm_chat_stream_fixture() {
    let rec = sse_record(&fixture("vllm-cpu-chat-stream.sse.txt"));
    assert_eq!(
        rec.events.len(),
        19,
        "17 content chunks + role chunk + usage chunk + [DONE]"
    );
    let out = parse(EndpointKind::Chat, &rec);
    assert_eq!(out.output_text, CHAT_TEXT);
    assert_eq!(out.reasoning_text, "");
    // The first chunk only carries the role (content ""), the last two are usage and [DONE]:
    // 16 content responses, stamps of events 2..=17.
    assert_eq!(
        out.content_stamps_ns,
        (2..=17).map(|i| i * 100).collect::<Vec<u64>>()
    );
    assert_eq!(out.first_output_stamp_ns, Some(200));
    assert_eq!(out.usage, Some(usage(22, 16, 38)));
    assert_eq!(out.error, None);
}

#[test]
fn vllm_chat_nonstream_fixture() {
    let body = fixture("vllm-cpu-chat-nonstream.json");
    let nonstream_text = {
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(nonstream_text, CHAT_TEXT);
    let out = parse(EndpointKind::Chat, &json_record(&body));
    assert_eq!(out.output_text, CHAT_TEXT);
    assert_eq!(out.content_stamps_ns, vec![500]);
    assert_eq!(out.first_output_stamp_ns, Some(500));
    // `"prompt_tokens_details":null` and `"reasoning":null` read as absent.
    assert_eq!(out.usage, Some(usage(22, 16, 38)));
    assert_eq!(out.error, None);
}

#[test]
fn vllm_completions_fixtures() {
    let rec = sse_record(&fixture("vllm-cpu-completions-stream.sse.txt"));
    let out = parse(EndpointKind::Completions, &rec);
    assert_eq!(out.output_text, COMPLETION_TEXT);
    assert_eq!(out.content_stamps_ns.len(), 16);
    assert_eq!(out.first_output_stamp_ns, Some(100));
    assert_eq!(out.usage, Some(usage(4, 16, 20)));
    assert_eq!(out.error, None);

    let out = parse(
        EndpointKind::Completions,
        &json_record(&fixture("vllm-cpu-completions-nonstream.json")),
    );
    assert_eq!(out.output_text, COMPLETION_TEXT);
    assert_eq!(out.content_stamps_ns, vec![500]);
    assert_eq!(out.usage, Some(usage(4, 16, 20)));
}

#[test]
fn wrong_kind_yields_no_content_error() {
    let rec = sse_record(&fixture("vllm-cpu-completions-stream.sse.txt"));
    let out = parse(EndpointKind::Chat, &rec);
    assert!(out.content_stamps_ns.is_empty());
    assert_eq!(
        out.usage,
        Some(usage(4, 16, 20)),
        "usage is read whatever the object"
    );
    let err = out.error.unwrap();
    assert_eq!(err.kind, NO_CONTENT_ERROR_KIND);
    assert!(
        err.message
            .starts_with("No responses with actual content were received")
    );
    assert_eq!(err.code, None);
}

fn chunk(delta: &str) -> String {
    format!(
        r#"data: {{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta}}}]}}"#
    )
}

#[test]
fn reasoning_then_content_then_tool_calls() {
    let body = [
        chunk(r#"{"role":"assistant","content":null,"reasoning_content":"Let me"}"#),
        chunk(r#"{"reasoning":" think","content":""}"#),
        chunk(r#"{"reasoning_content":"!","content":"Hi"}"#),
        chunk(r#"{"content":" there"}"#),
        chunk(
            r#"{"tool_calls":[{"index":0,"function":{"name":"get_weather","arguments":"{\"c"}},{"function":{"arguments":"ity\"}"}}]}"#,
        ),
        chunk(r#"{"content":"ok","tool_calls":[{"function":{"name":"f","arguments":null}}]}"#),
        r#"data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":3}}}"#.to_owned(),
        "data: [DONE]".to_owned(),
    ]
    .join("\n\n");
    let out = parse(EndpointKind::Chat, &sse_record(body.as_bytes()));
    assert_eq!(out.reasoning_text, "Let me think!");
    assert_eq!(out.output_text, "Hi thereget_weather{\"city\"}okf");
    assert_eq!(out.content_stamps_ns, vec![100, 200, 300, 400, 500, 600]);
    // Reasoning-only chunks (100, 200) carry no output; chunk 300 carries "Hi".
    assert_eq!(out.first_output_stamp_ns, Some(300));
    let u = out.usage.unwrap();
    assert_eq!(
        (u.prompt_tokens, u.completion_tokens, u.reasoning_tokens),
        (Some(5), Some(9), Some(3))
    );
    assert_eq!(u.total_tokens, None);
    assert_eq!(out.error, None);
}

#[test]
fn usage_only_and_empty_chunks_are_not_content() {
    let body = [
        chunk(r#"{"role":"assistant"}"#),
        chunk(r#"{}"#),
        r#"data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5}}"#
            .to_owned(),
        r#"data: {"object":"chat.completion.chunk","choices":[],"usage":{}}"#.to_owned(),
        "data: [DONE]".to_owned(),
    ]
    .join("\n\n");
    let out = parse(EndpointKind::Chat, &sse_record(body.as_bytes()));
    assert!(out.content_stamps_ns.is_empty());
    // `{}` is not a usage: the last non-empty one wins.
    assert_eq!(
        out.usage,
        Some(Usage {
            prompt_tokens: Some(5),
            ..Usage::default()
        })
    );
    assert_eq!(out.error.unwrap().kind, NO_CONTENT_ERROR_KIND);
}

#[test]
fn last_non_empty_usage_wins_without_merging() {
    let body = [
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#,
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"b"}}],"usage":{"completion_tokens":2}}"#,
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"c"}}],"usage":null}"#,
    ]
    .join("\n\n");
    let out = parse(EndpointKind::Chat, &sse_record(body.as_bytes()));
    assert_eq!(out.output_text, "abc");
    assert_eq!(
        out.usage,
        Some(Usage {
            completion_tokens: Some(2),
            ..Usage::default()
        })
    );
}

/// AIPerf's `first_content_chunk_completion_tokens`: the `completion_tokens` of the first
/// response that is a content response *and* carries a non-empty usage, walking forward; a
/// role chunk (no content), a usage-only chunk, an empty `{}` usage and a content chunk without
/// usage are passed over; once found, later chunks change nothing, even when it had no count.
#[test]
fn first_content_usage_is_the_first_content_chunk_that_carries_one() {
    let chunk = |delta: &str, usage: &str| {
        format!(
            r#"data: {{"object":"chat.completion.chunk","choices":[{{"delta":{delta}}}]{usage}}}"#
        )
    };
    let first = |chunks: &[String]| {
        let body = chunks.join("\n\n");
        parse(EndpointKind::Chat, &sse_record(body.as_bytes())).first_content_usage
    };
    let u = |n: u64| format!(r#","usage":{{"prompt_tokens":4,"completion_tokens":{n}}}"#);
    // vLLM's continuous_usage_stats: the role chunk says 0, the first content chunk 3.
    let vllm = [
        chunk(r#"{"role":"assistant","content":""}"#, &u(0)),
        chunk(r#"{"content":"a b c"}"#, &u(3)),
        chunk(r#"{"content":"d"}"#, &u(4)),
        r#"data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":4}}"#.to_owned(),
    ];
    assert_eq!(first(&vllm), Some(Some(3)));
    // Usage missing on the first content chunk ({} counts as missing): the next one's count.
    let gaps = [
        chunk(r#"{"content":"a b"}"#, ""),
        chunk(r#"{"content":"c"}"#, r#","usage":{}"#),
        chunk(r#"{"reasoning_content":"r"}"#, &u(6)),
        chunk(r#"{"content":"d"}"#, &u(7)),
    ];
    assert_eq!(first(&gaps), Some(Some(6)));
    // The first such usage without completion_tokens: found, with no count.
    let no_count = [
        chunk(r#"{"content":"a"}"#, r#","usage":{"prompt_tokens":4}"#),
        chunk(r#"{"content":"b"}"#, &u(2)),
    ];
    assert_eq!(first(&no_count), Some(None));
    // Usage only at the end (include_usage without continuous stats): none.
    assert_eq!(first(&[vllm[1].replace(&u(3), ""), vllm[3].clone()]), None);
}

/// `outputs.json`'s text: each content response's reasoning, then its content, then its tool
/// calls, in arrival order, only when asked for.
#[test]
fn response_text_joins_every_content_response_in_order() {
    let body = [
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"role":"assistant","content":""}}]}"#,
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"reasoning_content":"think ","content":"A"}}]}"#,
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"reasoning_content":"more "}}]}"#,
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"B ","tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}"#,
        r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"C"}}]}"#,
        "data: [DONE]",
    ]
    .join("\n\n");
    let rec = sse_record(body.as_bytes());
    let mut out = ParsedResponse::default().keep_response_text(true);
    parse_record(EndpointKind::Chat, &rec, &mut out);
    assert_eq!(out.response_text, "think Amore B f{}C");
    // The separate texts are what they were.
    assert_eq!(out.reasoning_text, "think more ");
    assert_eq!(out.output_text, "AB f{}C");
    // Cleared with the rest, the setting kept.
    parse_record(EndpointKind::Chat, &rec, &mut out);
    assert_eq!(out.response_text, "think Amore B f{}C");
    assert!(parse(EndpointKind::Chat, &rec).response_text.is_empty());
}

#[test]
fn usage_normalization_over_vendor_names() {
    // Anthropic / Responses names.
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"x"}}],"usage":{"input_tokens":7,"output_tokens":3,"cache_read_input_tokens":4,"cache_creation_input_tokens":2,"output_tokens_details":{"reasoning_tokens":1}}}"#;
    let u = parse(EndpointKind::Chat, &json_record(body)).usage.unwrap();
    assert_eq!(u.prompt_tokens, Some(7));
    assert_eq!(u.completion_tokens, Some(3));
    assert_eq!(u.reasoning_tokens, Some(1));
    assert_eq!(u.prompt_cache_read_tokens, Some(4));
    assert_eq!(u.prompt_cache_write_tokens, Some(2));
    // OpenAI details; the first name sent wins even when it is 0 (AIPerf 0.13's `Usage`).
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":0,"input_tokens":9,"completion_tokens":4.0,"total_tokens":"13","prompt_tokens_details":{"cached_tokens":8,"audio_tokens":1},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":2,"accepted_prediction_tokens":5,"rejected_prediction_tokens":6}}}"#;
    let u = parse(EndpointKind::Chat, &json_record(body)).usage.unwrap();
    assert_eq!(
        u.prompt_tokens,
        Some(0),
        "a sent 0 is not replaced by `input_tokens`"
    );
    assert_eq!(u.completion_tokens, Some(4));
    assert_eq!(u.total_tokens, None, "a string count is not a count");
    assert_eq!(u.prompt_cache_read_tokens, Some(8));
    assert_eq!(u.prompt_audio_tokens, Some(1));
    assert_eq!(u.completion_audio_tokens, Some(2));
    assert_eq!(u.reasoning_tokens, Some(0), "a sent 0 is a 0");
    assert_eq!(u.accepted_prediction_tokens, Some(5));
    assert_eq!(u.rejected_prediction_tokens, Some(6));
}

/// A server without a prefix-cache hit sends `cached_tokens: 0`; AIPerf reports that 0.
#[test]
fn zero_cached_tokens_is_a_cache_read_of_zero() {
    // Non-streamed, as vLLM sends it with prompt-token details enabled.
    let body = br#"{"id":"cmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":22,"total_tokens":38,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":0}}}"#;
    let u = parse(EndpointKind::Chat, &json_record(body)).usage.unwrap();
    assert_eq!(u.prompt_cache_read_tokens, Some(0));
    assert_eq!(u.prompt_tokens, Some(22));

    // Streamed: the usage chunk after the content carries the details.
    let rec = sse_record(
        concat!(
            r#"data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
            "\n\n",
            r#"data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":22,"total_tokens":38,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":0}}}"#,
            "\n\ndata: [DONE]\n\n",
        )
        .as_bytes(),
    );
    let u = parse(EndpointKind::Chat, &rec).usage.unwrap();
    assert_eq!(u.prompt_cache_read_tokens, Some(0));

    // Completions, Responses-style names: `input_tokens_details.cached_tokens: 0` is found
    // when `prompt_tokens_details` lacks the field, and wins over Anthropic's top-level name.
    let body = br#"{"object":"text_completion","choices":[{"text":"x"}],"usage":{"input_tokens":5,"output_tokens":1,"prompt_tokens_details":{"audio_tokens":0},"input_tokens_details":{"cached_tokens":0},"cache_read_input_tokens":3}}"#;
    let u = parse(EndpointKind::Completions, &json_record(body))
        .usage
        .unwrap();
    assert_eq!(u.prompt_cache_read_tokens, Some(0));
    assert_eq!(u.prompt_audio_tokens, Some(0));
    assert_eq!(u.prompt_tokens, Some(5));

    // Anthropic: `cache_read_input_tokens: 0` is a 0 too; a sent `null` answers "unknown"
    // without falling through to the next name, as in AIPerf.
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"x"}}],"usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}"#;
    let u = parse(EndpointKind::Chat, &json_record(body)).usage.unwrap();
    assert_eq!(u.prompt_cache_read_tokens, Some(0));
    assert_eq!(u.prompt_cache_write_tokens, Some(0));
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":null,"input_tokens":5,"prompt_tokens_details":{"cached_tokens":null},"cache_read_input_tokens":3}}"#;
    let u = parse(EndpointKind::Chat, &json_record(body)).usage.unwrap();
    assert_eq!(u.prompt_tokens, None);
    assert_eq!(u.prompt_cache_read_tokens, None);

    // No details at all: absent, not 0.
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":5}}"#;
    let u = parse(EndpointKind::Chat, &json_record(body)).usage.unwrap();
    assert_eq!(u.prompt_cache_read_tokens, None);
}

#[test]
fn sse_error_event_stops_with_502() {
    let body = format!(
        "{}\n\nevent: error\n: upstream overloaded\ndata: {{}}\n\n{}",
        chunk(r#"{"content":"a"}"#),
        chunk(r#"{"content":"b"}"#)
    );
    let out = parse(EndpointKind::Chat, &sse_record(body.as_bytes()));
    assert_eq!(out.output_text, "a");
    let err = out.error.unwrap();
    assert_eq!(err.code, Some(502));
    assert_eq!(err.kind, SSE_ERROR_KIND);
    assert_eq!(
        err.message,
        "Error occurred in SSE response: upstream overloaded"
    );

    let out = parse(EndpointKind::Chat, &sse_record(b"event: Error\ndata: x"));
    let err = out.error.unwrap();
    assert!(
        err.message
            .starts_with("Error occurred in SSE response: Unknown error in SSE")
    );
}

#[test]
fn sse_field_parsing_edge_cases() {
    let body = concat!(
        // Leading comment, CRLF lines, no space after the colon.
        ": keep-alive\r\ndata:{\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"A\"}}]}\r",
        "\n\n",
        // Two data lines are joined with a newline (valid JSON whitespace).
        "data: {\"object\":\"chat.completion.chunk\",\n",
        "data: \"choices\":[{\"delta\":{\"content\":\"B\"}}]}",
        "\n\n",
        // A raw newline inside the JSON string is repaired to an escaped one.
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"C1\n",
        "C2\"}}]}",
        "\n\n",
        // Invalid JSON, empty data and a bare comment are skipped.
        "data: {not json}\n\ndata:\n\n: just a comment\n\n",
        // Escaped text is decoded.
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\"\\u00e9\\\"\"}}]}",
    );
    let out = parse(EndpointKind::Chat, &sse_record(body.as_bytes()));
    assert_eq!(out.output_text, "ABC1\nC2é\"");
    assert_eq!(out.content_stamps_ns, vec![100, 200, 300, 700]);
    assert_eq!(out.error, None);
}

#[test]
fn odd_shapes_never_fail_the_record() {
    for body in [
        &br#"{"object":"chat.completion","choices":{"0":1}}"#[..],
        br#"{"object":"chat.completion","choices":[null]}"#,
        br#"{"object":"chat.completion","choices":[{"message":[1,2]}]}"#,
        br#"{"object":"chat.completion","choices":[{"message":{"content":["x"]}}]}"#,
        br#"{"object":5,"choices":[{"message":{"content":"x"}}]}"#,
        br#"{"object":"chat.completion","choices":[{"message":{"tool_calls":{"a":1}}}]}"#,
        br#"[1,2,3]"#,
        br#""#,
        b"\xff\xfe",
    ] {
        let out = parse(EndpointKind::Chat, &json_record(body));
        assert!(
            out.content_stamps_ns.is_empty(),
            "{}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(out.error.unwrap().kind, NO_CONTENT_ERROR_KIND);
    }
    // Extra choices are skipped; only choices[0] counts.
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"x"}},{"message":{"content":"y"}}]}"#;
    assert_eq!(
        parse(EndpointKind::Chat, &json_record(body)).output_text,
        "x"
    );
}

#[test]
fn record_error_wins_and_buffers_are_reused() {
    let mut rec = json_record(br#"{"error":"overloaded"}"#);
    rec.status = 503;
    rec.error = Some(Box::new(RequestError::new(
        Some(503),
        "Service Unavailable",
        "overloaded",
    )));
    let mut out = ParsedResponse::default();
    parse_record(EndpointKind::Chat, &rec, &mut out);
    assert_eq!(out.error.as_ref().unwrap().code, Some(503));

    let rec = sse_record(&fixture("vllm-cpu-chat-stream.sse.txt"));
    parse_record(EndpointKind::Chat, &rec, &mut out);
    let cap = out.output_text.capacity();
    parse_record(EndpointKind::Chat, &rec, &mut out);
    assert_eq!(out.output_text, CHAT_TEXT);
    assert_eq!(out.error, None);
    assert_eq!(out.output_text.capacity(), cap);
    out.clear();
    assert_eq!(
        out,
        ParsedResponse {
            data_buf: out.data_buf.clone(),
            ..Default::default()
        }
    );
}

#[test]
fn events_out_of_range_are_empty() {
    let mut rec = json_record(b"{}");
    rec.events = vec![Event {
        stamp_ns: 1,
        start: 10,
        end: 50,
        lag_ns: None,
        form: EventForm::Raw,
    }];
    let out = parse(EndpointKind::Completions, &rec);
    assert_eq!(out.error.unwrap().kind, NO_CONTENT_ERROR_KIND);
}

#[test]
fn content_message_is_the_first_token() {
    let mut scratch = ParsedResponse::default();
    let chat = |m: &str, scratch: &mut ParsedResponse| {
        is_content_message(EndpointKind::Chat, m.as_bytes(), scratch)
    };
    let role = r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"role":"assistant","content":""}}]}"#;
    let text = r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"Hi"}}]}"#;
    let reasoning = r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"reasoning_content":"hm"}}]}"#;
    let usage =
        r#"data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3}}"#;
    assert!(!chat(role, &mut scratch), "a role chunk is not a token");
    assert!(chat(text, &mut scratch));
    assert!(
        chat(reasoning, &mut scratch),
        "reasoning counts, as in AIPerf"
    );
    assert!(
        !chat(usage, &mut scratch),
        "a usage-only chunk is not a token"
    );
    assert!(!chat("data: [DONE]", &mut scratch));
    assert!(!chat(": keep-alive", &mut scratch));
    let completion = r#"data: {"object":"text_completion","choices":[{"text":"x"}]}"#;
    assert!(is_content_message(
        EndpointKind::Completions,
        completion.as_bytes(),
        &mut scratch
    ));
}
