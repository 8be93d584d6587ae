//! `dag_jsonl` end to end: AIPerf's DAG files replayed against the mock and checked against what
//! AIPerf 0.13 sent for the same files and flags to the same mock (tests/data/dag_jsonl/
//! expected.json): the same requests (conversation, turn, body, model, `max_tokens`, extras,
//! tools), each live reply the answer the server gave before it, every child started by its
//! parent's turn and waited for by its join turn, the parent going on meanwhile, the delays kept,
//! a fork's child carrying its parent's context; orchestrator spines' rounds, joins and think
//! times (AIPerf's seeded draws) and branch counts; and AIPerf's refusals refused.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dag_jsonl")
}

/// AIPerf's run `name` from the fixture.
fn aiperf(name: &str) -> Value {
    let all = common::read_json(&data().join("expected.json"));
    let runs = all["runs"].as_array().expect("runs");
    runs.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no AIPerf run {name}"))
        .clone()
}

/// The mock AIPerf was run against: first token after 5 ms, one more every ms.
fn mock() -> ringperf_mock::mock::MockServer {
    ringperf_mock::mock::start(ringperf_mock::mock::MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(1),
        output_tokens: ringperf_mock::mock::OutputLen::Fixed(64),
        truth_log: true,
        record_bodies: true,
        ..ringperf_mock::mock::MockConfig::default()
    })
    .expect("mock starts")
}

/// One request ringperf sent, joined with what the mock received and answered.
#[derive(Debug)]
struct Sent {
    conversation: String,
    turn: u64,
    depth: u64,
    session: String,
    parent: Option<String>,
    root: String,
    issue_ms: f64,
    end_ms: f64,
    body: Value,
    reply: String,
}

/// `ringperf profile` on AIPerf's run `name` with its flags: its exit, stderr and requests in
/// issue order.
fn replay(
    name: &str,
) -> (
    std::process::ExitStatus,
    String,
    Vec<Sent>,
    usize,
    Value,
    Value,
) {
    let want = aiperf(name);
    let server = mock();
    let dir = tempfile::tempdir().unwrap();
    let flags: Vec<String> = want["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--ui",
            "none",
            "--tokenizer",
            "builtin",
        ])
        .args([
            "--streaming",
            "--no-server-metrics",
            "--endpoint-type",
            "chat",
        ])
        .args(["--random-seed", "7", "--url"])
        .arg(format!("http://{}", server.addr))
        .arg("--input-file")
        .arg(data().join(want["file"].as_str().unwrap()))
        .arg("--artifact-dir")
        .arg(dir.path())
        .args(&flags)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return (out.status, stderr, Vec::new(), 0, Value::Null, Value::Null);
    }
    let truth: HashMap<String, ringperf_mock::mock::TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|t| (t.request_id.expect("a request id").to_string(), t))
        .collect();
    let records = common::read_jsonl(&dir.path().join("profile_export.jsonl"));
    let t0 = records
        .iter()
        .map(|r| r["metadata"]["credit_issued_ns"].as_u64().unwrap())
        .min()
        .expect("requests");
    let ms = |v: &Value| (v.as_u64().unwrap() - t0) as f64 / 1e6;
    let mut sent: Vec<Sent> = records
        .iter()
        .map(|r| {
            let m = &r["metadata"];
            let t = &truth[m["x_request_id"].as_str().unwrap()];
            let s = |k: &str| m[k].as_str().map(str::to_owned);
            Sent {
                conversation: s("conversation_id").unwrap(),
                turn: m["turn_index"].as_u64().unwrap(),
                depth: m["agent_depth"].as_u64().unwrap_or(0),
                session: s("x_correlation_id").unwrap(),
                parent: s("parent_correlation_id"),
                root: s("root_correlation_id")
                    .or_else(|| s("x_correlation_id"))
                    .unwrap(),
                issue_ms: ms(&m["credit_issued_ns"]),
                end_ms: ms(&m["request_end_ns"]),
                body: serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap(),
                reply: t.reply_text.clone().unwrap_or_default(),
            }
        })
        .collect();
    sent.sort_by(|a, b| a.issue_ms.total_cmp(&b.issue_ms));
    let received = truth.len();
    let inputs = common::read_json(&dir.path().join("inputs.json"))["data"].clone();
    let stats =
        common::read_json(&dir.path().join("profile_export_aiperf.json"))["branch_stats"].clone();
    (out.status, stderr, sent, received, inputs, stats)
}

/// The assistant texts a DAG file writes itself (every other assistant message is a live
/// reply).
fn canned(file: &str) -> HashSet<String> {
    let text = std::fs::read_to_string(data().join(file)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .flat_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let turns = v["turns"].as_array().cloned().unwrap_or_default();
            turns
                .into_iter()
                .flat_map(|t| t["messages"].as_array().cloned().unwrap_or_default())
                .filter(|m| m["role"] == "assistant")
                .filter_map(|m| m["content"].as_str().map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `body` with each live reply's text replaced by `<reply>` and each `--cache-bust` marker
/// (`[rid:` twelve hex digits `]`, the benchmark's own) by `[rid]`, as the fixture writes it.
fn masked(body: &Value, canned: &HashSet<String>) -> Value {
    let mut body = body.clone();
    for m in body["messages"].as_array_mut().into_iter().flatten() {
        let live =
            m["role"] == "assistant" && !m["content"].as_str().is_some_and(|c| canned.contains(c));
        if live {
            m["content"] = Value::from("<reply>");
        } else if let Some(text) = m["content"].as_str() {
            m["content"] = Value::from(unmarked(text));
        }
    }
    body
}

/// `text` with every `[rid:xxxxxxxxxxxx]` marker written `[rid]`.
fn unmarked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("[rid:") {
        let tail = &rest[at + 5..];
        let hex = tail.bytes().take(12).filter(u8::is_ascii_hexdigit).count() == 12;
        if hex && tail.as_bytes().get(12) == Some(&b']') {
            out.push_str(&rest[..at]);
            out.push_str("[rid]");
            rest = &tail[13..];
        } else {
            out.push_str(&rest[..at + 5]);
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// The DAG file's turns: per conversation, per turn, the turn object.
fn turns_of(file: &str) -> BTreeMap<String, Vec<Value>> {
    let text = std::fs::read_to_string(data().join(file)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let turns = v["turns"].as_array().cloned().unwrap_or_default();
            (v["session_id"].as_str().unwrap().to_owned(), turns)
        })
        .collect()
}

/// The children a turn starts: `(child, fork, join turn)`.
fn branches(turn: &Value, index: usize, turns: usize) -> Vec<(String, bool, Option<usize>)> {
    let mut out = Vec::new();
    for f in turn["forks"].as_array().into_iter().flatten() {
        let child = f.as_str().or_else(|| f["child"].as_str()).unwrap();
        out.push((child.to_owned(), true, None));
    }
    for s in turn["spawns"].as_array().into_iter().flatten() {
        if let Some(child) = s.as_str() {
            out.push((
                child.to_owned(),
                false,
                Some(index + 1).filter(|&j| j < turns),
            ));
        } else {
            let join = s["join_at"].as_u64().map_or(index + 1, |j| j as usize);
            for c in s["children"].as_array().unwrap() {
                let join = Some(join).filter(|&j| j < turns);
                out.push((c.as_str().unwrap().to_owned(), false, join));
            }
        }
    }
    out
}

/// How late a request may go after what it waited for (the machine is shared and slow).
const SLACK_MS: f64 = 40.0;

/// Checks ringperf's replay of AIPerf's run `name` request by request.
fn check(name: &str) {
    let (want, file, sent) = same_requests(name);
    let _ = want;
    check_graph(name, &file, &sent);
}

/// Replays AIPerf's run `name` and checks that ringperf sent what AIPerf sent: the requests the
/// server got, `inputs.json`, each turn's bodies, depths and live replies. Returns AIPerf's
/// run, its file and ringperf's requests.
fn same_requests(name: &str) -> (Value, String, Vec<Sent>) {
    let want = aiperf(name);
    assert_eq!(want["exit_code"], 0, "{name}: AIPerf's run failed");
    let file = want["file"].as_str().unwrap().to_owned();
    let (status, stderr, sent, received, inputs, stats) = replay(name);
    assert!(status.success(), "{name}: {stderr}");
    // Every request the server got, a warmup's included (a warmup starts no children).
    assert_eq!(
        received as u64,
        want["mock_requests"].as_u64().unwrap(),
        "{name}: requests received"
    );
    // AIPerf's branch counts (captured for the orchestrator runs), but the suppressed joins,
    // which ringperf does not count.
    if let Some(theirs) = want.get("branch_stats") {
        let counts = |v: &Value| -> BTreeMap<String, Value> {
            let mut m: BTreeMap<String, Value> = serde_json::from_value(v.clone()).unwrap();
            m.remove("joins_suppressed");
            m
        };
        assert_eq!(counts(&stats), counts(theirs), "{name}: branch_stats");
    }
    // inputs.json: the same conversations, each turn's body as sent alone (its own tools only).
    assert_eq!(inputs, want["inputs"], "{name}: inputs.json");
    let canned = canned(&file);

    // The same requests, with the same bodies (a live reply's text aside).
    let key = |c: &str, t: u64| format!("{c}#{t}");
    let mut theirs: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in want["requests"].as_array().unwrap() {
        let k = key(
            r["conversation"].as_str().unwrap(),
            r["turn"].as_u64().unwrap(),
        );
        theirs.entry(k).or_default().push(r["body"].clone());
    }
    let mut ours: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for s in &sent {
        ours.entry(key(&s.conversation, s.turn))
            .or_default()
            .push(masked(&s.body, &canned));
    }
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "{name}: the turns sent"
    );
    for (k, bodies) in &theirs {
        assert_eq!(&ours[k], bodies, "{name}: the bodies of {k}");
    }
    // The same depths (a conversation spawned at two depths has both).
    let depths = |v: Vec<(String, u64, u64)>| {
        let mut v = v;
        v.sort();
        v
    };
    let theirs_depths = depths(
        want["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let c = r["conversation"].as_str().unwrap().to_owned();
                (c, r["turn"].as_u64().unwrap(), r["depth"].as_u64().unwrap())
            })
            .collect(),
    );
    let ours_depths = depths(
        sent.iter()
            .map(|s| (s.conversation.clone(), s.turn, s.depth))
            .collect(),
    );
    assert_eq!(ours_depths, theirs_depths, "{name}: depths");

    // Each live reply is the answer the server gave to an earlier request of the same tree.
    for s in &sent {
        for m in s.body["messages"].as_array().unwrap() {
            let Some(text) = m["content"].as_str() else {
                continue;
            };
            if m["role"] != "assistant" || canned.contains(text) {
                continue;
            }
            let answered = sent
                .iter()
                .any(|e| e.root == s.root && e.end_ms <= s.issue_ms + 1.0 && e.reply == text);
            assert!(
                answered,
                "{name}: {}#{} carries a reply no earlier request got: {text:?}",
                s.conversation, s.turn
            );
        }
    }

    (want, file, sent)
}

/// The graph: within each session its turns in order, each after its delay (or, when it waited
/// for children, as soon as they ended); each child after its parent's spawning turn; each join
/// after its children.
fn check_graph(name: &str, file: &str, sent: &[Sent]) {
    let file_turns = turns_of(file);
    let by_session: BTreeMap<&str, Vec<&Sent>> = sent.iter().fold(BTreeMap::new(), |mut m, s| {
        m.entry(s.session.as_str()).or_insert_with(Vec::new).push(s);
        m
    });
    for reqs in by_session.values() {
        let conv = &reqs[0].conversation;
        let turns = &file_turns[conv];
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!(r.turn as usize, i, "{name}: {conv}'s turns in order");
        }
        // Children of this session, by the turn that started them.
        let children: Vec<(&Sent, usize, bool, Option<usize>)> = (0..turns.len())
            .flat_map(|t| {
                branches(&turns[t], t, turns.len())
                    .into_iter()
                    .map(move |(c, fork, join)| (c, t, fork, join))
            })
            .filter_map(|(c, t, fork, join)| {
                let first = sent.iter().find(|s| {
                    s.conversation == c
                        && s.turn == 0
                        && s.parent.as_deref() == Some(&reqs[0].session)
                })?;
                Some((first, t, fork, join))
            })
            .collect();
        for &(child, t, fork, _) in &children {
            let spawned = reqs[t];
            assert!(
                child.issue_ms >= spawned.end_ms - 0.5
                    && child.issue_ms <= spawned.end_ms + SLACK_MS,
                "{name}: {} starts when {conv}#{t} is answered ({:.1} ms), not at {:.1} ms",
                child.conversation,
                spawned.end_ms,
                child.issue_ms
            );
            if fork {
                // A fork's child goes on from its parent's context: the parent's last body and
                // its reply open the child's first.
                let parent_msgs = spawned.body["messages"].as_array().unwrap();
                let child_msgs = child.body["messages"].as_array().unwrap();
                assert_eq!(
                    &child_msgs[..parent_msgs.len()],
                    &parent_msgs[..],
                    "{name}: {} inherits",
                    child.conversation
                );
                assert_eq!(
                    child_msgs[parent_msgs.len()]["content"].as_str(),
                    Some(spawned.reply.as_str())
                );
            }
        }
        for (i, r) in reqs.iter().enumerate().skip(1) {
            let prev = reqs[i - 1];
            let delay = turns[i]["delay"].as_f64().unwrap_or(0.0);
            let delay = if name == "delay_cap" {
                delay.min(20.0)
            } else {
                delay
            };
            let joined: Vec<f64> = children
                .iter()
                .filter(|c| c.3 == Some(i))
                .map(|c| {
                    // The child's last request's end.
                    sent.iter()
                        .filter(|s| s.session == c.0.session)
                        .map(|s| s.end_ms)
                        .fold(0.0, f64::max)
                })
                .collect();
            let children_end = joined.iter().copied().fold(0.0, f64::max);
            assert!(
                r.issue_ms >= prev.end_ms - 0.5,
                "{name}: {conv}#{i} after #{}",
                i - 1
            );
            assert!(
                r.issue_ms >= children_end - 0.5,
                "{name}: {conv}#{i} joins its children"
            );
            // Suspended (its children ended after the previous answer): it goes at once;
            // else its delay after the previous answer.
            let due = if children_end > prev.end_ms {
                children_end
            } else {
                prev.end_ms + delay
            };
            assert!(
                r.issue_ms >= due - 1.0 && r.issue_ms <= due + SLACK_MS,
                "{name}: {conv}#{i} due at {due:.1} ms, went at {:.1} ms",
                r.issue_ms
            );
        }
    }
}

#[test]
fn spawned_children_run_between_their_turn_and_the_join_as_aiperf_runs_them() {
    check("spawn_join");
}

#[test]
fn explicit_join_at_background_and_terminal_forks_replay_as_aiperf_replays_them() {
    check("fork_join_at");
}

#[test]
fn nested_children_pre_session_spawns_and_recorded_context_replay_as_aiperf() {
    check("nested_pre");
    // A pre-session child has no parent and is its own root (AIPerf's record), at depth 1; it
    // goes before the root's first turn.
    let (status, stderr, sent, ..) = replay("nested_pre");
    assert!(status.success(), "{stderr}");
    let warm = sent.iter().find(|s| s.conversation == "warm_a").unwrap();
    assert_eq!((warm.parent.as_deref(), warm.depth), (None, 1));
    assert_eq!(warm.root, warm.session);
    let main = sent.iter().find(|s| s.conversation == "main").unwrap();
    assert!(warm.issue_ms <= main.issue_ms);
}

#[test]
fn a_conversation_spawned_twice_in_a_tree_joins_its_own_children_only() {
    check("template");
}

#[test]
fn cache_bust_marks_each_tree_once_and_each_isolated_body_as_aiperf() {
    // A fork's child sends its parent's marked turns and adds no marker; an isolated
    // conversation's every body is marked.
    check("cache_bust");
}

#[test]
fn a_warmup_starts_no_children() {
    check("warmup");
}

#[test]
fn a_detected_dag_file_runs_aiperf_default_ten_requests() {
    check("detected");
}

#[test]
fn the_delay_cap_bounds_every_turns_delay() {
    check("delay_cap");
}

#[test]
fn two_trees_at_once_keep_their_own_joins_and_contexts() {
    check("concurrent");
}

#[test]
fn a_child_overlaps_its_parent_until_the_join() {
    // fork_join_at: `helper` (spawned by lead#0, joined by lead#3) runs while lead#1 and #2 go.
    let (status, stderr, sent, ..) = replay("fork_join_at");
    assert!(status.success(), "{stderr}");
    let at = |c: &str, t: u64| {
        sent.iter()
            .find(|s| s.conversation == c && s.turn == t)
            .unwrap()
    };
    let helper_end = at("helper", 1).end_ms;
    assert!(at("lead", 1).issue_ms < helper_end && at("lead", 2).issue_ms < helper_end);
    assert!(at("lead", 3).issue_ms >= helper_end - 0.5);
    // `side` (a background fork of lead#1) carries lead#1's context and reply.
    let side = at("side", 0);
    let lead1 = at("lead", 1);
    let n = lead1.body["messages"].as_array().unwrap().len();
    let msgs = |s: &Sent| s.body["messages"].as_array().unwrap().clone();
    assert_eq!(msgs(side)[..n], msgs(lead1)[..n]);
    assert_eq!(side.body["messages"][n]["content"], lead1.reply.as_str());
    // and lead's tools, which its own turn does not name.
    assert_eq!(side.body["tools"], lead1.body["tools"]);
}

/// AIPerf's refusals, each with the substance of its sentence.
#[test]
fn aiperf_refusals_are_refused_with_the_same_reason() {
    let all = common::read_json(&data().join("expected.json"));
    let mut checked = 0;
    for run in all["runs"].as_array().unwrap() {
        if run["exit_code"] == 0 {
            continue;
        }
        let name = run["name"].as_str().unwrap();
        let theirs = run["error"].as_str().unwrap();
        let (status, stderr, ..) = replay(name);
        assert_eq!(status.code(), Some(2), "{name}: {stderr}");
        // The reason as AIPerf words it, less its own file/line prefix and pydantic's wording.
        let reason = theirs
            .rsplit(": Value error, ")
            .next()
            .unwrap()
            .rsplit(" line 2: ")
            .next()
            .unwrap();
        let reason = reason.split(" (got True)").next().unwrap();
        let ours = stderr.replace('\n', " ");
        let pydantic = ["Extra inputs are not permitted", "must be a non-empty list"];
        if pydantic.iter().any(|p| reason.ends_with(p)) {
            // Field errors: ringperf names the field its own way.
            let field = if reason.contains("max_token:") {
                "turns[0].max_token"
            } else {
                "turns[0].messages"
            };
            assert!(ours.contains(field), "{name}: {ours}");
        } else {
            assert!(
                ours.contains(reason),
                "{name}: AIPerf says {reason:?}; ringperf {ours:?}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 14, "{checked} refusals checked");
}

/// A DAG file's orchestrators: per session id, the children of each round in order (one
/// round, run in the background, when it has no `rounds`).
fn spines(file: &str) -> BTreeMap<String, Vec<Vec<String>>> {
    let text = std::fs::read_to_string(data().join(file)).unwrap();
    let ids = |v: &Value| -> Vec<String> {
        (v.as_array().into_iter().flatten())
            .map(|x| x.as_str().unwrap().to_owned())
            .collect()
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["orchestrator"] == true)
        .map(|v| {
            let rounds = match &v["rounds"] {
                Value::Number(n) => vec![ids(&v["spawns"]); n.as_u64().unwrap() as usize],
                Value::Array(list) => list.iter().map(|r| ids(&r["spawns"])).collect(),
                _ => vec![ids(&v["spawns"])],
            };
            (v["session_id"].as_str().unwrap().to_owned(), rounds)
        })
        .collect()
}

/// How long each request of a spine's round waited: from the last answer before it to its issue
/// (`None`: nothing had ended), in issue order, for the first turns of the conversations
/// `spawned`. Under one concurrency slot and sequential sampling, a round's first child waited
/// the round's think time after the round before it (or the spine's start) ended.
fn round_waits(reqs: &[(String, u64, f64, f64)], spawned: &HashSet<String>) -> Vec<Option<f64>> {
    reqs.iter()
        .filter(|(c, t, ..)| *t == 0 && spawned.contains(c))
        .map(|&(_, _, issue, _)| {
            (reqs.iter())
                .map(|r| r.3)
                .filter(|&end| end <= issue)
                .reduce(f64::max)
                .map(|end| issue - end)
        })
        .collect()
}

/// How much sooner than AIPerf a round may go: AIPerf's wait is the think time plus its own
/// dispatch (0.3 to 1.5 ms in the captures), ringperf's the same draw (the seeded stream of
/// the same instance and round) plus its own; 3 ms is more than AIPerf's dispatch, less than
/// any think time the fixtures draw (5 ms and up).
const THINK_EARLY_MS: f64 = 3.0;

/// Checks ringperf's replay of AIPerf's run `name` of a file with orchestrators: the same
/// requests ([`same_requests`]); each instance of a spine (the children's parent session,
/// which sends nothing) starting its rounds in order, a round's children all at once, each
/// round with rounds after waiting for every request of the round before; each round's wait
/// AIPerf's think time (no sooner than [`THINK_EARLY_MS`] before AIPerf's, within
/// [`SLACK_MS`] after); a normal turn that joins a spine after its last round.
fn check_orchestrators(name: &str) {
    let (want, file, sent) = same_requests(name);
    let spines = spines(&file);
    let spawned: HashSet<String> = spines.values().flatten().flatten().cloned().collect();
    let sessions: HashSet<&str> = sent.iter().map(|s| s.session.as_str()).collect();
    // Spine instances: parents that sent nothing themselves.
    let mut instances: BTreeMap<&str, Vec<&Sent>> = BTreeMap::new();
    for s in &sent {
        if let Some(p) = s.parent.as_deref().filter(|p| !sessions.contains(p)) {
            instances.entry(p).or_default().push(s);
        }
    }
    assert!(!instances.is_empty(), "{name}: no spine ran");
    for reqs in instances.values() {
        let rounds = spines
            .values()
            .find(|r| r.iter().flatten().any(|c| *c == reqs[0].conversation))
            .expect("a spine's child");
        // The instance's child sessions in the order they started, cut into its rounds.
        let mut children: Vec<&str> = Vec::new();
        for s in reqs {
            if !children.contains(&s.session.as_str()) {
                children.push(&s.session);
            }
        }
        let of = |session: &str| -> Vec<&Sent> {
            reqs.iter()
                .copied()
                .filter(|s| s.session == session)
                .collect()
        };
        let mut at = 0;
        let mut previous_end: Option<f64> = None;
        for (k, round) in rounds.iter().enumerate() {
            if at >= children.len() {
                // Cut by --request-count: nothing of the later rounds went.
                break;
            }
            let these = &children[at..(at + round.len()).min(children.len())];
            at += these.len();
            let mut convs: Vec<&str> = these
                .iter()
                .map(|s| of(s)[0].conversation.as_str())
                .collect();
            convs.sort_unstable();
            let mut plan: Vec<&str> = round.iter().map(String::as_str).collect();
            plan.sort_unstable();
            plan.truncate(convs.len());
            assert_eq!(convs, plan, "{name}: round {k}'s children");
            let starts: Vec<f64> = these.iter().map(|s| of(s)[0].issue_ms).collect();
            let first = starts.iter().copied().fold(f64::MAX, f64::min);
            let last = starts.iter().copied().fold(0.0, f64::max);
            assert!(last - first <= SLACK_MS, "{name}: round {k} starts at once");
            if rounds.len() > 1 {
                if let Some(end) = previous_end {
                    assert!(
                        first >= end - 0.5,
                        "{name}: round {k} joins round {}",
                        k - 1
                    );
                }
                previous_end = these
                    .iter()
                    .flat_map(|s| of(s))
                    .map(|s| s.end_ms)
                    .reduce(f64::max);
            }
        }
        assert_eq!(at, children.len(), "{name}: the rounds' children");
    }
    // A turn that joins a spine (a normal conversation's) goes after the spine's last round.
    let file_turns = turns_of(&file);
    for s in &sent {
        let turns = &file_turns[&s.conversation];
        let Some(prev) = (s.turn as usize).checked_sub(1) else {
            continue;
        };
        let joined: Vec<String> = (0..=prev)
            .flat_map(|t| branches(&turns[t], t, turns.len()))
            .filter(|(c, _, join)| spines.contains_key(c) && *join == Some(s.turn as usize))
            .map(|(c, ..)| c)
            .collect();
        if joined.is_empty() {
            continue;
        }
        let spine_end = (sent.iter())
            .filter(|r| r.root == s.root && r.depth > s.depth + 1)
            .filter(|r| r.issue_ms < s.issue_ms)
            .map(|r| r.end_ms)
            .fold(0.0, f64::max);
        assert!(
            s.issue_ms >= spine_end - 0.5 && s.issue_ms <= spine_end + SLACK_MS,
            "{name}: {}#{} goes when the spine it joins ends ({spine_end:.1} ms), not at {:.1} ms",
            s.conversation,
            s.turn,
            s.issue_ms
        );
    }
    // Each round's wait, against AIPerf's (under one slot: with two, which instance a request
    // is of is not in AIPerf's records, and the answer before it may be the other's).
    if want["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "--concurrency")
    {
        return;
    }
    let ours: Vec<(String, u64, f64, f64)> = (sent.iter())
        .map(|s| (s.conversation.clone(), s.turn, s.issue_ms, s.end_ms))
        .collect();
    let theirs: Vec<(String, u64, f64, f64)> = (want["requests"].as_array().unwrap().iter())
        .map(|r| {
            let f = |k: &str| r[k].as_f64().unwrap();
            let c = r["conversation"].as_str().unwrap().to_owned();
            (c, r["turn"].as_u64().unwrap(), f("issue_ms"), f("end_ms"))
        })
        .collect();
    let (ours, theirs) = (round_waits(&ours, &spawned), round_waits(&theirs, &spawned));
    assert_eq!(ours.len(), theirs.len(), "{name}: rounds");
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        if let (Some(o), Some(t)) = (o, t) {
            assert!(
                *o >= t - THINK_EARLY_MS && *o <= t + SLACK_MS,
                "{name}: wait {i}: AIPerf's {t:.1} ms, ringperf's {o:.1} ms ({ours:?} vs {theirs:?})"
            );
        }
    }
}

/// AIPerf's default run of a spine (`rounds: 2`, `spawns`, `think_time_ms: 5`): AIPerf counts
/// the spine's children among the roots of `--conversation-num`'s default (its count reads
/// turns' spawns only), so the spine runs twice, each round spawning its child, the next round
/// after it and 5 ms.
#[test]
fn an_orchestrator_spine_replays_its_rounds_as_aiperf() {
    check_orchestrators("orchestrator_spine");
}

/// Per-round children and think times, sampled (lognormal around each round's median, clamped)
/// from `--random-seed`'s stream of each instance and round, as AIPerf draws them.
#[test]
fn orchestrator_rounds_wait_aiperfs_sampled_think_times() {
    check_orchestrators("orchestrator_rounds");
}

/// A spine's turns take no request: `--request-count 4` is four children's requests, and no
/// second instance starts once they are taken.
#[test]
fn an_orchestrators_turns_take_no_request() {
    check_orchestrators("orchestrator_request_count");
}

/// `--inter-turn-delay-cap-seconds` caps each round's median and the draw's bounds.
#[test]
fn the_delay_cap_bounds_an_orchestrators_think_times() {
    check_orchestrators("orchestrator_delay_cap");
}

/// Without rounds, a spine's spawns run in the background: the next instance starts at once.
#[test]
fn a_spine_without_rounds_fires_and_forgets() {
    check_orchestrators("orchestrator_fire");
    let (_, _, sent) = same_requests("orchestrator_fire");
    let x1: Vec<f64> = (sent.iter())
        .filter(|s| s.conversation == "x" && s.turn == 1)
        .map(|s| s.issue_ms)
        .collect();
    let second = (sent.iter())
        .filter(|s| s.turn == 0)
        .map(|s| s.issue_ms)
        .fold(0.0, f64::max);
    assert!(
        x1.iter().all(|&t| t > second),
        "both instances start before either x goes on: {x1:?} vs {second}"
    );
}

/// Two spines at once (`--concurrency 2`), each waiting for its own rounds' children.
#[test]
fn two_spines_at_once_join_their_own_rounds() {
    check_orchestrators("orchestrator_concurrent");
}

/// An orchestrator spawned by a normal turn: its rounds at depth 2, its think times fixed, the
/// joining turn after its last round.
#[test]
fn a_spawned_orchestrator_runs_its_rounds_before_the_join() {
    check_orchestrators("orchestrator_nested");
}

/// A warmup (AIPerf's never ends with a spine: it sends nothing) and the rate and schedule modes
/// (not checked against AIPerf) are refused with an orchestrator in the file.
#[test]
fn an_orchestrator_with_a_warmup_or_a_rate_is_refused() {
    let named = ["--custom-dataset-type", "dag_jsonl"];
    for (file, flags) in [
        ("orchestrator_spine", &["--warmup-request-count", "1"][..]),
        (
            "orchestrator_spine",
            &["--request-rate", "10", "--request-count", "4"],
        ),
        ("orchestrator_spine", &["--fixed-schedule"]),
        (
            "orchestrator_spine",
            &["--user-centric-rate", "5", "--num-users", "2"],
        ),
        // Detected (its first line is a normal conversation's).
        ("orchestrator_nested", &["--warmup-request-count", "1"]),
    ] {
        let named = if file == "orchestrator_spine" {
            &named[..]
        } else {
            &[]
        };
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "-m",
                "mock-model",
                "--ui",
                "none",
                "--tokenizer",
                "builtin",
            ])
            .args(["--endpoint-type", "chat", "--url", "http://127.0.0.1:9"])
            .args(named)
            .arg("--input-file")
            .arg(data().join(format!("{file}.dag.jsonl")))
            .args(flags)
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(
            stderr.contains("orchestrator conversations ('orchestrator': true) are replayed with"),
            "{flags:?}: {stderr}"
        );
    }
}
