//! The collated JSON AIPerf writes beside a repeated profile's aggregate when
//! `--convergence-metric` is given (`aggregate/profile_export_aiperf_collated.json`,
//! docs/output-formats.md): every metric's per-request values pooled over the runs that count,
//! with NumPy's mean, sample standard deviation and linear percentiles, and each run's own
//! mean and count.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use ringperf_metrics::export::aggregate::{AGGREGATE_DIR, Aggregate};
use ringperf_metrics::server_metrics::stats::{mean, percentile_sorted, std_ddof1};

/// A metric's values in each run: `(label, values)`.
type RunValues = Vec<(String, Vec<f64>)>;

/// The file's name in `aggregate/`.
pub const COLLATED_NAME: &str = "profile_export_aiperf_collated.json";

/// Every numeric `metrics.<tag>.value` of the profiling records without an error in the JSONL
/// at `path`, by tag in order of first appearance. A missing file or a malformed line adds
/// nothing.
fn all_values(path: &Path) -> Vec<(String, Vec<f64>)> {
    let mut out: Vec<(String, Vec<f64>)> = Vec::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return out;
    };
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if record["metadata"]["benchmark_phase"] != "profiling" || !record["error"].is_null() {
            continue;
        }
        let Some(metrics) = record["metrics"].as_object() else {
            continue;
        };
        for (tag, entry) in metrics {
            let Some(v) = entry["value"].as_f64() else {
                continue;
            };
            match out.iter_mut().find(|(t, _)| t == tag) {
                Some((_, values)) => values.push(v),
                None => out.push((tag.clone(), vec![v])),
            }
        }
    }
    out
}

/// The collated document of `a`'s runs; `records` gives each counted run's label and JSONL.
pub fn collated_json(a: &Aggregate, records: &[(String, PathBuf)], aiperf_version: &str) -> Value {
    // tag -> [(label, values)], tags in order of first appearance over the runs.
    let mut per_tag: Vec<(String, RunValues)> = Vec::new();
    for (label, path) in records {
        for (tag, values) in all_values(path) {
            let entry = (label.clone(), values);
            match per_tag.iter_mut().find(|(t, _)| *t == tag) {
                Some((_, runs)) => runs.push(entry),
                None => per_tag.push((tag, vec![entry])),
            }
        }
    }
    let mut metrics = Map::new();
    for (tag, runs) in per_tag {
        let mut all: Vec<f64> = runs.iter().flat_map(|(_, v)| v.iter().copied()).collect();
        let Some(avg) = mean(&all) else {
            continue;
        };
        let std = if all.len() > 1 {
            std_ddof1(&all).unwrap_or(0.0)
        } else {
            0.0
        };
        all.sort_by(f64::total_cmp);
        let pct = |q: f64| percentile_sorted(&all, q).map_or(Value::Null, |v| json!(v));
        let per_run: Vec<Value> = runs
            .iter()
            .map(|(label, v)| {
                json!({"label": label, "mean": mean(v).map_or(Value::Null, |m| json!(m)), "count": v.len()})
            })
            .collect();
        metrics.insert(
            tag,
            json!({
                "combined": {
                    "mean": avg, "std": std, "p50": pct(50.0), "p90": pct(90.0),
                    "p95": pct(95.0), "p99": pct(99.0), "count": all.len(),
                },
                "per_run": per_run,
            }),
        );
    }
    let failed: Vec<Value> = a
        .failed_runs
        .iter()
        .map(|(label, error)| json!({"label": label, "error": error}))
        .collect();
    json!({
        "schema_version": "1.0.0",
        "aiperf_version": aiperf_version,
        "description": "Per-request values of every metric pooled over the runs that count, \
            with percentiles of the pooled values (the aggregate JSON's statistics are over \
            the runs' summary values instead).",
        "metadata": {
            "aggregation_type": "detailed",
            "num_profile_runs": a.num_runs,
            "num_successful_runs": a.run_labels.len(),
            "failed_runs": failed,
            "run_labels": a.run_labels,
            "cooldown_seconds": a.cooldown_seconds,
        },
        "metrics": metrics,
    })
}

/// Writes the collated JSON into `<base>/aggregate/`.
///
/// # Errors
/// The file cannot be written.
pub fn write_collated(
    base: &Path,
    a: &Aggregate,
    records: &[(String, PathBuf)],
    aiperf_version: &str,
) -> io::Result<PathBuf> {
    let dir = base.join(AGGREGATE_DIR);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(COLLATED_NAME);
    let text = serde_json::to_string_pretty(&collated_json(a, records, aiperf_version))
        .map_err(io::Error::other)?;
    std::fs::write(&path, text)?;
    Ok(path)
}
