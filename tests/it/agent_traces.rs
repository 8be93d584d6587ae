//! Agent-trace replay (`weka_trace`) end to end: AIPerf's own Weka fixtures sent to the mock,
//! against the figures AIPerf 0.13 reported for the same files (tests/data/weka/expected.json)
//! and the mock's record of when each request arrived.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/weka")
}

fn expected(case: &str) -> Value {
    common::read_json(&data().join("expected.json"))[case].clone()
}

/// `ringperf profile` against `server`, writing into `dir`: the mock's model, no UI, the builtin
/// tokenizer, no server metrics; the caller adds the dataset and the load.
fn profile(server: &ringperf_mock::mock::MockServer, dir: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"));
    cmd.args([
        "profile",
        "-m",
        "mock-model",
        "--ui",
        "none",
        "--tokenizer",
        "builtin",
    ])
    .args(["--no-server-metrics", "--url"])
    .arg(format!("http://{}", server.addr))
    .arg("--artifact-dir")
    .arg(dir);
    cmd
}

/// Runs `trace` at concurrency 1 with `extra` flags; the run's JSON export and the mock's
/// truth log (arrival order).
fn run(trace: &str, extra: &[&str]) -> (Value, Vec<ringperf_mock::mock::TruthEntry>) {
    let (export, truth, _) = run_with_records(trace, extra);
    (export, truth)
}

/// [`run`], and the records' metadata in send order.
fn run_with_records(
    trace: &str,
    extra: &[&str],
) -> (Value, Vec<ringperf_mock::mock::TruthEntry>, Vec<Value>) {
    let server = common::recording_mock(16);
    let dir = tempfile::tempdir().unwrap();
    let out = profile(&server, dir.path())
        .args(["--streaming", "--concurrency", "1", "--input-file"])
        .arg(data().join(trace))
        .args(extra)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let export = common::read_json(&dir.path().join("profile_export_aiperf.json"));
    let n = export["request_count"]["avg"].as_f64().unwrap() as usize;
    let mut truth = common::truth_of(&server, n);
    truth.sort_by_key(|t| t.arrival_ns);
    let mut records: Vec<Value> = common::read_jsonl(&dir.path().join("profile_export.jsonl"))
        .into_iter()
        .map(|r| r["metadata"].clone())
        .collect();
    records.sort_by_key(|m| m["request_start_ns"].as_u64());
    (export, truth, records)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// AIPerf's `weka_subagent` demo: the root's first turn starts a subagent recorded 500 ms after
/// the branch's start, whose two turns run while the root waits; the root's next turn goes as
/// soon as the subagent's last answer is in (its recorded 1.6 s delay is not waited), and the
/// turn after it waits its recorded 3 s after the previous answer. Prefix-cache hits and the
/// branch counts are AIPerf's.
#[test]
fn a_subagent_runs_between_its_spawn_and_its_join_as_aiperf_replays_it() {
    let (export, truth, records) = run_with_records(
        "traces/weka_subagent_0001.json",
        &["--conversation-num", "1"],
    );
    let want = expected("weka_subagent_0001");
    // Each record's metadata: AIPerf's keys in its order, the turn's place in the trace, and
    // the session's place in the tree (parent and root named by their conversations).
    let conv_of = |id: &Value| {
        records
            .iter()
            .find(|m| m["x_correlation_id"] == *id)
            .map_or(Value::Null, |m| m["conversation_id"].clone())
    };
    let ours: Vec<Value> = records
        .iter()
        .map(|m| {
            let keys: Vec<&String> = m
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| !["coalesced_reads", "tcp_rtt_us"].contains(&k.as_str()))
                .collect();
            serde_json::json!({
                "keys": keys,
                "conversation_id": m["conversation_id"],
                "turn_index": m["turn_index"],
                "source": [m["source_trace_id"], m["source_outer_idx"],
                           m["source_inner_idx"], m["source_kind"]],
                "agent_depth": m["agent_depth"],
                "parent": conv_of(&m["parent_correlation_id"]),
                "root": conv_of(&m["root_correlation_id"]),
            })
        })
        .collect();
    assert_eq!(Value::from(ours), want["records"]);
    assert_eq!(
        export["theoretical_prefix_cache_hit"], want["theoretical_prefix_cache_hit"],
        "54.5 %: 12 of 22 blocks"
    );
    assert_eq!(export["branch_stats"], want["branch_stats"]);
    let keys: Vec<&str> = export
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let end = keys.iter().position(|k| *k == "end_time").unwrap();
    assert_eq!(
        keys[end + 1],
        "branch_stats",
        "right after end_time, as AIPerf"
    );
    // Arrivals: root 0, child 0, child 1, root 1, root 2.
    assert_eq!(truth.len(), 5);
    let root = truth[0].correlation_id.clone();
    let child = truth[1].correlation_id.clone();
    assert_ne!(root, child, "the subagent is its own session");
    let who: Vec<bool> = truth.iter().map(|t| t.correlation_id == root).collect();
    assert_eq!(who, [true, false, false, true, true]);
    let gap = |a: u64, b: u64| ms(b.saturating_sub(a));
    let child_wait = gap(truth[0].end_ns, truth[1].arrival_ns);
    assert!(
        (500.0..1000.0).contains(&child_wait),
        "the child starts 500 ms after the spawning answer: {child_wait} ms"
    );
    let join = gap(truth[2].end_ns, truth[3].arrival_ns);
    assert!(join < 500.0, "the joining turn goes at once: {join} ms");
    let next = gap(truth[3].end_ns, truth[4].arrival_ns);
    assert!(
        (3000.0..3500.0).contains(&next),
        "the next turn waits its recorded 3 s: {next} ms"
    );
    // Every body is the conversation so far: the root's joining turn carries its first turn's
    // messages, never the mock's reply (the trace holds the recorded answer).
    let body = |i: usize| -> Value {
        serde_json::from_slice(truth[i].request_body.as_deref().unwrap()).unwrap()
    };
    let first = body(0)["messages"].as_array().unwrap().clone();
    let joined = body(3)["messages"].as_array().unwrap().clone();
    assert!(joined.len() > first.len());
    let reply = truth[0].reply_text.clone().unwrap();
    assert!(
        joined
            .iter()
            .all(|m| m["content"].as_str() != Some(reply.as_str())),
        "no live reply in the history"
    );
}

/// With no stop condition the run sends 10 requests, replaying the one trace again and again;
/// the last tree's subagent finds no request left: AIPerf counts it truncated, not spawned.
#[test]
fn a_subagent_cut_by_the_request_count_is_truncated_as_aiperf_counts_it() {
    let (export, truth) = run("traces/one_subagent.json", &[]);
    let want = expected("one_subagent_default_count");
    assert_eq!(truth.len(), 10);
    assert_eq!(export["request_count"]["avg"], 10.0);
    assert_eq!(export["branch_stats"], want["branch_stats"]);
    assert_eq!(want["branch_stats"]["children_truncated"], 1);
    // 3 whole trees of 10 blocks, 3 of them hits, and the fourth tree's first turn (3 blocks).
    assert_eq!(
        export["theoretical_prefix_cache_hit"],
        serde_json::json!({"unit": "%", "avg": 900.0 / 33.0, "count": 33, "sum": 9})
    );
    assert_eq!(
        export["theoretical_prefix_cache_hit"],
        want["theoretical_prefix_cache_hit"]
    );
}

/// The Weka options: refused with another dataset type, with each other where AIPerf refuses
/// them, and echoed in `input_config` as AIPerf echoes them.
#[test]
fn weka_options_are_checked_and_echoed_as_aiperf_does() {
    let base = "ringperf profile -m m -u 127.0.0.1:1 --streaming";
    let e = common::config_error(&format!(
        "{base} --input-file x.jsonl --custom-dataset-type single_turn --use-think-time-only"
    ));
    assert!(
        e.to_string()
            .contains("--use-think-time-only only applies to Weka trace replay"),
        "{e}"
    );
    let e = common::config_error(&format!("{base} --max-context-length 100"));
    assert!(e.to_string().contains("the prompts are synthetic"), "{e}");
    let e = common::config_error(&format!(
        "{base} --input-file t.json --use-think-time-only --ignore-trace-delays"
    ));
    assert!(e.to_string().contains("mutually exclusive"), "{e}");
    let c = common::config(&format!(
        "{base} --input-file t.json --custom-dataset-type weka_trace --use-think-time-only \
         --max-context-length 4096 --inter-turn-delay-cap-seconds 2.5"
    ));
    let echo = &c.input_config()["datasets"][0];
    assert_eq!(echo["format"], "weka_trace");
    assert_eq!(echo["use_think_time_only"], true);
    assert_eq!(echo["max_context_length"], 4096);
    assert_eq!(echo["inter_turn_delay_cap_seconds"], 2.5);
}

/// AIPerf's five finite traces as a directory: 21 requests, ten subagents (nine of them after a
/// wait for their place), five held turns, and `root_05`'s last call run as a background
/// sidecar (AIPerf's split of flattened agents): AIPerf's counts.
#[test]
fn a_directory_of_traces_replays_each_tree_as_aiperf_does() {
    let (export, truth) = run("finite", &["--conversation-num", "5"]);
    let want = expected("finite_traces");
    assert_eq!(truth.len(), 21);
    assert_eq!(export["branch_stats"], want["branch_stats"]);
    assert_eq!(
        export["theoretical_prefix_cache_hit"],
        want["theoretical_prefix_cache_hit"]
    );
}

/// TraceLab's public example (two sessions, 19 rounds) given as `tracelab` is replayed on its
/// rounds' times (AIPerf promotes it to a fixed schedule), each round its recorded prompt
/// length over blocks rebuilt from its cached prefix: AIPerf's prefix-cache figure.
#[test]
fn a_tracelab_file_replays_its_rounds_with_aiperfs_prefix_cache_figure() {
    let (export, truth) = run(
        "tracelab/round_trace.jsonl",
        &[
            "--custom-dataset-type",
            "tracelab",
            "--fixed-schedule",
            "--replay-speedup",
            "50",
        ],
    );
    let want = expected("tracelab_ns2_fixed");
    assert_eq!(truth.len(), 19);
    assert_eq!(
        export["input_config"]["phases"][0]["type"],
        "fixed_schedule"
    );
    assert_eq!(
        export["theoretical_prefix_cache_hit"],
        want["theoretical_prefix_cache_hit"]
    );
}

/// A session tree cannot be replayed where its structure would be lost: an endpoint type that
/// sends no conversation (completions), or user-centric rate (whose users pick any
/// conversation). Both are refused before a request is sent, with the reason.
#[test]
fn agent_traces_are_refused_where_their_trees_cannot_be_replayed() {
    let server = common::recording_mock(4);
    for (extra, why) in [
        (
            &["--endpoint-type", "completions", "--concurrency", "1"][..],
            "endpoint type completions does not send",
        ),
        (
            &[
                "--user-centric-rate",
                "2",
                "--num-users",
                "2",
                "--request-count",
                "4",
            ][..],
            "--user-centric-rate cannot replay a dataset of session trees",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = profile(&server, dir.path())
            .arg("--input-file")
            .arg(data().join("traces/one_subagent.json"))
            .args(extra)
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?} ran");
        assert!(stderr.contains(why), "{extra:?}: {stderr}");
    }
    assert_eq!(server.truth().len(), 0, "nothing was sent");
}

/// Under an open-loop rate and a time limit the trees still run: children are started by their
/// parents' answers between the rate's ticks, and the phase ends with its last child.
#[test]
fn agent_traces_run_under_a_request_rate_and_a_duration() {
    let (export, truth, records) = run_with_records(
        "traces/one_subagent.json",
        &[
            "--request-rate",
            "50",
            "--benchmark-duration",
            "2",
            "--ignore-trace-delays",
        ],
    );
    let n = export["request_count"]["avg"].as_f64().unwrap() as usize;
    assert!(n >= 6, "{n} requests");
    assert_eq!(truth.len(), n);
    let children = records.iter().filter(|m| m["agent_depth"] == 1).count();
    assert!(children >= 2, "{children} subagent requests");
    let stats = &export["branch_stats"];
    assert!(stats["children_spawned"].as_u64().unwrap() >= 2, "{stats}");
    // Every child that sent a request either sent them all or was cut by the time limit.
    let count = |k: &str| stats[k].as_u64().unwrap();
    assert!(
        count("children_spawned")
            <= count("children_completed")
                + count("children_errored")
                + count("children_truncated"),
        "{stats}"
    );
}

/// A Weka corpus of the Hugging Face Hub is read from the local Hugging Face cache, as the
/// `datasets` library leaves it: each row of the train split is a trace, replayed as the same
/// file would be. Absent from the cache, the error says where it looked and how to download it.
#[test]
fn a_hub_weka_corpus_is_read_from_the_hugging_face_cache() {
    let cache = tempfile::tempdir().unwrap();
    let repo = cache
        .path()
        .join("datasets--semianalysisai--cc-traces-weka-062126");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
    let data_dir = repo.join("snapshots/0123abcd/data");
    std::fs::create_dir_all(&data_dir).unwrap();
    let row = |f: &str| {
        let v: Value = serde_json::from_slice(&std::fs::read(data().join(f)).unwrap()).unwrap();
        v.to_string() + "\n"
    };
    let rows = row("traces/weka_subagent_0001.json") + &row("traces/one_subagent.json");
    std::fs::write(data_dir.join("train-00000-of-00001.jsonl"), rows).unwrap();
    std::fs::write(data_dir.join("test-00000-of-00001.jsonl"), "not read\n").unwrap();
    let server = common::recording_mock(16);
    let run_hub = |dataset: &[&str], cache_dir: &Path| {
        let dir = tempfile::tempdir().unwrap();
        let out = profile(&server, dir.path())
            .env("HF_HUB_CACHE", cache_dir)
            .args(["--streaming", "--concurrency", "1"])
            .args(["--num-dataset-entries", "1", "--conversation-num", "1"])
            .args(dataset)
            .output()
            .expect("the binary runs");
        let export = dir.path().join("profile_export_aiperf.json");
        (out, export.exists().then(|| common::read_json(&export)))
    };
    // The first row (AIPerf's weka_subagent demo): its five requests and AIPerf's figures.
    let (out, export) = run_hub(
        &["--public-dataset", "semianalysis_cc_traces_weka_062126"],
        cache.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let export = export.unwrap();
    let want = expected("weka_subagent_0001");
    assert_eq!(export["request_count"]["avg"], 5.0);
    assert_eq!(export["branch_stats"], want["branch_stats"]);
    assert_eq!(
        export["theoretical_prefix_cache_hit"],
        want["theoretical_prefix_cache_hit"]
    );
    assert_eq!(
        export["input_config"]["datasets"][0]["dataset"],
        "semianalysis_cc_traces_weka_062126"
    );
    // `--hf-weka-dataset` alone is `weka_hf`; a repo not in the cache is a clear error.
    let empty = tempfile::tempdir().unwrap();
    let (out, _) = run_hub(&["--hf-weka-dataset", "org/other-traces"], empty.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("datasets--org--other-traces")
            && stderr.contains("huggingface-cli download --repo-type dataset org/other-traces"),
        "{stderr}"
    );
    let e = common::config_error("ringperf profile -m m -u 127.0.0.1:1 --public-dataset weka_hf");
    assert!(
        e.to_string()
            .contains("requires a non-empty hf_weka_dataset"),
        "{e}"
    );
    let e = common::config_error(
        "ringperf profile -m m -u 127.0.0.1:1 --public-dataset sharegpt --hf-weka-dataset a/b",
    );
    assert!(
        e.to_string()
            .contains("can only be used with dataset weka_hf"),
        "{e}"
    );
}

/// `ringperf merge` of an agent-trace run keeps each record's place in its trace and tree.
#[test]
fn a_merged_agent_trace_run_keeps_its_records_lineage() {
    let server = common::recording_mock(8);
    // Two shards, one tree each; merged into one run.
    let shards: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    // Both start at one instant, 2 s from now (the shards' shared schedule origin).
    let at = (ringperf_wire::clock::wall_now_ns() + 2_000_000_000).to_string();
    let children: Vec<std::process::Child> = shards
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            profile(&server, dir.path())
                .args(["--streaming", "--concurrency", "2"])
                .args([
                    "--conversation-num",
                    "2",
                    "--ignore-trace-delays",
                    "--random-seed",
                    "1",
                ])
                .args(["--shard-count", "2", "--shard-index", &i.to_string()])
                .args(["--start-at", &at, "--input-file"])
                .arg(data().join("traces/weka_subagent_0001.json"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the binary runs")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("the shard ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let merged = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("merge")
        .args(shards.iter().map(|d| d.path()))
        .arg("--artifact-dir")
        .arg(merged.path())
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let keys = [
        "source_trace_id",
        "source_outer_idx",
        "source_inner_idx",
        "source_kind",
        "agent_depth",
        "parent_correlation_id",
        "root_correlation_id",
    ];
    let pick = |dir: &Path| {
        let mut v: Vec<Value> = common::read_jsonl(&dir.join("profile_export.jsonl"))
            .into_iter()
            .map(|r| {
                let m = &r["metadata"];
                let mut o = serde_json::Map::new();
                o.insert("x_request_id".into(), m["x_request_id"].clone());
                for k in keys {
                    o.insert(k.into(), m[k].clone());
                }
                Value::Object(o)
            })
            .collect();
        v.sort_by_key(|o| o["x_request_id"].as_str().unwrap_or_default().to_string());
        v
    };
    let mut before: Vec<Value> = shards.iter().flat_map(|d| pick(d.path())).collect();
    before.sort_by_key(|o| o["x_request_id"].as_str().unwrap_or_default().to_string());
    let after = pick(merged.path());
    assert_eq!(before.len(), 10);
    assert!(before.iter().any(|o| o["agent_depth"] == 1));
    assert_eq!(before, after);
}

/// `--synthesis-max-osl` caps an agent trace's root requests' outputs (its subagents' are sent
/// as recorded), as AIPerf's loader caps them; a reshaping option is refused for it.
#[test]
fn synthesis_caps_reach_an_agent_trace_and_reshaping_is_refused() {
    let (_, truth) = run(
        "traces/one_subagent.json",
        &["--conversation-num", "1", "--synthesis-max-osl", "35"],
    );
    let asked: Vec<Value> = truth
        .iter()
        .map(|t| {
            let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
            body["max_completion_tokens"].clone()
        })
        .collect();
    assert_eq!(asked, [30, 50, 35].map(Value::from));
    let e = common::config_error(
        "ringperf profile -m m -u 127.0.0.1:1 --input-file t.json --custom-dataset-type \
         weka_trace --synthesis-speedup-ratio 2",
    );
    assert!(
        e.to_string()
            .contains("take --synthesis-max-isl and --synthesis-max-osl only"),
        "{e}"
    );
}

/// The swim lane of a ringperf agent-trace run nests each subagent's session under its root's
/// lane (its records' `root_correlation_id`), as AIPerf draws its own runs.
#[test]
fn the_swim_lane_of_an_agent_trace_run_nests_the_subagent_under_its_root() {
    let server = common::recording_mock(8);
    let dir = tempfile::tempdir().unwrap();
    let status = profile(&server, dir.path())
        .args(["--streaming", "--concurrency", "1"])
        .args([
            "--conversation-num",
            "1",
            "--ignore-trace-delays",
            "--input-file",
        ])
        .arg(data().join("traces/weka_subagent_0001.json"))
        .status()
        .expect("the binary runs");
    assert!(status.success());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["analyze", "swim-lane"])
        .arg(dir.path())
        .arg("--html")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.path().join("swim_lane.html")).unwrap();
    let payload = crate::swim_lane::payload_of(&html);
    let sessions = payload["sessions"].as_array().unwrap();
    // The root's three requests on row 0, the subagent's two at agent depth 1 on the row below,
    // in the root's slot.
    let shape: Vec<(usize, Vec<Value>, Value)> = sessions
        .iter()
        .map(|s| {
            let turns = s["turns"].as_array().unwrap();
            (
                turns.len(),
                turns.iter().map(|t| t[7].clone()).collect(),
                s["row0"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (3, vec![Value::from(0); 3], Value::from(0)),
            (2, vec![Value::from(1); 2], Value::from(1)),
        ]
    );
    assert_eq!(sessions[0]["slot"], sessions[1]["slot"]);
}

/// `--cache-bust first_turn_prefix` on an agent trace: every body starts with the first turn's
/// messages (the recorded history), and every body carries the session's one marker there, in
/// the first user message, as AIPerf marks them; a subagent carries its root's.
#[test]
fn a_first_turn_marker_is_in_every_body_of_the_tree_at_its_first_user_message() {
    let (_, truth) = run(
        "traces/one_subagent.json",
        &["--cache-bust", "first_turn_prefix", "--request-count", "3"],
    );
    assert_eq!(truth.len(), 3);
    let markers: Vec<String> = truth
        .iter()
        .map(|t| {
            let body: Value = serde_json::from_slice(t.request_body.as_deref().unwrap()).unwrap();
            let text = body.to_string();
            assert_eq!(text.matches("[rid:").count(), 1, "{body}");
            let first_user = (body["messages"].as_array().unwrap().iter())
                .find(|m| m["role"] == "user")
                .unwrap()
                .to_string();
            let at = first_user.find("[rid:").expect("in the first user message");
            first_user[at..at + 18].to_string()
        })
        .collect();
    assert!(
        markers.iter().all(|m| *m == markers[0]),
        "one marker for the root's two turns and its subagent: {markers:?}"
    );
}
