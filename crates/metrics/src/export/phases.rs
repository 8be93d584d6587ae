//! Per-phase artifacts (AIPerf 0.13's phase export): `phases/<name>/profile_export_aiperf.json`
//! and `.csv` for every phase that ran, and `phase_manifest.json`, the index of the phases with
//! their request counts, time ranges and the artifacts written for each; written only when the
//! run had more than one phase, as AIPerf writes them.
//!
//! A phase's JSON is the summary document of that phase alone: its own metrics, its own
//! `start_time` / `end_time`, no `warmup_metrics` and no `telemetry_data`. Its CSV is the summary
//! CSV of that phase. When server metrics were collected during the phase, its
//! `server_metrics.json` wraps the phase's server-metrics result (built by
//! `crate::server_metrics::export::phase`) as AIPerf does: `{schema_version: 1, phase: {…},
//! data, warnings: []}`, keys sorted, and the manifest entry names it in `server_metrics_json`.
//! The manifest is written after the phase files, with sorted keys and 2-space indentation, as
//! AIPerf writes it; a phase with no request is still listed.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::jsonl::PhaseTag;
use super::{ExportNames, RunInfo, summary_csv, summary_json_string};
use crate::aggregate::{MetricId, Summary};

/// The directory under the artifact directory that holds one folder per phase.
pub const PHASES_DIR: &str = "phases";
/// The phase index file.
pub const MANIFEST_FILE: &str = "phase_manifest.json";
/// A phase's server-metrics file, in its folder.
pub const SERVER_METRICS_FILE: &str = "server_metrics.json";

/// One phase of the run, as it is exported.
#[derive(Clone, Copy, Debug)]
pub struct PhaseRun<'a> {
    /// Which phase: its kind, number in the run, number among the profiling phases and name
    /// (its folder under `phases/`).
    pub tag: PhaseTag<'a>,
    /// Its metric results.
    pub summary: &'a Summary,
    /// Wall-clock epoch ns when the phase started and ended.
    pub start_wall_ns: u64,
    /// See `start_wall_ns`.
    pub end_wall_ns: u64,
    /// The phase was cut short.
    pub was_cancelled: bool,
    /// The phase's server-metrics result (the file's `data`), when server metrics were
    /// collected during it.
    pub server_metrics: Option<&'a Value>,
}

impl PhaseRun<'_> {
    fn count(&self, id: MetricId) -> u64 {
        self.summary.value(id).map_or(0, |v| v as u64)
    }
}

/// Writes every phase's JSON (unless `json` is false: AIPerf's `artifacts.summary: false`) and
/// CSV, then the manifest, and returns the manifest's path; for a run of one phase nothing
/// (AIPerf 0.13 writes the per-phase files only when the run had more than one phase: the run's
/// own files are that phase's).
pub fn write_phase_artifacts(
    dir: &Path,
    names: &ExportNames,
    phases: &[PhaseRun<'_>],
    run: &RunInfo,
    json: bool,
) -> io::Result<Option<PathBuf>> {
    // Agentic replay's own warmup has no place in the file's list: no files, no entry.
    let phases: Vec<&PhaseRun<'_>> = (phases.iter())
        .filter(|p| p.tag.shown_index.is_some())
        .collect();
    if phases.len() <= 1 {
        return Ok(None);
    }
    let mut entries = Vec::with_capacity(phases.len());
    for p in phases {
        let rel = Path::new(PHASES_DIR).join(p.tag.name);
        std::fs::create_dir_all(dir.join(&rel))?;
        let phase_info = RunInfo {
            start_wall_ns: p.start_wall_ns,
            end_wall_ns: p.end_wall_ns,
            was_cancelled: p.was_cancelled,
            // The verdict is the profiling phase's (its dispatch lag).
            client_health: run
                .client_health
                .clone()
                .filter(|_| p.tag.phase == ringperf_wire::record::Phase::Profiling),
            ..run.clone()
        };
        let json_rel = json.then(|| rel.join(&names.json));
        if let Some(json_rel) = &json_rel {
            std::fs::write(
                dir.join(json_rel),
                summary_json_string(p.summary, None, &phase_info),
            )?;
        }
        let csv_rel = rel.join(&names.csv);
        std::fs::write(dir.join(&csv_rel), summary_csv(p.summary))?;
        let mut entry = manifest_entry(p, json_rel.as_deref(), &csv_rel);
        if let Some(data) = p.server_metrics {
            let sm_rel = rel.join(SERVER_METRICS_FILE);
            std::fs::write(dir.join(&sm_rel), pretty(&server_metrics_json(p, data)))?;
            if let Value::Object(m) = &mut entry {
                m.insert("server_metrics_json".into(), Value::from(posix(&sm_rel)));
                m.sort_keys();
            }
        }
        entries.push(entry);
    }
    let manifest = manifest_json(entries);
    let path = dir.join(MANIFEST_FILE);
    std::fs::write(&path, pretty(&manifest))?;
    Ok(Some(path))
}

/// 2-space indented JSON with a final newline.
fn pretty(v: &Value) -> String {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    text
}

/// `phases/<phase>/server_metrics.json`: the phase header, the result, no warnings; keys sorted.
fn server_metrics_json(p: &PhaseRun<'_>, data: &Value) -> Value {
    let mut phase = Map::new();
    phase.insert("end_ns".into(), Value::from(p.end_wall_ns));
    phase.insert("phase_index".into(), Value::from(p.tag.shown_index));
    phase.insert("phase_kind".into(), Value::from(p.tag.phase.as_str()));
    phase.insert("phase_name".into(), Value::from(p.tag.name));
    phase.insert(
        "profiling_index".into(),
        p.tag.profiling_index.map_or(Value::Null, Value::from),
    );
    phase.insert("start_ns".into(), Value::from(p.start_wall_ns));
    phase.insert("was_cancelled".into(), Value::from(p.was_cancelled));
    let mut m = Map::new();
    m.insert("data".into(), data.clone());
    m.insert("phase".into(), Value::Object(phase));
    m.insert("schema_version".into(), Value::from(1));
    m.insert("warnings".into(), Value::Array(Vec::new()));
    Value::Object(m)
}

/// One manifest entry, keys sorted as AIPerf sorts them.
fn manifest_entry(p: &PhaseRun<'_>, json_rel: Option<&Path>, csv_rel: &Path) -> Value {
    let ok = p.count(MetricId::RequestCount);
    let errors = p.count(MetricId::ErrorRequestCount);
    let error_summary: Vec<Value> = p
        .summary
        .error_summary
        .iter()
        .map(|e| {
            // AIPerf dumps every field of its error model, unset ones as null, keys sorted.
            let mut details = Map::new();
            details.insert("cause".into(), Value::Null);
            details.insert("cause_chain".into(), Value::Null);
            details.insert("code".into(), e.code.map_or(Value::Null, Value::from));
            details.insert("details".into(), Value::Null);
            details.insert("message".into(), Value::from(e.message.as_str()));
            details.insert("type".into(), Value::from(e.kind.as_str()));
            let mut item = Map::new();
            item.insert("count".into(), Value::from(e.count));
            item.insert("error_details".into(), Value::Object(details));
            Value::Object(item)
        })
        .collect();
    let mut m = Map::new();
    m.insert("end_ns".into(), Value::from(p.end_wall_ns));
    m.insert("error_request_count".into(), Value::from(errors));
    m.insert("error_summary".into(), Value::Array(error_summary));
    m.insert("metrics_csv".into(), Value::from(posix(csv_rel)));
    if let Some(json_rel) = json_rel {
        m.insert("metrics_json".into(), Value::from(posix(json_rel)));
    }
    m.insert("phase_index".into(), Value::from(p.tag.shown_index));
    m.insert("phase_kind".into(), Value::from(p.tag.phase.as_str()));
    m.insert("phase_name".into(), Value::from(p.tag.name));
    m.insert(
        "profiling_index".into(),
        p.tag.profiling_index.map_or(Value::Null, Value::from),
    );
    m.insert("start_ns".into(), Value::from(p.start_wall_ns));
    m.insert("successful_request_count".into(), Value::from(ok));
    m.insert("total_request_count".into(), Value::from(ok + errors));
    m.insert("was_cancelled".into(), Value::from(p.was_cancelled));
    Value::Object(m)
}

/// The manifest document: `{"phases": [...], "schema_version": 1}`, phases in index order.
fn manifest_json(mut entries: Vec<Value>) -> Value {
    entries.sort_by_key(|e| e.get("phase_index").and_then(Value::as_u64));
    let mut m = Map::new();
    m.insert("phases".into(), Value::Array(entries));
    m.insert("schema_version".into(), Value::from(1));
    Value::Object(m)
}

/// A relative path with `/` separators, as AIPerf records it.
fn posix(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
