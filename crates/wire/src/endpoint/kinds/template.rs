//! User-templated payloads (`template`; AIPerf's `template_endpoint.py`): each turn's body is a
//! Jinja template (`--extra-inputs payload_template:` a built-in name, a file or the template
//! text) rendered with the turn's variables, which must give a JSON object; the other
//! `--extra-inputs`, then the turn's own extras, are merged on top. Nothing is appended to the
//! URL. The answer is read at the `response_field` path when one is given (a path that finds
//! nothing is no content, never a fall-back), else by AIPerf's auto-detection (as `raw`).
//!
//! Rendering needs the template engine (minijinja), which only the `engine` feature builds:
//! without it a [`PayloadTemplate`] cannot be made and the pure core only parses answers.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::raw::{self, Detected};
use super::{Descriptor, truthy};
use crate::endpoint::payload::{PayloadParams, TurnBody};
use crate::endpoint::response::ParsedResponse;

pub(crate) const DESCRIPTOR: Descriptor = Descriptor {
    supports_streaming: true,
    produces_tokens: true,
    sse_done_is_text: true,
    media: crate::endpoint::MediaCaps::IMAGE_URL_PARTS,
    ..Descriptor::new("", build, super::text_parts, parse)
};

/// AIPerf's built-in templates, by name.
pub const NAMED_TEMPLATES: [(&str, &str); 1] = [("nv-embedqa", r#"{"text": {{ texts|tojson }}}"#)];

/// A compiled payload template and the response path that goes with it.
pub struct PayloadTemplate {
    /// The template text (a built-in name already replaced by its text).
    source: String,
    response_field: Option<Arc<FieldPath>>,
    #[cfg(feature = "template")]
    env: minijinja::Environment<'static>,
}

impl fmt::Debug for PayloadTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PayloadTemplate")
            .field("source", &self.source)
            .field("response_field", &self.response_field)
            .finish()
    }
}

impl PartialEq for PayloadTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.response_field == other.response_field
    }
}

impl PayloadTemplate {
    /// The template text that is rendered.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The `response_field` path answers are read at (`None`: auto-detection).
    pub fn response_field(&self) -> Option<&Arc<FieldPath>> {
        self.response_field.as_ref()
    }
}

#[cfg(feature = "template")]
mod render {
    use std::fmt::Write as _;
    use std::sync::Arc;

    use minijinja::value::ValueKind;
    use minijinja::{Environment, Error, ErrorKind, Output, State, Value as Jinja};
    use serde_json::{Map, Value, json};

    use super::{FieldPath, FieldPathError, NAMED_TEMPLATES, PayloadTemplate};
    use crate::conversation::{Content, Media, Turn};
    use crate::endpoint::payload::PayloadParams;

    const NAME: &str = "payload_template";

    /// Why a payload template does not compile or a turn does not render through it.
    #[derive(Debug)]
    pub enum TemplateError {
        /// The template text is not valid Jinja.
        Compile(Error),
        /// The `response_field` path is outside the subset ringperf reads.
        ResponseField(FieldPathError),
        /// The compiled template is not in its environment.
        Missing(Error),
        /// Rendering failed.
        Render(Error),
        /// The rendering is JSON but not an object.
        NotAnObject {
            /// What it is instead (`"an array"`, …).
            kind: &'static str,
            /// The rendering's start.
            excerpt: String,
        },
        /// The rendering is not JSON.
        NotJson {
            /// The JSON parser's complaint.
            source: serde_json::Error,
            /// The rendering's start.
            excerpt: String,
        },
    }

    impl std::fmt::Display for TemplateError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                TemplateError::Compile(e) => {
                    write!(f, "the payload template does not compile: {e:#}")
                }
                TemplateError::ResponseField(e) => write!(f, "{e}"),
                TemplateError::Missing(e) => write!(f, "the payload template is missing: {e}"),
                TemplateError::Render(e) => {
                    write!(f, "the payload template does not render: {e:#}")
                }
                TemplateError::NotAnObject { kind, excerpt } => write!(
                    f,
                    "the payload template must render a JSON object, not {kind}: {excerpt}"
                ),
                TemplateError::NotJson { source, excerpt } => write!(
                    f,
                    "the payload template did not render valid JSON ({source}): {excerpt}"
                ),
            }
        }
    }

    impl std::error::Error for TemplateError {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            match self {
                TemplateError::Compile(e)
                | TemplateError::Missing(e)
                | TemplateError::Render(e) => Some(e),
                TemplateError::ResponseField(e) => Some(e),
                TemplateError::NotJson { source, .. } => Some(source),
                TemplateError::NotAnObject { .. } => None,
            }
        }
    }

    impl PayloadTemplate {
        /// Compiles `template` (a built-in name, else the template text itself) and
        /// `response_field` (`None` or `"text"`: auto-detection, as AIPerf).
        pub fn compile(
            template: &str,
            response_field: Option<&str>,
        ) -> Result<Self, TemplateError> {
            let source = NAMED_TEMPLATES
                .iter()
                .find(|(name, _)| *name == template)
                .map_or(template, |(_, text)| text)
                .to_string();
            let mut env = Environment::new();
            // AIPerf renders with `autoescape=True` and Python's `str()`: a plain value is
            // HTML-escaped the way Jinja2 (markupsafe) escapes it, `None` / `True` / `False` are
            // spelled as Python spells them; `tojson` output is safe and written as it is.
            env.set_formatter(python_formatter);
            env.add_filter("tojson", sorted_tojson);
            env.add_template_owned(NAME, source.clone())
                .map_err(TemplateError::Compile)?;
            let response_field = match response_field {
                None | Some("text") => None,
                Some(path) => Some(Arc::new(
                    FieldPath::parse(path).map_err(TemplateError::ResponseField)?,
                )),
            };
            Ok(Self {
                source,
                response_field,
                env,
            })
        }

        /// The body of `turn`: the rendered template as a JSON object, `--extra-inputs` (less
        /// the template's own keys) and the turn's extras merged on top.
        pub fn render(
            &self,
            params: &PayloadParams,
            turn: &Turn,
        ) -> Result<Map<String, Value>, TemplateError> {
            let text = self.render_text(params, turn)?;
            let mut body = match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(body)) => body,
                Ok(other) => {
                    return Err(TemplateError::NotAnObject {
                        kind: kind_name(&other),
                        excerpt: excerpt(&text),
                    });
                }
                Err(source) => {
                    return Err(TemplateError::NotJson {
                        source,
                        excerpt: excerpt(&text),
                    });
                }
            };
            crate::endpoint::kinds::merge_extras(&mut body, params, turn);
            Ok(body)
        }
    }

    impl PayloadTemplate {
        /// The template rendered for `turn`, as text (before it is read as JSON).
        pub fn render_text(
            &self,
            params: &PayloadParams,
            turn: &Turn,
        ) -> Result<String, TemplateError> {
            let tmpl = self
                .env
                .get_template(NAME)
                .map_err(TemplateError::Missing)?;
            tmpl.render(minijinja::value::Serde(variables(params, turn)))
                .map_err(TemplateError::Render)
        }
    }

    fn kind_name(v: &Value) -> &'static str {
        match v {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }

    /// The first 200 characters of a rendering, for an error message.
    fn excerpt(text: &str) -> String {
        let mut out: String = text.chars().take(200).collect();
        if out.len() < text.len() {
            out.push('…');
        }
        out
    }

    /// AIPerf's template variables for `turn` (`template_endpoint.format_payload`). The turn's
    /// texts are one text named `text` (a rankings turn: `query` and `passages`); its media
    /// fill `images` / `audios` / `videos` (data URIs or URLs; a clip as `<format>,<base64>`)
    /// and their first `image` / `audio` / `video`, unnamed, so the `*_by_name` maps of media
    /// are empty; `turns` holds this turn only (every body is rendered alone); `request_info`
    /// is not defined.
    pub(super) fn variables(params: &PayloadParams, turn: &Turn) -> Value {
        let named: Vec<(&str, Vec<&str>)> = match &turn.content {
            Content::Texts(texts) => vec![("text", texts.iter().map(String::as_str).collect())],
            Content::Rankings { query, passages } => vec![
                ("query", vec![query.as_str()]),
                ("passages", passages.iter().map(String::as_str).collect()),
            ],
            Content::Messages(_) | Content::Raw(_) => Vec::new(),
        };
        // AIPerf skips a text with no contents.
        let named: Vec<(&str, Vec<&str>)> =
            named.into_iter().filter(|(_, c)| !c.is_empty()).collect();
        let texts: Vec<&str> = named.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        let mut by_name = Map::new();
        for (name, contents) in &named {
            by_name.insert((*name).to_string(), json!(contents));
        }
        let queries: Vec<&str> = lookup(&named, "query");
        let mut passages = lookup(&named, "passages");
        if passages.is_empty() {
            passages = lookup(&named, "passage");
        }
        let of = |pick: fn(&Media) -> Option<&str>| -> Vec<&str> {
            turn.media
                .iter()
                .filter_map(pick)
                .filter(|c| !c.is_empty())
                .collect()
        };
        let images = of(Media::image_url);
        let audios = of(|m| match m {
            Media::Audio(clip) => Some(clip),
            _ => None,
        });
        let videos = of(|m| match m {
            Media::Video(url) => Some(url),
            _ => None,
        });
        // The turn's own media lists: one unnamed item holding every content, as a loader's.
        let items = |contents: &[&str]| -> Value {
            if contents.is_empty() {
                json!([])
            } else {
                json!([{"name": "", "contents": contents}])
            }
        };
        let turn_value = json!({
            "texts": named
                .iter()
                .map(|(name, contents)| json!({"name": name, "contents": contents}))
                .collect::<Vec<_>>(),
            "images": items(&images),
            "audios": items(&audios),
            "videos": items(&videos),
            "model": params.model_for(turn),
            "role": turn.role,
            "max_tokens": turn.max_tokens,
            "timestamp": turn.timestamp_ms,
            "delay": turn.delay_ms,
        });
        json!({
            "texts": texts,
            "images": images,
            "audios": audios,
            "videos": videos,
            "text": texts.first(),
            "image": images.first(),
            "audio": audios.first(),
            "video": videos.first(),
            "queries": queries,
            "passages": passages,
            "query": queries.first(),
            "passage": passages.first(),
            "texts_by_name": by_name,
            "images_by_name": {},
            "audios_by_name": {},
            "videos_by_name": {},
            "model": params.model_for(turn),
            "max_tokens": turn.max_tokens,
            "role": turn.role,
            "turn": turn_value.clone(),
            "turns": [turn_value],
            "stream": params.streaming,
        })
    }

    fn lookup<'a>(named: &[(&str, Vec<&'a str>)], name: &str) -> Vec<&'a str> {
        named
            .iter()
            .filter(|(n, _)| *n == name)
            .flat_map(|(_, c)| c.iter().copied())
            .collect()
    }

    /// Jinja2's `tojson` sorts every object's keys (`htmlsafe_json_dumps`, `sort_keys=True`);
    /// minijinja keeps maps in insertion order (its `preserve_order`, which chat templates need),
    /// so they are sorted here before its HTML-safe `tojson` writes them.
    fn sorted_tojson(
        value: &Jinja,
        indent: Option<Jinja>,
        kwargs: minijinja::value::Kwargs,
    ) -> Result<Jinja, Error> {
        fn sorted(v: &Jinja) -> Result<Jinja, Error> {
            Ok(match v.kind() {
                ValueKind::Map => {
                    let mut keys: Vec<Jinja> = v.try_iter()?.collect();
                    keys.sort();
                    let pairs = keys
                        .into_iter()
                        .map(|k| Ok((k.clone(), sorted(&v.get_item(&k)?)?)))
                        .collect::<Result<Vec<_>, Error>>()?;
                    Jinja::from_pairs(pairs)
                }
                ValueKind::Seq => Jinja::from(v.try_iter()?.map(|x| sorted(&x)).collect::<Result<
                    Vec<_>,
                    Error,
                >>(
                )?),
                _ => v.clone(),
            })
        }
        minijinja::filters::tojson(&sorted(value)?, indent, kwargs)
    }

    /// Writes a value as Jinja2 with `autoescape=True` writes it: undefined as nothing, `None`,
    /// `True`, `False` in Python's spelling, a safe string (`tojson`, `|safe`) verbatim, anything
    /// else as text escaped by markupsafe's rules.
    fn python_formatter(
        out: &mut Output<'_>,
        _: &mut State<'_, '_>,
        value: &Jinja,
    ) -> Result<(), Error> {
        let write_err = |e: std::fmt::Error| Error::new(ErrorKind::WriteFailure, e.to_string());
        if value.is_undefined() {
            return Ok(());
        }
        if value.is_safe() {
            return write!(out, "{value}").map_err(write_err);
        }
        let plain = match value.kind() {
            ValueKind::None => "None".to_string(),
            ValueKind::Bool => if value.is_true() { "True" } else { "False" }.to_string(),
            _ => value.to_string(),
        };
        for c in plain.chars() {
            match c {
                '&' => out.write_str("&amp;"),
                '<' => out.write_str("&lt;"),
                '>' => out.write_str("&gt;"),
                '\'' => out.write_str("&#39;"),
                '"' => out.write_str("&#34;"),
                c => out.write_char(c),
            }
            .map_err(write_err)?;
        }
        Ok(())
    }
}

/// A turn's body: the rendered template with the extras merged (see [`PayloadTemplate`]). A turn
/// that does not render gives `{}`: the run checks every turn before it starts
/// ([`PayloadTemplate::render`]), so none is ever sent that way.
fn build(params: &PayloadParams, parts: &TurnBody<'_>) -> Map<String, Value> {
    #[cfg(feature = "template")]
    if let Some(t) = &params.template {
        return t.render(params, parts.turn).unwrap_or_default();
    }
    let _ = (params, parts);
    Map::new()
}

/// One response object: with a `response_field`, the value at that path converted by shape (no
/// match, a falsy value or an unconvertible one: no content); else as `raw` reads it. A falsy
/// or undecodable JSON value is its own text either way.
fn parse(bytes: &[u8], stamp_ns: u64, out: &mut ParsedResponse) {
    let Some(field) = out.response_field.clone() else {
        return raw::parse(bytes, stamp_ns, out);
    };
    let Some(value) = serde_json::from_slice::<Value>(bytes).ok().filter(truthy) else {
        return raw::parse(bytes, stamp_ns, out);
    };
    match field
        .search(&value)
        .filter(|v| truthy(v))
        .and_then(raw::convert)
    {
        Some(Detected::Text(text)) => out.add_text(stamp_ns, &text),
        Some(Detected::Data) => out.add_data(stamp_ns),
        None => {}
    }
}

/// The subset of JMESPath ringperf reads `response_field` with: fields joined by `.` (a field is
/// an identifier, `[A-Za-z_][A-Za-z0-9_]*`, or a double-quoted JSON string) and `[N]` indices
/// (negative from the end), e.g. `choices[0].message.content`, `data[-1].embedding`,
/// `"output-text"`. As in JMESPath, a field of a non-object or an index out of range or of a
/// non-array is `null`. Wildcards, slices, filters, pipes and functions are refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPath {
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(i64),
}

/// A `response_field` expression outside the subset [`FieldPath`] reads: the expression and
/// what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldPathError {
    expr: String,
    why: PathFault,
}

/// What is wrong with a `response_field` expression.
#[derive(Clone, Debug, PartialEq, Eq)]
enum PathFault {
    DotThenIndex,
    UnclosedBracket,
    NotAnIndex(String),
    UnclosedQuote,
    BadQuote,
    LeadingDigit,
    Unsupported(String),
    Empty,
    TrailingDot,
}

impl fmt::Display for PathFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathFault::DotThenIndex => f.write_str("`.` must be followed by a field"),
            PathFault::UnclosedBracket => f.write_str("`[` is not closed"),
            PathFault::NotAnIndex(inner) => write!(f, "`[{inner}]` is not an index"),
            PathFault::UnclosedQuote => f.write_str("a quoted field is not closed"),
            PathFault::BadQuote => f.write_str("a quoted field is not a valid JSON string"),
            PathFault::LeadingDigit => {
                f.write_str("a field cannot start with a digit (an index is written `[N]`)")
            }
            PathFault::Unsupported(rest) => write!(f, "unsupported syntax at `{rest}`"),
            PathFault::Empty => f.write_str("the path is empty"),
            PathFault::TrailingDot => f.write_str("the path ends with `.`"),
        }
    }
}

impl fmt::Display for FieldPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "response_field `{}`: {} (ringperf reads the JMESPath subset of dotted fields and \
             [N] indices, e.g. `choices[0].message.content`)",
            self.expr, self.why
        )
    }
}

impl std::error::Error for FieldPathError {}

impl FieldPath {
    /// Parses `expr`; an expression outside the subset is an error that says so.
    pub fn parse(expr: &str) -> Result<Self, FieldPathError> {
        let refuse = |why: PathFault| {
            Err(FieldPathError {
                expr: expr.to_string(),
                why,
            })
        };
        let b = expr.as_bytes();
        let mut steps = Vec::new();
        let mut i = 0;
        // A field is expected at the start and after every `.`.
        let mut want_field = true;
        while i < b.len() {
            match b[i] {
                b'[' => {
                    if want_field && !steps.is_empty() {
                        return refuse(PathFault::DotThenIndex);
                    }
                    let Some(len) = b[i + 1..].iter().position(|&c| c == b']') else {
                        return refuse(PathFault::UnclosedBracket);
                    };
                    let inner = &expr[i + 1..i + 1 + len];
                    let valid = !inner.is_empty()
                        && inner
                            .strip_prefix('-')
                            .unwrap_or(inner)
                            .bytes()
                            .all(|c| c.is_ascii_digit());
                    let Some(n) = valid.then(|| inner.parse::<i64>().ok()).flatten() else {
                        return refuse(PathFault::NotAnIndex(inner.to_string()));
                    };
                    steps.push(Step::Index(n));
                    i += len + 2;
                    want_field = false;
                }
                b'.' if !want_field => {
                    want_field = true;
                    i += 1;
                }
                b'"' if want_field => {
                    let mut end = i + 1;
                    while end < b.len() && b[end] != b'"' {
                        end += if b[end] == b'\\' { 2 } else { 1 };
                    }
                    if end >= b.len() {
                        return refuse(PathFault::UnclosedQuote);
                    }
                    let Ok(name) = serde_json::from_str::<String>(&expr[i..=end]) else {
                        return refuse(PathFault::BadQuote);
                    };
                    steps.push(Step::Field(name));
                    i = end + 1;
                    want_field = false;
                }
                c if want_field && (c.is_ascii_alphabetic() || c == b'_') => {
                    let len = b[i..]
                        .iter()
                        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                        .unwrap_or(b.len() - i);
                    steps.push(Step::Field(expr[i..i + len].to_string()));
                    i += len;
                    want_field = false;
                }
                c if want_field && c.is_ascii_digit() => {
                    return refuse(PathFault::LeadingDigit);
                }
                _ => {
                    let rest: String = expr[i..].chars().take(12).collect();
                    return refuse(PathFault::Unsupported(rest));
                }
            }
        }
        if want_field {
            return refuse(if steps.is_empty() {
                PathFault::Empty
            } else {
                PathFault::TrailingDot
            });
        }
        Ok(Self { steps })
    }

    /// The value at this path in `value`; `None` for JMESPath's `null`.
    pub fn search<'a>(&self, value: &'a Value) -> Option<&'a Value> {
        let mut at = value;
        for step in &self.steps {
            at = match (step, at) {
                (Step::Field(name), Value::Object(map)) => map.get(name)?,
                (Step::Index(n), Value::Array(items)) => {
                    let len = items.len() as i64;
                    let idx = if *n < 0 { len + n } else { *n };
                    items.get(usize::try_from(idx).ok()?)?
                }
                _ => return None,
            };
        }
        (!at.is_null()).then_some(at)
    }
}
