//! The compactor against the full parser: whatever it accepts, the aggregator must read the
//! same way from the compact event as from the raw message.

use proptest::prelude::*;

use super::compact;
use crate::endpoint::EndpointKind;
use crate::endpoint::response::{ParsedResponse, parse_record};
use crate::record::testing::{record, sse_record};
use crate::record::{Event, EventForm};

/// What the aggregator reads from one message kept raw.
fn full(message: &[u8]) -> ParsedResponse {
    let mut out = ParsedResponse::default();
    parse_record(EndpointKind::Chat, &sse_record(message), &mut out);
    out
}

/// What the aggregator reads from the compact event of one message, if the compactor took it.
fn compacted(message: &[u8]) -> Option<ParsedResponse> {
    let mut text = b"earlier".to_vec();
    let start = text.len();
    let form = compact(message, &mut text)?;
    let mut rec = record(Vec::new(), Vec::new(), true);
    rec.events.push(Event {
        stamp_ns: 100,
        start: start as u32,
        end: text.len() as u32,
        lag_ns: None,
        form,
    });
    rec.text = text;
    let mut out = ParsedResponse::default();
    parse_record(EndpointKind::Chat, &rec, &mut out);
    Some(out)
}

/// The compactor either declines `message` or agrees with the full parser on it.
fn agrees(message: &[u8]) -> Result<bool, String> {
    let Some(got) = compacted(message) else {
        return Ok(false);
    };
    let want = full(message);
    if got == want {
        Ok(true)
    } else {
        Err(format!(
            "{}: compact {got:?} != full {want:?}",
            String::from_utf8_lossy(message)
        ))
    }
}

/// The SSE messages of a captured stream.
fn messages(stream: &[u8]) -> Vec<&[u8]> {
    stream
        .split(|&b| b == b'\n')
        .filter(|l| !l.trim_ascii().is_empty())
        .collect()
}

/// `real` with the byte at `at` (modulo its length) replaced by `byte`, or cut there.
fn corrupt(real: &[u8], at: usize, byte: u8, cut: bool) -> Vec<u8> {
    let mut v = real.to_vec();
    let at = at % v.len();
    if cut {
        v.truncate(at);
    } else {
        v[at] = byte;
    }
    v
}

const VLLM_STREAM: &[u8] =
    include_bytes!("../../../../../benches/data/vllm-cpu-chat-stream.sse.txt");

#[test]
fn every_real_vllm_chunk_but_the_usage_one_is_compacted_and_agrees() {
    let mut declined = Vec::new();
    for m in messages(VLLM_STREAM) {
        if !agrees(m).unwrap() {
            declined.push(String::from_utf8_lossy(m).into_owned());
        }
    }
    // The final usage chunk carries a `usage` object: only the full parser reads it.
    assert_eq!(declined.len(), 1, "{declined:?}");
    assert!(declined[0].contains("\"usage\":{"), "{declined:?}");
}

#[test]
fn the_forms_of_common_chunks() {
    let chunk = |delta: &str| {
        format!(
            r#"data: {{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}],"usage":null}}"#
        )
    };
    let form = |m: &str| {
        let mut text = Vec::new();
        let f = compact(m.as_bytes(), &mut text);
        (f, String::from_utf8(text).unwrap())
    };
    assert_eq!(
        form(&chunk(r#"{"content":"a\"b\\n\n"}"#)),
        (Some(EventForm::Text), "a\"b\\n\n".into())
    );
    assert_eq!(
        form(&chunk(
            r#"{"reasoning_content":"","reasoning":"why","content":"so"}"#
        )),
        (
            Some(EventForm::Reasoning {
                split: 3,
                content: true
            }),
            "whyso".into()
        )
    );
    assert_eq!(
        form(&chunk(r#"{"role":"assistant","content":""}"#)),
        (Some(EventForm::Empty), String::new())
    );
    assert_eq!(
        form("data: [DONE]"),
        (Some(EventForm::Empty), String::new())
    );
    // Declined: a `\u` escape, tool calls, a repeated field, a float, an error event.
    for declined in [
        chunk(r#"{"content":"\u00e9"}"#),
        chunk(r#"{"tool_calls":[]}"#),
        chunk(r#"{"content":"a","content":"b"}"#),
        chunk(r#"{"content":"a","x":1.5}"#),
        "event: error\ndata: {}".to_string(),
    ] {
        assert_eq!(form(&declined), (None, String::new()), "{declined}");
        agrees(declined.as_bytes()).unwrap();
    }
}

/// A JSON string literal of `s` with the escapes servers use (simple ones, sometimes `\u`).
fn json_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z ]{1,8}",
        r#"[ -~\n\t"\\/é😀]{0,10}"#,
    ]
    .prop_map(|s| serde_json::to_string(&s).unwrap())
}

/// A delta field's value: a string, null, or something else.
fn field_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => json_string(),
        1 => Just("null".to_string()),
        1 => Just("7".to_string()),
        1 => Just(r#""\u0041""#.to_string()),
    ]
}

prop_compose! {
    /// A chat chunk of the common shape with varied fields, order and spacing.
    fn chunk()(
        content in proptest::option::of(field_value()),
        reasoning_content in proptest::option::of(field_value()),
        reasoning in proptest::option::of(field_value()),
        extra in proptest::option::of(prop_oneof![
            Just(r#""token_ids":[1,2,-3]"#),
            Just(r#""logprobs":{"content":[{"t":true,"f":false}]}"#),
            Just(r#""stop_reason":null"#),
            Just(r#""logprobs":1.5"#),
        ]),
        object in prop_oneof![
            8 => Just("chat.completion.chunk"),
            1 => Just("chat.completion"),
            1 => Just("text_completion"),
        ],
        usage in prop_oneof![
            6 => Just(""),
            2 => Just(r#","usage":null"#),
            1 => Just(r#","usage":{"completion_tokens":3}"#),
            1 => Just(r#","usage":{}"#),
        ],
        space in prop_oneof![Just(""), Just(" ")],
        reversed in any::<bool>(),
    ) -> String {
        let mut fields: Vec<String> = Vec::new();
        for (k, v) in [("content", content), ("reasoning_content", reasoning_content),
                       ("reasoning", reasoning)] {
            if let Some(v) = v {
                fields.push(format!("\"{k}\":{space}{v}"));
            }
        }
        if let Some(e) = extra {
            fields.push(e.to_string());
        }
        if reversed {
            fields.reverse();
        }
        format!(
            "data:{space}{{\"id\":\"c\",{space}\"object\":\"{object}\",\"created\":17,\
             \"choices\":[{{\"index\":0,\"delta\":{{{}}},\"finish_reason\":null}}]{usage}}}",
            fields.join(",")
        )
    }
}

proptest! {
    #[test]
    fn generated_chunks_compact_as_the_full_parser_reads_them(m in chunk()) {
        agrees(m.as_bytes()).map_err(TestCaseError::fail)?;
    }

    /// Corrupting a real chunk anywhere (a byte replaced, or the message cut short) never
    /// makes the compactor disagree with the full parser.
    #[test]
    fn corrupted_real_chunks_never_disagree(
        pick in 0usize..64,
        at in 0usize..400,
        byte in prop::sample::select(b"{}[]\",:\\ 0a-.nu\n".to_vec()),
        cut in any::<bool>(),
    ) {
        let all = messages(VLLM_STREAM);
        agrees(&corrupt(all[pick % all.len()], at, byte, cut)).map_err(TestCaseError::fail)?;
    }
}

/// How many of 400 values drawn from `strategy` (deterministically) `taken` accepts.
fn taken_of_400(
    strategy: impl Strategy<Value = String>,
    taken: impl Fn(&[u8]) -> Result<bool, String>,
) -> usize {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    (0..400)
        .filter(|_| {
            let v = strategy.new_tree(&mut runner).unwrap().current();
            taken(v.as_bytes()).unwrap()
        })
        .count()
}

/// The generated chunks exercise the compact path, not only the fallback: a good share of them
/// is taken (and then agrees, as the property above checks).
#[test]
fn generated_chunks_are_mostly_taken() {
    let taken = taken_of_400(chunk(), agrees);
    assert!(taken >= 100, "only {taken} of 400 generated chunks taken");
}

// ---- whole `chat.completion` bodies (the aggregator's fast path) ----

const VLLM_BODY: &[u8] = include_bytes!("../../../../../benches/data/vllm-cpu-chat-nonstream.json");

/// What the full parser reads from one whole body.
fn full_body(json: &[u8]) -> ParsedResponse {
    let mut out = ParsedResponse::default();
    super::super::chat::parse_full(json, 100, &mut out);
    out
}

/// The fast path either declines `json` (leaving the response untouched) or reads it as the
/// full parser does.
fn body_agrees(json: &[u8]) -> Result<bool, String> {
    let mut got = ParsedResponse::default();
    if !super::completion(json, 100, &mut got) {
        return if got == ParsedResponse::default() {
            Ok(false)
        } else {
            Err(format!("declined but wrote {got:?}"))
        };
    }
    let want = full_body(json);
    if got == want {
        Ok(true)
    } else {
        Err(format!(
            "{}: fast {got:?} != full {want:?}",
            String::from_utf8_lossy(json)
        ))
    }
}

#[test]
fn the_real_vllm_body_is_taken_and_read_as_captured() {
    assert!(
        body_agrees(VLLM_BODY).unwrap(),
        "the captured vLLM body was declined"
    );
    let mut out = ParsedResponse::default();
    assert!(super::completion(VLLM_BODY, 7, &mut out));
    // The values as they stand in the captured body.
    assert_eq!(
        out.output_text,
        " replyrite of made!oxrompt Yellow QueueOlivePartNumberc01 under 226"
    );
    let u = out.usage.clone().unwrap();
    assert_eq!(
        (u.prompt_tokens, u.completion_tokens, u.total_tokens),
        (Some(22), Some(16), Some(38))
    );
    assert_eq!(out.content_stamps_ns, vec![7]);
}

#[test]
fn uncommon_bodies_are_left_to_the_full_parser() {
    let body = |message: &str, usage: &str| {
        format!(
            r#"{{"id":"x","object":"chat.completion","created":1,"choices":[{{"index":0,"message":{message},"finish_reason":"stop"}}]{usage}}}"#
        )
    };
    let plain = r#"{"role":"assistant","content":"hi"}"#;
    // Taken: the plain shape, an escape, reasoning, an empty tool-call list, usage forms.
    for taken in [
        body(plain, ""),
        body(plain, r#","usage":null"#),
        body(plain, r#","usage":{}"#),
        body(r#"{"content":"a\"b\n","tool_calls":[]}"#, ""),
        body(r#"{"reasoning_content":"why","content":"so"}"#, ""),
        body(
            plain,
            r#","usage":{"prompt_tokens":3,"completion_tokens_details":null}"#,
        ),
    ] {
        assert!(body_agrees(taken.as_bytes()).unwrap(), "declined: {taken}");
    }
    // Declined: usage details, other usage names, a negative or fractional count, tool calls,
    // a repeated key, a chunk, a second choice, a `\u` escape.
    for declined in [
        body(
            plain,
            r#","usage":{"prompt_tokens_details":{"cached_tokens":1}}"#,
        ),
        body(plain, r#","usage":{"input_tokens":3}"#),
        body(plain, r#","usage":{"prompt_tokens":-3}"#),
        body(plain, r#","usage":{"prompt_tokens":3.0}"#),
        body(
            r#"{"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}"#,
            "",
        ),
        body(r#"{"content":"a","content":"b"}"#, ""),
        body(plain, "").replace("\"chat.completion\"", "\"chat.completion.chunk\""),
        body(plain, "").replace("}]", "},{\"index\":1}]"),
        body(r#"{"content":"\u00e9"}"#, ""),
    ] {
        assert!(
            !body_agrees(declined.as_bytes()).unwrap(),
            "taken: {declined}"
        );
    }
}

prop_compose! {
    /// A whole chat body of the common shape with varied fields, usage, order and spacing.
    fn completion_body()(
        content in proptest::option::of(field_value()),
        reasoning_content in proptest::option::of(field_value()),
        reasoning in proptest::option::of(field_value()),
        tools in prop_oneof![
            4 => Just(""),
            2 => Just(r#""tool_calls":[]"#),
            1 => Just(r#""tool_calls":[{"function":{"name":"f","arguments":"x"}}]"#),
        ],
        object in prop_oneof![
            8 => Just("chat.completion"),
            1 => Just("chat.completion.chunk"),
        ],
        usage in prop_oneof![
            2 => Just(String::new()),
            1 => Just(r#","usage":null"#.to_string()),
            1 => Just(r#","usage":{}"#.to_string()),
            6 => (0u64..5000, 0u64..5000, any::<bool>()).prop_map(|(p, c, details)| {
                let d = if details {
                    r#","prompt_tokens_details":null,"completion_tokens_details":null"#
                } else {
                    ""
                };
                format!(r#","usage":{{"prompt_tokens":{p},"total_tokens":{},"completion_tokens":{c}{d}}}"#, p + c)
            }),
            1 => Just(r#","usage":{"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":2}}"#.to_string()),
            1 => Just(r#","usage":{"output_tokens":3}"#.to_string()),
        ],
        space in prop_oneof![Just(""), Just(" ")],
        reversed in any::<bool>(),
    ) -> String {
        let mut fields: Vec<String> = vec![r#""role":"assistant""#.to_string()];
        for (k, v) in [("content", content), ("reasoning_content", reasoning_content),
                       ("reasoning", reasoning)] {
            if let Some(v) = v {
                fields.push(format!("\"{k}\":{space}{v}"));
            }
        }
        if !tools.is_empty() {
            fields.push(tools.to_string());
        }
        if reversed {
            fields.reverse();
        }
        format!(
            "{{\"id\":\"c\",{space}\"object\":\"{object}\",\"created\":17,\
             \"choices\":[{{\"index\":0,\"message\":{{{}}},\"logprobs\":null,\
             \"finish_reason\":\"length\"}}]{usage}}}",
            fields.join(",")
        )
    }
}

proptest! {
    #[test]
    fn generated_bodies_are_read_as_the_full_parser_reads_them(b in completion_body()) {
        body_agrees(b.as_bytes()).map_err(TestCaseError::fail)?;
    }

    /// Corrupting the real body anywhere (a byte replaced, or the body cut short) never makes
    /// the fast path disagree with the full parser.
    #[test]
    fn corrupted_real_bodies_never_disagree(
        at in 0usize..1000,
        byte in prop::sample::select(b"{}[]\",:\\ 0a-.nu\n".to_vec()),
        cut in any::<bool>(),
    ) {
        body_agrees(&corrupt(VLLM_BODY, at, byte, cut)).map_err(TestCaseError::fail)?;
    }
}

/// The generated bodies exercise the fast path, not only the fallback.
#[test]
fn generated_bodies_are_mostly_taken() {
    let taken = taken_of_400(completion_body(), body_agrees);
    assert!(taken >= 100, "only {taken} of 400 generated bodies taken");
}

#[test]
fn a_body_with_speculative_decoding_stats_is_the_full_parsers() {
    let body = br#"{"object":"chat.completion","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"metrics":{"speculative_decoding":{"num_spec_steps":1,"acceptance_histogram":[1]}}}"#;
    let mut out = ParsedResponse::default();
    assert!(!super::completion(body, 7, &mut out), "declined");
    crate::endpoint::kinds::chat::parse_full(body, 7, &mut out);
    assert_eq!(out.spec_decode_responses, 1);
    assert_eq!(
        out.spec_decode
            .as_ref()
            .and_then(|p| p.get("num_spec_steps")),
        Some(&serde_json::json!(1))
    );
    // An empty object is no payload (AIPerf's truthiness).
    let empty = br#"{"object":"chat.completion","choices":[{"message":{"content":"hi"}}],"metrics":{"speculative_decoding":{}}}"#;
    let mut out = ParsedResponse::default();
    crate::endpoint::kinds::chat::parse_full(empty, 7, &mut out);
    assert_eq!(
        (out.spec_decode_responses, out.spec_decode.is_none()),
        (0, true)
    );
}
