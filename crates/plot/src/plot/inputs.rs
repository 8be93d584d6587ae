//! Reading an artifact directory for `ringperf plot`: the profiling records of
//! `profile_export.jsonl`, the summary `profile_export_aiperf.json`, the server-metrics
//! timeslices of `server_metrics_export.json`, and for a multi-run directory
//! (`profile_runs/run_NNNN/`, or `trial_NNNN/` in a sweep's variation, +
//! `aggregate/profile_export_aiperf_aggregate.json`) every run and the aggregate's confidence
//! intervals. Nothing here panics on a garbled file: what cannot be read becomes a note shown in
//! the report, and a directory with nothing usable is an error.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One request of the profiling phase, as `profile_export.jsonl` holds it (ms, wall-clock ns).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub start_ns: u64,
    pub end_ns: u64,
    pub ttft_ms: Option<f64>,
    pub itl_ms: Option<f64>,
    pub latency_ms: Option<f64>,
    pub output_tokens: Option<f64>,
    /// The record's phase (`phase_name`) when it has one: a run of several profiling phases
    /// is drawn per phase.
    pub phase: Option<String>,
}

/// One run: its records, summary and server metrics. A multi-run directory has several.
#[derive(Debug, Clone)]
pub struct Run {
    /// `run_0001` inside a multi-run directory, else empty.
    pub label: String,
    pub dir: PathBuf,
    pub requests: Vec<Request>,
    pub summary: Option<Value>,
    pub server_metrics: Option<Value>,
}

/// `<tag>_<stat>` of `aggregate/profile_export_aiperf_aggregate.json`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// One input directory: a single run, or the runs of a multi-run directory and their aggregate.
#[derive(Debug, Clone)]
pub struct Input {
    pub dir: PathBuf,
    /// From the profiling phase of `input_config`: `concurrency 4`, `rate 10`, or the name.
    pub label: String,
    pub runs: Vec<Run>,
    pub aggregate: Option<Value>,
    /// What could not be read (shown in the page).
    pub notes: Vec<String>,
}

impl Input {
    /// A summary statistic: the aggregate's mean and interval, or the single run's value.
    pub fn stat(&self, tag: &str, stat: &str) -> Option<Interval> {
        if let Some(agg) = &self.aggregate {
            let m = &agg["metrics"][format!("{tag}_{stat}")];
            let mean = m["mean"].as_f64()?;
            return Some(Interval {
                mean,
                ci_low: m["ci_low"].as_f64().unwrap_or(mean),
                ci_high: m["ci_high"].as_f64().unwrap_or(mean),
            });
        }
        let [run] = self.runs.as_slice() else {
            return None;
        };
        let v = run.summary.as_ref()?[tag][stat].as_f64()?;
        Some(Interval {
            mean: v,
            ci_low: v,
            ci_high: v,
        })
    }

    fn has_data(&self) -> bool {
        self.aggregate.is_some()
            || self
                .runs
                .iter()
                .any(|r| !r.requests.is_empty() || r.summary.is_some())
    }
}

pub(crate) fn read_json(path: &Path, notes: &mut Vec<String>) -> Option<Value> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            notes.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            notes.push(format!("{}: not valid JSON ({e})", path.display()));
            None
        }
    }
}

fn metric(line: &Value, tag: &str) -> Option<f64> {
    line["metrics"][tag]["value"].as_f64()
}

/// The profiling records of a JSONL export; warmup records and unparsable lines are skipped
/// (the latter counted in a note: a run killed mid-write can cut its last line).
pub fn read_requests(path: &Path, notes: &mut Vec<String>) -> Vec<Request> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            notes.push(format!("{}: {e}", path.display()));
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    let mut bad = 0usize;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            bad += 1;
            continue;
        };
        let md = &v["metadata"];
        if md["benchmark_phase"].as_str() == Some("warmup") {
            continue;
        }
        let (Some(start_ns), Some(end_ns)) = (
            md["request_start_ns"].as_u64(),
            md["request_end_ns"].as_u64(),
        ) else {
            bad += 1;
            continue;
        };
        out.push(Request {
            start_ns,
            end_ns,
            ttft_ms: metric(&v, "time_to_first_token"),
            itl_ms: metric(&v, "inter_token_latency"),
            latency_ms: metric(&v, "request_latency"),
            output_tokens: metric(&v, "output_sequence_length"),
            phase: md["phase_name"].as_str().map(str::to_owned),
        });
    }
    if bad > 0 {
        notes.push(format!(
            "{}: {bad} line(s) skipped (not a record)",
            path.display()
        ));
    }
    out
}

fn read_run(label: String, dir: &Path, notes: &mut Vec<String>) -> Run {
    Run {
        label,
        dir: dir.to_path_buf(),
        requests: read_requests(&dir.join("profile_export.jsonl"), notes),
        summary: read_json(&dir.join("profile_export_aiperf.json"), notes),
        server_metrics: read_json(&dir.join("server_metrics_export.json"), notes),
    }
}

/// `concurrency 4, rate 10` from the profiling phase of `input_config`; with several profiling
/// phases (a config file's `phases:`), their names (`poisson_20 + constant_40`).
pub fn label_of(input_config: &Value) -> Option<String> {
    let phases = input_config["phases"].as_array()?;
    let profiling: Vec<&Value> = phases
        .iter()
        .filter(|p| p["kind"].as_str() == Some("profiling"))
        .collect();
    let describe = |p: &Value| {
        let mut parts = Vec::new();
        if let Some(c) = p["concurrency"].as_u64() {
            parts.push(format!("concurrency {c}"));
        }
        if let Some(r) = p["rate"].as_f64() {
            parts.push(format!("rate {r}"));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    };
    match profiling.as_slice() {
        [] => None,
        [one] => describe(one),
        several => Some(
            several
                .iter()
                .filter_map(|p| {
                    p["name"]
                        .as_str()
                        .map(str::to_owned)
                        .or_else(|| describe(p))
                })
                .collect::<Vec<_>>()
                .join(" + "),
        ),
    }
}

/// What a run's summary says of its shards: ` (shard 1 of 2)` for a shard's run, ` (merged
/// from 2 shards)` for `ringperf merge`'s; else nothing.
fn shard_note(summary: &Value) -> String {
    let rp = &summary["ringperf"];
    if let (Some(i), Some(n)) = (rp["shard"]["index"].as_u64(), rp["shard"]["count"].as_u64()) {
        return format!(" (shard {i} of {n})");
    }
    match rp["shards"].as_array() {
        Some(s) => format!(" (merged from {} shards)", s.len()),
        None => String::new(),
    }
}

/// Why a directory given to `plot` is skipped; each message starts with the directory.
#[derive(Debug)]
pub enum InputError {
    /// It is not a directory.
    NotADirectory(PathBuf),
    /// Its `profile_runs` directory cannot be listed.
    Runs(PathBuf, std::io::Error),
    /// It holds no records, summary or aggregate; the notes say what was found unusable.
    NothingToPlot {
        /// The directory.
        dir: PathBuf,
        /// Its files that were there but could not be read.
        notes: Vec<String>,
    },
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::NotADirectory(dir) => write!(f, "{}: not a directory", dir.display()),
            InputError::Runs(runs_dir, e) => write!(f, "{}: {e}", runs_dir.display()),
            InputError::NothingToPlot { dir, notes } => {
                write!(
                    f,
                    "{}: no profile_export.jsonl records, profile_export_aiperf.json or aggregate to plot",
                    dir.display()
                )?;
                for n in notes {
                    write!(f, "; {n}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Runs(_, e) => Some(e),
            InputError::NotADirectory(_) | InputError::NothingToPlot { .. } => None,
        }
    }
}

/// Reads one artifact directory; an error when it holds nothing to plot.
pub fn read_input(dir: &Path) -> Result<Input, InputError> {
    if !dir.is_dir() {
        return Err(InputError::NotADirectory(dir.to_path_buf()));
    }
    let mut notes = Vec::new();
    let runs_dir = dir.join("profile_runs");
    let mut runs = Vec::new();
    let mut aggregate = None;
    if runs_dir.is_dir() {
        let mut names: Vec<String> = std::fs::read_dir(&runs_dir)
            .map_err(|e| InputError::Runs(runs_dir.clone(), e))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            // `trial_NNNN`: AIPerf's name for a sweep's trials.
            .filter(|n| n.starts_with("run_") || n.starts_with("trial_"))
            .collect();
        names.sort();
        for name in names {
            let run = read_run(name.clone(), &runs_dir.join(&name), &mut notes);
            runs.push(run);
        }
        aggregate = read_json(
            &dir.join("aggregate")
                .join("profile_export_aiperf_aggregate.json"),
            &mut notes,
        )
        .filter(|a| a["metrics"].is_object());
    } else {
        runs.push(read_run(String::new(), dir, &mut notes));
    }
    let fallback = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string());
    let summary = runs.iter().find_map(|r| r.summary.as_ref());
    let label = summary
        .and_then(|s| label_of(&s["input_config"]))
        .unwrap_or(fallback)
        + &summary.map(shard_note).unwrap_or_default();
    let input = Input {
        dir: dir.to_path_buf(),
        label,
        runs,
        aggregate,
        notes,
    };
    if !input.has_data() {
        return Err(InputError::NothingToPlot {
            dir: input.dir,
            notes: input.notes,
        });
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_from_the_profiling_phase() {
        let ic = json!({"phases": [
            {"kind": "warmup", "concurrency": 9},
            {"kind": "profiling", "concurrency": 4, "rate": 2.5}
        ]});
        assert_eq!(label_of(&ic).as_deref(), Some("concurrency 4, rate 2.5"));
        assert_eq!(label_of(&json!({})), None);
        // Several profiling phases: their names, else what each phase sets.
        let ic = json!({"phases": [
            {"kind": "warmup", "name": "warmup", "concurrency": 4},
            {"kind": "profiling", "name": "poisson_20", "rate": 20.0},
            {"kind": "profiling", "rate": 40.0}
        ]});
        assert_eq!(label_of(&ic).as_deref(), Some("poisson_20 + rate 40"));
        assert_eq!(
            shard_note(&json!({"ringperf": {"shard": {"index": 1, "count": 2}}})),
            " (shard 1 of 2)"
        );
        assert_eq!(
            shard_note(&json!({"ringperf": {"shards": [{}, {}]}})),
            " (merged from 2 shards)"
        );
        assert_eq!(shard_note(&json!({})), "");
    }

    #[test]
    fn garbled_files_are_notes_and_an_empty_directory_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("profile_export_aiperf.json"), "{not json").unwrap();
        std::fs::write(
            tmp.path().join("profile_export.jsonl"),
            "{\"metadata\":{\"request_start_ns\":1,\"request_end_ns\":5},\"metrics\":{\"time_to_first_token\":{\"value\":2.5}}}\ngarbage\n{\"metadata\":{\"benchmark_phase\":\"warmup\",\"request_start_ns\":1,\"request_end_ns\":2}}\n",
        )
        .unwrap();
        let input = read_input(tmp.path()).expect("the records are usable");
        assert_eq!(
            input.runs[0].requests.len(),
            1,
            "warmup and garbage skipped"
        );
        assert_eq!(input.runs[0].requests[0].ttft_ms, Some(2.5));
        assert_eq!(input.notes.len(), 2, "{:?}", input.notes);

        let empty = tempfile::tempdir().unwrap();
        let err = read_input(empty.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: no profile_export.jsonl records, profile_export_aiperf.json or aggregate \
                 to plot",
                empty.path().display()
            )
        );
        let absent = empty.path().join("absent");
        assert_eq!(
            read_input(&absent).unwrap_err().to_string(),
            format!("{}: not a directory", absent.display())
        );
    }
}
