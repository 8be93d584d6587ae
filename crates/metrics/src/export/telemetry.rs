//! The GPU-telemetry parts of the summary exports: `telemetry_data` in the JSON and the GPU table
//! header in the CSV, in AIPerf 0.13's shapes.
//!
//! With GPU telemetry collected ([`crate::gpu_telemetry`]), `telemetry_data` lists the DCGM
//! endpoints that answered, the statistics window and every GPU's metrics, and the GPU table has
//! one row per GPU per metric. When nothing was collected (`--no-gpu-telemetry`, no exporter
//! reachable, a merge of shard records) these sections are written the way AIPerf writes them
//! when no telemetry source answered: empty `endpoints_configured` / `endpoints_successful`, no
//! `endpoints`, no errors, over the profiling window; and a GPU table with its header and no
//! rows. Scripts that read `telemetry_data` or split the CSV at the GPU table keep working.

use serde_json::{Map, Value};

use super::RunInfo;
use super::csv::field;
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

/// What a run's GPU telemetry puts into the summary files, already in AIPerf's shapes (made by
/// [`crate::gpu_telemetry::summary::Telemetry`]; plain data here, so the exports do not depend on
/// the collection).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuSections {
    /// The DCGM URLs that produced data (`endpoints_configured` and `endpoints_successful`).
    pub urls: Vec<String>,
    /// Statistics window, wall ns.
    pub start_ns: u64,
    /// Statistics window end, wall ns.
    pub end_ns: u64,
    /// `telemetry_data.endpoints`.
    pub endpoints: Value,
    /// Headers after [`GPU_TABLE_HEADER`] (`Hostname`, …).
    pub extra_headers: Vec<&'static str>,
    /// The GPU table's rows, unquoted.
    pub rows: Vec<Vec<String>>,
}

/// `telemetry_data`: what `gpu` collected, or the empty block of a run that collected nothing.
pub fn telemetry_json(run: &RunInfo, gpu: Option<&GpuSections>) -> Value {
    let urls: Vec<Value> = gpu
        .map(|g| g.urls.iter().map(|u| Value::from(u.as_str())).collect())
        .unwrap_or_default();
    let (start, end) = gpu.map_or((run.start_wall_ns, run.end_wall_ns), |g| {
        (g.start_ns, g.end_ns)
    });
    let mut summary = Map::new();
    summary.insert("endpoints_configured".into(), Value::Array(urls.clone()));
    summary.insert("endpoints_successful".into(), Value::Array(urls));
    summary.insert("start_time".into(), Value::from(local_iso(start)));
    summary.insert("end_time".into(), Value::from(local_iso(end)));
    let mut t = Map::new();
    t.insert("summary".into(), Value::Object(summary));
    t.insert(
        "endpoints".into(),
        gpu.map_or_else(|| Value::Object(Map::new()), |g| g.endpoints.clone()),
    );
    t.insert("error_summary".into(), Value::Array(Vec::new()));
    Value::Object(t)
}

/// Puts `telemetry_data` into a summary document just before `input_config`, where AIPerf has
/// it (at the end when there is no `input_config`).
pub fn insert_telemetry(doc: &mut Value, run: &RunInfo, gpu: Option<&GpuSections>) {
    let Value::Object(o) = doc else {
        return;
    };
    let at = o
        .keys()
        .position(|k| k == "input_config")
        .unwrap_or(o.len());
    o.shift_insert(at, "telemetry_data".into(), telemetry_json(run, gpu));
}

/// The GPU table AIPerf appends to the summary CSV: two empty rows, the header (with
/// `Hostname` / `Namespace` / `Pod Name` when a GPU has them), then one row per GPU per metric.
pub fn gpu_table_csv(gpu: Option<&GpuSections>) -> String {
    let mut header: Vec<&str> = GPU_TABLE_HEADER.to_vec();
    header.extend(gpu.map(|g| g.extra_headers.clone()).unwrap_or_default());
    let mut out = format!("\r\n\r\n{}\r\n", header.join(","));
    for row in gpu.map(|g| g.rows.as_slice()).unwrap_or_default() {
        let cells: Vec<String> = row.iter().map(|c| field(c)).collect();
        out.push_str(&cells.join(","));
        out.push_str("\r\n");
    }
    out
}
