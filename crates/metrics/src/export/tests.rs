//! Export tests: file names, JSON key order, CSV bytes against a hand-written file, JSONL line
//! shape and the console table against AIPerf's captured console.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::console::{Row, render_table, row_label};
use super::json::local_iso;
use super::*;
use crate::aggregate::health;
use crate::aggregate::testing::facts;
use crate::aggregate::tests::three_records;
use crate::aggregate::{Accumulator, MetricConfig, Summary, record_metrics};
use ringperf_wire::record::{RecordFacts, RequestError};

const W: u64 = 1_700_000_000_000_000_000;

fn summarize(cfg: &MetricConfig, records: &[RecordFacts]) -> Summary {
    let mut acc = Accumulator::new(cfg.clone());
    for f in records {
        acc.add(f, &record_metrics(cfg, f));
    }
    acc.finish()
}

fn run_info() -> RunInfo {
    RunInfo {
        benchmark_id: "0123456789abcdef0123456789abcdef".into(),
        aiperf_version: "0.13.0".into(),
        cli_command: "ringperf profile --model 'm' --streaming".into(),
        input_config: serde_json::json!({"endpoint": {"type": "chat"}}),
        start_wall_ns: W,
        end_wall_ns: W + 2_000_000_000,
        was_cancelled: false,
        is_complete: None,
        incomplete_reason: None,
        metrics_title: "LLM Metrics".into(),
        io_driver: "io_uring".into(),
        workers: 2,
        ring_stalls: 3,
        random_seed: Some(42),
        trial: None,
        monotonic_origin_ns: 5,
        wall_origin_ns: 7,
        realtime_offset: Some(ringperf_wire::clock::RealtimeOffset {
            offset_ns: 11,
            uncertainty_ns: 3,
        }),
        timestamps: "kernel",
        shard: None,
        merge: None,
        threads: Vec::new(),
        tokenizer_loaded: None,
        client_health: None,
        branch_stats: None,
        scenario: None,
        phases: Vec::new(),
    }
}

#[test]
fn python_float_str() {
    let cases = [
        (10.0, "10.0"),
        (0.5, "0.5"),
        (2.5, "2.5"),
        (123.456, "123.456"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e-5, "1.5e-05"),
        (1e16, "1e+16"),
        (1e20, "1e+20"),
        (123456789.0, "123456789.0"),
        (f64::INFINITY, "inf"),
    ];
    for (v, want) in cases {
        assert_eq!(py_float_str(v), want, "{v}");
    }
}

#[test]
fn artifact_dir_names() {
    let m = vec!["Qwen/Qwen3-0.6B".to_string()];
    let dir = |s: Stimulus| default_artifact_dir(&m, "chat", &s);
    assert_eq!(
        dir(Stimulus::Concurrency(10)),
        Path::new("artifacts/Qwen_Qwen3-0.6B-openai-chat-concurrency10")
    );
    assert_eq!(
        dir(Stimulus::Rate {
            rate: 10.0,
            concurrency: None
        }),
        Path::new("artifacts/Qwen_Qwen3-0.6B-openai-chat-request_rate10.0")
    );
    assert_eq!(
        dir(Stimulus::Rate {
            rate: 0.5,
            concurrency: Some(4)
        }),
        Path::new("artifacts/Qwen_Qwen3-0.6B-openai-chat-concurrency4-request_rate0.5")
    );
    assert_eq!(
        dir(Stimulus::UserCentric { users: 8, qps: 2.0 }),
        Path::new("artifacts/Qwen_Qwen3-0.6B-openai-chat-user_centric-users8-qps2.0")
    );
    let two = vec!["a/b".to_string(), "c".to_string()];
    assert_eq!(
        default_artifact_dir(&two, "completions", &Stimulus::FixedSchedule),
        Path::new("artifacts/a_b_multi-openai-completions-fixed_schedule")
    );
}

#[test]
fn export_prefix_renames_files() {
    let d = ExportNames::new(None);
    assert_eq!(d.json, "profile_export_aiperf.json");
    assert_eq!(d.jsonl, "profile_export.jsonl");
    let p = ExportNames::new(Some("foo"));
    assert_eq!(
        (p.json.as_str(), p.csv.as_str(), p.jsonl.as_str()),
        ("foo.json", "foo.csv", "foo.jsonl")
    );
    assert_eq!(p.raw_jsonl, "foo_raw.jsonl");
    assert_eq!(p.timeslices_csv, "foo_timeslices.csv");
    assert_eq!(p.server_metrics_parquet, "foo_server_metrics.parquet");
    assert_eq!(p.console_txt, "foo_console.txt");
    assert_eq!(d.console_txt, "profile_export_console.txt");
    // AIPerf 0.13 strips the first export ending that matches, its own names included.
    for given in ["foo.json", "foo.jsonl", "foo_raw.jsonl", "foo_console.txt"] {
        let n = ExportNames::new(Some(given));
        assert_eq!(
            (n.csv.as_str(), n.console_txt.as_str()),
            ("foo.csv", "foo_console.txt")
        );
    }
    assert_eq!(
        ExportNames::new(Some("foo_server_metrics.parquet")).server_metrics_json,
        "foo_server_metrics.json"
    );
}

/// The summary of [`three_records`] in a streaming run, and its summary JSON.
fn streaming_summary() -> (Summary, Value) {
    let s = summarize(&MetricConfig::new(true, false), &three_records());
    let v = summary_json(&s, None, &run_info());
    (s, v)
}

#[test]
fn summary_json_key_order() {
    let (s, v) = streaming_summary();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let want = [
        "schema_version",
        "aiperf_version",
        "benchmark_id",
        "request_throughput",
        "request_latency",
        "request_count",
        "time_to_first_token",
        "time_to_second_token",
        "inter_token_latency",
        "output_token_throughput",
        "output_token_throughput_per_user",
        "output_sequence_length",
        "input_sequence_length",
        "output_token_count",
        "inter_chunk_latency",
        "total_output_tokens",
        "benchmark_duration",
        "total_isl",
        "total_osl",
        "error_request_count",
        "error_isl",
        "total_error_isl",
        "input_config",
        "run_info",
        "was_cancelled",
        "error_summary",
        "start_time",
        "end_time",
        "time_to_first_output_token",
        "decode_duration",
        "e2e_output_token_throughput",
        "prefill_throughput_per_user",
        "adj_time_to_first_token",
        "adj_request_latency",
        "adj_decode_duration",
        "adj_inter_token_latency",
        // Over the error records (0 here: the one failure was no context overflow).
        "context_overflow_count",
        "input_token_throughput",
        "completed_request_count",
        "request_error_rate",
        "total_token_throughput",
        // Sweep-line and credit-based latencies, in the order AIPerf 0.13 writes them.
        "effective_concurrency",
        "effective_decode_throughput",
        "effective_prefill_throughput",
        "effective_decode_concurrency",
        "effective_prefill_concurrency",
        "effective_total_throughput",
        "effective_decode_throughput_per_user",
        "effective_prefill_throughput_per_user",
        "tokens_in_flight",
        "active_decode_throughput",
        "active_prefill_throughput",
        "active_decode_throughput_per_user",
        "active_prefill_throughput_per_user",
        "active_total_throughput",
        "credit_to_start_latency",
        "effective_latency",
        "ringperf",
    ];
    assert_eq!(keys, want);

    // Hidden metrics never appear.
    assert!(v.get("min_request_timestamp").is_none() && v.get("requested_osl").is_none());
    let text = summary_json_string(&s, None, &run_info());
    assert!(
        text.starts_with("{\n  \"schema_version\": \"1.4\",\n  \"aiperf_version\": \"0.13.0\",")
    );
}

#[test]
fn summary_json_metric_and_run_shapes() {
    let (_, v) = streaming_summary();
    // request_latency: 15_000 and 30_000 ns → ms.
    let rl = &v["request_latency"];
    let rl_keys: Vec<&str> = rl.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        rl_keys,
        [
            "unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min",
            "max", "std", "count", "sum"
        ]
    );
    assert_eq!(rl["unit"], "ms");
    assert_eq!(rl["avg"], 0.0225);
    assert_eq!(rl["min"], 0.015);
    assert_eq!(rl["max"], 0.03);
    assert_eq!(rl["count"], 2);
    assert!(rl["count"].is_u64());
    // Scalars: unit + avg only.
    assert_eq!(
        v["request_count"],
        serde_json::json!({"unit": "requests", "avg": 2.0})
    );
    assert_eq!(
        v["benchmark_duration"],
        serde_json::json!({"unit": "sec", "avg": 3.09e-5})
    );
    // Error-adjusted: inf → null, no std.
    let adj = v["adj_request_latency"].as_object().unwrap();
    assert_eq!(adj["avg"], Value::Null);
    assert_eq!(adj["max"], Value::Null);
    assert_eq!(adj["min"], 0.015);
    assert!(!adj.contains_key("std"));
    assert_eq!(
        v["error_summary"],
        serde_json::json!([{"error_details": {"code": 500, "type": "Internal Server Error", "message": "boom"}, "count": 1}])
    );
    assert_eq!(
        v["run_info"],
        serde_json::json!({"benchmark_id": "0123456789abcdef0123456789abcdef", "random_seed": 42, "trial": 0, "cli_command": "ringperf profile --model 'm' --streaming"})
    );
    assert_eq!(v["ringperf"]["dispatch_lag_ns"]["p50"], 100.0);
    assert_eq!(v["ringperf"]["dispatch_lag_ns"]["max"], 500.0);
    assert_eq!(v["ringperf"]["io_driver"], "io_uring");
    assert_eq!(v["ringperf"]["ring_stalls"], 3);
    assert_eq!(v["ringperf"]["workers"], 2);
    // Without threads or a verdict (a merged run) neither key is written.
    assert!(v["ringperf"].get("threads").is_none());
    assert!(v["ringperf"].get("client_health").is_none());
}

#[test]
fn summary_json_threads_and_client_health() {
    let (s, _) = streaming_summary();
    let timed = RunInfo {
        threads: vec![
            crate::export::ThreadCpu {
                name: "main".into(),
                cpu_ns: 9,
                busy_fraction: None,
                naps: None,
                warm_pool: None,
                idle_wakes: None,
            },
            crate::export::ThreadCpu {
                name: "worker_0".into(),
                cpu_ns: 4,
                busy_fraction: Some(0.5),
                naps: None,
                warm_pool: Some(crate::export::WarmPool {
                    opened: 12,
                    failed: 1,
                }),
                idle_wakes: None,
            },
        ],
        client_health: Some(health::judge(
            health::Observed {
                dispatch_lag: s.dispatch_lag.clone(),
                busiest_worker: Some(("worker_0".into(), 0.5)),
                ring_stalls: 0,
                receive_lag: None,
                descriptor_waits: None,
                connection_waits: None,
                shares_cores_with_mock: false,
                run_queue_wait_ns: Some(77),
                host: Some(health::HostLoad {
                    other_cpu_ns: 30,
                    other_cpu_on_worker_cores_ns: None,
                    steal_ns: 0,
                    span_ns: 1_000,
                    cores: 2,
                    busiest: vec![health::OtherProcess {
                        pid: 7,
                        name: "vllm".into(),
                        cpu_ns: 20,
                    }],
                }),
            },
            health::Limits::new(Some(1_000)),
        )),
        ..run_info()
    };
    let t = summary_json(&s, None, &timed);
    assert_eq!(
        t["ringperf"]["threads"],
        serde_json::json!([{"name": "main", "cpu_ns": 9},
                           {"name": "worker_0", "cpu_ns": 4, "busy_fraction": 0.5,
                            "warm_pool": {"opened": 12, "failed": 1}}])
    );
    let p99 = s.dispatch_lag.as_ref().unwrap().p99_ns;
    assert_eq!(
        t["ringperf"]["client_health"],
        serde_json::json!({
            "verdict": "kept_up", "kept_up": true, "enforced": true, "reasons": [],
            "shares_cores_with_mock": false, "shared_core_lag": [],
            "limits": {"lag_p99_ns": 1000, "worker_busy_fraction": 0.95, "ring_stalls": 0},
            "observed": {"dispatch_lag_p99_ns": p99, "dispatch_lag_max_ns": 500.0,
                         "receive_lag_p99_ns": null, "busiest_worker": "worker_0",
                         "busiest_worker_busy_fraction": 0.5, "ring_stalls": 0,
                         "run_queue_wait_ns": 77,
                         "host": {"other_cpu_ns": 30, "other_cpu_on_worker_cores_ns": null,
                                  "steal_ns": 0, "span_ns": 1000, "cores": 2,
                                  "busiest_processes": [{"pid": 7, "name": "vllm",
                                                         "cpu_ns": 20}]}}
        })
    );
}

#[test]
fn summary_json_shard_block() {
    let (s, v) = streaming_summary();
    // A whole run has no shard block; a shard's names its place in the split run.
    assert!(v["ringperf"].get("shard").is_none());
    let shard = crate::export::ShardInfo {
        index: 1,
        count: 3,
        run_id: "00aa11bb22cc".into(),
        start_at_ns: W,
        start_lag_ns: -250,
        server_metrics: false,
    };
    let shard_run = RunInfo {
        shard: Some(shard),
        ..run_info()
    };
    assert_eq!(
        summary_json(&s, None, &shard_run)["ringperf"]["shard"],
        serde_json::json!({"index": 1, "count": 3, "run_id": "00aa11bb22cc", "start_at_ns": W, "start_lag_ns": -250, "server_metrics": false})
    );
}

#[test]
fn summary_json_merged_shards() {
    let (s, v) = streaming_summary();
    // A merged run lists every shard, a missing one with nulls where nothing is known.
    assert!(v["ringperf"].get("shards").is_none());
    let healthy = crate::export::ShardHealth {
        index: 0,
        dir: Some(PathBuf::from("/a/shard-0")),
        status: crate::export::ShardStatus::Ok,
        request_count: 9,
        error_request_count: 1,
        dispatch_lag: Some(crate::aggregate::LagSummary {
            p50_ns: 10.0,
            p99_ns: 20.5,
            max_ns: 30.0,
            count: 10,
        }),
        ring_stalls: Some(0),
        workers: Some(2),
        io_driver: Some("io_uring".into()),
        start_lag_ns: Some(-5),
        server_metrics: true,
        torn_lines: 0,
        client_health: Some(crate::aggregate::health::ShardVerdict {
            kept_up: true,
            enforced: false,
            reasons: Vec::new(),
        }),
    };
    let missing = crate::export::ShardHealth::missing(1);
    let merged = RunInfo {
        merge: Some(crate::export::MergeInfo {
            shards: vec![healthy, missing],
        }),
        ..run_info()
    };
    assert_eq!(
        summary_json(&s, None, &merged)["ringperf"]["shards"],
        serde_json::json!([
            {"index": 0, "dir": "/a/shard-0", "status": "ok", "request_count": 9,
             "error_request_count": 1,
             "dispatch_lag_ns": {"p50": 10.0, "p99": 20.5, "max": 30.0, "count": 10},
             "ring_stalls": 0, "workers": 2, "io_driver": "io_uring", "start_lag_ns": -5,
             "server_metrics": true, "torn_lines": 0},
            {"index": 1, "dir": null, "status": "missing", "request_count": 0,
             "error_request_count": 0, "dispatch_lag_ns": null, "ring_stalls": null,
             "workers": null, "io_driver": null, "start_lag_ns": null,
             "server_metrics": false, "torn_lines": 0}
        ])
    );
    // The merged verdict: one shard kept up, the other is missing, so the run is not judged.
    assert_eq!(
        summary_json(&s, None, &merged)["ringperf"]["client_health"],
        serde_json::json!({
            "kept_up": null, "enforced": false, "reasons": [], "unjudged_shards": [1],
            "shards": [
                {"index": 0, "kept_up": true, "enforced": false, "reasons": []},
                {"index": 1, "kept_up": null, "enforced": null, "reasons": []}
            ]
        })
    );
    assert_eq!(
        crate::export::ShardStatus::Failed("no summary".into()).to_string(),
        "failed: no summary"
    );
}

/// A run of a repeated profile: AIPerf's `run_info` keys, in its order (its run_0002 file).
#[test]
fn run_info_of_a_trial() {
    let s = summarize(&MetricConfig::new(true, false), &three_records());
    let run = RunInfo {
        trial: Some(crate::export::Trial {
            index: 1,
            label: "run_0002".into(),
            sweep_id: "1ee8c1bd-a240-4bba-a53d-2c25ed37698a".into(),
            variation: None,
        }),
        ..run_info()
    };
    let v = summary_json(&s, None, &run);
    let info = v["run_info"].as_object().unwrap();
    let keys: Vec<&str> = info.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "benchmark_id",
            "sweep_id",
            "random_seed",
            "trial",
            "run_label",
            "variation_label",
            "variation_index",
            "variation_values",
            "cli_command"
        ]
    );
    assert_eq!(info["trial"], 1);
    assert_eq!(info["run_label"], "run_0002");
    assert_eq!(info["variation_label"], "base");
    assert_eq!(info["variation_values"], serde_json::json!({}));
}

#[test]
fn warmup_metrics_block() {
    let s = summarize(&MetricConfig::new(true, false), &three_records());
    let w = summarize(&MetricConfig::new(true, false), &three_records()[..1]);
    let v = summary_json(&s, Some(&w), &run_info());
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let at = keys.iter().position(|k| *k == "warmup_metrics").unwrap();
    assert_eq!(keys[at - 1], "end_time");
    assert_eq!(v["warmup_metrics"]["request_count"]["avg"], 1.0);
}

#[test]
fn skipped_context_overflows_are_added_to_the_count_and_written_apart() {
    let cfg = MetricConfig::new(true, false);
    let skip = |records: &[RecordFacts], n: usize| {
        let mut acc = Accumulator::new(cfg.clone());
        for f in records {
            acc.add(f, &record_metrics(&cfg, f));
        }
        (0..n).for_each(|_| acc.skip_context_overflow());
        acc.finish()
    };
    // None skipped: nothing written apart, the failed records' count as it was (0 of 1).
    let v = summary_json(&skip(&three_records(), 0), None, &run_info());
    assert_eq!(v["context_overflow_count"]["avg"], 0.0);
    assert!(v.get("skipped_context_overflow_count").is_none());
    // Two skipped beside one failed record: added to its count; the warmup's, with no failed
    // record, is written with its unit and value only, and not apart.
    let s = skip(&three_records(), 2);
    let w = skip(&three_records()[..1], 1);
    let v = summary_json(&s, Some(&w), &run_info());
    assert_eq!(v["context_overflow_count"]["avg"], 2.0);
    assert_eq!(v["request_count"]["avg"], 2.0);
    assert_eq!(v["error_request_count"]["avg"], 1.0);
    assert_eq!(
        v["skipped_context_overflow_count"],
        serde_json::json!({"unit": "requests", "avg": 2.0})
    );
    assert_eq!(
        v["warmup_metrics"]["context_overflow_count"],
        serde_json::json!({"unit": "requests", "avg": 1.0})
    );
    assert!(
        v["warmup_metrics"]
            .get("skipped_context_overflow_count")
            .is_none()
    );
}

#[test]
fn local_iso_matches_python_isoformat() {
    // Python omits the fraction when the microseconds are zero.
    let t = local_iso(W);
    assert_eq!(t.len(), "2023-11-14T22:13:20".len(), "{t}");
    let t = local_iso(W + 957_302_400);
    assert!(t.ends_with(".957302"), "{t}");
}

/// The tiny run of `testdata/tiny_run.csv`: two valid non-streaming records (10 ms with ISL 100 /
/// OSL 20, 30 ms with ISL 300 / OSL 40, starting 10 ms apart) and one error (ISL 50).
fn tiny_run() -> Vec<RecordFacts> {
    let base = RecordFacts {
        intended_ns: 0,
        start_ns: 0,
        reasoning_tokens: None,
        first_output_stamp_ns: None,
        ..facts()
    };
    vec![
        RecordFacts {
            content_stamps_ns: vec![10_000_000],
            input_tokens: Some(100),
            output_tokens: Some(20),
            request_start_wall_ns: W,
            request_end_wall_ns: W + 10_000_000,
            ..base.clone()
        },
        RecordFacts {
            content_stamps_ns: vec![30_000_000],
            input_tokens: Some(300),
            output_tokens: Some(40),
            request_start_wall_ns: W + 10_000_000,
            request_end_wall_ns: W + 40_000_000,
            ..base.clone()
        },
        // Sent at W + 100 ns (the base's start), failed 5 ms later.
        RecordFacts {
            content_stamps_ns: vec![],
            input_tokens: Some(50),
            output_tokens: None,
            error: Some(Box::new(RequestError::new(
                Some(503),
                "Service Unavailable",
                "busy",
            ))),
            request_end_wall_ns: W + 5_000_100,
            ..base
        },
    ]
}

#[test]
fn csv_bytes_match_hand_written_file() {
    let s = summarize(&MetricConfig::new(false, false), &tiny_run());
    let want = include_str!("testdata/tiny_run.csv");
    let got = summary_csv(&s);
    for (i, (g, w)) in got.split("\r\n").zip(want.split("\r\n")).enumerate() {
        assert_eq!(g, w, "line {i}");
    }
    assert_eq!(got, want);
}

#[test]
fn csv_quotes_like_python() {
    // A header with a comma or quote would be quoted; ours are plain, so check the helper path
    // through a label that needs it.
    assert_eq!(csv::fmt2(f64::INFINITY), "inf");
    assert_eq!(csv::fmt2(1.005), "1.00"); // 1.005 is 1.00499… in binary, as in Python
    assert_eq!(csv::fmt2(-0.5), "-0.50");
}

/// A writer that counts flushes.
#[derive(Default)]
struct Counting {
    data: Vec<u8>,
    flushes: usize,
}

impl Write for Counting {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.data.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        Ok(())
    }
}

#[test]
fn jsonl_line_shape() {
    let cfg = MetricConfig::new(true, false);
    let recs = three_records();
    let mut w = JsonlWriter::new(Counting::default(), 0);
    for f in &recs {
        w.write(f, &record_metrics(&cfg, f)).unwrap();
    }
    // Neither metrics nor error: no line.
    let empty = RecordFacts {
        input_tokens: None,
        ..recs[2].clone()
    };
    let empty = RecordFacts {
        error: None,
        content_stamps_ns: vec![],
        first_output_stamp_ns: None,
        output_tokens: None,
        ..empty
    };
    w.write(&empty, &record_metrics(&cfg, &empty)).unwrap();
    assert_eq!(w.lines(), 3);
    w.maybe_flush(999_999_999).unwrap();
    let out = w.close().unwrap();
    assert_eq!(out.flushes, 1, "only close flushed");
    let text = String::from_utf8(out.data).unwrap();
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    assert_eq!(lines.len(), 3);
    let first: Value = serde_json::from_str(lines[0]).unwrap();
    let top: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(top, ["metadata", "metrics"]);
    let md: Vec<&str> = first["metadata"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        md,
        [
            "session_num",
            "x_request_id",
            "x_correlation_id",
            "conversation_id",
            "turn_index",
            "credit_issued_ns",
            "request_start_ns",
            "request_end_ns",
            "worker_id",
            "record_processor_id",
            "benchmark_phase",
            "phase_index",
            "profiling_index",
            "phase_name",
            "phase_kind",
            "was_cancelled",
            "context_overflow_skip",
            "agent_depth",
            "root_correlation_id"
        ]
    );
    assert_eq!(
        first["metadata"]["x_request_id"],
        "00000000-0000-0000-0000-000000000001"
    );
    assert_eq!(first["metadata"]["request_start_ns"], W + 100);
    assert_eq!(first["metadata"]["benchmark_phase"], "profiling");
    let m = &first["metrics"];
    assert_eq!(
        m["time_to_first_token"],
        serde_json::json!({"value": 0.01, "unit": "ms"})
    );
    assert!(m["output_sequence_length"]["value"].is_u64());
    assert_eq!(m["output_sequence_length"]["value"], 5);
    assert_eq!(
        m["inter_chunk_latency"]["value"],
        serde_json::json!([0.002, 0.003])
    );
    assert_eq!(m["inter_token_latency"]["value"], 0.00125);
    assert!(m.get("requested_osl").is_none() && m.get("request_count").is_none());
    let err: Value = serde_json::from_str(lines[2]).unwrap();
    assert_eq!(
        err["error"],
        serde_json::json!({"code": 500, "type": "Internal Server Error", "message": "boom"})
    );
    assert_eq!(
        err["metrics"],
        serde_json::json!({"error_isl": {"value": 50, "unit": "tokens"}})
    );
}

#[test]
fn jsonl_flushes_after_an_interval() {
    let mut w = JsonlWriter::new(Counting::default(), 5);
    w.maybe_flush(500_000_000).unwrap();
    w.maybe_flush(1_000_000_005).unwrap();
    w.maybe_flush(1_500_000_000).unwrap();
    w.maybe_flush(2_000_000_005).unwrap();
    assert_eq!(w.close().unwrap().flushes, 3);
}

#[test]
fn jsonl_file_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile_export.jsonl");
    let cfg = MetricConfig::new(true, false);
    let f = facts();
    let mut w = JsonlWriter::create(&path, 0).unwrap();
    w.write(&f, &record_metrics(&cfg, &f)).unwrap();
    w.close().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with("}\n") && text.lines().count() == 1);
}

/// The table of `fixtures/baseline-chat-bare/profile_export_console.txt`, rebuilt from its
/// printed values, renders byte for byte.
#[test]
fn console_table_matches_aiperf_capture() {
    // Copy of fixtures/baseline-chat-bare/profile_export_console.txt (AIPerf 0.8.0 capture).
    let fixture = include_str!("testdata/aiperf_0.8.0_console_baseline.txt");
    let s = |v: f64| Some(v);
    let scalar = |v: f64| [Some(v), None, None, None, None, None, None];
    let rows = vec![
        Row {
            label: row_label("Request Latency", "ms"),
            cells: [
                s(1.52),
                s(0.38),
                s(15.15),
                s(15.14),
                s(0.91),
                s(0.67),
                s(3.24),
            ],
        },
        Row {
            label: row_label("E2E Output Token Throughput", "tokens/sec/user"),
            cells: [
                s(818779.82),
                s(29587.86),
                s(1550947.62),
                s(1538016.47),
                s(1225887.53),
                s(836612.99),
                s(317976.82),
            ],
        },
        Row {
            label: row_label("Output Sequence Length", "tokens"),
            cells: [
                s(551.2),
                s(440.0),
                s(653.0),
                s(649.22),
                s(634.3),
                s(562.5),
                s(62.84),
            ],
        },
        Row {
            label: row_label("Input Sequence Length", "tokens"),
            cells: [
                s(550.0),
                s(550.0),
                s(550.0),
                s(550.0),
                s(550.0),
                s(550.0),
                s(0.0),
            ],
        },
        Row {
            label: row_label("Output Token Throughput", "tokens/sec"),
            cells: scalar(1022443.06),
        },
        Row {
            label: row_label("Request Throughput", "requests/sec"),
            cells: scalar(1854.93),
        },
        Row {
            label: row_label("Request Count", "requests"),
            cells: scalar(64.0),
        },
    ];
    let got = render_table("NVIDIA AIPerf | LLM Metrics", &rows);
    let want: Vec<&str> = fixture.lines().skip(2).take(12).collect();
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(got, want);
}

#[test]
fn long_headers_wrap_the_unit() {
    let label = row_label("Output Token Throughput Per User", "tokens/sec/user");
    assert_eq!(label, "Output Token Throughput Per User\n(tokens/sec/user)");
    assert_eq!(
        row_label("Time to First Token", "ms"),
        "Time to First Token (ms)"
    );
    let t = render_table(
        "T",
        &[Row {
            label,
            cells: [Some(1.0); 7],
        }],
    );
    let lines: Vec<&str> = t.lines().collect();
    // title, top, header, separator, two body lines, bottom.
    assert_eq!(lines.len(), 7);
    assert!(
        lines[4].starts_with("│ Output Token Throughput Per User │ 1.00 │"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].starts_with("│                (tokens/sec/user) │      │"),
        "{}",
        lines[5]
    );
}

#[test]
fn thousands_format() {
    assert_eq!(console::fmt_thousands(1022443.0554), "1,022,443.06");
    assert_eq!(console::fmt_thousands(999.999), "1,000.00");
    assert_eq!(console::fmt_thousands(-1234.5), "-1,234.50");
    assert_eq!(console::fmt_thousands(0.0), "0.00");
}

#[test]
fn console_render_of_a_run() {
    let s = summarize(&MetricConfig::new(true, false), &three_records());
    let mut run = run_info();
    run.was_cancelled = true;
    let text = render_console(&s, &run);
    assert!(text.contains("ringperf | LLM Metrics\n"));
    let pos = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("no {needle}\n{text}"))
    };
    // display_order: TTFT (100) < request latency (300) < ITL (400) < request count (1100).
    assert!(pos("Time to First Token (ms)") < pos("Request Latency (ms)"));
    assert!(pos("Request Latency (ms)") < pos("Inter Token Latency (ms)"));
    assert!(pos("Inter Token Latency (ms)") < pos("Request Count (requests)"));
    for absent in [
        "Inter Chunk",
        "Error Input",
        "error-adjusted",
        "Benchmark Duration (sec)",
        // The footer is not part of the console export (AIPerf's console file has none).
        "CLI Command:",
        "Benchmark Duration:",
        "cancelled early",
    ] {
        assert!(!text.contains(absent), "{absent}");
    }
}

/// The footer: the command, the duration, the dispatch lag, one line per export in the order
/// given, and the cancellation note last.
#[test]
fn console_footer_of_a_run() {
    let s = summarize(&MetricConfig::new(true, false), &three_records());
    let mut run = run_info();
    run.was_cancelled = true;
    let exports = [
        (
            "CSV Export",
            PathBuf::from("artifacts/x/profile_export_aiperf.csv"),
        ),
        (
            "JSON Export",
            PathBuf::from("artifacts/x/profile_export_aiperf.json"),
        ),
    ];
    run.client_health = Some(health::judge(
        health::Observed {
            dispatch_lag: s.dispatch_lag.clone(),
            ring_stalls: 3,
            ..Default::default()
        },
        health::Limits::new(None),
    ));
    let text = render_footer(&s, &run, &exports);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "CLI Command: ringperf profile --model 'm' --streaming",
            "Benchmark Duration: 0.00 sec (cancelled early)",
            // ringperf's own lines (no AIPerf equivalent), before the exports.
            "Dispatch Lag: p50 0.000 ms, p99 0.000 ms, max 0.001 ms (2 workers, io_uring, 3 ring \
             stalls)",
            "Client health: FELL BEHIND — 3 ring stalls > 0 (workers waited for the aggregator)",
            "CSV Export: artifacts/x/profile_export_aiperf.csv",
            "JSON Export: artifacts/x/profile_export_aiperf.json",
            "The profile run was cancelled early. Results shown may be incomplete or inaccurate.",
        ],
        "{text}"
    );
}

#[test]
fn summary_files_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let s = summarize(&MetricConfig::new(false, false), &tiny_run());
    let names = ExportNames::new(Some("foo"));
    let written = write_summary_files(dir.path(), &names, &s, None, &run_info()).unwrap();
    // AIPerf's footer order: CSV before JSON.
    assert_eq!(written[0], ("CSV Export", dir.path().join("foo.csv")));
    assert_eq!(written[1], ("JSON Export", dir.path().join("foo.json")));
    let csv = std::fs::read_to_string(dir.path().join("foo.csv")).unwrap();
    // The metric tables, then AIPerf's GPU telemetry table: two empty rows and its header (no
    // GPU rows: no telemetry is collected).
    let expected = format!(
        "{}\r\n\r\nEndpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,avg,min,max,sum,p1,p5,\
         p10,p25,p50,p75,p90,p95,p99,std\r\n",
        include_str!("testdata/tiny_run.csv")
    );
    assert_eq!(csv, expected);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("foo.json")).unwrap())
            .unwrap();
    assert_eq!(json["schema_version"], "1.4");
    assert_eq!(json["request_count"]["avg"], 2.0);
}

/// `prompt_tokens_details.cached_tokens: 0` from the wire reaches the per-record line, the
/// summary JSON and the CSV as a 0 (AIPerf reports it; ringperf used to drop it).
#[test]
fn zero_cached_tokens_reach_the_exports() {
    use ringperf_wire::endpoint::{EndpointKind, ParsedResponse, parse_record};
    use ringperf_wire::record::testing::{json_record, sse_record};
    let nonstream = json_record(
        br#"{"object":"chat.completion","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":0}}}"#,
    );
    let stream = sse_record(
        concat!(
            r#"data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"hi"}}]}"#,
            "\n\n",
            r#"data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":0}}}"#,
            "\n\ndata: [DONE]\n\n",
        )
        .as_bytes(),
    );
    for (streaming, rec) in [(false, nonstream), (true, stream)] {
        let mut parsed = ParsedResponse::default();
        parse_record(EndpointKind::Chat, &rec, &mut parsed);
        let f = RecordFacts {
            usage: parsed.usage.clone(),
            ..facts()
        };
        let cfg = MetricConfig::new(streaming, false);
        let m = record_metrics(&cfg, &f);
        let line = jsonl::record_line(&f, &m).unwrap();
        assert_eq!(
            line["metrics"]["usage_prompt_cache_read_tokens"],
            serde_json::json!({"value": 0, "unit": "tokens"}),
            "{line}"
        );
        let s = summarize(&cfg, &[f]);
        let v = summary_json(&s, None, &run_info());
        assert_eq!(v["usage_prompt_cache_read_tokens"]["avg"], 0.0);
        assert_eq!(v["total_usage_prompt_cache_read_tokens"]["avg"], 0.0);
        assert_eq!(v["overall_usage_prompt_cache_read_pct"]["avg"], 0.0);
        let csv = csv::summary_csv(&s);
        assert!(
            csv.contains("Total Usage Prompt Cache Read Tokens (tokens),0.00"),
            "{csv}"
        );
    }
}
