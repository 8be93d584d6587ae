//! The conversations built from AIPerf's own Weka fixtures and two real kv-cache-tester traces,
//! against the conversations AIPerf 0.13 built from the same files (tests/data/weka/gen.py
//! reduced its dataset cache to `expected.json`).

use ringperf_wire::conversation::{AgentParts, AgentTurnParts};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ringperf_wire::conversation::{Content, Dataset};
use serde_json::Value;

use super::{WekaParams, buffer, load};
use crate::workload::Tokenizer;
use crate::workload::loader::{BlockPrompts, LoadErrorKind};

fn tokenizer() -> &'static Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(Tokenizer::builtin)
}

fn data() -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/weka"
    ))
    .to_path_buf()
}

fn expected() -> &'static Value {
    static E: OnceLock<Value> = OnceLock::new();
    E.get_or_init(|| {
        let text = std::fs::read_to_string(data().join("expected.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// The case's load, with its flags as parameters.
fn load_case(case: &Value) -> Dataset {
    let flags: Vec<&str> = case["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let mut params = WekaParams {
        think_time_only: flags.contains(&"--use-think-time-only"),
        model_names: vec!["mock-model".into()],
        ..WekaParams::default()
    };
    if let Some(i) = flags
        .iter()
        .position(|f| *f == "--trace-idle-gap-cap-seconds")
    {
        params.idle_gap_cap_s = flags[i + 1].parse().ok();
    }
    if let Some(i) = flags.iter().position(|f| *f == "-m") {
        params.model_names = flags[i + 1].split(',').map(String::from).collect();
    }
    let path = data().join(case["path"].as_str().unwrap());
    let mut d = if flags.contains(&"tracelab") {
        super::tracelab::load(&path, 64, &params, tokenizer(), 7)
    } else {
        load(&path, &params, tokenizer(), 7)
    }
    .unwrap();
    if flags.contains(&"--ignore-trace-delays") {
        // As `load_deferred` drops them for every file type.
        for t in d.conversations.iter_mut().flat_map(|c| c.turns.iter_mut()) {
            t.timestamp_ms = None;
            t.delay_ms = None;
            if let Some(a) = t.agent.as_mut() {
                a.predecessors.clear();
            }
        }
    }
    d
}

fn f64_or_null(v: Option<f64>) -> Value {
    v.map_or(Value::Null, Value::from)
}

#[test]
fn conversations_are_the_ones_aiperf_builds() {
    for (name, case) in expected().as_object().unwrap() {
        // A case of AIPerf's figures only has no conversations.
        let Some(want) = case["conversations"].as_array() else {
            continue;
        };
        let got = load_case(case);
        assert_eq!(got.conversations.len(), want.len(), "{name}: conversations");
        for (c, w) in got.conversations.iter().zip(want) {
            let at = format!("{name} {}", c.session_id);
            assert_eq!(c.session_id, w["session_id"].as_str().unwrap(), "{at}");
            assert_eq!(
                c.parent().map_or(Value::Null, Value::from),
                w["parent"],
                "{at}: parent"
            );
            let branches: Vec<Value> = c
                .branches()
                .iter()
                .map(|b| {
                    serde_json::json!({
                        "id": b.id,
                        "children": b.children,
                        "background": b.background,
                        "start_ms": b.start_ms,
                    })
                })
                .collect();
            assert_eq!(Value::from(branches), w["branches"], "{at}: branches");
            let turns = w["turns"].as_array().unwrap();
            assert_eq!(c.turns.len(), turns.len(), "{at}: turns");
            for (k, (t, w)) in c.turns.iter().zip(turns).enumerate() {
                let at = format!("{at} turn {k}");
                let Content::Messages(messages) = &t.content else {
                    panic!("{at}: not messages");
                };
                let roles: Vec<&str> = messages
                    .iter()
                    .map(|m| m["role"].as_str().unwrap())
                    .collect();
                let want_roles: Vec<&str> = w["roles"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap())
                    .collect();
                assert_eq!(roles, want_roles, "{at}: roles");
                // Each message's text re-tokenized: the block text differs from AIPerf's (its
                // own corpus), the lengths agree within a token or two at message edges; AIPerf's
                // own re-tokenization drifts (8 in 5,128 on kv-cache-tester's trace 0403, and by
                // up to 10 between two of its runs of one file), ringperf's around unkeyed tails
                // (4 in 522). What is built is exact: the property test below.
                for (m, want) in messages.iter().zip(w["tokens"].as_array().unwrap()) {
                    let n = tokenizer().count(m["content"].as_str().unwrap()) as i64;
                    let want = want.as_i64().unwrap();
                    assert!(
                        (n - want).abs() <= 2 + want / 100,
                        "{at}: {n} tokens, AIPerf {want}"
                    );
                }
                assert_eq!(
                    t.max_tokens.map(u64::from),
                    w["max_tokens"].as_u64(),
                    "{at}: max_tokens"
                );
                assert_eq!(t.model.as_deref(), w["model"].as_str(), "{at}: model");
                assert_eq!(f64_or_null(t.timestamp_ms), w["timestamp_ms"], "{at}: ts");
                assert_eq!(f64_or_null(t.delay_ms), w["delay_ms"], "{at}: delay");
                let agent = t.agent.as_deref().unwrap();
                // AIPerf drops the recorded server time with the delays.
                let ignored = case["flags"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f == "--ignore-trace-delays"));
                if !ignored {
                    assert_eq!(
                        f64_or_null(agent.api_time_ms),
                        w["api_time_ms"],
                        "{at}: api"
                    );
                }
                assert_eq!(
                    t.resets_context(),
                    w["reset"].as_bool().unwrap(),
                    "{at}: reset"
                );
                assert_eq!(
                    Value::from(t.spawns().to_vec()),
                    w["spawns"],
                    "{at}: spawns"
                );
                assert_eq!(Value::from(t.joins().to_vec()), w["joins"], "{at}: joins");
                let (h, n) = agent.prefix_blocks.unwrap();
                assert_eq!(
                    serde_json::json!([h, n]),
                    w["prefix_blocks"],
                    "{at}: prefix"
                );
            }
        }
    }
}

#[test]
fn a_turn_is_its_recorded_input_length_exactly() {
    // The prompt's tokens (before any re-tokenization) are `in`, whatever the cut and the reply.
    let mut prompts = BlockPrompts::new(tokenizer(), 4, 1, 0);
    let mut c = buffer::Context::default();
    c.first(&mut prompts, &[0, 1, 2, 3], 18, 0, 4).unwrap();
    assert_eq!((c.tokens(), c.roles()), (18, vec!["user"]));
    assert!(!c.delta().reset);
    // Shares two blocks: the user message is cut (it was sent: a reset), one new block goes to
    // the assistant, the last back to the user.
    c.next(&mut prompts, &[0, 1, 2, 3], 8, &[0, 1, 9, 10], 16, None, 4);
    assert_eq!(c.tokens(), 16);
    assert_eq!(c.roles(), vec!["user", "assistant", "user"]);
    let d = c.delta();
    assert!(d.reset);
    assert_eq!(d.messages.len(), 3);
    // Pure growth: only the new segments, no reset.
    c.next(
        &mut prompts,
        &[0, 1, 9, 10],
        4,
        &[0, 1, 9, 10, 11, 12],
        26,
        None,
        4,
    );
    assert_eq!(c.tokens(), 26);
    let d = c.delta();
    assert!(!d.reset);
    assert_eq!(d.messages.len(), 2, "{:?}", d.messages);
}

#[test]
fn an_idle_gap_cap_compresses_the_timeline_between_request_starts() {
    // Starts 0, 20, 220 and 230 s under a 60 s cap: the 200 s gap keeps its first 60 s, and a
    // time inside its cut part falls on the cut's end.
    let w = super::Warp::new(vec![0.0, 20.0, 220.0, 230.0], 60.0);
    let map: Vec<f64> = [0.0, 20.0, 100.0, 220.0, 230.0]
        .iter()
        .map(|&t| w.map(t))
        .collect();
    assert_eq!(map, [0.0, 20.0, 80.0, 80.0, 90.0]);
}

#[test]
fn assistant_caps_keep_a_later_pull_back_on_a_user_block() {
    // Turn 2 cuts back to block 3 (adding nothing): turn 1, which added blocks 2 and 3, may
    // give none of them to the assistant, so the context still ends on a user block.
    let turns: [(&[i64], usize); 3] = [(&[1, 2], 128), (&[1, 2, 3, 4], 256), (&[1, 2, 3], 192)];
    assert_eq!(
        buffer::assistant_caps(&turns, 64),
        vec![None, Some(0), None]
    );
}

#[test]
fn bad_traces_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let base = r#"{"id":"t","models":["m"],"block_size":4,"hash_id_scope":"local","requests":[{"type":"n","t":0,"model":"m","in":8,"out":2,"hash_ids":[1,2]}]"#;
    let cases = [
        (write("ok.json", &format!("{base}}}")), None),
        (
            write("noscope.json", &(base.replace(r#","hash_id_scope":"local""#, "") + "}")),
            Some("hash_id_scope"),
        ),
        (
            write("global.json", &(base.replace("local", "global") + "}")),
            Some("global"),
        ),
        (
            write("extra.json", &format!(r#"{base},"extra":1}}"#)),
            Some("unknown field `extra`"),
        ),
        (
            write("bs0.json", &(base.replace(r#""block_size":4"#, r#""block_size":0"#) + "}")),
            Some("block_size"),
        ),
        (
            write("nested.json", &(base.replace(
                r#"[{"type":"n""#,
                r#"[{"type":"subagent","t":0,"agent_id":"a","subagent_type":"x","status":"ok","models":[],"requests":[{"type":"subagent"}]},{"type":"n""#,
            ) + "}")),
            Some("requests[0]"),
        ),
    ];
    for (path, want) in cases {
        let got = load(&path, &WekaParams::default(), tokenizer(), 1);
        match want {
            None => assert!(got.is_ok(), "{got:?}"),
            Some(text) => {
                let e = got.unwrap_err();
                assert!(
                    matches!(e.kind, LoadErrorKind::Invalid(_))
                        && e.to_string()
                            .contains("does not match the Weka trace schema")
                        && e.to_string().contains(text),
                    "{path:?}: {e}"
                );
            }
        }
    }
    let e = load(
        &write("bad.json", "{"),
        &WekaParams::default(),
        tokenizer(),
        1,
    )
    .unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::Json(_)), "{e}");
    // Two files of a directory with one id.
    let two = tempfile::tempdir().unwrap();
    for n in ["a.json", "b.json"] {
        std::fs::write(two.path().join(n), format!("{base}}}")).unwrap();
    }
    let e = load(two.path(), &WekaParams::default(), tokenizer(), 1).unwrap_err();
    assert!(e.to_string().contains("duplicate trace id 't'"), "{e}");
}

#[test]
fn max_context_length_leaves_out_longer_traces_and_says_what_would_admit_one() {
    let p = data().join("finite");
    let all = load(&p, &WekaParams::default(), tokenizer(), 1).unwrap();
    let roots = |d: &Dataset| d.conversations.iter().filter(|c| c.is_root()).count();
    assert_eq!(roots(&all), 5);
    let e = load(
        &p,
        &WekaParams {
            max_context_length: Some(1),
            ..WekaParams::default()
        },
        tokenizer(),
        1,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("--max-context-length to at least"),
        "{e}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Whatever the blocks, lengths and replies, every turn's context is exactly its recorded
    /// input, it ends with a user message whenever the turn added anything, and nothing panics.
    #[test]
    fn every_turn_is_its_input_length_whatever_the_blocks(
        bs in 1usize..5,
        prefix in 0usize..9,
        turns in proptest::collection::vec(
            (proptest::collection::vec(0i64..6, 0..7), 1usize..40, 0usize..12),
            1..7,
        ),
    ) {
        // Recorded hash lists cover whole blocks only: a list longer than the prompt's whole
        // blocks (a hashed partial block) can leave the previous turn's tail in place, in
        // AIPerf's reconstruction as in ringperf's, so no length holds there.
        let turns: Vec<(Vec<i64>, usize, usize)> = turns
            .into_iter()
            .map(|(mut h, i, o)| {
                h.truncate(i / bs);
                (h, i, o)
            })
            .collect();
        let mut prompts = BlockPrompts::new(tokenizer(), bs, 3, 0);
        let mut c = buffer::Context::default();
        let shape: Vec<(&[i64], usize)> =
            turns.iter().map(|(h, i, _)| (h.as_slice(), *i)).collect();
        let caps = buffer::assistant_caps(&shape, bs);
        let (h0, in0, _) = &turns[0];
        if c.first(&mut prompts, h0, *in0, prefix, bs).is_err() {
            // A system prefix longer than the recorded blocks is refused, never guessed.
            proptest::prop_assert!(prefix.div_ceil(bs) > h0.len());
            return Ok(());
        }
        proptest::prop_assert_eq!(c.tokens(), *in0);
        let _ = c.delta();
        for k in 1..turns.len() {
            let (prev, _, out) = &turns[k - 1];
            let (h, input, _) = &turns[k];
            c.next(&mut prompts, prev, *out, h, *input, caps[k], bs);
            proptest::prop_assert_eq!(c.tokens(), *input, "turn {}", k);
            let d = c.delta();
            let g = buffer::geometry(prev, h, *input, bs);
            if g.new_blocks > 0 || g.tail > 0 {
                proptest::prop_assert_eq!(c.roles().last().copied(), Some("user"));
            }
            proptest::prop_assert!(!d.messages.is_empty() || !d.reset);
        }
    }
}

#[test]
fn a_tracelab_file_without_sessions_or_with_a_bad_line_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let load_text = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        super::tracelab::load(&p, 64, &WekaParams::default(), tokenizer(), 1)
    };
    let e = load_text("empty.jsonl", "").unwrap_err();
    assert!(e.to_string().contains("no TraceLab session found"), "{e}");
    let e = load_text("nosid.jsonl", "{\"round_index\": 0}\n").unwrap_err();
    assert!(e.to_string().contains("'session_id'"), "{e}");
    let e = load_text("bad.jsonl", "{\"session_id\": \"a\"}\n\n{oops\n").unwrap_err();
    assert!(
        matches!(e.kind, LoadErrorKind::Json(_)) && e.line == Some(3),
        "{e}"
    );
    let e = load_text(
        "ts.jsonl",
        r#"{"session_id": "a", "timing_events": [{"event_type": "user_message", "timestamp": "yesterday"}]}"#,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot convert TraceLab session 'a'"),
        "{e}"
    );
}

#[test]
fn tracelab_blocks_keep_the_cached_prefix_and_mint_the_rest() {
    // Block size 64; rounds of (input, cached prefix) tokens (200, 0), (300, 190), (150, 70):
    // 3 fresh blocks; 2 kept, 2 fresh; 1 kept, 1 fresh (one counter for the trace).
    let rows: Vec<Value> = [(200, 0), (300, 190), (150, 70)]
        .iter()
        .enumerate()
        .map(|(i, (total, prefix))| {
            serde_json::json!({
                "session_id": "s", "round_index": i, "input_tokens_total": total,
                "prefix_tokens": prefix,
                "timing_events": [{"event_type": "user_message",
                                   "timestamp": format!("2025-01-01T00:00:0{i}Z")}],
            })
        })
        .collect();
    let text: String = rows.iter().map(|r| r.to_string() + "\n").collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    std::fs::write(&p, text).unwrap();
    let d = super::tracelab::load(&p, 64, &WekaParams::default(), tokenizer(), 1).unwrap();
    let blocks: Vec<(u32, u32)> = d.conversations[0]
        .turns
        .iter()
        .map(|t| t.agent.as_ref().unwrap().prefix_blocks.unwrap())
        .collect();
    // Hits over the chains [1,2,3], [1,2,4,5], [1,6].
    assert_eq!(blocks, [(0, 3), (2, 4), (1, 2)]);
    assert_eq!(d.conversations[0].session_id, "s");
    let delays: Vec<Option<f64>> = d.conversations[0]
        .turns
        .iter()
        .map(|t| t.delay_ms)
        .collect();
    assert_eq!(delays, [None, Some(1000.0), Some(1000.0)]);
}

#[test]
fn synthesis_caps_drop_long_root_requests_and_cap_root_outputs_only() {
    // one_subagent: root calls of 200 and 400 input tokens asking 30 and 40, a subagent call of
    // 100 asking 50.
    let p = data().join("traces/one_subagent.json");
    let params = WekaParams {
        max_isl: Some(300),
        max_osl: Some(35),
        ..WekaParams::default()
    };
    let d = load(&p, &params, tokenizer(), 1).unwrap();
    let max_tokens = |c: usize| -> Vec<Option<u32>> {
        d.conversations[c]
            .turns
            .iter()
            .map(|t| t.max_tokens)
            .collect()
    };
    assert_eq!(max_tokens(0), [Some(30)], "the 400-token call is left out");
    assert_eq!(
        max_tokens(1),
        [Some(50)],
        "a subagent's output is not capped"
    );
    let capped = WekaParams {
        max_osl: Some(35),
        ..WekaParams::default()
    };
    let d = load(&p, &capped, tokenizer(), 1).unwrap();
    let roots: Vec<Option<u32>> = d.conversations[0]
        .turns
        .iter()
        .map(|t| t.max_tokens)
        .collect();
    assert_eq!(roots, [Some(30), Some(35)]);
}

/// The barriers between streams (`replay_predecessors`) AIPerf 0.13 built for each of these
/// traces (tests/data/weka/barriers: read from its dataset cache), turn by turn: the same
/// requests of the same streams, none where it has none.
#[test]
fn barriers_are_the_predecessors_aiperf_infers() {
    let text = std::fs::read_to_string(data().join("barriers/predecessors.json")).unwrap();
    let want: Value = serde_json::from_str(&text).unwrap();
    let cases: &[(&str, &str, &[&str])] = &[
        ("one_subagent", "traces/one_subagent.json", &[]),
        ("terminal_subagent", "traces/terminal_subagent.json", &[]),
        ("multi_model", "traces/multi_model.json", &[]),
        ("weka_subagent_0001", "traces/weka_subagent_0001.json", &[]),
        ("finite_traces", "finite", &[]),
        ("kvct_0291", "traces/kvct_trace_0291.json", &[]),
        ("kvct_0403", "traces/kvct_trace_0403.json", &[]),
        ("kvct_0489", "traces/kvct_trace_0489.json", &[]),
        ("kvct_0527", "traces/kvct_trace_0527.json", &[]),
        ("kvct_0613", "traces/kvct_trace_0613.json", &[]),
        ("tracelab", "tracelab/round_trace.jsonl", &["tracelab"]),
        (
            "one_subagent_idlegap1",
            "traces/one_subagent.json",
            &["--trace-idle-gap-cap-seconds", "1"],
        ),
        (
            "kvct_0291_idlegap5",
            "traces/kvct_trace_0291.json",
            &["--trace-idle-gap-cap-seconds", "5"],
        ),
        (
            "kvct_0291_ignore",
            "traces/kvct_trace_0291.json",
            &["--ignore-trace-delays"],
        ),
    ];
    let mut gated = 0;
    for &(name, path, flags) in cases {
        let case = serde_json::json!({"path": path, "flags": flags});
        let d = load_case(&case);
        let ids: Vec<&str> = (d.conversations.iter())
            .map(|c| c.session_id.as_str())
            .collect();
        for w in want[name].as_array().unwrap() {
            let sid = w["session_id"].as_str().unwrap();
            let c = (d.conversations.iter())
                .find(|c| c.session_id == sid)
                .unwrap_or_else(|| panic!("{name}: no conversation {sid}"));
            let turns = w["turns"].as_array().unwrap();
            assert_eq!(c.turns.len(), turns.len(), "{name} {sid}");
            for (k, (t, wt)) in c.turns.iter().zip(turns).enumerate() {
                let got: Vec<Value> = (t.agent_turn().map_or(&[][..], |a| &a.predecessors))
                    .iter()
                    .map(|&(pc, pt)| serde_json::json!([ids[pc as usize], pt]))
                    .collect();
                assert_eq!(
                    Value::Array(got),
                    wt["predecessors"],
                    "{name} {sid} turn {k}"
                );
                gated += usize::from(!wt["predecessors"].as_array().unwrap().is_empty());
            }
        }
    }
    assert_eq!(gated, 4 + 11 + 49 + 1, "the fixtures' gated turns");
}

/// A subagent whose calls make a main chain and a one-call sidecar (written here): the sidecar
/// (1.3 s) waits for the chain's first call (ended 1.2 s), the chain's second (1.5 s) for the
/// sidecar (ended 1.4 s); the root's scope is its own.
#[test]
fn a_subagents_sidecar_and_its_chain_wait_for_each_other() {
    let params = WekaParams {
        model_names: vec!["mock-model".into()],
        ..WekaParams::default()
    };
    let d = load(
        &data().join("traces/barrier_sidecar.json"),
        &params,
        tokenizer(),
        7,
    )
    .unwrap();
    let ids: Vec<&str> = (d.conversations.iter())
        .map(|c| c.session_id.as_str())
        .collect();
    let preds = |sid: &str| -> Vec<Vec<(String, u32)>> {
        let c = d
            .conversations
            .iter()
            .find(|c| c.session_id == sid)
            .unwrap();
        (c.turns.iter())
            .map(|t| {
                (t.agent_turn().unwrap().predecessors.iter())
                    .map(|&(c, k)| (ids[c as usize].to_string(), k))
                    .collect()
            })
            .collect()
    };
    assert_eq!(ids.len(), 3, "{ids:?}");
    let chain = "barrier_sidecar::sa:agent_001";
    let side = ids[2];
    assert!(
        side.starts_with("barrier_sidecar::sa:agent_001:aux:"),
        "{ids:?}"
    );
    assert_eq!(preds("barrier_sidecar"), [vec![], vec![]]);
    assert_eq!(preds(chain), [vec![], vec![(side.to_string(), 0)]]);
    assert_eq!(preds(side), [vec![(chain.to_string(), 0)]]);
}
