//! `sweep: {type: adaptive_search, ...}` as the `--search-*` flags of the same search
//! (AIPerf 0.13's `AdaptiveSearchSweep`, which its own `--search-*` flags build; see
//! docs/config-files.md). Each key maps to one flag; a key whose value no flag can express
//! (a `log-uniform` prior, a second objective, the smooth-isotonic replicate knobs, …) is
//! refused by name rather than dropped.

use serde_json::{Map, Value};

use super::YamlError;

type R<T> = Result<T, YamlError>;
/// Flags with their values, in order.
type Flags = Vec<(String, Vec<String>)>;

/// The keys of AIPerf's `AdaptiveSearchSweep` that ringperf does not run unless written at
/// AIPerf's default (given as JSON).
const AIPERF_ONLY: &[(&str, &str)] = &[
    ("outcome_constraints", "[]"),
    ("sla_replicates", "0"),
    ("sla_precision", "\"normal\""),
    ("sla_warmup_seconds", "null"),
];

fn schema(path: &str, why: &str) -> YamlError {
    YamlError::Schema(format!("{path}: {why}"))
}

fn word(v: &Value, path: &str) -> R<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(schema(path, "Input should be a string or a number")),
    }
}

fn list<'a>(v: &'a Value, path: &str) -> R<&'a Vec<Value>> {
    v.as_array()
        .ok_or_else(|| schema(path, "Input should be a valid list"))
}

fn map<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| schema(path, "Input should be a valid dictionary"))
}

/// Refuses a key of `m` outside `known` (AIPerf's `extra=forbid`).
fn only(m: &Map<String, Value>, path: &str, known: &[&str]) -> R<()> {
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(super::extra(&format!("{path}.{k}"))),
        None => Ok(()),
    }
}

fn need<'a>(m: &'a Map<String, Value>, key: &str, path: &str) -> R<&'a Value> {
    m.get(key)
        .ok_or_else(|| schema(&format!("{path}.{key}"), "Field required"))
}

/// One `search_space` entry as `PATH:LO,HI:KIND`.
fn dimension(v: &Value, path: &str) -> R<String> {
    let m = map(v, path)?;
    only(m, path, &["path", "lo", "hi", "kind", "prior"])?;
    let p = word(need(m, "path", path)?, &format!("{path}.path"))?;
    let lo = word(need(m, "lo", path)?, &format!("{path}.lo"))?;
    let hi = word(need(m, "hi", path)?, &format!("{path}.hi"))?;
    let kind = match m.get("kind") {
        None => "real".to_owned(),
        Some(k) => word(k, &format!("{path}.kind"))?,
    };
    // A `prior` was taken out for the typed plan before the translation.
    Ok(format!("{p}:{lo},{hi}:{kind}"))
}

/// One `sla_filters` entry as `TAG:STAT:OP:THRESHOLD` (`stat` defaults to p95, as AIPerf's).
pub(super) fn sla_filter(v: &Value, path: &str) -> R<String> {
    let m = map(v, path)?;
    only(m, path, &["metric_tag", "stat", "op", "threshold"])?;
    let tag = word(need(m, "metric_tag", path)?, &format!("{path}.metric_tag"))?;
    let stat = match m.get("stat") {
        None => "p95".to_owned(),
        Some(s) => word(s, &format!("{path}.stat"))?,
    };
    const STATS: [&str; 12] = [
        "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max",
    ];
    if !STATS.contains(&stat.as_str()) {
        return Err(schema(
            &format!("{path}.stat"),
            "Input should be 'avg', 'p1', 'p5', 'p10', 'p25', 'p50', 'p75', 'p90', 'p95', \
             'p99', 'min' or 'max'",
        ));
    }
    let op = word(need(m, "op", path)?, &format!("{path}.op"))?;
    if !["lt", "le", "gt", "ge"].contains(&op.as_str()) {
        return Err(schema(
            &format!("{path}.op"),
            "Input should be 'lt', 'le', 'gt' or 'ge'",
        ));
    }
    let threshold = need(m, "threshold", path)?.as_f64().ok_or_else(|| {
        schema(
            &format!("{path}.threshold"),
            "Input should be a valid number",
        )
    })?;
    Ok(format!("{tag}:{stat}:{op}:{threshold}"))
}

/// The one objective as `--search-metric/-stat/-direction`.
fn objective(v: &Value, path: &str, a: &mut Flags) -> R<()> {
    let objectives = list(v, path)?;
    let [one] = objectives.as_slice() else {
        if objectives.is_empty() {
            return Err(schema(
                path,
                "List should have at least 1 item after validation",
            ));
        }
        return Err(YamlError::Unsupported(format!(
            "{path}: {} objectives (multi-objective search is BoTorch's Pareto BO, Python only)",
            objectives.len()
        )));
    };
    let path = format!("{path}[0]");
    let m = map(one, &path)?;
    only(m, &path, &["metric", "stat", "direction", "threshold"])?;
    let metric = word(need(m, "metric", &path)?, &format!("{path}.metric"))?;
    let direction = word(need(m, "direction", &path)?, &format!("{path}.direction"))?;
    a.push(("--search-metric".into(), vec![metric]));
    if let Some(stat) = m.get("stat") {
        let stat = word(stat, &format!("{path}.stat"))?;
        a.push(("--search-stat".into(), vec![stat]));
    }
    a.push(("--search-direction".into(), vec![direction.to_lowercase()]));
    // `threshold` is a Pareto reference point, ignored by a single objective (AIPerf's rule).
    Ok(())
}

/// The tiers of `sla_tiers` as `--search-sla-tier LABEL:FILTER[,FILTER...]`.
fn tiers(v: &Value, path: &str, a: &mut Flags) -> R<()> {
    for (i, t) in list(v, path)?.iter().enumerate() {
        let tpath = format!("{path}[{i}]");
        let m = map(t, &tpath)?;
        only(m, &tpath, &["label", "filters", "ordering_rank"])?;
        let label = word(need(m, "label", &tpath)?, &format!("{tpath}.label"))?;
        let fpath = format!("{tpath}.filters");
        let filters = list(need(m, "filters", &tpath)?, &fpath)?
            .iter()
            .enumerate()
            .map(|(j, f)| sla_filter(f, &format!("{fpath}[{j}]")))
            .collect::<R<Vec<_>>>()?;
        a.push((
            "--search-sla-tier".into(),
            vec![format!("{label}:{}", filters.join(","))],
        ));
    }
    Ok(())
}

/// `sweep:` of `type: adaptive_search` as the search flags, in the block's order.
pub fn translate(m: &Map<String, Value>) -> R<Flags> {
    let mut flags = Flags::new();
    let a = &mut flags;
    for key in ["search_space", "objectives", "max_iterations"] {
        need(m, key, "sweep")?;
    }
    for (k, v) in m {
        let path = format!("sweep.{k}");
        let flag = |f: &str, a: &mut Flags| -> R<()> {
            a.push((f.into(), vec![word(v, &path)?]));
            Ok(())
        };
        match k.as_str() {
            "type" => {}
            "search_space" => {
                for (i, d) in list(v, &path)?.iter().enumerate() {
                    let dim = dimension(d, &format!("{path}[{i}]"))?;
                    a.push(("--search-space".into(), vec![dim]));
                }
            }
            "objectives" => objective(v, &path, a)?,
            "max_iterations" => flag("--search-max-iterations", a)?,
            "n_initial_points" => flag("--search-initial-points", a)?,
            "random_seed" if v.is_null() => {}
            "random_seed" => flag("--search-random-seed", a)?,
            "planner" => flag("--search-planner", a)?,
            "optuna_sampler" => flag("--optuna-sampler", a)?,
            "optuna_acquisition" if v.is_null() => {}
            "optuna_acquisition" => flag("--optuna-acquisition", a)?,
            "optuna_terminator" => flag("--optuna-terminator", a)?,
            "objective_pooling" => flag("--search-percentile-pooling", a)?,
            "constraint_mode" => flag("--bo-constraint-mode", a)?,
            "cooldown_seconds" => flag("--parameter-sweep-cooldown-seconds", a)?,
            "sla_filters" => {
                for (i, f) in list(v, &path)?.iter().enumerate() {
                    let filter = sla_filter(f, &format!("{path}[{i}]"))?;
                    a.push(("--search-sla".into(), vec![filter]));
                }
            }
            "sla_tiers" => tiers(v, &path, a)?,
            other => match AIPERF_ONLY.iter().find(|(name, _)| *name == other) {
                Some((_, default))
                    if serde_json::from_str::<Value>(default).is_ok_and(|d| d == *v) => {}
                Some(_) => return Err(YamlError::Unsupported(path)),
                None => return Err(super::extra(&path)),
            },
        }
    }
    Ok(flags)
}
