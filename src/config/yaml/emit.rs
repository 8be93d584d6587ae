//! Block YAML from JSON values, in the layout Python's YAML dumpers give (a list's items at its
//! key's indent, `{}` / `[]` for empty collections, strings plain when they read back as
//! themselves): what `config expand --format yaml` prints and `.aiperf-plot-config.yaml` holds.

use serde_json::Value;

/// `v` as block YAML at `indent`, in the layout PyYAML's `safe_dump` gives (a list's items at
/// its key's indent, `{}` / `[]` for empty ones).
pub(crate) fn yaml_block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                out.push_str(&format!("{pad}{}:", yaml_scalar(&Value::String(k.clone()))));
                match x {
                    Value::Object(n) if !n.is_empty() => {
                        out.push('\n');
                        yaml_block(x, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        yaml_block(x, indent, out);
                    }
                    _ => out.push_str(&format!(" {}\n", yaml_scalar(x))),
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for x in a {
                match x {
                    Value::Object(n) if !n.is_empty() => {
                        // The first key on the dash's line, the others under it.
                        let mut inner = String::new();
                        yaml_block(x, indent + 2, &mut inner);
                        let rest = &inner[indent + 2..];
                        out.push_str(&format!("{pad}- {rest}"));
                    }
                    Value::Array(b) if !b.is_empty() => {
                        out.push_str(&format!("{pad}-\n"));
                        yaml_block(x, indent + 2, out);
                    }
                    _ => out.push_str(&format!("{pad}- {}\n", yaml_scalar(x))),
                }
            }
        }
        _ => out.push_str(&format!("{pad}{}\n", yaml_scalar(v))),
    }
}

/// A scalar (or empty collection) on one line: a string plain when it reads back as itself,
/// else quoted.
pub(crate) fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        Value::String(s) => {
            let lower = s.to_ascii_lowercase();
            let special = matches!(
                lower.as_str(),
                "" | "~"
                    | "null"
                    | "true"
                    | "false"
                    | "yes"
                    | "no"
                    | "on"
                    | "off"
                    | ".inf"
                    | "-.inf"
                    | ".nan"
            );
            let plain = !special
                && s.parse::<f64>().is_err()
                && !s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
                && !s.ends_with(' ')
                && !s.contains(": ")
                && !s.contains(" #")
                && s.chars().all(|c| !c.is_control());
            if plain {
                s.clone()
            } else if s.chars().any(char::is_control) {
                serde_json::to_string(s).unwrap_or_default()
            } else {
                format!("'{}'", s.replace('\'', "''"))
            }
        }
    }
}
