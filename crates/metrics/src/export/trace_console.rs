//! The `HTTP Trace Timing` console table (`--show-trace-timing`), as AIPerf's
//! `HttpTraceConsoleExporter` prints it: every HTTP_TRACE_ONLY metric (never an ERROR_ONLY one),
//! in display order, with the same layout as the other metrics tables.

use super::console::{render_table, rows_where};
use crate::aggregate::Summary;
use crate::aggregate::registry::flags;

/// The table titled `"<prefix> | HTTP Trace Timing"`, or `None` when the run has no trace
/// metric (no request succeeded).
pub fn render_trace_timing(summary: &Summary, prefix: &str) -> Option<String> {
    let rows = rows_where(summary, |r| {
        let d = r.def;
        !r.adjusted && d.has(flags::HTTP_TRACE_ONLY) && !d.has(flags::ERROR_ONLY)
    });
    (!rows.is_empty()).then(|| render_table(&format!("{prefix} | HTTP Trace Timing"), &rows))
}
