//! Sweep and search directories for `ringperf plot` (#23), in AIPerf 0.13's layout
//! (`tests/data/aiperf-sweep/README.md` records it): the variations of
//! `sweep_aggregate/profile_export_aiperf_sweep.json` (or `aggregate/sweep_aggregate/…` with
//! repeated trials), the iterations of an adaptive search's `search_history.json`, its SLA
//! filters and chosen point, and a concurrency ramp's `degradation_knee.json`. The Pareto
//! frontier is computed here as AIPerf's sweep aggregate defines it. Nothing here panics on a
//! garbled file: what cannot be read becomes a note, a directory with no variation an error.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::inputs::{InputError, Interval, read_json};

/// The sweep aggregate, relative to the sweep's directory: one trial or independent trials,
/// then repeated trials.
pub const SWEEP_FILES: [&str; 2] = [
    "sweep_aggregate/profile_export_aiperf_sweep.json",
    "aggregate/sweep_aggregate/profile_export_aiperf_sweep.json",
];
/// An adaptive search's record of its iterations, SLA filters and answer.
pub const SEARCH_HISTORY: &str = "search_history.json";
/// The concurrency-ramp recipe's knee.
pub const KNEE_FILE: &str = "sweep_aggregate/degradation_knee.json";

/// A statistic out of a metrics object in any of AIPerf's two shapes: `<tag>_<stat>` with
/// `mean`, `ci_low`, `ci_high` (an aggregate over trials), or `<tag>` with `<stat>` (a run's
/// summary, and a sweep's variation with one trial). `avg` is also found as `mean`.
pub fn stat_of(metrics: &Value, tag: &str, stat: &str) -> Option<Interval> {
    let agg = &metrics[format!("{tag}_{stat}")];
    if let Some(mean) = agg["mean"].as_f64() {
        return Some(Interval {
            mean,
            ci_low: agg["ci_low"].as_f64().unwrap_or(mean),
            ci_high: agg["ci_high"].as_f64().unwrap_or(mean),
        });
    }
    let m = &metrics[tag];
    let v = m[stat]
        .as_f64()
        .or_else(|| (stat == "avg").then(|| m["mean"].as_f64()).flatten())?;
    Some(Interval {
        mean: v,
        ci_low: v,
        ci_high: v,
    })
}

/// One point of a sweep: a variation, or an iteration of a search.
#[derive(Debug, Clone)]
pub struct Variation {
    /// `concurrency 4`, `mean 16, concurrency 1`, a variant's name, or `#3 concurrency 4` for a
    /// search's iteration 3.
    pub label: String,
    /// The parameters as AIPerf wrote them (`parameters`, or a search's `variation_values`).
    pub parameters: Value,
    /// The metrics object (see [`stat_of`]).
    pub metrics: Value,
    /// A search iteration's own verdict on its SLA filters.
    pub feasible: Option<bool>,
    /// The variation's own run directory, when the sweep has one per variation (one trial:
    /// `<base>/<variation>/`; independent trials: `<base>/<variation>/profile_runs/`).
    pub run_dir: Option<PathBuf>,
}

impl Variation {
    pub fn stat(&self, tag: &str, stat: &str) -> Option<Interval> {
        stat_of(&self.metrics, tag, stat)
    }
}

/// An SLA filter (`metric_tag:stat:op:threshold`), or the ramp's degradation threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Sla {
    pub tag: String,
    pub stat: String,
    /// `lt`, `le`, `gt` or `ge`.
    pub op: String,
    pub threshold: f64,
}

impl Sla {
    fn from_json(v: &Value) -> Option<Sla> {
        Some(Sla {
            tag: v["metric_tag"].as_str()?.to_string(),
            stat: v["stat"].as_str()?.to_string(),
            op: v["op"].as_str()?.to_string(),
            threshold: v["threshold"].as_f64()?,
        })
    }

    /// Whether a value meets the filter (an unknown operator is met by nothing).
    pub fn holds(&self, v: f64) -> bool {
        match self.op.as_str() {
            "lt" => v < self.threshold,
            "le" => v <= self.threshold,
            "gt" => v > self.threshold,
            "ge" => v >= self.threshold,
            _ => false,
        }
    }

    /// `time_to_first_token p95 < 15` (the threshold to 3 decimals).
    pub fn text(&self) -> String {
        let op = match self.op.as_str() {
            "lt" => "<",
            "le" => "≤",
            "gt" => ">",
            "ge" => "≥",
            other => other,
        };
        let t = (self.threshold * 1000.0).round() / 1000.0;
        format!("{} {} {op} {t}", self.tag, self.stat)
    }
}

/// A sweep or search directory, read.
#[derive(Debug, Clone)]
pub struct Sweep {
    pub dir: PathBuf,
    /// `sweep`, or the search's recipe (`max-throughput-ttft-sla`, `concurrency-ramp`, …).
    pub kind: String,
    pub variations: Vec<Variation>,
    /// AIPerf's own `pareto_optimal`, as variation indices (empty when it wrote none).
    pub aiperf_pareto: Vec<usize>,
    /// The SLA filters, and the ramp's degradation threshold.
    pub slas: Vec<Sla>,
    /// The y axis of the SLA charts: the search's objective, else output token throughput.
    pub objective: (String, String),
    /// The chosen variation and why (`best feasible trial`, `knee`).
    pub chosen: Option<(usize, String)>,
    /// What could not be read (shown in the page).
    pub notes: Vec<String>,
}

/// Whether `dir` is a sweep or search directory in AIPerf's layout.
pub fn is_sweep(dir: &Path) -> bool {
    dir.join(SEARCH_HISTORY).is_file() || SWEEP_FILES.iter().any(|f| dir.join(f).is_file())
}

/// A parameter's value as text: numbers and strings bare.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `concurrency 4, rate 10` from `{"concurrency": 4, "rate": 10}`; a dotted path is named by
/// its leaf (`phases.profiling.concurrency` → `concurrency`).
pub fn parameters_label(params: &Value) -> String {
    let Some(obj) = params.as_object() else {
        return value_text(params);
    };
    obj.iter()
        .map(|(k, v)| {
            let leaf = k.rsplit('.').next().unwrap_or(k);
            format!("{leaf} {}", value_text(v))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every per-variation aggregate's (`variation_values`, `variation_label`, directory name):
/// `aggregate/<name>/` (one trial, repeated trials) and `<name>/aggregate/` (independent).
fn variation_names(dir: &Path, notes: &mut Vec<String>) -> Vec<(Value, String, String)> {
    let mut out = Vec::new();
    let file = "profile_export_aiperf_aggregate.json";
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    for (base, nested) in [(dir.join("aggregate"), false), (dir.to_path_buf(), true)] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = if nested {
                e.path().join("aggregate").join(file)
            } else {
                e.path().join(file)
            };
            if path.is_file() {
                candidates.push((name, path));
            }
        }
    }
    candidates.sort();
    for (name, path) in candidates {
        if let Some(v) = read_json(&path, notes) {
            let md = &v["metadata"];
            out.push((
                md["variation_values"].clone(),
                md["variation_label"].as_str().unwrap_or("").to_string(),
                name,
            ));
        }
    }
    out
}

/// Whether an aggregate's `variation_values` (dotted paths) are a combination's `parameters`
/// (leaf names, or the same keys).
fn same_variation(params: &Value, values: &Value) -> bool {
    let (Some(p), Some(v)) = (params.as_object(), values.as_object()) else {
        return false;
    };
    p.len() == v.len()
        && v.iter().all(|(k, x)| {
            let leaf = k.rsplit('.').next().unwrap_or(k);
            p.get(k) == Some(x) || p.get(leaf) == Some(x)
        })
}

/// The variation's own run directory among the aggregates' names, when it holds a run.
fn run_dir_of(dir: &Path, params: &Value, names: &[(Value, String, String)]) -> Option<PathBuf> {
    let (_, _, name) = names.iter().find(|(vv, _, _)| same_variation(params, vv))?;
    let d = dir.join(name);
    let holds_run = [
        "profile_export.jsonl",
        "profile_export_aiperf.json",
        "profile_runs",
    ]
    .iter()
    .any(|f| d.join(f).exists());
    holds_run.then_some(d)
}

/// A variation's label: its variant's name when the parameters are a variant's overrides
/// (AIPerf's `benchmark` parameter, a JSON string), else its parameters.
fn label_for(params: &Value, names: &[(Value, String, String)]) -> String {
    let is_variant = params
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.get("benchmark").is_some_and(Value::is_string));
    if is_variant && let Some((_, _, name)) = names.iter().find(|(vv, _, _)| vv == params) {
        return name.clone();
    }
    parameters_label(params)
}

fn read_sweep_file(dir: &Path, doc: &Value, notes: &mut Vec<String>) -> Sweep {
    let names = variation_names(dir, notes);
    let combos = doc["per_combination_metrics"].as_array();
    let variations: Vec<Variation> = combos
        .into_iter()
        .flatten()
        .map(|c| Variation {
            label: label_for(&c["parameters"], &names),
            parameters: c["parameters"].clone(),
            metrics: c["metrics"].clone(),
            feasible: None,
            run_dir: run_dir_of(dir, &c["parameters"], &names),
        })
        .collect();
    let aiperf_pareto = doc["pareto_optimal"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| variations.iter().position(|v| &v.parameters == p))
        .collect();
    let slas = doc["metadata"]["sla_constraints"]["active_filters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Sla::from_json)
        .collect();
    let axes = &doc["metadata"]["pareto_axes"];
    let objective = match (axes["y_metric"].as_str(), axes["y_stat"].as_str()) {
        (Some(m), Some(s)) => (m.to_string(), s.to_string()),
        _ => ("output_token_throughput".to_string(), "avg".to_string()),
    };
    Sweep {
        dir: dir.to_path_buf(),
        kind: "sweep".into(),
        variations,
        aiperf_pareto,
        slas,
        objective,
        chosen: None,
        notes: Vec::new(),
    }
}

/// The concurrency ramp's knee: the knee's variation, and the threshold line on the ramp's
/// metric (baseline × (1 + threshold)).
fn apply_knee(sweep: &mut Sweep, knee: &Value) {
    let (Some(metric), Some(stat), Some(base), Some(pct)) = (
        knee["swept_metric"].as_str(),
        knee["stat"].as_str(),
        knee["baseline_p99"].as_f64(),
        knee["threshold_pct"].as_f64(),
    ) else {
        sweep
            .notes
            .push(format!("{KNEE_FILE}: not a degradation knee"));
        return;
    };
    sweep.kind = "concurrency-ramp".into();
    // With one trial the variations' metrics are keyed by tag alone, and AIPerf's knee then
    // compares their `mean` whatever `stat` says: the line goes on the statistic compared.
    let flat = format!("{metric}_{stat}");
    let compared = if sweep
        .variations
        .iter()
        .all(|v| v.metrics.get(&flat).is_some())
    {
        stat
    } else {
        sweep.notes.push(format!(
            "{KNEE_FILE}: with one trial AIPerf compares the mean {metric}, not its {stat} \
             (its baseline_{stat} is the mean); the threshold is drawn on avg"
        ));
        "avg"
    };
    sweep.slas.push(Sla {
        tag: metric.to_string(),
        stat: compared.to_string(),
        op: "le".into(),
        threshold: base * (1.0 + pct),
    });
    let param = knee["swept_param"].as_str().unwrap_or("concurrency");
    let leaf = param.rsplit('.').next().unwrap_or(param);
    if let Some(k) = knee["knee_concurrency"].as_f64() {
        sweep.chosen = sweep
            .variations
            .iter()
            .position(|v| v.parameters[leaf].as_f64() == Some(k))
            .map(|i| (i, "knee".to_string()));
    }
}

/// A search iteration's metrics: its directory's aggregate over trials, else its first run's
/// summary.
fn iteration_metrics(dir: &Path, idx: u64, notes: &mut Vec<String>) -> Option<Value> {
    let it = dir.join(format!("search_iter_{idx:04}"));
    if let Some(a) = read_json(
        &it.join("aggregate")
            .join("profile_export_aiperf_aggregate.json"),
        notes,
    ) {
        return Some(a["metrics"].clone());
    }
    let runs = it.join("profile_runs");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&runs)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("profile_export_aiperf.json").is_file())
        .collect();
    names.sort();
    read_json(&names.first()?.join("profile_export_aiperf.json"), notes)
}

fn read_search(dir: &Path, history: &Value, notes: &mut Vec<String>) -> Sweep {
    let mut variations = Vec::new();
    let mut index_of = Vec::new();
    for it in history["iterations"].as_array().into_iter().flatten() {
        let Some(idx) = it["iteration_idx"].as_u64() else {
            continue;
        };
        let Some(metrics) = iteration_metrics(dir, idx, notes) else {
            notes.push(format!(
                "search_iter_{idx:04}: no profile_export_aiperf.json or aggregate"
            ));
            continue;
        };
        index_of.push(idx);
        variations.push(Variation {
            label: format!("#{idx} {}", parameters_label(&it["variation_values"])),
            parameters: it["variation_values"].clone(),
            metrics,
            feasible: it["feasible"].as_bool(),
            run_dir: None,
        });
    }
    let cfg = &history["config"];
    let slas = cfg["sla_filters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Sla::from_json)
        .collect();
    let obj = &cfg["objectives"][0];
    let objective = match (obj["metric"].as_str(), obj["stat"].as_str()) {
        (Some(m), Some(s)) => (m.to_string(), s.to_string()),
        _ => ("output_token_throughput".to_string(), "avg".to_string()),
    };
    let best = &history["best_trials"][0];
    let chosen = (best["feasible"].as_bool() != Some(false))
        .then(|| best["iteration_idx"].as_u64())
        .flatten()
        .and_then(|b| index_of.iter().position(|&i| i == b))
        .map(|i| (i, "best feasible trial".to_string()));
    Sweep {
        dir: dir.to_path_buf(),
        kind: history["recipe"].as_str().unwrap_or("search").to_string(),
        variations,
        aiperf_pareto: Vec::new(),
        slas,
        objective,
        chosen,
        notes: Vec::new(),
    }
}

/// Reads a sweep or search directory; an error when it holds no variation to plot.
pub fn read_sweep(dir: &Path) -> Result<Sweep, InputError> {
    let mut notes = Vec::new();
    let mut sweep = if let Some(h) = read_json(&dir.join(SEARCH_HISTORY), &mut notes) {
        read_search(dir, &h, &mut notes)
    } else {
        let doc = SWEEP_FILES
            .iter()
            .find_map(|f| read_json(&dir.join(f), &mut notes))
            .unwrap_or(Value::Null);
        let mut s = read_sweep_file(dir, &doc, &mut notes);
        if let Some(knee) = read_json(&dir.join(KNEE_FILE), &mut notes) {
            apply_knee(&mut s, &knee);
        }
        s
    };
    sweep.notes.extend(notes);
    if sweep.variations.is_empty() {
        return Err(InputError::NothingToPlot {
            dir: dir.to_path_buf(),
            notes: sweep.notes,
        });
    }
    Ok(sweep)
}

/// Whether `a` Pareto-dominates `b` on (throughput, maximised; latency, minimised): no worse on
/// both and strictly better on one, as AIPerf's sweep aggregate decides.
fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 >= b.0 && a.1 <= b.1 && (a.0 > b.0 || a.1 < b.1)
}

/// Indices of the points no other point dominates, in input order; a point with a value that
/// is not finite is neither on the frontier nor dominates.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let ok = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    (0..points.len())
        .filter(|&i| ok(&points[i]))
        .filter(|&i| {
            !points
                .iter()
                .enumerate()
                .any(|(j, q)| j != i && ok(q) && dominates(*q, points[i]))
        })
        .collect()
}

impl Sweep {
    /// The latency objective of the frontier: p99 TTFT when every variation has it, else p99
    /// request latency (AIPerf's choice, for non-streaming runs).
    pub fn latency_tag(&self) -> &'static str {
        if self
            .variations
            .iter()
            .all(|v| v.stat("time_to_first_token", "p99").is_some())
        {
            "time_to_first_token"
        } else {
            "request_latency"
        }
    }

    /// The Pareto frontier (variation indices): request throughput avg maximised, the latency
    /// objective's p99 minimised. Variations missing either are left out.
    pub fn pareto(&self) -> Vec<usize> {
        let tag = self.latency_tag();
        let pts: Vec<(usize, (f64, f64))> = self
            .variations
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                Some((
                    i,
                    (
                        v.stat("request_throughput", "avg")?.mean,
                        v.stat(tag, "p99")?.mean,
                    ),
                ))
            })
            .collect();
        let only: Vec<(f64, f64)> = pts.iter().map(|p| p.1).collect();
        pareto_front(&only).into_iter().map(|k| pts[k].0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_frontier_of_hand_computed_points() {
        // (throughput, latency). A (10, 50) and B (20, 80) and E (30, 200) trade off; C (15, 90)
        // is dominated by B (more throughput, less latency); D (20, 85) by B (same throughput,
        // less latency); F (20, 80) ties B exactly: neither dominates, both stay.
        let pts = [
            (10.0, 50.0),
            (20.0, 80.0),
            (15.0, 90.0),
            (20.0, 85.0),
            (30.0, 200.0),
            (20.0, 80.0),
        ];
        assert_eq!(pareto_front(&pts), [0, 1, 4, 5]);
        // AIPerf's own docstring example: 10 → (100, 50), 20 → (150, 80), 30 → (140, 90).
        assert_eq!(
            pareto_front(&[(100.0, 50.0), (150.0, 80.0), (140.0, 90.0)]),
            [0, 1]
        );
        // A point that is not finite neither joins nor dominates.
        assert_eq!(pareto_front(&[(f64::NAN, 1.0), (5.0, 9.0)]), [1]);
        assert_eq!(pareto_front(&[(f64::INFINITY, 0.0), (5.0, 9.0)]), [1]);
        assert!(pareto_front(&[]).is_empty());
    }

    #[test]
    fn statistics_in_both_shapes() {
        let trials =
            json!({"request_throughput_avg": {"mean": 5.0, "ci_low": 4.0, "ci_high": 6.0}});
        assert_eq!(
            stat_of(&trials, "request_throughput", "avg"),
            Some(Interval {
                mean: 5.0,
                ci_low: 4.0,
                ci_high: 6.0
            })
        );
        let one = json!({"time_to_first_token": {"mean": 7.0, "p99": 9.5}});
        assert_eq!(
            stat_of(&one, "time_to_first_token", "p99").unwrap().mean,
            9.5
        );
        assert_eq!(
            stat_of(&one, "time_to_first_token", "avg").unwrap().mean,
            7.0
        );
        assert_eq!(stat_of(&one, "time_to_first_token", "p50"), None);
        assert_eq!(stat_of(&json!("garbage"), "x", "avg"), None);
    }

    #[test]
    fn sla_operators_and_labels() {
        let sla = Sla::from_json(&json!({"metric_tag": "time_to_first_token", "stat": "p95", "op": "lt", "threshold": 15.0})).unwrap();
        assert!(sla.holds(14.99) && !sla.holds(15.0));
        assert_eq!(sla.text(), "time_to_first_token p95 < 15");
        let le = Sla {
            op: "le".into(),
            ..sla.clone()
        };
        assert!(le.holds(15.0) && !le.holds(15.01));
        let odd = Sla {
            op: "eq".into(),
            ..sla
        };
        assert!(!odd.holds(1.0));
        assert_eq!(
            parameters_label(&json!({"phases.profiling.concurrency": 4, "mean": 16})),
            "concurrency 4, mean 16"
        );
    }

    #[test]
    fn garbled_sweep_files_are_an_error_naming_them() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("sweep_aggregate")).unwrap();
        std::fs::write(tmp.path().join(SWEEP_FILES[0]), "{\"per_combination").unwrap();
        assert!(is_sweep(tmp.path()));
        let err = read_sweep(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
        std::fs::write(
            tmp.path().join(SWEEP_FILES[0]),
            "{\"per_combination_metrics\": 3}",
        )
        .unwrap();
        assert!(read_sweep(tmp.path()).is_err());
        std::fs::write(
            tmp.path().join(SEARCH_HISTORY),
            "{\"iterations\": [{\"iteration_idx\": 0}]}",
        )
        .unwrap();
        let err = read_sweep(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("search_iter_0000"), "{err}");
    }
}
