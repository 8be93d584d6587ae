//! `${VAR}` substitution and the Jinja2 subset of config files.
//!
//! Environment: `${NAME}` and `${NAME:default}` anywhere in a string value (`NAME` is
//! `[A-Za-z_][A-Za-z0-9_]*`); a value that is one reference and nothing else becomes a bool,
//! int or float when it reads as one, as AIPerf does. An unset `NAME` without a default is an
//! error; a `${` left unclosed is an error.
//!
//! Jinja2 as AIPerf renders a config at load time ([`super::jinja`] is the subset): a string
//! value holding `{{ … }}` (or `{%`) is rendered against the top-level `variables:` block (its
//! values resolved first, in the order their references ask; a cycle is an error) and the
//! result coerced to a bool, int or float when it reads as one; a string without them is left
//! as written. Fields named `template`, `body` and `payload_template` are left as written
//! (request templates, rendered per request), and so is `artifacts.user_files` (rendered when
//! the run starts, with the run's own names: [`crate::plan::UserFiles`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::YamlError;
use super::jinja::{Context, Template, Val, coerce, has_markers};

type Vars = BTreeMap<String, Val>;

const SKIP: &[&str] = &["template", "body", "payload_template"];

/// Replaces every `${…}` reference in the string values of `v`.
pub(super) fn substitute_env(
    v: Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Value, YamlError> {
    Ok(match v {
        Value::String(s) => env_string(&s, env)?,
        Value::Array(a) => Value::Array(
            a.into_iter()
                .map(|x| substitute_env(x, env))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| Ok((k, substitute_env(x, env)?)))
                .collect::<Result<_, YamlError>>()?,
        ),
        other => other,
    })
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn env_string(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Value, YamlError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut refs = 0;
    let mut whole = false;
    while let Some(at) = rest.find("${") {
        let inner_start = at + 2;
        let Some(close) = rest[inner_start..].find('}') else {
            break;
        };
        let inner = &rest[inner_start..inner_start + close];
        let (name, default) = match inner.split_once(':') {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if !is_name(name) {
            out.push_str(&rest[..inner_start]);
            rest = &rest[inner_start..];
            continue;
        }
        whole = at == 0 && out.is_empty() && inner_start + close + 1 == rest.len() && refs == 0;
        refs += 1;
        out.push_str(&rest[..at]);
        match (env(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(YamlError::MissingEnv(name.to_string())),
        }
        rest = &rest[inner_start + close + 1..];
    }
    out.push_str(rest);
    if let Some(open) = out.rfind("${")
        && !out[open..].contains('}')
        && !out[open..].contains('\n')
    {
        return Err(YamlError::Parse(format!(
            "Unterminated environment variable reference in '{out}': '${{' opener has no closing '}}'"
        )));
    }
    Ok(if refs > 0 && whole {
        coerce_env(&out)
    } else {
        Value::String(out)
    })
}

/// AIPerf's scalar coercion of a rendered value: `true`/`false` (any case), int, float, else
/// the string.
fn coerce_env(s: &str) -> Value {
    if s.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if s.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if let Ok(i) = s.trim().parse::<i64>() {
        return Value::from(i);
    }
    match s.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && !s.trim().is_empty() => Value::from(f),
        _ => Value::String(s.to_string()),
    }
}

/// The names a config file's templates read at load time, as AIPerf's context has them: the
/// `variables:` block's, resolved; else the file's own top-level and `benchmark:` keys, their
/// values as written (not rendered), a list of named entries as a mapping by name (so
/// `phases.profiling.rate` reads the phase named `profiling`); any other is undefined.
struct LoadContext<'a> {
    vars: &'a Vars,
    config: &'a Config,
}

/// The file's values by top-level or `benchmark:` key.
type Config = BTreeMap<String, Value>;

impl Context for LoadContext<'_> {
    fn get(&self, name: &str) -> Result<Option<Val>, String> {
        if let Some(v) = self.vars.get(name) {
            return Ok(Some(v.clone()));
        }
        Ok(self.config.get(name).map(Val::of_json))
    }
}

/// [`LoadContext`]'s config values of the file `root` (its `variables:` names left out).
fn config_values(root: &Map<String, Value>, vars: &Map<String, Value>) -> Config {
    let named = |v: &Value| -> Value {
        let Value::Array(list) = v else {
            return v.clone();
        };
        let by_name: Map<String, Value> = list
            .iter()
            .filter_map(|x| {
                let n = x.get("name")?.as_str()?;
                Some((n.to_owned(), x.clone()))
            })
            .collect();
        if by_name.is_empty() {
            v.clone()
        } else {
            Value::Object(by_name)
        }
    };
    let mut config: Config = root.iter().map(|(k, v)| (k.clone(), named(v))).collect();
    if let Some(Value::Object(b)) = root.get("benchmark") {
        config.extend(b.iter().map(|(k, v)| (k.clone(), named(v))));
    }
    for k in vars.keys() {
        config.remove(k);
    }
    config
}

/// Subtrees rendered at run time with their own context (AIPerf's list), never at load time.
const RUN_TIME: &[&str] = &[
    "artifacts.user_files",
    "benchmark.artifacts.user_files",
    "artifacts.userFiles",
    "benchmark.artifacts.userFiles",
];

fn run_time(path: &str) -> bool {
    RUN_TIME
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('.')))
}

/// The key under which a scenario run with `variables:` carries the file rendered with them
/// ([`render_templates`]); read by `scenarios::runs`, never written by a file (refused there).
pub(super) const RENDERED_KEY: &str = "rendered_with_variables";

/// Renders the `{{ }}` expressions of every string value (see the module documentation). A
/// scenario sweep's run with `variables:` gets the whole file rendered again, as AIPerf renders
/// it for that run: with the file's variables under the run's (its own may read the others),
/// kept under [`RENDERED_KEY`] beside the run's `variables` as written and its `benchmark`
/// rendered with them.
pub(super) fn render_templates(v: Value) -> Result<Value, YamlError> {
    let raw = v.clone();
    let mut out = render_with(v)?;
    let runs = |v: &Value| -> Vec<Value> {
        (v.get("sweep").and_then(|s| s.get("runs")))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for (i, run) in runs(&raw).iter().enumerate() {
        if run.get(RENDERED_KEY).is_some() {
            return Err(YamlError::Schema(format!(
                "sweep run [{i}]: unknown field(s) ['{RENDERED_KEY}']; allowed: ['benchmark', \
                 'name', 'values', 'variables']."
            )));
        }
        let Some(Value::Object(own)) = run.get("variables") else {
            continue;
        };
        let mut again = raw.clone();
        if let Value::Object(root) = &mut again {
            let mut vars = match root.get("variables") {
                Some(Value::Object(m)) => m.clone(),
                _ => Map::new(),
            };
            vars.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
            root.insert("variables".into(), Value::Object(vars));
        }
        let Value::Object(mut rendered) = render_with(again)? else {
            continue;
        };
        let benchmark = runs(&Value::Object(rendered.clone()))
            .get(i)
            .and_then(|r| r.get("benchmark").cloned());
        rendered.remove("sweep");
        if let Some(Value::Object(r)) =
            (out.get_mut("sweep").and_then(|s| s.get_mut("runs"))).and_then(|l| l.get_mut(i))
        {
            r.insert("variables".into(), Value::Object(own.clone()));
            if let Some(b) = benchmark {
                r.insert("benchmark".into(), b);
            }
            r.insert(RENDERED_KEY.into(), Value::Object(rendered));
        }
    }
    Ok(out)
}

/// [`render_templates`] of the file `v` with its own `variables:`.
fn render_with(v: Value) -> Result<Value, YamlError> {
    let Value::Object(mut root) = v else {
        return Ok(v);
    };
    let vars = match root.get("variables") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            return Err(YamlError::Schema(
                "variables: Input should be a valid dictionary".into(),
            ));
        }
    };
    let config = config_values(&root, &vars);
    let resolved = resolve_variables(&vars, &config)?;
    // Removed in place: the walk visits the rest in the file's order (AIPerf reports the first
    // error it meets in that order).
    root.shift_remove("variables");
    let cx = LoadContext {
        vars: &resolved,
        config: &config,
    };
    let mut out = walk(Value::Object(root), &cx, "")?;
    if let Value::Object(m) = &mut out
        && !vars.is_empty()
    {
        m.insert(
            "variables".into(),
            Value::Object(
                resolved
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        );
    }
    Ok(out)
}

/// The `variables:` block resolved in the order their references ask (any order in the file;
/// a cycle is an error), each rendered as any other value is.
fn resolve_variables(vars: &Map<String, Value>, config: &Config) -> Result<Vars, YamlError> {
    let mut pending: BTreeMap<&String, BTreeSet<String>> = vars
        .iter()
        .map(|(k, v)| {
            let mut refs = BTreeSet::new();
            references(v, &mut refs);
            refs.retain(|r| vars.contains_key(r));
            (k, refs)
        })
        .collect();
    let mut done = Vars::new();
    while !pending.is_empty() {
        let ready: Vec<&String> = pending
            .iter()
            .filter(|(_, deps)| deps.is_empty())
            .map(|(k, _)| *k)
            .collect();
        if ready.is_empty() {
            let names: Vec<&str> = pending.keys().map(|k| k.as_str()).collect();
            return Err(YamlError::Template(format!(
                "Circular reference among variables: {}",
                names.join(", ")
            )));
        }
        for name in ready {
            let cx = LoadContext {
                vars: &done,
                config,
            };
            let v = walk(vars[name].clone(), &cx, &format!("variables.{name}"))?;
            done.insert(name.clone(), Val::of_json(&v));
            pending.remove(name);
            for deps in pending.values_mut() {
                deps.remove(name.as_str());
            }
        }
    }
    Ok(done)
}

/// The names the templates in the string leaves of `v` read (a template that does not parse
/// reads none here: rendering it reports why).
fn references(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) if has_markers(s) => {
            if let Ok(t) = Template::parse(s) {
                out.extend(t.names());
            }
        }
        Value::Array(a) => a.iter().for_each(|x| references(x, out)),
        Value::Object(m) => m.values().for_each(|x| references(x, out)),
        _ => {}
    }
}

fn walk(v: Value, cx: &LoadContext<'_>, path: &str) -> Result<Value, YamlError> {
    if run_time(path) {
        return Ok(v);
    }
    let child = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    Ok(match v {
        Value::String(s) => render_string(s, cx, path)?,
        Value::Array(a) => Value::Array(
            a.into_iter()
                .enumerate()
                .map(|(i, x)| walk(x, cx, &child(&i.to_string())))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| {
                    let r = walk(x, cx, &child(&k))?;
                    Ok((k, r))
                })
                .collect::<Result<_, YamlError>>()?,
        ),
        other => other,
    })
}

/// AIPerf's rendering of one string: left as written without `{{ … }}` or `{%` (or under a
/// request-template field), else rendered and coerced to a bool, int or float when it reads as
/// one.
fn render_string(s: String, cx: &LoadContext<'_>, path: &str) -> Result<Value, YamlError> {
    let field = path.rsplit('.').next().unwrap_or("");
    if SKIP.contains(&field) {
        return Ok(Value::String(s));
    }
    let at = |e: String| YamlError::Template(format!("Jinja2 template error at '{path}': {e}"));
    if s.contains("{{") && !s.contains("}}") {
        return Err(at(
            "unbalanced '{{' with no closing '}}' in template.".into()
        ));
    }
    if s.contains("{%") && !s.contains("%}") {
        return Err(at(
            "unbalanced '{%' with no closing '%}' in template.".into()
        ));
    }
    if !has_markers(&s) {
        return Ok(Value::String(s));
    }
    let text = Template::parse(&s).and_then(|t| t.render(cx)).map_err(at)?;
    Ok(coerce(&text).map_err(at)?.to_json())
}
