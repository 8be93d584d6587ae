//! AIPerf 0.13 YAML config files (`profile --config/-f FILE`, `ringperf config …`).
//!
//! A file is read in AIPerf's order: YAML (duplicate keys refused), `${VAR}` / `${VAR:default}`
//! substitution, the Jinja2 subset of [`render`], camelCase keys to snake_case, the flat
//! (pre-`benchmark:`) shape and the shorthands (`model`, `dataset`, a flat `phases`, `warmup` /
//! `profiling`) to the envelope shape. The result is then translated into the `profile` flags
//! that mean the same run ([`argv`]), so a file and the equivalent command line go through one
//! code path and echo the same `input_config`. docs/config-files.md is the user's view.

mod adaptive;
mod adaptive_scale;
pub mod argv;
pub mod cmd;
mod emit;
pub(crate) mod jinja;
pub mod plot;
mod render;
pub mod scenarios;
pub mod templates;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

pub use argv::{FileArgs, FileValue, translate};

/// Why a config file was refused. `Display` is AIPerf's message text (without its
/// `Error: ` prefix and `File:` line, which the commands add).
#[derive(Debug, Clone, PartialEq)]
pub enum YamlError {
    /// The file does not exist, is not a file, or cannot be read.
    Read(String),
    /// Not YAML, a duplicate key, empty, not a mapping, or a non-string key.
    Parse(String),
    /// `${VAR}` without a default and `VAR` unset.
    MissingEnv(String),
    /// A Jinja2 construct outside the supported subset, or an undefined variable.
    Template(String),
    /// A key the schema does not have (AIPerf: `Extra inputs are not permitted`) or a value of
    /// the wrong kind.
    Schema(String),
    /// A valid AIPerf config that ringperf cannot run (a phase kind, a dataset type, …): why.
    Unsupported(String),
    /// A command-line flag that cannot be combined with `--config` (AIPerf's message).
    Overlay(String),
    /// A sweep whose variations are not valid configs (AIPerf's message after its prefix).
    Sweep(String),
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YamlError::Read(m) | YamlError::Parse(m) | YamlError::Overlay(m) => f.write_str(m),
            YamlError::MissingEnv(v) => write!(
                f,
                "Required environment variable '{v}' is not set and has no default value"
            ),
            YamlError::Template(m) => write!(f, "Template rendering failed: {m}"),
            YamlError::Schema(m) => write!(f, "Configuration validation failed: {m}"),
            YamlError::Unsupported(m) => write!(f, "not supported by ringperf: {m}"),
            YamlError::Sweep(m) => write!(f, "Sweep expansion failed during validation: {m}"),
        }
    }
}

impl std::error::Error for YamlError {}

/// A config file read and normalised: the envelope (`benchmark`, `sweep`, `multi_run`,
/// `random_seed`, …) with snake_case keys and every shorthand expanded.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub root: Map<String, Value>,
}

/// Reads and normalises `path` (see the module documentation).
pub fn load(path: &Path) -> Result<Loaded, YamlError> {
    load_with_env(path, &|k| std::env::var(k).ok())
}

/// [`load`] with `env` for `${VAR}` (a test passes its own).
pub fn load_with_env(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Loaded, YamlError> {
    if !path.exists() {
        return Err(YamlError::Read(format!(
            "Configuration file not found: {}",
            path.display()
        )));
    }
    if !path.is_file() {
        return Err(YamlError::Read(format!(
            "Path is not a file: {}",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| YamlError::Read(format!("Failed to read configuration file: {e}")))?;
    let root = load_str(&text, env)?;
    Ok(Loaded {
        path: path.to_path_buf(),
        root,
    })
}

/// [`load`] on a string, with `env` for `${VAR}` (a test passes its own).
pub fn load_str(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Map<String, Value>, YamlError> {
    let docs = YamlLoader::load_from_str(text)
        .map_err(|e| YamlError::Parse(format!("Invalid YAML syntax: {e}")))?;
    let Some(doc) = docs.into_iter().next() else {
        return Err(YamlError::Parse("Configuration file is empty".into()));
    };
    let value = to_json(doc, "", 0)?;
    let Value::Object(map) = value else {
        if value.is_null() {
            return Err(YamlError::Parse("Configuration file is empty".into()));
        }
        return Err(YamlError::Parse(format!(
            "Configuration must be a YAML mapping, got {}",
            type_name(&value)
        )));
    };
    let map = render::substitute_env(Value::Object(map), env)?;
    let map = render::render_templates(map)?;
    let Value::Object(map) = snake_keys(map) else {
        unreachable!("a mapping stays a mapping")
    };
    normalize(map)
}

pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        Value::Number(_) => "float",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// YAML → JSON. Keys must be strings (AIPerf refuses others); nesting is bounded.
pub(super) fn to_json(y: Yaml, path: &str, depth: usize) -> Result<Value, YamlError> {
    if depth > 256 {
        return Err(YamlError::Parse(
            "Configuration nested too deeply (>256 levels).".into(),
        ));
    }
    Ok(match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::from(i),
        Yaml::Real(s) => match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Value::from(f),
            _ => Value::String(s),
        },
        Yaml::String(s) => Value::String(s),
        Yaml::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &join(path, &i.to_string()), depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let Yaml::String(k) = k else {
                    let where_ = if path.is_empty() {
                        " at config root".to_string()
                    } else {
                        format!(" at '{path}'")
                    };
                    return Err(YamlError::Parse(format!(
                        "YAML key {k:?} is not a string{where_}; only string keys are allowed"
                    )));
                };
                let child = to_json(v, &join(path, &k), depth + 1)?;
                m.insert(k, child);
            }
            Value::Object(m)
        }
        Yaml::Alias(_) | Yaml::BadValue => {
            return Err(YamlError::Parse(format!("Invalid YAML value at '{path}'")));
        }
    })
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `camelCase` → `snake_case` (AIPerf accepts both spellings of every key). Keys of free-form
/// maps (headers, extra body fields, slos, sweep parameters, variables, a user file's content, a
/// dataset's inline records) are kept as written.
fn snake_keys(v: Value) -> Value {
    const VERBATIM: &[&str] = &[
        "headers",
        "extra",
        "slos",
        "parameters",
        "variables",
        "content",
        "records",
        "multi_run_plots",
        "single_run_plots",
        "group_display_names",
    ];
    match v {
        // Both `adaptive_scale` and `adaptiveScale` on a phase: AIPerf drops the camelCase one.
        Value::Object(mut m)
            if m.contains_key("adaptive_scale") && m.contains_key("adaptiveScale") =>
        {
            m.remove("adaptiveScale");
            snake_keys(Value::Object(m))
        }
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| {
                    // An adaptive-scale block names a field twice (`assessment_period` and
                    // `assessmentPeriod`): AIPerf's table puts the camelCase name last.
                    let v = match v {
                        Value::Object(b) if snake(&k) == "adaptive_scale" => {
                            Value::Object(camel_wins(b))
                        }
                        v => v,
                    };
                    let s = snake(&k);
                    let v = if VERBATIM.contains(&s.as_str()) {
                        v
                    } else {
                        snake_keys(v)
                    };
                    (s, v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(snake_keys).collect()),
        other => other,
    }
}

/// A map whose keys a camelCase and a snake_case spelling of one name share keeps the
/// camelCase one's value (and its nested `strategy` map too).
fn camel_wins(m: Map<String, Value>) -> Map<String, Value> {
    let doubled: Vec<String> = (m.keys())
        .filter(|k| snake(k) != **k && m.contains_key(&snake(k)))
        .map(|k| snake(k))
        .collect();
    m.into_iter()
        .filter(|(k, _)| !doubled.contains(k))
        .map(|(k, v)| match v {
            Value::Object(inner) if k == "strategy" => (k, Value::Object(camel_wins(inner))),
            v => (k, v),
        })
        .collect()
}

/// `rateRamp` → `rate_ramp`; snake_case passes through.
pub(crate) fn snake(k: &str) -> String {
    let mut out = String::with_capacity(k.len() + 4);
    for c in k.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The sections of `benchmark:` once every shorthand is expanded (the translator reads these).
pub(super) const BODY_FIELDS: &[&str] = &[
    "models",
    "endpoint",
    "datasets",
    "phases",
    "artifacts",
    "slos",
    "tokenizer",
    "gpu_telemetry",
    "server_metrics",
    "runtime",
    "logging",
    "otel",
    "mlflow",
    "wandb",
    "network_latency",
    "scenario",
    "unsafe_override",
    "metrics",
    "accuracy",
];

/// Sections of `benchmark:` that AIPerf reads and ringperf refuses by name.
pub(super) const BODY_AIPERF_ONLY: &[&str] = &[];

/// The singular shorthands that normalisation expands into `BODY_FIELDS`.
const BODY_SHORTHANDS: &[&str] = &["model", "dataset", "warmup", "profiling"];

/// Whether a key belongs under `benchmark:` (a flat file has it at the top: AIPerf moves it).
fn is_body_key(k: &str) -> bool {
    [BODY_FIELDS, BODY_AIPERF_ONLY, BODY_SHORTHANDS]
        .iter()
        .any(|l| l.contains(&k))
}

const TOP_KEYS: &[&str] = &[
    "schema_version",
    "random_seed",
    "variables",
    "benchmark",
    "multi_run",
    "sweep",
    "no_sweep_table",
    "plot",
];

/// The envelope shape with every shorthand expanded.
pub(super) fn normalize(mut root: Map<String, Value>) -> Result<Map<String, Value>, YamlError> {
    let mut body = match root.remove("benchmark") {
        None => Map::new(),
        Some(Value::Object(b)) => b,
        Some(other) => {
            return Err(YamlError::Schema(format!(
                "benchmark: Input should be a valid dictionary, got {}",
                type_name(&other)
            )));
        }
    };
    let flat: Vec<String> = root.keys().filter(|k| is_body_key(k)).cloned().collect();
    for k in flat {
        let v = root.remove(&k).expect("listed above");
        body.entry(k).or_insert(v);
    }
    if let Some(k) = root.keys().find(|k| !TOP_KEYS.contains(&k.as_str())) {
        let mut known = TOP_KEYS.to_vec();
        known.extend_from_slice(BODY_FIELDS);
        return Err(match unknown_key("", k, &known) {
            YamlError::Schema(m) => YamlError::Schema(m.trim_start_matches('.').to_owned()),
            other => other,
        });
    }
    // AIPerf applies a sweep's `datasets.…` path to the file as written: beside the `dataset:`
    // shorthand it makes a config with both, which it refuses.
    let swept_datasets = (root.get("sweep"))
        .and_then(|s| s.get("parameters"))
        .and_then(Value::as_object)
        .is_some_and(|p| p.keys().any(|k| snake(k).starts_with("datasets.")));
    if swept_datasets && body.contains_key("dataset") {
        return Err(YamlError::Sweep(
            "1 validation error for BenchmarkConfig\n  Value error, 'dataset' cannot be used \
             with 'datasets'. Use 'dataset' for a single dataset or 'datasets' for multiple named \
             datasets."
                .into(),
        ));
    }
    expand_shorthands(&mut body)?;
    root.insert("benchmark".into(), Value::Object(body));
    Ok(root)
}

/// AIPerf's refusal of a key its schema does not have.
pub(crate) fn extra(path: &str) -> YamlError {
    YamlError::Schema(format!("{path}: Extra inputs are not permitted"))
}

/// [`extra`] for the key `key` under `path`, naming the closest of `known` when one is near
/// enough to be a typo (`concurency` → `concurrency`).
pub(crate) fn unknown_key(path: &str, key: &str, known: &[&str]) -> YamlError {
    let near = (key.chars().count() / 3).max(1);
    let best = known
        .iter()
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, _)| *d <= near)
        .min();
    match best {
        Some((_, k)) => YamlError::Schema(format!(
            "{path}.{key}: Extra inputs are not permitted (did you mean '{k}'?)"
        )),
        None => extra(&format!("{path}.{key}")),
    }
}

/// Levenshtein distance of `a` and `b`, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

fn expand_shorthands(body: &mut Map<String, Value>) -> Result<(), YamlError> {
    if let Some(m) = body.remove("model") {
        if body.contains_key("models") {
            return Err(YamlError::Schema(
                "benchmark: give `model` or `models`, not both".into(),
            ));
        }
        body.insert("models".into(), m);
    }
    if let Some(d) = body.remove("dataset") {
        if body.contains_key("datasets") {
            return Err(YamlError::Schema(
                "benchmark: give `dataset` or `datasets`, not both".into(),
            ));
        }
        let d = match d {
            Value::Object(mut m) => {
                m.entry("name").or_insert_with(|| "default".into());
                Value::Array(vec![Value::Object(m)])
            }
            other => other,
        };
        body.insert("datasets".into(), d);
    }
    let mut phases = match body.remove("phases") {
        None => Vec::new(),
        Some(Value::Array(a)) => a,
        Some(Value::Object(m)) if m.contains_key("type") => {
            let mut m = m;
            m.entry("name").or_insert_with(|| "profiling".into());
            vec![Value::Object(m)]
        }
        // AIPerf 0.13 refuses the named-map shape.
        Some(Value::Object(_)) => {
            return Err(YamlError::Schema(
                "benchmark.phases: Value error, phases must be a list of named phase configs \
                 (e.g. [{name: warmup, ...}, {name: profiling, ...}]); the dict shape is not \
                 supported. See docs/config-files.md for the expected shape."
                    .into(),
            ));
        }
        Some(other) => {
            return Err(YamlError::Schema(format!(
                "benchmark.phases: Input should be a valid list, got {}",
                type_name(&other)
            )));
        }
    };
    for name in ["warmup", "profiling"] {
        if let Some(v) = body.remove(name) {
            phases.push(named_phase(name, v)?);
        }
    }
    if !phases.is_empty() {
        body.insert("phases".into(), Value::Array(phases));
    }
    Ok(())
}

fn named_phase(name: &str, v: Value) -> Result<Value, YamlError> {
    let Value::Object(mut m) = v else {
        return Err(YamlError::Schema(format!(
            "benchmark.phases.{name}: Input should be a valid dictionary"
        )));
    };
    m.entry("name").or_insert_with(|| name.into());
    Ok(Value::Object(m))
}

/// AIPerf's duration strings: a number of seconds, or `30s`, `5m`, `2h` (units `s|sec|m|min|h|hr|
/// hour`, any case, optional space), or `inf` / `infinity`. `None` for anything else.
pub fn duration_secs(v: &Value) -> Option<f64> {
    if let Some(f) = v.as_f64() {
        return Some(f);
    }
    let s = v.as_str()?.trim();
    let lower = s.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(f64::INFINITY);
    }
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let scale = match unit.trim_start() {
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" | "hr" | "hour" => 3600.0,
        _ => return None,
    };
    Some(n * scale)
}

#[cfg(test)]
mod tests;
