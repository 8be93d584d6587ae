//! `--stats-interval`: AIPerf's realtime stats block. The accumulator's figures of AIPerf 0.13's
//! own records print AIPerf's blocks (tests/data/aiperf-realtime-block), and a run prints its
//! blocks on stderr with the flag and none without it.

use crate::common;

use common::read_jsonl;

use std::path::Path;
use std::time::Duration;

use ringperf_metrics::aggregate::realtime::render;
use ringperf_metrics::aggregate::{
    Accumulator, MetricConfig, MetricId, MetricValue, RecordMetrics,
};
use ringperf_mock::mock::{MockConfig, MockServer, OutputLen};

fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-realtime-block")
}

/// AIPerf's records folded into an accumulator one by one; at each block's count of records,
/// the accumulator's figures render as AIPerf's block (the summary row's rate since the last
/// block aside: its instants are known to the log's millisecond only).
#[test]
fn the_accumulators_figures_of_aiperfs_records_print_aiperfs_blocks() {
    let records = read_jsonl(&data().join("records.jsonl"));
    let blocks = common::read_json(&data().join("blocks.json"));
    let blocks = blocks.as_array().expect("blocks");
    let mut acc = Accumulator::new(MetricConfig::new(true, false));
    let mut scratch = Vec::new();
    let mut next = blocks.iter().peekable();
    let mut compared = 0;
    for (i, r) in records.iter().enumerate() {
        let ms = |tag: &str| r[tag].as_f64().expect(tag);
        let ns = |tag: &str| MetricValue::Int((ms(tag) * 1e6).round() as i64);
        let start = r["request_start_ns"].as_u64().expect("start");
        let end = r["request_end_ns"].as_u64().expect("end");
        let m = RecordMetrics {
            values: vec![
                (MetricId::TimeToFirstToken, ns("time_to_first_token")),
                (MetricId::InterTokenLatency, ns("inter_token_latency")),
                (
                    MetricId::RequestLatency,
                    MetricValue::Int((end - start) as i64),
                ),
                (
                    MetricId::OutputTokenThroughputPerUser,
                    MetricValue::Float(ms("output_token_throughput_per_user")),
                ),
                (
                    MetricId::InputSequenceLength,
                    MetricValue::Int(ms("input_sequence_length") as i64),
                ),
                (
                    MetricId::OutputSequenceLength,
                    MetricValue::Int(ms("output_sequence_length") as i64),
                ),
            ],
        };
        let mut f = ringperf_metrics::aggregate::testing::facts();
        f.request_start_wall_ns = start;
        f.request_end_wall_ns = end;
        acc.add(&f, &m);
        while let Some(b) = next.next_if(|b| b["figures_records"].as_u64() == Some(i as u64 + 1)) {
            let want: Vec<&str> = b["lines"]
                .as_array()
                .expect("lines")
                .iter()
                .filter_map(|l| l.as_str())
                .collect();
            let mut figures = acc.realtime(&mut scratch);
            // The count AIPerf printed (read apart from its figures, README.md).
            let done: u64 = want[1]
                .split("done=")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse().ok())
                .expect("done=");
            (figures.done, figures.ok) = (done, done);
            let elapsed = b["elapsed_s"].as_f64().expect("elapsed");
            let got = render(&figures, elapsed, None);
            let got: Vec<&str> = got.lines().collect();
            assert_eq!(got.len(), want.len());
            assert_eq!(got[0], want[0]);
            let without_rate = |s: &str| s.split_once("(avg").map(|(_, rest)| rest.to_owned());
            assert_eq!(without_rate(got[1]), without_rate(want[1]));
            assert_eq!(got[2..], want[2..]);
            compared += 1;
        }
    }
    assert_eq!(compared, 14);
}

fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(5),
        itl: Duration::from_millis(2),
        output_tokens: OutputLen::Fixed(16),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// The blocks of a run's stderr.
fn blocks(stderr: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for line in stderr.lines() {
        if line.starts_with("[realtime ") {
            out.push(vec![line]);
        } else if line.starts_with("  ")
            && let Some(b) = out.last_mut()
            && b.len() < 9
        {
            b.push(line);
        }
    }
    out
}

#[test]
fn a_run_with_the_flag_prints_growing_blocks_and_without_it_none() {
    let server = mock();
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = [
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--stats-interval",
        "0.2",
    ];
    let out = common::profile_binary(&server, dir.path(), 120, &extra, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let blocks = blocks(&stderr);
    assert!(blocks.len() >= 2, "{stderr}");
    let labels = [
        "rps=", "ttft ", "itl ", "e2e ", "intvty ", "isl ", "osl ", "tot ",
    ];
    let mut last = 0;
    for b in &blocks {
        assert_eq!(b.len(), 9, "{b:#?}");
        assert!(b[0].ends_with(" profiling]") && b[0].len() == "[realtime 00:00 profiling]".len());
        for (line, label) in b[1..].iter().zip(labels) {
            assert!(line.trim_start().starts_with(label), "{line}");
        }
        let done: u64 = b[1]
            .split("done=")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|s| s.parse().ok())
            .expect("done=");
        // Cumulative, and a block only when the count moved.
        assert!(done > last && done <= 120, "{b:#?}");
        assert!(
            b[1].ends_with(&format!("done={done} ok={done} err=0")),
            "{}",
            b[1]
        );
        let osl = b[7].split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(osl, "osl p50= 16 p75= 16 p90= 16 p99= 16 (tokens)");
        last = done;
    }
    assert_eq!(stderr.matches("[realtime ").count(), blocks.len());

    // The default: no block (as AIPerf without its realtime switch).
    let dir = tempfile::tempdir().expect("tempdir");
    let out = common::profile_binary(&server, dir.path(), 60, &extra[..2], &[]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("[realtime"));
    // AIPerf's switch turns it on at its interval variable.
    let env = [
        ("AIPERF_UI_REALTIME_METRICS_ENABLED", "true"),
        ("AIPERF_UI_REALTIME_METRICS_INTERVAL", "0.2"),
    ];
    let out = common::profile_binary(&server, dir.path(), 120, &extra[..2], &env);
    assert!(String::from_utf8_lossy(&out.stderr).contains("[realtime 00:0"));
}

#[test]
fn an_interval_out_of_aiperfs_range_is_refused() {
    for bad in ["1000.5", "-1"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "-m",
                "m",
                "--url",
                "http://127.0.0.1:9",
                "--stats-interval",
                bad,
            ])
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--stats-interval"), "{stderr}");
    }
}
