//! The derived files of a grid recipe (docs/search.md, "Derived files"): computed from the
//! sweep aggregate document after every point ran, and written beside it in `sweep_aggregate/`
//! under AIPerf 0.13's names and keys. A handler that cannot compute its file (no usable point,
//! a zero baseline, …) does not fail the run: its error goes to `post_process_errors.json`, as
//! AIPerf quarantines it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::sla::SlaFilter;
use crate::sweep::annotate::observed;

/// What a grid recipe derives, with its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Derivation {
    /// `degradation_knee_detect`: the first swept value whose metric exceeds the lowest
    /// value's by more than `threshold_pct`.
    Knee {
        /// The degradation cut-off as a fraction (0.2: 20 %).
        threshold_pct: f64,
        /// The metric tag.
        metric_tag: String,
        /// Its statistic.
        stat: String,
        /// The swept parameter's path.
        swept_param: String,
    },
    /// `sla_breach_knee`: the largest swept value meeting every filter and the smallest one
    /// failing one.
    SlaBreach {
        /// The recipe's filters, in order.
        filters: Vec<SlaFilter>,
        /// The swept parameter's path.
        swept_param: String,
    },
    /// `ttft_curve_fit`: TTFT against ISL fitted by a line, or a parabola when the line
    /// explains less than `r_squared_floor` of the variance.
    CurveFit {
        /// The metric tag (`time_to_first_token`).
        metric_tag: String,
        /// Its statistic.
        stat: String,
        /// The swept parameter's path (the ISL's).
        swept_param: String,
        /// The r² under which the line is refitted as a parabola (AIPerf's default
        /// [`R2_FLOOR`]).
        r_squared_floor: f64,
    },
    /// `itl_surface_fit`: the measured ITL on the concurrency × OSL grid, `null` where no
    /// point was measured (no interpolation).
    ItlSurface {
        /// The metric tag (`inter_token_latency`).
        metric_tag: String,
        /// Its statistic.
        stat: String,
        /// The concurrency's parameter path.
        concurrency_param: String,
        /// The OSL's parameter path.
        osl_param: String,
    },
    /// `pareto_sweep_export`: every (ISL, OSL, concurrency) cell with its x (lower is better)
    /// and y (higher is better), marked when no other cell dominates it.
    ParetoExport {
        /// The x axis's metric tag and statistic.
        x: (String, String),
        /// The y axis's metric tag and statistic.
        y: (String, String),
        /// The rows' parameter names of the ISL, the OSL and the concurrency (`isl`, `osl`,
        /// `concurrency` for the recipe's own sweep).
        keys: [String; 3],
    },
}

/// Why a handler wrote no file: the message, and the kind of error AIPerf names for it.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedError {
    /// AIPerf's exception class for the same failure (`ValueError`, `TypeError`).
    pub kind: &'static str,
    /// What went wrong.
    pub message: String,
}

impl DerivedError {
    fn value(message: String) -> Self {
        DerivedError {
            kind: "ValueError",
            message,
        }
    }
}

impl fmt::Display for DerivedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DerivedError {}

/// The statistics a handler accepts.
const STATS: [&str; 5] = ["avg", "p50", "p90", "p95", "p99"];

fn checked_stat(stat: &str, handler: &str) -> Result<(), DerivedError> {
    if STATS.contains(&stat) {
        Ok(())
    } else {
        Err(DerivedError::value(format!(
            "{handler}: stat {stat:?} is not a recognized statistic; expected one of {STATS:?}"
        )))
    }
}

/// The last dotted segment of a parameter path (`concurrency`).
fn leaf(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// A swept value as a number: a JSON number, or a string holding one.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A whole value written as an integer, any other as it is.
fn int_if_whole(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

fn rows(doc: &Value) -> &[Value] {
    doc.get("per_combination_metrics")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The swept parameter's value of a row: under its full path, else under its leaf.
fn param_of<'a>(row: &'a Value, path: &str) -> Option<&'a Value> {
    let p = row.get("parameters")?;
    p.get(path).or_else(|| p.get(leaf(path)))
}

/// `(swept value, metric)` of every row that has both, in ascending swept order. The metric is
/// the `mean` of `<tag>_<stat>` (a sweep with trials) or, failing that, of `<tag>` (one trial:
/// that block's mean is the run's average whatever `stat` asks, as AIPerf reads it).
fn points(doc: &Value, path: &str, tag: &str, stat: &str) -> Result<Vec<(f64, f64)>, DerivedError> {
    let flat = format!("{tag}_{stat}");
    let mut out = Vec::new();
    for row in rows(doc) {
        let Some(x) = param_of(row, path) else {
            continue;
        };
        let m = &row["metrics"];
        let block = Some(&m[&flat])
            .filter(|b| b.get("mean").is_some())
            .or_else(|| Some(&m[tag]).filter(|b| b.get("mean").is_some()));
        let Some(block) = block else { continue };
        let (Some(x), Some(y)) = (number(x), block["mean"].as_f64()) else {
            return Err(DerivedError {
                kind: "TypeError",
                message: format!("post-process: a row's {path} or {tag} mean is not a number"),
            });
        };
        out.push((x, y));
    }
    if out.is_empty() {
        return Err(DerivedError::value(format!(
            "post-process: sweep aggregate has no rows with parameter {path:?} and metric \
             {tag:?} (flat key {flat:?}); check that the recipe swept that parameter and that \
             the metric is enabled (e.g. --streaming for time_to_first_token)."
        )));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(out)
}

/// `degradation_knee.json`.
fn knee(
    doc: &Value,
    threshold_pct: f64,
    tag: &str,
    stat: &str,
    path: &str,
) -> Result<Value, DerivedError> {
    checked_stat(stat, "degradation_knee_detect")?;
    let pts = points(doc, path, tag, stat)?;
    let (bx, by) = pts[0];
    if by <= 0.0 {
        return Err(DerivedError::value(format!(
            "degradation_knee_detect: baseline {stat} for {tag:?} must be positive (got {by}); \
             a zero or negative baseline makes the cut-off meaningless"
        )));
    }
    let cutoff = by * (1.0 + threshold_pct);
    let knee = pts[1..].iter().find(|p| p.1 > cutoff);
    let l = leaf(path);
    let mut o = Map::new();
    o.insert(format!("baseline_{l}"), int_if_whole(bx));
    o.insert(format!("baseline_{stat}"), json!(by));
    o.insert(format!("knee_{l}"), json!(knee.map(|k| int_if_whole(k.0))));
    o.insert(format!("knee_{stat}"), json!(knee.map(|k| k.1)));
    o.insert("threshold_pct".into(), json!(threshold_pct));
    o.insert("swept_metric".into(), json!(tag));
    o.insert("stat".into(), json!(stat));
    o.insert("swept_param".into(), json!(path));
    let all: Vec<Value> = pts
        .iter()
        .map(|&(x, y)| {
            let mut p = Map::new();
            p.insert(l.to_owned(), int_if_whole(x));
            p.insert(stat.to_owned(), json!(y));
            Value::Object(p)
        })
        .collect();
    o.insert("all_points".into(), Value::Array(all));
    Ok(Value::Object(o))
}

fn filter_json(f: &SlaFilter) -> Value {
    json!({"metric_tag": f.metric_tag, "stat": f.stat, "op": f.op.as_str(), "threshold": f.threshold})
}

/// The filters a row breaks, in filter order, each with the figure observed (null: absent).
fn breaches(metrics: &Value, filters: &[SlaFilter]) -> Vec<Value> {
    filters
        .iter()
        .filter_map(|f| {
            let seen = observed(metrics, &f.metric_tag, &f.stat);
            if seen.is_some_and(|v| f.op.holds(v, f.threshold)) {
                return None;
            }
            let mut b = filter_json(f);
            b["observed"] = json!(seen);
            Some(b)
        })
        .collect()
}

/// `sla_breach.json`: rows grouped by swept value (a value is feasible only when every row of
/// it is), ascending. A row whose client fell behind (ringperf's `client_fell_behind` in the
/// sweep file) is not feasible whatever its figures, and its point says so
/// (`"client_fell_behind": true`, ringperf's addition), as the answer line leaves it out.
fn sla_breach(doc: &Value, filters: &[SlaFilter], path: &str) -> Result<Value, DerivedError> {
    let l = leaf(path);
    let all_rows = rows(doc);
    let first_has_path = all_rows
        .first()
        .is_some_and(|r| r["parameters"].get(path).is_some());
    let key = if first_has_path { path } else { l };
    let mut keyed: Vec<(f64, &Value)> = Vec::new();
    for r in all_rows {
        let Some(v) = r["parameters"].get(key) else {
            continue;
        };
        let x = number(v).ok_or_else(|| {
            DerivedError::value(format!("sla_breach_knee: {key} value {v} is not a number"))
        })?;
        keyed.push((x, r));
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    // (x, point) in ascending x, one per distinct x.
    let mut grouped: Vec<(f64, Map<String, Value>)> = Vec::new();
    for (x, r) in keyed {
        let found = breaches(&r["metrics"], filters);
        let behind = r["client_fell_behind"] == json!(true);
        let passes = found.is_empty() && !behind;
        match grouped.last_mut().filter(|g| g.0 == x) {
            Some((_, p)) => {
                let ok = p["feasible"].as_bool() == Some(true) && passes;
                p.insert("feasible".into(), json!(ok));
                if behind {
                    p.insert("client_fell_behind".into(), json!(true));
                }
                if let Some(Value::Array(b)) = p.get_mut("breaches") {
                    b.extend(found);
                }
            }
            None => {
                let mut p = Map::new();
                p.insert(l.to_owned(), r["parameters"][key].clone());
                p.insert("feasible".into(), json!(passes));
                p.insert("breaches".into(), Value::Array(found));
                if behind {
                    p.insert("client_fell_behind".into(), json!(true));
                }
                grouped.push((x, p));
            }
        }
    }
    let feasible = |g: &&(f64, Map<String, Value>)| g.1["feasible"] == json!(true);
    let max_passing = grouped.iter().rfind(feasible);
    let first_failing = grouped.iter().find(|g| !feasible(g));
    let first_feasible_after_failing =
        first_failing.is_some_and(|f| grouped.iter().any(|g| g.0 > f.0 && feasible(&g)));
    let mut o = Map::new();
    o.insert("swept_param".into(), json!(path));
    o.insert(
        format!("max_passing_{l}"),
        max_passing.map_or(Value::Null, |g| g.1[l].clone()),
    );
    o.insert(
        format!("first_failing_{l}"),
        first_failing.map_or(Value::Null, |g| g.1[l].clone()),
    );
    o.insert(
        "first_failing_breach".into(),
        first_failing.map_or(Value::Null, |g| g.1["breaches"][0].clone()),
    );
    o.insert(
        "all_points".into(),
        Value::Array(grouped.into_iter().map(|g| Value::Object(g.1)).collect()),
    );
    o.insert(
        "monotonicity_check".into(),
        json!(!first_feasible_after_failing),
    );
    o.insert(
        "filters".into(),
        Value::Array(filters.iter().map(filter_json).collect()),
    );
    Ok(Value::Object(o))
}

/// The least-squares polynomial of degree `deg` through `pts`, highest power first, and its
/// r² (0 when y does not vary). Solved by QR (modified Gram-Schmidt) on the Vandermonde
/// columns scaled to unit length, so ISLs in the tens of thousands squared stay well
/// conditioned.
fn polyfit(pts: &[(f64, f64)], deg: usize) -> (Vec<f64>, f64) {
    let n = pts.len();
    let k = deg + 1;
    // Columns x^deg … x^0, as numpy orders them.
    let mut cols: Vec<Vec<f64>> = (0..k)
        .map(|j| pts.iter().map(|p| p.0.powi((deg - j) as i32)).collect())
        .collect();
    let scale: Vec<f64> = cols
        .iter()
        .map(|c| c.iter().map(|v| v * v).sum::<f64>().sqrt())
        .map(|s| if s > 0.0 { s } else { 1.0 })
        .collect();
    for (c, s) in cols.iter_mut().zip(&scale) {
        c.iter_mut().for_each(|v| *v /= s);
    }
    let mut r = vec![vec![0.0; k]; k];
    for j in 0..k {
        for i in 0..j {
            let (done, rest) = cols.split_at_mut(j);
            let (qi, cj) = (&done[i], &mut rest[0]);
            let d: f64 = qi.iter().zip(cj.iter()).map(|(a, b)| a * b).sum();
            r[i][j] = d;
            cj.iter_mut().zip(qi).for_each(|(v, q)| *v -= d * q);
        }
        let norm = cols[j].iter().map(|v| v * v).sum::<f64>().sqrt();
        r[j][j] = norm;
        if norm > 0.0 {
            cols[j].iter_mut().for_each(|v| *v /= norm);
        }
    }
    let qty: Vec<f64> = cols
        .iter()
        .map(|q| q.iter().zip(pts).map(|(a, p)| a * p.1).sum())
        .collect();
    let mut c = vec![0.0; k];
    for i in (0..k).rev() {
        let rest: f64 = (i + 1..k).map(|j| r[i][j] * c[j]).sum();
        c[i] = if r[i][i] != 0.0 {
            (qty[i] - rest) / r[i][i]
        } else {
            0.0
        };
    }
    let coeffs: Vec<f64> = c.iter().zip(&scale).map(|(c, s)| c / s).collect();
    let at = |x: f64| coeffs.iter().fold(0.0, |acc, c| acc * x + c);
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / n as f64;
    let ss_res: f64 = pts.iter().map(|p| (p.1 - at(p.0)).powi(2)).sum();
    let ss_tot: f64 = pts.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let r2 = if ss_tot == 0.0 {
        0.0
    } else {
        1.0 - ss_res / ss_tot
    };
    (coeffs, r2)
}

/// The r² under which the line is refitted as a parabola, unless the handler is given another.
pub const R2_FLOOR: f64 = 0.85;

/// `prefill_curve.json`.
fn curve_fit(
    doc: &Value,
    (tag, stat): (&str, &str),
    path: &str,
    floor: f64,
) -> Result<Value, DerivedError> {
    checked_stat(stat, "ttft_curve_fit")?;
    let pts = points(doc, path, tag, stat)?;
    if pts.len() < 2 {
        return Err(DerivedError::value(format!(
            "ttft_curve_fit: need >= 2 sweep points to fit a curve (got {} for {tag:?}/{stat:?}); \
             widen the recipe's ISL range or sweep more steps.",
            pts.len()
        )));
    }
    let (mut coeffs, mut r2) = polyfit(&pts, 1);
    let mut form = "linear";
    if r2 < floor && pts.len() >= 3 {
        let (c2, q2) = polyfit(&pts, 2);
        if q2 > r2 {
            (coeffs, r2, form) = (c2, q2, "quadratic");
        }
    }
    let below = r2.is_nan() || coeffs.iter().any(|c| !c.is_finite()) || r2 < floor;
    let raw: Vec<Value> = pts
        .iter()
        .map(|&(x, y)| json!({"isl": x, "ttft_ms": y}))
        .collect();
    Ok(json!({
        "fit_form": form,
        "coefficients": coeffs,
        "r_squared": r2,
        "below_floor": below,
        "r_squared_floor": floor,
        "raw_points": raw,
        "swept_metric": tag,
        "stat": stat,
        "swept_param": path,
    }))
}

/// The block of `tag` a handler reads in a row's metrics: `<tag>_<stat>` when it has a `mean`,
/// else `<tag>` when it has one.
fn mean_block<'a>(metrics: &'a Value, tag: &str, stat: &str) -> Option<&'a Value> {
    Some(&metrics[format!("{tag}_{stat}")])
        .filter(|b| b.get("mean").is_some())
        .or_else(|| Some(&metrics[tag]).filter(|b| b.get("mean").is_some()))
}

/// A swept parameter of a row as a number, or the handler's `TypeError`.
fn param_number(row: &Value, path: &str, handler: &str) -> Result<Option<f64>, DerivedError> {
    let Some(v) = param_of(row, path) else {
        return Ok(None);
    };
    number(v).map(Some).ok_or_else(|| DerivedError {
        kind: "ValueError",
        message: format!("{handler}: parameter {path:?} value {v} is not a number"),
    })
}

/// `decode_itl_surface.json`.
fn itl_surface(
    doc: &Value,
    tag: &str,
    stat: &str,
    c_path: &str,
    o_path: &str,
) -> Result<Value, DerivedError> {
    const H: &str = "itl_surface_fit";
    checked_stat(stat, H)?;
    let flat = format!("{tag}_{stat}");
    let (mut candidates, mut non_finite, mut negative) = (0usize, 0usize, 0usize);
    let mut triples: Vec<(f64, f64, f64)> = Vec::new();
    for row in rows(doc) {
        let (Some(c), Some(o)) = (param_number(row, c_path, H)?, param_number(row, o_path, H)?)
        else {
            continue;
        };
        let Some(block) = mean_block(&row["metrics"], tag, stat) else {
            continue;
        };
        candidates += 1;
        match block["mean"].as_f64().filter(|v| v.is_finite()) {
            None => non_finite += 1,
            Some(v) if v < 0.0 => negative += 1,
            Some(v) => triples.push((c, o, v)),
        }
    }
    if candidates == 0 {
        return Err(DerivedError::value(format!(
            "{H}: sweep aggregate has no rows with parameters {c_path:?} + {o_path:?} and \
             metric {tag:?} (flat key {flat:?}); check that the recipe swept both axes and \
             streaming was enabled."
        )));
    }
    if non_finite + negative > 0 {
        eprintln!(
            "warning: {H}: dropped {non_finite} non-finite and {negative} negative ITL row(s) \
             for metric {tag:?}"
        );
    }
    // Stable, as AIPerf sorts: of two rows of one cell the later one is the cell's value.
    triples.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let raw: Vec<Value> = triples
        .iter()
        .map(|&(c, o, v)| json!({"concurrency": c, "osl": o, "itl_ms": v}))
        .collect();
    let mut o = Map::new();
    o.insert("swept_metric".into(), json!(tag));
    o.insert("stat".into(), json!(stat));
    o.insert("swept_params".into(), json!([c_path, o_path]));
    o.insert("raw_points".into(), Value::Array(raw));
    if triples.len() < 2 {
        o.insert(
            "surface".into(),
            json!({"concurrency_axis": [], "osl_axis": [], "itl_grid": []}),
        );
        o.insert("surface_fit_failed".into(), json!(true));
        o.insert(
            "error_reason".into(),
            json!(format!(
                "{H}: fewer than 2 finite-positive rows after dropping non-finite/negative ITL \
                 (kept {}, dropped {non_finite} non-finite + {negative} negative); check that \
                 streaming was enabled and that swept cells produced successful requests.",
                triples.len()
            )),
        );
        return Ok(Value::Object(o));
    }
    let axis = |pick: fn(&(f64, f64, f64)) -> f64| {
        let mut a: Vec<f64> = triples.iter().map(pick).collect();
        a.sort_by(f64::total_cmp);
        a.dedup();
        a
    };
    let (cs, os) = (axis(|t| t.0), axis(|t| t.1));
    let grid: Vec<Vec<Option<f64>>> = cs
        .iter()
        .map(|&c| {
            os.iter()
                .map(|&o| {
                    let hit = triples.iter().rev().find(|t| t.0 == c && t.1 == o);
                    hit.map(|t| t.2)
                })
                .collect()
        })
        .collect();
    o.insert(
        "surface".into(),
        json!({"concurrency_axis": cs, "osl_axis": os, "itl_grid": grid}),
    );
    o.insert("surface_fit_failed".into(), json!(false));
    Ok(Value::Object(o))
}

/// One `pareto_sweep.json` cell of a row, `None` when the row lacks an axis block or one of
/// the three parameters.
fn pareto_cell(
    row: &Value,
    (x, y): (&(String, String), &(String, String)),
    keys: &[String; 3],
) -> Result<Option<Map<String, Value>>, DerivedError> {
    const H: &str = "pareto_sweep_export";
    let m = &row["metrics"];
    // An empty `<tag>_<stat>` block falls through to `<tag>`, as in AIPerf.
    let block = |(tag, stat): &(String, String)| {
        Some(&m[format!("{tag}_{stat}")])
            .filter(|b| b.as_object().is_some_and(|o| !o.is_empty()))
            .or_else(|| m.get(tag))
    };
    let (Some(xb), Some(yb)) = (block(x), block(y)) else {
        return Ok(None);
    };
    let (Some(xm), Some(ym)) = (xb.get("mean"), yb.get("mean")) else {
        return Ok(None);
    };
    let mut cell = Map::new();
    for (key, name) in ["isl", "osl", "concurrency"].into_iter().zip(keys) {
        match row["parameters"].get(name).map(number) {
            None => return Ok(None),
            Some(None) => {
                return Err(DerivedError::value(format!(
                    "{H}: parameter {key:?} is not a number"
                )));
            }
            Some(Some(v)) => cell.insert(key.into(), json!(v.trunc() as i64)),
        };
    }
    let (Some(xv), Some(yv)) = (xm.as_f64(), ym.as_f64()) else {
        return Err(DerivedError {
            kind: "TypeError",
            message: format!("{H}: an axis mean is not a number"),
        });
    };
    cell.insert("x".into(), json!(xv));
    cell.insert("y".into(), json!(yv));
    cell.insert("pareto_optimal".into(), json!(false));
    Ok(Some(cell))
}

/// `pareto_sweep.json`: a cell is optimal when no other has x ≤ its x and y ≥ its y, one of
/// them strictly; a cell with a non-finite axis is never optimal.
fn pareto_export(
    doc: &Value,
    x: &(String, String),
    y: &(String, String),
    keys: &[String; 3],
) -> Result<Value, DerivedError> {
    const H: &str = "pareto_sweep_export";
    checked_stat(&x.1, H)?;
    checked_stat(&y.1, H)?;
    let mut cells = Vec::new();
    for row in rows(doc) {
        cells.extend(pareto_cell(row, (x, y), keys)?);
    }
    if cells.is_empty() {
        return Err(DerivedError::value(format!(
            "{H}: no rows with the expected (isl, osl, concurrency) parameters and metrics \
             ({}_{}, {}_{}); check that the recipe ran end-to-end with --streaming.",
            x.0, x.1, y.0, y.1
        )));
    }
    let xy: Vec<(f64, f64)> = cells
        .iter()
        .map(|c| {
            (
                c["x"].as_f64().unwrap_or(f64::NAN),
                c["y"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect();
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    for (i, c) in cells.iter_mut().enumerate() {
        let me = xy[i];
        let dominated = xy.iter().enumerate().any(|(j, o)| {
            j != i && finite(o) && o.0 <= me.0 && o.1 >= me.1 && (o.0 < me.0 || o.1 > me.1)
        });
        c.insert("pareto_optimal".into(), json!(finite(&me) && !dominated));
    }
    Ok(json!({
        "x_metric": x.0,
        "x_stat": x.1,
        "y_metric": y.0,
        "y_stat": y.1,
        "cells": cells,
    }))
}

/// AIPerf's post-process handlers, by name.
pub const HANDLERS: [&str; 5] = [
    "degradation_knee_detect",
    "itl_surface_fit",
    "pareto_sweep_export",
    "sla_breach_knee",
    "ttft_curve_fit",
];

impl Derivation {
    /// The derivation a config file's `post_process: {handler, params}` asks for, its
    /// parameters read as AIPerf's handlers read them (`params["metric_tag"]` and so on, a
    /// number from a number or its text). A handler AIPerf does not have, or a parameter
    /// missing or unreadable, is the error AIPerf's hook quarantines (`TypeNotFoundError`,
    /// `KeyError`, `ValueError`): the sweep still runs and its aggregate is written.
    ///
    /// # Errors
    /// As above.
    pub fn from_params(handler: &str, params: &Map<String, Value>) -> Result<Self, DerivedError> {
        let get = |k: &str| {
            params.get(k).ok_or_else(|| DerivedError {
                kind: "KeyError",
                message: format!("'{k}'"),
            })
        };
        // Python's `str(v)` of a parameter.
        let text = |k: &str| -> Result<String, DerivedError> {
            Ok(match get(k)? {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
        };
        // Python's `float(v)`.
        let real = |v: &Value| -> Result<f64, DerivedError> {
            number(v).ok_or_else(|| DerivedError {
                kind: if v.is_string() {
                    "ValueError"
                } else {
                    "TypeError"
                },
                message: match v {
                    Value::String(s) => format!("could not convert string to float: '{s}'"),
                    other => {
                        format!("float() argument must be a string or a real number, not {other}")
                    }
                },
            })
        };
        let stat = |k: &str| -> Result<String, DerivedError> {
            let s = text(k)?;
            checked_stat(&s, handler)?;
            Ok(s)
        };
        Ok(match handler {
            "degradation_knee_detect" => Derivation::Knee {
                threshold_pct: real(get("threshold_pct")?)?,
                metric_tag: text("metric_tag")?,
                stat: stat("stat")?,
                swept_param: text("swept_param")?,
            },
            "sla_breach_knee" => {
                let swept_param = text("swept_param")?;
                let filters = match get("sla_filters")? {
                    Value::Array(list) => list.iter().map(filter_of).collect::<Result<_, _>>()?,
                    other => {
                        return Err(DerivedError {
                            kind: "TypeError",
                            message: format!("'{other}' object is not iterable"),
                        });
                    }
                };
                Derivation::SlaBreach {
                    filters,
                    swept_param,
                }
            }
            "ttft_curve_fit" => Derivation::CurveFit {
                metric_tag: text("metric_tag")?,
                stat: stat("stat")?,
                swept_param: text("swept_param")?,
                r_squared_floor: match params.get("r_squared_floor") {
                    Some(v) => real(v)?,
                    None => R2_FLOOR,
                },
            },
            "itl_surface_fit" => Derivation::ItlSurface {
                metric_tag: text("metric_tag")?,
                stat: stat("stat")?,
                concurrency_param: text("concurrency_param")?,
                osl_param: text("osl_param")?,
            },
            "pareto_sweep_export" => Derivation::ParetoExport {
                x: (text("x_metric")?, stat("x_stat")?),
                y: (text("y_metric")?, stat("y_stat")?),
                keys: [text("isl_key")?, text("osl_key")?, text("concurrency_key")?],
            },
            other => {
                let list: String = HANDLERS.iter().map(|h| format!("\n  • {h}")).collect();
                return Err(DerivedError {
                    kind: "TypeNotFoundError",
                    message: format!(
                        "Type '{other}' not found for category 'search_recipe_post_process'.\n\
                         Available types:{list}"
                    ),
                });
            }
        })
    }
}

/// One `sla_filters` entry of `sla_breach_knee`'s parameters (an SLA filter as AIPerf dumps
/// it: `metric_tag`, `stat` (p95 when absent), `op`, `threshold`).
fn filter_of(v: &Value) -> Result<SlaFilter, DerivedError> {
    let bad = |why: String| DerivedError::value(format!("sla_breach_knee: sla_filters: {why}"));
    let m = v
        .as_object()
        .ok_or_else(|| bad(format!("{v} is not a filter")))?;
    let word = |k: &str| m.get(k).and_then(Value::as_str);
    let (Some(tag), Some(op), Some(threshold)) = (
        word("metric_tag"),
        word("op"),
        m.get("threshold").and_then(number),
    ) else {
        return Err(bad(format!("{v} needs metric_tag, op and threshold")));
    };
    let stat = word("stat").unwrap_or("p95");
    SlaFilter::parse(&format!("{tag}:{stat}:{op}:{threshold}")).map_err(|e| bad(e.to_string()))
}

/// The derived document of `d` from the sweep aggregate `doc` (`None`: not computed yet).
///
/// # Errors
/// The handler's own refusal ([`DerivedError`]), which AIPerf quarantines.
pub fn derive(d: &Derivation, doc: &Value) -> Result<Option<Value>, DerivedError> {
    match d {
        Derivation::Knee {
            threshold_pct,
            metric_tag,
            stat,
            swept_param,
        } => knee(doc, *threshold_pct, metric_tag, stat, swept_param).map(Some),
        Derivation::SlaBreach {
            filters,
            swept_param,
        } => sla_breach(doc, filters, swept_param).map(Some),
        Derivation::CurveFit {
            metric_tag,
            stat,
            swept_param,
            r_squared_floor,
        } => curve_fit(doc, (metric_tag, stat), swept_param, *r_squared_floor).map(Some),
        Derivation::ItlSurface {
            metric_tag,
            stat,
            concurrency_param,
            osl_param,
        } => itl_surface(doc, metric_tag, stat, concurrency_param, osl_param).map(Some),
        Derivation::ParetoExport { x, y, keys } => pareto_export(doc, x, y, keys).map(Some),
    }
}

/// Writes the derived file `name` of `d` into `dir` (the sweep aggregate's directory), or,
/// when its handler refuses (or `d` is the refusal of a config file's handler or parameters),
/// `post_process_errors.json` naming `handler`, and says which on the console. Returns the
/// file written.
///
/// # Errors
/// The file cannot be written.
pub fn write_derived(
    dir: &Path,
    handler: &str,
    name: &str,
    d: &Result<Derivation, DerivedError>,
    doc: &Value,
) -> Result<Option<PathBuf>, super::SearchError> {
    let derived = match d {
        Ok(d) => derive(d, doc),
        Err(e) => Err(e.clone()),
    };
    let (path, body) = match derived {
        Ok(None) => return Ok(None),
        Ok(Some(v)) => (dir.join(name), v),
        Err(e) => {
            let path = dir.join("post_process_errors.json");
            eprintln!(
                "warning: post-process handler {handler:?} failed: {e}; the sweep aggregate is \
                 unaffected (errors in {})",
                path.display()
            );
            let body = json!({"handler": handler, "output_filename": name, "error": e.message, "type": e.kind});
            (path, body)
        }
    };
    // As AIPerf's orjson writes it: two-space indent, no final newline.
    let text = serde_json::to_string_pretty(&body).unwrap_or_default();
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|source| super::SearchError::Write {
            path: path.clone(),
            source,
        })?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::sla::Op;

    fn fixture(path: &str) -> Value {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(path);
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    }

    fn ramp_knee() -> Derivation {
        Derivation::Knee {
            threshold_pct: 0.2,
            metric_tag: "request_latency".into(),
            stat: "p99".into(),
            swept_param: "phases.profiling.concurrency".into(),
        }
    }

    /// AIPerf's own `concurrency-ramp` run: from its sweep aggregate, the file it wrote, to the
    /// key order and the last digit.
    #[test]
    fn knee_of_aiperfs_sweep_is_aiperfs_file() {
        let dir = "aiperf-search/concurrency-ramp/sweep_aggregate";
        let doc = fixture(&format!("{dir}/profile_export_aiperf_sweep.json"));
        let want = fixture(&format!("{dir}/degradation_knee.json"));
        let got = derive(&ramp_knee(), &doc).unwrap().unwrap();
        assert_eq!(got, want);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    /// AIPerf's own grid `max-concurrency-under-sla` (p99 request latency < 30 ms): from its
    /// sweep aggregate, the `sla_breach.json` it wrote.
    #[test]
    fn sla_breach_of_aiperfs_sweep_is_aiperfs_file() {
        let dir = "aiperf-search/sla-grid/sweep_aggregate";
        let doc = fixture(&format!("{dir}/profile_export_aiperf_sweep.json"));
        let want = fixture(&format!("{dir}/sla_breach.json"));
        let d = Derivation::SlaBreach {
            filters: vec![SlaFilter::new("request_latency", "p99", Op::Lt, 30.0)],
            swept_param: "phases.profiling.concurrency".into(),
        };
        let got = derive(&d, &doc).unwrap().unwrap();
        assert_eq!(got, want);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    fn isl_doc(xs: &[f64], ys: &[f64]) -> Value {
        let rows: Vec<Value> = xs
            .iter()
            .zip(ys)
            .rev()
            .map(|(&x, &y)| {
                json!({"parameters": {"isl": x as u64},
                       "metrics": {"time_to_first_token_avg": {"mean": y}}})
            })
            .collect();
        json!({ "per_combination_metrics": rows })
    }

    fn fit(xs: &[f64], ys: &[f64]) -> Value {
        let d = Derivation::CurveFit {
            metric_tag: "time_to_first_token".into(),
            stat: "avg".into(),
            swept_param: "datasets.main.prompts.isl".into(),
            r_squared_floor: R2_FLOOR,
        };
        derive(&d, &isl_doc(xs, ys)).unwrap().unwrap()
    }

    fn close(got: &Value, want: &[f64]) {
        let got: Vec<f64> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1e-12),
                "{got:?} vs {want:?}"
            );
        }
    }

    /// The expected coefficients and r² are numpy's (`numpy.polyfit` in the AIPerf venv, r² as
    /// AIPerf computes it), for three hand-made curves: a near line (kept linear), a bend whose
    /// line explains 83 % (< 0.85: refitted, the parabola wins), and three points a parabola
    /// goes through exactly.
    #[test]
    fn curve_fits_match_numpy() {
        let isl = [256.0, 512.0, 1024.0, 2048.0, 4096.0];
        let line = fit(&isl[..4], &[12.5, 20.0, 41.0, 80.5]);
        assert_eq!(line["fit_form"], "linear");
        close(
            &line["coefficients"],
            &[0.03845108695652175, 1.586956521739116],
        );
        close(&json!([line["r_squared"]]), &[0.9989974351178365]);
        assert_eq!(line["below_floor"], false);
        assert_eq!(
            line["raw_points"][0],
            json!({"isl": 256.0, "ttft_ms": 12.5})
        );

        let bend = fit(&isl, &[10.0, 10.5, 12.0, 14.0, 120.0]);
        assert_eq!(bend["fit_form"], "quadratic");
        close(
            &bend["coefficients"],
            &[
                1.220654868235097e-05,
                -0.025586431649272618,
                19.35294117647061,
            ],
        );
        close(&json!([bend["r_squared"]]), &[0.9927374672623507]);

        let exact = fit(&isl[..3], &[5.0, 50.0, 6.0]);
        assert_eq!(exact["fit_form"], "quadratic");
        close(
            &exact["coefficients"],
            &[
                -0.00034077962239583294,
                0.43749999999999956,
                -84.66666666666669,
            ],
        );
        assert!((exact["r_squared"].as_f64().unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(exact["below_floor"], false);
        // Two points: a line, never a parabola; a flat line explains nothing (r² 0): below.
        let flat = fit(&isl[..2], &[7.0, 7.0]);
        assert_eq!(flat["fit_form"], "linear");
        assert_eq!(flat["r_squared"], 0.0);
        assert_eq!(flat["below_floor"], true);
    }

    /// AIPerf's own `prefill-ttft-curve` (ISL 16, 64, 256 on the mock, whose TTFT does not
    /// follow the ISL: a line explains little, three points fit a parabola exactly): the file
    /// it wrote, its coefficients to 1e-9 (numpy's solver and this one differ in the last bits).
    #[test]
    fn curve_fit_of_aiperfs_sweep_is_aiperfs_file() {
        let dir = "aiperf-search/prefill-curve/sweep_aggregate";
        let doc = fixture(&format!("{dir}/profile_export_aiperf_sweep.json"));
        let mut want = fixture(&format!("{dir}/prefill_curve.json"));
        let d = Derivation::CurveFit {
            metric_tag: "time_to_first_token".into(),
            stat: "avg".into(),
            swept_param: "datasets.main.prompts.isl".into(),
            r_squared_floor: R2_FLOOR,
        };
        let mut got = derive(&d, &doc).unwrap().unwrap();
        let coeffs: Vec<f64> = want["coefficients"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        close(&got["coefficients"], &coeffs);
        assert!((got["r_squared"].as_f64().unwrap() - 1.0).abs() < 1e-12);
        for v in [&mut got, &mut want] {
            v["coefficients"] = Value::Null;
            v["r_squared"] = Value::Null;
        }
        assert_eq!(got, want);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    #[test]
    fn a_curve_of_one_point_is_refused() {
        let d = Derivation::CurveFit {
            metric_tag: "time_to_first_token".into(),
            stat: "avg".into(),
            swept_param: "datasets.main.prompts.isl".into(),
            r_squared_floor: R2_FLOOR,
        };
        let e = derive(&d, &isl_doc(&[256.0], &[3.0])).unwrap_err();
        assert!(e.message.contains("need >= 2 sweep points"), "{e}");
    }

    fn row(params: Value, metrics: Value) -> Value {
        json!({"parameters": params, "metrics": metrics})
    }

    /// Hand-made rows out of order, with trials' flat keys: the knee is the first value past
    /// 10 × 1.5 = 15 (not the larger one after it); none past the cut-off gives nulls.
    #[test]
    fn knee_is_the_first_value_past_the_cutoff() {
        let m = |v: f64| json!({"time_to_first_token_p95": {"mean": v}});
        let doc = json!({"per_combination_metrics": [
            row(json!({"concurrency": 8}), m(40.0)),
            row(json!({"concurrency": 1}), m(10.0)),
            row(json!({"concurrency": 4}), m(15.5)),
            row(json!({"concurrency": 2}), m(15.0)),
            row(json!({"isl": 3}), m(99.0)),
        ]});
        let d = |t: f64| Derivation::Knee {
            threshold_pct: t,
            metric_tag: "time_to_first_token".into(),
            stat: "p95".into(),
            swept_param: "phases.profiling.concurrency".into(),
        };
        let got = derive(&d(0.5), &doc).unwrap().unwrap();
        assert_eq!(got["baseline_concurrency"], 1);
        assert_eq!(got["knee_concurrency"], 4);
        assert_eq!(got["knee_p95"], 15.5);
        assert_eq!(got["all_points"].as_array().unwrap().len(), 4);
        assert_eq!(got["all_points"][1], json!({"concurrency": 2, "p95": 15.0}));
        let none = derive(&d(3.0), &doc).unwrap().unwrap();
        assert_eq!(none["knee_concurrency"], Value::Null);
        assert_eq!(none["knee_p95"], Value::Null);
    }

    #[test]
    fn knee_refusals_are_errors_not_files() {
        let zero = json!({"per_combination_metrics": [
            row(json!({"concurrency": 1}), json!({"request_latency": {"mean": 0.0}})),
        ]});
        let e = derive(&ramp_knee(), &zero).unwrap_err();
        assert_eq!(e.kind, "ValueError");
        assert!(e.message.contains("must be positive"), "{e}");
        let e = derive(&ramp_knee(), &json!({})).unwrap_err();
        assert!(e.message.contains("has no rows"), "{e}");
        let bad_stat = Derivation::Knee {
            threshold_pct: 0.2,
            metric_tag: "request_latency".into(),
            stat: "p98".into(),
            swept_param: "concurrency".into(),
        };
        assert!(
            derive(&bad_stat, &zero)
                .unwrap_err()
                .message
                .contains("p98")
        );
    }

    fn filters() -> Vec<SlaFilter> {
        vec![
            SlaFilter::new("time_to_first_token", "p95", Op::Lt, 100.0),
            SlaFilter::new("request_error_rate", "avg", Op::Le, 1.0),
        ]
    }

    /// Worked by hand: 1 and 2 pass; 4 breaks TTFT (p95 read from the one-trial block); 8 runs
    /// twice, one row passes and the other lacks the error rate (observed null), so 8 fails
    /// with that row's breach; 16 passes again, so the boundary is not monotonic.
    #[test]
    fn sla_breach_worked_by_hand() {
        let m = |ttft: f64, err: Option<f64>| {
            let mut m = json!({"time_to_first_token": {"mean": 1.0, "p95": ttft}});
            if let Some(e) = err {
                m["request_error_rate"] = json!({"mean": e});
            }
            m
        };
        let c = |v: u64| json!({"concurrency": v});
        let doc = json!({"per_combination_metrics": [
            row(c(16), m(90.0, Some(0.0))),
            row(c(2), m(60.0, Some(0.0))),
            row(c(8), m(95.0, Some(0.5))),
            row(c(1), m(50.0, Some(0.0))),
            row(c(4), m(120.0, Some(0.0))),
            row(c(8), m(99.0, None)),
        ]});
        let got = derive(
            &Derivation::SlaBreach {
                filters: filters(),
                swept_param: "phases.profiling.concurrency".into(),
            },
            &doc,
        )
        .unwrap()
        .unwrap();
        assert_eq!(got["max_passing_concurrency"], 16);
        assert_eq!(got["first_failing_concurrency"], 4);
        assert_eq!(
            got["first_failing_breach"],
            json!({"metric_tag": "time_to_first_token", "stat": "p95", "op": "lt",
                   "threshold": 100.0, "observed": 120.0})
        );
        assert_eq!(got["monotonicity_check"], false);
        let pts = got["all_points"].as_array().unwrap();
        let xs: Vec<&Value> = pts.iter().map(|p| &p["concurrency"]).collect();
        assert_eq!(xs, [1, 2, 4, 8, 16]);
        assert_eq!(pts[3]["feasible"], false);
        assert_eq!(
            pts[3]["breaches"],
            json!([{"metric_tag": "request_error_rate", "stat": "avg", "op": "le",
                    "threshold": 1.0, "observed": null}])
        );
        assert_eq!(
            pts[0],
            json!({"concurrency": 1, "feasible": true, "breaches": []})
        );
        assert_eq!(got["filters"].as_array().unwrap().len(), 2);
        // A point whose client fell behind is not feasible, whatever its figures, and says so.
        let mut behind = row(c(2), m(60.0, Some(0.0)));
        behind["client_fell_behind"] = json!(true);
        let doc = json!({"per_combination_metrics": [row(c(1), m(50.0, Some(0.0))), behind]});
        let d = Derivation::SlaBreach {
            filters: filters(),
            swept_param: "phases.profiling.concurrency".into(),
        };
        let got = derive(&d, &doc).unwrap().unwrap();
        assert_eq!(got["max_passing_concurrency"], 1);
        assert_eq!(got["first_failing_concurrency"], 2);
        let pts = got["all_points"].as_array().unwrap();
        assert_eq!(
            pts[1],
            json!({"concurrency": 2, "feasible": false, "breaches": [],
                   "client_fell_behind": true})
        );
        // Every point within: no failing value, monotonic.
        let easy = json!({"per_combination_metrics": [row(c(1), m(50.0, Some(0.0)))]});
        let d = Derivation::SlaBreach {
            filters: filters(),
            swept_param: "phases.profiling.concurrency".into(),
        };
        let got = derive(&d, &easy).unwrap().unwrap();
        assert_eq!(got["first_failing_concurrency"], Value::Null);
        assert_eq!(got["first_failing_breach"], Value::Null);
        assert_eq!(got["monotonicity_check"], true);
    }

    /// A config file's `post_process` parameters, read as AIPerf's handlers read them: each
    /// handler's keys (numbers from numbers or their text), the defaults AIPerf's handlers
    /// have, and the errors its hook quarantines for a missing key or an unknown handler.
    #[test]
    fn a_files_parameters_make_the_handlers_derivation() {
        let params = |v: Value| v.as_object().unwrap().clone();
        let knee = Derivation::from_params(
            "degradation_knee_detect",
            &params(
                json!({"threshold_pct": "0.25", "metric_tag": "request_latency",
                           "stat": "p95", "swept_param": "phases.profiling.concurrency"}),
            ),
        );
        assert_eq!(
            knee,
            Ok(Derivation::Knee {
                threshold_pct: 0.25,
                metric_tag: "request_latency".into(),
                stat: "p95".into(),
                swept_param: "phases.profiling.concurrency".into(),
            })
        );
        let fit = |extra: Value| {
            let mut p = params(json!({"metric_tag": "time_to_first_token", "stat": "avg",
                                      "swept_param": "isl"}));
            p.extend(params(extra));
            Derivation::from_params("ttft_curve_fit", &p)
        };
        assert!(
            matches!(fit(json!({})), Ok(Derivation::CurveFit { r_squared_floor, .. })
            if r_squared_floor == R2_FLOOR)
        );
        assert!(matches!(fit(json!({"r_squared_floor": 0.5})),
            Ok(Derivation::CurveFit { r_squared_floor, .. }) if r_squared_floor == 0.5));
        let e = fit(json!({"r_squared_floor": "high"})).unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            ("ValueError", "could not convert string to float: 'high'")
        );
        let pareto = Derivation::from_params(
            "pareto_sweep_export",
            &params(json!({"x_metric": "time_to_first_token", "x_stat": "p95",
                           "y_metric": "output_token_throughput", "y_stat": "avg",
                           "isl_key": "i", "osl_key": "o", "concurrency_key": "c"})),
        );
        assert!(matches!(pareto, Ok(Derivation::ParetoExport { keys, .. })
            if keys == ["i".to_owned(), "o".to_owned(), "c".to_owned()]));
        let breach = Derivation::from_params(
            "sla_breach_knee",
            &params(
                json!({"swept_param": "phases.profiling.concurrency", "sla_filters": [
                {"metric_tag": "time_to_first_token", "op": "lt", "threshold": 100}]}),
            ),
        );
        assert!(matches!(breach, Ok(Derivation::SlaBreach { filters, .. })
            if filters.len() == 1 && filters[0].stat == "p95"));
        let e = Derivation::from_params("itl_surface_fit", &params(json!({"metric_tag": "x"})))
            .unwrap_err();
        assert_eq!((e.kind, e.message.as_str()), ("KeyError", "'stat'"));
        let e = Derivation::from_params(
            "degradation_knee_detect",
            &params(
                json!({"threshold_pct": 0.2, "metric_tag": "x", "stat": "p42",
                           "swept_param": "c"}),
            ),
        )
        .unwrap_err();
        assert!(e.message.contains("is not a recognized statistic"), "{e}");
        let e = Derivation::from_params("knee", &Map::new()).unwrap_err();
        assert_eq!(e.kind, "TypeNotFoundError");
        assert!(e.message.starts_with(
            "Type 'knee' not found for category 'search_recipe_post_process'.\nAvailable types:\n  • degradation_knee_detect"
        ), "{e}");
    }

    /// A refusing handler writes AIPerf's error sidecar, not its file.
    #[test]
    fn a_refusal_writes_the_error_sidecar() {
        let tmp = tempfile::tempdir().unwrap();
        let p = write_derived(
            tmp.path(),
            "degradation_knee_detect",
            "degradation_knee.json",
            &Ok(ramp_knee()),
            &json!({"per_combination_metrics": []}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(p, tmp.path().join("post_process_errors.json"));
        assert!(!tmp.path().join("degradation_knee.json").exists());
        let v: Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        assert_eq!(v["handler"], "degradation_knee_detect");
        assert_eq!(v["output_filename"], "degradation_knee.json");
        assert_eq!(v["type"], "ValueError");
    }

    fn decode_surface() -> Derivation {
        Derivation::ItlSurface {
            metric_tag: "inter_token_latency".into(),
            stat: "avg".into(),
            concurrency_param: "phases.profiling.concurrency".into(),
            osl_param: "datasets.main.prompts.osl".into(),
        }
    }

    fn pareto_axes() -> Derivation {
        Derivation::ParetoExport {
            x: ("time_to_first_token".into(), "p95".into()),
            y: ("output_token_throughput".into(), "avg".into()),
            keys: ["isl".into(), "osl".into(), "concurrency".into()],
        }
    }

    /// AIPerf's own `decode-itl-curve` run (2 concurrencies × 2 OSLs): from its sweep
    /// aggregate, the `decode_itl_surface.json` it wrote.
    #[test]
    fn itl_surface_of_aiperfs_sweep_is_aiperfs_file() {
        let dir = "aiperf-search/decode-itl-curve/sweep_aggregate";
        let doc = fixture(&format!("{dir}/profile_export_aiperf_sweep.json"));
        let want = fixture(&format!("{dir}/decode_itl_surface.json"));
        let got = derive(&decode_surface(), &doc).unwrap().unwrap();
        assert_eq!(got, want);
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    /// AIPerf's own `pareto-sweep` aggregate, and the file AIPerf's `ParetoSweepExport` handler
    /// makes of it (AIPerf 0.13 itself never runs the handler for this recipe:
    /// tests/data/aiperf-search/README.md).
    #[test]
    fn pareto_of_aiperfs_sweep_is_aiperfs_handlers_file() {
        let dir = "aiperf-search/pareto-sweep/sweep_aggregate";
        let doc = fixture(&format!("{dir}/profile_export_aiperf_sweep.json"));
        let want = fixture(&format!("{dir}/pareto_sweep.json"));
        let got = derive(&pareto_axes(), &doc).unwrap().unwrap();
        assert_eq!(
            serde_json::to_string(&got).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
    }

    /// A missing cell stays null, a negative ITL is dropped, and of two rows of one cell the
    /// later wins (worked by hand).
    #[test]
    fn itl_surface_worked_by_hand() {
        let r = |c: u64, o: u64, v: f64| {
            row(
                json!({"concurrency": c, "osl": o}),
                json!({"inter_token_latency": {"mean": v}}),
            )
        };
        let doc = json!({"per_combination_metrics": [
            r(4, 64, 3.0), r(1, 64, 1.0), r(1, 256, 2.0), r(4, 64, 5.0), r(2, 256, -1.0),
            row(json!({"concurrency": 8}), json!({"inter_token_latency": {"mean": 9.0}})),
        ]});
        let got = derive(&decode_surface(), &doc).unwrap().unwrap();
        assert_eq!(got["surface"]["concurrency_axis"], json!([1.0, 4.0]));
        assert_eq!(got["surface"]["osl_axis"], json!([64.0, 256.0]));
        assert_eq!(got["surface"]["itl_grid"], json!([[1.0, 2.0], [5.0, null]]));
        assert_eq!(got["raw_points"].as_array().unwrap().len(), 4);
        assert_eq!(got["surface_fit_failed"], json!(false));
        // One usable row: the failure marker, not a surface.
        let one = json!({"per_combination_metrics": [r(1, 64, 1.0), r(2, 64, -3.0)]});
        let got = derive(&decode_surface(), &one).unwrap().unwrap();
        assert_eq!(got["surface_fit_failed"], json!(true));
        assert_eq!(got["surface"]["itl_grid"], json!([]));
        assert!(got["error_reason"].as_str().unwrap().contains("kept 1"));
        // No row with both axes: the handler's refusal.
        let none = json!({"per_combination_metrics": [row(json!({"concurrency": 1}), json!({}))]});
        assert_eq!(
            derive(&decode_surface(), &none).unwrap_err().kind,
            "ValueError"
        );
    }

    /// Dominance worked by hand: (x 10, y 50) and (x 20, y 90) are on the frontier; (x 20,
    /// y 40) is beaten by the first on both axes, (x 10, y 30) by the first on y alone; a cell
    /// lacking the OSL is left out.
    #[test]
    fn pareto_dominance_worked_by_hand() {
        let cell = |c: u64, x: f64, y: f64| {
            row(
                json!({"isl": 128, "osl": 64, "concurrency": c}),
                json!({"time_to_first_token_p95": {"mean": x},
                       "output_token_throughput": {"mean": y}}),
            )
        };
        let doc = json!({"per_combination_metrics": [
            cell(1, 10.0, 50.0), cell(2, 20.0, 40.0), cell(4, 20.0, 90.0), cell(8, 10.0, 30.0),
            row(json!({"isl": 1, "concurrency": 1}),
                json!({"time_to_first_token": {"mean": 1.0},
                       "output_token_throughput": {"mean": 1000.0}})),
        ]});
        let got = derive(&pareto_axes(), &doc).unwrap().unwrap();
        let flags: Vec<(i64, bool)> = got["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["concurrency"].as_i64().unwrap(),
                    c["pareto_optimal"] == json!(true),
                )
            })
            .collect();
        assert_eq!(flags, [(1, true), (2, false), (4, true), (8, false)]);
        assert_eq!(got["cells"][0]["x"], json!(10.0));
        let empty = json!({"per_combination_metrics": []});
        assert_eq!(
            derive(&pareto_axes(), &empty).unwrap_err().kind,
            "ValueError"
        );
        let null_mean = json!({"per_combination_metrics": [row(
            json!({"isl": 1, "osl": 1, "concurrency": 1}),
            json!({"time_to_first_token": {"mean": null}, "output_token_throughput": {"mean": 1.0}}),
        )]});
        assert_eq!(
            derive(&pareto_axes(), &null_mean).unwrap_err().kind,
            "TypeError"
        );
    }
}
