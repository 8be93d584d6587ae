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
/// The grid `max-concurrency-under-sla`'s answer: the highest concurrency that met the SLA.
pub const SLA_BREACH_FILE: &str = "sweep_aggregate/sla_breach.json";

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
    /// The client fell behind on this point (a run summary's `ringperf.client_health` has
    /// `kept_up` false, or the sweep / search file or the aggregate marks it): its figures
    /// measure the client, and the point is excluded from the verdicts.
    pub fell_behind: bool,
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
    /// The chosen variation and why (`best feasible trial`, `knee`, `max_passing_concurrency
    /// (sweep_aggregate/sla_breach.json)`), as the directory's own result file says.
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

/// A per-variation aggregate found in the directory: its `variation_values`, the directory
/// name it is under, and whether its metadata says the client fell behind.
struct Named {
    values: Value,
    name: String,
    fell_behind: bool,
}

/// Every per-variation aggregate: `aggregate/<name>/` (one trial, repeated trials) and
/// `<name>/aggregate/` (independent).
fn variation_names(dir: &Path, notes: &mut Vec<String>) -> Vec<Named> {
    let mut out = Vec::new();
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    for (base, nested) in [(dir.join("aggregate"), false), (dir.to_path_buf(), true)] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = if nested {
                e.path().join("aggregate").join(AGGREGATE_FILE)
            } else {
                e.path().join(AGGREGATE_FILE)
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
            out.push(Named {
                values: md["variation_values"].clone(),
                name,
                fell_behind: md["client_fell_behind"].as_bool() == Some(true),
            });
        }
    }
    out
}

/// A variation's or a search point's aggregate over its trials.
const AGGREGATE_FILE: &str = "profile_export_aiperf_aggregate.json";
/// A run's summary.
const SUMMARY_FILE: &str = "profile_export_aiperf.json";

/// The aggregate of the point whose directory is named `name`: `aggregate/<name>/` (ringperf
/// writes it for every point, one trial or several; AIPerf with repeated trials) or
/// `<name>/aggregate/` (independent trials).
fn point_aggregate(dir: &Path, name: &str, notes: &mut Vec<String>) -> Option<Value> {
    [
        dir.join("aggregate").join(name).join(AGGREGATE_FILE),
        dir.join(name).join("aggregate").join(AGGREGATE_FILE),
    ]
    .iter()
    .find_map(|p| read_json(p, notes))
}

/// The run summaries of the point whose directory is named `name`, in every layout: one
/// trial `<name>/`, its runs `<name>/profile_runs/<run>/` (independent trials, and AIPerf's
/// search iterations), repeated trials `profile_runs/<trial>/<name>/`; each layout's runs in
/// name order.
fn point_summaries(dir: &Path, name: &str) -> Vec<PathBuf> {
    let sorted_dirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    let mut out = vec![dir.join(name).join(SUMMARY_FILE)];
    out.extend(
        sorted_dirs(&dir.join(name).join("profile_runs"))
            .into_iter()
            .map(|r| r.join(SUMMARY_FILE)),
    );
    out.extend(
        sorted_dirs(&dir.join("profile_runs"))
            .into_iter()
            .map(|t| t.join(name).join(SUMMARY_FILE)),
    );
    out.retain(|p| p.is_file());
    out
}

/// Whether any of the run summaries says its client fell behind (`ringperf.client_health`
/// with `kept_up` false).
fn any_fell_behind(summaries: &[PathBuf], notes: &mut Vec<String>) -> bool {
    summaries.iter().any(|p| {
        read_json(p, notes)
            .is_some_and(|s| s["ringperf"]["client_health"]["kept_up"].as_bool() == Some(false))
    })
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

/// The aggregate found for a combination's parameters.
fn named_of<'a>(params: &Value, names: &'a [Named]) -> Option<&'a Named> {
    names.iter().find(|n| same_variation(params, &n.values))
}

/// The variation's own run directory among the aggregates' names, when it holds a run.
fn run_dir_of(dir: &Path, named: Option<&Named>) -> Option<PathBuf> {
    let d = dir.join(&named?.name);
    let holds_run = ["profile_export.jsonl", SUMMARY_FILE, "profile_runs"]
        .iter()
        .any(|f| d.join(f).exists());
    holds_run.then_some(d)
}

/// A variation's label: its variant's name when the parameters are a variant's overrides
/// (AIPerf's `benchmark` parameter, a JSON string), else its parameters.
fn label_for(params: &Value, names: &[Named]) -> String {
    let is_variant = params
        .as_object()
        .is_some_and(|o| o.len() == 1 && o.get("benchmark").is_some_and(Value::is_string));
    if is_variant && let Some(n) = names.iter().find(|n| &n.values == params) {
        return n.name.clone();
    }
    parameters_label(params)
}

fn read_sweep_file(dir: &Path, doc: &Value, notes: &mut Vec<String>) -> Sweep {
    let names = variation_names(dir, notes);
    let combos = doc["per_combination_metrics"].as_array();
    let variations: Vec<Variation> = combos
        .into_iter()
        .flatten()
        .map(|c| {
            let named = named_of(&c["parameters"], &names);
            let summaries = named.map_or_else(Vec::new, |n| point_summaries(dir, &n.name));
            Variation {
                label: label_for(&c["parameters"], &names),
                parameters: c["parameters"].clone(),
                metrics: c["metrics"].clone(),
                feasible: None,
                fell_behind: c["client_fell_behind"].as_bool() == Some(true)
                    || named.is_some_and(|n| n.fell_behind)
                    || any_fell_behind(&summaries, notes),
                run_dir: run_dir_of(dir, named),
            }
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
    Sweep {
        dir: dir.to_path_buf(),
        kind: "sweep".into(),
        variations,
        aiperf_pareto,
        slas,
        chosen: None,
        notes: Vec::new(),
    }
}

/// A parameter of a variation by its dotted path or by the path's leaf (a sweep file names
/// `concurrency` what a search names `phases.profiling.concurrency`).
fn parameter<'a>(params: &'a Value, path: &str) -> Option<&'a Value> {
    let leaf = path.rsplit('.').next().unwrap_or(path);
    params.get(path).or_else(|| params.get(leaf))
}

/// The grid `max-concurrency-under-sla`'s answer, as `sla_breach.json` gives it:
/// `max_passing_<leaf of swept_param>`, the variation at that value.
fn apply_sla_breach(sweep: &mut Sweep, breach: &Value) {
    let Some(path) = breach["swept_param"].as_str() else {
        sweep
            .notes
            .push(format!("{SLA_BREACH_FILE}: no swept_param"));
        return;
    };
    sweep.kind = "max-concurrency-under-sla".into();
    let leaf = path.rsplit('.').next().unwrap_or(path);
    let key = format!("max_passing_{leaf}");
    let Some(best) = breach[&key].as_f64() else {
        // `null`: no value met the SLA; nothing is chosen.
        return;
    };
    sweep.chosen = sweep
        .variations
        .iter()
        .position(|v| parameter(&v.parameters, path).and_then(Value::as_f64) == Some(best))
        .map(|i| (i, format!("{key} ({SLA_BREACH_FILE})")));
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

/// A search iteration's metrics: the aggregate over its trials, else its first run's
/// summary; and whether its client fell behind (the history's `client_fell_behind`, the
/// aggregate's metadata, or a run summary's `ringperf.client_health`).
fn iteration_point(
    dir: &Path,
    it: &Value,
    name: &str,
    notes: &mut Vec<String>,
) -> Option<(Value, bool)> {
    let summaries = point_summaries(dir, name);
    let aggregate = point_aggregate(dir, name, notes);
    let metrics = match &aggregate {
        Some(a) => a["metrics"].clone(),
        None => read_json(summaries.first()?, notes)?,
    };
    let behind = it["client_fell_behind"].as_bool() == Some(true)
        || aggregate.is_some_and(|a| a["metadata"]["client_fell_behind"].as_bool() == Some(true))
        || any_fell_behind(&summaries, notes);
    Some((metrics, behind))
}

fn read_search(dir: &Path, history: &Value, notes: &mut Vec<String>) -> Sweep {
    let mut variations = Vec::new();
    let mut index_of = Vec::new();
    for it in history["iterations"].as_array().into_iter().flatten() {
        let Some(idx) = it["iteration_idx"].as_u64() else {
            continue;
        };
        let name = format!("search_iter_{idx:04}");
        let Some((metrics, fell_behind)) = iteration_point(dir, it, &name, notes) else {
            notes.push(format!(
                "{name}: no {SUMMARY_FILE} (in {name}/, {name}/profile_runs/*/ or \
                 profile_runs/*/{name}/) and no aggregate (aggregate/{name}/ or {name}/aggregate/)"
            ));
            continue;
        };
        index_of.push(idx);
        variations.push(Variation {
            label: format!("#{idx} {}", parameters_label(&it["variation_values"])),
            parameters: it["variation_values"].clone(),
            metrics,
            feasible: it["feasible"].as_bool(),
            fell_behind,
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
    // The search's answer as it wrote it: `best_trials[0]`.
    let best = &history["best_trials"][0];
    let why = if best["feasible"].as_bool() == Some(false) {
        "best trial (not feasible)"
    } else {
        "best feasible trial"
    };
    let chosen = best["iteration_idx"]
        .as_u64()
        .and_then(|b| index_of.iter().position(|&i| i == b))
        .map(|i| (i, why.to_string()));
    Sweep {
        dir: dir.to_path_buf(),
        kind: history["recipe"].as_str().unwrap_or("search").to_string(),
        variations,
        aiperf_pareto: Vec::new(),
        slas,
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
        if let Some(breach) = read_json(&dir.join(SLA_BREACH_FILE), &mut notes) {
            apply_sla_breach(&mut s, &breach);
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
    /// The parameter the sweep varies, the x axis of its per-point charts (the SLA charts):
    /// among the parameters every variation holds as a number, `concurrency` when it varies,
    /// else the first that varies, else the first (a single point). `None` when no parameter
    /// is a number (variants): the points are then drawn at their position, 1, 2, ….
    pub fn swept_parameter(&self) -> Option<String> {
        let first = self.variations.first()?.parameters.as_object()?;
        let numeric: Vec<&String> = first
            .keys()
            .filter(|k| {
                self.variations
                    .iter()
                    .all(|v| v.parameters.get(k.as_str()).is_some_and(Value::is_number))
            })
            .collect();
        let varies = |k: &str| {
            let x0 = first.get(k).and_then(Value::as_f64);
            self.variations
                .iter()
                .any(|v| v.parameters.get(k).and_then(Value::as_f64) != x0)
        };
        let leaf = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
        let varying: Vec<&String> = numeric.iter().copied().filter(|k| varies(k)).collect();
        varying
            .iter()
            .find(|k| leaf(k) == "concurrency")
            .or_else(|| varying.first())
            .or_else(|| numeric.first())
            .map(|k| (*k).clone())
    }

    /// Variation `i`'s value on the swept parameter (its position from 1 without one).
    pub fn x_of(&self, swept: Option<&str>, i: usize) -> Option<f64> {
        match swept {
            Some(k) => self.variations.get(i)?.parameters.get(k)?.as_f64(),
            None => Some((i + 1) as f64),
        }
    }

    /// Whether the variations differ in anything but the swept parameter (then a point's x
    /// alone does not name it).
    pub fn others_vary(&self, swept: Option<&str>) -> bool {
        let rest = |v: &Variation| -> Value {
            let mut p = v.parameters.clone();
            if let (Some(o), Some(k)) = (p.as_object_mut(), swept) {
                o.remove(k);
            }
            p
        };
        let Some(first) = self.variations.first() else {
            return false;
        };
        let r0 = rest(first);
        self.variations.iter().any(|v| rest(v) != r0)
    }

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
    /// objective's p99 minimised. Variations missing either, and those whose client fell
    /// behind (as ringperf's sweep aggregate leaves them out), are left out.
    pub fn pareto(&self) -> Vec<usize> {
        let tag = self.latency_tag();
        let pts: Vec<(usize, (f64, f64))> = self
            .variations
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.fell_behind)
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

    fn write(path: &Path, v: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, v.to_string()).unwrap();
    }

    /// A search point's figures are wherever its run put them: the aggregate ringperf writes
    /// for every point (`aggregate/search_iter_NNNN/`), else the point's one run
    /// (`search_iter_NNNN/`), AIPerf's `search_iter_NNNN/profile_runs/run_0001/`, or repeated
    /// trials' `profile_runs/trial_0001/search_iter_NNNN/`. Whether the client fell behind is
    /// read from the history, the aggregate's metadata and every run's `client_health`.
    #[test]
    fn search_points_are_read_from_every_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let it = |i: u64, behind: bool| {
            json!({"iteration_idx": i, "variation_values": {"phases.profiling.concurrency": 1 << i},
                   "feasible": !behind, "client_fell_behind": behind})
        };
        write(
            &d.join(SEARCH_HISTORY),
            &json!({
                "config": {"sla_filters": [{"metric_tag": "time_to_first_token", "stat": "p95", "op": "lt", "threshold": 20.0}]},
                "iterations": [it(0, false), it(1, false), it(2, false), it(3, true), it(4, false)],
                "best_trials": [{"iteration_idx": 1, "feasible": true}],
                "recipe": "max-concurrency-under-sla",
            }),
        );
        let kept = |k: bool| json!({"client_health": {"kept_up": k}});
        write(
            &d.join("aggregate/search_iter_0000/profile_export_aiperf_aggregate.json"),
            &json!({"metadata": {"client_fell_behind": false},
                    "metrics": {"time_to_first_token_p95": {"mean": 5.0, "ci_low": 4.0, "ci_high": 6.0}}}),
        );
        write(
            &d.join("search_iter_0001/profile_export_aiperf.json"),
            &json!({"time_to_first_token": {"p95": 7.0}, "ringperf": kept(true)}),
        );
        write(
            &d.join("search_iter_0002/profile_runs/run_0001/profile_export_aiperf.json"),
            &json!({"time_to_first_token": {"p95": 9.0}, "ringperf": kept(false)}),
        );
        write(
            &d.join("profile_runs/trial_0001/search_iter_0003/profile_export_aiperf.json"),
            &json!({"time_to_first_token": {"p95": 11.0}}),
        );
        // Iteration 4 wrote nothing: a note names where it was looked for.
        let s = read_sweep(d).unwrap();
        assert_eq!(s.kind, "max-concurrency-under-sla");
        let p95: Vec<f64> = s
            .variations
            .iter()
            .map(|v| v.stat("time_to_first_token", "p95").unwrap().mean)
            .collect();
        assert_eq!(p95, [5.0, 7.0, 9.0, 11.0]);
        let behind: Vec<bool> = s.variations.iter().map(|v| v.fell_behind).collect();
        assert_eq!(behind, [false, false, true, true]);
        assert_eq!(s.chosen, Some((1, "best feasible trial".to_string())));
        assert_eq!(s.variations[1].label, "#1 concurrency 2");
        assert!(
            s.notes
                .iter()
                .any(|n| n.starts_with("search_iter_0004: no")),
            "{:?}",
            s.notes
        );
    }

    /// The grid search's answer is `sla_breach.json`'s `max_passing_concurrency`.
    #[test]
    fn a_grid_search_answer_is_its_sla_breach_file() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let combo = |c: u64| json!({"parameters": {"concurrency": c}, "metrics": {}});
        write(
            &d.join(SWEEP_FILES[0]),
            &json!({"per_combination_metrics": [combo(1), combo(2), combo(4)]}),
        );
        write(
            &d.join(SLA_BREACH_FILE),
            &json!({"swept_param": "phases.profiling.concurrency", "max_passing_concurrency": 2}),
        );
        let s = read_sweep(d).unwrap();
        assert_eq!(s.kind, "max-concurrency-under-sla");
        let (i, why) = s.chosen.unwrap();
        assert_eq!(s.variations[i].label, "concurrency 2");
        assert_eq!(
            why,
            "max_passing_concurrency (sweep_aggregate/sla_breach.json)"
        );
        // No value met the SLA: nothing is chosen.
        write(
            &d.join(SLA_BREACH_FILE),
            &json!({"swept_param": "phases.profiling.concurrency", "max_passing_concurrency": null}),
        );
        assert_eq!(read_sweep(d).unwrap().chosen, None);
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
