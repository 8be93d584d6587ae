//! `template`: rendering (expectations are what AIPerf 0.13's Jinja2 environment renders for the
//! same variables), extras, `response_field` paths and response parsing.

use std::sync::Arc;

use serde_json::{Value, json};

use super::template::FieldPath;
use crate::endpoint::EndpointKind;
use crate::endpoint::response::ParsedResponse;

fn parse_with(field: Option<&str>, body: &str) -> ParsedResponse {
    let field = field.map(|f| Arc::new(FieldPath::parse(f).unwrap()));
    let mut out = ParsedResponse::with_response_field(field);
    (EndpointKind::Template.descriptor().parse)(body.as_bytes(), 7, &mut out);
    out
}

#[test]
fn field_paths_follow_jmespath_on_hand_written_bodies() {
    let body: Value = serde_json::from_str(
        r#"{"choices":[{"message":{"content":"first"}},{"message":{"content":"last"}}],
            "out-put":{"text":"q"},"data":[[1,2]],"n":null}"#,
    )
    .unwrap();
    let at = |p: &str| FieldPath::parse(p).unwrap().search(&body).cloned();
    assert_eq!(at("choices[0].message.content"), Some(json!("first")));
    assert_eq!(at("choices[-1].message.content"), Some(json!("last")));
    assert_eq!(at("choices[2].message"), None);
    assert_eq!(at("choices[-3]"), None);
    assert_eq!(at(r#""out-put".text"#), Some(json!("q")));
    assert_eq!(at("data[0][1]"), Some(json!(2)));
    assert_eq!(at("choices.message"), None, "a field of a list is null");
    assert_eq!(at("data[0].x"), None);
    assert_eq!(at("n"), None);
    assert_eq!(at("missing.deeper"), None);
}

#[test]
fn field_paths_outside_the_subset_are_refused() {
    for bad in [
        "",
        "a.",
        ".a",
        "a..b",
        "choices.0.text",
        "a[*]",
        "a[1:2]",
        "a | b",
        "a[?x]",
        "length(a)",
        "a[",
        "\"open",
        "a[0]b",
    ] {
        let e = FieldPath::parse(bad).unwrap_err().to_string();
        assert!(e.contains("response_field"), "{bad}: {e}");
    }
}

#[test]
fn response_field_extracts_by_shape_and_no_match_is_no_content() {
    let body = r#"{"result":{"answer":"forty two"},"text":"decoy","vecs":[[0.5]]}"#;
    let out = parse_with(Some("result.answer"), body);
    assert_eq!(out.output_text, "forty two");
    assert_eq!(out.content_stamps_ns, vec![7]);
    // A list of number lists is embeddings: content without text.
    let out = parse_with(Some("vecs"), body);
    assert_eq!((out.output_text.as_str(), out.content_responses()), ("", 1));
    // No match, an empty string, an object: no content, and no fall-back to `text`.
    for field in ["result.missing", "result", "nope[0]"] {
        let out = parse_with(Some(field), body);
        assert_eq!(out.content_responses(), 0, "{field}");
        assert_eq!(out.output_text, "", "{field}");
    }
    let out = parse_with(Some("a"), r#"{"a":""}"#);
    assert_eq!(out.content_responses(), 0);
    // Without a field (or AIPerf's default `text`): auto-detection finds the decoy.
    let out = parse_with(None, body);
    assert_eq!(out.output_text, "decoy");
    // Undecodable data is its own text, with or without a field.
    let out = parse_with(Some("a.b"), "[DONE]");
    assert_eq!(out.output_text, "[DONE]");
}

#[cfg(feature = "template")]
mod render {
    use super::*;
    use crate::conversation::{Content, Turn};
    use crate::endpoint::payload::TurnBody;
    use crate::endpoint::{PayloadParams, PayloadTemplate, build_turn};

    /// Every variable ringperf fills, written out.
    const ALL_VARS: &str = "{{ text }}|{{ texts|tojson }}|{{ query }}|{{ queries|tojson }}|\
        {{ passage }}|{{ passages|tojson }}|{{ texts_by_name|tojson }}|{{ model }}|\
        {{ max_tokens }}|{{ role }}|{{ stream }}|{{ image }}|{{ images|tojson }}|\
        {{ audios|tojson }}|{{ videos|tojson }}|{{ audio }}|{{ video }}|\
        {{ images_by_name|tojson }}|{{ turn.max_tokens }}|{{ turn.texts[0].name }}|\
        {{ turns|length }}";

    fn params(model: &str, streaming: bool) -> PayloadParams {
        PayloadParams {
            model: model.into(),
            streaming,
            ..PayloadParams::default()
        }
    }

    fn texts(t: &[&str], max_tokens: Option<u32>) -> Turn {
        Turn {
            content: Content::Texts(t.iter().map(|s| s.to_string()).collect()),
            max_tokens,
            ..Turn::default()
        }
    }

    #[test]
    fn every_variable_renders_as_aiperf_renders_it() {
        let t = PayloadTemplate::compile(ALL_VARS, None).unwrap();
        // AIPerf 0.13 (Jinja2, autoescape=True) renders exactly these for the same turns.
        let turn = texts(&["Hi & <you>", "two \"x\""], Some(16));
        assert_eq!(
            t.render_text(&params("m", true), &turn).unwrap(),
            r#"Hi &amp; &lt;you&gt;|["Hi \u0026 \u003cyou\u003e", "two \"x\""]|None|[]|None|[]|{"text": ["Hi \u0026 \u003cyou\u003e", "two \"x\""]}|m|16|None|True|None|[]|[]|[]|None|None|{}|16|text|1"#
        );
        let turn = Turn {
            content: Content::Rankings {
                query: "q'1".into(),
                passages: vec!["p1".into(), "p2".into()],
            },
            role: Some("user".into()),
            ..Turn::default()
        };
        assert_eq!(
            t.render_text(&params("rank-m", false), &turn).unwrap(),
            r#"q&#39;1|["q\u00271", "p1", "p2"]|q&#39;1|["q\u00271"]|p1|["p1", "p2"]|{"passages": ["p1", "p2"], "query": ["q\u00271"]}|rank-m|None|user|False|None|[]|[]|[]|None|None|{}|None|query|1"#
        );
    }

    #[test]
    fn nv_embedqa_is_built_in() {
        let t = PayloadTemplate::compile("nv-embedqa", None).unwrap();
        assert_eq!(t.source(), r#"{"text": {{ texts|tojson }}}"#);
        let turn = texts(&["a <b> & 'c'", "plain"], None);
        assert_eq!(
            t.render_text(&params("m", false), &turn).unwrap(),
            r#"{"text": ["a \u003cb\u003e \u0026 \u0027c\u0027", "plain"]}"#
        );
        let body = build_turn(
            EndpointKind::Template,
            &PayloadParams {
                template: Some(Arc::new(t)),
                ..params("m", false)
            },
            &TurnBody::alone(&turn),
        );
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            r#"{"text":["a <b> & 'c'","plain"]}"#
        );
    }

    #[test]
    fn extras_then_turn_extras_merge_into_the_rendered_object() {
        let t = PayloadTemplate::compile(
            r#"{"messages": [{"role": "{{ role or "user" }}", "content": "{{ text }}"}], "model": "{{ model }}", "max_tokens": {{ max_tokens|tojson }}, "stream": {{ stream|tojson }}}"#,
            None,
        )
        .unwrap();
        let mut p = params("m", false);
        p.extra_inputs = json!({"model": "override", "ignore_eos": true, "top_k": 3})
            .as_object()
            .unwrap()
            .clone();
        p.template = Some(Arc::new(t));
        let mut turn = texts(&["it's <ok>"], Some(5));
        turn.extra = json!({"top_k": 9, "seed": 1}).as_object().unwrap().clone();
        let body = build_turn(EndpointKind::Template, &p, &TurnBody::alone(&turn));
        // AIPerf renders `"content": "it&#39;s &lt;ok&gt;"` (autoescape) and `dict.update`s.
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            r#"{"messages":[{"role":"user","content":"it&#39;s &lt;ok&gt;"}],"model":"override","max_tokens":5,"stream":false,"ignore_eos":true,"top_k":9,"seed":1}"#
        );
    }

    #[test]
    fn a_rendering_that_is_not_a_json_object_is_an_error() {
        let p = params("m", false);
        let turn = texts(&["x"], None);
        let t = PayloadTemplate::compile("prompt={{ text }}", None).unwrap();
        let e = t.render(&p, &turn).unwrap_err().to_string();
        assert!(
            e.contains("did not render valid JSON") && e.contains("prompt=x"),
            "{e}"
        );
        let t = PayloadTemplate::compile("{{ texts|tojson }}", None).unwrap();
        let e = t.render(&p, &turn).unwrap_err().to_string();
        assert!(e.contains("must render a JSON object, not an array"), "{e}");
        let e = PayloadTemplate::compile("{{ text ", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not compile"), "{e}");
        let e = PayloadTemplate::compile("nv-embedqa", Some("a[*]"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("response_field"), "{e}");
        assert!(
            PayloadTemplate::compile("nv-embedqa", Some("text"))
                .unwrap()
                .response_field()
                .is_none(),
            "`text` is AIPerf's default: auto-detection"
        );
    }
}
