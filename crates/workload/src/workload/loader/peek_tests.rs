//! [`peek_trace`], the one place that decides AIPerf's trace auto-promotion (a trace whose first
//! record has a `timestamp` is replayed on a fixed schedule, docs/timing.md). The promotion it
//! drives when a profile configuration is resolved is tested in the binary's
//! `config/promotion_tests.rs`.

use std::path::{Path, PathBuf};

use super::{DatasetKind, peek_trace};

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn the_repository_trace_is_timestamped_with_seven_records() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/datasets/mooncake_trace.jsonl");
    assert_eq!(
        peek_trace(&path, Some(DatasetKind::MooncakeTrace)),
        Some((true, 7))
    );
    // Detected as a trace from its first record when no type is given.
    assert_eq!(peek_trace(&path, None), Some((true, 7)));
}

#[test]
fn only_the_first_record_decides_and_every_record_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = Some(DatasetKind::MooncakeTrace);
    let p = write(
        tmp.path(),
        "late.jsonl",
        "{\"input_length\": 5}\n{\"timestamp\": 10, \"input_length\": 5}\n",
    );
    assert_eq!(peek_trace(&p, trace), Some((false, 2)));
    let p = write(
        tmp.path(),
        "first.jsonl",
        "{\"timestamp\": 0, \"input_length\": 5}\n{\"input_length\": 5}\n{\"input_length\": 6}\n",
    );
    assert_eq!(peek_trace(&p, trace), Some((true, 3)));
    // A null timestamp is none; blank lines are not records.
    let p = write(
        tmp.path(),
        "null.jsonl",
        "\n  \n{\"timestamp\": null, \"input_length\": 5}\n\n{\"timestamp\": 3, \"input_length\": 5}\n",
    );
    assert_eq!(peek_trace(&p, trace), Some((false, 2)));
    // A first record without a trailing newline still counts.
    let p = write(
        tmp.path(),
        "one.jsonl",
        "{\"timestamp\": 7, \"input_length\": 5}",
    );
    assert_eq!(peek_trace(&p, trace), Some((true, 1)));
}

#[test]
fn nothing_to_say_of_other_types_or_unreadable_files() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "{\"timestamp\": 0, \"text\": \"hi\"}\n";
    let p = write(tmp.path(), "single.jsonl", body);
    // Given as a non-trace type, a timestamp does not promote.
    assert_eq!(peek_trace(&p, Some(DatasetKind::SingleTurn)), None);
    // Detected as single_turn (a `text` field): not a trace either.
    assert_eq!(peek_trace(&p, None), None);
    let missing = tmp.path().join("missing.jsonl");
    assert_eq!(peek_trace(&missing, Some(DatasetKind::MooncakeTrace)), None);
    assert_eq!(
        peek_trace(tmp.path(), Some(DatasetKind::MooncakeTrace)),
        None
    );
    let empty = write(tmp.path(), "empty.jsonl", "\n\n");
    assert_eq!(peek_trace(&empty, Some(DatasetKind::MooncakeTrace)), None);
    // A first record that is not JSON: the load reports it, the peek says nothing.
    let bad = write(tmp.path(), "bad.jsonl", "{\"timestamp\": 0,\n");
    assert_eq!(peek_trace(&bad, Some(DatasetKind::MooncakeTrace)), None);
}
