//! End-to-end runs of `ringperf profile` against the in-process mock server on 127.0.0.1:0,
//! on both monoio drivers, checked against the mock's truth log (when it wrote each byte).

use crate::common;
use common::{config, read_json, read_jsonl};

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ringperf_mock::mock::{Driver, MockConfig, MockServer, OutputLen, PromptTokenizer, TruthEntry};
use serde_json::Value;

fn mock(ttft_ms: u64, itl_ms: u64, tokens: u64, per_event: usize, driver: Driver) -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        output_tokens: OutputLen::Fixed(tokens),
        tokens_per_event: per_event,
        truth_log: true,
        io_driver: driver,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

fn metric(rec: &Value, tag: &str) -> Option<f64> {
    rec["metrics"][tag]["value"].as_f64()
}

/// Converts a record's wall-clock `request_start_ns` to raw CLOCK_MONOTONIC ns using the
/// clock anchors the run exported.
fn raw_start(rec: &Value, summary: &Value) -> u64 {
    let wall = rec["metadata"]["request_start_ns"]
        .as_u64()
        .expect("request_start_ns");
    let clock = &summary["ringperf"]["clock"];
    let wall0 = clock["wall_origin_ns"].as_u64().expect("wall origin");
    let mono0 = clock["monotonic_origin_ns"]
        .as_u64()
        .expect("monotonic origin");
    wall - wall0 + mono0
}

/// `o200k_base` token counts produced outside ringperf, by OpenAI's Python `tiktoken` 0.14.0:
/// `len(tiktoken.get_encoding("o200k_base").encode_ordinary(text))`. Python tiktoken has its own
/// pre-tokenizer pattern and BPE, and loads the vocabulary only if its SHA-256 matches the one
/// OpenAI publishes (446a9538...). Most entries are the kind of text ringperf's prompts are made
/// of (lines of `assets/shakespeare.txt` joined by one space, possibly starting mid-word); the
/// last few cover spaces, newlines, JSON escapes and non-ASCII. To regenerate a row:
/// `python3 -c 'import tiktoken,sys; print(len(tiktoken.get_encoding("o200k_base")
/// .encode_ordinary(sys.argv[1])))' TEXT`.
const O200K_BY_PYTHON_TIKTOKEN: &[(&str, usize)] = &[
    ("", 0),
    ("thee", 2),
    (" thee", 1),
    (
        "THE SONNETS 1 From fairest creatures we desire increase",
        13,
    ),
    ("That thereby beautys rose might never die", 8),
    ("Feedst thy lights flame with selfsubstantial fuel", 10),
    ("And tender churl makst waste in niggarding", 11),
    ("2 When forty winters shall besiege thy brow", 9),
    ("bstantial fuel Making a famine where abundance lies", 9),
    (
        "Were an alleating shame and thriftless praise How much more praise deservd thy beautys use",
        20,
    ),
    ("hello world", 2),
    ("  two  spaces", 4),
    ("line\nbreak", 3),
    ("say \"hi\" \\ there", 6),
    ("naïve café", 4),
];

/// The test's own prompt count: tiktoken-rs's `o200k_base` called directly on the text, with
/// none of ringperf's code in between (not its `Tokenizer`, not its payload-text extraction, not
/// the mock). It is the same tokenizer library ringperf wraps, so it is trusted only because
/// [`reference_counter_agrees_with_python_tiktoken`] pins it to Python tiktoken's counts first.
/// The fully separate count (Python tiktoken on every prompt sent) is in `perf/harness.py`.
fn reference_count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}

fn reference_counter_agrees_with_python_tiktoken() {
    for &(text, tokens) in O200K_BY_PYTHON_TIKTOKEN {
        assert_eq!(reference_count(text), tokens, "{text:?}");
    }
}

/// The prompt of every request body the run in `dir` sent, by conversation id, read from its
/// `inputs.json` by this test (serde_json on the body, not ringperf's payload-text code).
fn sent_prompts(dir: &Path) -> HashMap<String, String> {
    let inputs = read_json(&dir.join("inputs.json"));
    let data = inputs["data"].as_array().expect("inputs.json data");
    let prompts: HashMap<String, String> = data
        .iter()
        .map(|entry| {
            let payloads = entry["payloads"].as_array().expect("payloads");
            assert_eq!(payloads.len(), 1, "single-turn: {entry}");
            let messages = payloads[0]["messages"].as_array().expect("chat messages");
            assert_eq!(messages.len(), 1, "one user message: {entry}");
            assert_eq!(messages[0]["role"], "user");
            let text = messages[0]["content"].as_str().expect("text content");
            let id = entry["session_id"].as_str().expect("session id");
            (id.to_string(), text.to_string())
        })
        .collect();
    assert_eq!(prompts.len(), data.len(), "conversation ids are unique");
    prompts
}

/// Checks every record of the run in `dir` against the reference count of the prompt it sent:
/// the record's ISL must equal it and, when the mock counted `usage.prompt_tokens` with a real
/// tokenizer (`usage_exact`), so must the server's count. Returns the counts, one per record.
fn check_prompt_tokens(dir: &Path, usage_exact: bool) -> Vec<usize> {
    reference_counter_agrees_with_python_tiktoken();
    let prompts = sent_prompts(dir);
    let recs = read_jsonl(&dir.join("profile_export.jsonl"));
    assert!(!recs.is_empty());
    recs.iter()
        .map(|rec| {
            let cid = rec["metadata"]["conversation_id"]
                .as_str()
                .expect("conversation id");
            let prompt = prompts
                .get(cid)
                .unwrap_or_else(|| panic!("record names conversation {cid}, not in inputs.json"));
            let tokens = reference_count(prompt);
            let head: String = prompt.chars().take(60).collect();
            let isl = rec["metrics"]["input_sequence_length"]["value"].as_u64();
            assert_eq!(isl, Some(tokens as u64), "ISL of {cid}: {head:?}...");
            if usage_exact {
                let usage = rec["metrics"]["usage_prompt_tokens"]["value"].as_u64();
                assert_eq!(
                    usage,
                    Some(tokens as u64),
                    "usage.prompt_tokens of {cid}: {head:?}..."
                );
            }
            tokens
        })
        .collect()
}

/// A streaming run with fixed TTFT, inter-token delay and length: every reported TTFT, request
/// latency and inter-chunk latency must match what the mock's truth log says it did.
///
/// Bounds: a value can never be *smaller* than the truth (bytes cannot arrive before they are
/// written; both sides read the same CLOCK_MONOTONIC), and it exceeds it only by loopback
/// delivery plus scheduling of the reading thread. ringperf stamps the read, not the parse, so
/// that excess is tens of microseconds on an idle machine. On a shared 2-core box the reading
/// thread can be descheduled for a CFS time slice or two now and then, so a single value may
/// exceed the truth by several milliseconds (bound: 50 ms, which still catches a broken clock or
/// a stamp taken after the whole body); the median TTFT excess must stay under 2 ms, which a
/// client that stamped after parsing or coalesced reads would not meet.
fn streaming_ground_truth(driver: Driver, io_driver: &str) {
    let server = mock(25, 4, 12, 1, driver);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u http://{} --streaming --concurrency 3 --request-count 24 \
         --isl 40 --osl 12 --random-seed 7 --ui none --io-driver {io_driver} --no-server-metrics \
         --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let outcome = ringperf::run::run(cfg).expect("run completes");
    assert_eq!(ringperf::exit::of_run(&outcome), 0);
    assert_eq!((outcome.successes, outcome.errors), (24, 0));

    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(24.0));
    let expected_driver = if io_driver == "legacy" {
        "epoll"
    } else {
        "io_uring"
    };
    assert_eq!(summary["ringperf"]["io_driver"], expected_driver);

    let truth: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .filter_map(|e| e.request_id.map(|id| (id.to_string(), e)))
        .collect();
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len(), 24);
    let mut excess_ttft = Vec::new();
    let (mut icl_excess, mut icl_reported, mut icl_truth) = (Vec::new(), Vec::new(), Vec::new());
    for rec in &recs {
        let id = rec["metadata"]["x_request_id"]
            .as_str()
            .expect("request id");
        let t = truth
            .get(id)
            .unwrap_or_else(|| panic!("mock saw request {id}"));
        assert_eq!(t.event_ns.len(), 12);
        let start = raw_start(rec, &summary);
        assert!(start <= t.arrival_ns, "sent before the mock received it");

        let ttft_ns = metric(rec, "time_to_first_token").expect("ttft") * 1e6;
        let true_ttft = (t.event_ns[0] - start) as f64;
        let excess = ttft_ns - true_ttft;
        assert!(excess >= -1_000.0, "TTFT {ttft_ns} below truth {true_ttft}");
        assert!(
            excess < 50e6,
            "TTFT {ttft_ns} exceeds truth {true_ttft} by {excess} ns"
        );
        excess_ttft.push(excess);

        let lat_ns = metric(rec, "request_latency").expect("latency") * 1e6;
        let true_lat = (t.event_ns[11] - start) as f64;
        assert!(
            lat_ns - true_lat >= -1_000.0 && lat_ns - true_lat < 50e6,
            "{lat_ns} vs {true_lat}"
        );

        let icl = rec["metrics"]["inter_chunk_latency"]["value"]
            .as_array()
            .expect("icl list");
        assert_eq!(icl.len(), 11);
        for (k, v) in icl.iter().enumerate() {
            let reported = v.as_f64().unwrap() * 1e6;
            let truth_gap = (t.event_ns[k + 1] - t.event_ns[k]) as f64;
            assert!(
                (reported - truth_gap).abs() < 50e6,
                "ICL {k}: {reported} vs {truth_gap}"
            );
            icl_excess.push(reported - truth_gap);
            icl_reported.push(reported);
            icl_truth.push(truth_gap);
        }
        // The mock streams 12 single-token events; the OSL comes from tokenizing the text.
        assert_eq!(rec["metrics"]["output_sequence_length"]["value"], 12);
        assert_eq!(rec["metrics"]["input_sequence_length"]["value"], 40);
        let itl = metric(rec, "inter_token_latency").unwrap();
        assert!((itl - (lat_ns - ttft_ns) / 1e6 / 11.0).abs() < 1e-6);
    }
    // Every prompt sent is 40 tokens by the test's own count, not only by ringperf's.
    let counts = check_prompt_tokens(dir.path(), false);
    assert!(counts.iter().all(|&n| n == 40), "{counts:?}");

    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ttft_median = median(&mut excess_ttft);
    assert!(ttft_median < 2e6, "median TTFT excess {ttft_median} ns");

    // Inter-chunk values: the per-value bound above (50 ms on ~4 ms gaps) would pass all zeros
    // or every value shifted by a constant. What ringperf measures for gap k is
    // stamp[k+1] - stamp[k], each stamp being the mock's write instant plus that event's delivery
    // delay d (loopback and, for a user-space stamp, the reader's wake-up; the TTFT excess above
    // is d of the first event). So reported - truth = d[k+1] - d[k]: the difference of two draws
    // of the same delay, centred on zero whatever the delays are. If three quarters of the
    // delays are under D, at least half of these differences lie in [-D, D], so their median
    // does too. D is tens of µs on an idle machine (measured here: the differences' median
    // within a few µs of zero, their quartiles about ±20 µs) and a CFS slice or so at worst on
    // this shared box.
    // The bound, 1 ms, is a quarter of the 4 ms ITL: all-zero values (their excess is minus the
    // whole gap), values shifted by a millisecond or more, or gaps scaled by 3/4 or 5/4 fail.
    let icl_median_excess = median(&mut icl_excess);
    assert!(
        icl_median_excess.abs() < 1e6,
        "median (reported ICL - truth gap) is {icl_median_excess} ns"
    );
    // And the values are not degenerate: the typical reported gap is the typical true gap
    // within a factor of two, and not zero. The true gaps themselves are the 4 ms ITL give or
    // take the difference of two timer wake-ups (the mock writes token k at arrival + TTFT +
    // k × ITL, on a timer that is never early), so their median is within a quarter of it.
    let (reported_median, truth_median) = (median(&mut icl_reported), median(&mut icl_truth));
    assert!(
        (truth_median - 4e6).abs() < 1e6,
        "the mock's gaps: median {truth_median} ns"
    );
    assert!(
        reported_median > 0.0
            && reported_median >= truth_median / 2.0
            && reported_median <= truth_median * 2.0,
        "median ICL {reported_median} ns vs median truth gap {truth_median} ns"
    );
}

/// ISL and `usage.prompt_tokens` against a count that is not ringperf's.
///
/// The mock counts `usage.prompt_tokens` with ringperf's own tokenizer and payload-text code, so
/// "usage = ISL" compares that code with itself: it would pass if both used the wrong encoding,
/// counted the wrong part of the body, or if the prompt generator missed the requested length.
/// Here each record is checked against the prompt it sent, taken out of `inputs.json` by this
/// test and counted by [`reference_count`], which is pinned to Python tiktoken's counts. The
/// lengths are short and varied (`--isl 6 --isl-stddev 4`: 1 to about 18 tokens) so a constant
/// or an off-by-one cannot pass, and the mock's count comes from the body it read off the wire,
/// so it also checks that `inputs.json` holds what was sent.
#[test]
fn prompt_tokens_match_an_independent_count() {
    let server = ringperf_mock::mock::start(MockConfig {
        output_tokens: OutputLen::Fixed(2),
        prompt_tokenizer: Some(PromptTokenizer(Arc::new(
            ringperf_workload::workload::Tokenizer::builtin(),
        ))),
        ..MockConfig::default()
    })
    .expect("mock starts");
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --concurrency 2 --request-count 40 \
         --num-dataset-entries 40 --isl 6 --isl-stddev 4 --random-seed 11 --ui none \
         --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (40, 0));
    let counts = check_prompt_tokens(dir.path(), true);
    assert_eq!(counts.len(), 40);
    let distinct: BTreeSet<usize> = counts.iter().copied().collect();
    assert!(distinct.len() >= 5, "lengths vary: {distinct:?}");
    assert!(counts.iter().all(|&n| n >= 1), "{counts:?}");
}

#[test]
fn streaming_matches_truth_on_io_uring() {
    streaming_ground_truth(Driver::Uring, "uring");
}

#[test]
fn streaming_matches_truth_on_epoll() {
    streaming_ground_truth(Driver::Legacy, "legacy");
}

#[test]
fn packed_events_count_tokens_not_events() {
    let server = mock(0, 1, 30, 4, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --concurrency 2 --request-count 6 --isl 10 \
         --ui none --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).unwrap();
    for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
        assert_eq!(rec["metrics"]["output_sequence_length"]["value"], 30);
        // 30 tokens in events of 4: 8 content events, 7 gaps.
        assert_eq!(
            rec["metrics"]["inter_chunk_latency"]["value"]
                .as_array()
                .unwrap()
                .len(),
            7
        );
    }
}

#[test]
fn non_streaming_run_has_no_streaming_metrics() {
    let server = mock(0, 0, 8, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type completions --concurrency 2 \
         --request-count 10 --isl 16 --ui none --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!(out.successes, 10);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    for tag in [
        "time_to_first_token",
        "inter_token_latency",
        "time_to_second_token",
    ] {
        assert!(
            summary.get(tag).is_none(),
            "{tag} must not exist without --streaming"
        );
    }
    assert!(summary["request_latency"]["avg"].as_f64().unwrap() > 0.0);
    for rec in read_jsonl(&dir.path().join("profile_export.jsonl")) {
        assert!(rec["metrics"].get("time_to_first_token").is_none());
        assert_eq!(rec["metrics"]["output_sequence_length"]["value"], 8);
    }
}

#[test]
fn warmup_is_excluded_and_rate_mode_reports_lag() {
    let server = mock(0, 0, 4, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --request-rate 200 --arrival-pattern constant \
         --request-count 20 --warmup-request-count 5 --isl 8 --ui none --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!(out.successes, 20);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["request_count"]["avg"].as_f64(), Some(20.0));
    assert_eq!(
        summary["warmup_metrics"]["request_count"]["avg"].as_f64(),
        Some(5.0)
    );
    let lag = &summary["ringperf"]["dispatch_lag_ns"];
    assert!(
        lag["p50"].as_f64().is_some() && lag["max"].as_f64().is_some(),
        "{lag}"
    );
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let profiling = recs
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .count();
    assert_eq!(profiling, 20);
    // Constant 200/s: intended send times exactly 5 ms apart from the phase start, and no
    // request leaves before its intended time.
    let mut prof: Vec<&Value> = recs
        .iter()
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .collect();
    prof.sort_by_key(|r| r["metadata"]["credit_issued_ns"].as_u64().unwrap());
    for w in prof.windows(2) {
        let a = w[0]["metadata"]["credit_issued_ns"].as_u64().unwrap();
        let b = w[1]["metadata"]["credit_issued_ns"].as_u64().unwrap();
        assert!(
            (b - a).abs_diff(5_000_000) <= 1,
            "intended gap {} ns",
            b - a
        );
    }
    for r in &prof {
        let intended = r["metadata"]["credit_issued_ns"].as_u64().unwrap();
        let sent = r["metadata"]["request_start_ns"].as_u64().unwrap();
        assert!(sent >= intended, "sent {} ns early", intended - sent);
    }
}

#[test]
fn duration_run_stops_on_time() {
    let server = mock(0, 1, 4, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    // The grace period is far longer than the whole run takes, even on a loaded machine: a run
    // that waited it out would take more than 31 s.
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --concurrency 2 --benchmark-duration 1 \
         --benchmark-grace-period 30 --isl 8 --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let t = std::time::Instant::now();
    let out = ringperf::run::run(cfg).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t.elapsed()
    );
    assert!(out.successes > 10, "{out:?}");
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let d = summary["benchmark_duration"]["avg"].as_f64().unwrap();
    assert!((0.9..2.0).contains(&d), "benchmark_duration {d} s");
}

#[test]
fn every_request_failing_exits_non_zero_and_says_why() {
    // A port nothing listens on.
    let refused = crate::common::RefusedPort::new();
    let port = refused.port;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u 127.0.0.1:{port} --concurrency 2 --request-count 5 \
         --isl 8 --ui none --artifact-dir {}",
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!((out.successes, out.errors), (0, 5));
    assert_eq!(ringperf::exit::of_run(&out), 1);
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["error_request_count"]["avg"].as_f64(), Some(5.0));
    let e = &summary["error_summary"][0];
    assert_eq!(e["count"], 5);
    assert!(
        e["error_details"]["type"]
            .as_str()
            .unwrap()
            .contains("Connect"),
        "{e}"
    );
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len(), 5);
    assert!(recs.iter().all(|r| r["error"]["type"].is_string()));
}

#[test]
fn binary_demo_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "--mock",
            "--streaming",
            "--concurrency",
            "2",
            "--request-count",
            "8",
        ])
        .args([
            "--mock-ttft-ms",
            "1",
            "--mock-itl-ms",
            "0",
            "--ui",
            "none",
            "--artifact-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ringperf | LLM Metrics"), "{stdout}");
    assert!(stdout.contains("Time to First Token"), "{stdout}");
    for f in [
        "profile_export_aiperf.json",
        "profile_export_aiperf.csv",
        "profile_export.jsonl",
        "inputs.json",
    ] {
        assert!(dir.path().join(f).exists(), "{f}");
    }
    // The embedded mock counts usage.prompt_tokens with the run's tokenizer, so usage = ISL and
    // no discrepancy is only consistency; each record is also checked against the test's own
    // count of the prompt it sent.
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(
        summary["usage_prompt_tokens"]["avg"], summary["input_sequence_length"]["avg"],
        "{summary}"
    );
    assert!(!stdout.contains("Discrepancy"), "{stdout}");
    check_prompt_tokens(dir.path(), true);
    let csv = std::fs::read(dir.path().join("profile_export_aiperf.csv")).unwrap();
    assert!(
        csv.windows(2).any(|w| w == b"\r\n"),
        "CSV lines end with CRLF"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "x", "--record-processors", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--record-processors"));

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "x", "--concurrency", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--concurrency"));
}

#[test]
fn error_budget_stops_the_run_with_exit_code_3() {
    let refused = crate::common::RefusedPort::new();
    let port = refused.port;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u 127.0.0.1:{port} --concurrency 2 --request-count 100000 \
         --failed-request-threshold 0.5 --isl 8 --ui none --artifact-dir {}",
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!(ringperf::exit::of_run(&out), 3, "{out:?}");
    // Armed after max(concurrency, 10) = 10 records; the workers stop right after.
    assert!(out.errors >= 10 && out.errors < 1000, "{out:?}");
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["is_complete"], false);
    assert!(
        summary["incomplete_reason"]
            .as_str()
            .unwrap()
            .contains("--failed-request-threshold")
    );
}

/// Starts the binary on a long streaming run against `server` (it runs until stopped).
fn spawn_streaming_run(
    server: &MockServer,
    dir: &Path,
    concurrency: u32,
    stdio: fn() -> std::process::Stdio,
) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "-u",
            &server.addr.to_string(),
            "--streaming",
        ])
        .args([
            "--concurrency",
            &concurrency.to_string(),
            "--request-count",
            "10000000",
            // The dataset would otherwise hold one conversation per request (AIPerf's rule).
            "--num-dataset-entries",
            "100",
        ])
        .args(["--isl", "8", "--ui", "none", "--artifact-dir"])
        .arg(dir)
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .expect("the binary starts")
}

/// Waits until a child run writes its first record (start-up of a debug build can take a while).
fn wait_for_records(dir: &Path) {
    let jsonl = dir.join("profile_export.jsonl");
    let t0 = std::time::Instant::now();
    while std::fs::metadata(&jsonl).map_or(0, |m| m.len()) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no records after 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGINT stops issuing, lets requests in flight finish, writes every artifact marked cancelled
/// and exits 130.
#[test]
fn sigint_cancels_gracefully() {
    let server = mock(0, 5, 50, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_streaming_run(&server, dir.path(), 4, std::process::Stdio::piped);
    wait_for_records(dir.path());
    // SAFETY: sending SIGINT to the child we spawned; its pid is valid until we wait on it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(summary["was_cancelled"], true);
    let n = summary["request_count"]["avg"].as_f64().unwrap();
    assert!(n > 0.0 && n < 10_000_000.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("cancelled"), "{stdout}");
    // Requests in flight were allowed to finish: every record is a success.
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len() as f64, n);
    assert!(recs.iter().all(|r| r.get("error").is_none()));
}

/// `profile_export.jsonl` is written as records complete, whole lines per write: SIGKILL leaves
/// every line before the last one complete. The kernel may cut the one write in progress when the
/// signal lands inside it (a regular-file write stops between pages on a fatal signal), so the
/// tail after the last newline, if any, is a prefix of one line, which readers (`ringperf merge`)
/// skip.
#[test]
fn sigkill_leaves_only_complete_jsonl_lines() {
    let server = mock(0, 0, 20, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_streaming_run(&server, dir.path(), 8, std::process::Stdio::null);
    wait_for_records(dir.path());
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(dir.path().join("profile_export.jsonl")).unwrap();
    assert!(!text.is_empty(), "records were flushed while running");
    let complete = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    let tail = &text[complete.len()..];
    assert!(!complete.is_empty(), "at least one whole line was flushed");
    assert!(
        tail.is_empty() || tail.starts_with('{'),
        "a tail without its newline is the start of a cut line: {tail:.200}"
    );
    for line in complete.lines() {
        let v: Value = serde_json::from_str(line).expect("every line is complete JSON");
        assert!(v["metadata"]["x_request_id"].is_string());
    }
}

/// The request head carries AIPerf's headers: content negotiation, auth, the per-request and
/// per-session ids, and the session-affinity copy of the correlation id.
#[test]
fn request_head_carries_aiperf_headers() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "client closed early");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
        let body = r#"{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10}}"#;
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        head
    });
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {addr} --request-count 1 --isl 8 --api-key k-1 \
         -H X-Tenant:blue --no-server-metrics --ui none --artifact-dir {}",
        dir.path().display()
    ));
    let out = ringperf::run::run(cfg).unwrap();
    assert_eq!(out.successes, 1, "{out:?}");
    let head = server.join().unwrap();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                l.split_once(": ")
                    .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            })
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| panic!("no {name} in {head}"))
    };
    assert!(
        head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{head}"
    );
    assert_eq!(header("Accept"), "application/json");
    assert_eq!(header("Content-Type"), "application/json");
    assert_eq!(header("Authorization"), "Bearer k-1");
    assert_eq!(header("X-Tenant"), "blue");
    let rid = header("X-Request-ID");
    let cid = header("X-Correlation-ID");
    assert!(uuid::Uuid::parse_str(&rid).is_ok() && uuid::Uuid::parse_str(&cid).is_ok());
    assert_ne!(rid, cid);
    assert_eq!(header("X-Session-Affinity"), cid);
    // The JSONL record names the request id that went on the wire.
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs[0]["metadata"]["x_request_id"], rid.as_str());
    assert_eq!(recs[0]["metadata"]["x_correlation_id"], cid.as_str());
}

/// `--goodput` against the mock: every record's `good_request_count` (0/1) agrees with its own
/// `request_latency` in the JSONL, and the summary's count, fraction and goodput agree with the
/// records. The threshold sits near the mock's latency (TTFT 2 ms + 7 tokens at 1 ms), so the
/// split is whatever the timing gives; the expectation is exact either way.
#[test]
fn goodput_against_the_mock() {
    let run = |slo: &str| {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(["profile", "--mock", "--streaming", "--concurrency", "4"])
            .args([
                "--request-count",
                "24",
                "--mock-ttft-ms",
                "2",
                "--mock-itl-ms",
                "1",
            ])
            .args([
                "--mock-output-tokens",
                "8",
                "--ui",
                "none",
                "--goodput",
                slo,
            ])
            .arg("--artifact-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (dir, String::from_utf8_lossy(&out.stdout).into_owned())
    };
    for (threshold_ms, all_good) in [(9.5, None), (60_000.0, Some(true)), (0.001, Some(false))] {
        let (dir, stdout) = run(&format!("request_latency:{threshold_ms}"));
        let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
        assert_eq!(recs.len(), 24);
        let mut good = 0;
        for r in &recs {
            let m = &r["metrics"];
            let latency_ms = m["request_latency"]["value"].as_f64().unwrap();
            let flag = m["good_request_count"]["value"].as_i64().unwrap();
            assert_eq!(m["good_request_count"]["unit"], "requests");
            assert_eq!(flag, i64::from(latency_ms <= threshold_ms), "{r}");
            good += flag;
        }
        if let Some(all) = all_good {
            assert_eq!(good, if all { 24 } else { 0 });
        }
        let s = read_json(&dir.path().join("profile_export_aiperf.json"));
        assert_eq!(
            s["good_request_count"]["avg"].as_f64(),
            Some(good as f64),
            "{s}"
        );
        assert_eq!(s["good_request_count"]["unit"], "requests");
        assert_eq!(
            s["good_request_fraction"]["avg"].as_f64(),
            Some(good as f64 / 24.0)
        );
        assert_eq!(s["good_request_fraction"]["unit"], "ratio");
        let duration_s = s["benchmark_duration"]["avg"].as_f64().unwrap();
        let goodput = s["goodput"]["avg"].as_f64().unwrap();
        assert!((goodput - good as f64 / duration_s).abs() <= 1e-9 * goodput.max(1.0));
        assert_eq!(s["goodput"]["unit"], "requests/sec");
        assert!(stdout.contains("Goodput (requests/sec)"), "{stdout}");
        let csv = std::fs::read_to_string(dir.path().join("profile_export_aiperf.csv")).unwrap();
        assert!(csv.contains("Good Request Count"), "{csv}");
    }

    // Bad SLOs are config errors, exit 2, before anything runs.
    for (slo, says) in [
        ("latency:5", "unknown metric tag `latency`"),
        ("request_latency", "not in 'tag:value' form"),
        ("request_latency:x", "must be a number"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args([
                "profile",
                "--mock",
                "--request-count",
                "1",
                "--goodput",
                slo,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{slo}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{slo}: {err}");
    }
    // TTFT needs --streaming.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--mock", "--request-count", "1"])
        .args(["--goodput", "time_to_first_token:5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not applicable"));
}

/// The sweep-line and credit-based metrics against the mock: present in the summary and in the
/// warmup block, and consistent with the run. Every record streams, so each request's interval
/// splits exactly into prefill (start → first token) and decode (first token → end): the
/// effective prefill and decode concurrencies add up to the effective concurrency. Each record's
/// effective latency (credit → end) covers its request latency (start → last content).
#[test]
fn sweep_line_metrics_against_the_mock() {
    // 2 ms to the first token, 1 ms between tokens: every phase of a request has a length.
    let server = mock(2, 1, 4, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u {} --streaming --concurrency 2 --request-count 8 \
         --warmup-request-count 2 --isl 8 --ui none --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    ringperf::run::run(cfg).unwrap();
    let s = read_json(&dir.path().join("profile_export_aiperf.json"));
    assert_eq!(s["is_complete"], true);
    let sweep = [
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
    ];
    for tag in sweep {
        let keys: Vec<&str> = s[tag]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "unit", "avg", "p50", "p90", "p95", "p99", "min", "max", "std"
            ],
            "{tag}"
        );
        assert!(s["warmup_metrics"][tag].is_object(), "warmup {tag}");
    }
    for tag in ["credit_to_start_latency", "effective_latency"] {
        assert_eq!(s[tag]["count"], 8, "{tag}");
        assert_eq!(s[tag]["unit"], "ms");
        assert_eq!(s["warmup_metrics"][tag]["count"], 2, "warmup {tag}");
    }
    let avg = |tag: &str| s[tag]["avg"].as_f64().unwrap();
    let c = avg("effective_concurrency");
    assert!(c > 0.0 && s["effective_concurrency"]["max"].as_f64().unwrap() <= 2.0);
    let split = avg("effective_prefill_concurrency") + avg("effective_decode_concurrency");
    assert!((split - c).abs() <= 1e-9 * c, "{split} vs {c}");
    assert!(avg("tokens_in_flight") > 0.0 && avg("active_decode_throughput") > 0.0);
    let sum = |tag: &str| s[tag]["sum"].as_f64().unwrap();
    assert!(sum("effective_latency") >= sum("request_latency"));
    let jsonl = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert!(
        jsonl
            .iter()
            .all(|r| r["metrics"].get("effective_latency").is_none())
    );
}

/// One streaming run against `server` with `--timestamps {timestamps}`: its summary and, per
/// record, the raw `CLOCK_MONOTONIC` stamps of its content events as the metrics saw them
/// (request start + TTFT, then each inter-chunk latency added) with the mock's truth entry.
fn event_stamps(
    server: &MockServer,
    timestamps: &str,
    io_driver: &str,
    extra: &str,
) -> (Value, Vec<(Vec<f64>, TruthEntry)>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&format!(
        "ringperf profile -m mock-model -u http://{} --streaming --concurrency 3 --request-count 36 \
         --isl 40 --osl 12 --random-seed 7 --ui none --io-driver {io_driver} --no-server-metrics \
         --timestamps {timestamps} {extra} --artifact-dir {}",
        server.addr,
        dir.path().display()
    ));
    let outcome = ringperf::run::run(cfg).expect("run completes");
    assert_eq!((outcome.successes, outcome.errors), (36, 0));
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let truth: HashMap<String, TruthEntry> = server
        .truth()
        .entries()
        .into_iter()
        .filter_map(|e| e.request_id.map(|id| (id.to_string(), e)))
        .collect();
    let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
    assert_eq!(recs.len(), 36);
    let stamps = recs
        .iter()
        .map(|rec| {
            let id = rec["metadata"]["x_request_id"].as_str().expect("id");
            let t = truth.get(id).expect("the mock saw the request").clone();
            let mut at = raw_start(rec, &summary) as f64
                + metric(rec, "time_to_first_token").expect("ttft") * 1e6;
            let mut events = vec![at];
            for gap in rec["metrics"]["inter_chunk_latency"]["value"]
                .as_array()
                .expect("icl list")
            {
                at += gap.as_f64().unwrap() * 1e6;
                events.push(at);
            }
            assert_eq!(events.len(), t.event_ns.len());
            (events, t)
        })
        .collect();
    (summary, stamps)
}

/// Kernel receive stamps against the mock's truth log: every event's stamp is at or after the
/// mock's stamp of the write that carried it (within the calibration's stated uncertainty), the
/// client's receive lag is reported for the events, and the median TTFT excess over the truth is
/// smaller with kernel stamps than with user-space stamps (a ratio of two medians measured here,
/// not a time). That a kernel stamp is never later than its read's user-space stamp is checked
/// read by read in `net::tests`.
#[test]
fn kernel_stamps_lie_between_the_write_and_the_user_stamp() {
    let server = mock(25, 4, 12, 1, Driver::Auto);
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ttft_excess = |stamps: &[(Vec<f64>, TruthEntry)]| {
        median(
            stamps
                .iter()
                .map(|(e, t)| e[0] - t.event_ns[0] as f64)
                .collect(),
        )
    };

    let (summary, kernel) = event_stamps(&server, "kernel", "auto", "");
    let rp = &summary["ringperf"];
    assert_eq!(rp["timestamps"], "kernel");
    let uncertainty = rp["clock"]["realtime_to_monotonic_uncertainty_ns"]
        .as_f64()
        .expect("the calibration is recorded");
    assert!(
        rp["clock"]["realtime_to_monotonic_offset_ns"]
            .as_u64()
            .is_some()
    );
    for (events, t) in &kernel {
        for (k, (&seen, &wrote)) in events.iter().zip(&t.event_ns).enumerate() {
            // One ns of slack for the float round trip through milliseconds.
            assert!(
                seen + uncertainty + 1.0 >= wrote as f64,
                "event {k}: stamp {seen} before the mock's write {wrote}"
            );
        }
        // The mock's own kernel stamp of the request's arrival (its truth log keeps one): the
        // request reached the socket before the mock's thread read it.
        let arrived = t
            .arrival_kernel_ns
            .expect("the mock stamps arrivals in the kernel");
        assert!(arrived <= t.arrival_ns + uncertainty as u64, "{t:?}");
    }
    let lag = &rp["receive_lag_ns"];
    let count = lag["count"].as_u64().expect("receive lag measured");
    assert!(count >= 36 * 12, "{lag}");
    let (p50, p99, max) = (
        lag["p50"].as_f64().unwrap(),
        lag["p99"].as_f64().unwrap(),
        lag["max"].as_f64().unwrap(),
    );
    assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{lag}");

    let (summary, user) = event_stamps(&server, "user", "auto", "");
    assert_eq!(summary["ringperf"]["timestamps"], "user");
    assert!(summary["ringperf"]["receive_lag_ns"].is_null());
    let (k, u) = (ttft_excess(&kernel), ttft_excess(&user));
    assert!(k >= -uncertainty - 1.0 && u > 0.0, "{k} {u}");
    assert!(
        k / u < 1.0,
        "median TTFT excess: kernel {k} ns, user {u} ns (ratio {})",
        k / u
    );
    eprintln!(
        "median TTFT excess over the truth: kernel {k:.0} ns, user {u:.0} ns, ratio {:.3}; receive lag p50 {p50:.0} ns p99 {p99:.0} ns max {max:.0} ns",
        k / u
    );
}

/// Batched wake-ups (`--batch-wakeups-us`): the worker naps (the JSON counts its naps) and no
/// event's kernel stamp moves: each is still at or after the mock's write that carried it, and
/// every record is complete. Without the flag no worker naps.
#[test]
fn batched_wake_ups_nap_and_keep_every_stamp_after_its_write() {
    let server = mock(25, 4, 12, 1, Driver::Auto);
    let (summary, stamps) = event_stamps(&server, "kernel", "auto", "--batch-wakeups-us 300");
    let rp = &summary["ringperf"];
    let uncertainty = rp["clock"]["realtime_to_monotonic_uncertainty_ns"]
        .as_f64()
        .unwrap();
    let naps = &rp["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "worker_0")
        .expect("a worker")["naps"];
    let count = naps["count"].as_u64().expect("naps reported");
    assert!(count >= 1, "{naps}");
    // Each nap lasts at least the shortest nap taken (20 µs) and at most the flag's 300 µs
    // plus the wake-up from it; only the lower bound is a rule.
    assert!(
        naps["napped_ns"].as_u64().unwrap() >= count * 20_000,
        "{naps}"
    );
    for (events, t) in &stamps {
        for (k, (&seen, &wrote)) in events.iter().zip(&t.event_ns).enumerate() {
            assert!(
                seen + uncertainty + 1.0 >= wrote as f64,
                "event {k}: stamp {seen} before the mock's write {wrote}"
            );
        }
    }
    let (summary, _) = event_stamps(&server, "kernel", "auto", "");
    for t in summary["ringperf"]["threads"].as_array().unwrap() {
        assert!(t.get("naps").is_none(), "{t}");
    }
}

/// The epoll driver reads with kernel stamps the same way; user-space stamps on it still give
/// complete records.
#[test]
fn kernel_and_user_stamps_on_the_epoll_driver() {
    let server = mock(5, 2, 6, 1, Driver::Legacy);
    for timestamps in ["kernel", "user"] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&format!(
            "ringperf profile -m mock-model -u http://{} --streaming --concurrency 2 \
             --request-count 10 --osl 6 --ui none --io-driver legacy --no-server-metrics \
             --timestamps {timestamps} --artifact-dir {}",
            server.addr,
            dir.path().display()
        ));
        let outcome = ringperf::run::run(cfg).expect("run completes");
        assert_eq!((outcome.successes, outcome.errors), (10, 0), "{timestamps}");
        let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
        assert_eq!(summary["ringperf"]["io_driver"], "epoll");
        assert_eq!(summary["ringperf"]["timestamps"], timestamps);
        assert_eq!(
            summary["ringperf"]["receive_lag_ns"].is_null(),
            timestamps == "user"
        );
        let recs = read_jsonl(&dir.path().join("profile_export.jsonl"));
        assert_eq!(recs.len(), 10);
        for rec in &recs {
            assert_eq!(rec["metrics"]["output_sequence_length"]["value"], 6);
            assert_eq!(
                rec["metrics"]["inter_chunk_latency"]["value"]
                    .as_array()
                    .map(Vec::len),
                Some(5)
            );
        }
    }
}

/// A run whose preparation would take many minutes (20 000 synthetic prompts of 8 000 tokens,
/// built and encoded before anything is sent: ~45 ms each in a debug build), stopped by SIGINT
/// as soon as preparation starts (the embedded mock's line comes after the tokenizer, before the
/// dataset): it ends with exit code 130, says where it stopped and writes no export. Ending at
/// all is the proof that the preparation heeds the signal; a run that did not is killed after
/// 60 s (two orders of magnitude above the usual stop, one below the whole preparation).
#[test]
fn sigint_during_preparation_stops_it() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0")
        .args(["profile", "--mock", "--streaming", "--ui", "none"])
        .args(["--concurrency", "1", "--request-count", "1"])
        .args([
            "--num-dataset-entries",
            "20000",
            "--isl",
            "8000",
            "--osl",
            "1",
        ])
        .args(["--no-gpu-telemetry", "--artifact-dir"])
        .arg(dir.path().join("run"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut text = String::new();
    loop {
        let before = text.len();
        assert!(
            stderr.read_line(&mut text).unwrap() > 0,
            "no mock line: {text}"
        );
        if text[before..].contains("embedded mock server listening") {
            break;
        }
    }
    // SAFETY: sending SIGINT to the child we spawned; its pid is valid until we wait on it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if waited > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the preparation went on after SIGINT: {text}");
        }
        std::thread::sleep(Duration::from_millis(20));
        waited += Duration::from_millis(20);
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let err = text + &rest;
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains(
            "ringperf: cancelled by SIGINT while building the dataset: no request was sent"
        ),
        "{err}"
    );
    assert!(
        !dir.path().join("run/profile_export_aiperf.json").exists(),
        "nothing is exported by a run stopped before it sent anything"
    );
}

/// Ctrl-C does not wait out the server-metrics flush period (here 60 s): the final scrape is
/// taken at once and the server-metrics exports are still written.
#[test]
fn sigint_takes_the_final_scrape_without_the_flush_period() {
    let server = mock(0, 5, 50, 1, Driver::Auto);
    let dir = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "60")
        .args(["profile", "-m", "mock-model", "--streaming", "--ui", "none"])
        .args(["--concurrency", "2", "--request-count", "10000000"])
        .args([
            "--num-dataset-entries",
            "10",
            "--isl",
            "8",
            "--no-gpu-telemetry",
        ])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    wait_for_records(dir.path());
    let since = std::time::Instant::now();
    // SAFETY: sending SIGINT to the child we spawned; its pid is valid until we wait on it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        since.elapsed() < Duration::from_secs(30),
        "the run waited for the 60 s flush period: {err}"
    );
    assert!(
        err.contains("SIGINT: final server-metrics scrape now"),
        "{err}"
    );
    assert!(
        dir.path().join("server_metrics_export.json").is_file(),
        "{err}"
    );
}

/// The fast mock (`MockConfig::fast`: precomputed bytes) against the
/// client: every request's content events as the client stamped them (kernel stamps) are as many
/// as the mock's truth log wrote, each at or after the write that carried it, and the output
/// tokens the client counted are the ones the mock sent.
#[test]
fn fast_mock_truth_equals_what_the_client_measured() {
    let server = ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(4),
        itl: Duration::from_millis(1),
        output_tokens: OutputLen::Fixed(12),
        truth_log: true,
        fast: true,
        io_driver: Driver::Uring,
        ..MockConfig::default()
    })
    .expect("mock starts");
    let (summary, stamps) = event_stamps(&server, "kernel", "auto", "");
    let uncertainty = summary["ringperf"]["clock"]["realtime_to_monotonic_uncertainty_ns"]
        .as_f64()
        .expect("the calibration is recorded");
    for (events, t) in &stamps {
        assert!(t.completed && t.stream, "{t:?}");
        assert_eq!((events.len(), t.content_tokens), (12, 12), "{t:?}");
        for (k, (&seen, &wrote)) in events.iter().zip(&t.event_ns).enumerate() {
            assert!(
                seen + uncertainty + 1.0 >= wrote as f64,
                "event {k}: stamp {seen} before the mock's write {wrote}"
            );
        }
    }
    let osl = &summary["output_sequence_length"];
    assert_eq!(
        (osl["min"].as_f64(), osl["max"].as_f64()),
        (Some(12.0), Some(12.0)),
        "{osl}"
    );
}
