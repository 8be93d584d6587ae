use std::io::Cursor;
use std::path::Path;

use proptest::prelude::*;
use serde_json::{Value, json};

use ringperf_wire::conversation::{
    AgentParts, AgentTurnParts, Content, ContextMode, Dataset, Sampling, ThinkTime,
};

use super::super::error::LoadError;
use super::super::lines::JsonLines;
use super::load_lines;

fn load(text: &str) -> Result<Dataset, LoadError> {
    load_capped(text, None)
}

fn load_capped(text: &str, cap_s: Option<f64>) -> Result<Dataset, LoadError> {
    let path = Path::new("d.jsonl");
    load_lines(
        JsonLines::new(path, Cursor::new(text.as_bytes().to_vec())),
        path,
        cap_s,
    )
}

fn err(text: &str) -> String {
    load(text).expect_err("refused").to_string()
}

const M: &str = r#""messages": [{"role": "user", "content": "hi"}]"#;

fn index(d: &Dataset, sid: &str) -> usize {
    d.conversations
        .iter()
        .position(|c| c.session_id == sid)
        .unwrap()
}

/// Branch ids, join turns and background flags as AIPerf's `_desugar_forks` makes them.
#[test]
fn branches_get_aiperfs_ids_and_joins() {
    let root = format!(
        "{{\"session_id\": \"r\", \"turns\": [\
         {{{M}, \"forks\": [{{\"child\": \"bg\", \"background\": true}}], \
            \"spawns\": [\"a\", \"b\", {{\"children\": [\"c\"], \"join_at\": 2}}, \"d\"]}}, \
         {{{M}, \"spawns\": [\"e\"]}}, \
         {{{M}, \"forks\": [\"f1\", {{\"child\": \"f2\"}}, {{\"child\": \"bg2\", \"background\": true}}], \
            \"spawns\": [\"g\"]}}]}}"
    );
    let mut lines = vec![root];
    for sid in ["a", "b", "c", "d", "e", "g", "bg", "bg2", "f1", "f2"] {
        lines.push(format!(
            "{{\"session_id\": \"{sid}\", \"turns\": [{{{M}}}]}}"
        ));
    }
    let text = lines.join("\n");
    let d = load(&text).unwrap();
    let r = &d.conversations[0];
    let ids: Vec<(&str, bool, bool)> = r
        .branches()
        .iter()
        .map(|b| (b.id.as_str(), b.fork, b.background))
        .collect();
    assert_eq!(
        ids,
        [
            ("r:0:bg_fork", true, true),
            ("r:0:spawn", false, false),
            ("r:0:spawn1", false, false),
            ("r:0:spawn2", false, false),
            ("r:1", false, false),
            ("r:2:fork", true, true),
            ("r:2:bg_fork", true, true),
            ("r:2:spawn", false, true),
        ]
    );
    let name = |k: u32| d.conversations[k as usize].session_id.as_str();
    let children: Vec<Vec<&str>> = r
        .branches()
        .iter()
        .map(|b| b.children.iter().map(|&k| name(k)).collect())
        .collect();
    assert_eq!(children[1], ["a", "b"]);
    assert_eq!(children[2], ["c"]);
    assert_eq!(children[3], ["d"]);
    assert_eq!(children[5], ["f1", "f2"]);
    // Turn 0 starts four branches; turn 1 joins `a, b` and `d` (the bare groups); turn 2 joins
    // `c` (join_at 2) and `e`.
    assert_eq!(r.turns[0].spawns(), [0, 1, 2, 3]);
    assert_eq!(r.turns[1].joins(), [1, 3]);
    assert_eq!(r.turns[2].joins(), [2, 4]);
    assert_eq!(r.turns[2].spawns(), [5, 6, 7]);
    // Roots: only `r`; each child names its first parent; the forked ones are marked.
    assert!(
        d.conversations
            .iter()
            .skip(1)
            .all(|c| c.parent() == Some(0))
    );
    assert!(
        d.conversations[index(&d, "f1")]
            .agent
            .as_ref()
            .unwrap()
            .forked
    );
    assert!(
        !d.conversations[index(&d, "a")]
            .agent
            .as_ref()
            .unwrap()
            .forked
    );
    assert_eq!(d.default_sampling, Sampling::Random);
    assert!(!d.replay);
}

#[test]
fn a_turn_is_its_messages_model_max_tokens_extra_and_capped_delay() {
    let text = r#"{"session_id": "r", "turns": [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "u"}]}], "model": "m2", "max_tokens": 7, "extra": {"temperature": 0.5}, "tools": [{"type": "function"}], "delay": 12.5}, {"messages": [{"role": "user", "content": "v"}], "delay": 3000}]}"#;
    let d = load_capped(text, Some(2.0)).unwrap();
    let t = &d.conversations[0].turns;
    assert_eq!(
        t[0].content,
        Content::Messages(vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": [{"type": "text", "text": "u"}]})
        ])
    );
    assert_eq!(t[0].model.as_deref(), Some("m2"));
    assert_eq!(t[0].max_tokens, Some(7));
    assert_eq!(t[0].delay_ms, Some(12.5));
    assert_eq!(t[0].extra["temperature"], 0.5);
    assert_eq!(t[0].extra["tools"], json!([{"type": "function"}]));
    // The later turn names no tools: the body carries the latest (AIPerf's `_latest_turn_attr`);
    // its 3 s delay is capped at 2 s.
    assert_eq!(t[1].extra.get("tools"), None, "not the turn's own");
    let inherited = t[1].agent.as_ref().unwrap().inherited_tools.clone();
    assert_eq!(inherited, Some(json!([{"type": "function"}])));
    assert_eq!(t[1].delay_ms, Some(2000.0));
    assert_eq!(t[1].max_tokens, None);
    assert_eq!(t[1].model, None);
    assert_eq!(d.conversations[0].context(), ContextMode::LiveReplies);
}

#[test]
fn tools_follow_forks_and_stop_at_an_isolated_conversation() {
    let text = format!(
        "{{\"session_id\": \"r\", \"turns\": [{{{M}, \"tools\": [{{\"n\": 1}}]}}, {{{M}, \"forks\": [\"f\"], \"spawns\": [\"s\"]}}]}}\n\
         {{\"session_id\": \"f\", \"turns\": [{{{M}}}, {{{M}, \"tools\": [{{\"n\": 2}}]}}, {{{M}}}]}}\n\
         {{\"session_id\": \"s\", \"turns\": [{{{M}}}]}}\n\
         {{\"session_id\": \"i\", \"context_mode\": \"MESSAGE_ARRAY_WITH_RESPONSES\", \"turns\": [{{{M}, \"tools\": [{{\"n\": 3}}]}}, {{{M}}}]}}"
    );
    let d = load(&text).unwrap();
    let tools = |sid: &str| -> Vec<Option<Value>> {
        d.conversations[index(&d, sid)]
            .turns
            .iter()
            .map(|t| {
                // The tools the body carries: its own, else those it inherits.
                let inherited = t.agent.as_ref().and_then(|a| a.inherited_tools.clone());
                t.extra.get("tools").cloned().or(inherited)
            })
            .collect()
    };
    let n = |k: i64| Some(json!([{"n": k}]));
    assert_eq!(tools("f"), [n(1), n(2), n(2)]);
    assert_eq!(tools("s"), [None]);
    assert_eq!(tools("i"), [n(3), None]);
    assert_eq!(
        d.conversations[index(&d, "i")].context(),
        ContextMode::Standalone
    );
}

#[test]
fn pre_session_spawns_are_a_branch_no_turn_starts() {
    let text = format!(
        "{{\"session_id\": \"r\", \"pre_session_spawns\": [\"p\", \"q\"], \"turns\": [{{{M}}}]}}\n\
         {{\"session_id\": \"p\", \"turns\": [{{{M}}}]}}\n{{\"session_id\": \"q\", \"context_mode\": \"deltas_with_responses\", \"turns\": [{{{M}}}]}}"
    );
    let d = load(&text).unwrap();
    let b = &d.conversations[0].branches()[0];
    assert_eq!(
        (b.id.as_str(), b.pre, b.fork, b.background),
        ("r:pre", true, false, true)
    );
    assert_eq!(b.children, [1, 2]);
    assert!(d.conversations[0].turns[0].spawns().is_empty());
    assert_eq!(d.conversations[2].context(), ContextMode::Recorded);
}

/// An orchestrator's spine as AIPerf's loader makes it: a request-free turn a round, each
/// spawning its round (`{sid}:{k}`) joined by the next turn, its think time the turn's delay
/// (the round's own, else the conversation's; capped), then a last turn that only joins; the
/// sampled think time's bounds capped too. Without rounds: one turn, its spawns in the
/// background. Conversation-level spawns do not make their children non-roots of the CLI's
/// count (AIPerf's), but they are children of the graph.
#[test]
fn an_orchestrator_becomes_aiperfs_request_free_spine() {
    let text = [
        r#"{"session_id": "o", "orchestrator": true, "rounds": [{"spawns": ["a", "b"], "think_time_ms": 30}, {"spawns": ["c"]}], "think_time_ms": 60, "think_time_sigma": 0.5, "think_time_min_ms": 20, "think_time_max_ms": 90}"#,
        r#"{"session_id": "f", "orchestrator": true, "spawns": ["a", "c"]}"#,
        r#"{"session_id": "n", "orchestrator": true, "rounds": 2, "spawns": ["b"], "think_time_ms": 15}"#,
        &format!("{{\"session_id\": \"a\", \"turns\": [{{{M}}}]}}"),
        &format!("{{\"session_id\": \"b\", \"turns\": [{{{M}}}]}}"),
        &format!("{{\"session_id\": \"c\", \"turns\": [{{{M}}}]}}"),
    ]
    .join("\n");
    let d = load_capped(&text, Some(0.05)).unwrap();
    let o = &d.conversations[0];
    assert_eq!(o.turns.len(), 3);
    assert!(o.turns.iter().all(|t| t.request_free()));
    let delays: Vec<Option<f64>> = o.turns.iter().map(|t| t.delay_ms).collect();
    assert_eq!(
        delays,
        [Some(30.0), Some(50.0), None],
        "round 1's 60 ms capped at 50"
    );
    let ids: Vec<&str> = o.branches().iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["o:0", "o:1"]);
    let kids: Vec<Vec<u32>> = o.branches().iter().map(|b| b.children.clone()).collect();
    assert_eq!(kids, [vec![3, 4], vec![5]]);
    let spawns: Vec<&[u32]> = o.turns.iter().map(|t| t.spawns()).collect();
    let joins: Vec<&[u32]> = o.turns.iter().map(|t| t.joins()).collect();
    assert_eq!(spawns, [&[0][..], &[1], &[]]);
    assert_eq!(joins, [&[][..], &[0], &[1]]);
    assert_eq!(
        o.think(),
        Some(ThinkTime {
            sigma: 0.5,
            min_ms: Some(20.0),
            max_ms: Some(50.0)
        })
    );
    assert_eq!(
        o.turns[0].content,
        Content::Messages(vec![json!({"role": "user", "content": ""})])
    );
    let f = &d.conversations[1];
    assert_eq!(f.turns.len(), 1);
    assert!(f.turns[0].request_free() && f.turns[0].joins().is_empty());
    assert!(
        f.branches()[0].background,
        "nothing joins a one-turn spine's spawns"
    );
    assert_eq!(f.think(), None);
    let n = &d.conversations[2];
    assert_eq!(n.turns.len(), 3);
    assert_eq!(n.turns[1].delay_ms, Some(15.0));
    let roots: Vec<&str> = (d.conversations.iter())
        .filter(|c| c.is_root())
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(roots, ["o", "f", "n"]);
    // A normal conversation sends its turns.
    assert!(!d.conversations[3].turns[0].request_free());
}

/// AIPerf's refusals, with its sentences (or, for a field, the field named).
#[test]
fn refusals_name_what_aiperf_names() {
    let one = |extra: &str| format!("{{\"session_id\": \"r\", \"turns\": [{{{M}{extra}}}]}}");
    let cases: Vec<(String, &str)> = vec![
        ("".into(), "the DAG JSONL file is empty"),
        ("[1]".into(), "d.jsonl:1: expected each line to be a JSON object"),
        (one(", \"max_tokens\": 0"), "field \"turns[0].max_tokens\": must be greater than or equal to 1"),
        (one(", \"max_tokens\": false"), "not a boolean (got False)"),
        (one(", \"delay\": -1"), "field \"turns[0].delay\": must be greater than or equal to 0"),
        (one(", \"forks\": [7]"), "field \"turns[0].forks[0]\""),
        (one(", \"spawns\": [{\"children\": []}]"), "turns[0].spawns[0].children\": must have at least 1 item"),
        (one(", \"spawns\": [{\"children\": [\"x\"], \"when\": 1}]"), "turns[0].spawns[0].when\": unknown field"),
        (one(", \"forks\": [{\"child\": \"\"}]"), "turns[0].forks[0].child\": must be at least 1 character"),
        ("{\"session_id\": \"\", \"turns\": []}".into(), "field \"session_id\": must be at least 1 character"),
        ("{\"turns\": []}".into(), "field \"session_id\": required but missing"),
        ("{\"session_id\": \"r\"}".into(), "'turns' must be non-empty unless 'orchestrator' is true"),
        ("{\"session_id\": \"r\", \"rounds\": 2, \"turns\": [{\"messages\": [{\"role\": \"user\"}]}]}".into(), "'rounds' is only valid on an orchestrator"),
        ("{\"session_id\": \"r\", \"spawns\": [\"a\"], \"turns\": [{\"messages\": [{\"role\": \"user\"}]}]}".into(), "conversation-level 'spawns' is only valid"),
        ("{\"session_id\": \"o\", \"orchestrator\": true}".into(), "requires a non-empty 'spawns'"),
        ("{\"session_id\": \"o\", \"orchestrator\": true, \"rounds\": 0, \"spawns\": [\"a\"]}".into(), "'rounds' count must be >= 1"),
        ("{\"session_id\": \"o\", \"orchestrator\": true, \"rounds\": [{\"spawns\": [\"a\"]}, {\"spawns\": [\"a\"]}]}".into(), "child session id 'a' is spawned by more than one round"),
        ("{\"session_id\": \"o\", \"orchestrator\": true, \"spawns\": [\"a\"], \"think_time_ms\": 1}".into(), "'think_time_ms' requires 'rounds'"),
        ("{\"session_id\": \"o\", \"orchestrator\": true, \"rounds\": 1, \"spawns\": [\"a\"], \"think_time_ms\": 1, \"think_time_sigma\": 1, \"think_time_min_ms\": 5, \"think_time_max_ms\": 2}".into(), "'think_time_min_ms' must be <= 'think_time_max_ms' (got 5 > 2)"),
        ("{\"session_id\": \"o\", \"orchestrator\": true, \"rounds\": true, \"spawns\": [\"a\"]}".into(), "not a boolean"),
        ("{\"session_id\": \"o\", \"orchestrator\": true, \"spawns\": [\"a\"]}\n".into(), "session 'o' turn 0: branch target 'a' not declared. Known sessions: ['o']"),
        ("{\"session_id\": \"r\", \"context_mode\": \"bogus\", \"turns\": [{\"messages\": [{\"role\": \"user\"}]}]}".into(), "field \"context_mode\""),
        ("{\"session_id\": \"r\", \"context_mode\": \"message_array_without_responses\", \"turns\": [{\"messages\": [{\"role\": \"user\"}]}]}".into(), "reserved and not implemented"),
        (format!("{{\"session_id\": \"r\", \"pre_session_spawns\": [\"a\", \"a\"], \"turns\": [{{{M}}}]}}"), "d.jsonl:1: session 'r' duplicate child_conversation_id 'a' in pre_session_spawns"),
        (one(", \"forks\": [\"a\", {\"child\": \"a\", \"background\": true}]"), "session 'r' turn 0: duplicate child_conversation_id 'a' in fork entries"),
        (one(", \"spawns\": [\"a\", {\"children\": [\"a\"]}]"), "duplicate child_conversation_id 'a' across spawn groups"),
        (one(", \"spawns\": [\"x\"]"), "session 'r' turn 0: branch target 'x' not declared. Known sessions: ['r']"),
        (one(", \"forks\": [\"r\"]"), "cycle detected: r -> r"),
        (one(", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]").replace(&format!("{M}, "), ""), "turns[0].messages[0].content[0]"),
    ];
    for (text, want) in cases {
        let got = err(&text);
        assert!(got.contains(want), "{text}\n  got: {got}\n want: {want}");
    }
}

#[test]
fn a_fork_and_a_fresh_spawn_of_one_conversation_that_differ_in_tools_is_refused() {
    let text = format!(
        "{{\"session_id\": \"r\", \"turns\": [{{{M}, \"tools\": [{{}}], \"forks\": [\"c\"]}}]}}\n\
         {{\"session_id\": \"s\", \"turns\": [{{{M}, \"spawns\": [\"c\"]}}]}}\n{{\"session_id\": \"c\", \"turns\": [{{{M}}}]}}"
    );
    assert!(
        err(&text).contains("session 'c' is both forked"),
        "{}",
        err(&text)
    );
}

#[test]
fn detection_and_root_count_follow_aiperf() {
    let dir = tempfile::tempdir().unwrap();
    let dag = dir.path().join("x.jsonl");
    std::fs::write(
        &dag,
        format!(
            "{{\"session_id\": \"r\", \"turns\": [{{{M}, \"spawns\": [\"a\"]}}, {{{M}, \"forks\": [{{\"child\": \"b\"}}]}}]}}\n\
             {{\"session_id\": \"a\", \"turns\": [{{{M}}}]}}\n{{\"session_id\": \"b\", \"turns\": [{{{M}}}]}}\n\
             {{\"session_id\": \"solo\", \"turns\": [{{{M}}}]}}\nnot json\n"
        ),
    )
    .unwrap();
    assert_eq!(
        super::super::detect(&dag).unwrap(),
        super::super::DatasetKind::DagJsonl
    );
    assert_eq!(super::root_count(&dag), Some(2));
    let multi = dir.path().join("m.jsonl");
    std::fs::write(
        &multi,
        "{\"session_id\": \"r\", \"turns\": [{\"text\": \"hi\"}]}\n",
    )
    .unwrap();
    assert_eq!(
        super::super::detect(&multi).unwrap(),
        super::super::DatasetKind::MultiTurn
    );
    let map = |v: Value| v.as_object().unwrap().clone();
    assert!(!super::can_load(&map(
        json!({"session_id": 1, "turns": [{"messages": []}]})
    )));
    assert!(!super::can_load(&map(
        json!({"session_id": "a", "turns": []})
    )));
    assert!(!super::can_load(&map(
        json!({"session_id": "a", "turns": [1, {"messages": []}]})
    )));
    assert!(super::can_load(&map(
        json!({"session_id": "a", "turns": [{"spawns": 3}]})
    )));
}

/// A JSON value of any shape, biased towards the format's own keys.
fn value() -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec![
        "session_id",
        "turns",
        "messages",
        "role",
        "content",
        "forks",
        "spawns",
        "child",
        "children",
        "join_at",
        "background",
        "delay",
        "max_tokens",
        "model",
        "tools",
        "extra",
        "orchestrator",
        "rounds",
        "think_time_ms",
        "think_time_sigma",
        "context_mode",
        "pre_session_spawns",
        "a",
        "b",
        "r",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..6).prop_map(Value::from),
        prop::num::f64::ANY
            .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "a",
            "b",
            "r",
            "",
            "user",
            "system",
            "assistant",
            "deltas_with_responses"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the lines, the loader answers with a dataset or an error, never a panic; a
    /// dataset's every branch names conversations of the file, and every join a branch of its
    /// conversation started by an earlier turn.
    #[test]
    fn the_loader_never_panics_and_loads_only_consistent_graphs(lines in prop::collection::vec(value(), 1..5)) {
        let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
        if let Ok(d) = load(&text) {
            let n = d.conversations.len() as u32;
            for c in &d.conversations {
                for b in c.branches() {
                    prop_assert!(b.children.iter().all(|&k| k < n));
                }
                for (i, t) in c.turns.iter().enumerate() {
                    for &j in t.joins() {
                        let started = c.turns[..i].iter().any(|u| u.spawns().contains(&j));
                        prop_assert!(started, "turn {} joins branch {} no earlier turn starts", i, j);
                    }
                }
            }
        }
    }
}

/// One conversation of a random graph: its turn count, and how a conversation before it (by
/// index modulo) starts it: the turn (modulo), the mode (bare spawn, spawn with `join_at`,
/// foreground fork, background fork), and a fault (0..=3: none; 4: an undeclared target; 5: a
/// back edge; 6: `join_at` out of range; 7: a foreground fork on any turn).
type Node = (usize, u8, u8, u8, u8);

fn graph() -> impl Strategy<Value = Vec<Node>> {
    prop::collection::vec((1usize..4, any::<u8>(), any::<u8>(), 0u8..4, 0u8..8), 1..7)
}

/// Mostly graphs AIPerf takes (every conversation after the first started by an earlier one),
/// with one fault or more in some.
fn graph_text(g: &[Node]) -> String {
    let mut turns: Vec<Vec<Value>> = g
        .iter()
        .map(|&(n, ..)| vec![json!({"messages": [{"role": "user", "content": "x"}]}); n])
        .collect();
    for (c, &(_, parent, turn, mode, fault)) in g.iter().enumerate().skip(1) {
        let p = usize::from(parent) % c;
        let last = turns[p].len() - 1;
        let mut t = usize::from(turn) % turns[p].len();
        let child = if fault == 4 {
            "ghost".to_string()
        } else {
            format!("s{c}")
        };
        let entry = &mut turns[p][t];
        match mode {
            0 => push(entry, "spawns", json!(child)),
            1 => {
                let at = if fault == 6 {
                    last as u64 + 1
                } else {
                    (t as u64 + 1).min(last as u64 + 1)
                };
                push(entry, "spawns", json!({"children": [child], "join_at": at}));
            }
            2 => {
                if fault != 7 {
                    t = last;
                }
                push(&mut turns[p][t], "forks", json!(child));
            }
            _ => push(entry, "forks", json!({"child": child, "background": true})),
        }
        if fault == 5 {
            push(&mut turns[c][0], "spawns", json!(format!("s{p}")));
        }
    }
    turns
        .into_iter()
        .enumerate()
        .map(|(c, turns)| {
            format!(
                "{}\n",
                json!({"session_id": format!("s{c}"), "turns": turns})
            )
        })
        .collect()
}

fn push(turn: &mut Value, key: &str, v: Value) {
    match turn.get_mut(key).and_then(Value::as_array_mut) {
        Some(list) => list.push(v),
        None => turn[key] = json!([v]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// A graph the loader takes keeps AIPerf's rules: no conversation reaches itself, a FORK
    /// child has one parent, a foreground fork is on its conversation's last turn, every join is
    /// of a spawn made by an earlier turn, and the roots are exactly the conversations no branch
    /// names.
    #[test]
    fn a_loaded_graph_keeps_aiperfs_rules(g in graph()) {
        let Ok(d) = load(&graph_text(&g)) else { return Ok(()) };
        let n = d.conversations.len();
        let mut forked_by = vec![0; n];
        let mut named = vec![false; n];
        for c in &d.conversations {
            let last = c.turns.len() - 1;
            for (i, t) in c.turns.iter().enumerate() {
                for &b in t.spawns() {
                    let b = &c.branches()[b as usize];
                    if b.fork && !b.background {
                        prop_assert_eq!(i, last);
                    }
                }
                for &j in t.joins() {
                    prop_assert!(c.turns[..i].iter().any(|u| u.spawns().contains(&j)));
                    prop_assert!(!c.branches()[j as usize].fork);
                }
            }
            for b in c.branches() {
                for &k in &b.children {
                    named[k as usize] = true;
                    forked_by[k as usize] += usize::from(b.fork);
                }
            }
        }
        prop_assert!(forked_by.iter().all(|&f| f <= 1));
        for (k, c) in d.conversations.iter().enumerate() {
            prop_assert_eq!(c.parent().is_none(), !named[k]);
        }
        // Acyclic: a walk from any conversation along branch children ends.
        for start in 0..n {
            let mut seen = vec![false; n];
            let mut stack = vec![start];
            while let Some(c) = stack.pop() {
                for b in d.conversations[c].branches() {
                    for &k in &b.children {
                        prop_assert_ne!(k as usize, start, "a cycle through {}", start);
                        if !seen[k as usize] {
                            seen[k as usize] = true;
                            stack.push(k as usize);
                        }
                    }
                }
            }
        }
    }
}
