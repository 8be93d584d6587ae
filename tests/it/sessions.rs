//! Multi-turn sessions end to end against the in-process mock, checked against what the mock
//! itself recorded: every body it received, the reply text it sent, the correlation id of
//! each request.

use crate::common;
use common::{config, read_jsonl};

use std::collections::HashMap;

use ringperf_mock::mock::{MockConfig, OutputLen, TruthEntry};
use serde_json::{Value, json};

/// The mock's records grouped by correlation id, each group in arrival order.
fn sessions(truth: Vec<TruthEntry>) -> Vec<Vec<TruthEntry>> {
    let mut by_session: HashMap<String, Vec<TruthEntry>> = HashMap::new();
    for e in truth {
        let id = e
            .correlation_id
            .clone()
            .expect("every request has a correlation id");
        by_session.entry(id).or_default().push(e);
    }
    let mut groups: Vec<Vec<TruthEntry>> = by_session.into_values().collect();
    for g in &mut groups {
        g.sort_by_key(|e| e.arrival_ns);
    }
    groups
}

fn body(e: &TruthEntry) -> Value {
    serde_json::from_slice(e.request_body.as_deref().expect("bodies recorded")).expect("JSON")
}

/// Turn n carries turns 1..n-1 — each user message and the reply the mock really sent — then
/// its own message; one correlation id per session, distinct across sessions; the records say
/// which conversation and turn they are, and their ISL is that of the body really sent.
fn check_history(streaming: bool) {
    let server = common::recording_mock(6);
    let dir = tempfile::tempdir().unwrap();
    let stream = if streaming { "--streaming" } else { "" };
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} {stream} --concurrency 2 --conversation-num 4 \
         --conversation-turn-mean 3 --isl 12 --osl 6 --random-seed 5 --ui none \
         --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (12, 0));

    let groups = sessions(server.truth().entries());
    assert_eq!(groups.len(), 4, "four sessions, four correlation ids");
    for g in &groups {
        assert_eq!(g.len(), 3, "three turns per session");
        let mut expected: Vec<Value> = Vec::new();
        for (n, e) in g.iter().enumerate() {
            let b = body(e);
            let messages = b["messages"].as_array().expect("messages").clone();
            // Everything before this turn's own message is the history so far.
            assert_eq!(messages.len(), 2 * n + 1, "turn {n}: {messages:?}");
            assert_eq!(&messages[..2 * n], expected.as_slice(), "turn {n}");
            let own = messages[2 * n].clone();
            assert_eq!(own["role"], "user");
            expected.push(own);
            let reply = e.reply_text.clone().expect("reply recorded");
            assert!(!reply.is_empty());
            expected.push(json!({"role": "assistant", "content": reply}));
        }
    }

    // The records: conversation and turn, one correlation id per conversation, ISL of the body
    // sent (the mock counted the same body with the same tokenizer).
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 12);
    let truth_by_id: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    let mut per_conversation: HashMap<String, (String, Vec<u64>)> = HashMap::new();
    for r in &records {
        let md = &r["metadata"];
        let conversation = md["conversation_id"].as_str().unwrap().to_string();
        let correlation = md["x_correlation_id"].as_str().unwrap().to_string();
        let turn = md["turn_index"].as_u64().unwrap();
        let t = &truth_by_id[md["x_request_id"].as_str().unwrap()];
        assert_eq!(t.correlation_id.as_deref(), Some(correlation.as_str()));
        let isl = r["metrics"]["input_sequence_length"]["value"]
            .as_u64()
            .unwrap();
        assert_eq!(isl, t.prompt_tokens, "ISL of turn {turn} is the body sent");
        let entry = per_conversation
            .entry(conversation)
            .or_insert_with(|| (correlation.clone(), Vec::new()));
        assert_eq!(entry.0, correlation, "one correlation id per conversation");
        entry.1.push(turn);
    }
    assert_eq!(per_conversation.len(), 4);
    for (_, (_, mut turns)) in per_conversation {
        turns.sort_unstable();
        assert_eq!(turns, [0, 1, 2]);
    }
}

#[test]
fn later_turns_carry_the_real_replies_streaming() {
    check_history(true);
}

#[test]
fn later_turns_carry_the_real_replies_non_streaming() {
    check_history(false);
}

/// Responses and Messages replay the conversation as AIPerf does: turn n's body carries each
/// earlier user message and the reply the mock really sent — Responses as the reply's output
/// item verbatim (a `message` whose `output_text` is the reply), Messages as an assistant
/// message of the reply text — then its own message; ISL is that of the body sent.
fn check_replay(endpoint_type: &str, streaming: bool) {
    let server = common::recording_mock(5);
    let dir = tempfile::tempdir().unwrap();
    let stream = if streaming { "--streaming" } else { "" };
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type {endpoint_type} {stream} \
         --concurrency 2 --conversation-num 3 --conversation-turn-mean 3 --isl 10 --osl 5 \
         --random-seed 9 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (9, 0), "{endpoint_type}");
    let (field, user_tag) = match endpoint_type {
        "responses" => ("input", Some("message")),
        _ => ("messages", None),
    };
    let groups = sessions(server.truth().entries());
    assert_eq!(groups.len(), 3);
    for g in &groups {
        assert_eq!(g.len(), 3);
        let mut expected: Vec<Value> = Vec::new();
        for (n, e) in g.iter().enumerate() {
            assert_eq!(e.stream, streaming);
            let b = body(e);
            let mut items = b[field].as_array().expect("message list").clone();
            assert_eq!(
                items.len(),
                2 * n + 1,
                "{endpoint_type} turn {n}: {items:?}"
            );
            // The mock's Responses item ids are random: check their shape, then set them aside.
            for item in items.iter_mut().filter(|i| i["role"] == "assistant") {
                if let Some(id) = item.as_object_mut().and_then(|o| o.remove("id")) {
                    let id = id.as_str().expect("string id").to_string();
                    assert!(id.starts_with("msg_") && id.len() == 20, "{id}");
                }
            }
            assert_eq!(&items[..2 * n], expected.as_slice(), "turn {n}");
            let own = items[2 * n].clone();
            assert_eq!(own["role"], "user");
            assert_eq!(own.get("type").and_then(Value::as_str), user_tag);
            expected.push(own);
            let reply = e.reply_text.clone().expect("reply recorded");
            assert!(!reply.is_empty());
            expected.push(match endpoint_type {
                "responses" => json!({
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply, "annotations": []}],
                }),
                _ => json!({"role": "assistant", "content": reply}),
            });
        }
    }
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(records.len(), 9);
    let truth_by_id: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .map(|e| (e.request_id.unwrap().to_string(), e))
        .collect();
    for r in &records {
        let t = &truth_by_id[r["metadata"]["x_request_id"].as_str().unwrap()];
        let isl = r["metrics"]["input_sequence_length"]["value"].as_u64();
        assert_eq!(isl, Some(t.prompt_tokens), "ISL of the body sent");
    }
}

#[test]
fn responses_later_turns_carry_the_real_replies() {
    check_replay("responses", true);
    check_replay("responses", false);
}

#[test]
fn messages_later_turns_carry_the_real_replies() {
    check_replay("messages", true);
    check_replay("messages", false);
}

fn plain_mock(ttft_ms: u64) -> ringperf_mock::mock::MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: std::time::Duration::from_millis(ttft_ms),
        output_tokens: OutputLen::Fixed(4),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn run_against(
    server: &ringperf_mock::mock::MockServer,
    flags: &str,
) -> (tempfile::TempDir, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} {flags} --ui none --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).unwrap();
    let records = read_jsonl(&dir.path().join("profile_export.jsonl"));
    (dir, records)
}

fn md_u64(r: &Value, key: &str) -> u64 {
    r["metadata"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {r}"))
}

/// A later turn waits its delay after the previous answer: the mock sees turn n+1 arrive at
/// least the delay after it finished answering turn n (the client only knows of the answer
/// after the server sent it, so this is a lower bound that holds on any machine).
#[test]
fn later_turns_wait_their_delay_after_the_answer() {
    let server = plain_mock(0);
    let (_dir, records) = run_against(
        &server,
        "--concurrency 2 --conversation-num 3 --conversation-turn-mean 3 \
         --conversation-turn-delay-mean 150 --isl 8 --osl 4 --random-seed 2",
    );
    assert_eq!(records.len(), 9);
    let groups = sessions(server.truth().entries());
    assert_eq!(groups.len(), 3);
    for g in &groups {
        for w in g.windows(2) {
            let gap = w[1].arrival_ns - w[0].end_ns;
            assert!(gap >= 150_000_000, "turn sent {gap} ns after the answer");
        }
    }
}

/// A rate phase's `--concurrency` caps sessions alive, as AIPerf's session slots do: a session
/// holds its slot from its first turn to its last answer, through its turn delays, and its later
/// turns go on ticks without a slot. From the mock's side a session lasts from its first turn's
/// arrival to its last turn's end, inside the client's hold of the slot, so at no instant are
/// more than two of them alive. The ticks that found both slots taken went unused, yet the run
/// still sent all its requests (the count stops the phase, not the ticks).
#[test]
fn rate_concurrency_caps_sessions_alive() {
    let server = plain_mock(20);
    let (_dir, records) = run_against(
        &server,
        "--request-rate 100 --arrival-pattern constant --concurrency 2 \
         --conversation-turn-mean 3 --conversation-turn-delay-mean 50 --request-count 18 \
         --isl 8 --osl 4 --random-seed 2",
    );
    assert_eq!(records.len(), 18);
    let groups = sessions(server.truth().entries());
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for g in &groups {
        edges.push((g[0].arrival_ns, 1));
        edges.push((g.iter().map(|e| e.end_ns).max().unwrap(), -1));
    }
    edges.sort();
    let (mut alive, mut most) = (0, 0);
    for (_, d) in edges {
        alive += d;
        most = most.max(alive);
    }
    assert_eq!(
        most,
        2,
        "sessions alive at once ({} sessions)",
        groups.len()
    );
}

/// The same multi-turn file at the same rate and cap as AIPerf 0.13's run of it
/// (`tests/data/aiperf-rate-slots`): the requests go in AIPerf's order, conversation and turn —
/// two sessions at a time, each through its three turns, their later turns first, then the next
/// two — which a cap counting requests in flight would interleave with new sessions.
#[test]
fn rate_sessions_go_in_aiperfs_order() {
    let data =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-rate-slots");
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: std::time::Duration::from_millis(50),
        itl: std::time::Duration::from_millis(1),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let (_dir, records) = run_against(
        &server,
        &format!(
            "--endpoint-type chat --streaming --input-file {} --custom-dataset-type multi_turn \
             --osl 4 --request-rate 50 --arrival-pattern constant --concurrency 2 \
             --request-count 18",
            data.join("multi_turn.jsonl").display()
        ),
    );
    let order = |mut rows: Vec<Value>| -> Vec<(String, u64)> {
        rows.sort_by_key(|r| md_u64(r, "request_start_ns"));
        (rows.iter())
            .map(|r| {
                let m = &r["metadata"];
                (
                    m["conversation_id"].as_str().unwrap().to_owned(),
                    md_u64(r, "turn_index"),
                )
            })
            .collect()
    };
    let aiperf = order(read_jsonl(&data.join("profile_export.jsonl")));
    assert_eq!(order(records), aiperf);
}

/// A rate tick that finds every session slot taken goes unused; the next session starts on a
/// later tick, not the moment a slot frees (AIPerf 0.13's rate loop; its run of this load sent
/// on its 20 ms grid). One slot, a tick every 50 ms, answers of 60 ms: each request goes two
/// ticks after the one before (100 ms), never as its predecessor's answer ends (~60 ms). The
/// bound, 80 ms, leaves 20 ms each way for a late tick.
#[test]
fn a_rate_tick_without_a_free_slot_goes_unused() {
    let server = plain_mock(60);
    let (_dir, records) = run_against(
        &server,
        "--request-rate 20 --arrival-pattern constant --concurrency 1 --request-count 6 \
         --isl 8 --osl 4 --random-seed 2",
    );
    assert_eq!(records.len(), 6);
    let mut arrivals: Vec<u64> = (server.truth().entries().iter())
        .map(|e| e.arrival_ns)
        .collect();
    arrivals.sort_unstable();
    for w in arrivals.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap >= 80_000_000, "a request {gap} ns after the one before");
    }
}

/// `--request-cancellation-rate`: exactly the requests the seeded plan names are cancelled
/// (AIPerf's 499 `RequestCancellationError`, `was_cancelled`), the others succeed, and the
/// mock saw the client leave before it answered the cancelled ones.
#[test]
fn cancellation_cancels_the_planned_requests_after_their_delay() {
    // Events 20 ms apart, so that the mock writes again after the client's reset and sees it.
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: std::time::Duration::from_millis(300),
        itl: std::time::Duration::from_millis(20),
        output_tokens: OutputLen::Fixed(4),
        truth_log: true,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let seed = 17;
    let (_dir, records) = run_against(
        &server,
        &format!(
            "--streaming --concurrency 4 --request-count 24 --request-cancellation-rate 40 \
             --request-cancellation-delay 0.05 --isl 8 --osl 4 --random-seed {seed}"
        ),
    );
    assert_eq!(records.len(), 24);
    let plan = ringperf_workload::schedule::CancelPlan::new(
        40.0,
        std::time::Duration::from_millis(50),
        seed,
    );
    let truth: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .filter_map(|e| Some((e.request_id?.to_string(), e)))
        .collect();
    let mut cancelled = 0;
    for r in &records {
        let index = md_u64(r, "session_num");
        let planned = plan
            .delay_for(ringperf_wire::record::Phase::Profiling, index)
            .is_some();
        let was = r["metadata"]["was_cancelled"].as_bool().unwrap();
        assert_eq!(was, planned, "request {index}: {r}");
        if planned {
            cancelled += 1;
            assert_eq!(r["error"]["code"], 499);
            assert_eq!(r["error"]["type"], "RequestCancellationError");
            let t = &truth[r["metadata"]["x_request_id"].as_str().unwrap()];
            assert!(!t.completed, "the mock answered a cancelled request: {t:?}");
        } else {
            assert!(r.get("error").is_none(), "{r}");
        }
    }
    assert!((3..=21).contains(&cancelled), "{cancelled} of 24 cancelled");
}

/// `--concurrency-ramp-duration`: slot k of N starts k·D/(N−1) after the phase start, so the
/// k-th session to begin starts no earlier than that (lower bounds only).
#[test]
fn concurrency_ramp_staggers_the_slots() {
    let server = plain_mock(50);
    let (_dir, records) = run_against(
        &server,
        "--concurrency 4 --concurrency-ramp-duration 0.6 --request-count 40 --isl 8 --osl 4 \
         --random-seed 3",
    );
    assert_eq!(records.len(), 40);
    let mut starts: Vec<u64> = records
        .iter()
        .map(|r| md_u64(r, "request_start_ns"))
        .collect();
    starts.sort_unstable();
    let t0 = starts[0];
    // While the ramp runs, at most k+1 slots exist at 0.2·k s after the phase start: in the
    // first 150 ms after the first request only slot 0 sends (slot 1 waits until 0.2 s, and the
    // first request goes out a few ms after the phase start at most), one request after
    // another, each taking at least its 50 ms TTFT: 3 at most. Without the ramp, 4 slots send
    // 4 at once.
    let early = starts.iter().filter(|&&s| s - t0 < 150_000_000).count();
    assert!(early <= 3, "{early} requests in the first 150 ms");
}

/// `--request-rate-ramp-duration`: the intended times follow the ramp's own schedule exactly
/// (computed here from `RateRamp`, constant arrivals).
#[test]
fn rate_ramp_intended_times_follow_the_ramp() {
    let server = plain_mock(0);
    let (_dir, records) = run_against(
        &server,
        "--request-rate 40 --arrival-pattern constant --request-rate-ramp-duration 0.5 \
         --request-count 30 --isl 8 --osl 4 --random-seed 4",
    );
    assert_eq!(records.len(), 30);
    let mut issued: Vec<u64> = records
        .iter()
        .map(|r| md_u64(r, "credit_issued_ns"))
        .collect();
    issued.sort_unstable();
    let mut expected = ringperf_workload::schedule::Arrivals::ramped(
        ringperf_workload::schedule::RateRamp::new(40.0, std::time::Duration::from_millis(500)),
        ringperf::config::Arrival::Constant,
        0,
    );
    let offsets: Vec<u64> = (0..30).map(|_| expected.next_offset_ns()).collect();
    for (i, (&at, &off)) in issued.iter().zip(&offsets).enumerate() {
        let got = at - issued[0];
        let want = off - offsets[0];
        assert!(got.abs_diff(want) <= 2, "credit {i}: {got} ns vs {want} ns");
    }
    // The ramp starts slow: the first gap is longer than the target's 25 ms.
    assert!(offsets[1] - offsets[0] > 25_000_000);
}

/// `--user-centric-rate Q --num-users U`: each user's turns are at least U/Q apart (their
/// intended times exactly so, unless an answer came later), and users never overlap their own
/// turns.
#[test]
fn user_centric_users_keep_their_turn_gap() {
    let server = plain_mock(0);
    let (_dir, records) = run_against(
        &server,
        "--user-centric-rate 20 --num-users 4 --conversation-turn-mean 3 --request-count 24 \
         --isl 8 --osl 4 --random-seed 6",
    );
    assert_eq!(records.len(), 24);
    let mut by_user: HashMap<String, Vec<(u64, u64, u64)>> = HashMap::new();
    for r in &records {
        by_user
            .entry(
                r["metadata"]["x_correlation_id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
            .or_default()
            .push((
                md_u64(r, "credit_issued_ns"),
                md_u64(r, "request_start_ns"),
                md_u64(r, "request_end_ns"),
            ));
    }
    let gap = 4 * 1_000_000_000 / 20; // U/Q = 200 ms
    let mut multi = 0;
    for turns in by_user.values_mut() {
        turns.sort_unstable();
        assert!(turns.len() <= 3, "{turns:?}");
        multi += usize::from(turns.len() > 1);
        for w in turns.windows(2) {
            assert!(
                w[1].0 - w[0].0 >= gap - 2,
                "intended gap {} ns",
                w[1].0 - w[0].0
            );
            assert!(w[1].1 >= w[0].2, "a user's turns overlap");
        }
    }
    assert!(multi >= 2, "users with several turns: {multi}");
}

/// `--num-warmup-sessions`: the warmup phase starts that many sessions, each sends all its
/// turns; profiling then runs its own `--conversation-num` sessions.
#[test]
fn warmup_sessions_send_whole_conversations() {
    let server = plain_mock(0);
    let (_dir, records) = run_against(
        &server,
        "--concurrency 2 --num-warmup-sessions 2 --conversation-num 3 \
         --conversation-turn-mean 2 --isl 8 --osl 4 --random-seed 8",
    );
    let phase = |name: &str| {
        records
            .iter()
            .filter(|r| r["metadata"]["benchmark_phase"] == name)
            .count()
    };
    assert_eq!(phase("profiling"), 6, "profiling: 3 sessions of 2 turns");
    assert_eq!(phase("warmup"), 4, "warmup: 2 sessions of 2 turns");
    // AIPerf's phase metadata: warmup is phase 0 (no profiling_index), profiling phase 1 and
    // profiling phase 0; every session is a root session, so each turn's root is its session.
    let mut turns_per_root = std::collections::HashMap::<String, Vec<u64>>::new();
    for r in &records {
        let md = &r["metadata"];
        let warm = md["benchmark_phase"] == "warmup";
        let name = if warm { "warmup" } else { "profiling" };
        assert_eq!(md["phase_index"], u64::from(!warm), "{md}");
        assert_eq!(md["phase_name"], name);
        assert_eq!(md["phase_kind"], name);
        if warm {
            assert!(md.get("profiling_index").is_none(), "{md}");
        } else {
            assert_eq!(md["profiling_index"], 0);
        }
        assert_eq!(md["root_correlation_id"], md["x_correlation_id"]);
        let root = md["root_correlation_id"]
            .as_str()
            .expect("a string")
            .to_string();
        turns_per_root
            .entry(root)
            .or_default()
            .push(md["turn_index"].as_u64().unwrap());
    }
    assert_eq!(turns_per_root.len(), 5);
    for turns in turns_per_root.values_mut() {
        turns.sort_unstable();
        assert_eq!(
            turns,
            &[0, 1],
            "both turns of a conversation share its root"
        );
    }
    let groups = sessions(server.truth().entries());
    assert_eq!(
        groups.len(),
        5,
        "2 warmup sessions and 3 profiling sessions"
    );
    assert!(groups.iter().all(|g| g.len() == 2));
}

/// `--connection-reuse-strategy sticky-user-sessions`: every turn of a session comes on one
/// connection of its own (the mock numbers the connections it accepts), and no two sessions
/// share one. The default pool, by contrast, carries several sessions on one connection.
#[test]
fn sticky_sessions_keep_one_connection_each() {
    let flags = "--concurrency 2 --conversation-num 6 --conversation-turn-mean 3 --isl 8 \
                 --osl 4 --random-seed 9";
    let server = plain_mock(0);
    run_against(
        &server,
        &format!("{flags} --connection-reuse-strategy sticky-user-sessions"),
    );
    let groups = sessions(server.truth().entries());
    assert_eq!(groups.len(), 6);
    let mut seen = std::collections::HashSet::new();
    for g in &groups {
        assert_eq!(g.len(), 3);
        let conn = g[0].connection;
        assert!(
            g.iter().all(|e| e.connection == conn),
            "one connection per session"
        );
        assert!(seen.insert(conn), "connection {conn} carried two sessions");
    }

    let pooled = plain_mock(0);
    run_against(&pooled, flags);
    let mut sessions_per_conn: HashMap<u64, std::collections::HashSet<String>> = HashMap::new();
    for e in pooled.truth().entries() {
        sessions_per_conn
            .entry(e.connection)
            .or_default()
            .insert(e.correlation_id.clone().unwrap());
    }
    assert!(
        sessions_per_conn.values().any(|s| s.len() > 1),
        "pooled connections are shared by sessions: {sessions_per_conn:?}"
    );
}

/// `--prefill-concurrency 1`: no request reaches the mock before the one ahead of it got its
/// first token (the mock's first content write), even with 4 slots; the truth log's
/// [arrival, first token] windows never overlap, while a request may arrive during the previous
/// one's decode (the slot comes back at the first token, not at the end). Without the limit the
/// windows overlap.
#[test]
fn prefill_concurrency_admits_one_request_before_each_first_token() {
    let mock = || {
        ringperf_mock::mock::start(MockConfig {
            ttft: std::time::Duration::from_millis(40),
            itl: std::time::Duration::from_millis(5),
            output_tokens: OutputLen::Fixed(4),
            truth_log: true,
            ..MockConfig::default()
        })
        .expect("mock starts")
    };
    let flags = "--streaming --concurrency 4 --request-count 12 --isl 8 --osl 4 --random-seed 10";
    let windows = |server: &ringperf_mock::mock::MockServer| {
        let mut w: Vec<(u64, u64, u64)> = server
            .truth()
            .entries()
            .iter()
            .map(|e| (e.arrival_ns, e.event_ns[0], e.end_ns))
            .collect();
        w.sort_unstable();
        w
    };
    let limited = mock();
    let (_dir, records) = run_against(&limited, &format!("{flags} --prefill-concurrency 1"));
    assert_eq!(records.len(), 12);
    let w = windows(&limited);
    for pair in w.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "a request arrived at {} before the previous one's first token at {}",
            pair[1].0,
            pair[0].1
        );
    }
    assert!(
        w.windows(2).any(|p| p[1].0 < p[0].2),
        "no request went during the previous one's decode: the slot came back only at the end"
    );
    let free = mock();
    run_against(&free, flags);
    let w = windows(&free);
    assert!(
        w.windows(2).any(|p| p[1].0 < p[0].1),
        "without the limit, requests overlap in prefill"
    );
}

/// `--extra-inputs store:true` on the Responses endpoint: AIPerf's stateful chaining. Each later
/// turn goes alone (its own message, no history, no context) with `previous_response_id`, the id
/// of the answer the mock sent to the turn before (`resp_` and the mock's id of it); the first
/// turn has none. Streamed (the id read from `response.created` / `response.completed`) and
/// whole (the body's `id`). The mock's five-token answers fit the eight asked for: a capped
/// answer's status is `incomplete`, on which AIPerf does not chain (the next turn then carries
/// the history).
#[test]
fn stored_responses_chain_by_previous_response_id() {
    for streaming in [true, false] {
        let server = common::recording_mock(5);
        let dir = tempfile::tempdir().unwrap();
        let stream = if streaming { "--streaming" } else { "" };
        let cfg = config(&format!(
            "ringperf profile -m mock-model -u {} --endpoint-type responses {stream} \
             --extra-inputs store:true --use-server-token-count --concurrency 2 \
             --conversation-num 3 --conversation-turn-mean 3 --isl 10 --osl 8 --random-seed 9 \
             --ui none --no-server-metrics --artifact-dir {}",
            server.addr,
            dir.path().display()
        ));
        let out = ringperf::run::run(cfg).unwrap();
        assert_eq!((out.successes, out.errors), (9, 0));
        let groups = sessions(server.truth().entries());
        assert_eq!(groups.len(), 3);
        for g in &groups {
            assert_eq!(g.len(), 3);
            for (n, e) in g.iter().enumerate() {
                let b = body(e);
                let input = b["input"].as_array().expect("input items");
                assert_eq!(input.len(), 1, "turn {n} goes alone: {input:?}");
                assert_eq!(input[0]["role"], "user");
                assert_eq!(b["store"], true);
                let want = (n > 0).then(|| format!("resp_{:016x}", g[n - 1].response_id));
                assert_eq!(
                    b.get("previous_response_id").and_then(Value::as_str),
                    want.as_deref(),
                    "streaming {streaming}, turn {n}"
                );
            }
        }
    }
    // AIPerf's refusal: chaining undercounts a client-side ISL.
    let err = ringperf::config::Config::from_plan(
        &ringperf::plan::Plan::parse(
            &"ringperf profile -m m -u 127.0.0.1:1 --endpoint-type responses --extra-inputs store:true"
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap(),
        false,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("Add --use-server-token-count"),
        "{err}"
    );
}
