//! Scale-out shards (`--shard-index`, `--shard-count`, `--start-at`): N `ringperf profile`
//! processes against one mock send, in union, exactly the requests of the single-process run —
//! the same request indices, the same intended times from the phase start, the same prompts
//! (the mock's truth log of every body it received) — and each shard says who it is.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::{read_json, read_jsonl, recording_mock};
use ringperf_mock::mock::MockServer;
use serde_json::Value;

/// The workload every run here shares: a seeded open-loop schedule (gamma arrivals, whose draws
/// each depend on the previous ones), streaming chat, builtin tokenizer.
const OPEN_LOOP: [&str; 8] = [
    "--request-rate",
    "150",
    "--arrival-pattern",
    "gamma",
    "--arrival-smoothness",
    "0.7",
    "--random-seed",
    "11",
];

fn command(server: &MockServer, dir: &Path, requests: u32, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ringperf"));
    c.args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--tokenizer", "builtin", "--no-server-metrics"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--request-count")
        .arg(requests.to_string())
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        .env_remove("RINGPERF_SHARD_INDEX")
        .env_remove("RINGPERF_SHARD_COUNT")
        .env_remove("RINGPERF_START_AT")
        .env_remove("JOB_COMPLETION_INDEX");
    c
}

fn succeeded(out: Output) -> Output {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// An instant `ms` from now, epoch ns, as `--start-at` takes it.
fn start_in(ms: u64) -> String {
    (ringperf_wire::clock::wall_now_ns() + ms * 1_000_000).to_string()
}

/// Runs `n` shards of one run concurrently, each into `base/shard-<i>`.
fn run_shards(server: &MockServer, base: &Path, n: u32, requests: u32, extra: &[&str]) {
    let at = start_in(3_000);
    let children: Vec<Child> = (0..n)
        .map(|i| {
            let (index, count) = (i.to_string(), n.to_string());
            let mut args = vec!["--shard-index", &index, "--shard-count", &count];
            args.extend_from_slice(&["--start-at", &at]);
            args.extend_from_slice(extra);
            command(server, &base.join(format!("shard-{i}")), requests, &args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary runs")
        })
        .collect();
    for c in children {
        succeeded(c.wait_with_output().expect("the shard ends"));
    }
}

/// One request as a run's records saw it: its index, its intended time from the profiling
/// phase's start (ns) and its `X-Request-ID`.
#[derive(Debug)]
struct Sent {
    index: u64,
    offset_ns: i128,
    request_id: String,
}

fn sent(dir: &Path) -> Vec<Sent> {
    let (start, _) = common::profiling_window(dir);
    read_jsonl(&dir.join("profile_export.jsonl"))
        .iter()
        .map(|l| {
            let md = &l["metadata"];
            assert!(l.get("error").is_none(), "{l}");
            Sent {
                index: md["session_num"].as_u64().unwrap(),
                offset_ns: md["credit_issued_ns"].as_u64().unwrap() as i128 - start as i128,
                request_id: md["x_request_id"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

/// Every request body the mock received, sorted (a multiset).
fn bodies(server: &MockServer) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = server
        .truth()
        .entries()
        .iter()
        .map(|e| e.request_body.as_deref().expect("bodies recorded").to_vec())
        .collect();
    v.sort();
    v
}

fn sorted<T: Ord + Clone>(v: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = v.into_iter().collect();
    v.sort();
    v
}

/// The union of `n` shards against the single-process run of one schedule.
fn shards_send_what_one_process_sends(n: u32, requests: u32, load: &[&str]) {
    let open_loop = load.contains(&"--request-rate");
    let tmp = tempfile::tempdir().unwrap();
    let whole_server = recording_mock(4);
    let whole_dir = tmp.path().join("whole");
    succeeded(
        command(&whole_server, &whole_dir, requests, load)
            .output()
            .unwrap(),
    );
    let shard_server = recording_mock(4);
    let base = tmp.path().join("shards");
    run_shards(&shard_server, &base, n, requests, load);

    let whole = sent(&whole_dir);
    let mut union = Vec::new();
    let mut run_ids = BTreeSet::new();
    for i in 0..n {
        let dir = base.join(format!("shard-{i}"));
        let mine = sent(&dir);
        // Shard i sent the run's requests whose index is i modulo n, and only those.
        assert!(
            mine.iter().all(|s| s.index % u64::from(n) == u64::from(i)),
            "shard {i}: {:?}",
            mine.iter().map(|s| s.index).collect::<Vec<_>>()
        );
        let manifest = read_json(&dir.join("shard.json"));
        assert_eq!(manifest["index"], i);
        assert_eq!(manifest["count"], n);
        assert_eq!(manifest["server_metrics"], false, "--no-server-metrics");
        let summary = read_json(&dir.join("profile_export_aiperf.json"));
        let shard = &summary["ringperf"]["shard"];
        assert_eq!(shard["index"], i);
        assert_eq!(shard["run_id"], manifest["run_id"]);
        assert_eq!(summary["benchmark_id"], manifest["run_id"]);
        assert_eq!(shard["start_at_ns"], manifest["start_at_ns"]);
        run_ids.insert(manifest["run_id"].as_str().unwrap().to_string());
        union.extend(mine);
    }
    assert_eq!(run_ids.len(), 1, "one run id: {run_ids:?}");
    assert_eq!(
        sorted(union.iter().map(|s| s.index)),
        (0..u64::from(requests)).collect::<Vec<_>>()
    );
    assert_eq!(
        sorted(union.iter().map(|s| s.index)),
        sorted(whole.iter().map(|s| s.index))
    );
    if open_loop {
        // A closed loop's intended times are when its slots free up, which no two runs share.
        assert_eq!(
            sorted(union.iter().map(|s| s.offset_ns)),
            sorted(whole.iter().map(|s| s.offset_ns)),
            "the same intended times from the phase start"
        );
    }
    let ids: BTreeSet<&str> = union.iter().map(|s| s.request_id.as_str()).collect();
    assert_eq!(
        ids.len(),
        union.len(),
        "request ids are unique across shards"
    );
    // What the server received: the same prompts, each as often.
    let (a, b) = (bodies(&whole_server), bodies(&shard_server));
    assert_eq!(a.len(), requests as usize);
    assert!(a == b, "the shards' bodies differ from the single run's");
}

#[test]
fn two_shards_of_an_open_loop_schedule_are_the_single_run() {
    shards_send_what_one_process_sends(2, 40, &OPEN_LOOP);
}

#[test]
fn three_shards_of_an_open_loop_schedule_are_the_single_run() {
    shards_send_what_one_process_sends(3, 31, &OPEN_LOOP);
}

#[test]
fn closed_loop_shards_divide_the_concurrency_and_the_requests() {
    let load = ["--concurrency", "5", "--random-seed", "4"];
    shards_send_what_one_process_sends(2, 23, &load);
}

/// The exit code and stderr of a run expected to be refused.
fn refused(extra: &[&str]) -> String {
    let server = recording_mock(1);
    let dir = tempfile::tempdir().unwrap();
    let out = command(&server, dir.path(), 2, extra).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        server.truth().entries().is_empty(),
        "nothing sent when refused"
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_split_run_without_its_start_or_index_is_refused() {
    let c = ["--concurrency", "3"];
    let e = refused(&[&c[..], &["--shard-count", "2", "--shard-index", "0"]].concat());
    assert!(e.contains("needs --start-at"), "{e}");
    let at = start_in(60_000);
    let e = refused(&[&c[..], &["--shard-count", "2", "--start-at", &at]].concat());
    assert!(e.contains("needs --shard-index"), "{e}");
    let split = [
        "--shard-count",
        "2",
        "--shard-index",
        "2",
        "--start-at",
        &at,
    ];
    let e = refused(&[&c[..], &split[..]].concat());
    assert!(e.contains("out of range"), "{e}");
    // An instant already past when the shard starts: its schedule would begin before it did.
    let past = (ringperf_wire::clock::wall_now_ns() - 5_000_000_000).to_string();
    let split = [
        "--shard-count",
        "2",
        "--shard-index",
        "1",
        "--start-at",
        &past,
    ];
    let e = refused(&[&c[..], &split[..]].concat());
    assert!(e.contains("before this process started"), "{e}");
    // A share of nothing: fewer slots or requests than shards (`refused` runs 2 requests).
    let split = [
        "--shard-count",
        "3",
        "--shard-index",
        "2",
        "--start-at",
        &at,
    ];
    let e = refused(&[&split[..], &["--concurrency", "2"]].concat());
    assert!(
        e.contains("--concurrency 2 cannot be divided over 3 shards"),
        "{e}"
    );
    let e = refused(&[&c[..], &split[..]].concat());
    assert!(
        e.contains("--request-count 2 cannot be divided over 3 shards"),
        "{e}"
    );
}

#[test]
fn a_kubernetes_indexed_job_names_the_shard_through_the_environment() {
    let server = recording_mock(2);
    let dir = tempfile::tempdir().unwrap();
    let at = start_in(1_500);
    let out = command(&server, dir.path(), 6, &["--concurrency", "3"])
        .envs([
            ("JOB_COMPLETION_INDEX", "1"),
            ("RINGPERF_SHARD_COUNT", "3"),
            ("RINGPERF_START_AT", at.as_str()),
        ])
        .output()
        .unwrap();
    succeeded(out);
    let manifest: Value = read_json(&dir.path().join("shard.json"));
    assert_eq!(manifest["index"], 1);
    assert_eq!(manifest["count"], 3);
    assert_eq!(manifest["start_at_ns"].as_u64().unwrap().to_string(), at);
    // Requests 1 and 4 of 6 are shard 1's.
    let indices = sorted(sent(dir.path()).iter().map(|s| s.index));
    assert_eq!(indices, vec![1, 4]);
    assert_eq!(server.truth().entries().len(), 2);
}

#[test]
fn only_shard_zero_scrapes_the_server() {
    let server = recording_mock(2);
    let tmp = tempfile::tempdir().unwrap();
    let at = start_in(2_500);
    let children: Vec<Child> = (0..2)
        .map(|i: u32| {
            let index = i.to_string();
            let dir = tmp.path().join(format!("s{i}"));
            let c = command(
                &server,
                &dir,
                4,
                &["--shard-index", &index, "--concurrency", "2"],
            );
            // Server metrics on: the command's --no-server-metrics is overridden by its
            // environment twin being unset, so build the arguments without it.
            let args: Vec<String> = c
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .filter(|a| a != "--no-server-metrics")
                .collect();
            let mut c = Command::new(c.get_program());
            c.args(&args)
                .args(["--shard-count", "2", "--start-at", &at, "--verbose"])
                .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
                .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.2")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| succeeded(c.wait_with_output().unwrap()))
        .collect();
    let s0 = tmp.path().join("s0");
    let s1 = tmp.path().join("s1");
    assert_eq!(read_json(&s0.join("shard.json"))["server_metrics"], true);
    assert_eq!(read_json(&s1.join("shard.json"))["server_metrics"], false);
    assert!(s0.join("server_metrics_export.json").exists());
    assert!(!s1.join("server_metrics_export.json").exists());
    let said = String::from_utf8_lossy(&outs[1].stderr);
    assert!(said.contains("collected by shard 0 only"), "{said}");
    assert!(!String::from_utf8_lossy(&outs[0].stderr).contains("shard 0 only"));
    // Both shards still agree on the run.
    assert_eq!(
        read_json(&s0.join("shard.json"))["run_id"],
        read_json(&s1.join("shard.json"))["run_id"]
    );
}

/// Each run's records: `(x_correlation_id, conversation_id, intended offset from the profiling
/// start)`, per shard for a split run.
fn records_of(dir: &Path) -> Records {
    let (start, _) = common::profiling_window(dir);
    read_jsonl(&dir.join("profile_export.jsonl"))
        .iter()
        .map(|l| {
            let md = &l["metadata"];
            assert!(l.get("error").is_none(), "{l}");
            (
                md["x_correlation_id"].as_str().unwrap().to_string(),
                md["conversation_id"].as_str().unwrap().to_string(),
                md["credit_issued_ns"].as_u64().unwrap() as i128 - start as i128,
            )
        })
        .collect()
}

/// A run's records, as [`records_of`] reads them.
type Records = Vec<(String, String, i128)>;

/// Runs the whole and the split run of `load`; returns the whole run's records and each
/// shard's.
fn whole_and_shards(n: u32, requests: u32, load: &[&str]) -> (Records, Vec<Records>) {
    let tmp = tempfile::tempdir().unwrap();
    let server = recording_mock(3);
    let whole = tmp.path().join("whole");
    succeeded(command(&server, &whole, requests, load).output().unwrap());
    let base = tmp.path().join("shards");
    run_shards(&server, &base, n, requests, load);
    let shards = (0..n)
        .map(|i| records_of(&base.join(format!("shard-{i}"))))
        .collect();
    (records_of(&whole), shards)
}

#[test]
fn multi_turn_sessions_never_span_shards() {
    // 6 conversations of 3 turns over 2 slots, 2 shards: each session (one correlation id) sends
    // all its turns from one shard, and the shards together run the whole run's conversations.
    let load = [
        "--concurrency",
        "2",
        "--conversation-num",
        "6",
        "--conversation-turn-mean",
        "3",
        "--isl",
        "10",
        "--osl",
        "3",
        "--random-seed",
        "8",
    ];
    let (whole, shards) = whole_and_shards(2, 18, &load);
    assert_eq!(whole.len(), 18);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut union = Vec::new();
    for (i, records) in shards.iter().enumerate() {
        let mine: BTreeSet<String> = records.iter().map(|r| r.0.clone()).collect();
        assert!(seen.is_disjoint(&mine), "shard {i} shares a session");
        for id in &mine {
            let turns = records.iter().filter(|r| &r.0 == id).count();
            assert_eq!(turns, 3, "shard {i}: session {id} sent all its turns here");
        }
        seen.extend(mine);
        union.extend(records.iter().map(|r| r.1.clone()));
    }
    assert_eq!(seen.len(), 6);
    assert_eq!(sorted(union), sorted(whole.iter().map(|r| r.1.clone())));
}

#[test]
fn a_fixed_schedule_trace_is_divided_by_session_at_its_own_times() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("trace.jsonl");
    let stamps_ms = [0u64, 40, 45, 120, 200, 205, 260, 300, 390];
    let text: String = stamps_ms
        .iter()
        .map(|ts| format!("{{\"timestamp\": {ts}, \"input_length\": 16, \"output_length\": 2}}\n"))
        .collect();
    std::fs::write(&trace, text).unwrap();
    let file = trace.to_str().unwrap();
    let load = [
        "--input-file",
        file,
        "--custom-dataset-type",
        "mooncake_trace",
        "--fixed-schedule",
        "--random-seed",
        "2",
    ];
    let (whole, shards) = whole_and_shards(3, 9, &load);
    let key = |r: &(String, String, i128)| (r.2, r.1.clone());
    // The trace's times from the shared start, each with its own conversation: the whole run's.
    let union = sorted(shards.iter().flatten().map(key));
    assert_eq!(union, sorted(whole.iter().map(key)));
    assert_eq!(
        sorted(whole.iter().map(|r| r.2)),
        stamps_ms
            .iter()
            .map(|ms| i128::from(ms * 1_000_000))
            .collect::<Vec<_>>()
    );
    // Shard i replays the trace's sessions i, i+3, i+6.
    for (i, records) in shards.iter().enumerate() {
        let mut times = sorted(records.iter().map(|r| r.2));
        let want: Vec<i128> = stamps_ms
            .iter()
            .skip(i)
            .step_by(3)
            .map(|ms| i128::from(ms * 1_000_000))
            .collect();
        times.dedup();
        assert_eq!(times, want, "shard {i}");
    }
}

/// The request ids of a run's records.
fn ids(dir: &Path) -> BTreeSet<String> {
    sent(dir).into_iter().map(|s| s.request_id).collect()
}

/// A sweep with `--shard-count 2`: each shard runs both variations as a shard of each, the
/// merge merges them variation by variation into one sweep directory, and the sweep aggregate
/// is recomputed from the merged runs; two shards of different sweeps are refused.
#[test]
fn a_sharded_sweep_merges_variation_by_variation() {
    let server = recording_mock(4);
    let tmp = tempfile::tempdir().expect("tmp");
    let base = tmp.path();
    let at = start_in(2_000);
    let children: Vec<Child> = (0..2)
        .map(|i| {
            let index = i.to_string();
            let args = [
                "--concurrency",
                "2,4",
                "--shard-count",
                "2",
                "--shard-index",
                &index,
                "--start-at",
                &at,
            ];
            command(&server, &base.join(format!("shard-{i}")), 8, &args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary runs")
        })
        .collect();
    for c in children {
        succeeded(c.wait_with_output().expect("the shard ends"));
    }
    let merged = base.join("merged");
    let merge = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .arg("merge")
            .arg(base.join("shard-0"))
            .arg(base.join("shard-1"))
            .arg("-o")
            .arg(out)
            .output()
            .expect("merge runs")
    };
    succeeded(merge(&merged));
    let count = |dir: &Path| {
        read_json(&dir.join("profile_export_aiperf.json"))["request_count"]["avg"]
            .as_f64()
            .unwrap()
    };
    let sweep = read_json(&merged.join("sweep_aggregate/profile_export_aiperf_sweep.json"));
    let combos = sweep["per_combination_metrics"].as_array().expect("combos");
    assert_eq!(combos.len(), 2);
    let mut every_id = BTreeSet::new();
    for c in [2, 4] {
        let v = format!("concurrency_{c}");
        let (s0, s1, m) = (
            base.join("shard-0").join(&v),
            base.join("shard-1").join(&v),
            merged.join(&v),
        );
        assert_eq!(count(&s0) + count(&s1), 8.0, "{v}: the shards split 8");
        assert_eq!(count(&m), count(&s0) + count(&s1), "{v}");
        // Both shards of the variation started at one instant, so they are one run.
        assert_eq!(
            read_json(&s0.join("shard.json"))["run_id"],
            read_json(&s1.join("shard.json"))["run_id"],
            "{v}"
        );
        let (a, b) = (ids(&s0), ids(&s1));
        assert!(a.is_disjoint(&b), "{v}");
        assert_eq!(ids(&m), &a | &b, "{v}: the merged records are the union");
        every_id.extend(ids(&m));
        // The sweep aggregate's row of this variation is the merged run's own figures (one
        // trial: the mean over trials is that run's value).
        let row = combos
            .iter()
            .find(|r| r["parameters"]["concurrency"] == c)
            .expect("a row per variation");
        let run = read_json(&m.join("profile_export_aiperf.json"));
        for (tag, stat) in [
            ("request_count", "avg"),
            ("time_to_first_token", "p99"),
            ("request_latency", "p50"),
            ("output_token_throughput", "avg"),
        ] {
            let (agg, one) = (row["metrics"][tag][stat].as_f64(), run[tag][stat].as_f64());
            assert!(
                agg.is_some() && agg == one,
                "{v} {tag} {stat}: {agg:?} {one:?}"
            );
        }
    }
    // The mock's own log: every request it received is in exactly one merged variation.
    let truth: BTreeSet<String> = server
        .truth()
        .entries()
        .iter()
        .map(|e| e.request_id.expect("an X-Request-ID").to_string())
        .collect();
    assert_eq!(truth.len(), 16);
    assert_eq!(truth, every_id);

    // A shard of another sweep (other variations) is refused, nothing written.
    let path = base.join("shard-1/sweep_shard.json");
    let mut m = read_json(&path);
    m["variations"][1] = "concurrency_6".into();
    std::fs::write(&path, m.to_string()).expect("rewrite");
    let other = base.join("merged-2");
    let out = merge(&other);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("are different sweeps"), "{err}");
    assert!(!other.exists());
}
