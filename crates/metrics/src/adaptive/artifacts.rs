//! The files of an adaptive phase, as AIPerf 0.13 writes them (docs/output-formats.md):
//! `adaptive_scale_manifest.json` in the artifact directory (one entry per adaptive phase),
//! and in `phases/<name>/` the phase's `adaptive_scale_events.jsonl` (one compact line per
//! event, keys sorted) and `adaptive_scale_summary.json` (keys sorted, two-space indent, a
//! final newline).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::controller::{Controller, Event};
use super::window::WindowStats;

/// The files' `schema_version`.
pub const SCHEMA_VERSION: u64 = 2;
pub const MANIFEST_FILE: &str = "adaptive_scale_manifest.json";
pub const EVENTS_FILE: &str = "adaptive_scale_events.jsonl";
pub const SUMMARY_FILE: &str = "adaptive_scale_summary.json";

/// Which phase of the run an adaptive phase is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseId {
    pub name: String,
    /// Its place among the run's phases (a warmup first).
    pub index: u64,
    /// Its place among the profiling phases.
    pub profiling_index: u64,
}

/// The writer of one adaptive phase's files.
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    id: PhaseId,
    integer: bool,
}

impl Writer {
    /// The writer of `id`'s files under the artifact directory `dir`; adds its manifest entry
    /// (the manifest keeps one entry per phase name and index, sorted by phase index).
    ///
    /// # Errors
    /// The manifest or the phase's folder cannot be written.
    pub fn open(dir: &Path, id: PhaseId, integer: bool) -> std::io::Result<Self> {
        let phase_dir = dir.join("phases").join(&id.name);
        std::fs::create_dir_all(&phase_dir)?;
        let manifest = dir.join(MANIFEST_FILE);
        let mut entries: Vec<Value> = std::fs::read(&manifest)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.get("adaptive_phases").and_then(Value::as_array).cloned())
            .unwrap_or_default();
        let rel = |f: &str| format!("phases/{}/{f}", id.name);
        entries.retain(|e| {
            !(e["phase_name"] == id.name.as_str() && e["phase_index"] == json!(id.index))
        });
        entries.push(json!({
            "events_path": rel(EVENTS_FILE),
            "phase_index": id.index,
            "phase_kind": "profiling",
            "phase_name": id.name,
            "profiling_index": id.profiling_index,
            "summary_path": rel(SUMMARY_FILE),
        }));
        entries.sort_by_key(|e| e["phase_index"].as_u64().unwrap_or(0));
        let doc = json!({"adaptive_phases": entries, "schema_version": SCHEMA_VERSION});
        write_pretty(&manifest, &doc)?;
        // A phase run again in the same directory starts its events anew.
        std::fs::write(phase_dir.join(EVENTS_FILE), b"")?;
        Ok(Self {
            dir: phase_dir,
            id,
            integer,
        })
    }

    /// Appends `events` (emitted at wall-clock `now_ns`) to the phase's JSONL; `users`: the
    /// users alive then, when the controller moves a user-centric phase's users.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn events(
        &self,
        c: &Controller,
        events: &[Event],
        now_ns: u64,
        users: Option<u64>,
    ) -> std::io::Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut out = Vec::new();
        for e in events {
            let v = sorted(self.event(c, e, now_ns, users));
            serde_json::to_writer(&mut out, &v)?;
            out.push(b'\n');
        }
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(self.dir.join(EVENTS_FILE))?;
        f.write_all(&out)
    }

    /// Writes the summary of a controller that ended (`users`: as for [`Writer::events`]).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn summary(&self, c: &Controller, users: Option<u64>) -> std::io::Result<()> {
        write_pretty(
            &self.dir.join(SUMMARY_FILE),
            &sorted(self.summary_value(c, users)),
        )
    }

    fn num(&self, v: f64) -> Value {
        if self.integer {
            json!(v as i64)
        } else {
            json!(v)
        }
    }

    fn opt(&self, v: Option<f64>) -> Value {
        v.map_or(Value::Null, |v| self.num(v))
    }

    /// The control's state: its value, or a user-centric phase's target and the users alive
    /// (those over the target are retiring: they end with their last turn, none is cancelled).
    fn control(&self, v: f64, users: Option<u64>) -> Value {
        match users {
            None => json!({"actual_value": self.num(v), "target_value": self.num(v)}),
            Some(alive) => json!({
                "active_users": alive,
                "actual_value": alive,
                "cancelled": 0,
                "retiring_users": alive.saturating_sub(v as u64),
                "target_value": self.num(v),
            }),
        }
    }

    fn event(&self, c: &Controller, e: &Event, now_ns: u64, users: Option<u64>) -> Value {
        let s = c.settings();
        let primary = &s.sla[0];
        let before = e.before.unwrap_or(e.value);
        let k = &e.counts;
        let values: Map<String, Value> = (e.sla_values.iter())
            .map(|(key, v)| (key.clone(), json!(v)))
            .collect();
        let v = json!({
            "schema_version": SCHEMA_VERSION,
            "timestamp": now_ns,
            "timestamp_ns": now_ns,
            "timestamp_utc": iso_utc(now_ns),
            "event": e.kind.name(),
            "phase": e.state.name(),
            "control_variable": s.variable.name(),
            "control_value_before": self.num(before),
            "control_value_after": self.num(e.value),
            "control_value": self.num(e.value),
            "control": self.control(e.value, users),
            "boundary_value": self.opt(e.boundary),
            "last_passing_value": self.opt(e.last_passing),
            "first_failing_value": self.opt(e.first_failing),
            "sla_metric": primary.metric_tag,
            "sla_stat": primary.stat().name(),
            "sla_op": primary.op.as_str(),
            "sla_value": e.sla_value,
            "sla_bound": primary.threshold,
            "sla_values": values,
            "binding_sla": e.binding_sla,
            "throughput": k.throughput,
            "sample_count": k.successes,
            "completed": k.successes,
            "sent": k.successes + k.errors + k.cancelled,
            "in_flight": null,
            "cancelled": k.cancelled,
            "errored": k.errors,
            "error_count": k.errors,
            "sla_passed": e.passed,
            "strategy_type": "ramp_until_fail",
            "step_policy": s.step_policy.name(),
            "step_size": e.step_size.map(|v| self.num(v)),
            "reason": e.reason,
        });
        let identity = json!({
            "run_id": null,
            "phase_id": self.id.name,
            "phase_index": self.id.index,
            "profiling_index": self.id.profiling_index,
            "phase_name": self.id.name,
            "phase_kind": "profiling",
            "phase_start_ts": null,
            "phase_end_ts": null,
            "adaptive_iteration": e.iteration,
            "candidate_value": self.num(before),
            "accepted_value": self.num(e.value),
            "fault_window_id": null,
        });
        merge(v, identity)
    }

    fn summary_value(&self, c: &Controller, users: Option<u64>) -> Value {
        let s = c.settings();
        let primary = &s.sla[0];
        let (windows, passed) = c.sustain_windows();
        let k = c.final_counts();
        let ending = c.ending();
        let candidates: Vec<Value> = (c.candidates().iter())
            .map(|k| {
                candidate(
                    self.num(k.value),
                    k.iteration,
                    &k.stats,
                    k.accepted,
                    k.rejection,
                )
            })
            .collect();
        let v = json!({
            "schema_version": SCHEMA_VERSION,
            "status": ending.map_or("completed", |e| e.status()),
            "control_variable": s.variable.name(),
            "control_value": self.num(c.value()),
            "control": self.control(c.value(), users),
            "boundary_value": self.opt(c.boundary()),
            "last_passing_value": self.opt(c.last_passing()),
            "first_failing_value": self.opt(c.first_failing()),
            "result": {
                "last_passing_value": self.opt(c.last_passing()),
                "first_failing_value": self.opt(c.first_failing()),
                "boundary_value": self.opt(c.boundary()),
            },
            "sustain_started_at": c.sustain_started_ns(),
            "sustain_duration_seconds": s.sustain_s,
            "completed_reason": ending.map(|e| e.reason()),
            "sla_passed_during_sustain": windows > 0 && passed == windows,
            "sustain_windows": windows,
            "sustain_passed_windows": passed,
            "sla_metric": primary.metric_tag,
            "sla_stat": primary.stat().name(),
            "sla_op": primary.op.as_str(),
            "sla_bound": primary.threshold,
            "sla": {
                "metric": primary.metric_tag,
                "stat": primary.stat().name(),
                "op": primary.op.as_str(),
                "bound": primary.threshold,
            },
            "totals": {
                "sent": k.successes + k.errors + k.cancelled,
                "completed": k.successes,
                "errored": k.errors,
                "cancelled": k.cancelled,
            },
            "throughput": k.throughput,
            "candidates": candidates,
            "strategy_type": "ramp_until_fail",
            "step_policy": s.step_policy.name(),
            "base_step": s.base_step,
            "max_step_multiplier": s.max_step_multiplier,
            "step_percent": s.step_percent,
        });
        let identity = json!({
            "phase_index": self.id.index,
            "profiling_index": self.id.profiling_index,
            "phase_name": self.id.name,
            "phase_kind": "profiling",
        });
        merge(v, identity)
    }
}

/// One assessed window of the summary's `candidates`.
fn candidate(value: Value, iteration: u64, w: &WindowStats, accepted: bool, why: &str) -> Value {
    let total = w.total();
    json!({
        "adaptive_iteration": iteration,
        "candidate_value": value,
        "control_value": value,
        "start_ts": iso_utc(w.start_wall_ns),
        "end_ts": iso_utc(w.end_wall_ns),
        "duration_s": w.elapsed_s,
        "request_count": total,
        "error_count": w.errors,
        "cancelled": w.cancelled,
        "success_count": w.successes(),
        "success_rate": if total == 0 { 0.0 } else { w.successes() as f64 / total as f64 },
        "throughput_rps": w.throughput(),
        "latency_p50_ms": w.percentile_ms(0, 50.0),
        "latency_p95_ms": w.percentile_ms(0, 95.0),
        "latency_p99_ms": w.percentile_ms(0, 99.0),
        "ttft_p50_ms": w.percentile_ms(1, 50.0),
        "ttft_p95_ms": w.percentile_ms(1, 95.0),
        "ttft_p99_ms": w.percentile_ms(1, 99.0),
        "itl_p50_ms": w.percentile_ms(2, 50.0),
        "itl_p95_ms": w.percentile_ms(2, 95.0),
        "itl_p99_ms": w.percentile_ms(2, 99.0),
        "accepted": accepted,
        "rejection_reason": if accepted { Value::Null } else { json!(why) },
        "latency_avg_ms": w.latency_avg_ms(),
    })
}

/// The keys of `b` added to the object `a`.
fn merge(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut a), Value::Object(b)) => {
            a.extend(b);
            Value::Object(a)
        }
        (a, _) => a,
    }
}

/// `v` with the keys of every object sorted.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut pairs: Vec<(String, Value)> = m.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn write_pretty(path: &Path, v: &Value) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(v)?;
    text.push(b'\n');
    std::fs::write(path, text)
}

/// Wall-clock ns as ISO 8601 with microseconds and `Z` (`2026-12-07T10:16:07.760417Z`).
pub fn iso_utc(ns: u64) -> String {
    let micros = (ns as i128 + 500) / 1000;
    match jiff::Timestamp::from_microsecond(micros as i64) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_with_microseconds() {
        assert_eq!(
            iso_utc(1_796_638_567_760_417_242),
            "2026-12-07T10:16:07.760417Z"
        );
    }
}
