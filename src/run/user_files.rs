//! `artifacts.user_files` written into the artifact directory before the benchmark starts, as
//! AIPerf 0.13 writes them: each string of a file's content holding `{{`, `{%` or `{#` is
//! rendered ([`crate::config::yaml::jinja`]) with the `variables:` block and the run's names —
//! `epoch`, `job_name`, `namespace`, `model`, `endpoint_url`, `artifact_dir` (these win over a
//! variable of the same name) — and, for `json` and `yaml`, coerced to a bool, int or float when
//! it reads as one. `json` is written as orjson writes with a two-space indent (no newline at
//! the end); `yaml` as PyYAML's `safe_dump` in block style, keys in order; `text` as rendered.
//!
//! The run's names: the artifact directory's absolute path with its links resolved; when its
//! last component is an epoch (9 or 10 digits, optionally 6 more) or `legacy`, that is the
//! epoch and its parent's name the job name, else the job name is the directory's name and the
//! epoch the current Unix time in seconds; the namespace is `AIPERF_NAMESPACE`, else empty; the
//! first model and URL (user info in the URL shown as `<redacted>`).
//!
//! What ringperf would not write as AIPerf does is refused before anything is sent, naming
//! the file: a YAML string that PyYAML would write double-quoted (non-ASCII or control
//! characters, line breaks) or might fold (a line over 80 columns with a space in it), and
//! `endpoint_url` of a URL with a query string (AIPerf redacts credential parameters in it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::yaml::jinja::{
    Context, Template, Val, coerce, fixed, py_float_repr, refusal, scientific, shortest,
};
use crate::plan::{UserFile, UserFileFormat, UserFiles};

/// The names AIPerf gives a run, besides the `variables:` block.
pub struct RunNames {
    pub epoch: String,
    pub job_name: String,
    pub namespace: String,
    pub model: String,
    pub endpoint_url: String,
    pub artifact_dir: String,
}

impl RunNames {
    /// The names of a run writing into `dir` (already created), of `model` at `url`;
    /// `namespace` is `AIPERF_NAMESPACE`'s value, `now` the Unix time in seconds.
    pub fn new(dir: &Path, model: &str, url: &str, namespace: Option<String>, now: u64) -> Self {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let leaf = name_of(&dir);
        let (epoch, job_name) = if is_epoch(&leaf) || leaf == "legacy" {
            (leaf, dir.parent().map(name_of).unwrap_or_default())
        } else {
            (now.to_string(), leaf)
        };
        RunNames {
            epoch,
            job_name,
            namespace: namespace.unwrap_or_default(),
            model: model.to_owned(),
            endpoint_url: redact_userinfo(url),
            artifact_dir: dir.to_string_lossy().into_owned(),
        }
    }
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// AIPerf's `EPOCH_RE`: 9 or 10 digits, optionally 6 more.
fn is_epoch(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit()) && matches!(s.len(), 9 | 10 | 15 | 16)
}

/// `scheme://user:pass@host…` with the user info replaced by `<redacted>`.
fn redact_userinfo(url: &str) -> String {
    let Some(at) = url.find("://") else {
        return url.to_owned();
    };
    let scheme = &url[..at];
    let valid_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    let rest = &url[at + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(i) if valid_scheme && i > 0 => {
            format!("{}://<redacted>{}", scheme, &rest[i..])
        }
        _ => url.to_owned(),
    }
}

struct RunContext {
    vars: BTreeMap<String, Val>,
    /// Set when `endpoint_url` is not written as AIPerf would write it.
    url_refused: bool,
}

impl Context for RunContext {
    fn get(&self, name: &str) -> Result<Option<Val>, String> {
        if name == "endpoint_url" && self.url_refused {
            return Err(refusal(
                "`endpoint_url` of a URL with a query string (AIPerf redacts its credential \
                 parameters; ringperf does not reproduce that)",
            ));
        }
        Ok(self.vars.get(name).cloned())
    }
}

/// Renders and writes every file of `files` into `dir`, in order.
///
/// # Errors
/// The first file that cannot be rendered, written as AIPerf writes it, or written at all,
/// named.
pub fn write(files: &UserFiles, dir: &Path, names: &RunNames) -> Result<(), String> {
    let mut vars: BTreeMap<String, Val> = files
        .variables
        .iter()
        .map(|(k, v)| (k.clone(), Val::of_json(v)))
        .collect();
    for (k, v) in [
        ("epoch", &names.epoch),
        ("job_name", &names.job_name),
        ("namespace", &names.namespace),
        ("model", &names.model),
        ("endpoint_url", &names.endpoint_url),
        ("artifact_dir", &names.artifact_dir),
    ] {
        vars.insert(k.to_owned(), Val::Str(v.clone()));
    }
    let cx = RunContext {
        vars,
        url_refused: names.endpoint_url.contains('?'),
    };
    let root = dir
        .canonicalize()
        .map_err(|e| format!("user_files: cannot resolve {}: {e}", dir.display()))?;
    for file in &files.files {
        let failed = |why: String| format!("user_files path='{}': {why}", file.path);
        let bytes = render_file(file, &cx).map_err(failed)?;
        let target = place(&root, &file.path).map_err(failed)?;
        std::fs::write(&target, bytes)
            .map_err(|e| failed(format!("write to {} failed: {e}", target.display())))?;
    }
    Ok(())
}

/// Where `rel` goes under `root` (its directories created), refused when a link leads it out.
fn place(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let target = root.join(rel);
    let parent = target.parent().unwrap_or(root);
    std::fs::create_dir_all(parent).map_err(|e| format!("mkdir failed: {e}"))?;
    let outside = |p: &Path| format!("resolved to {} which is outside the run dir", p.display());
    let parent = parent.canonicalize().map_err(|e| e.to_string())?;
    if !parent.starts_with(root) {
        return Err(outside(&parent));
    }
    if let Ok(t) = target.canonicalize()
        && !t.starts_with(root)
    {
        return Err(outside(&t));
    }
    Ok(target)
}

/// A rendered value, floats kept as floats (YAML writes `.inf`, JSON `null`).
#[derive(Debug, PartialEq)]
enum Out {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Out>),
    Map(Vec<(String, Out)>),
}

/// The bytes of `file`, rendered.
fn render_file(file: &UserFile, cx: &RunContext) -> Result<Vec<u8>, String> {
    let coerce_text = file.format != UserFileFormat::Text;
    let out = render(&file.content, cx, coerce_text)?;
    Ok(match file.format {
        UserFileFormat::Json => {
            let mut s = String::new();
            json(&out, 0, &mut s);
            s.into_bytes()
        }
        UserFileFormat::Yaml => yaml_document(&out)?.into_bytes(),
        UserFileFormat::Text => match out {
            Out::Str(s) => s.into_bytes(),
            _ => return Err("format='text' requires string content".into()),
        },
    })
}

fn render(v: &Value, cx: &RunContext, coerce_text: bool) -> Result<Out, String> {
    Ok(match v {
        Value::Null => Out::Null,
        Value::Bool(b) => Out::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Out::Int(i),
            None => Out::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) if !["{{", "{%", "{#"].iter().any(|m| s.contains(m)) => {
            Out::Str(s.clone())
        }
        Value::String(s) => {
            let text = Template::parse(s)
                .and_then(|t| t.render(cx))
                .map_err(|e| format!("render failed: {e}"))?;
            if !coerce_text {
                return Ok(Out::Str(text));
            }
            match coerce(&text)? {
                Val::Bool(b) => Out::Bool(b),
                Val::Int(i) => Out::Int(i),
                Val::Float(f) => Out::Float(f),
                _ => Out::Str(text),
            }
        }
        Value::Array(a) => Out::List(
            a.iter()
                .map(|x| render(x, cx, coerce_text))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => Out::Map(
            m.iter()
                .map(|(k, x)| Ok((k.clone(), render(x, cx, coerce_text)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// orjson's text of a float: shortest digits, fixed notation for decimal exponents -5 to 15,
/// else `1e+16` / `1.5e-7`; not finite: `null`.
fn orjson_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let (neg, digits, exp) = shortest(f);
    if (-5..16).contains(&exp) {
        fixed(neg, &digits, exp)
    } else {
        scientific(neg, &digits, exp, 1)
    }
}

/// orjson's `OPT_INDENT_2` text of `v`.
fn json(v: &Out, indent: usize, out: &mut String) {
    let pad = |n: usize, out: &mut String| out.extend(std::iter::repeat_n(' ', n));
    match v {
        Out::Null => out.push_str("null"),
        Out::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Out::Int(i) => out.push_str(&i.to_string()),
        Out::Float(f) => out.push_str(&orjson_float(*f)),
        Out::Str(s) => out.push_str(&serde_json::to_string(s).expect("a string serializes")),
        Out::List(a) if a.is_empty() => out.push_str("[]"),
        Out::Map(m) if m.is_empty() => out.push_str("{}"),
        Out::List(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                pad(indent + 2, out);
                json(x, indent + 2, out);
            }
            out.push('\n');
            pad(indent, out);
            out.push(']');
        }
        Out::Map(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                out.push_str(if i == 0 { "\n" } else { ",\n" });
                pad(indent + 2, out);
                out.push_str(&serde_json::to_string(k).expect("a string serializes"));
                out.push_str(": ");
                json(x, indent + 2, out);
            }
            out.push('\n');
            pad(indent, out);
            out.push('}');
        }
    }
}

/// PyYAML's `safe_dump(v, sort_keys=False, default_flow_style=False)`.
fn yaml_document(v: &Out) -> Result<String, String> {
    let mut y = YamlOut::default();
    match v {
        Out::Map(m) if !m.is_empty() => y.map(m, 0, false)?,
        Out::List(a) if !a.is_empty() => y.seq(a, 0, false)?,
        Out::Map(_) => y.line("{}"),
        Out::List(_) => y.line("[]"),
        scalar => {
            let (text, plain) = y.scalar(scalar, false)?;
            y.line(&text);
            // A plain scalar at the root leaves the document open: PyYAML closes it.
            if plain {
                y.line("...");
            }
        }
    }
    Ok(y.text)
}

/// PyYAML's emitter in block style, for the values ringperf writes as it does.
#[derive(Default)]
struct YamlOut {
    text: String,
    /// The column the next character goes to.
    col: usize,
}

/// PyYAML folds a plain or single-quoted scalar at a space past this column.
const YAML_WIDTH: usize = 80;

impl YamlOut {
    fn put(&mut self, s: &str) {
        self.text.push_str(s);
        self.col += s.chars().count();
    }
    fn line(&mut self, s: &str) {
        self.put(s);
        self.text.push('\n');
        self.col = 0;
    }
    fn indent(&mut self, n: usize) {
        self.put(&" ".repeat(n));
    }

    /// A block mapping at `indent`; `inline`: its first key goes where the line is (after a
    /// sequence's `- `).
    fn map(&mut self, m: &[(String, Out)], indent: usize, inline: bool) -> Result<(), String> {
        for (i, (k, v)) in m.iter().enumerate() {
            if !(inline && i == 0) {
                self.indent(indent);
            }
            let (key, _) = self.string(k, true)?;
            self.put(&key);
            self.put(":");
            self.value(v, indent, true)?;
        }
        Ok(())
    }

    /// A block sequence at `indent`; `inline` as for [`YamlOut::map`].
    fn seq(&mut self, a: &[Out], indent: usize, inline: bool) -> Result<(), String> {
        for (i, v) in a.iter().enumerate() {
            if !(inline && i == 0) {
                self.indent(indent);
            }
            self.put("-");
            self.value(v, indent, false)?;
        }
        Ok(())
    }

    /// What follows a key's `:` (`in_map`) or a sequence's `-`.
    fn value(&mut self, v: &Out, indent: usize, in_map: bool) -> Result<(), String> {
        match v {
            Out::Map(m) if m.is_empty() => self.line(" {}"),
            Out::List(a) if a.is_empty() => self.line(" []"),
            Out::Map(m) if in_map => {
                self.line("");
                self.map(m, indent + 2, false)?;
            }
            // A sequence in a mapping is not indented.
            Out::List(a) if in_map => {
                self.line("");
                self.seq(a, indent, false)?;
            }
            Out::Map(m) => {
                self.put(" ");
                self.map(m, indent + 2, true)?;
            }
            Out::List(a) => {
                self.put(" ");
                self.seq(a, indent + 2, true)?;
            }
            scalar => {
                self.put(" ");
                let (text, _) = self.scalar(scalar, false)?;
                self.line(&text);
            }
        }
        Ok(())
    }

    /// A scalar's text and whether it is plain.
    fn scalar(&self, v: &Out, key: bool) -> Result<(String, bool), String> {
        Ok(match v {
            Out::Null => ("null".into(), true),
            Out::Bool(b) => ((if *b { "true" } else { "false" }).into(), true),
            Out::Int(i) => (i.to_string(), true),
            Out::Float(f) => (yaml_float(*f), true),
            Out::Str(s) => self.string(s, key)?,
            Out::List(_) | Out::Map(_) => unreachable!("collections are written as blocks"),
        })
    }

    /// A string as PyYAML chooses its style: plain when it reads back as the same string and
    /// has no indicator, else single-quoted; what it would double-quote or fold is refused.
    fn string(&self, s: &str, key: bool) -> Result<(String, bool), String> {
        let a = analyze(s);
        if a.special || a.line_breaks {
            return Err(refusal(&format!(
                "a YAML string PyYAML writes double-quoted (non-ASCII, control characters or \
                 line breaks: {s:?})"
            )));
        }
        if key && s.chars().count() > 128 {
            return Err(refusal("a YAML key over 128 characters"));
        }
        if !key && s.contains(' ') && self.col + s.chars().count() + 2 > YAML_WIDTH {
            return Err(refusal(&format!(
                "a YAML line over {YAML_WIDTH} columns with a space (PyYAML may fold it: {s:?})"
            )));
        }
        let plain_ok = !(key && s.is_empty()) && a.block_plain && !resolves_otherwise(s);
        if plain_ok {
            return Ok((s.to_owned(), true));
        }
        if a.single_quoted {
            return Ok((format!("'{}'", s.replace('\'', "''")), false));
        }
        Err(refusal(&format!(
            "a YAML string PyYAML writes double-quoted ({s:?})"
        )))
    }
}

/// PyYAML's `represent_float`.
fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let r = py_float_repr(f).to_lowercase();
    if !r.contains('.') && r.contains('e') {
        r.replacen('e', ".0e", 1)
    } else {
        r
    }
}

/// What PyYAML's `analyze_scalar` finds of a string (the parts that choose a block style).
struct Analysis {
    special: bool,
    line_breaks: bool,
    block_plain: bool,
    single_quoted: bool,
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            special: false,
            line_breaks: false,
            block_plain: true,
            single_quoted: true,
        };
    }
    let c: Vec<char> = s.chars().collect();
    let space = |ch: Option<&char>| {
        ch.is_none_or(|ch| {
            [
                '\0', ' ', '\t', '\r', '\n', '\u{85}', '\u{2028}', '\u{2029}',
            ]
            .contains(ch)
        })
    };
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut special, mut line_breaks) = (false, false);
    let (mut leading_space, mut trailing_space, mut break_space, mut space_break) =
        (false, false, false, false);
    let (mut leading_break, mut trailing_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    for (i, ch) in c.iter().copied().enumerate() {
        let followed = space(c.get(i + 1));
        let preceded = i == 0 || space(c.get(i - 1));
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) || (ch == '-' && followed) {
                block_indicators = true;
            }
            if "?:".contains(ch) && followed {
                block_indicators = true;
            }
        } else if (ch == ':' && followed) || (ch == '#' && preceded) {
            block_indicators = true;
        }
        if ['\n', '\u{85}', '\u{2028}', '\u{2029}'].contains(&ch) {
            line_breaks = true;
        }
        if !(ch == '\n' || (' '..='~').contains(&ch)) {
            special = true;
        }
        if ch == ' ' {
            leading_space |= i == 0;
            trailing_space |= i == c.len() - 1;
            break_space |= prev_break;
            (prev_space, prev_break) = (true, false);
        } else if ['\n', '\u{85}', '\u{2028}', '\u{2029}'].contains(&ch) {
            leading_break |= i == 0;
            trailing_break |= i == c.len() - 1;
            space_break |= prev_space;
            (prev_space, prev_break) = (false, true);
        } else {
            (prev_space, prev_break) = (false, false);
        }
    }
    let mut block_plain = true;
    let mut single_quoted = true;
    if leading_space || leading_break || trailing_space || trailing_break {
        block_plain = false;
    }
    if break_space {
        block_plain = false;
        single_quoted = false;
    }
    if space_break || special {
        block_plain = false;
        single_quoted = false;
    }
    if line_breaks || block_indicators {
        block_plain = false;
    }
    Analysis {
        special,
        line_breaks,
        block_plain,
        single_quoted,
    }
}

/// PyYAML's implicit resolvers (YAML 1.1): whether `s`, written plain, would read back as a
/// bool, int, float, null, timestamp, merge key or value key rather than a string.
fn resolves_otherwise(s: &str) -> bool {
    const BOOLS: &[&str] = &[
        "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
        "on", "On", "ON", "off", "Off", "OFF",
    ];
    BOOLS.contains(&s)
        || ["", "~", "null", "Null", "NULL", "<<", "="].contains(&s)
        || yaml_int(s)
        || yaml_float_text(s)
        || yaml_timestamp(s)
}

/// A cursor over the characters of a scalar, for the resolvers' patterns.
struct Cur<'a> {
    c: &'a [u8],
    i: usize,
}

impl Cur<'_> {
    fn peek(&self) -> Option<u8> {
        self.c.get(self.i).copied()
    }
    fn eat(&mut self, f: impl Fn(u8) -> bool) -> bool {
        match self.peek() {
            Some(b) if f(b) => {
                self.i += 1;
                true
            }
            _ => false,
        }
    }
    fn many(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.i;
        while self.eat(&f) {}
        self.i - start
    }
    fn done(&self) -> bool {
        self.i == self.c.len()
    }
    /// `(:[0-5]?[0-9])+`.
    fn sexagesimal(&mut self) -> bool {
        let mut groups = 0;
        while self.peek() == Some(b':') {
            self.i += 1;
            let two = matches!(
                (self.peek(), self.c.get(self.i + 1)),
                (Some(b'0'..=b'5'), Some(b'0'..=b'9'))
            );
            if two {
                self.i += 2;
            } else if !self.eat(|b| b.is_ascii_digit()) {
                return false;
            }
            groups += 1;
        }
        groups > 0
    }
}

fn digit_(b: u8) -> bool {
    b.is_ascii_digit() || b == b'_'
}

fn yaml_int(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    let b = t.as_bytes();
    let all = |x: &[u8], f: fn(u8) -> bool| !x.is_empty() && x.iter().all(|c| f(*c));
    if let Some(r) = t.strip_prefix("0b") {
        return all(r.as_bytes(), |c| matches!(c, b'0' | b'1' | b'_'));
    }
    if let Some(r) = t.strip_prefix("0x") {
        return all(r.as_bytes(), |c| c.is_ascii_hexdigit() || c == b'_');
    }
    if t == "0" || (b.first() == Some(&b'0') && all(&b[1..], |c| matches!(c, b'0'..=b'7' | b'_'))) {
        return true;
    }
    let mut cur = Cur { c: b, i: 0 };
    if !cur.eat(|c| matches!(c, b'1'..=b'9')) {
        return false;
    }
    cur.many(digit_);
    cur.done() || (cur.sexagesimal() && cur.done())
}

fn yaml_float_text(s: &str) -> bool {
    let exponent = |cur: &mut Cur<'_>| {
        if cur.done() {
            return true;
        }
        cur.eat(|c| c == b'e' || c == b'E')
            && cur.eat(|c| c == b'-' || c == b'+')
            && cur.many(|c| c.is_ascii_digit()) > 0
            && cur.done()
    };
    let signed = s.strip_prefix(['-', '+']).unwrap_or(s);
    if [".inf", ".Inf", ".INF"].contains(&signed) || [".nan", ".NaN", ".NAN"].contains(&s) {
        return true;
    }
    if let Some(r) = s.strip_prefix('.') {
        let mut cur = Cur {
            c: r.as_bytes(),
            i: 0,
        };
        return cur.eat(|c| c.is_ascii_digit()) && {
            cur.many(digit_);
            exponent(&mut cur)
        };
    }
    let mut cur = Cur {
        c: signed.as_bytes(),
        i: 0,
    };
    if !cur.eat(|c| c.is_ascii_digit()) {
        return false;
    }
    cur.many(digit_);
    if cur.eat(|c| c == b'.') {
        cur.many(digit_);
        return exponent(&mut cur);
    }
    cur.sexagesimal() && cur.eat(|c| c == b'.') && {
        cur.many(digit_);
        cur.done()
    }
}

fn yaml_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let d = |c: u8| c.is_ascii_digit();
    let mut cur = Cur { c: b, i: 0 };
    let n = |cur: &mut Cur<'_>, k: usize| (0..k).all(|_| cur.eat(d));
    if !(n(&mut cur, 4) && cur.eat(|c| c == b'-')) {
        return false;
    }
    let date_only = b.len() == 10 && b[5..7].iter().all(|c| d(*c)) && b[7] == b'-';
    if date_only && b[8..].iter().all(|c| d(*c)) {
        return true;
    }
    let one_two = |cur: &mut Cur<'_>| {
        cur.eat(d) && {
            cur.eat(d);
            true
        }
    };
    if !(one_two(&mut cur) && cur.eat(|c| c == b'-') && one_two(&mut cur)) {
        return false;
    }
    if !(cur.eat(|c| c == b'T' || c == b't') || cur.many(|c| c == b' ' || c == b'\t') > 0) {
        return false;
    }
    if !(one_two(&mut cur)
        && cur.eat(|c| c == b':')
        && n(&mut cur, 2)
        && cur.eat(|c| c == b':')
        && n(&mut cur, 2))
    {
        return false;
    }
    if cur.eat(|c| c == b'.') {
        cur.many(d);
    }
    if cur.done() {
        return true;
    }
    cur.many(|c| c == b' ' || c == b'\t');
    if cur.eat(|c| c == b'Z') {
        return cur.done();
    }
    cur.eat(|c| c == b'-' || c == b'+')
        && one_two(&mut cur)
        && (cur.done() || (cur.eat(|c| c == b':') && n(&mut cur, 2) && cur.done()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn out(v: Value) -> Out {
        let cx = RunContext {
            vars: BTreeMap::new(),
            url_refused: false,
        };
        render(&v, &cx, true).expect("renders")
    }

    /// The expected texts are PyYAML 6's `safe_dump(v, sort_keys=False,
    /// default_flow_style=False)` of the same values (AIPerf 0.13's environment).
    #[test]
    fn yaml_is_written_as_pyyaml_writes_it() {
        let v = json!({"a": 1, "b": [1, 2], "c": {"d": "x"}, "e": [], "f": {}, "g": [{"h": 1, "i": 2}],
            "j": [[1, 2], []], "k": null, "l": true, "m": 1.5, "n": 1e16, "p": -0.0, "q": [{"r": {"s": 1}}]});
        assert_eq!(
            yaml_document(&out(v)).unwrap(),
            "a: 1\nb:\n- 1\n- 2\nc:\n  d: x\ne: []\nf: {}\ng:\n- h: 1\n  i: 2\nj:\n- - 1\n  - 2\n- []\nk: null\nl: true\nm: 1.5\nn: 1.0e+16\np: -0.0\nq:\n- r:\n    s: 1\n"
        );
        let strings = [
            ("1024", "'1024'"),
            ("isl=1024", "isl=1024"),
            ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
            ("yes", "'yes'"),
            ("", "''"),
            ("a: b", "'a: b'"),
            ("-x", "-x"),
            ("- x", "'- x'"),
            ("it's", "it's"),
            ("#c", "'#c'"),
            ("a #c", "'a #c'"),
            ("a#c", "a#c"),
            ("1:30", "'1:30'"),
            ("2024-01-02", "'2024-01-02'"),
            ("~", "'~'"),
            (".5", "'.5'"),
            ("1_000", "'1_000'"),
            ("null", "'null'"),
            ("x,y", "x,y"),
            ("[x", "'[x'"),
            (" lead", "' lead'"),
            ("trail ", "'trail '"),
            ("0o17", "0o17"),
            ("0x1F", "'0x1F'"),
            ("1e5", "1e5"),
            ("1.0e+5", "'1.0e+5'"),
            ("=", "'='"),
            ("<<", "'<<'"),
            ("...x", "'...x'"),
            ("---", "'---'"),
            ("a:b", "a:b"),
            ("?x", "?x"),
            ("? x", "'? x'"),
            ("@x", "'@x'"),
            ("%x", "'%x'"),
            ("!x", "'!x'"),
            ("x!", "x!"),
            ("12:61", "12:61"),
            (".inf", "'.inf'"),
            ("+.5", "+.5"),
            ("Yes", "'Yes'"),
            ("On", "'On'"),
            ("0", "'0'"),
            ("-0", "'-0'"),
            ("00", "'00'"),
            ("09", "09"),
            ("1.", "'1.'"),
            ("x: ", "'x: '"),
            ("a'b'c", "a'b'c"),
        ];
        for (s, want) in strings {
            let doc = yaml_document(&Out::Map(vec![("s".into(), Out::Str(s.into()))])).unwrap();
            assert_eq!(doc, format!("s: {want}\n"), "{s:?}");
        }
        for (v, want) in [
            (Out::Int(42), "42\n...\n"),
            (Out::Str("abc".into()), "abc\n...\n"),
            (Out::Str("1024".into()), "'1024'\n"),
            (
                Out::List(vec![Out::Int(1), Out::Str("a".into())]),
                "- 1\n- a\n",
            ),
            (Out::Map(vec![]), "{}\n"),
            (Out::List(vec![]), "[]\n"),
            (Out::Null, "null\n...\n"),
            (Out::Float(1.0), "1.0\n...\n"),
            (Out::Float(f64::INFINITY), ".inf\n...\n"),
        ] {
            assert_eq!(yaml_document(&v).unwrap(), want, "{v:?}");
        }
        for s in ["é", "a\nb", &"word ".repeat(20)] {
            let e = yaml_document(&Out::Map(vec![("s".into(), Out::Str(s.to_owned()))]));
            assert!(
                e.unwrap_err().contains("outside ringperf's Jinja2 subset"),
                "{s:?}"
            );
        }
    }

    /// The expected text is orjson 3.11's `dumps(v, option=OPT_INDENT_2)` of the same value.
    #[test]
    fn json_is_written_as_orjson_writes_it() {
        let v = Out::Map(vec![
            (
                "a".into(),
                Out::List(vec![
                    Out::Int(1),
                    Out::Float(2.5),
                    Out::Float(1e16),
                    Out::Float(1.5e-7),
                    Out::Float(0.1),
                    Out::Float(1e22),
                    Out::Float(123456789012345680.0),
                    Out::Null,
                    Out::Bool(true),
                    Out::Str("é\u{1}\"\\/\t".into()),
                    Out::List(vec![]),
                    Out::Map(vec![]),
                ]),
            ),
            ("b".into(), Out::Map(vec![])),
        ]);
        let mut s = String::new();
        json(&v, 0, &mut s);
        assert_eq!(
            s,
            "{\n  \"a\": [\n    1,\n    2.5,\n    1e+16,\n    1.5e-7,\n    0.1,\n    1e+22,\n    1.2345678901234568e+17,\n    null,\n    true,\n    \"é\\u0001\\\"\\\\/\\t\",\n    [],\n    {}\n  ],\n  \"b\": {}\n}"
        );
        for (f, want) in [
            (1e15, "1000000000000000.0"),
            (1e-5, "0.00001"),
            (1.5e-5, "0.000015"),
            (1e-6, "1e-6"),
            (9.99e-6, "9.99e-6"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (3.0, "3.0"),
            (f64::NAN, "null"),
        ] {
            assert_eq!(orjson_float(f), want, "{f}");
        }
    }

    #[test]
    fn run_names_follow_the_artifact_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let job = tmp.path().join("bench");
        std::fs::create_dir_all(job.join("1733497000")).unwrap();
        let n = RunNames::new(&job, "m", "http://u:p@h:1/v1?x=1", None, 7);
        assert_eq!((n.epoch.as_str(), n.job_name.as_str()), ("7", "bench"));
        assert_eq!(n.endpoint_url, "http://<redacted>@h:1/v1?x=1");
        let n = RunNames::new(&job.join("1733497000"), "m", "h:1", Some("ns".into()), 7);
        assert_eq!(
            (n.epoch.as_str(), n.job_name.as_str(), n.namespace.as_str()),
            ("1733497000", "bench", "ns")
        );
        assert_eq!(n.endpoint_url, "h:1");
    }

    #[test]
    fn files_are_rendered_coerced_and_kept_inside_the_run_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let files = UserFiles {
            files: vec![
                UserFile {
                    path: "a/b.json".into(),
                    format: UserFileFormat::Json,
                    content: json!({"n": "{{ n }}", "s": "{{ model }}-{{ epoch }}", "lit": "42"}),
                },
                UserFile {
                    path: "t.txt".into(),
                    format: UserFileFormat::Text,
                    content: json!("{{ n }} {{ job_name }}\n"),
                },
            ],
            variables: serde_json::from_value(json!({"n": 3, "model": "shadowed"})).unwrap(),
        };
        let names = RunNames::new(tmp.path(), "m", "http://h:1", None, 99);
        write(&files, tmp.path(), &names).unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/b.json")).unwrap(),
            "{\n  \"n\": 3,\n  \"s\": \"m-99\",\n  \"lit\": \"42\"\n}"
        );
        let text = std::fs::read_to_string(tmp.path().join("t.txt")).unwrap();
        assert_eq!(text, format!("3 {}\n", names.job_name));
        let mut bad = files.clone();
        bad.files[0].content = json!({"x": "{{ nope }}"});
        let e = write(&bad, tmp.path(), &names).unwrap_err();
        assert!(e.contains("'nope' is undefined"), "{e}");
        let query = RunNames::new(tmp.path(), "m", "http://h:1/?api_key=s", None, 1);
        bad.files[0].content = json!({"x": "{{ endpoint_url }}"});
        let e = write(&bad, tmp.path(), &query).unwrap_err();
        assert!(e.contains("query string"), "{e}");
    }
}
