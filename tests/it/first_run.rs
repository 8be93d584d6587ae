//! What a new user sees on a first run and a second one into the same directory (#9 item 6):
//! the notes on stderr without a terminal, the footer's file list, and an earlier run's files
//! removed rather than left beside the new ones.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the binary with stdout and stderr piped: no terminal, as under CI or `| tee`.
fn profile(dir: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args(["profile", "--mock", "--streaming", "--concurrency", "2"])
        .args([
            "--request-count",
            "6",
            "--mock-ttft-ms",
            "0",
            "--mock-itl-ms",
            "0",
        ])
        .arg("--artifact-dir")
        .arg(dir)
        .args(extra)
        // A short flush period keeps the test quick; the note says how long the run waits.
        .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.5")
        .output()
        .expect("binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn benchmark_id(dir: &Path) -> String {
    let v: Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile_export_aiperf.json")).unwrap())
            .unwrap();
    v["benchmark_id"].as_str().unwrap().to_string()
}

#[test]
fn a_second_run_replaces_the_first_runs_files_and_every_step_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");

    // First run: every default export, server metrics from the mock, and a warmup (so per-phase
    // files too).
    let first = profile(&dir, &["--warmup-request-count", "2"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let err = text(&first.stderr);
    assert!(
        err.contains("ringperf: embedded mock server listening on http://127.0.0.1:"),
        "without a terminal stderr still says where the mock listens: {err}"
    );
    assert!(
        err.contains("for the final server-metrics scrape"),
        "the wait for the final scrape is said: {err}"
    );
    assert!(
        !err.contains("removed"),
        "a fresh directory has nothing to remove: {err}"
    );
    let out = text(&first.stdout);
    for (label, file) in [
        ("Records Export", "profile_export.jsonl"),
        ("Console Export", "profile_export_console.txt"),
        ("Server Metrics CSV Export", "server_metrics_export.csv"),
    ] {
        let line = format!("{label}: {}", dir.join(file).display());
        assert!(out.contains(&line), "footer has `{line}`: {out}");
        assert!(dir.join(file).exists(), "{file} was written");
    }
    let first_id = benchmark_id(&dir);
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();

    // Second run into the same directory, writing less: nothing of the first may remain.
    let second = profile(
        &dir,
        &[
            "--export-level",
            "summary",
            "--no-server-metrics",
            "--workers-max",
            "1",
        ],
    );
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    let err = text(&second.stderr);
    let note = err
        .lines()
        .find(|l| l.contains("of an earlier run from"))
        .unwrap_or_else(|| panic!("the removal is said: {err}"));
    for gone in [
        "profile_export.jsonl",
        "server_metrics_export.csv",
        "server_metrics_export.json",
        "phases/profiling/server_metrics.json",
    ] {
        assert!(
            !dir.join(gone).exists(),
            "{gone} of the first run was removed"
        );
        assert!(note.contains(gone), "the note names {gone}: {note}");
    }
    assert!(!note.contains("notes.txt"), "{note}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "mine"
    );
    // What is there now is the second run's.
    assert_ne!(benchmark_id(&dir), first_id);
    let out = text(&second.stdout);
    assert!(!out.contains("Records Export"), "{out}");
    assert!(
        out.contains("(1 worker, "),
        "one worker is `1 worker`: {out}"
    );
    assert!(!err.contains("Some("), "no internal wording: {err}");
}

/// Beside AIPerf on the same run (AIPerf 0.13's own console file,
/// tests/data/aiperf-multiphase/artifacts/profile_export_console.txt): the tables in its order
/// (Effective, Active, Usage, then the main table); with a relative `--artifact-dir`, every
/// footer path and `input_config.artifacts.dir` absolute, as AIPerf prints and echoes them.
#[test]
fn tables_in_aiperfs_order_and_paths_absolute() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .current_dir(tmp.path())
        .args(["profile", "--mock", "--streaming", "--request-count", "4"])
        .args([
            "--mock-ttft-ms",
            "0",
            "--mock-itl-ms",
            "0",
            "--no-server-metrics",
        ])
        .args(["--artifact-dir", "rel/run"])
        .output()
        .expect("binary runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let titles = |console: &str, brand: &str| -> Vec<String> {
        console
            .lines()
            .filter_map(|l| l.trim().strip_prefix(brand).map(str::to_owned))
            .collect()
    };
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/aiperf-multiphase");
    let theirs =
        std::fs::read_to_string(data.join("artifacts/profile_export_console.txt")).unwrap();
    let ours = text(&out.stdout);
    assert_eq!(
        titles(&ours, "ringperf | "),
        titles(&theirs, "NVIDIA AIPerf | "),
        "{ours}"
    );
    let dir = tmp.path().join("rel/run");
    let footer: Vec<&str> = ours.lines().filter(|l| l.contains(" Export: ")).collect();
    assert!(!footer.is_empty(), "{ours}");
    for l in footer {
        let path = l.split_once(": ").unwrap().1;
        assert!(
            Path::new(path).is_absolute() && Path::new(path).starts_with(&dir),
            "{l}"
        );
    }
    let j: Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile_export_aiperf.json")).unwrap())
            .unwrap();
    assert_eq!(
        j["input_config"]["artifacts"]["dir"],
        dir.display().to_string()
    );
    // `--mock` without a model runs `mock-model` on the builtin tokenizer, which AIPerf's run of
    // the same benchmark names (`--tokenizer builtin`).
    assert_eq!(j["input_config"]["tokenizer"]["name"], "builtin");
}
