//! The binary's behaviour on bad input: one clear message, exit code 2, nothing half-written;
//! and secrets never reaching an artifact or the console.

use std::path::Path;
use std::process::{Command, Output};

fn ringperf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_usage_error(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "exit code for: {}", stderr(o));
    let e = stderr(o);
    assert!(e.contains(needle), "message should name `{needle}`: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn wrong_flags_and_values() {
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--no-such-flag"]),
        "--no-such-flag",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--concurrency", "abc"]),
        "abc",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--request-rate", "-5"]),
        "--request-rate must be a positive number",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--hf-subset", "a"]),
        "--hf-subset",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--custom-dataset-type", "single_turn"]),
        "--custom-dataset-type needs --input-file",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--endpoint-type", "image-edits"]),
        "image-edits",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "--failed-request-threshold", "1.5"]),
        "1.5",
    );
}

#[test]
fn urls_that_do_not_resolve_or_are_unsupported() {
    assert_usage_error(
        &ringperf(&[
            "profile",
            "-m",
            "x",
            "-u",
            "http://no-such-host.invalid:8000",
        ]),
        "cannot resolve",
    );
    assert_usage_error(
        &ringperf(&["profile", "-m", "x", "-u", "ftp://127.0.0.1:8443"]),
        "unsupported scheme `ftp`",
    );
}

#[test]
fn missing_tokenizer_names_the_paths_it_tried() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope").join("tokenizer.json");
    let o = ringperf(&[
        "profile",
        "--mock",
        "--tokenizer",
        missing.to_str().unwrap(),
        "--ui",
        "none",
        "--artifact-dir",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert_usage_error(&o, "nope");
    assert!(
        !dir.path()
            .join("out")
            .join("profile_export_aiperf.json")
            .exists(),
        "nothing written"
    );
}

#[test]
fn unwritable_artifact_dir() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the directory should be.
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let o = ringperf(&[
        "profile",
        "--mock",
        "--request-count",
        "2",
        "--ui",
        "none",
        "--artifact-dir",
        file.join("sub").to_str().unwrap(),
    ]);
    assert_usage_error(&o, "artifact directory");
}

fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn planted_api_key_never_appears_in_artifacts_or_console() {
    const KEY: &str = "sk-planted-4f9c1e2d7b";
    const HDR: &str = "hdr-secret-88aa77";
    let dir = tempfile::tempdir().unwrap();
    let o = ringperf(&[
        "profile",
        "--mock",
        "--streaming",
        "--request-count",
        "4",
        "--concurrency",
        "2",
        "--api-key",
        KEY,
        "-H",
        &format!("X-Api-Key:{HDR}"),
        "--ui",
        "none",
        "--artifact-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let console = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(console.contains("CLI Command:"), "{console}");
    for secret in [KEY, HDR] {
        assert!(!console.contains(secret), "console leaks {secret}");
    }
    let mut files = Vec::new();
    walk(dir.path(), &mut files);
    assert!(files.len() >= 4, "{files:?}");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for secret in [KEY, HDR] {
            assert!(!text.contains(secret), "{} leaks {secret}", f.display());
        }
    }
}

/// AIPerf's parser reads enum values case-insensitively (`--ui-type None` in its own echoed
/// command lines, `--arrival-pattern Poisson`, `--log-level DEBUG`…); so does ringperf's, and
/// the run echoes what it resolved.
#[test]
fn enum_values_are_case_insensitive() {
    let dir = tempfile::tempdir().unwrap();
    let o = ringperf(&[
        "profile",
        "--mock",
        "--request-count",
        "2",
        "--request-rate",
        "200",
        "--arrival-pattern",
        "Poisson",
        "--log-level",
        "DEBUG",
        "--ui-type",
        "None",
        "--export-level",
        "RAW",
        "--endpoint-type",
        "CHAT",
        "--connection-reuse-strategy",
        "NEVER",
        "--server-metrics-formats",
        "JSON",
        "--io-driver",
        "Legacy",
        "--tokenizer",
        "builtin",
        "--artifact-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("profile_export_aiperf.json")).unwrap(),
    )
    .unwrap();
    let ic = &doc["input_config"];
    assert_eq!(ic["phases"][0]["type"], "poisson");
    assert_eq!(ic["logging"]["level"], "DEBUG");
    assert_eq!(ic["runtime"]["ui"], "none");
    assert_eq!(ic["artifacts"]["raw"], true);
    assert_eq!(ic["endpoint"]["type"], "chat");
    assert_eq!(ic["endpoint"]["connection_reuse"], "never");
    assert_eq!(ic["server_metrics"]["formats"], serde_json::json!(["json"]));
    assert_eq!(ic["ringperf"]["io_driver"], "legacy");
    assert!(dir.path().join("profile_export_raw.jsonl").exists());
}

/// `--benchmark-grace-period` only applies after `--benchmark-duration`; AIPerf refuses it
/// alone, and so does ringperf (exit 2), even at its default value.
#[test]
fn grace_period_without_duration_is_refused() {
    for g in ["5", "30"] {
        assert_usage_error(
            &ringperf(&["profile", "--mock", "--benchmark-grace-period", g]),
            "--benchmark-grace-period requires --benchmark-duration",
        );
    }
}

/// `--warmup-grace-period` is a tail on a duration-bounded warmup: AIPerf 0.13 refuses it alone
/// and with a count- or session-bounded warmup, and so does ringperf (exit 2).
#[test]
fn warmup_grace_period_without_warmup_duration_is_refused() {
    for extra in [
        &[][..],
        &["--warmup-request-count", "4"][..],
        &["--num-warmup-sessions", "2"][..],
    ] {
        let mut argv = vec!["profile", "--mock", "--warmup-grace-period", "5"];
        argv.extend_from_slice(extra);
        assert_usage_error(
            &ringperf(&argv),
            "--warmup-grace-period requires --warmup-duration",
        );
    }
}

/// Values clap would only call "unexpected" or "invalid digit" get a message saying what is
/// wrong: a negative rate reaches the rate's own check, a bad element of a sweep's list is
/// named, a typo gets the closest flag.
#[test]
fn messages_say_what_is_wrong() {
    assert_usage_error(
        &ringperf(&["profile", "--mock", "--request-rate", "-1"]),
        "--request-rate must be a positive number",
    );
    // A list is a sweep (tests/it/sweep.rs); a bad element in it is named.
    for (flag, v, msg) in [
        (
            "--concurrency",
            "1,x",
            "`x` in the list is not a non-negative whole number",
        ),
        (
            "--request-rate",
            "1,abc",
            "`abc` in the list is not a finite number",
        ),
        (
            "--request-count",
            "10,-2",
            "`-2` in the list is not a non-negative whole number",
        ),
        (
            "--isl",
            "128,",
            "`` in the list is not a non-negative whole number",
        ),
    ] {
        let o = ringperf(&["profile", "--mock", flag, v]);
        assert_usage_error(&o, &format!("{flag}: {msg}"));
    }
    assert_usage_error(
        &ringperf(&["profile", "--mock", "--concurrency", "-1"]),
        "`-1` must be a non-negative whole number",
    );
    assert_usage_error(
        &ringperf(&["profile", "--mock", "--concurency", "2"]),
        "a similar argument exists: '--concurrency'",
    );
}

/// `--endpoint-type template`: no template, a template that does not compile, a path outside
/// the supported JMESPath subset, and a rendering that is not JSON all stop before any request
/// with exit code 2 and say why.
#[test]
fn template_errors_are_setup_errors() {
    let dir = tempfile::tempdir().unwrap();
    let art = dir.path().display().to_string();
    let base = [
        "profile",
        "-m",
        "mock-model",
        "--mock",
        "--endpoint-type",
        "template",
        "--request-count",
        "2",
        "--ui",
        "none",
        "--no-server-metrics",
        "--artifact-dir",
        &art,
    ];
    let with = |extra: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        ringperf(&args)
    };
    assert_usage_error(&with(&[]), "needs `--extra-inputs payload_template:<T>`");
    assert_usage_error(
        &with(&["--extra-inputs", "payload_template:{{text"]),
        "payload_template: the payload template does not compile",
    );
    assert_usage_error(
        &with(&[
            "--extra-inputs",
            "payload_template:nv-embedqa",
            "--extra-inputs",
            "response_field:data[*].embedding",
        ]),
        "response_field `data[*].embedding`",
    );
    let o = with(&["--extra-inputs", "payload_template:prompt={{text}}"]);
    assert_usage_error(&o, "did not render valid JSON");
    assert!(stderr(&o).contains("turn 0"), "{}", stderr(&o));
    assert!(
        !dir.path().join("profile_export.jsonl").exists(),
        "nothing was sent"
    );
}

/// `raw`'s `response_field` outside ringperf's JMESPath subset stops the run before any request
/// (exit 2) and says which path and why.
#[test]
fn raw_response_field_outside_the_subset_is_refused() {
    assert_usage_error(
        &ringperf(&[
            "profile",
            "--mock",
            "--endpoint-type",
            "raw",
            "--extra-inputs",
            "response_field:data[*].embedding",
        ]),
        "response_field `data[*].embedding`",
    );
}

/// The binary against `server`, as a child: chat, builtin tokenizer, no collectors.
fn profile_against(server: &ringperf_mock::mock::MockServer, dir: &Path, flags: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "-m", "mock-model", "--tokenizer", "builtin"])
        .args(["--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"])
        .arg("--url")
        .arg(format!("http://{}", server.addr))
        .arg("--artifact-dir")
        .arg(dir)
        .args(flags)
        .output()
        .expect("binary runs")
}

/// Issue #22: `--isl 32 --osl 8` with `--input-file` ran with the ISL ignored. It is refused
/// (AIPerf refuses it too) before anything is sent: the mock's truth log stays empty.
#[test]
fn synthetic_prompt_flags_with_an_input_file_are_refused_before_sending() {
    let server = crate::common::recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prompts.jsonl");
    std::fs::write(&file, "{\"text\":\"hello there\"}\n{\"text\":\"bye\"}\n").unwrap();
    let out = profile_against(
        &server,
        &dir.path().join("a"),
        &[
            "--input-file",
            file.to_str().unwrap(),
            "--custom-dataset-type",
            "single_turn",
            "--request-count",
            "2",
            "--isl",
            "32",
            "--osl",
            "8",
        ],
    );
    assert_usage_error(&out, "--isl shapes synthetic prompts only");
    assert_eq!(server.truth().entries().len(), 0, "nothing was sent");
    // The same file without --isl runs, --osl kept as the records' output length.
    let out = profile_against(
        &server,
        &dir.path().join("b"),
        &[
            "--input-file",
            file.to_str().unwrap(),
            "--custom-dataset-type",
            "single_turn",
            "--request-count",
            "2",
            "--osl",
            "8",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    assert_eq!(server.truth().entries().len(), 2);
}

/// Issue #22: `--streaming` with embeddings was dropped without a word. AIPerf warns and turns
/// it off; so does ringperf, in one line, and the mock sees requests that do not stream.
#[test]
fn streaming_on_an_endpoint_that_cannot_stream_is_one_warning_line() {
    let server = crate::common::recording_mock(4);
    let dir = tempfile::tempdir().unwrap();
    let out = profile_against(
        &server,
        dir.path(),
        &[
            "--endpoint-type",
            "embeddings",
            "--streaming",
            "--request-count",
            "3",
        ],
    );
    let e = stderr(&out);
    assert!(out.status.success(), "{e}");
    let warnings: Vec<&str> = e.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{e}");
    assert!(
        warnings[0].starts_with("ringperf: warning: --streaming has no effect")
            && warnings[0].contains("embeddings cannot stream"),
        "{e}"
    );
    let entries = server.truth().entries();
    assert_eq!(entries.len(), 3);
    for t in entries.iter() {
        assert!(!t.stream, "sent without streaming");
        let body: serde_json::Value =
            serde_json::from_slice(t.request_body.as_deref().expect("body kept")).unwrap();
        assert_ne!(body["stream"], serde_json::json!(true), "{body}");
    }
}
