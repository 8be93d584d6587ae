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

const VLLM_STREAM: &[u8] = include_bytes!("../../../benches/data/vllm-cpu-chat-stream.sse.txt");

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
        let mut m = all[pick % all.len()].to_vec();
        let at = at % m.len();
        if cut {
            m.truncate(at);
        } else {
            m[at] = byte;
        }
        agrees(&m).map_err(TestCaseError::fail)?;
    }
}

/// The generated chunks exercise the compact path, not only the fallback: a good share of them
/// is taken (and then agrees, as the property above checks).
#[test]
fn generated_chunks_are_mostly_taken() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut taken = 0;
    for _ in 0..400 {
        let m = chunk().new_tree(&mut runner).unwrap().current();
        if agrees(m.as_bytes()).unwrap() {
            taken += 1;
        }
    }
    assert!(taken >= 100, "only {taken} of 400 generated chunks taken");
}
