//! `burst_gpt_trace`: the BurstGPT CSV (<https://github.com/HPMLL/BurstGPT>, AIPerf's
//! `BurstGPTTrace`): a header naming the columns, then one request per line. Three columns are
//! read, by name, wherever they are: `Timestamp` (**seconds**), `Request tokens` (the prompt's
//! length) and `Response tokens` (`max_tokens`); the others (`Model`, `Total tokens`,
//! `Log Type`, `Session ID`, `Elapsed time`) are ignored, as AIPerf ignores them. Every row is a
//! conversation of its own with a generated session id; its prompt is synthesized at the
//! row's length by the `mooncake_trace` machinery ([`super::deferred`]), with no hash ids.

use std::path::Path;

use crate::workload::{Prepared, PreparedConversation, PreparedTurn};
use ringperf_wire::conversation::{Content, Sampling, Turn};

use super::deferred::{DeferredPrompts, DeferredRow, TraceIndex};
use super::error::{LoadError, LoadErrorKind};
use super::fields::Ctx;
use super::lines::{JsonLines, file_hash};
use super::mooncake_trace::Synthesized;
use super::session::SessionIds;

/// The columns read, in the order of [`DeferredPrompts::layout`].
const COLUMNS: [&str; 3] = ["Timestamp", "Request tokens", "Response tokens"];

/// Whether `path`'s first line is a CSV header naming every column read (AIPerf's
/// `can_load`, which reads the header alone).
pub(super) fn has_header(path: &Path) -> bool {
    let Ok(mut lines) = JsonLines::open(path) else {
        return false;
    };
    match lines.next_line() {
        Ok(Some((_, _, text))) => layout(&split(text)).is_ok(),
        _ => false,
    }
}

/// Where each of [`COLUMNS`] is in a header's `names` (the last of a repeated name, as
/// Python's `csv.DictReader` keeps it); the names missing otherwise.
fn layout(names: &[String]) -> Result<Vec<u32>, Vec<&'static str>> {
    let mut missing = Vec::new();
    let mut at = Vec::new();
    for column in COLUMNS {
        match names.iter().rposition(|n| n == column) {
            Some(i) => at.push(i as u32),
            None => missing.push(column),
        }
    }
    if missing.is_empty() {
        Ok(at)
    } else {
        Err(missing)
    }
}

/// The fields of one CSV line (RFC 4180 quoting: a field in double quotes may hold commas,
/// and `""` inside it is one quote; a record does not span lines).
fn split(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// The first pass over a BurstGPT CSV: the header, then every row parsed and checked, nothing
/// kept of it but its skeleton turn and where it is in the file ([`DeferredRow`]).
///
/// # Errors
/// A header without the three columns (naming those missing), or the first bad row, naming
/// its line and column.
pub fn scan(
    path: &Path,
    hash_path: &Path,
    ids: &mut SessionIds,
    block_size: usize,
    seed: u64,
) -> Result<TraceIndex, LoadError> {
    let mut lines = JsonLines::open(path)?.unhashed();
    let Some((_, _, header)) = lines.next_line()? else {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    };
    let layout = layout(&split(header)).map_err(|missing| {
        LoadError::file(
            path,
            LoadErrorKind::Invalid(format!(
                "missing required columns {} in the header (a BurstGPT CSV names Timestamp, \
                 Request tokens and Response tokens)",
                missing
                    .iter()
                    .map(|c| format!("{c:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        )
    })?;
    let mut deferred = DeferredPrompts::new(path, block_size, seed, reread);
    deferred.layout = layout;
    let mut conversations = Vec::new();
    while let Some((line, offset, text)) = lines.next_line()? {
        let ctx = Ctx { path, line };
        let len = super::lines::line_len(path, line, text)?;
        let (turn, _) = parse_row(ctx, text, &deferred.layout)?;
        let at = conversations.len() as u32;
        deferred.push(DeferredRow::new(at, 0, true, offset, len, line));
        conversations.push(PreparedConversation {
            session_id: ids.next_id(),
            turns: vec![PreparedTurn {
                max_tokens: turn.max_tokens,
                timestamp_ms: turn.timestamp_ms,
                ..PreparedTurn::default()
            }],
            ..PreparedConversation::default()
        });
    }
    if conversations.is_empty() {
        return Err(LoadError::file(path, LoadErrorKind::Empty));
    }
    deferred.seal(file_hash(hash_path)?);
    Ok(TraceIndex {
        skeleton: Prepared {
            conversations,
            default_sampling: Sampling::Sequential,
            replay: true,
            ..Prepared::default()
        },
        rows: deferred,
        history: false,
    })
}

/// One row: its turn (timestamp in ms, `max_tokens`) and its prompt's length.
fn parse_row(ctx: Ctx<'_>, text: &str, layout: &[u32]) -> Result<(Turn, u32), LoadError> {
    let fields = split(text);
    let field = |i: usize| -> Result<&str, LoadError> {
        fields
            .get(layout[i] as usize)
            .map(|f| f.trim())
            .ok_or_else(|| ctx.err(COLUMNS[i], LoadErrorKind::Missing))
    };
    let seconds: f64 = match field(0)?.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.0 => s,
        _ => {
            return Err(ctx.err(
                COLUMNS[0],
                LoadErrorKind::Invalid(format!("{:?} is not a number of seconds ≥ 0", field(0)?)),
            ));
        }
    };
    let tokens = |i: usize| -> Result<u32, LoadError> {
        field(i)?
            .parse::<u32>()
            .map_err(|_| ctx.err(COLUMNS[i], LoadErrorKind::WrongType("an integer ≥ 0")))
    };
    // AIPerf's prompt of a 0-token request has 1 token (its length floor).
    let input_length = tokens(1)?.max(1);
    let output_length = tokens(2)?;
    if output_length == 0 {
        // AIPerf's `Turn.max_tokens` is at least 1: the load fails there too. BurstGPT marks
        // a failed request with 0 response tokens; its `without_fails` files leave them out.
        return Err(ctx.err(
            COLUMNS[2],
            LoadErrorKind::Invalid(
                "must be at least 1 (a failed request; BurstGPT's `without_fails` files leave \
                 them out)"
                    .into(),
            ),
        ));
    }
    let turn = Turn {
        // Seconds in the file, milliseconds in the turn (AIPerf: `timestamp * 1000.0`).
        timestamp_ms: Some(seconds * 1000.0),
        max_tokens: Some(output_length),
        ..Turn::default()
    };
    Ok((turn, input_length))
}

/// A row read again (the first pass checked it): its turn and its prompt's length.
///
/// # Errors
/// The row no longer parses (the file changed since the first pass).
fn reread(
    ctx: Ctx<'_>,
    text: &str,
    layout: &[u32],
) -> Result<(Turn, Option<Synthesized>), LoadError> {
    let (mut turn, n) = parse_row(ctx, text, layout)?;
    turn.content = Content::Texts(Vec::new());
    Ok((turn, Some((n, Vec::new()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_split_as_a_csv_reader_splits_them() {
        assert_eq!(split("5,ChatGPT,472"), ["5", "ChatGPT", "472"]);
        assert_eq!(
            split(r#"1,"a, b","say ""hi""",,"#),
            ["1", "a, b", r#"say "hi""#, "", ""]
        );
        let names: Vec<String> = split("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type")
            .into_iter()
            .collect();
        // BurstGPT_3's two extra columns come before the ones read: read by name, not place.
        assert_eq!(layout(&names), Ok(vec![0, 4, 5]));
        assert_eq!(
            layout(&split("Timestamp,Model,Response tokens")),
            Err(vec!["Request tokens"])
        );
    }
}
