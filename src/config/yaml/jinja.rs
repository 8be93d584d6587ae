//! The part of Jinja2 that config files use, evaluated as Jinja2 evaluates it on Python values.
//!
//! A template is text with `{{ expression }}` and `{# comment #}` tags. An expression is made
//! of names, numbers (`12`, `1_000`, `0.5`, `1e3`), strings (`'…'`, `"…"`, the escapes `\\`,
//! `\'`, `\"`, `\n`, `\t`, `\r`), `true` / `false` / `none`, parentheses, the unary `-` / `+`,
//! the binary `+ - * / // % **` and `~` (concatenation), with Jinja2's precedence, and the
//! filters `default` (`d`), `int`, `float`, `string`, `upper`, `lower` and `round`. Values are
//! Python's: `int` (64 bits here: a larger one is an error, never a wrong number), `float`,
//! `str`, `bool`, `None`; the text of a value is Python's `str()` of it (`1e+16`, `True`).
//!
//! Anything else is refused naming the construct, never rendered differently from AIPerf:
//! `{% %}` blocks, whitespace control (`{{-`), comparisons and `and` / `or` / `not` / `if`,
//! attribute paths (`phases.profiling.rate`), subscripts, calls, list and dict literals, other
//! filters, and operations Python itself refuses (`'a' + 1`, a division by zero).

use std::collections::BTreeMap;

use serde_json::Value;

/// A value as Jinja2 holds it. A list or mapping (`Other`) can be passed around but not
/// computed with or rendered as text (Python's `repr` of it is not reproduced).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    None,
    Other(Value),
    /// A name the context does not have, or a missing attribute or item, with Jinja2's message
    /// (only `default` and the `defined` tests accept it: strict undefined).
    Undefined(String),
}

impl Val {
    /// The value a config file's YAML gives.
    pub(crate) fn of_json(v: &Value) -> Val {
        match v {
            Value::Null => Val::None,
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Val::Str(s.clone()),
            other => Val::Other(other.clone()),
        }
    }

    /// The value as JSON (a float that is not finite is JSON's `null`, as orjson writes it).
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Val::Int(i) => Value::from(*i),
            Val::Float(f) => Value::from(*f),
            Val::Str(s) => Value::String(s.clone()),
            Val::Bool(b) => Value::Bool(*b),
            Val::None | Val::Undefined(_) => Value::Null,
            Val::Other(v) => v.clone(),
        }
    }

    /// Python's `str()` of the value.
    pub(crate) fn text(&self) -> Result<String, String> {
        Ok(match self {
            Val::Int(i) => i.to_string(),
            Val::Float(f) => py_float_repr(*f),
            Val::Str(s) => s.clone(),
            Val::Bool(true) => "True".into(),
            Val::Bool(false) => "False".into(),
            Val::None => "None".into(),
            Val::Other(v) => py_repr(v),
            Val::Undefined(why) => return Err(why.clone()),
        })
    }

    /// Python's truth value; an undefined value has none (strict undefined).
    fn truth(&self) -> Result<bool, String> {
        match self {
            Val::Undefined(why) => Err(why.clone()),
            v => Ok(v.truthy()),
        }
    }

    /// Python's truth value.
    fn truthy(&self) -> bool {
        match self {
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::Bool(b) => *b,
            Val::None | Val::Undefined(_) => false,
            Val::Other(v) => match v {
                Value::Array(a) => !a.is_empty(),
                Value::Object(m) => !m.is_empty(),
                _ => true,
            },
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Val::Int(_) => "int",
            Val::Float(_) => "float",
            Val::Str(_) => "str",
            Val::Bool(_) => "bool",
            Val::None => "NoneType",
            Val::Other(Value::Array(_)) => "list",
            Val::Other(_) => "dict",
            Val::Undefined(_) => "Undefined",
        }
    }
}

/// What a template's names resolve to.
pub(crate) trait Context {
    /// The value of `name`: `Ok(None)` when undefined, `Err` when ringperf refuses to read it
    /// (a config value AIPerf would look up).
    fn get(&self, name: &str) -> Result<Option<Val>, String>;
}

impl Context for BTreeMap<String, Val> {
    fn get(&self, name: &str) -> Result<Option<Val>, String> {
        Ok(BTreeMap::get(self, name).cloned())
    }
}

/// Why a template is outside the subset: the construct, named.
pub(crate) fn refusal(what: &str) -> String {
    format!(
        "{what} is outside ringperf's Jinja2 subset (expressions of names, literals, lists, \
         attributes, items, arithmetic, comparisons and `and` / `or` / `not` / `if`, the filters \
         and tests docs/config-files.md lists, `{{% if %}}`, `{{% for %}}` and `{{% set %}}`)"
    )
}
/// Whether AIPerf renders `s` at all: it holds `{{` and `}}`, or `{%`.
pub(crate) fn has_markers(s: &str) -> bool {
    (s.contains("{{") && s.contains("}}")) || s.contains("{%")
}

/// One node of a template.
#[derive(Debug)]
enum Node {
    Text(String),
    Expr(Expr),
    /// `{% if %}` with its `{% elif %}` branches, then what `{% else %}` holds.
    If(Vec<(Expr, Vec<Node>)>, Vec<Node>),
    /// `{% for var in iter %}` and what its `{% else %}` holds (run when `iter` is empty).
    For {
        var: String,
        iter: Expr,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// `{% set name = expr %}`.
    Set(String, Expr),
}

/// A template, parsed.
#[derive(Debug)]
pub(crate) struct Template(Vec<Node>);

/// A tag or the text between tags, whitespace control applied to the text.
#[derive(Debug)]
enum Seg {
    Text(String),
    Expr(String),
    Block(String),
}

/// The template's tags and texts, in order. A `-` just inside a tag's delimiter strips the
/// whitespace before (`{{-`) or after (`-}}`) it, as Jinja2 does; `+` changes nothing with
/// AIPerf's settings (no `trim_blocks`, no `lstrip_blocks`).
fn segments(src: &str) -> Result<Vec<Seg>, String> {
    let mut out: Vec<Seg> = Vec::new();
    let mut rest = src;
    let mut strip_next = false;
    loop {
        let next = ["{{", "{%", "{#"]
            .iter()
            .filter_map(|m| rest.find(m).map(|i| (i, *m)))
            .min();
        let (text, tag) = match next {
            Some((at, marker)) => (&rest[..at], Some((at, marker))),
            None => (rest, None),
        };
        let mut text = newlines(text);
        if strip_next {
            text = text.trim_start().to_owned();
        }
        let Some((at, marker)) = tag else {
            if !text.is_empty() {
                out.push(Seg::Text(text));
            }
            break;
        };
        let after = &rest[at + 2..];
        if after.starts_with('-') {
            text = text.trim_end().to_owned();
        }
        if !text.is_empty() {
            out.push(Seg::Text(text));
        }
        let (close, len) = match marker {
            "{#" => (
                after
                    .find("#}")
                    .ok_or_else(|| "Missing end of comment tag".to_string())?,
                2,
            ),
            "{%" => (tag_end(after, "%}")?, 2),
            _ => (tag_end(after, "}}")?, 2),
        };
        let mut inner = &after[..close];
        if let Some(r) = inner.strip_prefix(['-', '+']) {
            inner = r;
        }
        strip_next = inner.ends_with('-');
        if let Some(r) = inner.strip_suffix(['-', '+']) {
            inner = r;
        }
        match marker {
            "{#" => {}
            "{%" => out.push(Seg::Block(inner.trim().to_owned())),
            _ => out.push(Seg::Expr(inner.to_owned())),
        }
        rest = &after[close + len..];
    }
    Ok(out)
}

/// The block tags ringperf evaluates.
const BLOCKS: &[&str] = &["if", "elif", "else", "endif", "for", "endfor", "set"];

impl Template {
    /// Parses `src`.
    ///
    /// # Errors
    /// A construct outside the subset (named) or a syntax error.
    pub(crate) fn parse(src: &str) -> Result<Template, String> {
        let segs = segments(src)?;
        let mut at = 0;
        let (nodes, end) = parse_nodes(&segs, &mut at, &[])?;
        if let Some(tag) = end {
            return Err(format!("Encountered unknown tag '{tag}'."));
        }
        Ok(Template(nodes))
    }

    /// The names the template reads.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        names_of(&self.0, &mut out);
        out
    }

    /// Renders the template against `cx`.
    ///
    /// # Errors
    /// An undefined name, an operation Python refuses, or a value outside the subset.
    pub(crate) fn render(&self, cx: &dyn Context) -> Result<String, String> {
        let mut out = String::new();
        let mut scope = Scope {
            parent: cx,
            locals: BTreeMap::new(),
        };
        render_nodes(&self.0, &mut scope, &mut out)?;
        Ok(out)
    }
}

/// The first word of a block tag and the rest.
fn keyword(tag: &str) -> (&str, &str) {
    let end = tag
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(tag.len());
    (&tag[..end], tag[end..].trim())
}

/// Nodes up to a block tag whose keyword is one of `until` (returned with the tag), or the end.
fn parse_nodes<'s>(
    segs: &'s [Seg],
    at: &mut usize,
    until: &[&str],
) -> Result<(Vec<Node>, Option<&'s str>), String> {
    let mut nodes = Vec::new();
    while let Some(seg) = segs.get(*at) {
        *at += 1;
        match seg {
            Seg::Text(t) => nodes.push(Node::Text(t.clone())),
            Seg::Expr(e) => nodes.push(Node::Expr(parse_expr(e)?)),
            Seg::Block(tag) => {
                let (kw, rest) = keyword(tag);
                if until.contains(&kw) {
                    return Ok((nodes, Some(tag.as_str())));
                }
                match kw {
                    "if" => nodes.push(parse_if(segs, at, rest)?),
                    "for" => nodes.push(parse_for(segs, at, rest)?),
                    "set" => {
                        let (name, expr) = rest
                            .split_once('=')
                            .filter(|(_, e)| !e.starts_with('='))
                            .map(|(n, e)| (n.trim(), e))
                            .ok_or_else(|| refusal("a `{% set %}` block without `=`"))?;
                        if !is_ident(name) {
                            return Err(refusal(&format!("`{{% set {name} %}}`")));
                        }
                        nodes.push(Node::Set(name.to_owned(), parse_expr(expr)?));
                    }
                    k if BLOCKS.contains(&k) => {
                        return Err(format!("Encountered unknown tag '{k}'."));
                    }
                    k => return Err(refusal(&format!("the `{{% {k} %}}` block"))),
                }
            }
        }
    }
    Ok((nodes, None))
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&s)
}

fn parse_if(segs: &[Seg], at: &mut usize, test: &str) -> Result<Node, String> {
    let mut branches = Vec::new();
    let mut test = parse_expr(test)?;
    loop {
        let (body, end) = parse_nodes(segs, at, &["elif", "else", "endif"])?;
        branches.push((test, body));
        let Some(end) = end else {
            return Err(
                "Unexpected end of template. Jinja was looking for the following tags: \
                        'elif' or 'else' or 'endif'."
                    .into(),
            );
        };
        match keyword(end) {
            ("elif", rest) => test = parse_expr(rest)?,
            ("else", _) => {
                let (otherwise, end) = parse_nodes(segs, at, &["endif"])?;
                if end.is_none() {
                    return Err("Unexpected end of template. Jinja was looking for the \
                                following tags: 'endif'."
                        .into());
                }
                return Ok(Node::If(branches, otherwise));
            }
            _ => return Ok(Node::If(branches, Vec::new())),
        }
    }
}

fn parse_for(segs: &[Seg], at: &mut usize, head: &str) -> Result<Node, String> {
    let (var, iter) = head
        .split_once(" in ")
        .map(|(v, i)| (v.trim(), i.trim()))
        .ok_or_else(|| refusal("a `{% for %}` block without `in`"))?;
    if !is_ident(var) {
        return Err(refusal(&format!("the loop target `{var}` (one name only)")));
    }
    let iter = parse_expr(iter)?;
    let (body, end) = parse_nodes(segs, at, &["else", "endfor"])?;
    let otherwise = match end.map(keyword) {
        None => {
            return Err(
                "Unexpected end of template. Jinja was looking for the following tags: \
                        'endfor' or 'else'."
                    .into(),
            );
        }
        Some(("else", _)) => {
            let (otherwise, end) = parse_nodes(segs, at, &["endfor"])?;
            if end.is_none() {
                return Err(
                    "Unexpected end of template. Jinja was looking for the following \
                            tags: 'endfor'."
                        .into(),
                );
            }
            otherwise
        }
        Some(_) => Vec::new(),
    };
    Ok(Node::For {
        var: var.to_owned(),
        iter,
        body,
        otherwise,
    })
}

fn names_of(nodes: &[Node], out: &mut Vec<String>) {
    for n in nodes {
        match n {
            Node::Text(_) => {}
            Node::Expr(e) | Node::Set(_, e) => e.names(out),
            Node::If(branches, otherwise) => {
                for (t, b) in branches {
                    t.names(out);
                    names_of(b, out);
                }
                names_of(otherwise, out);
            }
            Node::For {
                iter,
                body,
                otherwise,
                ..
            } => {
                iter.names(out);
                names_of(body, out);
                names_of(otherwise, out);
            }
        }
    }
}

/// The names a template sets, over the context's.
struct Scope<'a> {
    parent: &'a dyn Context,
    locals: BTreeMap<String, Val>,
}

impl Context for Scope<'_> {
    fn get(&self, name: &str) -> Result<Option<Val>, String> {
        match self.locals.get(name) {
            Some(v) => Ok(Some(v.clone())),
            None => self.parent.get(name),
        }
    }
}

/// The items a `{% for %}` walks: a list's, a mapping's keys, a string's characters.
fn items(v: Val) -> Result<Vec<Val>, String> {
    Ok(match defined(v)? {
        Val::Other(Value::Array(a)) => a.iter().map(Val::of_json).collect(),
        Val::Other(Value::Object(m)) => m.keys().map(|k| Val::Str(k.clone())).collect(),
        Val::Str(s) => s.chars().map(|c| Val::Str(c.to_string())).collect(),
        other => return Err(format!("'{}' object is not iterable", other.type_name())),
    })
}

fn render_nodes(nodes: &[Node], scope: &mut Scope<'_>, out: &mut String) -> Result<(), String> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Expr(e) => out.push_str(&eval(e, scope)?.text()?),
            Node::Set(name, e) => {
                let v = eval(e, scope)?;
                scope.locals.insert(name.clone(), v);
            }
            Node::If(branches, otherwise) => {
                let mut taken = false;
                for (test, body) in branches {
                    if eval(test, scope)?.truth()? {
                        render_nodes(body, scope, out)?;
                        taken = true;
                        break;
                    }
                }
                if !taken {
                    render_nodes(otherwise, scope, out)?;
                }
            }
            Node::For {
                var,
                iter,
                body,
                otherwise,
            } => {
                let list = items(eval(iter, scope)?)?;
                if list.is_empty() {
                    render_nodes(otherwise, scope, out)?;
                    continue;
                }
                let len = list.len();
                for (i, item) in list.into_iter().enumerate() {
                    // A loop's names are its own: what it sets does not outlive it (Jinja2's
                    // scoping).
                    let mut inner = Scope {
                        parent: &*scope,
                        locals: BTreeMap::new(),
                    };
                    inner.locals.insert(var.clone(), item);
                    let lp = serde_json::json!({
                        "index": i + 1, "index0": i, "revindex": len - i,
                        "revindex0": len - i - 1, "first": i == 0, "last": i + 1 == len,
                        "length": len,
                    });
                    inner.locals.insert("loop".into(), Val::Other(lp));
                    render_nodes(body, &mut inner, out)?;
                }
            }
        }
    }
    Ok(())
}

/// Where a tag closing with `close` ends, strings skipped.
fn tag_end(s: &str, close: &str) -> Result<usize, String> {
    let b = s.as_bytes();
    let c = close.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        match quote {
            Some(_) if b[i] == b'\\' => i += 1,
            Some(q) if b[i] == q => quote = None,
            Some(_) => {}
            None if b[i] == b'\'' || b[i] == b'"' => quote = Some(b[i]),
            None if b[i..].starts_with(c) => return Ok(i),
            None if b[i] == b'{' => return Err(refusal("a dict literal")),
            None => {}
        }
        i += 1;
    }
    Err(format!("unexpected end of template, expected '{close}'"))
}

/// Jinja2 writes every line break of a template's text as `\n`.
fn newlines(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\r', "\n")
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    Op(&'static str),
}

const OPS: &[&str] = &[
    "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "(", ")", "|", ",", ".", "[",
    "]", "=", "<", ">", ":",
];

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Name(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            let (tok, next) = number(&chars, i)?;
            out.push(tok);
            i = next;
        } else if c == '\'' || c == '"' {
            let mut text = String::new();
            i += 1;
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err("unexpected end of string".into());
                };
                i += 1;
                if ch == c {
                    break;
                }
                if ch == '\\' {
                    let esc = chars.get(i).copied().unwrap_or(' ');
                    i += 1;
                    text.push(match esc {
                        '\\' => '\\',
                        '\'' => '\'',
                        '"' => '"',
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        _ => return Err(refusal(&format!("the string escape `\\{esc}`"))),
                    });
                } else {
                    text.push(ch);
                }
            }
            out.push(Tok::Str(newlines(&text)));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let Some(op) = OPS.iter().find(|o| rest.starts_with(**o)) else {
                return Err(format!("unexpected char {c:?}"));
            };
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Ok(out)
}

/// A number literal at `chars[i]`: Jinja2's decimal integers and floats (`_` between digits).
fn number(chars: &[char], mut i: usize) -> Result<(Tok, usize), String> {
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < chars.len()
            && (chars[*i].is_ascii_digit()
                || (chars[*i] == '_' && chars.get(*i + 1).is_some_and(char::is_ascii_digit)))
        {
            *i += 1;
        }
        chars[start..*i]
            .iter()
            .filter(|c| **c != '_')
            .collect::<String>()
    };
    let int = digits(&mut i);
    let mut float = false;
    let mut text = int.clone();
    if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
        i += 1;
        text.push('.');
        text.push_str(&digits(&mut i));
        float = true;
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        let sign = match chars.get(j) {
            Some(s @ ('+' | '-')) => {
                j += 1;
                s.to_string()
            }
            _ => String::new(),
        };
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            let exp = digits(&mut j);
            text.push('e');
            text.push_str(&sign);
            text.push_str(&exp);
            float = true;
            i = j;
        }
    }
    if chars
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
    {
        return Err(refusal("a number written other than in decimal"));
    }
    if float {
        let f: f64 = text.parse().map_err(|_| format!("bad number {text}"))?;
        return Ok((Tok::Float(f), i));
    }
    if int.len() > 1 && int.starts_with('0') {
        return Err(refusal("an integer with leading zeros"));
    }
    let n: i64 = int
        .parse()
        .map_err(|_| refusal("an integer beyond 64 bits"))?;
    Ok((Tok::Int(n), i))
}

#[derive(Debug)]
enum Expr {
    Const(Val),
    Name(String),
    Neg(Box<Expr>),
    Pos(Box<Expr>),
    Bin(&'static str, Box<Expr>, Box<Expr>),
    Concat(Vec<Expr>),
    Filter {
        name: String,
        arg: Box<Expr>,
        args: Vec<Expr>,
        kwargs: Vec<(String, Expr)>,
    },
    /// `a if test else b` (`b` absent: undefined when the test fails).
    Cond(Box<Expr>, Box<Expr>, Option<Box<Expr>>),
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// A chain of comparisons: `a < b <= c`, each operator with its right operand.
    Cmp(Box<Expr>, Vec<(&'static str, Expr)>),
    /// `a.name`, or `a.0`.
    Attr(Box<Expr>, String),
    /// `a[i]`.
    Item(Box<Expr>, Box<Expr>),
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `a is test` (`negated`: `is not`).
    Test {
        arg: Box<Expr>,
        name: String,
        negated: bool,
    },
}

impl Expr {
    fn names(&self, out: &mut Vec<String>) {
        match self {
            Expr::Const(_) => {}
            Expr::Name(n) => out.push(n.clone()),
            Expr::Neg(e) | Expr::Pos(e) => e.names(out),
            Expr::Bin(_, a, b) => {
                a.names(out);
                b.names(out);
            }
            Expr::Concat(v) => v.iter().for_each(|e| e.names(out)),
            Expr::Filter {
                arg, args, kwargs, ..
            } => {
                arg.names(out);
                args.iter().for_each(|e| e.names(out));
                kwargs.iter().for_each(|(_, e)| e.names(out));
            }
            Expr::Cond(a, t, b) => {
                a.names(out);
                t.names(out);
                if let Some(b) = b {
                    b.names(out);
                }
            }
            Expr::Or(a, b) | Expr::And(a, b) | Expr::Item(a, b) => {
                a.names(out);
                b.names(out);
            }
            Expr::Not(a) | Expr::Attr(a, _) | Expr::Test { arg: a, .. } => a.names(out),
            Expr::Cmp(a, rest) => {
                a.names(out);
                rest.iter().for_each(|(_, e)| e.names(out));
            }
            Expr::List(v) => v.iter().for_each(|e| e.names(out)),
        }
    }
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

fn parse_expr(src: &str) -> Result<Expr, String> {
    let mut p = Parser {
        toks: lex(src)?,
        at: 0,
    };
    if p.toks.is_empty() {
        return Err("Expected an expression, got 'end of print statement'".into());
    }
    let e = p.cond()?;
    match p.peek() {
        None => Ok(e),
        Some(t) => Err(p.unexpected(&t.clone())),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn op(&mut self, ops: &[&'static str]) -> Option<&'static str> {
        match self.peek() {
            Some(Tok::Op(o)) if ops.contains(o) => {
                let o = *o;
                self.at += 1;
                Some(o)
            }
            _ => None,
        }
    }
    fn unexpected(&self, t: &Tok) -> String {
        match t {
            Tok::Op("(") => refusal("a call"),
            Tok::Op(",") => refusal("a tuple"),
            Tok::Name(n) if KEYWORDS.contains(&n.as_str()) => refusal(&format!("`{n}`")),
            Tok::Op(o) => format!("unexpected '{o}'"),
            other => format!("unexpected {other:?}"),
        }
    }
    fn word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Name(n)) if n == w) {
            self.at += 1;
            return true;
        }
        false
    }
    fn cond(&mut self) -> Result<Expr, String> {
        let e = self.or()?;
        if !self.word("if") {
            return Ok(e);
        }
        let test = self.or()?;
        let otherwise = if self.word("else") {
            Some(Box::new(self.cond()?))
        } else {
            None
        };
        Ok(Expr::Cond(Box::new(e), Box::new(test), otherwise))
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut l = self.and()?;
        while self.word("or") {
            l = Expr::Or(Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut l = self.not()?;
        while self.word("and") {
            l = Expr::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.compare()
    }
    fn compare(&mut self) -> Result<Expr, String> {
        let first = self.math1()?;
        let mut rest = Vec::new();
        loop {
            let op = if let Some(o) = self.op(&["==", "!=", "<=", ">=", "<", ">"]) {
                o
            } else if self.word("in") {
                "in"
            } else if matches!(
                (self.toks.get(self.at), self.toks.get(self.at + 1)),
                (Some(Tok::Name(a)), Some(Tok::Name(b))) if a == "not" && b == "in"
            ) {
                self.at += 2;
                "not in"
            } else {
                break;
            };
            rest.push((op, self.math1()?));
        }
        Ok(if rest.is_empty() {
            first
        } else {
            Expr::Cmp(Box::new(first), rest)
        })
    }
    fn postfix(&mut self, mut node: Expr) -> Result<Expr, String> {
        loop {
            if self.op(&["."]).is_some() {
                let key = match self.peek().cloned() {
                    Some(Tok::Name(n)) => n,
                    Some(Tok::Int(i)) => i.to_string(),
                    _ => return Err("expected a name after '.'".into()),
                };
                self.at += 1;
                node = Expr::Attr(Box::new(node), key);
            } else if self.op(&["["]).is_some() {
                let i = self.cond()?;
                if self.op(&[":"]).is_some() {
                    return Err(refusal("a slice"));
                }
                if self.op(&["]"]).is_none() {
                    return Err("expected ']'".into());
                }
                node = Expr::Item(Box::new(node), Box::new(i));
            } else if let Some(t @ Tok::Op("(")) = self.peek() {
                return Err(self.unexpected(&t.clone()));
            } else {
                return Ok(node);
            }
        }
    }
    fn math1(&mut self) -> Result<Expr, String> {
        let mut l = self.concat()?;
        while let Some(o) = self.op(&["+", "-"]) {
            let r = self.concat()?;
            l = Expr::Bin(o, Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn concat(&mut self) -> Result<Expr, String> {
        let mut parts = vec![self.math2()?];
        while self.op(&["~"]).is_some() {
            parts.push(self.math2()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().expect("one")
        } else {
            Expr::Concat(parts)
        })
    }
    fn math2(&mut self) -> Result<Expr, String> {
        let mut l = self.pow()?;
        while let Some(o) = self.op(&["*", "/", "//", "%"]) {
            let r = self.pow()?;
            l = Expr::Bin(o, Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn pow(&mut self) -> Result<Expr, String> {
        let mut l = self.unary(true)?;
        while self.op(&["**"]).is_some() {
            let r = self.unary(true)?;
            l = Expr::Bin("**", Box::new(l), Box::new(r));
        }
        Ok(l)
    }
    fn unary(&mut self, with_filter: bool) -> Result<Expr, String> {
        let node = if self.op(&["-"]).is_some() {
            Expr::Neg(Box::new(self.unary(false)?))
        } else if self.op(&["+"]).is_some() {
            Expr::Pos(Box::new(self.unary(false)?))
        } else {
            let p = self.primary()?;
            self.postfix(p)?
        };
        if with_filter {
            return self.filters(node);
        }
        Ok(node)
    }
    fn primary(&mut self) -> Result<Expr, String> {
        let Some(t) = self.peek().cloned() else {
            return Err("unexpected end of expression".into());
        };
        self.at += 1;
        Ok(match t {
            Tok::Name(n) => match n.as_str() {
                "true" | "True" => Expr::Const(Val::Bool(true)),
                "false" | "False" => Expr::Const(Val::Bool(false)),
                "none" | "None" => Expr::Const(Val::None),
                k if KEYWORDS.contains(&k) => return Err(refusal(&format!("`{k}`"))),
                _ => Expr::Name(n),
            },
            Tok::Int(i) => Expr::Const(Val::Int(i)),
            Tok::Float(f) => Expr::Const(Val::Float(f)),
            Tok::Str(mut s) => {
                // Adjacent string literals are one string, as in Python.
                while let Some(Tok::Str(more)) = self.peek() {
                    s.push_str(more);
                    self.at += 1;
                }
                Expr::Const(Val::Str(s))
            }
            Tok::Op("[") => {
                let mut items = Vec::new();
                while self.op(&["]"]).is_none() {
                    if !items.is_empty() && self.op(&[","]).is_none() {
                        return Err("expected ',' or ']' in a list".into());
                    }
                    if self.op(&["]"]).is_some() {
                        break;
                    }
                    items.push(self.cond()?);
                }
                Expr::List(items)
            }
            Tok::Op("(") => {
                let e = self.cond()?;
                if self.op(&[")"]).is_none() {
                    return Err(match self.peek() {
                        Some(t) => self.unexpected(&t.clone()),
                        None => "unexpected end of expression, expected ')'".into(),
                    });
                }
                e
            }
            other => return Err(self.unexpected(&other)),
        })
    }
    fn filters(&mut self, mut node: Expr) -> Result<Expr, String> {
        loop {
            if self.word("is") {
                let negated = self.word("not");
                let Some(Tok::Name(name)) = self.peek().cloned() else {
                    return Err("expected a test name after 'is'".into());
                };
                self.at += 1;
                if !TESTS.contains(&name.as_str()) {
                    return Err(refusal(&format!("the test `{name}`")));
                }
                node = Expr::Test {
                    arg: Box::new(node),
                    name,
                    negated,
                };
                continue;
            }
            if self.op(&["|"]).is_none() {
                break;
            }
            let Some(Tok::Name(name)) = self.peek().cloned() else {
                return Err("expected a filter name after '|'".into());
            };
            self.at += 1;
            if !FILTERS.contains(&name.as_str()) {
                return Err(refusal(&format!("the filter `{name}`")));
            }
            let (mut args, mut kwargs) = (Vec::new(), Vec::new());
            if self.op(&["("]).is_some() {
                while self.op(&[")"]).is_none() {
                    if !args.is_empty() || !kwargs.is_empty() {
                        if self.op(&[","]).is_none() {
                            return Err("expected ',' or ')' in the filter's arguments".into());
                        }
                        if self.op(&[")"]).is_some() {
                            break;
                        }
                    }
                    if let (Some(Tok::Name(k)), Some(Tok::Op("="))) =
                        (self.toks.get(self.at).cloned(), self.toks.get(self.at + 1))
                    {
                        self.at += 2;
                        kwargs.push((k, self.cond()?));
                    } else if !kwargs.is_empty() {
                        return Err("a positional argument after a keyword argument".into());
                    } else {
                        args.push(self.cond()?);
                    }
                }
            }
            node = Expr::Filter {
                name,
                arg: Box::new(node),
                args,
                kwargs,
            };
        }
        Ok(node)
    }
}

const KEYWORDS: &[&str] = &["and", "or", "not", "if", "else", "in", "is"];
const FILTERS: &[&str] = &[
    "default", "d", "int", "float", "string", "upper", "lower", "round", "tojson", "replace",
    "length", "count", "join", "trim", "first", "last", "abs",
];
/// The `is` tests ringperf evaluates.
const TESTS: &[&str] = &[
    "defined",
    "undefined",
    "none",
    "number",
    "string",
    "mapping",
    "sequence",
    "boolean",
    "true",
    "false",
    "integer",
    "float",
    "even",
    "odd",
];

fn eval(e: &Expr, cx: &dyn Context) -> Result<Val, String> {
    Ok(match e {
        Expr::Const(v) => v.clone(),
        Expr::Name(n) => cx
            .get(n)?
            .unwrap_or_else(|| Val::Undefined(format!("'{n}' is undefined"))),
        Expr::Neg(x) => match defined(eval(x, cx)?)? {
            Val::Int(i) => Val::Int(i.checked_neg().ok_or_else(overflow)?),
            Val::Bool(b) => Val::Int(-i64::from(b)),
            Val::Float(f) => Val::Float(-f),
            v => return Err(format!("bad operand type for unary -: '{}'", v.type_name())),
        },
        Expr::Pos(x) => match defined(eval(x, cx)?)? {
            Val::Bool(b) => Val::Int(i64::from(b)),
            v @ (Val::Int(_) | Val::Float(_)) => v,
            v => return Err(format!("bad operand type for unary +: '{}'", v.type_name())),
        },
        Expr::Bin(op, a, b) => binary(op, defined(eval(a, cx)?)?, defined(eval(b, cx)?)?)?,
        Expr::Concat(parts) => {
            let mut s = String::new();
            for p in parts {
                s.push_str(&eval(p, cx)?.text()?);
            }
            Val::Str(s)
        }
        Expr::Filter {
            name,
            arg,
            args,
            kwargs,
        } => {
            let v = eval(arg, cx)?;
            let mut params = Vec::new();
            for a in args {
                params.push(defined(eval(a, cx)?)?);
            }
            let mut named = Vec::new();
            for (k, a) in kwargs {
                named.push((k.as_str(), defined(eval(a, cx)?)?));
            }
            filter(name, v, &params, &named)?
        }
        Expr::Cond(a, test, b) => {
            if eval(test, cx)?.truth()? {
                eval(a, cx)?
            } else if let Some(b) = b {
                eval(b, cx)?
            } else {
                // Jinja2 renders a failed `if` without `else` as nothing.
                Val::Str(String::new())
            }
        }
        Expr::Or(a, b) => {
            let l = eval(a, cx)?;
            if l.truth()? { l } else { eval(b, cx)? }
        }
        Expr::And(a, b) => {
            let l = eval(a, cx)?;
            if l.truth()? { eval(b, cx)? } else { l }
        }
        Expr::Not(a) => Val::Bool(!eval(a, cx)?.truth()?),
        Expr::Cmp(first, rest) => {
            let mut l = defined(eval(first, cx)?)?;
            for (op, e) in rest {
                let r = defined(eval(e, cx)?)?;
                if !compare(op, &l, &r)? {
                    return Ok(Val::Bool(false));
                }
                l = r;
            }
            Val::Bool(true)
        }
        Expr::Attr(a, key) => attribute(defined(eval(a, cx)?)?, key),
        Expr::Item(a, i) => item(defined(eval(a, cx)?)?, defined(eval(i, cx)?)?),
        Expr::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for e in items {
                out.push(defined(eval(e, cx)?)?.to_json());
            }
            Val::Other(Value::Array(out))
        }
        Expr::Test { arg, name, negated } => Val::Bool(test(name, eval(arg, cx)?)? != *negated),
    })
}

/// Python's `==` of two values (`1 == 1.0 == True`; a string never equals a number).
fn py_eq(a: &Val, b: &Val) -> bool {
    match (n(a), n(b)) {
        (Some(N::I(x)), Some(N::I(y))) => x == y,
        (Some(x), Some(y)) => x.f() == y.f(),
        _ => match (a, b) {
            (Val::Str(x), Val::Str(y)) => x == y,
            (Val::None, Val::None) => true,
            (Val::Other(x), Val::Other(y)) => x == y,
            _ => false,
        },
    }
}

/// One comparison, as Python makes it: numbers by value, strings by code point; an ordering
/// of other types is Python's `TypeError`.
fn compare(op: &str, a: &Val, b: &Val) -> Result<bool, String> {
    let order = |a: &Val, b: &Val| -> Result<std::cmp::Ordering, String> {
        match (n(a), n(b), a, b) {
            (Some(x), Some(y), ..) => match (x, y) {
                (N::I(x), N::I(y)) => Ok(x.cmp(&y)),
                (x, y) => x.f().partial_cmp(&y.f()).ok_or_else(|| "nan".to_string()),
            },
            (_, _, Val::Str(x), Val::Str(y)) => Ok(x.cmp(y)),
            _ => Err(format!(
                "'{op}' not supported between instances of '{}' and '{}'",
                a.type_name(),
                b.type_name()
            )),
        }
    };
    Ok(match op {
        "==" => py_eq(a, b),
        "!=" => !py_eq(a, b),
        "in" | "not in" => {
            let found = match b {
                Val::Str(h) => match a {
                    Val::Str(x) => h.contains(x.as_str()),
                    other => {
                        return Err(format!(
                            "'in <string>' requires string as left operand, not {}",
                            other.type_name()
                        ));
                    }
                },
                Val::Other(Value::Array(list)) => list.iter().any(|x| py_eq(a, &Val::of_json(x))),
                Val::Other(Value::Object(m)) => match a {
                    Val::Str(k) => m.contains_key(k),
                    _ => false,
                },
                other => {
                    return Err(format!(
                        "argument of type '{}' is not iterable",
                        other.type_name()
                    ));
                }
            };
            found == (op == "in")
        }
        _ => {
            // NaN compares false, as in Python.
            let Ok(o) = order(a, b) else {
                if let (Some(_), Some(_)) = (n(a), n(b)) {
                    return Ok(false);
                }
                return Err(order(a, b).unwrap_err());
            };
            match op {
                "<" => o.is_lt(),
                "<=" => o.is_le(),
                ">" => o.is_gt(),
                _ => o.is_ge(),
            }
        }
    })
}

/// `v.key` as Jinja2 looks it up: a mapping's key, a list's index; else undefined.
fn attribute(v: Val, key: &str) -> Val {
    let found = match &v {
        Val::Other(Value::Object(m)) => m.get(key).map(Val::of_json),
        Val::Other(Value::Array(a)) => key
            .parse::<usize>()
            .ok()
            .and_then(|i| a.get(i))
            .map(Val::of_json),
        _ => None,
    };
    found.unwrap_or_else(|| {
        Val::Undefined(format!(
            "'{} object' has no attribute '{key}'",
            v.type_name()
        ))
    })
}

/// `v[i]`: a list's item (from the end when negative), a mapping's key, a string's character.
fn item(v: Val, i: Val) -> Val {
    let index = |len: usize| match n(&i) {
        Some(N::I(k)) if k < 0 => usize::try_from(-k).ok().and_then(|k| len.checked_sub(k)),
        Some(N::I(k)) => usize::try_from(k).ok().filter(|k| *k < len),
        _ => None,
    };
    let found = match (&v, &i) {
        (Val::Other(Value::Object(m)), Val::Str(k)) => m.get(k).map(Val::of_json),
        (Val::Other(Value::Array(a)), _) => index(a.len()).map(|k| Val::of_json(&a[k])),
        (Val::Str(s), _) => {
            let chars: Vec<char> = s.chars().collect();
            index(chars.len()).map(|k| Val::Str(chars[k].to_string()))
        }
        _ => None,
    };
    found.unwrap_or_else(|| {
        Val::Undefined(format!(
            "{} object has no element {}",
            v.type_name(),
            i.text().unwrap_or_default()
        ))
    })
}

/// `v is name`.
fn test(name: &str, v: Val) -> Result<bool, String> {
    if let Val::Undefined(_) = v {
        return match name {
            "defined" => Ok(false),
            "undefined" => Ok(true),
            _ => defined(v).map(|_| false),
        };
    }
    Ok(match name {
        "defined" => true,
        "undefined" => false,
        "none" => v == Val::None,
        "number" => matches!(v, Val::Int(_) | Val::Float(_) | Val::Bool(_)),
        "integer" => matches!(v, Val::Int(_)),
        "float" => matches!(v, Val::Float(_)),
        "string" => matches!(v, Val::Str(_)),
        "mapping" => matches!(v, Val::Other(Value::Object(_))),
        "sequence" => matches!(v, Val::Str(_) | Val::Other(_)),
        "boolean" => matches!(v, Val::Bool(_)),
        "true" => v == Val::Bool(true),
        "false" => v == Val::Bool(false),
        "even" | "odd" => match n(&v) {
            Some(N::I(i)) => (i % 2 == 0) == (name == "even"),
            Some(N::F(f)) => ((f % 2.0) == 0.0) == (name == "even"),
            None => {
                return Err(format!(
                    "unsupported operand type(s) for %: '{}' and 'int'",
                    v.type_name()
                ));
            }
        },
        _ => return Err(refusal(&format!("the test `{name}`"))),
    })
}

fn defined(v: Val) -> Result<Val, String> {
    match v {
        Val::Undefined(why) => Err(why),
        v => Ok(v),
    }
}

/// Python's `repr()` of a JSON value (what `str()` of a list or dict shows of its items).
fn py_repr(v: &Value) -> String {
    let mut out = String::new();
    ringperf_wire::endpoint::form::python_repr(v, &mut out);
    out
}

fn overflow() -> String {
    refusal("an integer beyond 64 bits")
}

/// A number for arithmetic (`bool` is Python's `int`).
enum N {
    I(i64),
    F(f64),
}

fn n(v: &Val) -> Option<N> {
    match v {
        Val::Int(i) => Some(N::I(*i)),
        Val::Bool(b) => Some(N::I(i64::from(*b))),
        Val::Float(f) => Some(N::F(*f)),
        _ => None,
    }
}

impl N {
    fn f(&self) -> f64 {
        match self {
            N::I(i) => *i as f64,
            N::F(f) => *f,
        }
    }
}

/// The largest integer every `f64` holds exactly: beyond it, an int's true division is not
/// computed through `f64` (Python divides the exact integers).
const EXACT: i64 = 1 << 53;

fn binary(op: &str, a: Val, b: Val) -> Result<Val, String> {
    let unsupported = |a: &Val, b: &Val| {
        format!(
            "unsupported operand type(s) for {op}: '{}' and '{}'",
            a.type_name(),
            b.type_name()
        )
    };
    match (op, &a, &b) {
        ("+", Val::Str(x), Val::Str(y)) => return Ok(Val::Str(format!("{x}{y}"))),
        ("*", Val::Str(s), k) | ("*", k, Val::Str(s))
            if matches!(k, Val::Int(_) | Val::Bool(_)) =>
        {
            let Some(N::I(k)) = n(k) else { unreachable!() };
            let times = usize::try_from(k.max(0)).map_err(|_| overflow())?;
            if s.len().saturating_mul(times) > 1 << 24 {
                return Err(refusal("a string repeated beyond 16 MiB"));
            }
            return Ok(Val::Str(s.repeat(times)));
        }
        ("%", Val::Str(_), _) => return Err(refusal("string formatting (`%` on a string)")),
        _ => {}
    }
    let (Some(x), Some(y)) = (n(&a), n(&b)) else {
        return Err(unsupported(&a, &b));
    };
    if matches!(op, "/" | "//" | "%") && y.f() == 0.0 {
        return Err(match (&x, &y) {
            (N::I(_), N::I(_)) if op == "%" => "integer modulo by zero".into(),
            (N::I(_), N::I(_)) => "division by zero".into(),
            _ if op == "%" => "float modulo".into(),
            _ => "float division by zero".into(),
        });
    }
    Ok(match (x, y) {
        (N::I(x), N::I(y)) => match op {
            "+" => Val::Int(x.checked_add(y).ok_or_else(overflow)?),
            "-" => Val::Int(x.checked_sub(y).ok_or_else(overflow)?),
            "*" => Val::Int(x.checked_mul(y).ok_or_else(overflow)?),
            "/" if x.abs() <= EXACT && y.abs() <= EXACT => Val::Float(x as f64 / y as f64),
            "/" => return Err(refusal("a true division of integers beyond 2**53")),
            "//" | "%" => {
                let (mut q, mut r) = (x.checked_div(y).ok_or_else(overflow)?, x % y);
                if r != 0 && ((r < 0) != (y < 0)) {
                    q -= 1;
                    r += y;
                }
                Val::Int(if op == "//" { q } else { r })
            }
            _ if y >= 0 => Val::Int(
                u32::try_from(y)
                    .ok()
                    .and_then(|e| x.checked_pow(e))
                    .ok_or_else(overflow)?,
            ),
            _ if x == 0 => return Err("0.0 cannot be raised to a negative power".into()),
            _ => Val::Float(float_pow(x as f64, y as f64)?),
        },
        (x, y) => {
            let (x, y) = (x.f(), y.f());
            Val::Float(match op {
                "+" => x + y,
                "-" => x - y,
                "*" => x * y,
                "/" => x / y,
                "//" => py_divmod(x, y).0,
                "%" => py_divmod(x, y).1,
                _ => float_pow(x, y)?,
            })
        }
    })
}

fn float_pow(x: f64, y: f64) -> Result<f64, String> {
    if x < 0.0 && y.fract() != 0.0 && y.is_finite() {
        return Err(refusal(
            "a negative number raised to a fractional power (complex)",
        ));
    }
    if x == 0.0 && y < 0.0 {
        return Err("0.0 cannot be raised to a negative power".into());
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err("(34, 'Numerical result out of range')".into());
    }
    Ok(r)
}

/// Python's `divmod` of two floats (its `float_divmod`): the floored quotient and the modulo
/// with the divisor's sign.
fn py_divmod(vx: f64, wx: f64) -> (f64, f64) {
    let mut m = vx % wx;
    let mut div = (vx - m) / wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(wx);
    }
    let floordiv = if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0.0f64.copysign(vx / wx)
    };
    (floordiv, m)
}

fn filter(name: &str, v: Val, args: &[Val], kwargs: &[(&str, Val)]) -> Result<Val, String> {
    let names: &[&str] = match name {
        "default" | "d" => &["default_value", "boolean"],
        "int" => &["default", "base"],
        "float" => &["default"],
        "round" => &["precision", "method"],
        "tojson" => &["indent"],
        "replace" => &["old", "new", "count"],
        "join" => &["d", "attribute"],
        "trim" => &["chars"],
        _ => &[],
    };
    if args.len() > names.len() {
        return Err(format!("too many arguments to the filter `{name}`"));
    }
    let mut p: Vec<Option<Val>> = vec![None; names.len()];
    for (i, a) in args.iter().enumerate() {
        p[i] = Some(a.clone());
    }
    for (k, a) in kwargs {
        let i = names
            .iter()
            .position(|n| n == k)
            .ok_or_else(|| format!("the filter `{name}` has no argument '{k}'"))?;
        if p[i].is_some() {
            return Err(format!("the filter `{name}` got '{k}' twice"));
        }
        p[i] = Some(a.clone());
    }
    let mut p = p.into_iter();
    let mut next = || p.next().flatten();
    match name {
        "default" | "d" => {
            let default = next().unwrap_or(Val::Str(String::new()));
            let boolean = next().is_some_and(|b| b.truthy());
            Ok(match v {
                Val::Undefined(_) => default,
                v if boolean && !v.truthy() => default,
                v => v,
            })
        }
        "int" => {
            let default = next().unwrap_or(Val::Int(0));
            if let Some(base) = next()
                && base != Val::Int(10)
            {
                return Err(refusal("`int` with a base other than 10"));
            }
            Ok(match defined(v)? {
                Val::Int(i) => Val::Int(i),
                Val::Bool(b) => Val::Int(i64::from(b)),
                Val::Float(f) if f.is_infinite() => {
                    return Err("cannot convert float infinity to integer".into());
                }
                Val::Float(f) if f.is_nan() => default,
                Val::Float(f) => Val::Int(float_to_int(f)?),
                Val::Str(s) => match py_int(&s)? {
                    Some(i) => Val::Int(i),
                    None => match py_float(&s)? {
                        Some(f) if f.is_finite() => Val::Int(float_to_int(f)?),
                        _ => default,
                    },
                },
                _ => default,
            })
        }
        "float" => {
            let default = next().unwrap_or(Val::Float(0.0));
            Ok(match defined(v)? {
                Val::Int(i) => Val::Float(i as f64),
                Val::Bool(b) => Val::Float(f64::from(u8::from(b))),
                Val::Float(f) => Val::Float(f),
                Val::Str(s) => py_float(&s)?.map_or(default, Val::Float),
                _ => default,
            })
        }
        "string" => Ok(Val::Str(defined(v)?.text()?)),
        "upper" => Ok(Val::Str(defined(v)?.text()?.to_uppercase())),
        "lower" => Ok(Val::Str(defined(v)?.text()?.to_lowercase())),
        "round" => {
            let precision = match next() {
                None => 0,
                Some(Val::Int(p)) => p,
                Some(Val::Bool(b)) => i64::from(b),
                Some(other) => {
                    return Err(format!(
                        "'{}' object cannot be interpreted as an integer",
                        other.type_name()
                    ));
                }
            };
            let method = match next() {
                None => "common".to_owned(),
                Some(Val::Str(m)) => m,
                Some(_) => "?".to_owned(),
            };
            if !["common", "ceil", "floor"].contains(&method.as_str()) {
                return Err("method must be common, ceil or floor".into());
            }
            if !(0..=22).contains(&precision) {
                return Err(refusal("`round` to a precision outside 0..=22"));
            }
            let x = match defined(v)? {
                Val::Int(i) => N::I(i),
                Val::Bool(b) => N::I(i64::from(b)),
                Val::Float(f) => N::F(f),
                other => {
                    return Err(format!(
                        "type {} doesn't define __round__ method",
                        other.type_name()
                    ));
                }
            };
            let scale = 10f64.powi(precision as i32);
            Ok(match (method.as_str(), x) {
                ("common", N::I(i)) => Val::Int(i),
                ("common", N::F(f)) if !f.is_finite() => Val::Float(f),
                ("common", N::F(f)) => {
                    let text = format!("{f:.prec$}", prec = precision as usize);
                    Val::Float(text.parse().map_err(|_| format!("cannot round {f}"))?)
                }
                (m, x) => {
                    let scaled = match x {
                        N::I(i) if i.unsigned_abs() <= EXACT as u64 => i as f64 * scale,
                        N::I(_) => return Err(refusal("`round` of an integer beyond 2**53")),
                        N::F(f) if !f.is_finite() => {
                            return Err("cannot convert float infinity to integer".into());
                        }
                        N::F(f) => f * scale,
                    };
                    let r = if m == "ceil" {
                        scaled.ceil()
                    } else {
                        scaled.floor()
                    };
                    Val::Float(r / scale)
                }
            })
        }
        "tojson" => {
            if next().is_some_and(|i| i != Val::None) {
                return Err(refusal("`tojson` with an indent"));
            }
            let mut out = String::new();
            py_json(&defined(v)?.to_json(), &mut out);
            Ok(Val::Str(
                out.replace('<', "\\u003c")
                    .replace('>', "\\u003e")
                    .replace('&', "\\u0026")
                    .replace('\'', "\\u0027"),
            ))
        }
        "replace" => {
            let s = defined(v)?.text()?;
            let old = next().map(|o| o.text()).transpose()?.unwrap_or_default();
            let new = next().map(|o| o.text()).transpose()?.unwrap_or_default();
            Ok(Val::Str(match next() {
                None | Some(Val::None) => s.replace(&old, &new),
                Some(Val::Int(k)) if k < 0 => s.replace(&old, &new),
                Some(Val::Int(k)) => s.replacen(&old, &new, usize::try_from(k).unwrap_or(0)),
                Some(other) => {
                    return Err(format!(
                        "'{}' object cannot be interpreted as an integer",
                        other.type_name()
                    ));
                }
            }))
        }
        "length" | "count" => Ok(Val::Int(match defined(v)? {
            Val::Str(s) => s.chars().count() as i64,
            Val::Other(Value::Array(a)) => a.len() as i64,
            Val::Other(Value::Object(m)) => m.len() as i64,
            other => {
                return Err(format!(
                    "object of type '{}' has no len()",
                    other.type_name()
                ));
            }
        })),
        "join" => {
            let sep = next().map(|d| d.text()).transpose()?.unwrap_or_default();
            if next().is_some() {
                return Err(refusal("`join` with an attribute"));
            }
            let parts = match defined(v)? {
                Val::Other(Value::Array(a)) => a
                    .iter()
                    .map(|x| Val::of_json(x).text())
                    .collect::<Result<Vec<_>, _>>()?,
                Val::Other(Value::Object(m)) => m.keys().cloned().collect(),
                Val::Str(s) => s.chars().map(String::from).collect(),
                other => return Err(format!("'{}' object is not iterable", other.type_name())),
            };
            Ok(Val::Str(parts.join(&sep)))
        }
        "trim" => {
            let s = defined(v)?.text()?;
            Ok(Val::Str(match next() {
                None | Some(Val::None) => s.trim_matches(py_space).to_owned(),
                Some(chars) => {
                    let set: Vec<char> = chars.text()?.chars().collect();
                    s.trim_matches(|c| set.contains(&c)).to_owned()
                }
            }))
        }
        "first" | "last" => {
            let all = items(defined(v)?)?;
            let one = if name == "first" {
                all.first()
            } else {
                all.last()
            };
            Ok(one
                .cloned()
                .unwrap_or_else(|| Val::Undefined(format!("No {name} item, sequence was empty."))))
        }
        "abs" => Ok(match defined(v)? {
            Val::Int(i) => Val::Int(i.checked_abs().ok_or_else(overflow)?),
            Val::Bool(b) => Val::Int(i64::from(b)),
            Val::Float(f) => Val::Float(f.abs()),
            other => {
                return Err(format!(
                    "bad operand type for abs(): '{}'",
                    other.type_name()
                ));
            }
        }),
        _ => Err(refusal(&format!("the filter `{name}`"))),
    }
}

/// Python's `json.dumps(v, sort_keys=True)` (ASCII only, `", "` and `": "` between items,
/// floats as Python writes them).
fn py_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(u)) => out.push_str(&u.to_string()),
            _ => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                out.push_str(&match f {
                    f if f.is_nan() => "NaN".to_owned(),
                    f if f == f64::INFINITY => "Infinity".to_owned(),
                    f if f == f64::NEG_INFINITY => "-Infinity".to_owned(),
                    f => py_float_repr(f),
                });
            }
        },
        Value::String(s) => ringperf_wire::endpoint::form::python_json_str(s, true, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                py_json(&Value::String(k.clone()), out);
                out.push_str(": ");
                py_json(&m[k], out);
            }
            out.push('}');
        }
    }
}

/// Python's `int()` of a finite float: truncated (64 bits here).
fn float_to_int(f: f64) -> Result<i64, String> {
    let t = f.trunc();
    // `i64::MAX as f64` is 2**63, one past the largest i64; 2**-63 is `i64::MIN` itself.
    if t >= i64::MAX as f64 || t < i64::MIN as f64 {
        return Err(overflow());
    }
    Ok(t as i64)
}

/// Python's `str.isspace` characters (`str.strip()` removes them).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Digits Python reads in `int()` / `float()` that Rust does not: refused, never misread.
fn foreign_digits(s: &str) -> Result<(), String> {
    if s.chars().any(|c| c.is_numeric() && !c.is_ascii_digit()) {
        return Err(refusal("a number written with non-ASCII digits"));
    }
    Ok(())
}

/// `s` without `_` between digits, as Python reads a number; `None` when an `_` is elsewhere.
fn underscores(s: &str) -> Option<String> {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, c) in b.iter().enumerate() {
        if *c == '_' {
            let ok = i > 0
                && b[i - 1].is_ascii_digit()
                && b.get(i + 1).is_some_and(char::is_ascii_digit);
            if !ok {
                return None;
            }
        } else {
            out.push(*c);
        }
    }
    Some(out)
}

/// Python's `int(s)` (base 10): `Ok(None)` where Python raises `ValueError`.
///
/// # Errors
/// An integer Python reads that does not fit 64 bits, or non-ASCII digits.
pub(crate) fn py_int(s: &str) -> Result<Option<i64>, String> {
    foreign_digits(s)?;
    let t = s.trim_matches(py_space);
    let Some(t) = underscores(t) else {
        return Ok(None);
    };
    let digits = t.strip_prefix(['+', '-']).unwrap_or(&t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    t.parse::<i64>().map(Some).map_err(|_| overflow())
}

/// Python's `float(s)`: `Ok(None)` where Python raises `ValueError`.
///
/// # Errors
/// Non-ASCII digits.
pub(crate) fn py_float(s: &str) -> Result<Option<f64>, String> {
    foreign_digits(s)?;
    let t = s.trim_matches(py_space);
    let Some(t) = underscores(t) else {
        return Ok(None);
    };
    let body = t.strip_prefix(['+', '-']).unwrap_or(&t);
    let lower = body.to_ascii_lowercase();
    if ["inf", "infinity", "nan"].contains(&lower.as_str()) {
        let neg = t.starts_with('-');
        let v = if lower == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Ok(Some(if neg { -v } else { v }));
    }
    // Python's grammar: digits with an optional point and fraction, an optional exponent.
    let (mant, exp) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (lower.as_str(), None),
    };
    let mant_ok = {
        let (a, b) = mant.split_once('.').unwrap_or((mant, ""));
        let all = |x: &str| x.bytes().all(|c| c.is_ascii_digit());
        all(a) && all(b) && !(a.is_empty() && b.is_empty())
    };
    let exp_ok = exp.is_none_or(|e| {
        let d = e.strip_prefix(['+', '-']).unwrap_or(e);
        !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
    });
    if !mant_ok || !exp_ok {
        return Ok(None);
    }
    Ok(t.parse::<f64>().ok())
}

/// AIPerf's coercion of a rendered string: `true` / `false` (any case), else Python's `int()`,
/// else `float()`, else the string.
///
/// # Errors
/// A number Python reads that ringperf cannot hold (beyond 64 bits, non-ASCII digits).
pub(crate) fn coerce(s: &str) -> Result<Val, String> {
    let low = s.to_lowercase();
    if low == "true" {
        return Ok(Val::Bool(true));
    }
    if low == "false" {
        return Ok(Val::Bool(false));
    }
    if let Some(i) = py_int(s)? {
        return Ok(Val::Int(i));
    }
    if let Some(f) = py_float(s)? {
        return Ok(Val::Float(f));
    }
    Ok(Val::Str(s.to_owned()))
}

/// The shortest decimal digits of a finite float that read back, with its sign and decimal
/// exponent (`1.5e-5` is `(false, "15", -5)`).
pub(crate) fn shortest(f: f64) -> (bool, String, i32) {
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}`'s exponent is a number");
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    (neg, mant.chars().filter(|c| *c != '.').collect(), exp)
}

/// `digits` × 10^`exp` (one digit before the point) in fixed notation, `.0` when whole.
pub(crate) fn fixed(neg: bool, digits: &str, exp: i32) -> String {
    let point = exp + 1;
    let body = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
    } else {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    };
    format!("{}{body}", if neg { "-" } else { "" })
}

/// `digits` × 10^`exp` as `d.ddd` then `e`, the exponent's sign and at least `width` digits.
pub(crate) fn scientific(neg: bool, digits: &str, exp: i32, width: usize) -> String {
    let frac = &digits[1..];
    let mant = if frac.is_empty() {
        digits[..1].to_owned()
    } else {
        format!("{}.{frac}", &digits[..1])
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!(
        "{}{mant}e{esign}{:0width$}",
        if neg { "-" } else { "" },
        exp.unsigned_abs()
    )
}

/// Python's `repr()` of a float: the shortest digits that read back, in fixed notation for
/// decimal exponents -4 to 15, else `1.5e-05` / `1e+16`.
pub(crate) fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let (neg, digits, exp) = shortest(f);
    if (-4..16).contains(&exp) {
        fixed(neg, &digits, exp)
    } else {
        scientific(neg, &digits, exp, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(src: &str, vars: &[(&str, Val)]) -> Result<String, String> {
        let cx: BTreeMap<String, Val> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        Template::parse(src)?.render(&cx)
    }

    #[test]
    fn floats_are_written_as_python_writes_them() {
        for (f, s) in [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (-2.5, "-2.5"),
            (123456789012345680.0, "1.2345678901234568e+17"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e100, "1e+100"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(py_float_repr(f), s, "{f}");
        }
    }

    /// Each expected text is what Jinja2 3.1 (AIPerf 0.13's, `StrictUndefined`) renders for the
    /// same template and variables.
    #[test]
    fn expressions_evaluate_as_jinja2_on_python_values() {
        let vars = [
            ("n", Val::Int(7)),
            ("name", Val::Str("dense-agg".into())),
            ("f", Val::Float(2.5)),
            ("flag", Val::Bool(true)),
            ("nothing", Val::None),
        ];
        for (src, want) in [
            ("{{ name }}-{{ n }}", "dense-agg-7"),
            ("{{ name ~ '/' ~ n }}", "dense-agg/7"),
            ("{{ 'a' + 'b' }}", "ab"),
            ("{{ 'ab' * 2 }}", "abab"),
            ("{{ n / 2 }}", "3.5"),
            ("{{ n // 2 }} {{ -n // 2 }} {{ -n % 3 }}", "3 -4 2"),
            ("{{ n * f }}", "17.5"),
            ("{{ 2 ** 10 }} {{ 2 ** -1 }}", "1024 0.5"),
            ("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}", "7 9"),
            ("{{ -n | string }}", "-7"),
            ("{{ flag }} {{ nothing }} {{ flag + 1 }}", "True None 2"),
            ("{{ missing | default('x') }}", "x"),
            ("{{ missing | d(3) + 1 }}", "4"),
            ("{{ '' | default('empty', true) }}", "empty"),
            ("{{ '' | default('empty') }}", ""),
            (
                "{{ '42' | int + 1 }} {{ '4.9' | int }} {{ 'x' | int }} {{ 'x' | int(5) }}",
                "43 4 0 5",
            ),
            ("{{ 3.9 | int }} {{ -3.9 | int }}", "3 -3"),
            (
                "{{ '1.5' | float }} {{ 2 | float }} {{ 'x' | float }}",
                "1.5 2.0 0.0",
            ),
            ("{{ name | upper }} {{ 'ABC' | lower }}", "DENSE-AGG abc"),
            (
                "{{ 2.5 | round }} {{ 3.5 | round }} {{ 42.55 | round(1) }}",
                "2.0 4.0 42.5",
            ),
            (
                "{{ 42.55 | round(1, 'floor') }} {{ 42.51 | round(1, 'ceil') }}",
                "42.5 42.6",
            ),
            ("{{ 5 | round }} {{ 1_000 }} {{ 1e3 }}", "5 1000 1000.0"),
            ("a{# note #}b\r\nc", "ab\nc"),
            (
                "{{ 1e16 }} {{ 1.5e-5 }} {{ 0.1+0.2 }} {{ 10/3 }}",
                "1e+16 1.5e-05 0.30000000000000004 3.3333333333333335",
            ),
            (
                "{{ ' 12 ' | int }} {{ '1_0' | int }} {{ 'nan' | float }} {{ '1e3' | int }}",
                "12 10 nan 1000",
            ),
            (
                "{{ 7.0 // 2 }} {{ -7.5 % 2 }} {{ 'x' ~ 1.0 ~ none ~ true }}",
                "3.0 0.5 x1.0NoneTrue",
            ),
            (
                "{{ 1.25 | round(1) }} {{ 2.675 | round(2) }} {{ -0.5 | round }}",
                "1.2 2.67 -0.0",
            ),
            ("{{ \"q\\\"}}\" }}", "q\"}}"),
        ] {
            assert_eq!(render(src, &vars).as_deref(), Ok(want), "{src}");
        }
    }

    #[test]
    fn what_the_subset_lacks_is_refused_by_name() {
        for (src, what) in [
            ("{% macro m() %}1{% endmacro %}", "the `{% macro %}` block"),
            ("{% for a, b in x %}{% endfor %}", "one name only"),
            ("{{ a[1:2] }}", "slice"),
            ("{{ a is divisibleby(3) }}", "the test `divisibleby`"),
            ("{{ range(3) }}", "call"),
            ("{{ x | title }}", "the filter `title`"),
            ("{{ x | tojson(2) }}", "`tojson` with an indent"),
            ("{{ 0x10 }}", "decimal"),
            ("{{ 'a\\x41' }}", "escape"),
            ("{{ {'a': 1} }}", "dict literal"),
            ("{{ '%s' % 1 }}", "string formatting"),
            ("{{ 9223372036854775807 + 1 }}", "64 bits"),
        ] {
            let e = render(src, &[("a", Val::Int(1))]).unwrap_err();
            assert!(e.contains(what), "{src}: {e}");
            assert!(e.contains("outside ringperf's Jinja2 subset"), "{src}: {e}");
        }
        for (src, what) in [
            ("{{ y }}", "'y' is undefined"),
            ("{{ 'a' + 1 }}", "unsupported operand"),
            ("{{ 1 / 0 }}", "division by zero"),
            ("{# open", "comment"),
        ] {
            let e = render(src, &[]).unwrap_err();
            assert!(e.contains(what), "{src}: {e}");
        }
    }

    /// Templates rendered by Jinja2 3.1 itself with AIPerf 0.13's environment
    /// (tests/data/jinja2/cases.json, made by `make_cases.py` there): comparisons, `and` / `or`
    /// / `not` / `if`, attributes and items, list literals, tests, filters, `{% if %}`,
    /// `{% for %}`, `{% set %}` and whitespace control render to Jinja2's text, and fail where
    /// Jinja2 raises.
    #[test]
    fn templates_render_as_jinja2_renders_them() {
        let cases: Vec<Value> = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/jinja2/cases.json"
        )))
        .unwrap();
        assert!(cases.len() >= 50);
        for c in &cases {
            let src = c["template"].as_str().unwrap();
            let cx: BTreeMap<String, Val> = (c["context"].as_object().unwrap().iter())
                .map(|(k, v)| (k.clone(), Val::of_json(v)))
                .collect();
            let got = Template::parse(src).and_then(|t| t.render(&cx));
            match c.get("rendered").and_then(Value::as_str) {
                Some(want) => assert_eq!(got.as_deref(), Ok(want), "{src}"),
                None => assert!(
                    got.is_err(),
                    "{src}: Jinja2 raised {}, ringperf {got:?}",
                    c["error"]
                ),
            }
        }
    }

    proptest::proptest! {
        /// Any text, and any text built of the template language's own pieces, parses and
        /// renders to a text or an error, never a panic (a config file is anyone's input).
        #[test]
        fn any_template_renders_or_fails_cleanly(
            raw in ".{0,40}",
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "{{", "}}", "{%", "%}", "{#", "#}", "-", " if ", " else ", " for ", " in ",
                " endif ", " endfor ", " set ", "=", "n", "cs", "m", ".", "[", "]", "0", "-1",
                "'a'", "|", "length", "tojson", " is ", "defined", " and ", " not ", "==",
                "<", "(", ")", ",", "loop", "elif", "1.5", "~", "**", "//",
            ]), 0..24),
        ) {
            let cx: BTreeMap<String, Val> = [
                ("n", Val::Int(7)),
                ("cs", Val::Other(serde_json::json!([1, 2, 3]))),
                ("m", Val::Other(serde_json::json!({"a": {"b": [1]}}))),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            for src in [raw, parts.concat()] {
                if let Ok(t) = Template::parse(&src) {
                    let _ = t.render(&cx);
                    let _ = t.names();
                }
            }
        }
    }

    #[test]
    fn rendered_text_is_coerced_as_aiperf_coerces_it() {
        assert_eq!(coerce("42"), Ok(Val::Int(42)));
        assert_eq!(coerce(" 1_000 "), Ok(Val::Int(1000)));
        assert_eq!(coerce("007"), Ok(Val::Int(7)));
        assert_eq!(coerce("2.5"), Ok(Val::Float(2.5)));
        assert_eq!(coerce("1e3"), Ok(Val::Float(1000.0)));
        assert_eq!(coerce(".5"), Ok(Val::Float(0.5)));
        assert_eq!(coerce("TRUE"), Ok(Val::Bool(true)));
        assert!(matches!(coerce("-inf"), Ok(Val::Float(f)) if f == f64::NEG_INFINITY));
        for s in [
            "",
            "dense-agg",
            "1_",
            "1__0",
            "0x10",
            "1e",
            "e5",
            "1.2.3",
            "None",
        ] {
            assert_eq!(coerce(s), Ok(Val::Str(s.into())), "{s:?}");
        }
        assert!(coerce("99999999999999999999").is_err());
    }
}
