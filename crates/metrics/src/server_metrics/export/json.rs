//! `server_metrics_export.json` (schema_version "1.1", `exclude_none`, 2-space indent).

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use super::{ExportContext, ServerMetricsReport};

/// Schema version of the JSON export.
pub const SCHEMA_VERSION: &str = "1.1";

/// Epoch ns → naive ISO 8601 with microseconds (UTC), like Python's `datetime.isoformat()`.
#[must_use]
pub fn iso8601(ns: u64) -> String {
    let Ok(ts) = jiff::Timestamp::from_nanosecond(i128::from(ns)) else {
        return String::new();
    };
    let dt = ts.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1000
    )
}

/// Epoch ns → naive ISO 8601 (UTC) as AIPerf writes `summary.start_time` / `end_time`:
/// Python's `datetime.fromtimestamp(ns / 1e9)`, which rounds the float seconds' fraction to the
/// nearest microsecond (half to even), where [`iso8601`] truncates; a whole second has no
/// fraction, as pydantic writes it (`{"t": "1970-01-01T00:00:02"}`).
#[must_use]
pub fn iso8601_rounded(ns: u64) -> String {
    let (secs, rem) = (ns / 1_000_000_000, ns % 1_000_000_000);
    let d = secs as f64 + rem as f64 / 1e9;
    let whole = d.floor();
    let micros = ((d - whole) * 1e6).round_ties_even() as u64;
    let text = iso8601((whole as u64) * 1_000_000_000 + micros * 1000);
    match text.strip_suffix(".000000") {
        Some(whole_second) => whole_second.to_owned(),
        None => text,
    }
}

fn range(start_ns: u64, end_ns: u64) -> Value {
    json!({"start_ns": start_ns, "end_ns": end_ns})
}

/// Builds the JSON document.
///
/// # Errors
/// Only if a summary fails to serialize (not expected).
pub fn to_value(
    report: &ServerMetricsReport,
    ctx: &ExportContext<'_>,
) -> serde_json::Result<Value> {
    let successful: Vec<&String> = ctx
        .endpoints_configured
        .iter()
        .filter(|u| report.endpoint_info.contains_key(u.as_str()))
        .collect();
    let mut phases = Map::new();
    let (start, end) = report.profiling_range;
    phases.insert("profiling".into(), range(start, end));
    if let Some(w) = &report.warmup {
        phases.insert("warmup".into(), range(w.start_ns, w.end_ns));
    }
    let mut summary = Map::new();
    summary.insert(
        "endpoints_configured".into(),
        json!(ctx.endpoints_configured),
    );
    summary.insert("endpoints_successful".into(), json!(successful));
    summary.insert("start_time".into(), iso8601_rounded(start).into());
    summary.insert("end_time".into(), iso8601_rounded(end).into());
    if !report.endpoint_info.is_empty() {
        summary.insert(
            "endpoint_info".into(),
            serde_json::to_value(&report.endpoint_info)?,
        );
    }
    summary.insert("phase_time_ranges".into(), Value::Object(phases));
    let summary = Value::Object(summary);
    let mut top = Map::new();
    top.insert("schema_version".into(), SCHEMA_VERSION.into());
    top.insert("aiperf_version".into(), ctx.aiperf_version.into());
    top.insert("benchmark_id".into(), ctx.benchmark_id.into());
    top.insert("summary".into(), summary);
    top.insert("metrics_phase".into(), "profiling".into());
    top.insert("metrics".into(), serde_json::to_value(&report.metrics)?);
    if let Some(w) = &report.warmup_metrics {
        top.insert("warmup_metrics".into(), serde_json::to_value(w)?);
    }
    top.insert("input_config".into(), ctx.input_config.clone());
    Ok(Value::Object(top))
}

/// Writes the JSON export (pretty, 2-space indent) to `out`.
///
/// # Errors
/// I/O errors of `out`.
pub fn write(
    out: &mut impl Write,
    report: &ServerMetricsReport,
    ctx: &ExportContext<'_>,
) -> io::Result<()> {
    let value = to_value(report, ctx).map_err(io::Error::other)?;
    serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's `datetime.fromtimestamp(ns / 1_000_000_000, tz=utc).isoformat()` (the first two
    /// are AIPerf's own `start_time` / `end_time` in `tests/data/aiperf-server-metrics-unique/`).
    #[test]
    fn times_round_to_the_microsecond_as_python_does() {
        for (ns, want) in [
            (1_795_840_763_188_268_710, "2026-11-28T04:39:23.188269"),
            (1_795_840_764_919_369_757, "2026-11-28T04:39:24.919370"),
            (1_700_000_000_999_999_600, "2023-11-14T22:13:21"),
            (1_700_000_000_123_456_499, "2023-11-14T22:13:20.123456"),
        ] {
            assert_eq!(iso8601_rounded(ns), want, "{ns}");
        }
        assert_eq!(
            iso8601(1_795_840_763_188_268_710),
            "2026-11-28T04:39:23.188268"
        );
    }
}
