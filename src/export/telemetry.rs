//! The GPU-telemetry parts of the summary exports: `telemetry_data` in the JSON and the GPU table
//! header in the CSV, in AIPerf 0.13's shapes.
//!
//! ringperf does not collect GPU telemetry yet (DCGM / pynvml collection is issue #9), so it
//! configures no telemetry endpoint and these sections say exactly that, the way AIPerf writes
//! them when no telemetry source answered: empty `endpoints_configured` / `endpoints_successful`,
//! no `endpoints`, no errors, over the profiling window; and a GPU table with its header and no
//! rows. Scripts that read `telemetry_data` or split the CSV at the GPU table keep working.

use serde_json::{Map, Value};

use super::RunInfo;
use super::json::local_iso;

/// The CSV header of AIPerf's GPU telemetry table (before any optional host/pod columns).
pub const GPU_TABLE_HEADER: [&str; 20] = [
    "Endpoint",
    "GPU_Index",
    "GPU_Name",
    "GPU_UUID",
    "Platform",
    "Metric",
    "avg",
    "min",
    "max",
    "sum",
    "p1",
    "p5",
    "p10",
    "p25",
    "p50",
    "p75",
    "p90",
    "p95",
    "p99",
    "std",
];

/// `telemetry_data` for a run that collected no GPU telemetry.
pub fn telemetry_json(run: &RunInfo) -> Value {
    let mut summary = Map::new();
    summary.insert("endpoints_configured".into(), Value::Array(Vec::new()));
    summary.insert("endpoints_successful".into(), Value::Array(Vec::new()));
    summary.insert(
        "start_time".into(),
        Value::from(local_iso(run.start_wall_ns)),
    );
    summary.insert("end_time".into(), Value::from(local_iso(run.end_wall_ns)));
    let mut t = Map::new();
    t.insert("summary".into(), Value::Object(summary));
    t.insert("endpoints".into(), Value::Object(Map::new()));
    t.insert("error_summary".into(), Value::Array(Vec::new()));
    Value::Object(t)
}

/// Puts `telemetry_data` into a summary document just before `input_config`, where AIPerf has
/// it (at the end when there is no `input_config`).
pub fn insert_telemetry(doc: &mut Value, run: &RunInfo) {
    let Value::Object(o) = doc else {
        return;
    };
    let at = o
        .keys()
        .position(|k| k == "input_config")
        .unwrap_or(o.len());
    o.shift_insert(at, "telemetry_data".into(), telemetry_json(run));
}

/// The GPU table AIPerf appends to the summary CSV: two empty rows, then the header (rows
/// would follow, one per GPU metric).
pub fn gpu_table_csv() -> String {
    format!("\r\n\r\n{}\r\n", GPU_TABLE_HEADER.join(","))
}
