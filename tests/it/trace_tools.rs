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
/// timestamp halved.
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
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The one run directory `synthesize agentic-code` made under `parent`, checked to be named
/// `{prefix}_YYYYmmdd-HHMMSS`.
fn run_dir(parent: &Path, prefix: &str) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let name = dirs[0].file_name().unwrap().to_string_lossy().into_owned();
    let stamp = name
        .strip_prefix(&format!("{prefix}_"))
        .unwrap_or_else(|| panic!("{name} is not {prefix}_STAMP"));
    let (day, time) = stamp.split_once('-').expect("YYYYmmdd-HHMMSS");
    assert!(day.len() == 8 && time.len() == 6, "{stamp}");
    assert!(day.chars().chain(time.chars()).all(|c| c.is_ascii_digit()));
    dirs[0].clone()
}

/// `synthesize agentic-code` writes what AIPerf 0.13 writes for the same flags, byte for byte:
/// the default config, a config with restart splits, extra keys and a delay cap, and the
/// explicit turn mode with `--max-osl` (tests/data/agentic-code/README.md).
#[test]
fn synthesize_agentic_code_writes_aiperfs_files() {
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "default-12s-seed42",
            &["--num-sessions", "12"],
            "default_12s_seed42",
        ),
        (
            "restart-16s-seed7",
            &[
                "--num-sessions",
                "16",
                "--seed",
                "7",
                "--config",
                "restart.json",
            ],
            "restart_16s_seed7",
        ),
        (
            "turns-10s-seed3",
            &[
                "--num-sessions",
                "10",
                "--seed",
                "3",
                "--config",
                "turns.json",
                "--max-osl",
                "700",
            ],
            "turns_10s_seed3",
        ),
    ];
    for (fixture, flags, prefix) in cases {
        let dir = scratch(&format!("agentic-{fixture}"));
        for cfg in ["restart.json", "turns.json"] {
            std::fs::copy(data(&format!("agentic-code/{cfg}")), dir.join(cfg)).unwrap();
        }
        let mut args = vec!["synthesize", "agentic-code", "--output", "out"];
        args.extend_from_slice(flags);
        let out = ringperf(&args, &dir);
        assert!(out.status.success(), "{fixture}: {out:?}");
        let run = run_dir(&dir.join("out"), prefix);
        for file in ["dataset.jsonl", "manifest.json", "quality.json"] {
            let want = std::fs::read(data(&format!("agentic-code/{fixture}/{file}"))).unwrap();
            let got = std::fs::read(run.join(file)).unwrap();
            assert!(got == want, "{fixture}/{file} differs from AIPerf's");
        }
        assert!(String::from_utf8_lossy(&out.stdout).contains("dataset.jsonl ("));
        let check = ringperf(
            &[
                "validate",
                "mooncake-trace",
                "--input",
                run.join("dataset.jsonl").to_str().unwrap(),
            ],
            &dir,
        );
        assert_eq!(check.status.code(), Some(0), "{check:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A previous run's `manifest.json` as `--config` gives the same sessions again (the run named
/// `manifest`), as AIPerf's does.
#[test]
fn synthesize_agentic_code_reruns_a_manifest() {
    let dir = scratch("agentic-manifest");
    let manifest = data("agentic-code/restart-16s-seed7/manifest.json");
    let out = ringperf(
        &[
            "synthesize",
            "agentic-code",
            "--num-sessions",
            "16",
            "--seed",
            "7",
            "--config",
            manifest.to_str().unwrap(),
        ],
        &dir,
    );
    assert!(out.status.success(), "{out:?}");
    let run = run_dir(&dir, "manifest_16s_seed7");
    let want = std::fs::read(data("agentic-code/restart-16s-seed7/dataset.jsonl")).unwrap();
    assert!(std::fs::read(run.join("dataset.jsonl")).unwrap() == want);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["config_name"], "manifest");
    assert_eq!(m["generation_params"]["foo"], serde_json::json!([1, 2]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad input to `synthesize agentic-code` is a usage error (exit 2) saying what is wrong, and
/// nothing is written.
#[test]
fn synthesize_agentic_code_refuses_bad_input() {
    let dir = scratch("agentic-refusals");
    std::fs::write(dir.join("list.json"), "[1]").unwrap();
    std::fs::write(dir.join("junk.json"), "nope").unwrap();
    std::fs::write(
        dir.join("skew.json"),
        r#"{"new_tokens_per_turn": {"mean": 100, "median": 200}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("both.json"),
        r#"{"turns": {"mean": 5, "median": 4, "min": 1, "max": 9}, "reset": {}}"#,
    )
    .unwrap();
    let cases: [(&[&str], &str); 9] = [
        (
            &["--config", "missing.json"],
            "Config 'missing.json' not found. Bundled configs: ['default']",
        ),
        (
            &["--config", "spec"],
            "spec.json is a JSON Schema reference",
        ),
        (
            &["--config", "list.json"],
            "Config 'list.json' must be a JSON object",
        ),
        (&["--config", "junk.json"], "is not valid JSON"),
        (
            &["--config", "skew.json"],
            "new_tokens_per_turn: mean (100.0) must be >= median (200.0) for lognormal",
        ),
        (
            &["--config", "both.json"],
            "turns mode cannot be combined with reset",
        ),
        (
            &["--num-sessions", "0"],
            "--num-sessions: Input should be greater than or equal to 1",
        ),
        (
            &["--max-isl", "0"],
            "max_prompt_tokens: Input should be greater than or equal to 1",
        ),
        (&["--input-file", "t.jsonl"], "takes no --input-file"),
    ];
    for (flags, why) in cases {
        let mut args = vec!["synthesize", "agentic-code", "--output", "out"];
        args.extend_from_slice(flags);
        let out = ringperf(&args, &dir);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{flags:?}: {err}");
        assert!(!dir.join("out").exists(), "{flags:?} wrote output");
    }
    let negative = ringperf(&["synthesize", "agentic-code", "--seed", "-1"], &dir);
    assert_eq!(negative.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What `synthesize agentic-code` writes replays: `profile` of its `dataset.jsonl` as a
/// mooncake trace (its first rows' timestamps make it a fixed schedule, sped up here) sends one
/// request a row, every row answered.
#[test]
fn profile_replays_a_synthesized_agentic_dataset() {
    let dir = scratch("agentic-profile");
    std::fs::write(
        dir.join("small.json"),
        r#"{"max_prompt_tokens": 6000, "block_size": 64,
            "new_tokens_per_turn": {"mean": 300, "median": 200},
            "generation_length": {"mean": 40, "median": 30, "max": 60},
            "cache": {"layer1_tokens": 500, "layer1_5_tokens": 200,
                      "layer2": {"mean": 400, "median": 300},
                      "layer1_5_groups": {"num_groups": 3}}}"#,
    )
    .unwrap();
    let out = ringperf(
        &[
            "synthesize",
            "agentic-code",
            "--num-sessions",
            "4",
            "--config",
            "small.json",
            "--output",
            "out",
        ],
        &dir,
    );
    assert!(out.status.success(), "{out:?}");
    let run = run_dir(&dir.join("out"), "small_4s_seed42");
    let dataset = run.join("dataset.jsonl");
    let rows = std::fs::read_to_string(&dataset).unwrap().lines().count() as u64;
    assert!(rows > 4, "{rows} rows");
    let server = common::recording_mock(2);
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type chat --input-file {} \
         --custom-dataset-type mooncake_trace --isl-block-size 64 --replay-speedup 1000 \
         --ui none --no-server-metrics --artifact-dir {}",
        server.addr,
        dataset.display(),
        dir.join("run").display(),
    ));
    let outcome = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((outcome.successes, outcome.errors), (rows, 0));
    server.stop();
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
        let mut truth = common::truth_of(&server, 2);
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
    assert_eq!(common::truth_of(&server, 1).len(), 1);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Please enter"));
    server.stop();
}

/// `--synthesis-*` inside `profile` (docs/commands.md, "Synthesis inside profile"): rows
/// outside the fixed-schedule window (on their recorded timestamps) and rows over
/// `--synthesis-max-isl` are dropped first; the rest are sent exactly as `ringperf synthesize`
/// reshapes them. The window [1000, 3000] with a speedup of 4 would keep nothing if it were
/// applied to the reshaped timestamps (250–750).
#[test]
fn profile_replays_the_trace_as_synthesize_reshapes_it() {
    let dir = scratch("synthesis-profile");
    let rows = [
        (0, 40, 9, "[1, 2, 3]"),
        (1000, 40, 7, "[1, 2, 4]"),
        (1500, 56, 12, "[1, 2, 5, 6]"),
        (
            2000,
            200,
            5,
            "[1, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]",
        ),
        (2500, 24, 30, "[1, 22]"),
        (3000, 33, 3, "[1, 19, 20]"),
        (4000, 40, 8, "[1, 2, 21]"),
    ];
    let line = |(ts, isl, osl, ids): (u64, u64, u64, &str)| {
        format!(
            r#"{{"timestamp": {ts}, "input_length": {isl}, "output_length": {osl}, "hash_ids": {ids}}}"#
        )
    };
    let all: Vec<String> = rows.iter().copied().map(line).collect();
    std::fs::write(dir.join("trace.jsonl"), all.join("\n") + "\n").unwrap();
    // By hand: the window keeps rows 2–6; max ISL 100 then drops row 4 (200 tokens).
    let kept: Vec<String> = [1, 2, 4, 5].iter().map(|&i| all[i].clone()).collect();
    std::fs::write(dir.join("kept.jsonl"), kept.join("\n") + "\n").unwrap();
    let synth = [
        "--synthesis-speedup-ratio",
        "4",
        "--synthesis-output-len-multiplier",
        "0.5",
        "--synthesis-prompt-len-multiplier",
        "2",
        "--synthesis-max-isl",
        "100",
        "--synthesis-max-osl",
        "5",
    ];
    let mut args = vec![
        "synthesize",
        "mooncake-trace",
        "--input-file",
        "kept.jsonl",
        "--output",
        "want.jsonl",
        "--block-size",
        "16",
    ];
    args.extend(synth);
    assert!(ringperf(&args, &dir).status.success());
    let want: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("want.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(want.len(), 4);

    let server = common::recording_mock(2);
    let cfg = common::config(&format!(
        "ringperf profile -m mock-model -u {} --endpoint-type chat --input-file {} \
         --custom-dataset-type mooncake_trace --isl-block-size 16 --fixed-schedule \
         --fixed-schedule-start-offset 1000 --fixed-schedule-end-offset 3000 \
         --ui none --no-server-metrics --artifact-dir {} {}",
        server.addr,
        dir.join("trace.jsonl").display(),
        dir.join("run").display(),
        synth.join(" ")
    ));
    let out = ringperf::run::run(cfg).expect("the run completes");
    assert_eq!((out.successes, out.errors), (4, 0));
    let mut sent: Vec<(u64, u64)> = server
        .truth()
        .entries()
        .iter()
        .map(|e| {
            let body: serde_json::Value =
                serde_json::from_slice(e.request_body.as_deref().unwrap()).unwrap();
            let max = body["max_completion_tokens"]
                .as_u64()
                .or(body["max_tokens"].as_u64())
                .expect("a token limit");
            (max, e.prompt_tokens)
        })
        .collect();
    let mut expected: Vec<(u64, u64)> = want
        .iter()
        .map(|r| {
            (
                r["output_length"].as_u64().unwrap(),
                r["input_length"].as_u64().unwrap(),
            )
        })
        .collect();
    sent.sort_unstable();
    expected.sort_unstable();
    // The mock counts the prompt's tokens again: a block's text may re-tokenize a token apart.
    for ((got_osl, got_isl), (want_osl, want_isl)) in sent.iter().zip(&expected) {
        assert_eq!(got_osl, want_osl, "{sent:?} against {expected:?}");
        assert!(
            got_isl.abs_diff(*want_isl) <= 4,
            "{sent:?} against {expected:?}"
        );
    }
    let export: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run/profile_export_aiperf.json")).unwrap())
            .unwrap();
    assert_eq!(
        export["input_config"]["datasets"][0]["synthesis"],
        serde_json::json!({"speedup_ratio": 4.0, "prompt_len_multiplier": 2.0,
            "output_len_multiplier": 0.5, "max_isl": 100, "max_osl": 5})
    );

    // Synthesis needs a trace, as AIPerf says.
    let refused = ringperf(
        &[
            "profile",
            "--mock",
            "--request-count",
            "1",
            "--synthesis-max-osl",
            "5",
        ],
        &dir,
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("only supported with trace datasets"),
        "{refused:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
