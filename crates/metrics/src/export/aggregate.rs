//! The multi-run aggregate (`--num-profile-runs` over 1, docs/output-formats.md): every run's
//! `profile_export_aiperf.json` read back, each `(metric, stat)` pair reduced across the runs
//! to a mean and a confidence interval ([`Confidence`]), and written as AIPerf 0.13 writes them:
//! `aggregate/profile_export_aiperf_aggregate.json` and `.csv`, plus a short console table.
//!
//! The per-run values are taken from the files, as AIPerf does: a top-level object with a
//! `unit` is a metric, and each of its [`STAT_KEYS`] that is a finite number is one value.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::console::fmt_thousands;
use super::csv::field;
use super::py_float_str;
use crate::aggregate::confidence::Confidence;

/// The aggregate's file names, inside [`AGGREGATE_DIR`].
pub const JSON_NAME: &str = "profile_export_aiperf_aggregate.json";
/// See [`JSON_NAME`].
pub const CSV_NAME: &str = "profile_export_aiperf_aggregate.csv";
/// The aggregate's directory under the artifact directory.
pub const AGGREGATE_DIR: &str = "aggregate";
/// The runs' parent directory under the artifact directory; each run is `run_NNNN` in it.
pub const RUNS_DIR: &str = "profile_runs";
/// The aggregate JSON's own schema version (AIPerf's, independent of the summary's).
const SCHEMA_VERSION: &str = "1.0";

/// The statistics a metric object may carry, in AIPerf's order.
pub const STAT_KEYS: [&str; 14] = [
    "avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std",
];

/// Run `k`'s label and directory name (1-based): `run_0001`.
pub fn run_label(k: u32) -> String {
    format!("run_{k:04}")
}

/// One run as the aggregate sees it: its label and either the values read from its summary
/// JSON or why it does not count.
#[derive(Debug)]
pub struct RunResult {
    /// `run_NNNN`.
    pub label: String,
    /// The run's metrics, or why it does not count.
    pub outcome: Result<Vec<RunMetric>, Excluded>,
}

/// Why a run does not count in the aggregate; its `Display` is the reason the aggregate's
/// `failed_runs` carry.
#[derive(Debug)]
#[non_exhaustive]
pub enum Excluded {
    /// The run's summary JSON cannot be read.
    Unreadable {
        /// The summary JSON.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The run's summary JSON is not JSON.
    NotJson {
        /// The summary JSON.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The run stopped early (its figures would skew the statistics).
    Stopped(ringperf_io::control::StopReason),
    /// No request of the run succeeded.
    NoSuccess {
        /// Its failed requests.
        errors: u64,
    },
    /// The client fell behind its `--max-client-lag-us` limit.
    ClientFellBehind,
    /// The run could not be set up (the setup error's message).
    Setup(String),
}

impl std::fmt::Display for Excluded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Excluded::Unreadable { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            Excluded::NotJson { path, source } => {
                write!(f, "{} is not JSON: {source}", path.display())
            }
            Excluded::Stopped(reason) => write!(f, "{reason}"),
            Excluded::NoSuccess { errors } => {
                write!(f, "no request succeeded ({errors} failed)")
            }
            Excluded::ClientFellBehind => {
                f.write_str("the client fell behind its --max-client-lag-us limit")
            }
            Excluded::Setup(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Excluded {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Excluded::Unreadable { source, .. } => Some(source),
            Excluded::NotJson { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// No run counted: there is nothing to aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRunCounted {
    /// The runs attempted.
    pub runs: usize,
}

impl std::fmt::Display for NoRunCounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "all {} runs failed: no aggregate statistics can be computed",
            self.runs
        )
    }
}

impl std::error::Error for NoRunCounted {}

/// One metric of one run: its tag, unit and the stats present as finite numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct RunMetric {
    /// The metric's tag (`time_to_first_token`).
    pub tag: String,
    /// Its display unit as written (`ms`).
    pub unit: String,
    /// `(stat, value)` in [`STAT_KEYS`] order.
    pub stats: Vec<(&'static str, f64)>,
}

/// The metrics of a summary document (`profile_export_aiperf.json`), in file order.
pub fn metrics_of(doc: &Value) -> Vec<RunMetric> {
    let Some(obj) = doc.as_object() else {
        return Vec::new();
    };
    obj.iter()
        .filter_map(|(tag, v)| {
            let m = v.as_object()?;
            let unit = m.get("unit")?.as_str().unwrap_or_default().to_string();
            let stats = STAT_KEYS
                .iter()
                .filter_map(|k| m.get(*k)?.as_f64().map(|x| (*k, x)))
                .collect();
            Some(RunMetric {
                tag: tag.clone(),
                unit,
                stats,
            })
        })
        .collect()
}

/// Reads one run's summary JSON; a missing or unreadable file is the run's error.
pub fn read_run(label: String, json_path: &Path) -> RunResult {
    let outcome = std::fs::read(json_path)
        .map_err(|source| Excluded::Unreadable {
            path: json_path.to_owned(),
            source,
        })
        .and_then(|b| {
            serde_json::from_slice::<Value>(&b).map_err(|source| Excluded::NotJson {
                path: json_path.to_owned(),
                source,
            })
        })
        .map(|doc| metrics_of(&doc));
    RunResult { label, outcome }
}

/// One aggregated pair: the flattened key `<tag>_<stat>`, its statistics and unit.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateMetric {
    /// `<tag>_<stat>`.
    pub key: String,
    /// The statistics across runs.
    pub stats: Confidence,
    /// The unit of the first run that had a value.
    pub unit: String,
}

/// The aggregate of a multi-run profile.
#[derive(Clone, Debug)]
pub struct Aggregate {
    /// Runs attempted.
    pub num_runs: usize,
    /// Labels of the runs that count, in order.
    pub run_labels: Vec<String>,
    /// `(label, error)` of the runs that do not.
    pub failed_runs: Vec<(String, String)>,
    /// `--confidence-level`.
    pub confidence_level: f64,
    /// `--profile-run-cooldown-seconds`.
    pub cooldown_seconds: f64,
    /// Only one run counted: point values, no intervals.
    pub single_run: bool,
    /// In order of first appearance: runs in order, metrics in file order, stats in
    /// [`STAT_KEYS`] order.
    pub metrics: Vec<AggregateMetric>,
}

/// Aggregates `runs` at `level`. Fails when no run counts.
pub fn aggregate(
    runs: &[RunResult],
    level: f64,
    cooldown_seconds: f64,
) -> Result<Aggregate, NoRunCounted> {
    let ok: Vec<(&str, &[RunMetric])> = runs
        .iter()
        .filter_map(|r| {
            r.outcome
                .as_ref()
                .ok()
                .map(|m| (r.label.as_str(), m.as_slice()))
        })
        .collect();
    let failed_runs: Vec<(String, String)> = runs
        .iter()
        .filter_map(|r| {
            r.outcome
                .as_ref()
                .err()
                .map(|e| (r.label.clone(), e.to_string()))
        })
        .collect();
    if ok.is_empty() {
        return Err(NoRunCounted { runs: runs.len() });
    }
    // Every (metric, stat) pair present in any run, in first-seen order.
    let mut pairs: Vec<(&str, &'static str)> = Vec::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (_, metrics) in &ok {
        for m in *metrics {
            for (stat, _) in &m.stats {
                if seen.insert((m.tag.as_str(), stat)) {
                    pairs.push((m.tag.as_str(), stat));
                }
            }
        }
    }
    let single_run = ok.len() == 1;
    let mut metrics = Vec::with_capacity(pairs.len());
    for (tag, stat) in pairs {
        let mut values = Vec::with_capacity(ok.len());
        let mut unit = None;
        for (_, run) in &ok {
            let Some(m) = run.iter().find(|m| m.tag == tag) else {
                continue;
            };
            let Some(&(_, v)) = m.stats.iter().find(|(s, _)| *s == stat) else {
                continue;
            };
            if v.is_finite() {
                values.push(v);
                unit.get_or_insert(m.unit.as_str());
            }
        }
        let stats = if single_run {
            values.first().map(|v| Confidence::single(*v))
        } else {
            Confidence::of(&values, level)
        };
        if let Some(stats) = stats {
            metrics.push(AggregateMetric {
                key: format!("{tag}_{stat}"),
                stats,
                unit: unit.unwrap_or_default().to_string(),
            });
        }
    }
    Ok(Aggregate {
        num_runs: runs.len(),
        run_labels: ok.iter().map(|(l, _)| l.to_string()).collect(),
        failed_runs,
        confidence_level: level,
        cooldown_seconds,
        single_run,
        metrics,
    })
}

/// A finite number, else `null` (JSON has no inf or NaN; AIPerf scrubs them the same way).
fn num(v: f64) -> Value {
    if v.is_finite() { json!(v) } else { Value::Null }
}

/// The aggregate JSON document, in AIPerf's shape and key order.
pub fn aggregate_json(a: &Aggregate, aiperf_version: &str) -> Value {
    let mut meta = Map::new();
    meta.insert("aggregation_type".into(), json!("confidence"));
    meta.insert("num_profile_runs".into(), json!(a.num_runs));
    meta.insert("num_successful_runs".into(), json!(a.run_labels.len()));
    let failed: Vec<Value> = a
        .failed_runs
        .iter()
        .map(|(label, error)| json!({"label": label, "error": error}))
        .collect();
    meta.insert("failed_runs".into(), Value::Array(failed));
    meta.insert("confidence_level".into(), num(a.confidence_level));
    meta.insert("run_labels".into(), json!(a.run_labels));
    if a.single_run {
        meta.insert("single_run".into(), json!(true));
    }
    meta.insert("cooldown_seconds".into(), num(a.cooldown_seconds));
    let mut metrics = Map::new();
    for m in &a.metrics {
        let s = &m.stats;
        let mut o = Map::new();
        for (k, v) in [
            ("mean", s.mean),
            ("std", s.std),
            ("min", s.min),
            ("max", s.max),
            ("cv", s.cv),
            ("se", s.se),
            ("ci_low", s.ci_low),
            ("ci_high", s.ci_high),
            ("t_critical", s.t_critical),
        ] {
            o.insert(k.into(), num(v));
        }
        o.insert("unit".into(), json!(m.unit));
        metrics.insert(m.key.clone(), Value::Object(o));
    }
    let mut doc = Map::new();
    doc.insert("schema_version".into(), json!(SCHEMA_VERSION));
    doc.insert("aiperf_version".into(), json!(aiperf_version));
    doc.insert("metadata".into(), Value::Object(meta));
    doc.insert("metrics".into(), Value::Object(metrics));
    Value::Object(doc)
}

/// AIPerf's aggregate CSV cell: `decimals` places, `inf` / `-inf`, empty for NaN.
fn cell(v: f64, decimals: usize) -> String {
    if v.is_nan() {
        String::new()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v:.decimals$}")
    }
}

fn csv_row(out: &mut String, cells: &[String]) {
    let line: Vec<String> = cells.iter().map(|c| field(c)).collect();
    out.push_str(&line.join(","));
    out.push_str("\r\n");
}

/// The aggregate CSV: the metrics table, a blank line, then the metadata as `Key,value` rows
/// (AIPerf's layout: Python `csv.writer`, CRLF).
pub fn aggregate_csv(a: &Aggregate) -> String {
    let mut out = String::new();
    let head = [
        "metric",
        "mean",
        "std",
        "min",
        "max",
        "cv",
        "se",
        "ci_low",
        "ci_high",
        "t_critical",
        "unit",
    ];
    csv_row(&mut out, &head.map(String::from));
    for m in &a.metrics {
        let s = &m.stats;
        csv_row(
            &mut out,
            &[
                m.key.clone(),
                cell(s.mean, 2),
                cell(s.std, 2),
                cell(s.min, 2),
                cell(s.max, 2),
                cell(s.cv, 4),
                cell(s.se, 4),
                cell(s.ci_low, 2),
                cell(s.ci_high, 2),
                cell(s.t_critical, 4),
                m.unit.clone(),
            ],
        );
    }
    out.push_str("\r\n");
    let labels: Vec<String> = a.run_labels.iter().map(|l| format!("'{l}'")).collect();
    let mut meta = vec![
        ("Aggregation Type", "confidence".to_string()),
        ("Total Runs", a.num_runs.to_string()),
        ("Successful Runs", a.run_labels.len().to_string()),
        ("Confidence Level", py_float_str(a.confidence_level)),
        // Python's `str()` of the list of labels.
        ("Run Labels", format!("[{}]", labels.join(", "))),
    ];
    if a.single_run {
        meta.push(("Single Run", "True".into()));
    }
    meta.push(("Cooldown Seconds", py_float_str(a.cooldown_seconds)));
    for (k, v) in meta {
        csv_row(&mut out, &[k.to_string(), v]);
    }
    out
}

/// Writes `aggregate/` under `artifact_dir`; returns the JSON and CSV paths.
pub fn write_aggregate(
    artifact_dir: &Path,
    a: &Aggregate,
    aiperf_version: &str,
) -> io::Result<(PathBuf, PathBuf)> {
    let dir = artifact_dir.join(AGGREGATE_DIR);
    std::fs::create_dir_all(&dir)?;
    let json_path = dir.join(JSON_NAME);
    let text = serde_json::to_string_pretty(&aggregate_json(a, aiperf_version))
        .map_err(io::Error::other)?;
    std::fs::write(&json_path, text)?;
    let csv_path = dir.join(CSV_NAME);
    std::fs::write(&csv_path, aggregate_csv(a))?;
    Ok((json_path, csv_path))
}

/// The metrics of the console table: AIPerf's headline four, each at its first stat present
/// among avg, p99, max, p50.
const CONSOLE_METRICS: [&str; 4] = [
    "request_throughput",
    "time_to_first_token",
    "inter_token_latency",
    "request_latency",
];

/// The short console table: metric, mean, std and the confidence interval, for the headline
/// metrics present (avg and p99 of each, where present).
pub fn render_aggregate_console(a: &Aggregate) -> String {
    let pct = a.confidence_level * 100.0;
    let mut rows: Vec<[String; 4]> = Vec::new();
    for tag in CONSOLE_METRICS {
        for stat in ["avg", "p99"] {
            let key = format!("{tag}_{stat}");
            let Some(m) = a.metrics.iter().find(|m| m.key == key) else {
                continue;
            };
            let s = &m.stats;
            let ci = if a.single_run {
                "n/a (one run)".to_string()
            } else {
                format!(
                    "[{}, {}]",
                    fmt_thousands(s.ci_low),
                    fmt_thousands(s.ci_high)
                )
            };
            rows.push([
                format!("{key} ({})", m.unit),
                fmt_thousands(s.mean),
                fmt_thousands(s.std),
                ci,
            ]);
        }
    }
    let head = [
        "Metric".to_string(),
        "mean".into(),
        "std".into(),
        format!("{} CI", py_pct(pct)),
    ];
    let mut widths = head.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String; 4]| {
        let mut s = format!("{:<w$}", cells[0], w = widths[0]);
        for (c, w) in cells.iter().zip(widths).skip(1) {
            let _ = write!(s, "  {c:>w$}");
        }
        s.push('\n');
        s
    };
    let mut out = format!(
        "Aggregate over {} of {} runs (confidence level {}):\n",
        a.run_labels.len(),
        a.num_runs,
        py_float_str(a.confidence_level)
    );
    out.push_str(&line(&head));
    for r in &rows {
        out.push_str(&line(r));
    }
    for (label, error) in &a.failed_runs {
        let _ = writeln!(out, "{label} not counted: {error}");
    }
    out
}

/// `95%`, `99.5%`: a percentage without needless decimals.
fn py_pct(p: f64) -> String {
    let r = (p * 1e6).round() / 1e6;
    if r.fract() == 0.0 {
        format!("{r:.0}%")
    } else {
        format!("{r}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, doc: Value) -> RunResult {
        RunResult {
            label: label.into(),
            outcome: Ok(metrics_of(&doc)),
        }
    }

    fn docs() -> Vec<RunResult> {
        vec![
            run(
                "run_0001",
                json!({
                    "schema_version": "1.4",
                    "time_to_first_token": {"unit": "ms", "avg": 10.0, "p99": 20.0},
                    "request_count": {"unit": "requests", "avg": 8},
                    "input_config": {"endpoint": {"streaming": true}},
                    "goodput": {"unit": "requests/sec", "avg": 0.0},
                }),
            ),
            run(
                "run_0002",
                json!({
                    "time_to_first_token": {"unit": "ms", "avg": 14.0, "p99": null},
                    "request_count": {"unit": "requests", "avg": 8},
                    "goodput": {"unit": "requests/sec", "avg": 0.0},
                }),
            ),
            RunResult {
                label: "run_0003".into(),
                outcome: Err(Excluded::Stopped(ringperf_io::control::StopReason::Signal(
                    "SIGINT",
                ))),
            },
        ]
    }

    #[test]
    fn pairs_values_and_metadata() {
        let a = aggregate(&docs(), 0.95, 1.5).unwrap();
        let keys: Vec<&str> = a.metrics.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "time_to_first_token_avg",
                "time_to_first_token_p99",
                "request_count_avg",
                "goodput_avg"
            ]
        );
        // avg over 10 and 14; p99 has one finite value (null skipped): its degraded form.
        assert_eq!(
            a.metrics[0].stats,
            Confidence::of(&[10.0, 14.0], 0.95).unwrap()
        );
        assert_eq!(a.metrics[0].unit, "ms");
        let p99 = &a.metrics[1].stats;
        assert_eq!(
            (p99.mean, p99.std, p99.ci_low, p99.ci_high),
            (20.0, 0.0, 20.0, 20.0)
        );
        assert!(p99.t_critical.is_nan());
        assert_eq!(a.metrics[2].stats.std, 0.0);
        assert!(!a.single_run);
        assert_eq!(a.run_labels, ["run_0001", "run_0002"]);
        assert_eq!(a.failed_runs[0].0, "run_0003");

        let j = aggregate_json(&a, "0.13.0");
        assert_eq!(j["metadata"]["num_profile_runs"], 3);
        assert_eq!(j["metadata"]["num_successful_runs"], 2);
        assert_eq!(
            j["metadata"]["failed_runs"][0]["error"],
            "cancelled by SIGINT"
        );
        assert_eq!(j["metadata"]["cooldown_seconds"], 1.5);
        assert!(j["metadata"].get("single_run").is_none());
        // goodput: mean 0 → cv inf → null in JSON.
        assert!(j["metrics"]["goodput_avg"]["cv"].is_null());
        assert_eq!(j["metrics"]["time_to_first_token_avg"]["mean"], 12.0);

        let csv = aggregate_csv(&a);
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(
            lines[0],
            "metric,mean,std,min,max,cv,se,ci_low,ci_high,t_critical,unit"
        );
        // std sqrt(8) = 2.83, cv 0.2357, se 2, t 12.7062, ci 12 ∓ 25.41.
        assert_eq!(
            lines[1],
            "time_to_first_token_avg,12.00,2.83,10.00,14.00,0.2357,2.0000,-13.41,37.41,12.7062,ms"
        );
        assert_eq!(
            lines[2],
            "time_to_first_token_p99,20.00,0.00,20.00,20.00,0.0000,0.0000,20.00,20.00,,ms"
        );
        assert_eq!(
            lines[4],
            "goodput_avg,0.00,0.00,0.00,0.00,inf,0.0000,0.00,0.00,12.7062,requests/sec"
        );
        assert_eq!(
            &lines[5..],
            [
                "",
                "Aggregation Type,confidence",
                "Total Runs,3",
                "Successful Runs,2",
                "Confidence Level,0.95",
                "Run Labels,\"['run_0001', 'run_0002']\"",
                "Cooldown Seconds,1.5",
                "",
            ]
        );
    }

    #[test]
    fn one_successful_run_is_degraded() {
        let mut runs = docs();
        runs.remove(1);
        let a = aggregate(&runs, 0.95, 0.0).unwrap();
        assert!(a.single_run);
        for m in &a.metrics {
            assert_eq!((m.stats.std, m.stats.cv, m.stats.se), (0.0, 0.0, 0.0));
            assert_eq!(
                (m.stats.ci_low, m.stats.ci_high),
                (m.stats.mean, m.stats.mean)
            );
            assert!(m.stats.t_critical.is_nan());
        }
        let j = aggregate_json(&a, "0.13.0");
        assert_eq!(j["metadata"]["single_run"], true);
        assert!(j["metrics"]["time_to_first_token_avg"]["t_critical"].is_null());
        let csv = aggregate_csv(&a);
        assert!(csv.contains("\r\nSingle Run,True\r\n"), "{csv}");
        assert!(csv.contains("\r\nRun Labels,['run_0001']\r\n"), "{csv}");
    }

    #[test]
    fn no_successful_run_is_an_error() {
        let runs = vec![RunResult {
            label: "run_0001".into(),
            outcome: Err(Excluded::NoSuccess { errors: 3 }),
        }];
        let e = aggregate(&runs, 0.95, 0.0).unwrap_err();
        assert_eq!(e, NoRunCounted { runs: 1 });
        assert_eq!(
            e.to_string(),
            "all 1 runs failed: no aggregate statistics can be computed"
        );
    }

    #[test]
    fn why_a_run_does_not_count_reads_as_the_aggregate_writes_it() {
        let missing = Path::new("/nonexistent/ringperf/profile_export_aiperf.json");
        let r = read_run("run_0001".into(), missing);
        let e = r.outcome.unwrap_err();
        assert!(matches!(e, Excluded::Unreadable { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("cannot read {}: ", missing.display())),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("profile_export_aiperf.json");
        std::fs::write(&bad, "{not json").unwrap();
        let e = read_run("run_0002".into(), &bad).outcome.unwrap_err();
        assert!(matches!(e, Excluded::NotJson { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with(&format!("{} is not JSON: ", bad.display())),
            "{e}"
        );
        assert_eq!(
            Excluded::NoSuccess { errors: 4 }.to_string(),
            "no request succeeded (4 failed)"
        );
        assert_eq!(
            Excluded::ClientFellBehind.to_string(),
            "the client fell behind its --max-client-lag-us limit"
        );
        assert_eq!(Excluded::Setup("boom".into()).to_string(), "boom");
    }

    #[test]
    fn run_labels_and_percentages() {
        assert_eq!(run_label(1), "run_0001");
        assert_eq!(run_label(10), "run_0010");
        assert_eq!(py_pct(95.0), "95%");
        assert_eq!(py_pct(99.5), "99.5%");
    }
}
