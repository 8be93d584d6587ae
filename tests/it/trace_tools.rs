//! `ringperf analyze-trace` and `ringperf validate` as commands: the console report next to
//! AIPerf 0.13's on the same rows (tests/data/aiperf-analyze-trace/), the JSON file, and the
//! validator's verdicts and exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;

fn ringperf(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("ringperf runs")
}

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ringperf-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn analyze_trace_prints_aiperfs_report_and_writes_its_json() {
    let dir = scratch("analyze-trace");
    let trace = data("mooncake-conversation/first-300.jsonl");
    let out = ringperf(
        &[
            "analyze-trace",
            trace.to_str().unwrap(),
            "--output-file",
            "sub/report.json",
        ],
        &dir,
    );
    assert!(out.status.success(), "{out:?}");
    // AIPerf's console, line for line; only the saved file's name differs.
    let want = std::fs::read_to_string(data("aiperf-analyze-trace/console.txt")).unwrap();
    let want = want.replace("saved to report.json", "saved to sub/report.json");
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("sub/report.json")).unwrap()).unwrap();
    assert_eq!(written["unique_prefixes"], 7814);
    assert_eq!(written["isl_stats"]["p75"], 17100.25);

    let missing = ringperf(&["analyze-trace", "nope.jsonl"], &dir);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("Input file not found: nope.jsonl"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// AIPerf 0.13's validator faults lines 2, 4, 5, 6 and 7 of this file (run by hand, see
/// docs/commands.md); ringperf also faults line 8's unknown field, which `profile` refuses, and
/// line 9 (a JSON list), where AIPerf's validator stops with a Python traceback.
#[test]
fn validate_lists_each_bad_line_with_its_field() {
    let dir = scratch("validate");
    let rows = [
        r#"{"input_length": 10, "hash_ids": [1], "output_length": 4}"#,
        r#"{"input_length": "x"}"#,
        "",
        r#"{"text_input": "hi", "input_length": 3}"#,
        r#"{"output_length": 4}"#,
        "not json",
        r#"{"input_length": 5, "hash_ids": [1, "a"]}"#,
        r#"{"input_length": 5, "foo": 1}"#,
        "[1]",
    ];
    std::fs::write(dir.join("bad.jsonl"), rows.join("\n")).unwrap();
    let out = ringperf(
        &["validate", "mooncake-trace", "--input", "bad.jsonl"],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Validation failed with 7 error(s):");
    let faulted: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.trim_start().split(':').next().unwrap())
        .collect();
    assert_eq!(
        faulted,
        [
            "Line 2", "Line 4", "Line 5", "Line 6", "Line 7", "Line 8", "Line 9"
        ]
    );
    assert!(lines[1].contains("field \"input_length\""), "{}", lines[1]);
    assert!(lines[5].contains("field \"hash_ids[1]\""), "{}", lines[5]);

    // Ten faults at most, as AIPerf.
    std::fs::write(dir.join("many.jsonl"), "{}\n".repeat(25)).unwrap();
    let out = ringperf(
        &[
            "validate",
            "--target",
            "mooncake-trace",
            "--input",
            "many.jsonl",
        ],
        &dir,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("Validation failed with 10 error(s):"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 11);

    let good = data("mooncake-conversation/first-300.jsonl");
    let out = ringperf(
        &[
            "validate",
            "mooncake-trace",
            "--input",
            good.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Validation passed: 300 rows are Mooncake-compatible.\n"
    );
    let out = ringperf(&["validate", "mooncake-trace", "--input", "."], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Validation failed: . is not a file.\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `synthesize mooncake-trace` end to end: the output is a trace `validate` passes, every
/// timestamp halved, and `agentic-code` is refused.
#[test]
fn synthesize_writes_a_trace_that_validates() {
    let dir = scratch("synthesize");
    let trace = data("mooncake-conversation/first-300.jsonl");
    let out = ringperf(
        &[
            "synthesize",
            "mooncake-trace",
            "--input-file",
            trace.to_str().unwrap(),
            "--output",
            "out/s.jsonl",
            "--synthesis-speedup-ratio",
            "2",
        ],
        &dir,
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Synthesized 300 rows to out/s.jsonl\n"
    );
    let check = ringperf(
        &["validate", "mooncake-trace", "--input", "out/s.jsonl"],
        &dir,
    );
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    let rows = |p: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (before, after) = (rows(&trace), rows(&dir.join("out/s.jsonl")));
    assert_eq!(after.len(), 300);
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            a["timestamp"].as_i64(),
            b["timestamp"].as_i64().map(|t| t / 2)
        );
    }

    let refused = ringperf(&["synthesize", "agentic-code"], &dir);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("agentic-code is not supported"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ringperf chat` against the recording mock with two messages on stdin: each reply printed
/// is the text the mock's truth log says it sent, each turn has its stats, and the second
/// request carries the first exchange (with history) or not (`--no-history`). `--quick`: one
/// request, no prompt.
#[test]
fn chat_turns_with_and_without_history() {
    use std::io::Write as _;
    for history in [true, false] {
        let server = common::recording_mock(5);
        let url = format!("http://{}", server.addr);
        let mut args = vec![
            "chat",
            "-m",
            "mock-model",
            "-u",
            &url,
            "--tokenizer",
            "builtin",
        ];
        if !history {
            args.push("--no-history");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_ringperf"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("chat starts");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"first question\nsecond one\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut truth = server.truth().entries();
        truth.sort_by_key(|e| e.arrival_ns);
        assert_eq!(truth.len(), 2, "{text}");
        for t in &truth {
            assert!(text.contains(t.reply_text.as_deref().unwrap()), "{text}");
        }
        assert_eq!(text.matches("TTFT: ").count(), 2, "{text}");
        assert_eq!(text.matches("TPS:  ").count(), 2, "{text}");
        let body: serde_json::Value =
            serde_json::from_slice(truth[1].request_body.as_deref().unwrap()).unwrap();
        let messages = body["messages"].as_array().unwrap();
        if history {
            assert_eq!(messages.len(), 3);
            assert_eq!(messages[0]["content"], "first question");
            assert_eq!(messages[1]["role"], "assistant");
            assert_eq!(
                messages[1]["content"],
                truth[0].reply_text.as_deref().unwrap()
            );
        } else {
            assert_eq!(messages.len(), 1);
        }
        assert_eq!(messages.last().unwrap()["content"], "second one");
        server.stop();
    }
    let server = common::recording_mock(3);
    let url = format!("http://{}", server.addr);
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "chat",
            "-m",
            "m",
            "-u",
            &url,
            "--tokenizer",
            "builtin",
            "-q",
            "hi",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.truth().len(), 1);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Please enter"));
    server.stop();
}
