//! The Python `str` and `dict` methods chat templates call (`message.content.strip()`,
//! `messages[0]['role'].startswith(…)`, `tool.items()`, …), which Jinja2 gets from Python and
//! minijinja does not have: minijinja's unknown-method callback for
//! [`super::chat_template`]. A method not listed here stays minijinja's "unknown method" error.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, State, Value};

/// minijinja's unknown-method callback: `value.name(args…)`.
pub(super) fn call_method(
    _state: &mut State<'_, '_>,
    value: &Value,
    name: &str,
    args: &[Value],
) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), name, args),
        ValueKind::Map => map_method(value, name, args),
        _ => Err(Error::from(ErrorKind::UnknownMethod)),
    }
}

fn bad_args(name: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("wrong arguments to str.{name}()"),
    )
}

/// The `i`-th argument as a string, if given and not none.
fn str_arg<'a>(args: &'a [Value], i: usize, name: &str) -> Result<Option<&'a str>, Error> {
    match args.get(i) {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v.as_str().map(Some).ok_or_else(|| bad_args(name)),
    }
}

/// Python's `str.strip` family: `chars` (default: whitespace) removed from the `left` / `right`.
fn strip(s: &str, chars: Option<&str>, left: bool, right: bool) -> String {
    let keep = |c: char| match chars {
        Some(set) => !set.contains(c),
        None => !c.is_whitespace(),
    };
    let mut t = s;
    if left {
        t = t.trim_start_matches(|c: char| !keep(c));
    }
    if right {
        t = t.trim_end_matches(|c: char| !keep(c));
    }
    t.to_owned()
}

/// `startswith` / `endswith`: a string or a sequence of strings.
fn affix(
    s: &str,
    arg: Option<&Value>,
    name: &str,
    test: fn(&str, &str) -> bool,
) -> Result<Value, Error> {
    let arg = arg.ok_or_else(|| bad_args(name))?;
    if let Some(p) = arg.as_str() {
        return Ok(Value::from(test(s, p)));
    }
    for p in arg.try_iter().map_err(|_| bad_args(name))? {
        if test(s, p.as_str().ok_or_else(|| bad_args(name))?) {
            return Ok(Value::from(true));
        }
    }
    Ok(Value::from(false))
}

/// Python's `str.split(sep=None, maxsplit=-1)`.
fn split(s: &str, sep: Option<&str>, maxsplit: Option<i64>) -> Result<Value, Error> {
    let max = maxsplit.filter(|m| *m >= 0).map(|m| m as usize);
    let parts: Vec<Value> = match sep {
        Some("") => return Err(Error::new(ErrorKind::InvalidOperation, "empty separator")),
        Some(sep) => match max {
            Some(m) => s.splitn(m + 1, sep).map(Value::from).collect(),
            None => s.split(sep).map(Value::from).collect(),
        },
        None => {
            // Runs of whitespace separate; leading and trailing whitespace is dropped.
            let mut out = Vec::new();
            let mut rest = s.trim_start();
            while !rest.is_empty() {
                if max.is_some_and(|m| out.len() == m) {
                    out.push(Value::from(rest));
                    break;
                }
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                out.push(Value::from(&rest[..end]));
                rest = rest[end..].trim_start();
            }
            out
        }
    };
    Ok(Value::from(parts))
}

fn string_method(s: &str, name: &str, args: &[Value]) -> Result<Value, Error> {
    let int_arg = |i: usize| args.get(i).and_then(Value::as_i64);
    Ok(match name {
        "strip" => Value::from(strip(s, str_arg(args, 0, name)?, true, true)),
        "lstrip" => Value::from(strip(s, str_arg(args, 0, name)?, true, false)),
        "rstrip" => Value::from(strip(s, str_arg(args, 0, name)?, false, true)),
        "startswith" => affix(s, args.first(), name, |s, p| s.starts_with(p))?,
        "endswith" => affix(s, args.first(), name, |s, p| s.ends_with(p))?,
        "split" => split(s, str_arg(args, 0, name)?, int_arg(1))?,
        "upper" => Value::from(s.to_uppercase()),
        "lower" => Value::from(s.to_lowercase()),
        "title" => Value::from(title(s)),
        "capitalize" => {
            let mut c = s.chars();
            Value::from(match c.next() {
                Some(f) => f
                    .to_uppercase()
                    .chain(c.as_str().to_lowercase().chars())
                    .collect(),
                None => String::new(),
            })
        }
        "replace" => {
            let (Some(from), Some(to)) = (str_arg(args, 0, name)?, str_arg(args, 1, name)?) else {
                return Err(bad_args(name));
            };
            Value::from(match int_arg(2).filter(|n| *n >= 0) {
                Some(n) => s.replacen(from, to, n as usize),
                None => s.replace(from, to),
            })
        }
        "find" => {
            let needle = str_arg(args, 0, name)?.ok_or_else(|| bad_args(name))?;
            Value::from(match s.find(needle) {
                Some(byte) => s[..byte].chars().count() as i64,
                None => -1,
            })
        }
        "count" => {
            let needle = str_arg(args, 0, name)?.ok_or_else(|| bad_args(name))?;
            Value::from(if needle.is_empty() {
                s.chars().count() + 1
            } else {
                s.matches(needle).count()
            })
        }
        "join" => {
            let items = args.first().ok_or_else(|| bad_args(name))?;
            let parts = items
                .try_iter()?
                .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| bad_args(name)))
                .collect::<Result<Vec<_>, _>>()?;
            Value::from(parts.join(s))
        }
        "isdigit" => Value::from(!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())),
        "isspace" => Value::from(!s.is_empty() && s.chars().all(char::is_whitespace)),
        _ => return Err(Error::from(ErrorKind::UnknownMethod)),
    })
}

/// Python's `str.title`: the first letter of each run of letters upper-cased, the rest lower.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_letter = false;
    for c in s.chars() {
        if prev_letter {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        prev_letter = c.is_alphabetic();
    }
    out
}

fn map_method(map: &Value, name: &str, args: &[Value]) -> Result<Value, Error> {
    let keys = || -> Result<Vec<Value>, Error> { Ok(map.try_iter()?.collect()) };
    Ok(match name {
        "items" => Value::from(
            keys()?
                .into_iter()
                .map(|k| {
                    let v = map.get_item(&k)?;
                    Ok(Value::from(vec![k, v]))
                })
                .collect::<Result<Vec<_>, Error>>()?,
        ),
        "keys" => Value::from(keys()?),
        "values" => Value::from(
            keys()?
                .iter()
                .map(|k| map.get_item(k))
                .collect::<Result<Vec<_>, Error>>()?,
        ),
        "get" => {
            let key = args.first().ok_or_else(|| bad_args(name))?;
            let v = map.get_item(key)?;
            if v.is_undefined() {
                args.get(1).cloned().unwrap_or(Value::from(()))
            } else {
                v
            }
        }
        _ => return Err(Error::from(ErrorKind::UnknownMethod)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str) -> String {
        let mut env = minijinja::Environment::new();
        env.set_unknown_method_callback(call_method);
        env.render_str(
            src,
            minijinja::context! {d => minijinja::context!{b => 2, a => 1}},
        )
        .unwrap()
    }

    // Expected values: what CPython 3.11 prints for the same expressions.
    #[test]
    fn string_methods_as_python() {
        assert_eq!(render("{{ '  a b \n'.strip() }}|"), "a b|");
        assert_eq!(
            render("{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}"),
            "axx|xxa"
        );
        assert_eq!(render("{{ ' a  b c '.split() }}"), "['a', 'b', 'c']");
        assert_eq!(render("{{ 'a,b,,c'.split(',') }}"), "['a', 'b', '', 'c']");
        assert_eq!(render("{{ 'a b c'.split(none, 1) }}"), "['a', 'b c']");
        assert_eq!(render("{{ 'a,b,c'.split(',', 1) }}"), "['a', 'b,c']");
        assert_eq!(render("{{ 'abc'.startswith(('x', 'a')) }}"), "True");
        assert_eq!(render("{{ 'abc'.endswith('x') }}"), "False");
        assert_eq!(render("{{ 'hello wORLD'.title() }}"), "Hello World");
        assert_eq!(render("{{ 'hELLO'.capitalize() }}"), "Hello");
        assert_eq!(render("{{ 'aaa'.replace('a', 'b', 2) }}"), "bba");
        assert_eq!(
            render("{{ 'héllo'.find('l') }}|{{ 'x'.find('y') }}"),
            "2|-1"
        );
        assert_eq!(render("{{ '-'.join(['a', 'b']) }}"), "a-b");
    }

    #[test]
    fn dict_methods_keep_insertion_order() {
        assert_eq!(
            render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"),
            "b=2;a=1;"
        );
        assert_eq!(
            render("{{ d.get('a') }}|{{ d.get('z', 9) }}|{{ d.get('z') }}"),
            "1|9|None"
        );
    }

    #[test]
    fn an_unknown_method_stays_an_error() {
        let mut env = minijinja::Environment::new();
        env.set_unknown_method_callback(call_method);
        let err = env.render_str("{{ 'a'.zfill(3) }}", ()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnknownMethod);
    }
}
