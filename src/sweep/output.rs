//! The sweep's own files and console, as AIPerf 0.13 writes them: each variation's aggregate
//! (`profile_export_aiperf_aggregate.json` / `.csv`, with its label, values and the sweep
//! mode in `metadata`), the sweep aggregate (`sweep_aggregate/profile_export_aiperf_sweep.json`
//! / `.csv`: every variation's metrics, the best configurations and the Pareto frontier of
//! throughput against p99 latency) and the sweep table.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::error::SweepError;
use super::plan::{SweepPlan, SweepType, Variation};
use super::result::{VariationResult, variation_metadata};
use ringperf_metrics::export::AIPERF_VERSION;
use ringperf_metrics::export::aggregate::{self, Aggregate};

/// The sweep aggregate's file names.
pub const SWEEP_JSON: &str = "profile_export_aiperf_sweep.json";
/// See [`SWEEP_JSON`].
pub const SWEEP_CSV: &str = "profile_export_aiperf_sweep.csv";
/// The sweep table as a text file (ringperf's addition): AIPerf prints the table on a terminal
/// only, so a run whose output goes to a log file keeps it here.
pub const SWEEP_TABLE: &str = "sweep_table.txt";

/// The latency objective of the frontier and of `best_latency_p99`: TTFT p99 when every
/// variation has it, else request latency p99 (non-streaming).
const LATENCY_CANDIDATES: [&str; 2] = ["time_to_first_token_p99", "request_latency_p99"];
/// The throughput objective.
const THROUGHPUT: &str = "request_throughput_avg";

fn write(path: &Path, bytes: &[u8]) -> Result<(), SweepError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| SweepError::Write {
            path: dir.to_owned(),
            source,
        })?;
    }
    std::fs::write(path, bytes).map_err(|source| SweepError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Writes `result`'s aggregate `a` into its aggregate directory.
///
/// # Errors
/// A file cannot be written.
pub fn write_variation_aggregate(
    plan: &SweepPlan,
    base: &Path,
    model: &str,
    result: &VariationResult,
    a: &Aggregate,
) -> Result<(), SweepError> {
    let dir = plan.aggregate_dir(base, &result.variation);
    let mut doc = aggregate::aggregate_json(a, AIPERF_VERSION);
    if let Some(meta) = doc.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.extend(variation_metadata(plan, &result.variation));
        meta.insert("model".into(), Value::from(model));
        meta.insert(
            "client_fell_behind".into(),
            Value::from(result.client_fell_behind),
        );
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    write(&dir.join(aggregate::JSON_NAME), text.as_bytes())?;
    write(
        &dir.join(aggregate::CSV_NAME),
        aggregate::aggregate_csv(a).as_bytes(),
    )
}

/// `parameters` of a variation in the sweep aggregate: `{short name: value}`; a `--variant`
/// (AIPerf's scenario): `{"benchmark": <its overrides>}`.
/// A search point's values by their flags' short names (`concurrency`), as AIPerf's sweep
/// aggregate lists them.
fn point_values(v: &Variation) -> Map<String, Value> {
    (v.values.iter())
        .map(|o| (o.flag.short_name().to_owned(), o.value.to_json()))
        .collect()
}

fn parameters_of(plan: &SweepPlan, v: &Variation) -> Map<String, Value> {
    if plan.at_most.is_some() {
        return point_values(v);
    }
    // A config file's point: its values by the last segment of their paths (`format`).
    if v.file.is_some() {
        return (v.values_json().into_iter())
            .map(|(k, x)| (k.rsplit('.').next().unwrap_or(&k).to_owned(), x))
            .collect();
    }
    if v.scenario {
        return v.values_json();
    }
    let mut m = Map::new();
    for o in &v.values {
        m.insert(o.flag.short_name().to_owned(), o.value.to_json());
    }
    m
}

/// A variation's metrics as the sweep aggregate has them: `{<tag>_<stat>: {mean, std, min,
/// max, cv, ci_low, ci_high, unit}}`.
fn metrics_of(a: &Aggregate) -> Map<String, Value> {
    let num = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
    a.metrics
        .iter()
        .map(|m| {
            let s = &m.stats;
            (
                m.key.clone(),
                json!({
                    "mean": num(s.mean), "std": num(s.std), "min": num(s.min),
                    "max": num(s.max), "cv": num(s.cv), "ci_low": num(s.ci_low),
                    "ci_high": num(s.ci_high), "unit": m.unit,
                }),
            )
        })
        .collect()
}

/// A one-trial variation's metrics as AIPerf's sweep aggregate has them: each metric of the
/// run's summary JSON by its tag, its `avg` as `mean`, `avg`, `ci_low` and `ci_high`, `std`
/// and `cv` 0 (one trial), its own `min` / `max` (else the avg), then its other statistics.
fn single_trial_metrics(r: &VariationResult) -> Map<String, Value> {
    let Some(doc) = r
        .trials
        .iter()
        .find(|t| t.outcome.stopped.is_none())
        .and_then(|t| std::fs::read(&t.summary).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    else {
        return Map::new();
    };
    let mut out = Map::new();
    for (tag, v) in doc.as_object().into_iter().flatten() {
        let Some(m) = v.as_object().filter(|m| m.contains_key("unit")) else {
            continue;
        };
        let Some(avg) = m.get("avg").and_then(Value::as_f64) else {
            continue;
        };
        let stat = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(avg);
        let mut o = Map::new();
        o.insert("mean".into(), json!(avg));
        o.insert("avg".into(), json!(avg));
        o.insert("std".into(), json!(0.0));
        o.insert("min".into(), json!(stat("min")));
        o.insert("max".into(), json!(stat("max")));
        o.insert("cv".into(), json!(0.0));
        o.insert("ci_low".into(), json!(avg));
        o.insert("ci_high".into(), json!(avg));
        o.insert("unit".into(), m["unit"].clone());
        for (k, x) in m {
            if !matches!(k.as_str(), "unit" | "avg" | "min" | "max" | "std") {
                o.insert(k.clone(), x.clone());
            }
        }
        out.insert(tag.clone(), Value::Object(o));
    }
    out
}

/// The mean of `key` in `r`, if present.
fn mean_of(r: &VariationResult, key: &str) -> Option<f64> {
    let (tag, stat) = key.rsplit_once('_')?;
    r.mean(tag, stat)
}

/// The variations on the Pareto frontier of (throughput up, latency down), among `rs`: those
/// no other variation beats on one objective while matching it on the other. Indices into
/// `rs`, in `rs` order.
pub fn pareto(rs: &[(f64, f64)]) -> Vec<usize> {
    let dominates =
        |a: (f64, f64), b: (f64, f64)| a.0 >= b.0 && a.1 <= b.1 && (a.0 > b.0 || a.1 < b.1);
    (0..rs.len())
        .filter(|&i| {
            !rs.iter()
                .enumerate()
                .any(|(j, &o)| j != i && dominates(o, rs[i]))
        })
        .collect()
}

/// The sweep aggregate document.
pub fn sweep_json(plan: &SweepPlan, results: &[VariationResult]) -> Value {
    let mut counted: Vec<&VariationResult> =
        results.iter().filter(|r| r.aggregate.is_some()).collect();
    // An adaptive search's points, as AIPerf 0.13 aggregates them: one combination per
    // distinct point (its values by their short names), in the order first proposed, from the
    // last time it ran.
    if plan.at_most.is_some() {
        let mut order: Vec<Map<String, Value>> = Vec::new();
        let mut last: Vec<&VariationResult> = Vec::new();
        for r in counted {
            let key = point_values(&r.variation);
            match order.iter().position(|k| *k == key) {
                Some(i) => last[i] = r,
                None => {
                    order.push(key);
                    last.push(r);
                }
            }
        }
        counted = last;
    }
    let total_runs: usize = results.iter().map(|r| r.runs.len()).sum();
    let ok_runs: usize = results
        .iter()
        .map(|r| r.runs.iter().filter(|x| x.outcome.is_ok()).count())
        .sum();
    let failed: Vec<Value> = results
        .iter()
        .flat_map(|r| {
            r.runs.iter().filter_map(move |x| {
                x.outcome.as_ref().err().map(|e| {
                    json!({"label": format!("{} {}", r.variation.label, x.label), "error": e.to_string()})
                })
            })
        })
        .collect();
    // A scenario sweep has one parameter, `benchmark`, whose values are the variants'
    // overrides; a grid or zip one each list (AIPerf counts the zip's combinations as the
    // product of the lengths too).
    let files: Vec<Map<String, Value>> = (plan.variations.iter())
        .filter(|v| v.file.is_some())
        .map(Variation::values_json)
        .collect();
    let (params, combinations): (Vec<Value>, usize) = if let Some(first) = files.first() {
        // A config file's scenarios: one parameter per key of their values (`benchmark`, each
        // run's subtree as its JSON text, unless the runs give flat `values:`).
        let params = first
            .keys()
            .map(|k| {
                let values: Vec<Value> = files
                    .iter()
                    .map(|f| f.get(k).cloned().unwrap_or(Value::Null))
                    .collect();
                json!({"name": k.rsplit('.').next().unwrap_or(k), "values": values})
            })
            .collect();
        (params, files.len())
    } else if plan.at_most.is_some() {
        // Each dimension's distinct values, in the order the search proposed them.
        let mut params: Vec<(String, Vec<Value>)> = Vec::new();
        for r in &counted {
            for (k, v) in point_values(&r.variation) {
                match params.iter_mut().find(|(n, _)| *n == k) {
                    Some((_, vs)) if !vs.contains(&v) => vs.push(v),
                    Some(_) => {}
                    None => params.push((k, vec![v])),
                }
            }
        }
        let n = params.iter().map(|(_, vs)| vs.len()).product();
        let params = params
            .into_iter()
            .map(|(name, values)| json!({"name": name, "values": values}))
            .collect();
        (params, n)
    } else if plan.sweep_type == SweepType::Scenarios {
        let values: Vec<Value> = plan
            .variations
            .iter()
            .map(|v| Value::from(v.benchmark_override()))
            .collect();
        (
            vec![json!({"name": "benchmark", "values": values})],
            plan.variations.len(),
        )
    } else {
        (
            plan.parameters
                .iter()
                .map(|(f, vs)| json!({"name": f.short_name(), "values": vs.iter().map(|v| v.to_json()).collect::<Vec<_>>()}))
                .collect(),
            plan.parameters.iter().map(|(_, vs)| vs.len()).product(),
        )
    };
    let per: Vec<Value> = counted
        .iter()
        .map(|r| {
            let mut o = Map::new();
            o.insert(
                "parameters".into(),
                Value::Object(parameters_of(plan, &r.variation)),
            );
            let metrics = if plan.trials == 1 {
                single_trial_metrics(r)
            } else {
                r.aggregate.as_ref().map(metrics_of).unwrap_or_default()
            };
            o.insert("metrics".into(), Value::Object(metrics));
            if r.client_fell_behind {
                o.insert("client_fell_behind".into(), Value::from(true));
            }
            Value::Object(o)
        })
        .collect();
    // With SLA bounds: the best among the feasible variations (all when none is), the
    // frontier among the feasible ones only (AIPerf's rule).
    let a = &plan.annotations;
    let mask = a.feasible(&per);
    let any_feasible = mask.iter().any(|&m| m);
    let pick = |use_mask: bool| -> Vec<&VariationResult> {
        counted
            .iter()
            .zip(&mask)
            .filter(|(r, m)| !r.client_fell_behind && (**m || !use_mask))
            .map(|(r, _)| *r)
            .collect()
    };
    let (best, frontier) = best_and_frontier(plan, &pick(any_feasible), &pick(!a.sla.is_empty()));
    let mut metadata = Map::new();
    metadata.insert("sweep_parameters".into(), Value::Array(params));
    metadata.insert("num_combinations".into(), json!(combinations));
    if let Some(c) = a.sla_constraints(&mask) {
        metadata.insert("sla_constraints".into(), c);
    }
    metadata.insert("sweep_mode".into(), json!(plan.mode.as_str()));
    metadata.insert("confidence_level".into(), json!(plan.confidence_level));
    metadata.insert("num_trials_per_value".into(), json!(plan.trials));
    if let Some(axes) = &a.pareto_axes {
        metadata.insert("pareto_axes".into(), axes.clone());
    }
    metadata.insert("aggregation_type".into(), json!("sweep"));
    json!({
        "aggregation_type": "sweep",
        "num_profile_runs": total_runs,
        "num_successful_runs": ok_runs,
        "failed_runs": failed,
        "metadata": metadata,
        "per_combination_metrics": per,
        "best_configurations": best,
        "pareto_optimal": frontier,
    })
}

/// `best_configurations` over the variations `for_best`, and `pareto_optimal` over
/// `for_frontier` (whose clients kept up).
fn best_and_frontier(
    plan: &SweepPlan,
    for_best: &[&VariationResult],
    for_frontier: &[&VariationResult],
) -> (Map<String, Value>, Vec<Value>) {
    let mut best = Map::new();
    let tput: Option<Vec<f64>> = for_best.iter().map(|r| mean_of(r, THROUGHPUT)).collect();
    if let Some(t) = tput.as_ref().filter(|t| !t.is_empty()) {
        let i = (0..t.len()).fold(0, |b, i| if t[i] > t[b] { i } else { b });
        best.insert("best_throughput".into(), json!({"parameters": parameters_of(plan, &for_best[i].variation), "metric": t[i], "unit": "requests/sec"}));
    }
    let latency_key = LATENCY_CANDIDATES
        .iter()
        .find(|k| !for_best.is_empty() && for_best.iter().all(|r| mean_of(r, k).is_some()));
    if let Some(k) = latency_key {
        let l: Vec<f64> = for_best.iter().filter_map(|r| mean_of(r, k)).collect();
        let i = (0..l.len()).fold(0, |b, i| if l[i] < l[b] { i } else { b });
        best.insert("best_latency_p99".into(), json!({"parameters": parameters_of(plan, &for_best[i].variation), "metric": l[i], "unit": "ms"}));
    }
    let mut frontier = Vec::new();
    let pts: Option<Vec<(f64, f64)>> = latency_key.and_then(|k| {
        for_frontier
            .iter()
            .map(|r| Some((mean_of(r, THROUGHPUT)?, mean_of(r, k)?)))
            .collect()
    });
    if let Some(pts) = pts {
        frontier = pareto(&pts)
            .into_iter()
            .map(|i| Value::Object(parameters_of(plan, &for_frontier[i].variation)))
            .collect();
    }
    (best, frontier)
}

/// The sweep aggregate CSV from its JSON document: one row per variation, its parameters
/// then `<key>_mean, _std, _min, _max, _cv` of every metric key (sorted); two decimals, four
/// for the CV, empty where a value is null (AIPerf's layout, CRLF).
pub fn sweep_csv(doc: &Value) -> String {
    let per: &[Value] = doc
        .get("per_combination_metrics")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut params: Vec<String> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    for c in per {
        for k in c["parameters"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if !params.contains(k) {
                params.push(k.clone());
            }
        }
        for k in c["metrics"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort();
    let stats = ["mean", "std", "min", "max", "cv"];
    let mut head: Vec<String> = params.clone();
    for k in &keys {
        head.extend(stats.iter().map(|s| format!("{k}_{s}")));
    }
    let mut out = head.join(",");
    out.push_str("\r\n");
    for c in per {
        let mut row: Vec<String> = params
            .iter()
            .map(|k| match &c["parameters"][k] {
                Value::String(s) => ringperf_metrics::export::csv::field(s),
                Value::Null => String::new(),
                v => v.to_string(),
            })
            .collect();
        for k in &keys {
            for s in stats {
                let v = c["metrics"][k][s].as_f64();
                row.push(match v {
                    Some(v) if s == "cv" => format!("{v:.4}"),
                    Some(v) => format!("{v:.2}"),
                    None => String::new(),
                });
            }
        }
        out.push_str(&row.join(","));
        out.push_str("\r\n");
    }
    out
}

/// Writes the sweep aggregate; returns `(label, path)` of each file for the console.
///
/// # Errors
/// A file cannot be written.
pub fn write_sweep(
    plan: &SweepPlan,
    base: &Path,
    results: &[VariationResult],
) -> Result<Vec<(&'static str, PathBuf)>, SweepError> {
    let dir = plan.sweep_aggregate_dir(base);
    let json_path = dir.join(SWEEP_JSON);
    let doc = sweep_json(plan, results);
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    write(&json_path, text.as_bytes())?;
    let csv_path = dir.join(SWEEP_CSV);
    write(&csv_path, sweep_csv(&doc).as_bytes())?;
    let table_path = dir.join(SWEEP_TABLE);
    write(&table_path, render_table(results).as_bytes())?;
    Ok(vec![
        ("Sweep Aggregate JSON Export", json_path),
        ("Sweep Aggregate CSV Export", csv_path),
        ("Sweep Table", table_path),
    ])
}

/// AIPerf's headline columns of the sweep table: `(tag, stat)`, each the mean across the
/// variation's trials.
const TABLE_METRICS: [(&str, &str); 4] = [
    ("output_token_throughput", "avg"),
    ("time_to_first_token", "p99"),
    ("inter_token_latency", "p99"),
    ("request_latency", "p95"),
];

/// The sweep table as AIPerf 0.13 prints it: a column per swept parameter (its path, sorted),
/// the headline metrics (two decimals, empty when absent) and the trials that counted; then,
/// ringperf's addition, a `client` column marking a variation whose client fell behind (only
/// when one did).
pub fn render_table(results: &[VariationResult]) -> String {
    let mut names: Vec<String> = results
        .iter()
        .flat_map(|r| r.variation.values_json().into_iter().map(|(k, _)| k))
        .collect();
    names.sort();
    names.dedup();
    let marked = results.iter().any(|r| r.client_fell_behind);
    let mut head: Vec<String> = names.clone();
    head.extend(TABLE_METRICS.iter().map(|(t, _)| (*t).to_string()));
    head.push("trials".into());
    if marked {
        head.push("client".into());
    }
    let mut rows = vec![head];
    for r in results {
        let values = r.variation.values_json();
        let mut row: Vec<String> = names
            .iter()
            .map(|n| match values.get(n) {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            })
            .collect();
        for (tag, stat) in TABLE_METRICS {
            row.push(
                r.mean(tag, stat)
                    .map_or(String::new(), |v| format!("{v:.2}")),
            );
        }
        row.push(
            r.runs
                .iter()
                .filter(|x| x.outcome.is_ok())
                .count()
                .to_string(),
        );
        if marked {
            row.push(if r.client_fell_behind {
                "fell behind".into()
            } else {
                String::new()
            });
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let line = |r: &[String]| -> String {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:>w$}"))
            .collect();
        format!("  {}  \n", cells.join("   "))
    };
    let mut out = String::from("\n");
    out.push_str(&line(&rows[0]));
    let rule: usize = widths.iter().sum::<usize>() + 3 * widths.len().saturating_sub(1) + 4;
    let _ = writeln!(out, " {}", "━".repeat(rule.saturating_sub(1)));
    for r in &rows[1..] {
        out.push_str(&line(r));
    }
    out.push('\n');
    out
}
