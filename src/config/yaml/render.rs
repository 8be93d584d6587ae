//! `${VAR}` substitution and the Jinja2 subset of config files.
//!
//! Environment: `${NAME}` and `${NAME:default}` anywhere in a string value (`NAME` is
//! `[A-Za-z_][A-Za-z0-9_]*`); a value that is one reference and nothing else becomes a bool,
//! int or float when it reads as one, as AIPerf does. An unset `NAME` without a default is an
//! error; a `${` left unclosed is an error.
//!
//! Jinja2, the subset AIPerf's own templates use: `{{ expr }}` in a string value, where `expr`
//! is a name from the top-level `variables:` block, a number, or two of those joined by one of
//! `+ - * / // %` (`{{ base * 4 }}`, `{{ isl // 10 }}`). Variables may use other variables.
//! Python's arithmetic: int with int stays int except `/`; a value that is a single `{{ }}`
//! becomes a number. Anything else — `{% %}` blocks, `{# #}` comments, filters (`|`), calls,
//! attribute paths (`phases.profiling.rate`), strings — is refused by name, never rendered
//! wrongly. Fields named `template`, `body` and `payload_template` are left as written (they are
//! request templates, rendered per request).

use serde_json::{Map, Value};

use super::YamlError;

type Vars = std::collections::BTreeMap<String, Num>;

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
        coerce(&out)
    } else {
        Value::String(out)
    })
}

/// AIPerf's scalar coercion of a rendered value: `true`/`false` (any case), int, float, else
/// the string.
fn coerce(s: &str) -> Value {
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

/// A number as Jinja2 computes it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    fn json(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => Value::from(f),
        }
    }
    /// Python's `str()` of the number.
    fn text(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) if f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            Num::Float(f) => f.to_string(),
        }
    }
}

/// Renders the `{{ }}` expressions of every string value (see the module documentation).
pub(super) fn render_templates(v: Value) -> Result<Value, YamlError> {
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
    let resolved = resolve_variables(&vars)?;
    root.remove("variables");
    let mut out = walk(Value::Object(root), &resolved, "")?;
    if let Value::Object(m) = &mut out
        && !vars.is_empty()
    {
        m.insert(
            "variables".into(),
            Value::Object(resolved.into_iter().map(|(k, n)| (k, n.json())).collect()),
        );
    }
    Ok(out)
}

fn resolve_variables(vars: &Map<String, Value>) -> Result<Vars, YamlError> {
    let mut done: Vars = Vars::new();
    let mut pending: Vec<(&String, &Value)> = vars.iter().collect();
    while !pending.is_empty() {
        let before = pending.len();
        let mut still = Vec::new();
        for (k, v) in pending {
            match render_var(v, &done, vars) {
                Ok(Some(n)) => {
                    done.insert(k.clone(), n);
                }
                Ok(None) => still.push((k, v)),
                Err(e) => return Err(e),
            }
        }
        if still.len() == before {
            let names: Vec<&str> = still.iter().map(|(k, _)| k.as_str()).collect();
            return Err(YamlError::Template(format!(
                "Circular reference among variables: {}",
                names.join(", ")
            )));
        }
        pending = still;
    }
    Ok(done)
}

/// A variable's value, `None` while it waits on another variable.
fn render_var(v: &Value, done: &Vars, all: &Map<String, Value>) -> Result<Option<Num>, YamlError> {
    if let Some(i) = v.as_i64() {
        return Ok(Some(Num::Int(i)));
    }
    if let Some(f) = v.as_f64() {
        return Ok(Some(Num::Float(f)));
    }
    let Some(s) = v.as_str() else {
        return Err(YamlError::Template(
            "variables: only numbers and `{{ }}` arithmetic are supported".into(),
        ));
    };
    if let Some(expr) = single_expr(s) {
        for name in names_in(expr) {
            if all.contains_key(name) && !done.contains_key(name) {
                return Ok(None);
            }
        }
        return eval(expr, done).map(Some);
    }
    match coerce(s) {
        Value::Number(n) => Ok(Some(match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(0.0)),
        })),
        _ => Err(YamlError::Template(format!(
            "variables: '{s}' is not a number (ringperf's templating subset computes numbers only)"
        ))),
    }
}

/// `{{ expr }}` when `s` is exactly one expression.
fn single_expr(s: &str) -> Option<&str> {
    let t = s.trim();
    let inner = t.strip_prefix("{{")?.strip_suffix("}}")?;
    (!inner.contains("{{") && !inner.contains("}}")).then_some(inner)
}

fn names_in(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| is_name(w))
}

fn walk(v: Value, vars: &Vars, key: &str) -> Result<Value, YamlError> {
    Ok(match v {
        Value::String(s) if SKIP.contains(&key) => Value::String(s),
        Value::String(s) => render_string(&s, vars)?,
        Value::Array(a) => Value::Array(
            a.into_iter()
                .map(|x| walk(x, vars, key))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| {
                    let r = walk(x, vars, &k)?;
                    Ok((k, r))
                })
                .collect::<Result<_, YamlError>>()?,
        ),
        other => other,
    })
}

fn render_string(s: &str, vars: &Vars) -> Result<Value, YamlError> {
    for (open, what) in [("{%", "`{% %}` blocks"), ("{#", "`{# #}` comments")] {
        if s.contains(open) {
            return Err(unsupported(s, what));
        }
    }
    if !s.contains("{{") {
        return Ok(Value::String(s.to_string()));
    }
    if let Some(expr) = single_expr(s) {
        return Ok(eval(expr, vars)?.json());
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("{{") {
        let Some(end) = rest[at..].find("}}") else {
            return Err(YamlError::Template(format!("unclosed '{{{{' in '{s}'")));
        };
        out.push_str(&rest[..at]);
        out.push_str(&eval(&rest[at + 2..at + end], vars)?.text());
        rest = &rest[at + end + 2..];
    }
    out.push_str(rest);
    Ok(coerce(&out))
}

fn unsupported(s: &str, what: &str) -> YamlError {
    YamlError::Template(format!(
        "'{s}': {what} are outside ringperf's Jinja2 subset (`{{{{ var }}}}` and one arithmetic \
         operator between variables and numbers); see docs/config-files.md"
    ))
}

fn eval(expr: &str, vars: &Vars) -> Result<Num, YamlError> {
    let e = expr.trim();
    if e.contains('|') {
        return Err(unsupported(e, "filters (`|`)"));
    }
    if e.contains('(') || e.contains('[') || e.contains('\'') || e.contains('"') {
        return Err(unsupported(e, "calls, subscripts and strings"));
    }
    for op in ["//", "+", "*", "%", "/", "-"] {
        // A leading '-' is the sign of a number, not an operator.
        if let Some(at) = e[1.min(e.len())..].find(op).map(|i| i + 1.min(e.len())) {
            let (l, r) = (e[..at].trim(), e[at + op.len()..].trim());
            return arith(atom(l, vars)?, op, atom(r, vars)?, e);
        }
    }
    atom(e, vars)
}

fn atom(a: &str, vars: &Vars) -> Result<Num, YamlError> {
    if let Ok(i) = a.parse::<i64>() {
        return Ok(Num::Int(i));
    }
    if let Ok(f) = a.parse::<f64>()
        && f.is_finite()
    {
        return Ok(Num::Float(f));
    }
    if is_name(a) {
        return vars.get(a).copied().ok_or_else(|| {
            YamlError::Template(format!("'{a}' is undefined (define it under `variables:`)"))
        });
    }
    if a.contains('.') {
        return Err(unsupported(a, "attribute paths"));
    }
    Err(unsupported(a, "expressions other than one operator"))
}

fn arith(l: Num, op: &str, r: Num, e: &str) -> Result<Num, YamlError> {
    let zero = r.f() == 0.0 && matches!(op, "/" | "//" | "%");
    if zero {
        return Err(YamlError::Template(format!("'{e}': division by zero")));
    }
    Ok(match (l, r) {
        (Num::Int(a), Num::Int(b)) => match op {
            "+" => Num::Int(a.saturating_add(b)),
            "-" => Num::Int(a.saturating_sub(b)),
            "*" => Num::Int(a.saturating_mul(b)),
            "/" => Num::Float(a as f64 / b as f64),
            "//" => Num::Int(a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0)),
            _ => Num::Int(a - b * (a.div_euclid(b) - i64::from(b < 0 && a.rem_euclid(b) != 0))),
        },
        (a, b) => {
            let (a, b) = (a.f(), b.f());
            Num::Float(match op {
                "+" => a + b,
                "-" => a - b,
                "*" => a * b,
                "/" => a / b,
                "//" => (a / b).floor(),
                _ => a - b * (a / b).floor(),
            })
        }
    })
}
