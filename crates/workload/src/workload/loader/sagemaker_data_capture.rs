//! `sagemaker_data_capture`: the JSON Lines an Amazon SageMaker real-time endpoint's data
//! capture writes (AIPerf's `SageMakerDataCaptureTrace`,
//! <https://docs.aws.amazon.com/sagemaker/latest/dg/model-monitor-data-capture-endpoint.html>),
//! a file or a directory of them (every `*.jsonl` under it, in path order). Each record is
//! `{"captureData": {"endpointInput": {"data", "encoding"}, "endpointOutput": {…}},
//! "eventMetadata": {"eventId", "inferenceTime"}, …}`; the captured request (`JSON` text or
//! `BASE64`, the default) must be an OpenAI chat body: its `messages` are replayed as they are,
//! with its `tools`, and its `max_tokens` (else `max_completion_tokens`) becomes the turn's.
//! `inferenceTime` (ISO 8601) is the timestamp, taken relative to the earliest record's, and
//! the records are replayed in time order, each a conversation of its own. Nothing else of a
//! record is read (the capture's other fields are AWS's), but a captured reply that cannot be
//! decoded fails the load, as in AIPerf.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use ringperf_wire::conversation::{Content, Conversation, Dataset, Sampling, Turn};

use super::error::{LoadError, LoadErrorKind};
use super::fields::{Ctx, Obj};
use super::lines::JsonLines;
use super::session::SessionIds;

/// The capture files `path` names: itself, or every `*.jsonl` file under the directory, in
/// path order (AIPerf: `sorted(path.rglob("*.jsonl"))`).
///
/// # Errors
/// A directory that cannot be read, or holds no `*.jsonl` file.
pub(super) fn files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| LoadError::file(&dir, LoadErrorKind::Io(e.to_string())))?;
        for entry in entries {
            let p = entry
                .map_err(|e| LoadError::file(&dir, LoadErrorKind::Io(e.to_string())))?
                .path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                found.push(p);
            }
        }
    }
    if found.is_empty() {
        return Err(LoadError::file(
            path,
            LoadErrorKind::Invalid("no .jsonl files in the directory".into()),
        ));
    }
    found.sort();
    Ok(found)
}

/// Whether the directory's first capture file starts with a capture record (AIPerf's
/// `can_load` on a directory).
pub(super) fn detect_dir(path: &Path) -> bool {
    let Some(first) = files(path).ok().and_then(|f| f.into_iter().next()) else {
        return false;
    };
    let Ok(mut lines) = JsonLines::open(&first) else {
        return false;
    };
    matches!(lines.next_object(), Ok(Some((_, m)))
        if m.contains_key("captureData") && m.contains_key("eventMetadata"))
}

/// One record read: its time (ns since the epoch) and its turn.
struct Record {
    at_ns: i128,
    turn: Turn,
}

/// Loads the capture file or directory `path`.
///
/// # Errors
/// The first bad record, naming its file, line and field.
pub fn load(path: &Path, ids: &mut SessionIds) -> Result<Dataset, LoadError> {
    let mut records = Vec::new();
    for file in files(path)? {
        let mut lines = JsonLines::open(&file)?;
        while let Some((line, map)) = lines.next_object()? {
            let ctx = Ctx { path: &file, line };
            records.push(parse_record(&mut Obj::new(ctx, "", map))?);
        }
    }
    let Some(zero) = records.iter().map(|r| r.at_ns).min() else {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    };
    // Time order, ties in file order (a stable sort), each record a conversation of its own
    // whose id is drawn in that order, as AIPerf's loader does.
    records.sort_by_key(|r| r.at_ns);
    let conversations = records
        .into_iter()
        .map(|r| {
            let mut turn = r.turn;
            turn.timestamp_ms = Some((r.at_ns - zero) as f64 / 1e6);
            Conversation {
                session_id: ids.next_id(),
                turns: vec![turn],
                ..Conversation::default()
            }
        })
        .collect();
    Ok(Dataset {
        conversations,
        default_sampling: Sampling::Sequential,
        replay: true,
    })
}

fn parse_record(obj: &mut Obj<'_>) -> Result<Record, LoadError> {
    let ctx = obj.ctx;
    let Some(meta) = obj.object("eventMetadata")? else {
        return Err(obj.err("eventMetadata", LoadErrorKind::Missing));
    };
    let mut meta = Obj::new(ctx, "eventMetadata.", meta);
    let Some(time) = meta.string("inferenceTime")? else {
        return Err(meta.err("inferenceTime", LoadErrorKind::Missing));
    };
    let at_ns = parse_time(&time).ok_or_else(|| {
        meta.err(
            "inferenceTime",
            LoadErrorKind::Invalid(format!("{time:?} is not an ISO 8601 date and time")),
        )
    })?;
    meta.string("eventId")?;
    let Some(capture) = obj.object("captureData")? else {
        return Err(obj.err("captureData", LoadErrorKind::Missing));
    };
    let mut capture = Obj::new(ctx, "captureData.", capture);
    let Some(input) = decode(&mut capture, "endpointInput")? else {
        return Err(capture.err(
            "endpointInput",
            LoadErrorKind::Invalid(
                "the captured request has no \"messages\": only OpenAI-compatible chat \
                 endpoints are supported"
                    .into(),
            ),
        ));
    };
    // A reply that cannot be decoded fails the load, as in AIPerf (its `usage` is not used).
    decode(&mut capture, "endpointOutput")?;
    let Value::Object(body) = input else {
        return Err(capture.err(
            "endpointInput.data",
            LoadErrorKind::WrongType("a JSON object (a chat request body)"),
        ));
    };
    let mut body = Obj::new(ctx, "captureData.endpointInput.data.", body);
    if !body.has("messages") {
        return Err(body.err(
            "messages",
            LoadErrorKind::Invalid(
                "required but missing: only OpenAI-compatible chat endpoints are supported".into(),
            ),
        ));
    }
    let messages = body.array("messages")?.unwrap_or_default();
    super::mooncake_trace::check_messages(&body, &messages)?;
    let tools = body.array("tools")?;
    if let Some(tools) = &tools
        && let Some(i) = tools.iter().position(|t| !t.is_object())
    {
        return Err(body.err(
            &format!("tools[{i}]"),
            LoadErrorKind::WrongType("a JSON object"),
        ));
    }
    // `max_tokens`, else `max_completion_tokens`; AIPerf's `Turn.max_tokens` is at least 1.
    let max_tokens = match body.positive("max_tokens")? {
        Some(n) => Some(n),
        None => body.positive("max_completion_tokens")?,
    };
    let mut extra = Map::new();
    if let Some(tools) = tools {
        extra.insert("tools".into(), Value::Array(tools));
    }
    Ok(Record {
        at_ns,
        turn: Turn {
            content: Content::Messages(messages),
            max_tokens,
            extra,
            ..Turn::default()
        },
    })
}

/// A `captureData` entry's payload: `data` decoded by its `encoding` (`JSON`, or `BASE64` when
/// none is given); `None` when the entry, or its `data`, is absent, or for any other encoding
/// (`CSV`), as AIPerf's `_decode_payload`.
fn decode(capture: &mut Obj<'_>, key: &str) -> Result<Option<Value>, LoadError> {
    let Some(entry) = capture.object(key)? else {
        return Ok(None);
    };
    let prefix = capture.name(key) + ".";
    let mut entry = Obj::new(capture.ctx, prefix, entry);
    let Some(data) = entry.string("data")? else {
        return Ok(None);
    };
    let encoding = entry.string("encoding")?.unwrap_or_else(|| "BASE64".into());
    let text = match encoding.as_str() {
        "JSON" => data.into_bytes(),
        "BASE64" => crate::workload::media::base64_decode(data.as_bytes()).ok_or_else(|| {
            entry.err("data", LoadErrorKind::Invalid("is not valid base64".into()))
        })?,
        _ => return Ok(None),
    };
    serde_json::from_slice(&text)
        .map(Some)
        .map_err(|e| entry.err("data", LoadErrorKind::Json(e.to_string())))
}

/// An ISO 8601 date and time as ns since the epoch: with an offset (`Z`, `+02:00`), or without
/// one (taken as UTC), or a date alone (its midnight, UTC).
fn parse_time(text: &str) -> Option<i128> {
    if let Ok(ts) = text.parse::<jiff::Timestamp>() {
        return Some(ts.as_nanosecond());
    }
    let civil = text.parse::<jiff::civil::DateTime>().ok().or_else(|| {
        text.parse::<jiff::civil::Date>()
            .ok()
            .map(|d| d.to_datetime(jiff::civil::Time::midnight()))
    })?;
    let zoned = civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?;
    Some(zoned.timestamp().as_nanosecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inference_times_parse_as_python_reads_them() {
        let z = parse_time("2026-04-29T00:03:18Z").unwrap();
        assert_eq!(
            parse_time("2026-04-29T00:03:18.250Z"),
            Some(z + 250_000_000)
        );
        assert_eq!(parse_time("2026-04-29T02:03:18+02:00"), Some(z));
        assert_eq!(parse_time("2026-04-29T00:03:18"), Some(z));
        assert_eq!(parse_time("2026-04-29"), Some(z - 198 * 1_000_000_000));
        assert_eq!(parse_time("yesterday"), None);
    }
}
