//! The loader against Parquet files written here (no public Baseten trace exists), with the
//! vectors of AIPerf's own timing rules.

use super::*;
use arrow_array::builder::{Int64Builder, ListBuilder};
use arrow_array::{Int64Array, StringArray};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use std::sync::Arc;

/// A row to write: time, prompt, input and output tokens, hashes, session, e2e duration.
type R<'a> = (
    i64,
    &'a str,
    i64,
    i64,
    &'a [i64],
    Option<&'a str>,
    Option<i64>,
);

fn write(dir: &Path, name: &str, rows: &[R<'_>], with_session: bool) -> std::path::PathBuf {
    let mut fields = vec![
        Field::new("timestamp_start_unix_ms", DataType::Int64, false),
        Field::new("prompt", DataType::Utf8, false),
        Field::new("input_tokens", DataType::Int64, false),
        Field::new("output_tokens", DataType::Int64, false),
        Field::new(
            "total_hashes",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            true,
        ),
        Field::new("block_size", DataType::Int64, true),
        Field::new("duration_e2e_ms", DataType::Int64, true),
    ];
    let mut hashes = ListBuilder::new(Int64Builder::new());
    for r in rows {
        if r.4.is_empty() {
            hashes.append(false);
        } else {
            hashes.values().append_slice(r.4);
            hashes.append(true);
        }
    }
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.3))),
        Arc::new(hashes.finish()),
        Arc::new(Int64Array::from_iter(
            rows.iter().map(|r| (!r.4.is_empty()).then_some(64)),
        )),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.6))),
    ];
    if with_session {
        fields.push(Field::new("provided_session_id", DataType::Utf8, true));
        columns.push(Arc::new(StringArray::from_iter(rows.iter().map(|r| r.5))));
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    let path = dir.join(name);
    if name.ends_with(".arrow") {
        let mut w =
            arrow_ipc::writer::FileWriter::try_new(File::create(&path).unwrap(), &batch.schema())
                .unwrap();
        w.write(&batch).unwrap();
        w.finish().unwrap();
        return path;
    }
    write_parquet(&path, &batch);
    path
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

const ROWS: &[R<'static>] = &[
    (1_000_500, "B first", 10, 5, &[], Some("B"), Some(700)),
    (
        1_000_000,
        "A first",
        100,
        50,
        &[10, 11],
        Some("A"),
        Some(800),
    ),
    (
        1_003_000,
        "A second",
        120,
        0,
        &[10, 11, 12],
        Some("A"),
        Some(900),
    ),
    (1_003_500, "A third", 130, 7, &[], Some("A"), None),
    (1_062_000, "lonely", 1, 1, &[], None, None),
];

fn load_with(p: &BasetenParams, rows: &[R<'_>], session: bool) -> Result<Dataset, LoadError> {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.parquet", rows, session);
    assert!(detect(&path));
    load(&path, p, &mut SessionIds::new(true), Some(7))
}

fn texts(c: &Conversation) -> Vec<String> {
    c.turns
        .iter()
        .map(|t| match &t.content {
            ringperf_wire::conversation::Content::Texts(v) => v.join("|"),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn open_loop_keeps_every_turn_at_its_recorded_time() {
    let d = load_with(&BasetenParams::default(), ROWS, true).unwrap();
    let ids: Vec<&str> = d
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    // Sessions by their first time: A (0 ms), B (500 ms), the row without one (61,000 ms).
    assert_eq!(ids, ["A", "B", "session_000000"]);
    let a = &d.conversations[0];
    assert_eq!(texts(a), ["A first", "A second", "A third"]);
    let times: Vec<Option<f64>> = a.turns.iter().map(|t| t.timestamp_ms).collect();
    assert_eq!(times, [Some(0.0), Some(3000.0), Some(3500.0)]);
    // An answer of 0 tokens asks for 1; `min_tokens` follows; the hints as recorded.
    let asked: Vec<Option<u32>> = a.turns.iter().map(|t| t.max_tokens).collect();
    assert_eq!(asked, [Some(50), Some(1), Some(7)]);
    assert_eq!(
        Value::Object(a.turns[0].extra.clone()),
        serde_json::json!({"min_tokens": 50, "hash_ids": [10, 11], "block_size": 64})
    );
    assert_eq!(
        Value::Object(a.turns[2].extra.clone()),
        serde_json::json!({"min_tokens": 7})
    );
    assert_eq!(
        a.agent.as_ref().map(|x| x.context),
        Some(ContextMode::Standalone)
    );
    // A single-turn session has no context to speak of.
    assert!(d.conversations[1].agent.is_none());
    assert!(d.replay);
}

#[test]
fn an_arrow_ipc_file_is_read_as_its_parquet_twin() {
    let dir = tempfile::tempdir().unwrap();
    let parquet = write(dir.path(), "t.parquet", ROWS, true);
    let arrow = write(dir.path(), "t.arrow", ROWS, true);
    assert!(detect(&arrow));
    assert_eq!(rows(&arrow), Some(5));
    let p = BasetenParams::default();
    let a = load(&arrow, &p, &mut SessionIds::new(true), Some(7)).unwrap();
    let b = load(&parquet, &p, &mut SessionIds::new(true), Some(7)).unwrap();
    assert_eq!(a, b);
    // Another name is not a Baseten file; a `.arrow` that is not Arrow says so.
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "x").unwrap();
    assert!(!detect(&csv));
    let e = load(&csv, &p, &mut SessionIds::new(true), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Parquet (.parquet) or Arrow IPC (.arrow, .ipc)"),
        "{e}"
    );
    let bad = dir.path().join("bad.ipc");
    std::fs::write(&bad, "not arrow").unwrap();
    let e = load(&bad, &p, &mut SessionIds::new(true), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a readable Arrow IPC file"), "{e}");
}

#[test]
fn kv_hints_and_min_tokens_can_be_left_out() {
    let p = BasetenParams {
        omit_kv_hints: true,
        force_min_tokens: false,
        ..BasetenParams::default()
    };
    let d = load_with(&p, ROWS, true).unwrap();
    assert!(
        d.conversations
            .iter()
            .flat_map(|c| &c.turns)
            .all(|t| t.extra.is_empty())
    );
}

#[test]
fn the_idle_gap_cap_reflows_as_aiperf_does() {
    // AIPerf's vector: a cap of 5 s.
    assert_eq!(
        reflow_idle_gaps(&[0.0, 1000.0, 61000.0, 62000.0, 62500.0], 5000.0),
        [0.0, 1000.0, 6000.0, 7000.0, 7500.0]
    );
    // Any order in, same order out; ties kept.
    assert_eq!(
        reflow_idle_gaps(&[62000.0, 0.0, 62000.0], 5000.0),
        [5000.0, 0.0, 5000.0]
    );
    let p = BasetenParams {
        idle_gap_cap_s: Some(5.0),
        ..BasetenParams::default()
    };
    let d = load_with(&p, ROWS, true).unwrap();
    let lonely = &d.conversations[2].turns[0];
    // 3,500 ms (A's third) + 58,500 ms of dead air cut to 5,000.
    assert_eq!(lonely.timestamp_ms, Some(8500.0));
}

#[test]
fn closed_loop_waits_the_gap_less_the_recorded_duration() {
    let p = BasetenParams {
        open_loop: false,
        ..BasetenParams::default()
    };
    let d = load_with(&p, ROWS, true).unwrap();
    let a = &d.conversations[0];
    // AIPerf's vector: starts 0, 3000, 3500 with durations 800, 900: waits 2200 and 0.
    let timing: Vec<(Option<f64>, Option<f64>)> = a
        .turns
        .iter()
        .map(|t| (t.timestamp_ms, t.delay_ms))
        .collect();
    assert_eq!(
        timing,
        [(Some(0.0), None), (None, Some(2200.0)), (None, Some(0.0))]
    );
    let capped = BasetenParams {
        open_loop: false,
        delay_cap_s: Some(1.0),
        ..BasetenParams::default()
    };
    let d = load_with(&capped, ROWS, true).unwrap();
    assert_eq!(d.conversations[0].turns[1].delay_ms, Some(1000.0));
    // With a speedup the rules see compressed times and durations (waits 1500 − 400 = 1100 ms
    // at speed 2, capped at 1 s), kept in trace time for the schedule to divide.
    let fast = BasetenParams {
        open_loop: false,
        speedup: 2.0,
        delay_cap_s: Some(1.0),
        ..BasetenParams::default()
    };
    let d = load_with(&fast, ROWS, true).unwrap();
    assert_eq!(d.conversations[0].turns[1].delay_ms, Some(2000.0));
    assert_eq!(d.conversations[1].turns[0].timestamp_ms, Some(500.0));
}

#[test]
fn strict_open_loop_makes_every_row_a_session() {
    let p = BasetenParams {
        strict: true,
        ..BasetenParams::default()
    };
    let d = load_with(&p, ROWS, true).unwrap();
    let ids: Vec<&str> = d
        .conversations
        .iter()
        .map(|c| c.session_id.as_str())
        .collect();
    assert_eq!(ids, ["A#0", "A#1", "A#2", "B#0", "session_000000#0"]);
    assert!(
        d.conversations
            .iter()
            .all(|c| c.turns.len() == 1 && c.agent.is_none())
    );
    assert_eq!(d.conversations[1].turns[0].timestamp_ms, Some(3000.0));
}

#[test]
fn sampling_keeps_whole_sessions() {
    let mut rows: Vec<R<'_>> = Vec::new();
    let names: Vec<String> = (0..40).map(|i| format!("s{i:02}")).collect();
    for (i, n) in names.iter().enumerate() {
        for k in 0..3 {
            rows.push((i as i64 * 100 + k, "p", 1, 1, &[], Some(n.as_str()), None));
        }
    }
    let p = BasetenParams {
        sample_ratio: Some(0.5),
        ..BasetenParams::default()
    };
    let d = load_with(&p, &rows, true).unwrap();
    let n = d.conversations.len();
    assert!((8..=32).contains(&n), "{n} of 40 sessions kept at 0.5");
    assert!(d.conversations.iter().all(|c| c.turns.len() == 3));
    // The same seed keeps the same sessions.
    let again = load_with(&p, &rows, true).unwrap();
    assert_eq!(d, again);
    // A tiny ratio still keeps one.
    let tiny = BasetenParams {
        sample_ratio: Some(1e-9),
        ..BasetenParams::default()
    };
    assert_eq!(
        load_with(&tiny, &rows, true).unwrap().conversations.len(),
        1
    );
    // Without a session column there is nothing to sample by: every row is kept.
    let d = load_with(&p, &rows, false).unwrap();
    assert_eq!(d.conversations.len(), 120);
}

#[test]
fn bad_files_and_rows_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let negative: &[R<'_>] = &[(5, "x", -1, 1, &[], None, None)];
    let path = write(dir.path(), "neg.parquet", negative, false);
    let e = load(
        &path,
        &BasetenParams::default(),
        &mut SessionIds::new(true),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(":1: field \"input_tokens\": must be at least 0, got -1"),
        "{e}"
    );
    // A file without a required column.
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "prompt",
            DataType::Utf8,
            false,
        )])),
        vec![Arc::new(StringArray::from(vec!["x"])) as ArrayRef],
    )
    .unwrap();
    let path = dir.path().join("cols.parquet");
    write_parquet(&path, &batch);
    assert!(!detect(&path));
    let e = load(
        &path,
        &BasetenParams::default(),
        &mut SessionIds::new(true),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("missing column(s) timestamp_start_unix_ms, input_tokens, output_tokens"),
        "{e}"
    );
    // A prompt that is not text.
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(
            REQUIRED
                .iter()
                .map(|c| Field::new(*c, DataType::Int64, false))
                .collect::<Vec<_>>(),
        )),
        (0..4)
            .map(|_| Arc::new(Int64Array::from(vec![1])) as ArrayRef)
            .collect(),
    )
    .unwrap();
    let path = dir.path().join("types.parquet");
    write_parquet(&path, &batch);
    let e = load(
        &path,
        &BasetenParams::default(),
        &mut SessionIds::new(true),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("field \"prompt\": expected a string"), "{e}");
    // Not Parquet at all.
    let path = dir.path().join("text.parquet");
    std::fs::write(&path, "not parquet").unwrap();
    assert!(!detect(&path));
    let e = load(
        &path,
        &BasetenParams::default(),
        &mut SessionIds::new(true),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a readable Parquet file"), "{e}");
    // No rows.
    let path = write(dir.path(), "empty.parquet", &[], true);
    let e = load(
        &path,
        &BasetenParams::default(),
        &mut SessionIds::new(true),
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind, LoadErrorKind::Empty);
}
