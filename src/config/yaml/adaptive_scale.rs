//! A phase's `adaptive_scale` (AIPerf 0.13's adaptive-scale timing mode) read as AIPerf reads
//! it: the nested block lowered onto the twelve flat phase fields (block values win over flat
//! ones; among a target's aliases the last of AIPerf's table wins, then `control:`, then
//! `strategy:`), each field checked, and, when the mode is on, the phase checked against it in
//! AIPerf's order and with its messages. Keys arrive snake_case (`assessmentPeriod` is
//! `assessment_period` here).

use serde_json::{Map, Value};

use super::YamlError;
use crate::plan::AdaptiveSpec;
use ringperf_metrics::adaptive::settings::{
    ControlVariable, Op, STATS, SlaFilter, Stat, StepPolicy,
};

type R<T> = Result<T, YamlError>;

/// The flat phase fields (and `sla`), in AIPerf's order.
pub const FLAT_KEYS: &[&str] = &[
    "adaptive_scale",
    "adaptive_sustain_duration",
    "adaptive_assessment_period",
    "adaptive_min_completed_requests",
    "adaptive_control_variable",
    "adaptive_control_min",
    "adaptive_control_max",
    "adaptive_scale_strategy_type",
    "adaptive_scale_step_policy",
    "adaptive_scale_base_step",
    "adaptive_scale_max_step_multiplier",
    "adaptive_scale_step_percent",
    "sla",
];

fn schema(path: &str, why: &str) -> YamlError {
    YamlError::Schema(format!("{path}: {why}"))
}

/// A `Value error` on the phase, as AIPerf's model validator words it.
fn value_error(at: &str, why: &str) -> YamlError {
    schema(at, &format!("Value error, {why}"))
}

/// AIPerf's lenient boolean (`true/yes/on/1`, `false/no/off/0`, any case, trimmed).
fn lenient_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A float field (a number, or text that reads as one).
fn float(v: &Value, path: &str) -> R<f64> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| schema(path, "Input should be a valid number")),
        Value::String(s) => s.trim().parse::<f64>().map_err(|_| {
            schema(
                path,
                "Input should be a valid number, unable to parse string as a number",
            )
        }),
        _ => Err(schema(path, "Input should be a valid number")),
    }
}

/// An integer field.
fn int(v: &Value, path: &str) -> R<i64> {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(i),
            (None, Some(f)) if f.fract() == 0.0 => Ok(f as i64),
            _ => Err(schema(
                path,
                "Input should be a valid integer, got a number with a fractional part",
            )),
        },
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| {
            schema(
                path,
                "Input should be a valid integer, unable to parse string as an integer",
            )
        }),
        _ => Err(schema(path, "Input should be a valid integer")),
    }
}

fn text<'a>(v: &'a Value, path: &str) -> R<&'a str> {
    v.as_str()
        .ok_or_else(|| schema(path, "Input should be a valid string"))
}

/// YAML's `.inf`, `-.inf`, `.nan` (and Python's spellings of them), which reach here as text.
fn non_finite(s: &str) -> Option<f64> {
    match s.trim().to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | ".inf" | "+.inf" => Some(f64::INFINITY),
        "-inf" | "-infinity" | "-.inf" => Some(f64::NEG_INFINITY),
        "nan" | ".nan" => Some(f64::NAN),
        _ => None,
    }
}

/// The block lowered onto the flat fields: `(flat field, value)` in the order they apply.
fn lower(block: &Map<String, Value>, at: &str) -> R<Vec<(&'static str, Value)>> {
    const TOP: &[&str] = &[
        "enabled",
        "window",
        "assessment_period",
        "sustain_duration",
        "min_completed_requests",
        "control_variable",
        "control_min",
        "min_concurrency",
        "control_max",
        "max_concurrency",
        "control",
        "strategy",
        "sla",
    ];
    let mut unknown: Vec<&str> = (block.keys())
        .map(String::as_str)
        .filter(|k| !TOP.contains(k))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return Err(value_error(
            at,
            &format!(
                "adaptive_scale contains unsupported field(s): {}",
                unknown.join(", ")
            ),
        ));
    }
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    let enabled = match block.get("enabled") {
        None | Some(Value::Null) => true,
        Some(v) => lenient_bool(v)
            .ok_or_else(|| value_error(at, "adaptive_scale.enabled must be a boolean"))?,
    };
    out.push(("adaptive_scale", Value::Bool(enabled)));
    // Among a target's aliases the later in this table wins (AIPerf's order, not the file's).
    for (key, field) in [
        ("window", "adaptive_assessment_period"),
        ("assessment_period", "adaptive_assessment_period"),
        ("sustain_duration", "adaptive_sustain_duration"),
        ("min_completed_requests", "adaptive_min_completed_requests"),
        ("control_variable", "adaptive_control_variable"),
        ("control_min", "adaptive_control_min"),
        ("min_concurrency", "adaptive_control_min"),
        ("control_max", "adaptive_control_max"),
        ("max_concurrency", "adaptive_control_max"),
    ] {
        if let Some(v) = block.get(key) {
            out.push((field, v.clone()));
        }
    }
    if let Some(c) = block.get("control") {
        let c = c
            .as_object()
            .ok_or_else(|| value_error(at, "adaptive_scale.control must be a mapping"))?;
        let mut bad: Vec<&str> = (c.keys())
            .map(String::as_str)
            .filter(|k| !["variable", "min", "max"].contains(k))
            .collect();
        if !bad.is_empty() {
            bad.sort_unstable();
            return Err(value_error(
                at,
                &format!(
                    "adaptive_scale.control contains unsupported field(s): {}",
                    bad.join(", ")
                ),
            ));
        }
        for (key, field) in [
            ("variable", "adaptive_control_variable"),
            ("min", "adaptive_control_min"),
            ("max", "adaptive_control_max"),
        ] {
            if let Some(v) = c.get(key) {
                out.push((field, v.clone()));
            }
        }
    }
    if let Some(s) = block.get("strategy") {
        let s = s
            .as_object()
            .ok_or_else(|| value_error(at, "adaptive_scale.strategy must be a mapping"))?;
        const KEYS: &[(&str, &str)] = &[
            ("type", "adaptive_scale_strategy_type"),
            ("step_policy", "adaptive_scale_step_policy"),
            ("base_step", "adaptive_scale_base_step"),
            ("max_step_multiplier", "adaptive_scale_max_step_multiplier"),
            ("step_percent", "adaptive_scale_step_percent"),
        ];
        let mut bad: Vec<&str> = (s.keys())
            .map(String::as_str)
            .filter(|k| !KEYS.iter().any(|(n, _)| n == k))
            .collect();
        if !bad.is_empty() {
            bad.sort_unstable();
            return Err(value_error(
                at,
                &format!(
                    "adaptive_scale.strategy contains unsupported field(s): {}",
                    bad.join(", ")
                ),
            ));
        }
        for (key, field) in KEYS {
            if let Some(v) = s.get(*key) {
                out.push((field, v.clone()));
            }
        }
    }
    if let Some(v) = block.get("sla") {
        out.push(("sla", v.clone()));
    }
    Ok(out)
}

/// The SLA filters of `v`: a list of filters, or the compact `{metric: {stat: {op: threshold}}}`.
fn filters(v: &Value, at: &str) -> R<Vec<SlaFilter>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(list) => (list.iter().enumerate())
            .map(|(i, f)| list_filter(f, &format!("{at}.sla.{i}")))
            .collect(),
        Value::Object(m) => {
            let mut out = Vec::new();
            for (tag, stats) in m {
                let stats = stats.as_object().ok_or_else(|| {
                    value_error(
                        at,
                        "adaptive_scale.sla entries must map metric tags to stats",
                    )
                })?;
                for (stat, ops) in stats {
                    let ops = ops.as_object().ok_or_else(|| {
                        value_error(
                            at,
                            "adaptive_scale.sla stats must map operators to thresholds",
                        )
                    })?;
                    for (op, threshold) in ops {
                        out.push(filter(
                            &Value::String(tag.clone()),
                            Some(&Value::String(stat.clone())),
                            Some(&Value::String(op.clone())),
                            Some(threshold),
                            at,
                        )?);
                    }
                }
            }
            Ok(out)
        }
        _ => Err(value_error(
            at,
            "adaptive_scale.sla must be a mapping or list of filters",
        )),
    }
}

fn list_filter(v: &Value, path: &str) -> R<SlaFilter> {
    let m = v
        .as_object()
        .ok_or_else(|| schema(path, "Input should be a valid dictionary"))?;
    if let Some(k) = m
        .keys()
        .find(|k| !["metric_tag", "stat", "op", "threshold"].contains(&k.as_str()))
    {
        return Err(schema(
            &format!("{path}.{k}"),
            "Extra inputs are not permitted",
        ));
    }
    let Some(tag) = m.get("metric_tag") else {
        return Err(schema(&format!("{path}.metric_tag"), "Field required"));
    };
    filter(tag, m.get("stat"), m.get("op"), m.get("threshold"), path)
}

/// One filter; errors at `path.<field>`.
fn filter(
    tag: &Value,
    stat: Option<&Value>,
    op: Option<&Value>,
    threshold: Option<&Value>,
    path: &str,
) -> R<SlaFilter> {
    let at = |f: &str| format!("{path}.{f}");
    let tag = text(tag, &at("metric_tag"))?;
    if tag.trim().is_empty() {
        return Err(value_error(
            &at("metric_tag"),
            "SLAFilter.metric_tag must be a non-empty, non-whitespace string matching a key in \
             RunResult.summary_metrics.",
        ));
    }
    let stat = match stat {
        None => None,
        Some(s) => {
            let all: Vec<String> = STATS.iter().map(|s| format!("'{}'", s.name())).collect();
            let msg = format!(
                "Input should be {} or {}",
                all[..all.len() - 1].join(", "),
                all[all.len() - 1]
            );
            Some(
                s.as_str()
                    .and_then(Stat::of)
                    .ok_or_else(|| schema(&at("stat"), &msg))?,
            )
        }
    };
    let Some(op) = op else {
        return Err(schema(&at("op"), "Field required"));
    };
    let op = op
        .as_str()
        .and_then(Op::parse)
        .ok_or_else(|| schema(&at("op"), "Input should be 'lt', 'le', 'gt' or 'ge'"))?;
    let Some(threshold) = threshold else {
        return Err(schema(&at("threshold"), "Field required"));
    };
    let threshold = match threshold.as_str().and_then(non_finite) {
        Some(x) => x,
        None => float(threshold, &at("threshold"))?,
    };
    if !threshold.is_finite() {
        return Err(value_error(
            &at("threshold"),
            &format!(
                "SLAFilter.threshold must be finite (NaN/inf comparisons would silently fail \
                 every trial), got {}.",
                ringperf_metrics::adaptive::settings::py_float(threshold)
            ),
        ));
    }
    Ok(SlaFilter {
        metric_tag: tag.to_owned(),
        stat,
        op,
        threshold,
    })
}

/// The adaptive fields of the phase `m` (of type `ty`, at `at`: `benchmark.phases.N.<type>`),
/// checked; `None` when it has none.
///
/// # Errors
/// AIPerf's field and phase messages.
pub fn read(m: &Map<String, Value>, at: &str, ty: &str) -> R<Option<AdaptiveSpec>> {
    let timing_mode = m.get("timing_mode").and_then(Value::as_str) == Some("adaptive_scale");
    if !FLAT_KEYS.iter().any(|k| m.contains_key(*k)) && !timing_mode {
        return Ok(None);
    }
    // The flat fields, then the block's values over them.
    let mut fields: Vec<(&'static str, Value)> = FLAT_KEYS
        .iter()
        .filter_map(|k| m.get(*k).map(|v| (*k, v.clone())))
        .collect();
    if let Some(Value::Object(block)) = m.get("adaptive_scale") {
        fields.retain(|(k, _)| *k != "adaptive_scale");
        fields.extend(lower(block, at)?);
    }
    let last = |k: &str| fields.iter().rev().find(|(f, _)| *f == k).map(|(_, v)| v);
    let field = |k: &str| format!("{at}.{k}");
    let mut spec = AdaptiveSpec {
        timing_mode,
        ..AdaptiveSpec::default()
    };
    if let Some(v) = last("adaptive_scale") {
        spec.enabled = match v {
            Value::Null => {
                return Err(schema(
                    &field("adaptive_scale"),
                    "Input should be a valid boolean",
                ));
            }
            v => lenient_bool(v)
                .ok_or_else(|| value_error(at, "adaptive_scale.enabled must be a boolean"))?,
        };
    }
    let positive = |k: &str, v: &Value| -> R<f64> {
        let x = float(v, &field(k))?;
        if x > 0.0 {
            Ok(x)
        } else {
            Err(schema(&field(k), "Input should be greater than 0"))
        }
    };
    let at_least_one = |k: &str, v: &Value| -> R<u64> {
        let x = int(v, &field(k))?;
        u64::try_from(x)
            .ok()
            .filter(|x| *x >= 1)
            .ok_or_else(|| schema(&field(k), "Input should be greater than or equal to 1"))
    };
    let nullable = |k: &str| last(k).filter(|v| !v.is_null());
    if let Some(v) = nullable("adaptive_sustain_duration") {
        spec.sustain_duration = Some(positive("adaptive_sustain_duration", v)?);
    }
    if let Some(v) = nullable("adaptive_assessment_period") {
        let x = float(v, &field("adaptive_assessment_period"))?;
        if x < 1.0 {
            return Err(schema(
                &field("adaptive_assessment_period"),
                "Input should be greater than or equal to 1",
            ));
        }
        spec.assessment_period = Some(x);
    }
    if let Some(v) = last("adaptive_min_completed_requests") {
        spec.min_completed_requests = Some(at_least_one("adaptive_min_completed_requests", v)?);
    }
    if let Some(v) = last("adaptive_control_variable") {
        spec.control_variable = Some(v.as_str().and_then(ControlVariable::of).ok_or_else(|| {
            schema(
                &field("adaptive_control_variable"),
                "Input should be 'concurrency', 'prefill_concurrency', 'request_rate' or 'users'",
            )
        })?);
    }
    if let Some(v) = last("adaptive_control_min") {
        spec.control_min = Some(positive("adaptive_control_min", v)?);
    }
    if let Some(v) = nullable("adaptive_control_max") {
        spec.control_max = Some(positive("adaptive_control_max", v)?);
    }
    if let Some(v) = last("adaptive_scale_strategy_type") {
        if v.as_str() != Some("ramp_until_fail") {
            return Err(schema(
                &field("adaptive_scale_strategy_type"),
                "Input should be 'ramp_until_fail'",
            ));
        }
        spec.strategy_type = true;
    }
    if let Some(v) = last("adaptive_scale_step_policy") {
        spec.step_policy = Some(v.as_str().and_then(StepPolicy::of).ok_or_else(|| {
            schema(
                &field("adaptive_scale_step_policy"),
                "Input should be 'sla_margin' or 'fixed_percent_step'",
            )
        })?);
    }
    if let Some(v) = last("adaptive_scale_base_step") {
        spec.base_step = Some(at_least_one("adaptive_scale_base_step", v)?);
    }
    if let Some(v) = last("adaptive_scale_max_step_multiplier") {
        spec.max_step_multiplier = Some(at_least_one("adaptive_scale_max_step_multiplier", v)?);
    }
    if let Some(v) = last("adaptive_scale_step_percent") {
        spec.step_percent = Some(positive("adaptive_scale_step_percent", v)?);
    }
    if let Some(v) = last("sla") {
        spec.sla = filters(v, at)?;
    }
    spec.inferred_max = check(&spec, m, at, ty)?;
    Ok(Some(spec))
}

/// The phase checked against its adaptive settings in AIPerf's order (only when the mode is on);
/// the maximum the phase implies.
fn check(spec: &AdaptiveSpec, m: &Map<String, Value>, at: &str, ty: &str) -> R<Option<f64>> {
    let variable = spec
        .control_variable
        .unwrap_or(ControlVariable::Concurrency);
    let number = |k: &str| m.get(k).and_then(Value::as_f64);
    let inferred = match variable {
        ControlVariable::Concurrency => {
            number("concurrency").or((ty == "concurrency").then_some(1.0))
        }
        ControlVariable::PrefillConcurrency => number("prefill_concurrency"),
        ControlVariable::RequestRate => number("rate"),
        ControlVariable::Users => number("users"),
    };
    if !spec.enabled {
        return Ok(inferred);
    }
    let fail = |why: &str| Err(value_error(at, why));
    if !m.contains_key("duration") {
        return fail("adaptive_scale requires duration");
    }
    if spec.sustain_duration.is_none() {
        return fail("adaptive_scale requires adaptive_sustain_duration");
    }
    if spec.sla.is_empty() {
        return fail("adaptive_scale requires sla filters");
    }
    if ty == "fixed_schedule" {
        return fail("adaptive_scale cannot be combined with fixed_schedule phases");
    }
    let has = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
    match variable {
        ControlVariable::Concurrency if has("concurrency_ramp") => {
            return fail(
                "adaptive_scale cannot be combined with concurrency_ramp; \
                 control.variable=concurrency already adjusts concurrency",
            );
        }
        ControlVariable::PrefillConcurrency if has("prefill_ramp") => {
            return fail(
                "adaptive_scale control.variable=prefill_concurrency cannot be combined with \
                 prefill_ramp",
            );
        }
        ControlVariable::PrefillConcurrency if !has("concurrency") => {
            return fail("adaptive_scale prefill_concurrency requires concurrency");
        }
        ControlVariable::RequestRate if has("rate_ramp") => {
            return fail(
                "adaptive_scale control.variable=request_rate cannot be combined with rate_ramp",
            );
        }
        ControlVariable::RequestRate if has("rate_series") => {
            return fail(
                "adaptive_scale control.variable=request_rate cannot be combined with \
                 rate_series",
            );
        }
        ControlVariable::RequestRate if !has("rate") => {
            return fail("adaptive_scale request_rate requires a rate-controlled phase");
        }
        ControlVariable::Users if ty != "user_centric" => {
            return fail("adaptive_scale users is only valid on user_centric phases");
        }
        _ => {}
    }
    let min = spec.control_min.unwrap_or(1.0);
    let Some(max) = spec.control_max.or(inferred) else {
        return fail("adaptive_scale control.max could not be inferred");
    };
    if max <= min {
        return fail("adaptive_scale control.max must be > control.min");
    }
    if variable.integer() {
        let name = variable.name();
        if min.fract() != 0.0 {
            return fail(&format!(
                "adaptive_scale control.min must be an integer for {name}"
            ));
        }
        if max.fract() != 0.0 {
            return fail(&format!(
                "adaptive_scale control.max must be an integer for {name}"
            ));
        }
    }
    if let Some(c) = number("concurrency") {
        if variable == ControlVariable::Concurrency && min > c {
            return fail("adaptive_scale control.min must be <= concurrency");
        }
        if variable == ControlVariable::PrefillConcurrency && max > c {
            return fail("adaptive_scale prefill_concurrency control.max must be <= concurrency");
        }
    }
    Ok(inferred)
}

/// A top-level `adaptive_search` sweep beside adaptive phases (AIPerf refuses the two
/// together), named by the phases'.
pub fn search_conflict(names: &[String]) -> YamlError {
    let list: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    YamlError::Schema(format!(
        "adaptive_search sweeps cannot be combined with adaptive_scale phases: [{}]. Use either \
         the outer adaptive_search sweep or per-phase adaptive_scale, not both.",
        list.join(", ")
    ))
}
