//! The promotion of a timestamped trace to a fixed schedule when a profile configuration is
//! resolved (docs/timing.md); the peek that decides it is tested beside it in ringperf-workload.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::config::timing::Mode;

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

/// The configuration of `ringperf profile -m m -u 127.0.0.1:1 --input-file FILE EXTRA`.
fn config(file: &Path, extra: &str) -> Config {
    let mut argv: Vec<String> = "ringperf profile -m m -u 127.0.0.1:1 --input-file"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    argv.push(file.display().to_string());
    argv.extend(extra.split_whitespace().map(str::to_string));
    Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false)
        .expect("valid configuration")
}

#[test]
fn a_timestamped_trace_promotes_the_run_to_a_fixed_schedule() {
    let tmp = tempfile::tempdir().unwrap();
    let stamped = write(
        tmp.path(),
        "stamped.jsonl",
        "{\"timestamp\": 0, \"input_length\": 5}\n{\"timestamp\": 50, \"input_length\": 5}\n\
         {\"timestamp\": 90, \"input_length\": 5}\n",
    );
    let c = config(&stamped, "--custom-dataset-type mooncake_trace");
    assert!(
        matches!(c.profiling.timing.mode, Mode::FixedSchedule(_)),
        "{:?}",
        c.profiling.timing.mode
    );
    // The whole trace: one request per record.
    assert_eq!(c.profiling.request_count, Some(3));
    assert_eq!(c.input_config()["phases"][0]["type"], "fixed_schedule");
    // Detected as a trace, the same.
    let c = config(&stamped, "");
    assert!(matches!(c.profiling.timing.mode, Mode::FixedSchedule(_)));

    // Not promoted: --no-fixed-schedule, or a first record without a timestamp.
    let c = config(&stamped, "--no-fixed-schedule");
    assert_eq!(c.profiling.timing.mode, Mode::Load);
    assert_eq!(c.profiling.request_count, Some(10));
    let late = write(
        tmp.path(),
        "late.jsonl",
        "{\"input_length\": 5}\n{\"timestamp\": 50, \"input_length\": 5}\n",
    );
    let c = config(&late, "--custom-dataset-type mooncake_trace");
    assert_eq!(c.profiling.timing.mode, Mode::Load);
    assert_eq!(c.input_config()["phases"][0]["type"], "concurrency");
}
