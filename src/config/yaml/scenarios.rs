//! `sweep: {type: scenarios, runs: [...]}`, as AIPerf 0.13 expands it: each run is a partial
//! envelope (`name`, `benchmark`, `values`) deep-merged over the file's own, one variation each.
//!
//! The merge (docs/config-files.md, "Scenario sweeps"): a mapping into a mapping recurses, but
//! a distribution whose kind the run changes (`{mean, stddev}` → `{mean, median}` or `peaks`) is
//! replaced whole; a list of named mappings into another (`phases`, `datasets`) merges entry by
//! entry by `name`, new names appended, the others kept; anything else is replaced. A run's
//! singular `dataset:` is the file's one dataset. A variation's label is the run's `name`
//! (`scenario_<i>` without one), its directory that name, or its flat `values:` joined as a
//! grid point's are.

use serde_json::{Map, Value};

use super::YamlError;

type R<T> = Result<T, YamlError>;

/// One run of the sweep: its label and directory, its values (AIPerf's `values`) and the whole
/// file it makes (the file's own with the run merged in, no `sweep`).
#[derive(Debug, Clone)]
pub struct ScenarioRun {
    pub label: String,
    pub dir: String,
    /// The run's `values:` when given, else `[("benchmark", <the subtree it merges in>)]`.
    pub values: Vec<(String, Value)>,
    pub root: Map<String, Value>,
}

/// One variation of a sweep: its directory name and label, as AIPerf's `config expand`.
#[derive(Debug, Clone, PartialEq)]
pub struct Variation {
    pub dir: String,
    pub label: String,
    /// Each swept path and its value here, as the file wrote it (AIPerf's `values`).
    pub values: Vec<(String, Value)>,
}

/// Keys that tell one distribution's kind from another's.
const DISTRIBUTION_KEYS: &[&str] = &["peaks", "points", "value", "median", "stddev"];

const RUN_KEYS: &[&str] = &["benchmark", "name", "values", "variables"];

/// The runs of the file `root`'s scenario sweep, in order.
///
/// # Errors
/// AIPerf's refusals (its messages): no runs, a run that is not a mapping or has other keys, two
/// runs of one name, a name unsafe as a directory, `values:` that are not flat. A run's
/// `variables:` are rendered into the file it makes ([`super::render::render_templates`]).
pub fn runs(root: &Map<String, Value>) -> R<Vec<ScenarioRun>> {
    let sweep = root.get("sweep").and_then(Value::as_object);
    let list = match sweep.and_then(|s| s.get("runs")) {
        Some(Value::Array(l)) if !l.is_empty() => l,
        Some(Value::Array(_)) => {
            return Err(YamlError::Schema(
                "sweep.runs: List should have at least 1 item after validation, not 0".into(),
            ));
        }
        Some(_) => {
            return Err(YamlError::Schema(
                "sweep.runs: Input should be a valid list".into(),
            ));
        }
        None => return Err(YamlError::Schema("sweep.runs: Field required".into())),
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut dups: Vec<&str> = Vec::new();
    for run in list {
        let Some(name) = run.get("name").and_then(Value::as_str) else {
            continue;
        };
        if seen.contains(&name) && !dups.contains(&name) {
            dups.push(name);
        }
        seen.push(name);
        if name.contains(['/', '\\']) || name.contains("..") || name.chars().all(|c| c == '.') {
            return Err(YamlError::Schema(format!(
                "sweep: Value error, scenario sweep run name '{name}' is path-unsafe (contains \
                 a path separator or '..', or is only dots); choose a name usable as a directory."
            )));
        }
    }
    if !dups.is_empty() {
        let shown: Vec<String> = dups.iter().map(|d| format!("'{d}'")).collect();
        return Err(YamlError::Schema(format!(
            "sweep: Value error, scenario sweep runs must have unique names; duplicates: [{}].",
            shown.join(", ")
        )));
    }
    let mut base = root.clone();
    base.remove("sweep");
    list.iter()
        .enumerate()
        .map(|(i, run)| one(&base, run, i))
        .collect()
}

fn one(base: &Map<String, Value>, run: &Value, i: usize) -> R<ScenarioRun> {
    let run = run.as_object().ok_or_else(|| {
        YamlError::Schema(format!(
            "sweep.runs.{i}: Input should be a valid dictionary"
        ))
    })?;
    let mut unknown: Vec<&String> = run
        .keys()
        .filter(|k| !RUN_KEYS.contains(&k.as_str()) && *k != super::render::RENDERED_KEY)
        .collect();
    if !unknown.is_empty() {
        unknown.sort();
        let shown: Vec<String> = unknown.iter().map(|k| format!("'{k}'")).collect();
        return Err(YamlError::Schema(format!(
            "sweep run [{i}]: unknown field(s) [{}]; allowed: ['benchmark', 'name', 'values', \
             'variables']. (If you migrated from the flat shape, wrap body fields under \
             `benchmark:` inside the run.)",
            shown.join(", ")
        )));
    }
    // A run with `variables:`: the file rendered with them is its base.
    let rendered;
    let base = match run.get(super::render::RENDERED_KEY) {
        Some(Value::Object(r)) => {
            rendered = super::normalize(r.clone())?;
            &rendered
        }
        _ => base,
    };
    let explicit = match run.get("values") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => {
            if let Some((k, v)) = m.iter().find(|(_, v)| v.is_object() || v.is_array()) {
                return Err(YamlError::Schema(format!(
                    "sweep run [{i}].values['{k}'] must be a hashable scalar; got {}",
                    super::type_name(v)
                )));
            }
            Some(m.clone())
        }
        Some(other) => {
            return Err(YamlError::Schema(format!(
                "sweep run [{i}].values must be a dict, got {}",
                super::type_name(other)
            )));
        }
    };
    let mut over = Map::new();
    if let Some(b) = run.get("benchmark") {
        let mut b = b.clone();
        if let Value::Object(bench) = &mut b {
            singular_dataset(bench, base, i)?;
        }
        over.insert("benchmark".into(), b);
    }
    let mut root = base.clone();
    merge(&mut root, &over);
    let label = run
        .get("name")
        .and_then(Value::as_str)
        .map_or_else(|| format!("scenario_{i}"), str::to_owned);
    // AIPerf's values: the run's `values:`, else its variables as written, then what it merges.
    let values: Vec<(String, Value)> = match &explicit {
        Some(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        None => (run
            .get("variables")
            .map(|v| ("variables".to_owned(), v.clone())))
        .into_iter()
        .chain(over)
        .collect(),
    };
    let dir = match &explicit {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| {
                let text = v.as_str().map_or_else(|| python_str(v), str::to_owned);
                format!("{}_{text}", k.rsplit('.').next().unwrap_or(k))
            })
            .collect::<Vec<_>>()
            .join("__"),
        _ => label.clone(),
    };
    Ok(ScenarioRun {
        label,
        dir: safe_dir(&dir, i),
        values,
        root,
    })
}

/// The variations of a grid or zip sweep over paths (`variations`, each `path=value` pairs) as
/// files: the file with each value written at its path under `benchmark` (AIPerf's rules: a
/// mapping is entered, made when missing; in a list of named entries the one of that name, under
/// `phases` a number an index and `profiling` the one profiling phase).
///
/// # Errors
/// A path that names no entry, or goes through a value that is neither mapping nor list.
pub fn grid_runs(root: &Map<String, Value>, variations: Vec<Variation>) -> R<Vec<ScenarioRun>> {
    let mut base = root.clone();
    base.remove("sweep");
    variations
        .into_iter()
        .map(|v| {
            let mut root = base.clone();
            let body = root
                .entry("benchmark")
                .or_insert_with(|| Value::Object(Map::new()));
            for (path, value) in &v.values {
                set_path(body, path, value.clone())?;
            }
            Ok(ScenarioRun {
                label: v.label,
                dir: v.dir,
                values: v.values,
                root,
            })
        })
        .collect()
}

/// Writes `value` at the dotted `path` under `at`.
fn set_path(at: &mut Value, path: &str, value: Value) -> R<()> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut here = at;
    for (i, seg) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let under = parts[..i].join(".");
        let kind = super::type_name(here);
        let entries = matches!(&*here, Value::Array(l) if named(l));
        here = match here {
            Value::Object(m) => {
                if last {
                    m.insert((*seg).to_owned(), value);
                    return Ok(());
                }
                m.entry(*seg).or_insert_with(|| Value::Object(Map::new()))
            }
            Value::Array(list) if entries => {
                let phases = under == "phases";
                let at = if phases && seg.bytes().all(|b| b.is_ascii_digit()) {
                    seg.parse::<usize>().ok().filter(|&n| n < list.len())
                } else {
                    list.iter().position(|e| e["name"] == *seg).or_else(|| {
                        // `phases.profiling` with no phase of that name: the one profiling one.
                        if !(phases && *seg == "profiling") {
                            return None;
                        }
                        let profiling: Vec<usize> = (0..list.len())
                            .filter(|&j| {
                                list[j].get("kind").and_then(Value::as_str) == Some("profiling")
                            })
                            .collect();
                        (profiling.len() == 1).then(|| profiling[0])
                    })
                };
                let Some(j) = at else {
                    let names: Vec<String> = list
                        .iter()
                        .map(|e| format!("'{}'", e["name"].as_str().unwrap_or_default()))
                        .collect();
                    return Err(YamlError::Schema(format!(
                        "sweep path '{path}': no entry named '{seg}' under '{under}' (have: [{}])",
                        names.join(", ")
                    )));
                };
                if last {
                    list[j] = value;
                    return Ok(());
                }
                &mut list[j]
            }
            _ => {
                return Err(YamlError::Schema(format!(
                    "sweep path '{path}': '{under}' is a {kind}, not a mapping"
                )));
            }
        };
    }
    Ok(())
}

/// A value as Python's `str()` writes it (`True`, `5.0`).
fn python_str(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) if n.is_f64() => {
            ringperf_metrics::export::py_float_str(n.as_f64().unwrap_or_default())
        }
        other => other.to_string(),
    }
}

/// A directory name with path separators, `..` and characters unsafe on some systems removed;
/// `variation_<i>` when nothing but dots is left.
fn safe_dir(name: &str, i: usize) -> String {
    let safe: String = name
        .replace("..", "")
        .chars()
        .filter(|c| !matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*'))
        .collect();
    if safe.chars().all(|c| c == '.') {
        format!("variation_{i}")
    } else {
        safe
    }
}

/// A run's `benchmark.dataset:` as a one-entry `datasets:` naming the file's one dataset.
fn singular_dataset(bench: &mut Map<String, Value>, base: &Map<String, Value>, i: usize) -> R<()> {
    let Some(d) = bench.get("dataset") else {
        return Ok(());
    };
    if bench.contains_key("datasets") {
        return Err(YamlError::Schema(format!(
            "sweep run [{i}]: 'dataset' cannot be used with 'datasets'. Use 'dataset' for a \
             single dataset or 'datasets' for multiple named datasets."
        )));
    }
    let Value::Object(d) = d else {
        return Err(YamlError::Schema(format!(
            "sweep run [{i}]: 'benchmark.dataset:' must be a mapping; got {}.",
            super::type_name(d)
        )));
    };
    let base_sets: Vec<&Value> = base
        .get("benchmark")
        .and_then(|b| b.get("datasets"))
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let name = match (d.get("name"), base_sets.as_slice()) {
        (Some(n), _) => n.clone(),
        (None, [one]) => one.get("name").cloned().ok_or_else(|| {
            YamlError::Schema(format!(
                "sweep run [{i}]: base dataset has no 'name' to inherit; add 'name:' to the \
                 scenario's dataset."
            ))
        })?,
        (None, many) => {
            let names: Vec<String> = many
                .iter()
                .map(|d| {
                    d.get("name")
                        .map_or_else(|| "None".into(), |n| format!("{n}").replace('"', "'"))
                })
                .collect();
            return Err(YamlError::Schema(format!(
                "sweep run [{i}]: scenario uses singular 'benchmark.dataset:' against a base \
                 with multiple datasets ([{}]); add 'name:' to disambiguate.",
                names.join(", ")
            )));
        }
    };
    let mut entry = Map::new();
    entry.insert("name".into(), name);
    for (k, v) in d {
        if k != "name" {
            entry.insert(k.clone(), v.clone());
        }
    }
    bench.remove("dataset");
    bench.insert("datasets".into(), Value::Array(vec![Value::Object(entry)]));
    Ok(())
}

/// Merges `over` into `base` (the module's rules).
pub fn merge(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => {
                if kind_changes(b, o) {
                    base.insert(k.clone(), v.clone());
                } else {
                    merge(b, o);
                }
            }
            (Some(Value::Array(b)), Value::Array(o)) if named(b) && named(o) => {
                for item in o {
                    let name = &item["name"];
                    match b.iter_mut().find(|x| x.get("name") == Some(name)) {
                        Some(Value::Object(existing)) => {
                            if let Value::Object(io) = item {
                                merge(existing, io);
                            }
                        }
                        _ => b.push(item.clone()),
                    }
                }
            }
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Both sides are distributions and the run's is of another kind.
fn kind_changes(base: &Map<String, Value>, over: &Map<String, Value>) -> bool {
    let keys = |m: &Map<String, Value>| -> Vec<&str> {
        DISTRIBUTION_KEYS
            .iter()
            .copied()
            .filter(|k| m.contains_key(*k))
            .collect()
    };
    let (b, o) = (keys(base), keys(over));
    !b.is_empty() && !o.is_empty() && b != o
}

/// A non-empty list of mappings, each with a string `name`.
fn named(list: &[Value]) -> bool {
    !list.is_empty()
        && list
            .iter()
            .all(|x| x.get("name").is_some_and(Value::is_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_run_merges_by_name_and_swaps_a_distribution_whole() {
        let mut base = obj(json!({
            "benchmark": {
                "datasets": [{"name": "default", "type": "synthetic", "entries": 1000,
                              "prompts": {"isl": {"mean": 512, "stddev": 50},
                                          "osl": {"mean": 128, "stddev": 25}}}],
                "phases": [{"name": "warmup", "concurrency": 8},
                           {"name": "profiling", "type": "poisson", "rate": 20.0, "concurrency": 64}],
            }
        }));
        merge(
            &mut base,
            &obj(json!({"benchmark": {
                "datasets": [{"name": "default", "prompts": {"isl": {"mean": 1024, "median": 904},
                                                             "osl": {"mean": 256, "stddev": 50}}}],
                "phases": [{"name": "profiling", "rate": 5.0}, {"name": "cooldown", "rate": 1.0}],
            }})),
        );
        let b = &base["benchmark"];
        // Normal → log-normal: replaced whole (no stddev left); normal → normal: merged.
        assert_eq!(
            b["datasets"][0]["prompts"]["isl"],
            json!({"mean": 1024, "median": 904})
        );
        assert_eq!(
            b["datasets"][0]["prompts"]["osl"],
            json!({"mean": 256, "stddev": 50})
        );
        assert_eq!(b["datasets"][0]["entries"], 1000);
        // The profiling phase's rate changed, its type and concurrency kept; the warmup kept; a
        // new name appended.
        assert_eq!(
            b["phases"][1],
            json!({"name": "profiling", "type": "poisson", "rate": 5.0, "concurrency": 64})
        );
        assert_eq!(b["phases"][0]["concurrency"], 8);
        assert_eq!(b["phases"][2]["name"], "cooldown");
    }

    #[test]
    fn a_grid_point_is_written_at_its_path_as_aiperf_writes_it() {
        let root = obj(json!({
            "benchmark": {
                "datasets": [{"name": "main", "type": "file", "path": "q.jsonl", "format": "speed_bench_qa"}],
                "phases": [{"name": "warmup"}, {"name": "steady", "kind": "profiling", "rate": 1.0}],
            },
            "sweep": {"type": "grid", "parameters": {"datasets.main.format": ["speed_bench_rag"]}},
        }));
        let point = |path: &str, v: Value| Variation {
            dir: "d".into(),
            label: "l".into(),
            values: vec![(path.into(), v)],
        };
        let r = grid_runs(
            &root,
            vec![point("datasets.main.format", json!("speed_bench_rag"))],
        )
        .unwrap();
        assert_eq!(
            r[0].root["benchmark"]["datasets"][0]["format"],
            "speed_bench_rag"
        );
        assert_eq!(r[0].root["benchmark"]["datasets"][0]["path"], "q.jsonl");
        assert!(!r[0].root.contains_key("sweep"));
        // `phases.profiling`: the one profiling phase, whatever its name; a number an index; a
        // missing mapping made.
        let r = grid_runs(&root, vec![point("phases.profiling.rate", json!(4.0))]).unwrap();
        assert_eq!(r[0].root["benchmark"]["phases"][1]["rate"], 4.0);
        let r = grid_runs(&root, vec![point("phases.0.concurrency", json!(2))]).unwrap();
        assert_eq!(r[0].root["benchmark"]["phases"][0]["concurrency"], 2);
        let r = grid_runs(&root, vec![point("endpoint.extra.temperature", json!(0))]).unwrap();
        assert_eq!(
            r[0].root["benchmark"]["endpoint"]["extra"]["temperature"],
            0
        );
        let e = grid_runs(&root, vec![point("datasets.other.format", json!("x"))]).unwrap_err();
        assert!(
            e.to_string()
                .contains("no entry named 'other' under 'datasets' (have: ['main'])"),
            "{e}"
        );
        let e = grid_runs(&root, vec![point("datasets.main.path.x", json!(1))]).unwrap_err();
        assert!(
            e.to_string()
                .contains("'datasets.main.path' is a str, not a mapping"),
            "{e}"
        );
    }

    #[test]
    fn runs_are_named_checked_and_their_singular_dataset_is_the_files() {
        let root = obj(json!({
            "benchmark": {"datasets": [{"name": "default", "prompts": {"isl": 8}}]},
            "sweep": {"type": "scenarios", "runs": [
                {"name": "short", "benchmark": {"dataset": {"prompts": {"isl": 16}}}},
                {"benchmark": {"dataset": {"prompts": {"isl": 32}}}},
                {"name": "flat", "values": {"isl": 64, "tag": "x"}},
            ]}
        }));
        let r = runs(&root).unwrap();
        assert_eq!(r[0].label, "short");
        assert_eq!(r[0].dir, "short");
        assert_eq!(
            r[0].root["benchmark"]["datasets"][0],
            json!({"name": "default", "prompts": {"isl": 16}})
        );
        assert!(!r[0].root.contains_key("sweep"));
        assert_eq!(r[1].label, "scenario_1");
        assert_eq!(r[1].values[0].0, "benchmark");
        assert_eq!(r[2].dir, "isl_64__tag_x");
        let bad = |runs_: Value| {
            let mut m = root.clone();
            m.insert("sweep".into(), json!({"type": "scenarios", "runs": runs_}));
            runs(&m).unwrap_err().to_string()
        };
        assert!(
            bad(json!([{"name": "a"}, {"name": "a"}]))
                .contains("must have unique names; duplicates: ['a'].")
        );
        assert!(bad(json!([{"name": "../x"}])).contains("is path-unsafe"));
        assert!(
            bad(json!([{"phases": []}])).contains("sweep run [0]: unknown field(s) ['phases']")
        );
        assert!(bad(json!([])).contains("at least 1 item"));
        assert!(
            bad(json!([{"values": {"a": [1]}}])).contains("must be a hashable scalar; got list")
        );
    }
}
