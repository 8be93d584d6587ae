//! A config file's top-level `plot:` section, as AIPerf 0.13 reads it: a path to a plot YAML
//! (relative to the config file's directory) or the section inline, checked against AIPerf's
//! schema (`visualization` required; its default lists name defined presets; `settings` and
//! `experiment_classification` with their defaults; no other key) and kept with every default
//! filled in, keys in snake case, so that the run can write it beside its artifacts as
//! `.aiperf-plot-config.yaml` (docs/config-files.md, "`plot:`").

use std::path::Path;

use serde_json::{Map, Value, json};

use super::{YamlError, extra, snake};

type R<T> = Result<T, YamlError>;

/// The plot section's file, written in the artifact directory when the run draws its plots.
pub const PLOT_CONFIG_FILE: &str = ".aiperf-plot-config.yaml";

/// `plot:` read and checked: `None` for `null`; the section with its defaults otherwise.
/// `dir` is the config file's directory, for a relative path.
///
/// # Errors
/// AIPerf's refusals: a value that is none of null / path / mapping, a path that does not exist
/// or does not hold a mapping, and any schema error of the section.
pub fn read(v: &Value, dir: &Path) -> R<Option<Value>> {
    let section = match v {
        Value::Null => return Ok(None),
        Value::String(raw) => from_path(raw, dir)?,
        Value::Object(m) => m.clone(),
        _ => {
            return Err(YamlError::Schema(
                "plot: must be null, a path string, or an inline mapping".into(),
            ));
        }
    };
    envelope(&section).map(Some)
}

/// A plot YAML named by path (`~` expanded; relative to the config file's directory).
fn from_path(raw: &str, dir: &Path) -> R<Map<String, Value>> {
    let expanded = match raw.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map_or_else(
            || Path::new(raw).to_path_buf(),
            |h| Path::new(&h).join(rest),
        ),
        None => Path::new(raw).to_path_buf(),
    };
    let path = if expanded.is_absolute() {
        expanded
    } else {
        dir.join(expanded)
    };
    let path = std::fs::canonicalize(&path).map_err(|_| {
        YamlError::Schema(format!(
            "plot path not found: {} (from envelope plot: '{raw}'; resolved relative to {})",
            path.display(),
            dir.display()
        ))
    })?;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        YamlError::Schema(format!(
            "failed to parse plot YAML at {}: {e}",
            path.display()
        ))
    })?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).map_err(|e| {
        YamlError::Schema(format!(
            "failed to parse plot YAML at {}: {e}",
            path.display()
        ))
    })?;
    let doc = match docs.into_iter().next() {
        Some(y) => super::to_json(y, "plot", 0)?,
        None => Value::Null,
    };
    match doc {
        Value::Object(m) => Ok(m),
        other => Err(YamlError::Schema(format!(
            "plot YAML at {} must contain a mapping at the top level, got {}",
            path.display(),
            super::type_name(&other)
        ))),
    }
}

/// The keys of `m` in snake case, each checked against `known` (AIPerf refuses any other).
fn fields<'a>(
    m: &'a Map<String, Value>,
    path: &str,
    known: &[&str],
) -> R<Vec<(String, &'a Value)>> {
    m.iter()
        .map(|(k, v)| {
            let s = snake(k);
            if known.contains(&s.as_str()) {
                Ok((s, v))
            } else {
                Err(extra(&format!("{path}.{k}")))
            }
        })
        .collect()
}

fn mapping<'a>(v: &'a Value, path: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| YamlError::Schema(format!("{path}: Input should be a valid dictionary")))
}

/// The whole section: `visualization`, `settings`, `experiment_classification`.
fn envelope(m: &Map<String, Value>) -> R<Value> {
    let mut out = Map::new();
    let mut vis = None;
    let mut settings = None;
    for (k, v) in fields(
        m,
        "plot",
        &["visualization", "settings", "experiment_classification"],
    )? {
        let path = format!("plot.{k}");
        match k.as_str() {
            "visualization" => vis = Some(visualization(mapping(v, &path)?)?),
            "settings" => settings = Some(plot_settings(mapping(v, &path)?)?),
            _ if v.is_null() => {}
            _ => {
                out.insert(k, classification(mapping(v, &path)?)?);
            }
        }
    }
    let vis = vis.ok_or_else(|| YamlError::Schema("plot.visualization: Field required".into()))?;
    out.insert("visualization".into(), vis);
    out.insert(
        "settings".into(),
        match settings {
            Some(s) => s,
            None => plot_settings(&Map::new())?,
        },
    );
    Ok(sorted(Value::Object(out)))
}

/// `visualization`: the preset definitions (their bodies as given: AIPerf checks them only when
/// it draws) and the default lists, each name a defined preset.
fn visualization(m: &Map<String, Value>) -> R<Value> {
    const LISTS: [&str; 2] = ["multi_run_defaults", "single_run_defaults"];
    const PRESETS: [&str; 2] = ["multi_run_plots", "single_run_plots"];
    let mut out = Map::new();
    for k in LISTS.iter().chain(&PRESETS) {
        let empty = if LISTS.contains(k) {
            json!([])
        } else {
            json!({})
        };
        out.insert((*k).into(), empty);
    }
    for (k, v) in fields(m, "plot.visualization", &[LISTS, PRESETS].concat())? {
        let path = format!("plot.visualization.{k}");
        if LISTS.contains(&k.as_str()) {
            let names = v.as_array().ok_or_else(|| {
                YamlError::Schema(format!("{path}: Input should be a valid list"))
            })?;
            if let Some(bad) = names.iter().position(|n| !n.is_string()) {
                return Err(YamlError::Schema(format!(
                    "{path}.{bad}: Input should be a valid string"
                )));
            }
            out.insert(k, v.clone());
        } else {
            for (name, body) in mapping(v, &path)? {
                if !body.is_object() {
                    return Err(YamlError::Schema(format!(
                        "{path}.{name}: Input should be a valid dictionary"
                    )));
                }
            }
            out.insert(k, v.clone());
        }
    }
    // Each default a defined preset, every offender named, as AIPerf lists them.
    let mut errors = Vec::new();
    for (list, presets) in LISTS.iter().zip(PRESETS) {
        let defined: Vec<&String> = out[presets].as_object().map_or_else(Vec::new, |p| {
            let mut k: Vec<&String> = p.keys().collect();
            k.sort();
            k
        });
        for name in out[*list].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if defined.iter().any(|d| d.as_str() == name) {
                continue;
            }
            let hint = closest(name, &defined)
                .map(|c| format!(" Did you mean '{c}'?"))
                .unwrap_or_default();
            let shown: Vec<String> = defined.iter().map(|d| format!("'{d}'")).collect();
            errors.push(format!(
                "plot '{name}' listed in {list} but not defined in {presets}. Defined: [{}].{hint}",
                shown.join(", ")
            ));
        }
    }
    if !errors.is_empty() {
        return Err(YamlError::Schema(format!(
            "plot.visualization: Value error, {}",
            errors.join("; ")
        )));
    }
    Ok(Value::Object(out))
}

/// The defined name most like `name`, if one is like it enough (a similarity ratio of at least
/// 0.6: twice the characters in common in order over both lengths).
fn closest<'a>(name: &str, defined: &[&'a String]) -> Option<&'a str> {
    defined
        .iter()
        .map(|d| (similarity(name, d), d.as_str()))
        .filter(|(r, _)| *r >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, d)| d)
}

/// 2 × (longest common subsequence) / (|a| + |b|).
fn similarity(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut row = vec![0usize; b.len() + 1];
    for ca in &a {
        let mut prev = 0;
        for (j, cb) in b.iter().enumerate() {
            let keep = row[j + 1];
            row[j + 1] = if ca == cb {
                prev + 1
            } else {
                row[j + 1].max(row[j])
            };
            prev = keep;
        }
    }
    2.0 * row[b.len()] as f64 / (a.len() + b.len()) as f64
}

/// `settings.server_metrics_downsampling` with its defaults (on, 5 s windows, the mean).
fn plot_settings(m: &Map<String, Value>) -> R<Value> {
    let mut down =
        json!({"enabled": true, "window_size_seconds": 5.0, "aggregation_method": "mean"});
    for (k, v) in fields(m, "plot.settings", &["server_metrics_downsampling"])? {
        let path = format!("plot.settings.{k}");
        for (f, x) in fields(
            mapping(v, &path)?,
            &path,
            &["enabled", "window_size_seconds", "aggregation_method"],
        )? {
            let fpath = format!("{path}.{f}");
            let ok = match f.as_str() {
                "enabled" => x.is_boolean(),
                "window_size_seconds" => x.as_f64().is_some_and(|s| s > 0.0),
                _ => x
                    .as_str()
                    .is_some_and(|s| ["mean", "max", "min", "median"].contains(&s)),
            };
            if !ok {
                let want = match f.as_str() {
                    "enabled" => "Input should be a valid boolean".to_string(),
                    "window_size_seconds" => "Input should be greater than 0".to_string(),
                    _ => "Input should be 'mean', 'max', 'min' or 'median'".to_string(),
                };
                return Err(YamlError::Schema(format!("{fpath}: {want}")));
            }
            let x = match (f.as_str(), x.as_f64()) {
                ("window_size_seconds", Some(s)) => json!(s),
                _ => x.clone(),
            };
            down[f] = x;
        }
    }
    Ok(json!({ "server_metrics_downsampling": down }))
}

/// `experiment_classification`: baseline and treatment globs and how runs are grouped.
fn classification(m: &Map<String, Value>) -> R<Value> {
    let mut out = json!({
        "baselines": [],
        "treatments": [],
        "default": "treatment",
        "group_extraction_pattern": "^(baseline|treatment_\\d+)",
    });
    for (k, v) in fields(
        m,
        "plot.experiment_classification",
        &[
            "baselines",
            "treatments",
            "default",
            "group_extraction_pattern",
            "group_display_names",
        ],
    )? {
        let path = format!("plot.experiment_classification.{k}");
        let ok = match k.as_str() {
            "baselines" | "treatments" => {
                v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            }
            "default" => v
                .as_str()
                .is_some_and(|s| s == "baseline" || s == "treatment"),
            "group_extraction_pattern" => v.is_string(),
            _ => v.is_null() || v.is_object(),
        };
        if !ok {
            return Err(YamlError::Schema(format!(
                "{path}: Input should be a valid {}",
                match k.as_str() {
                    "baselines" | "treatments" => "list of strings",
                    "default" => "'baseline' or 'treatment'",
                    "group_extraction_pattern" => "string",
                    _ => "dictionary",
                }
            )));
        }
        if !v.is_null() {
            out[k] = v.clone();
        }
    }
    Ok(out)
}

/// `v` with every mapping's keys sorted (the order AIPerf writes the file in).
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut pairs: Vec<(String, Value)> = m.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        v => v,
    }
}

/// The section as `.aiperf-plot-config.yaml` holds it: block YAML, keys sorted.
pub fn to_yaml(section: &Value) -> String {
    let mut out = String::new();
    super::emit::yaml_block(section, 0, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        let docs = yaml_rust2::YamlLoader::load_from_str(text).unwrap();
        super::super::to_json(docs[0].clone(), "", 0).unwrap()
    }

    fn err(v: &Value) -> String {
        read(v, Path::new("/")).unwrap_err().to_string()
    }

    #[test]
    fn the_section_is_checked_as_aiperf_checks_it() {
        assert!(err(&json!(3)).contains("plot: must be null, a path string, or an inline mapping"));
        assert!(err(&json!({})).contains("plot.visualization: Field required"));
        assert!(
            err(&json!({"visualization": {}, "colours": 1})).contains("plot.colours: Extra inputs")
        );
        let e = err(&yaml(
            "visualization:\n  multi_run_defaults: [pareto_thruput, ttft]\n  multi_run_plots:\n    pareto_throughput: {type: pareto}\n",
        ));
        assert!(
            e.contains(
                "plot 'pareto_thruput' listed in multi_run_defaults but not defined in \
                 multi_run_plots. Defined: ['pareto_throughput']. Did you mean \
                 'pareto_throughput'?; plot 'ttft' listed in multi_run_defaults"
            ),
            "{e}"
        );
        let e = err(&yaml(
            "visualization: {}\nsettings: {server_metrics_downsampling: {window_size_seconds: 0}}\n",
        ));
        assert!(
            e.contains("window_size_seconds: Input should be greater than 0"),
            "{e}"
        );
        assert_eq!(read(&Value::Null, Path::new("/")).unwrap(), None);
        assert!(
            err(&json!("no/such/plot.yaml")).contains("plot path not found: /no/such/plot.yaml")
        );
    }

    #[test]
    fn defaults_are_filled_and_keys_sorted_and_camel_case_read() {
        let v = read(
            &yaml("visualization:\n  singleRunDefaults: [a]\n  singleRunPlots: {a: {type: area, x: t}}\n"),
            Path::new("/"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            to_yaml(&v),
            "settings:\n  server_metrics_downsampling:\n    aggregation_method: mean\n    \
             enabled: true\n    window_size_seconds: 5.0\nvisualization:\n  \
             multi_run_defaults: []\n  multi_run_plots: {}\n  single_run_defaults:\n  - a\n  \
             single_run_plots:\n    a:\n      type: area\n      x: t\n"
        );
    }

    /// AIPerf's template `sweep_with_plot` run with `--auto-plot`: the section it wrote as
    /// `.aiperf-plot-config.yaml` (tests/data/aiperf-template-runs/sweep_with_plot/auto_plot/),
    /// byte for byte.
    #[test]
    fn the_templates_section_is_written_as_aiperf_wrote_it() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
        let l = super::super::load(Path::new(&format!(
            "{root}/aiperf-templates/sweep_with_plot.yaml"
        )))
        .unwrap();
        let v = read(&l.root["plot"], Path::new(root)).unwrap().unwrap();
        let want = std::fs::read_to_string(format!(
            "{root}/aiperf-template-runs/sweep_with_plot/auto_plot/{PLOT_CONFIG_FILE}"
        ))
        .unwrap();
        assert_eq!(to_yaml(&v), want);
    }

    #[test]
    fn a_path_is_read_from_the_config_files_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("p.yaml"), "visualization: {}\n").unwrap();
        let v = read(&json!("p.yaml"), d.path()).unwrap().unwrap();
        assert_eq!(v["visualization"]["multi_run_plots"], json!({}));
        std::fs::write(d.path().join("l.yaml"), "- 1\n").unwrap();
        let e = read(&json!("l.yaml"), d.path()).unwrap_err().to_string();
        assert!(
            e.contains("must contain a mapping at the top level, got list"),
            "{e}"
        );
    }
}
