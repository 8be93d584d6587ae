//! `baseten_trace`: Baseten's completion traces, one request per row of a Parquet or Arrow IPC
//! file (docs/datasets.md, "baseten_trace"), read as AIPerf 0.13 reads them.
//!
//! Columns: `timestamp_start_unix_ms`, `prompt`, `input_tokens`, `output_tokens` (required);
//! `total_hashes` (the KV-cache block hashes), `block_size`, a session column
//! (`provided_session_id`, else `poor_man_session_id`; `AIPERF_DATASET_BASETEN_SESSION_COLUMN`
//! picks the first one looked for), `duration_e2e_ms` (optional). The prompt is sent verbatim,
//! the recorded output length asked for (`max_tokens`, and `min_tokens` unless
//! `--no-force-min-tokens`), the hashes and block size forwarded as body fields unless
//! `--omit-kv-hints`.
//!
//! Timing: each row's start, counted from the file's first, divided by `--replay-speedup`.
//! Open loop (the default) keeps every turn at its recorded time; `--open-loop-strict` makes
//! every row a session of its own; `--no-open-loop-replay` sends a session's later turns after
//! the previous answer, waiting the recorded gap less the previous request's recorded duration
//! (capped by `--inter-turn-delay-cap-seconds`). `--max-idle-gap-cap-seconds` shortens every
//! gap between consecutive starts to the cap (open loop: every row; closed loop: the sessions'
//! starts). `--trace-session-sample-ratio` keeps each session (and each row without one) with
//! that probability.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{Map, Value};

use super::error::{LoadError, LoadErrorKind};
use super::session::SessionIds;
use ringperf_wire::conversation::{
    AgentConversation, ContextMode, Conversation, Dataset, Sampling, Turn,
};

/// The columns every row must have.
pub const REQUIRED: [&str; 4] = [
    "timestamp_start_unix_ms",
    "prompt",
    "input_tokens",
    "output_tokens",
];
const SESSION: &str = "provided_session_id";
const POOR_MAN_SESSION: &str = "poor_man_session_id";
/// AIPerf's `AIPERF_DATASET_BASETEN_SESSION_COLUMN`: the session column looked for first.
pub const SESSION_COLUMN_VAR: &str = "AIPERF_DATASET_BASETEN_SESSION_COLUMN";

/// How a Baseten trace is replayed (the loader's flags).
#[derive(Clone, Debug, PartialEq)]
pub struct BasetenParams {
    /// `--trace-session-sample-ratio` (0 < r ≤ 1): each session kept with this probability.
    pub sample_ratio: Option<f64>,
    /// `--max-idle-gap-cap-seconds`: no gap between consecutive starts longer than this.
    pub idle_gap_cap_s: Option<f64>,
    /// `--open-loop-replay` (default) / `--no-open-loop-replay`.
    pub open_loop: bool,
    /// `--open-loop-strict`: every row its own single-turn session.
    pub strict: bool,
    /// `--omit-kv-hints`: no `hash_ids` / `block_size` in the body.
    pub omit_kv_hints: bool,
    /// `--force-min-tokens` (default): `min_tokens` = the recorded output length.
    pub force_min_tokens: bool,
    /// `--inter-turn-delay-cap-seconds`: closed loop's waits at most this.
    pub delay_cap_s: Option<f64>,
    /// `--replay-speedup`: the timing rules (idle-gap cap, closed loop's waits and their cap)
    /// apply to the sped-up times, as AIPerf's; the turns keep trace time (the fixed schedule
    /// divides by the speedup).
    pub speedup: f64,
    /// `--synthesis-max-isl`: rows of more recorded input tokens are left out.
    pub max_isl: Option<u64>,
    /// `--synthesis-max-osl`: no turn asks for more output tokens.
    pub max_osl: Option<u64>,
    /// The session column looked for first ([`SESSION_COLUMN_VAR`]; `provided_session_id`).
    pub session_column: String,
}

impl Default for BasetenParams {
    fn default() -> Self {
        Self {
            sample_ratio: None,
            idle_gap_cap_s: None,
            open_loop: true,
            strict: false,
            omit_kv_hints: false,
            force_min_tokens: true,
            delay_cap_s: None,
            speedup: 1.0,
            max_isl: None,
            max_osl: None,
            session_column: SESSION.to_owned(),
        }
    }
}

/// One row, as read.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    ts: u64,
    prompt: String,
    input_tokens: u64,
    output_tokens: u64,
    hashes: Vec<u64>,
    block_size: Option<u64>,
    session: Option<String>,
    e2e_ms: Option<u64>,
}

/// One row on its way to a turn: its normalized time (ms), delay and output length.
#[derive(Clone, Debug)]
struct Trace {
    row: Row,
    timestamp: Option<f64>,
    delay: Option<f64>,
    output_length: u64,
}

fn invalid(path: &Path, why: impl Into<String>) -> LoadError {
    LoadError::file(path, LoadErrorKind::Invalid(why.into()))
}

/// What a file holds, by its name: Parquet, an Arrow IPC file (`.arrow`, `.ipc`), or neither.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Parquet,
    ArrowIpc,
}

fn format_of(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "parquet" => Some(Format::Parquet),
        "arrow" | "ipc" => Some(Format::ArrowIpc),
        _ => None,
    }
}

/// The file's schema and its batches.
type Batches = (
    arrow_schema::SchemaRef,
    Box<dyn Iterator<Item = Result<RecordBatch, arrow_schema::ArrowError>>>,
    u64,
);

/// Opens a Parquet or Arrow IPC file: its schema, batches and row count (`None` for another
/// name; the error text for a file that is not what its name says).
fn open(path: &Path) -> Option<Result<Batches, String>> {
    let format = format_of(path)?;
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return Some(Err(format!("cannot read: {e}"))),
    };
    Some(match format {
        Format::Parquet => ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| {
                let schema = b.schema().clone();
                let rows = u64::try_from(b.metadata().file_metadata().num_rows()).unwrap_or(0);
                let reader = b.with_batch_size(1024).build()?;
                Ok((
                    schema,
                    Box::new(reader) as Box<dyn Iterator<Item = _>>,
                    rows,
                ))
            })
            .map_err(|e| format!("not a readable Parquet file: {e}")),
        Format::ArrowIpc => {
            arrow_ipc::reader::FileReader::try_new_buffered(file, None)
                .and_then(|r| {
                    let schema = r.schema();
                    // Counting rows reads the batches; the count is only wanted for a replay's
                    // default request count, so a second reader serves the rows.
                    let rows = arrow_ipc::reader::FileReader::try_new_buffered(
                        File::open(path)
                            .map_err(|e| arrow_schema::ArrowError::IoError(e.to_string(), e))?,
                        None,
                    )?
                    .map(|b| b.map(|b| b.num_rows() as u64))
                    .sum::<Result<u64, _>>()?;
                    Ok((schema, Box::new(r) as Box<dyn Iterator<Item = _>>, rows))
                })
                .map_err(|e| format!("not a readable Arrow IPC file: {e}"))
        }
    })
}

/// Whether `path` is a Parquet or Arrow IPC file with every [`REQUIRED`] column (the type's
/// detection).
pub fn detect(path: &Path) -> bool {
    matches!(open(path), Some(Ok((schema, _, _))) if REQUIRED.iter().all(|c| schema.field_with_name(c).is_ok()))
}

/// The rows of a readable Parquet file with the required columns (a replay's default request
/// count); `None` otherwise (the load says why).
pub fn rows(path: &Path) -> Option<u64> {
    let (schema, _, rows) = open(path)?.ok()?;
    REQUIRED
        .iter()
        .all(|c| schema.field_with_name(c).is_ok())
        .then_some(rows)
}

/// The integer in `col` at `i`: `Ok(None)` for a null, an error for a column of another type.
fn int_at(col: &ArrayRef, i: usize) -> Result<Option<i128>, &'static str> {
    if col.is_null(i) {
        return Ok(None);
    }
    macro_rules! prim {
        ($t:ty) => {
            Ok(Some(i128::from(col.as_primitive::<$t>().value(i))))
        };
    }
    match col.data_type() {
        DataType::Int8 => prim!(Int8Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::Int64 => prim!(Int64Type),
        DataType::UInt8 => prim!(UInt8Type),
        DataType::UInt16 => prim!(UInt16Type),
        DataType::UInt32 => prim!(UInt32Type),
        DataType::UInt64 => prim!(UInt64Type),
        _ => Err("an integer"),
    }
}

/// The text in `col` at `i`.
fn text_at(col: &ArrayRef, i: usize) -> Result<Option<String>, &'static str> {
    if col.is_null(i) {
        return Ok(None);
    }
    match col.data_type() {
        DataType::Utf8 => Ok(Some(col.as_string::<i32>().value(i).to_owned())),
        DataType::LargeUtf8 => Ok(Some(col.as_string::<i64>().value(i).to_owned())),
        DataType::Utf8View => Ok(Some(col.as_string_view().value(i).to_owned())),
        _ => Err("a string"),
    }
}

/// The list of integers in `col` at `i` (a null is an empty list).
fn ints_at(col: &ArrayRef, i: usize) -> Result<Vec<i128>, &'static str> {
    if col.is_null(i) {
        return Ok(Vec::new());
    }
    let items = match col.data_type() {
        DataType::List(_) => col.as_list::<i32>().value(i),
        DataType::LargeList(_) => col.as_list::<i64>().value(i),
        _ => return Err("a list of integers"),
    };
    (0..items.len())
        .map(|j| int_at(&items, j)?.ok_or("a list of integers without nulls"))
        .collect()
}

/// Reads every row of the file.
fn read_rows(path: &Path, session_column: &str) -> Result<(Vec<Row>, Option<String>), LoadError> {
    let (schema, batches, _) = match open(path) {
        Some(Ok(b)) => b,
        Some(Err(why)) => return Err(invalid(path, why)),
        None => {
            return Err(invalid(
                path,
                "a baseten_trace file is Parquet (.parquet) or Arrow IPC (.arrow, .ipc)",
            ));
        }
    };
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|c| schema.field_with_name(c).is_err())
        .collect();
    if !missing.is_empty() {
        return Err(invalid(
            path,
            format!(
                "not a baseten_trace file: missing column(s) {} (required: {})",
                missing.join(", "),
                REQUIRED.join(", ")
            ),
        ));
    }
    // The configured column, else the other session column (AIPerf's fallback).
    let fallback = if session_column == SESSION {
        POOR_MAN_SESSION
    } else {
        SESSION
    };
    let session_key = [session_column, fallback]
        .into_iter()
        .find(|c| schema.field_with_name(c).is_ok())
        .map(str::to_owned);
    let mut rows = Vec::new();
    for batch in batches {
        let batch = batch.map_err(|e| invalid(path, format!("cannot read: {e}")))?;
        read_batch(path, &batch, session_key.as_deref(), &mut rows)?;
    }
    Ok((rows, session_key))
}

fn read_batch(
    path: &Path,
    batch: &RecordBatch,
    session_key: Option<&str>,
    rows: &mut Vec<Row>,
) -> Result<(), LoadError> {
    let col = |name: &str| batch.column_by_name(name);
    let first = rows.len();
    for i in 0..batch.num_rows() {
        let line = (first + i + 1) as u64;
        let at = |field: &str, kind: LoadErrorKind| LoadError::at(path, line, field, kind);
        let wrong =
            |field: &'static str| move |t: &'static str| at(field, LoadErrorKind::WrongType(t));
        let count = |name: &'static str| -> Result<u64, LoadError> {
            let c = col(name).ok_or_else(|| at(name, LoadErrorKind::Missing))?;
            let v = int_at(c, i)
                .map_err(wrong(name))?
                .ok_or_else(|| at(name, LoadErrorKind::Missing))?;
            u64::try_from(v).map_err(|_| {
                at(
                    name,
                    LoadErrorKind::Invalid(format!("must be at least 0, got {v}")),
                )
            })
        };
        let optional = |name: &'static str| -> Result<Option<u64>, LoadError> {
            let Some(c) = col(name) else {
                return Ok(None);
            };
            match int_at(c, i).map_err(wrong(name))? {
                None => Ok(None),
                Some(v) => u64::try_from(v).map(Some).map_err(|_| {
                    at(
                        name,
                        LoadErrorKind::Invalid(format!("must be at least 0, got {v}")),
                    )
                }),
            }
        };
        let prompt_col = col("prompt").ok_or_else(|| at("prompt", LoadErrorKind::Missing))?;
        let prompt = text_at(prompt_col, i)
            .map_err(wrong("prompt"))?
            .ok_or_else(|| at("prompt", LoadErrorKind::Missing))?;
        let hashes = match col("total_hashes") {
            None => Vec::new(),
            Some(c) => ints_at(c, i)
                .map_err(wrong("total_hashes"))?
                .into_iter()
                .map(|h| {
                    u64::try_from(h).map_err(|_| {
                        at(
                            "total_hashes",
                            LoadErrorKind::Invalid(format!("a hash must be at least 0, got {h}")),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let block_size = optional("block_size")?;
        if block_size == Some(0) {
            return Err(at(
                "block_size",
                LoadErrorKind::Invalid("must be greater than 0".into()),
            ));
        }
        let session = match session_key.and_then(col) {
            None => None,
            Some(c) => match c.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                    text_at(c, i).map_err(wrong("session"))?
                }
                _ => int_at(c, i)
                    .map_err(wrong("session"))?
                    .map(|v| v.to_string()),
            },
        };
        rows.push(Row {
            ts: count("timestamp_start_unix_ms")?,
            prompt,
            input_tokens: count("input_tokens")?,
            output_tokens: count("output_tokens")?,
            hashes,
            block_size,
            session,
            e2e_ms: optional("duration_e2e_ms")?,
        });
    }
    Ok(())
}

/// Shortens every gap between consecutive times (walked in time order, ties in the given
/// order) to at most `cap_ms` (rounded up to a whole ms); the earliest keeps its time. Times
/// are whole ms, as AIPerf's.
pub fn reflow_idle_gaps(times: &[f64], cap_ms: f64) -> Vec<f64> {
    let values: Vec<i64> = times.iter().map(|t| t.trunc() as i64).collect();
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by_key(|&i| (values[i], i));
    let cap = cap_ms.ceil() as i64;
    let mut out = vec![0.0; values.len()];
    let Some(&first) = order.first() else {
        return out;
    };
    let (mut prev_old, mut prev_new) = (values[first], values[first]);
    out[first] = values[first] as f64;
    for &i in &order[1..] {
        prev_new += (values[i] - prev_old).min(cap);
        out[i] = prev_new as f64;
        prev_old = values[i];
    }
    out
}

/// The sessions kept by `--trace-session-sample-ratio`: each session (in order of its first
/// row's time, then id) with probability `ratio`, at least one; and each row without a session
/// (by its order among them) with the same probability. `rng` draws as AIPerf's does, so a seed
/// keeps the sessions AIPerf keeps.
fn sample(
    rows: &[Row],
    ratio: f64,
    rng: &mut crate::workload::pyrandom::PyRandom,
) -> (
    std::collections::HashSet<String>,
    std::collections::HashSet<usize>,
) {
    let mut first: HashMap<&str, u64> = HashMap::new();
    let mut nulls = 0usize;
    for r in rows {
        match &r.session {
            Some(s) => {
                let e = first.entry(s.as_str()).or_insert(r.ts);
                *e = (*e).min(r.ts);
            }
            None => nulls += 1,
        }
    }
    let mut sessions: Vec<(u64, &str)> = first.into_iter().map(|(s, t)| (t, s)).collect();
    sessions.sort();
    let mut kept: std::collections::HashSet<String> = sessions
        .iter()
        .filter(|_| rng.uniform(0.0, 1.0) < ratio)
        .map(|(_, s)| (*s).to_owned())
        .collect();
    if kept.is_empty() && !sessions.is_empty() {
        kept.insert(sessions[rng.choice_index(sessions.len())].1.to_owned());
    }
    let null_rows = (0..nulls)
        .filter(|_| rng.uniform(0.0, 1.0) < ratio)
        .collect();
    (kept, null_rows)
}

/// Loads a Baseten trace as AIPerf 0.13's `baseten_trace` loader does.
///
/// # Errors
/// The file cannot be read as Parquet, lacks a required column, a row's value has the wrong
/// type or is negative, or no row is left.
pub fn load(
    path: &Path,
    p: &BasetenParams,
    ids: &mut SessionIds,
    seed: Option<u64>,
) -> Result<Dataset, LoadError> {
    let (rows, session_key) = read_rows(path, &p.session_column)?;
    if rows.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    let min_ts = rows.iter().map(|r| r.ts).min().unwrap_or(0);
    let sampled = p
        .sample_ratio
        .filter(|r| *r < 1.0 && session_key.is_some())
        .map(|ratio| {
            // AIPerf's stream of this loader: its seed derived from `--random-seed`, else the
            // OS's.
            let child = seed.map_or_else(rand::random::<u64>, |s| {
                crate::workload::pyrandom::aiperf_derive(
                    s,
                    "dataset.loader.baseten_trace.session_sampling",
                )
            });
            sample(
                &rows,
                ratio,
                &mut crate::workload::pyrandom::PyRandom::new(child),
            )
        });
    let mut traces = Vec::new();
    let mut null_ordinal = 0usize;
    for row in rows {
        if let Some((sessions, null_rows)) = &sampled {
            let keep = match &row.session {
                Some(s) => sessions.contains(s),
                None => {
                    null_ordinal += 1;
                    null_rows.contains(&(null_ordinal - 1))
                }
            };
            if !keep {
                continue;
            }
        }
        if p.max_isl.is_some_and(|m| row.input_tokens > m) {
            continue;
        }
        let mut output_length = row.output_tokens.max(1);
        if let Some(m) = p.max_osl {
            output_length = output_length.min(m);
        }
        let t = (row.ts - min_ts) as f64;
        traces.push(Trace {
            timestamp: Some(if p.speedup == 1.0 { t } else { t / p.speedup }),
            delay: None,
            output_length,
            row,
        });
    }
    if traces.is_empty() {
        return Err(invalid(
            path,
            "no row is left after --synthesis-max-isl and --trace-session-sample-ratio",
        ));
    }
    let cap_ms = p.idle_gap_cap_s.map(|s| s * 1000.0);
    if p.open_loop
        && let Some(cap) = cap_ms
    {
        reflow(&mut traces, cap);
    }
    // Sessions: the session column's value, else a generated id; each in time order; ordered
    // by their first time, then id.
    let mut groups: Vec<(String, Vec<Trace>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for t in traces {
        let id = match &t.row.session {
            Some(s) => s.clone(),
            None => ids.next_id(),
        };
        let i = *index.entry(id.clone()).or_insert_with(|| {
            groups.push((id, Vec::new()));
            groups.len() - 1
        });
        groups[i].1.push(t);
    }
    for (_, g) in &mut groups {
        g.sort_by(|a, b| {
            a.timestamp
                .unwrap_or(0.0)
                .total_cmp(&b.timestamp.unwrap_or(0.0))
        });
    }
    groups.sort_by(|a, b| {
        let first = |g: &[Trace]| {
            g.iter()
                .filter_map(|t| t.timestamp)
                .fold(f64::INFINITY, f64::min)
        };
        first(&a.1)
            .total_cmp(&first(&b.1))
            .then_with(|| a.0.cmp(&b.0))
    });
    if p.open_loop && p.strict {
        groups = groups
            .into_iter()
            .flat_map(|(id, g)| {
                g.into_iter()
                    .enumerate()
                    .map(move |(i, t)| (format!("{id}#{i}"), vec![t]))
            })
            .collect();
    } else if !p.open_loop {
        back_pressure(&mut groups, p);
        if let Some(cap) = cap_ms {
            let mut starts: Vec<&mut Trace> = groups
                .iter_mut()
                .flat_map(|(_, g)| g.iter_mut())
                .filter(|t| t.timestamp.is_some())
                .collect();
            let times: Vec<f64> = starts.iter().map(|t| t.timestamp.unwrap_or(0.0)).collect();
            for (t, v) in starts.iter_mut().zip(reflow_idle_gaps(&times, cap)) {
                t.timestamp = Some(v);
            }
        }
    }
    let conversations = groups
        .into_iter()
        .map(|(id, g)| conversation(id, g, p))
        .collect();
    Ok(Dataset {
        conversations,
        default_sampling: Sampling::Sequential,
        replay: true,
    })
}

/// `--max-idle-gap-cap-seconds` over every row's time, in the rows' order (open loop).
fn reflow(traces: &mut [Trace], cap_ms: f64) {
    let times: Vec<f64> = traces.iter().map(|t| t.timestamp.unwrap_or(0.0)).collect();
    for (t, v) in traces.iter_mut().zip(reflow_idle_gaps(&times, cap_ms)) {
        t.timestamp = Some(v);
    }
}

/// Closed loop: a session's later turns wait their recorded gap to the previous start, less the
/// previous request's recorded duration (never below 0, at most the delay cap), after the
/// previous answer; they have no time of their own.
fn back_pressure(groups: &mut [(String, Vec<Trace>)], p: &BasetenParams) {
    let cap_ms = p.delay_cap_s.map(|s| s * 1000.0);
    for (_, g) in groups {
        let mut prev: Option<(f64, f64)> = None;
        for t in g.iter_mut() {
            // AIPerf takes the whole ms of the (compressed) time.
            let ts = t.timestamp.unwrap_or(0.0).trunc();
            let e2e = t.row.e2e_ms.unwrap_or(0) as f64 / p.speedup;
            if let Some((prev_ts, prev_e2e)) = prev {
                let gap = (ts - prev_ts).max(0.0);
                let mut delay = (gap - prev_e2e).max(0.0);
                if let Some(c) = cap_ms {
                    delay = delay.min(c);
                }
                t.delay = Some(delay);
                t.timestamp = None;
            }
            prev = Some((ts, e2e));
        }
    }
}

fn conversation(session_id: String, traces: Vec<Trace>, p: &BasetenParams) -> Conversation {
    let many = traces.len() > 1;
    let turns = traces
        .into_iter()
        .map(|t| {
            let mut extra = Map::new();
            if p.force_min_tokens {
                extra.insert("min_tokens".into(), Value::from(t.output_length));
            }
            if !p.omit_kv_hints {
                if !t.row.hashes.is_empty() {
                    extra.insert("hash_ids".into(), Value::from(t.row.hashes.clone()));
                }
                if let Some(b) = t.row.block_size {
                    extra.insert("block_size".into(), Value::from(b));
                }
            }
            // The rules above work on the sped-up times (AIPerf's); the schedule divides by the
            // speedup, so the turns keep trace time.
            Turn {
                max_tokens: Some(u32::try_from(t.output_length).unwrap_or(u32::MAX)),
                timestamp_ms: t.timestamp.map(|v| v * p.speedup),
                delay_ms: t.delay.map(|d| d * p.speedup),
                extra,
                ..Turn::text(t.row.prompt)
            }
        })
        .collect();
    Conversation {
        session_id,
        turns,
        // A session's turns each carry their whole prompt: nothing of the earlier turns (nor
        // their answers) is added (AIPerf's `message_array_with_responses`).
        agent: many.then(|| {
            Box::new(AgentConversation {
                context: ContextMode::Standalone,
                ..AgentConversation::default()
            })
        }),
        ..Conversation::default()
    }
}

#[cfg(test)]
mod tests;
