//! `--wandb-*` (docs/integrations.md#weights--biases): after a run has written its files, one
//! Weights & Biases run, made by the real `wandb` Python package as AIPerf 0.13 makes it (its
//! `.wandb` run file is a log of protobuf records that only `wandb` writes faithfully). The
//! package is found at run time: `$RINGPERF_WANDB_PYTHON`, else `python3`; without it the export
//! is one warning saying so. `wandb`'s own settings apply (`WANDB_MODE=offline` writes the run
//! directory `wandb sync` uploads, under `<artifact-dir>/wandb/`; `WANDB_API_KEY` for online).
//!
//! What is logged, as AIPerf's exporter: the config (the run's `input_config` and
//! `aiperf.cli_command`), tags (`aiperf-0.13.0`, `benchmark-<8 characters of the id>`, the
//! `--wandb-tag`s), a `summary_metrics` table (the console's main table: one row per metric,
//! `Metric` then avg, min, max, p99, p90, p50, std rounded to 2 decimals), and an artifact
//! `aiperf-<run id>` of type `aiperf-run` holding the run's export files.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::mlflow::{DEFAULT_GLOBS, TrackerError, artifact_files};
use crate::aggregate::registry::flags;
use crate::aggregate::{ConsoleGroup, MetricDef};

/// `--wandb-*`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wandb {
    pub project: String,
    pub entity: Option<String>,
    pub run_name: Option<String>,
    pub tags: Vec<String>,
}

/// The columns of the `summary_metrics` table.
pub const COLUMNS: [&str; 8] = ["Metric", "avg", "min", "max", "p99", "p90", "p50", "std"];

/// The rows of the `summary_metrics` table from a run's summary JSON: the metrics of the
/// console's main table, in its order, labelled as on the console.
pub fn table_rows(summary: &Value) -> Vec<Value> {
    let Some(m) = summary.as_object() else {
        return Vec::new();
    };
    let mut picked: Vec<(&'static MetricDef, &Value)> = m
        .iter()
        .filter_map(|(tag, v)| Some((MetricDef::by_tag(tag)?, v)))
        .filter(|(d, v)| {
            v.get("unit").is_some()
                && d.console_group == ConsoleGroup::Default
                && !d.has(flags::ERROR_ONLY | flags::INTERNAL | flags::EXPERIMENTAL)
        })
        .collect();
    picked.sort_by_key(|(d, _)| d.display_order.unwrap_or(u32::MAX));
    picked
        .into_iter()
        .map(|(d, v)| {
            let unit = v["unit"].as_str().unwrap_or_default();
            // One line, as AIPerf labels its table rows (the console wraps long ones).
            let mut row = vec![Value::from(format!("{} ({unit})", d.header))];
            for stat in &COLUMNS[1..] {
                row.push(
                    v.get(*stat)
                        .and_then(Value::as_f64)
                        .filter(|x| x.is_finite())
                        .map_or(Value::Null, |x| json!((x * 100.0).round() / 100.0)),
                );
            }
            Value::Array(row)
        })
        .collect()
}

/// The Python that drives `wandb`: reads the run's description on stdin, prints the run's id,
/// name and local directory as one JSON line.
const DRIVER: &str = r#"
import json, sys
try:
    import wandb
except ImportError as e:
    print("no-wandb: " + str(e), file=sys.stderr)
    sys.exit(3)
spec = json.load(sys.stdin)
run = wandb.init(entity=spec["entity"], project=spec["project"], name=spec["name"],
                 dir=spec["dir"], config=spec["config"], tags=spec["tags"],
                 settings=wandb.Settings(x_disable_meta=True, save_code=False))
try:
    run.log({"summary_metrics": wandb.Table(columns=spec["columns"], data=spec["rows"])})
    if spec["files"]:
        art = wandb.Artifact(name="aiperf-" + run.id, type="aiperf-run")
        for path, name in spec["files"]:
            art.add_file(path, name=name)
        run.log_artifact(art)
finally:
    run.finish()
print(json.dumps({"id": run.id, "name": run.name, "dir": run.dir}))
"#;

/// The Python that has `wandb`: `$RINGPERF_WANDB_PYTHON`, else `python3`.
fn python() -> PathBuf {
    std::env::var_os("RINGPERF_WANDB_PYTHON")
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// What one export made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Made {
    pub id: String,
    pub name: String,
    /// The run's local files directory (`…/wandb/<run>/files`).
    pub dir: String,
    pub files: usize,
}

/// Makes the W&B run of a finished run (see the module documentation).
///
/// # Errors
/// No `wandb` package, or `wandb` failed (its last lines are in the message).
pub fn export(w: &Wandb, dir: &Path, summary: &Value) -> Result<Made, TrackerError> {
    let benchmark_id = summary["benchmark_id"].as_str().unwrap_or_default();
    let short: String = benchmark_id.chars().take(8).collect();
    let name = w
        .run_name
        .clone()
        .unwrap_or_else(|| format!("aiperf-{short}"));
    let mut tags = vec![format!(
        "aiperf-{}",
        summary["aiperf_version"].as_str().unwrap_or("0.13.0")
    )];
    if !short.is_empty() {
        tags.push(format!("benchmark-{short}"));
    }
    tags.extend(w.tags.iter().cloned());
    let mut config = summary["input_config"].clone();
    if let (Some(c), Some(cmd)) = (
        config.as_object_mut(),
        summary["run_info"]["cli_command"].as_str(),
    ) {
        c.insert("aiperf.cli_command".into(), Value::from(cmd));
    }
    // `wandb.init(dir=…)` writes its state under `<dir>/wandb/`: never uploaded.
    let globs: Vec<String> = DEFAULT_GLOBS.iter().map(|g| (*g).to_owned()).collect();
    let files: Vec<(String, String)> = artifact_files(dir, &globs)
        .into_iter()
        .filter(|f| !f.starts_with(dir.join("wandb")))
        .map(|f| {
            let rel = f
                .strip_prefix(dir)
                .map_or_else(|_| f.clone(), Path::to_path_buf);
            (f.display().to_string(), rel.display().to_string())
        })
        .collect();
    let spec = json!({
        "project": w.project, "entity": w.entity, "name": name, "dir": dir.display().to_string(),
        "config": config, "tags": tags, "columns": COLUMNS, "rows": table_rows(summary),
        "files": files,
    });
    let py = python();
    let mut child = Command::new(&py)
        .arg("-c")
        .arg(DRIVER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TrackerError::Config(format!("cannot run {}: {e}", py.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(spec.to_string().as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| TrackerError::Server(format!("{}: {e}", py.display())))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) && err.contains("no-wandb") {
        return Err(TrackerError::Config(format!(
            "--wandb-project needs the wandb Python package, which {} cannot import (pip install \
             wandb, or set RINGPERF_WANDB_PYTHON to a Python that has it)",
            py.display()
        )));
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let made: Option<Value> = line
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok());
    match (out.status.success(), made) {
        (true, Some(v)) => Ok(Made {
            id: v["id"].as_str().unwrap_or_default().to_owned(),
            name: v["name"].as_str().unwrap_or_default().to_owned(),
            dir: v["dir"].as_str().unwrap_or_default().to_owned(),
            files: files.len(),
        }),
        _ => {
            let tail: Vec<&str> = err.lines().rev().take(5).collect();
            Err(TrackerError::Server(format!(
                "wandb failed ({}): {}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_console_s_main_table_in_its_order() {
        let s = json!({
            "request_latency": {"unit": "ms", "avg": 2.345, "min": 1.0, "max": 3.0, "p99": 2.999,
                                "p90": 2.5, "p50": 2.2, "std": 0.333},
            "time_to_first_token": {"unit": "ms", "avg": 1.0},
            "usage_prompt_tokens": {"unit": "tokens", "avg": 5.0},
            "effective_concurrency": {"unit": "requests", "avg": 1.0},
            "benchmark_id": "x",
        });
        let rows = table_rows(&s);
        let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str().unwrap()).collect();
        assert_eq!(labels, ["Time to First Token (ms)", "Request Latency (ms)"]);
        assert_eq!(
            rows[1],
            json!(["Request Latency (ms)", 2.35, 1.0, 3.0, 3.0, 2.5, 2.2, 0.33])
        );
        assert_eq!(rows[0][2], Value::Null);
    }
}
