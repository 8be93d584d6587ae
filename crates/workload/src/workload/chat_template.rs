//! `--apply-chat-template`: the model's own Jinja chat template, rendered with minijinja the way
//! Hugging Face transformers' `apply_chat_template` renders it (docs/tokenizer.md).
//!
//! Where it comes from, as transformers reads a local tokenizer directory: `chat_template.jinja`
//! (the default template) and `additional_chat_templates/*.jinja` (named ones) take priority
//! over `tokenizer_config.json`'s `chat_template`, a string or a list of `{name, template}`. With
//! several templates the one named `default` is used; without one it is an error, as in
//! transformers. The special tokens the template sees (`bos_token`, `eos_token`, …) come from
//! `tokenizer_config.json` (a string or an `{"content": …}` object), else
//! `special_tokens_map.json`.
//!
//! How it renders, as transformers' sandboxed Jinja environment: `trim_blocks` and
//! `lstrip_blocks` on, the trailing newline dropped, loop controls; `messages`, `tools` and
//! `documents` (none), `add_generation_prompt` and the special tokens as variables;
//! `raise_exception(msg)` and `strftime_now(fmt)` (local time) as functions; `tojson` as
//! Python's `json.dumps` (no HTML escaping; `indent`, `separators`, `sort_keys`,
//! `ensure_ascii`); and the Python `str` / `dict` methods templates call (`strip`, `split`,
//! `startswith`, `items`, `get`, …).
//!
//! What it counts, as AIPerf 0.13's record processor: a request whose body carries a chat
//! `messages` (or Responses `input`) item array is counted as the template rendered over the
//! role / text view of those items (`add_generation_prompt` on), tokenized without added special
//! tokens; any other body, or a render that fails, is counted on its bare text as without the
//! flag.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Environment, Error as JinjaError, ErrorKind, Value};
use serde_json::{Map, Value as Json};

use ringperf_wire::endpoint::EndpointKind;

/// The template's name inside the environment.
const NAME: &str = "chat_template";

/// The special tokens transformers passes to the template (its `special_tokens_map` keys).
const SPECIAL_TOKENS: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// A compiled chat template and what it is rendered with.
pub struct ChatTemplate {
    /// Where it was read, for messages: a file, and the template's name when it had several.
    origin: String,
    env: Environment<'static>,
    /// The special tokens, as template variables.
    specials: Map<String, Json>,
    /// Set once a render failed (its first failure is reported, the rest are counted bare).
    failed: AtomicBool,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChatTemplate({})", self.origin)
    }
}

/// Why a chat template could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum ChatTemplateError {
    /// The tokenizer has no chat template.
    Missing { dir: PathBuf },
    /// A file could not be read or is not what transformers expects.
    Unreadable { path: PathBuf, reason: String },
    /// Several templates, none named `default`.
    NoDefault { origin: String, names: Vec<String> },
    /// The template does not compile, or does not render a one-message conversation.
    Broken { origin: String, reason: String },
}

impl std::fmt::Display for ChatTemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChatTemplateError::Missing { dir } => write!(
                f,
                "--apply-chat-template: the tokenizer in {} has no chat template (no \
                 chat_template.jinja, and no chat_template in tokenizer_config.json)",
                dir.display()
            ),
            ChatTemplateError::Unreadable { path, reason } => {
                write!(
                    f,
                    "cannot read the chat template in {}: {reason}",
                    path.display()
                )
            }
            ChatTemplateError::NoDefault { origin, names } => write!(
                f,
                "{origin} has multiple chat templates with no default specified; template names \
                 are {names:?}"
            ),
            ChatTemplateError::Broken { origin, reason } => {
                write!(f, "the chat template in {origin} cannot be used: {reason}")
            }
        }
    }
}

impl std::error::Error for ChatTemplateError {}

impl ChatTemplate {
    /// Reads the chat template of the tokenizer directory `dir`; `Missing` when it has none.
    pub fn load(dir: &Path) -> Result<ChatTemplate, ChatTemplateError> {
        let config_path = dir.join("tokenizer_config.json");
        let config = read_json(&config_path)?;
        let (origin, source) = pick_template(dir, &config_path, config.as_ref())?;
        let mut specials = Map::new();
        let map_path = dir.join("special_tokens_map.json");
        let map = read_json(&map_path)?;
        for key in SPECIAL_TOKENS {
            let from = |v: Option<&Json>| v.and_then(|m| m.get(key)).and_then(token_text);
            if let Some(t) = from(config.as_ref()).or_else(|| from(map.as_ref())) {
                specials.insert(key.to_owned(), Json::String(t));
            }
        }
        let mut env = environment();
        env.add_template_owned(NAME, source)
            .map_err(|e| ChatTemplateError::Broken {
                origin: origin.clone(),
                reason: describe(&e),
            })?;
        let template = ChatTemplate {
            origin,
            env,
            specials,
            failed: AtomicBool::new(false),
        };
        // A template that cannot render one user message would fail every request.
        let probe = vec![json_message("user", "Hello")];
        template
            .render(&probe, true)
            .map_err(|e| ChatTemplateError::Broken {
                origin: template.origin.clone(),
                reason: describe(&e),
            })?;
        Ok(template)
    }

    /// Where the template was read.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The template rendered over `messages` (each a JSON object), as transformers'
    /// `apply_chat_template(messages, tokenize=False, add_generation_prompt=…)`.
    pub fn render(
        &self,
        messages: &[Json],
        add_generation_prompt: bool,
    ) -> Result<String, JinjaError> {
        let mut ctx = self.specials.clone();
        ctx.insert("messages".into(), Json::Array(messages.to_vec()));
        ctx.insert("tools".into(), Json::Null);
        ctx.insert("documents".into(), Json::Null);
        ctx.insert(
            "add_generation_prompt".into(),
            Json::Bool(add_generation_prompt),
        );
        self.env
            .get_template(NAME)?
            .render(minijinja::value::Serde(&ctx))
    }

    /// The rendered text of the request `body` sent to a `kind` endpoint, when its body is
    /// chat-shaped; `None` otherwise, or when the render failed (the first failure is reported
    /// on stderr, naming the template and the reason).
    pub fn render_request(&self, kind: EndpointKind, body: &[u8]) -> Option<String> {
        let value: Json = serde_json::from_slice(body).ok()?;
        let messages = chat_view(kind, &value)?;
        match self.render(&messages, true) {
            Ok(text) => Some(text),
            Err(e) => {
                if !self.failed.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "ringperf: warning: the chat template in {} failed on a request ({}); \
                         such requests' ISL is counted on their bare text, as AIPerf does",
                        self.origin,
                        describe(&e)
                    );
                }
                None
            }
        }
    }
}

/// Sentences the overhead probe wraps (any plain text does; three smooth out a merge across a
/// template's boundary).
const PROBES: [&str; 3] = [
    "Good morning, could you help me plan a short trip?",
    "Please list three prime numbers greater than ten.",
    "Why is the sky blue during the day?",
];

impl ChatTemplate {
    /// The template's token overhead as AIPerf models it for synthetic prompts: `(fixed, wrap)`,
    /// what one request adds once (default system message, BOS, the generation prompt) and what
    /// each message adds (role header, end of turn), measured by rendering one and three messages
    /// around the same text, counted with `count`, and averaged over three texts. `(0, 0)` when a
    /// probe fails or comes out negative (no compensation rather than a wrong one).
    pub fn overheads(&self, count: impl Fn(&str) -> usize) -> (u32, u32) {
        let mut fixed = 0.0;
        let mut wrap = 0.0;
        for text in PROBES {
            let one = vec![json_message("user", text)];
            let three = vec![
                json_message("user", text),
                json_message("assistant", text),
                json_message("user", text),
            ];
            let (Ok(one), Ok(three)) = (self.render(&one, true), self.render(&three, true)) else {
                return (0, 0);
            };
            let bare = count(text) as f64;
            let one = count(&one) as f64;
            let three = count(&three) as f64;
            let w = (three - one - 2.0 * bare) / 2.0;
            let f = one - bare - w;
            if w < 0.0 || f < 0.0 {
                return (0, 0);
            }
            wrap += w;
            fixed += f;
        }
        let n = PROBES.len() as f64;
        ((fixed / n).round() as u32, (wrap / n).round() as u32)
    }
}

/// A `{role, content}` message.
fn json_message(role: &str, content: &str) -> Json {
    let mut m = Map::new();
    m.insert("role".into(), Json::String(role.into()));
    m.insert("content".into(), Json::String(content.into()));
    Json::Object(m)
}

/// A minijinja error with its cause chain, on one line.
fn describe(e: &JinjaError) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// The JSON in `path`, `None` when there is no such file.
fn read_json(path: &Path) -> Result<Option<Json>, ChatTemplateError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(ChatTemplateError::Unreadable {
                path: path.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ChatTemplateError::Unreadable {
            path: path.to_owned(),
            reason: e.to_string(),
        })
}

/// A special token's text: a string, or an added-token object's `content`.
fn token_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Object(o) => o.get("content").and_then(Json::as_str).map(str::to_owned),
        _ => None,
    }
}

/// The template transformers would use for `dir`: (where it was read, its source).
fn pick_template(
    dir: &Path,
    config_path: &Path,
    config: Option<&Json>,
) -> Result<(String, String), ChatTemplateError> {
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).map_err(|e| ChatTemplateError::Unreadable {
            path,
            reason: e.to_string(),
        })
    };
    // (name, origin, source); files first, as transformers' loader.
    let mut found: Vec<(String, String, String)> = Vec::new();
    let file = dir.join("chat_template.jinja");
    if file.is_file() {
        found.push(("default".into(), file.display().to_string(), read(file)?));
    }
    if let Ok(entries) = std::fs::read_dir(dir.join("additional_chat_templates")) {
        let mut extra: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
            .collect();
        extra.sort();
        for p in extra {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            found.retain(|(n, ..)| *n != name);
            found.push((name, p.display().to_string(), read(p.clone())?));
        }
    }
    if found.is_empty() {
        let origin = config_path.display().to_string();
        let bad = |reason: &str| ChatTemplateError::Unreadable {
            path: config_path.to_owned(),
            reason: reason.to_owned(),
        };
        match config.and_then(|c| c.get("chat_template")) {
            None | Some(Json::Null) => {
                return Err(ChatTemplateError::Missing {
                    dir: dir.to_owned(),
                });
            }
            Some(Json::String(s)) => found.push(("default".into(), origin, s.clone())),
            Some(Json::Array(list)) => {
                for t in list {
                    let name = t.get("name").and_then(Json::as_str);
                    let source = t.get("template").and_then(Json::as_str);
                    let (Some(name), Some(source)) = (name, source) else {
                        return Err(bad(
                            "a chat_template list entry needs `name` and `template`",
                        ));
                    };
                    found.push((name.into(), origin.clone(), source.into()));
                }
            }
            Some(_) => return Err(bad("chat_template is neither a string nor a list")),
        }
    }
    if found.len() == 1 && found[0].0 == "default" {
        let (_, origin, source) = found.pop().expect("one template");
        return Ok((origin, source));
    }
    match found.iter().position(|(n, ..)| n == "default") {
        Some(i) => {
            let (_, origin, source) = found.swap_remove(i);
            Ok((format!("{origin} (template \"default\")"), source))
        }
        None => Err(ChatTemplateError::NoDefault {
            origin: dir.display().to_string(),
            names: {
                let mut names: Vec<String> = found.into_iter().map(|(n, ..)| n).collect();
                names.sort();
                names
            },
        }),
    }
}

/// The role / text view of a chat-shaped body, as AIPerf's payload extraction builds it for the
/// template: each `messages` / `input` item with a string `role` becomes `{role, content}` (its
/// text parts joined; media dropped), keeping its `tool_calls`. `None` for any other body.
fn chat_view(kind: EndpointKind, payload: &Json) -> Option<Vec<Json>> {
    let mut found = false;
    let mut out = Vec::new();
    for field in ["messages", "input"] {
        let Some(items) = payload.get(field).and_then(Json::as_array) else {
            continue;
        };
        let shaped = items
            .iter()
            .any(|i| i.get("role").is_some() || i.get("type").is_some());
        if items.is_empty() || !shaped {
            continue;
        }
        found = true;
        for item in items {
            let Some(role) = item.get("role").and_then(Json::as_str) else {
                continue;
            };
            // The endpoint's own text walk over this one item: the same text parts it counts.
            let mut alone = Map::new();
            alone.insert(field.into(), Json::Array(vec![item.clone()]));
            let alone = Json::Object(alone);
            let mut texts = Vec::new();
            (kind.descriptor().input_texts)(&alone, &mut texts);
            let mut msg = json_message(role, &texts.concat());
            if let Some(calls) = item
                .get("tool_calls")
                .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
                && let Json::Object(m) = &mut msg
            {
                m.insert("tool_calls".into(), calls.clone());
            }
            out.push(msg);
        }
    }
    (found && !out.is_empty()).then_some(out)
}

/// transformers' Jinja environment, in minijinja.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    // Jinja2's defaults otherwise; building this config cannot fail (the delimiters are the
    // defaults), and the default config is what it would fall back to.
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(false)
            .build()
            .unwrap_or_default(),
    );
    env.add_function(
        "raise_exception",
        |msg: String| -> Result<Value, JinjaError> {
            Err(JinjaError::new(ErrorKind::InvalidOperation, msg))
        },
    );
    env.add_function(
        "strftime_now",
        |fmt: String| -> Result<String, JinjaError> {
            let now = jiff::Zoned::now();
            Ok(now.strftime(&fmt).to_string())
        },
    );
    env.add_filter("tojson", tojson);
    env.set_unknown_method_callback(super::pycompat::call_method);
    env
}

/// Python's `json.dumps(value, ensure_ascii=False, indent=None, separators=None,
/// sort_keys=False)`, transformers' `tojson`.
fn tojson(value: Value, kwargs: Kwargs) -> Result<String, JinjaError> {
    let ensure_ascii: bool = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
    let sort_keys: bool = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    let indent: Option<Value> = kwargs.get("indent")?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => match v.as_i64() {
            Some(n) => Some(" ".repeat(n.max(0) as usize)),
            None => Some(v.as_str().unwrap_or_default().to_owned()),
        },
    };
    let separators: Option<Value> = kwargs.get("separators")?;
    let (item_sep, key_sep) = match separators.filter(|v| !v.is_none()) {
        Some(v) => {
            let part = |i: usize| {
                v.get_item_by_index(i)
                    .ok()
                    .and_then(|s| s.as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        JinjaError::new(ErrorKind::InvalidOperation, "separators: two strings")
                    })
            };
            (part(0)?, part(1)?)
        }
        None if indent.is_some() => (",".to_owned(), ": ".to_owned()),
        None => (", ".to_owned(), ": ".to_owned()),
    };
    kwargs.assert_all_used()?;
    let style = DumpStyle {
        ensure_ascii,
        sort_keys,
        indent,
        item_sep,
        key_sep,
    };
    let mut out = String::new();
    style.dump(&value, 0, &mut out)?;
    Ok(out)
}

/// How `json.dumps` was asked to write.
struct DumpStyle {
    ensure_ascii: bool,
    sort_keys: bool,
    indent: Option<String>,
    item_sep: String,
    key_sep: String,
}

impl DumpStyle {
    fn dump(&self, v: &Value, depth: usize, out: &mut String) -> Result<(), JinjaError> {
        match v.kind() {
            ValueKind::Undefined | ValueKind::None => out.push_str("null"),
            ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
            ValueKind::Number => match v.as_i64() {
                Some(i) if v.is_integer() => out.push_str(&i.to_string()),
                _ => out.push_str(&python_float(f64::try_from(v.clone()).unwrap_or(f64::NAN))),
            },
            ValueKind::String => self.string(v.as_str().unwrap_or_default(), out),
            ValueKind::Map => {
                let mut keys: Vec<Value> = v.try_iter()?.collect();
                if self.sort_keys {
                    keys.sort_by_key(|k| k.to_string());
                }
                let items = keys
                    .into_iter()
                    .map(|k| {
                        let val = v.get_item(&k)?;
                        Ok((k, val))
                    })
                    .collect::<Result<Vec<_>, JinjaError>>()?;
                self.container(('{', '}'), items.len(), depth, out, |i, out| {
                    let (k, val) = &items[i];
                    let key = match k.as_str() {
                        Some(s) => s.to_owned(),
                        None => k.to_string(),
                    };
                    self.string(&key, out);
                    out.push_str(&self.key_sep);
                    self.dump(val, depth + 1, out)
                })?;
            }
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = v.try_iter()?.collect();
                self.container(('[', ']'), items.len(), depth, out, |i, out| {
                    self.dump(&items[i], depth + 1, out)
                })?;
            }
            _ => {
                return Err(JinjaError::new(
                    ErrorKind::InvalidOperation,
                    format!("Object of type {} is not JSON serializable", v.kind()),
                ));
            }
        }
        Ok(())
    }

    /// `open`, the `n` items written by `item`, `close`, with the separators and indent.
    fn container(
        &self,
        (open, close): (char, char),
        n: usize,
        depth: usize,
        out: &mut String,
        mut item: impl FnMut(usize, &mut String) -> Result<(), JinjaError>,
    ) -> Result<(), JinjaError> {
        out.push(open);
        if n == 0 {
            out.push(close);
            return Ok(());
        }
        for i in 0..n {
            if i > 0 {
                out.push_str(&self.item_sep);
            }
            if let Some(ind) = &self.indent {
                out.push('\n');
                out.push_str(&ind.repeat(depth + 1));
            }
            item(i, out)?;
        }
        if let Some(ind) = &self.indent {
            out.push('\n');
            out.push_str(&ind.repeat(depth));
        }
        out.push(close);
        Ok(())
    }

    /// A JSON string as Python's encoder writes it.
    fn string(&self, s: &str, out: &mut String) {
        ringperf_wire::endpoint::form::python_json_str(s, self.ensure_ascii, out);
    }
}

/// A float as Python's `repr` writes it in JSON (`1.0`, `0.5`, `1e+100`, `NaN`).
fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let s = format!("{f:?}");
    // Rust writes `1e100` / `1e-7`; Python `1e+100` / `1e-07`.
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

#[cfg(test)]
mod tests {
    // Needs the `hf-tokenizer` feature (a default one): the test tokenizers are tokenizer.json.
    use super::*;
    use crate::workload::tokenizer::{LoadOptions, load_with};

    fn fixture(dir: &str) -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/data/chat_template")
            .join(dir)
    }

    /// Every case of tests/data/chat_template/cases.json through each test tokenizer, against
    /// what transformers' `apply_chat_template` rendered and tokenized (expected.json, made by
    /// expected.py in AIPerf's venv): the same text, the same token ids, the same failures.
    #[test]
    fn renders_and_tokenizes_as_transformers() {
        let cases: Vec<Json> =
            serde_json::from_slice(&std::fs::read(fixture("cases.json")).unwrap()).unwrap();
        let expected: Map<String, Json> =
            serde_json::from_slice(&std::fs::read(fixture("expected.json")).unwrap()).unwrap();
        let opts = LoadOptions {
            apply_chat_template: true,
            ..LoadOptions::default()
        };
        for (dir, rows) in &expected {
            let tok = load_with(fixture(dir).to_str().unwrap(), &opts).unwrap();
            let template = tok.chat_template().expect("a chat template");
            for row in rows.as_array().unwrap() {
                let name = row["case"].as_str().unwrap();
                let with_prompt = row["add_generation_prompt"].as_bool().unwrap();
                let case = cases.iter().find(|c| c["name"] == name).unwrap();
                let messages = case["messages"].as_array().unwrap();
                let got = template.render(messages, with_prompt);
                let what = format!("{dir} / {name} / generation prompt {with_prompt}");
                match row.get("error") {
                    Some(err) => {
                        let msg = describe(&got.expect_err(&what));
                        // transformers: "TemplateError: Unknown role: robot".
                        let reason = err.as_str().unwrap().split_once(": ").unwrap().1;
                        assert!(msg.contains(reason), "{what}: {msg}");
                    }
                    None => {
                        let text = got.unwrap_or_else(|e| panic!("{what}: {}", describe(&e)));
                        assert_eq!(text, row["text"].as_str().unwrap(), "{what}");
                        let ids: Vec<u32> = row["ids"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|i| i.as_u64().unwrap() as u32)
                            .collect();
                        assert_eq!(tok.encode(&text), ids, "{what}");
                    }
                }
            }
        }
    }

    /// The ChatML test template by hand: one request adds `<s>`, the default system message
    /// (`<|im_start|> system you are a helpful assistant . <|im_end|>`, 9) and the generation
    /// prompt (`<|im_start|> assistant`, 2): 12; each message `<|im_start|> role … <|im_end|>`: 3.
    /// Their sum is what transformers' count of one user turn exceeds the text's by.
    #[test]
    fn overheads_of_the_chatml_template() {
        let tok = load_with(
            fixture("chatml").to_str().unwrap(),
            &LoadOptions {
                apply_chat_template: true,
                ..LoadOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            tok.chat_template().unwrap().overheads(|t| tok.count(t)),
            (12, 3)
        );
        let expected: Json =
            serde_json::from_slice(&std::fs::read(fixture("expected.json")).unwrap()).unwrap();
        let one = expected["chatml"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["case"] == "one user turn" && r["add_generation_prompt"] == true)
            .unwrap();
        let templated = one["ids"].as_array().unwrap().len();
        assert_eq!(templated - tok.count("Hello, how are you today?"), 12 + 3);
    }

    #[test]
    fn the_request_view_is_role_and_text() {
        let tok = load_with(
            fixture("named").to_str().unwrap(),
            &LoadOptions {
                apply_chat_template: true,
                ..LoadOptions::default()
            },
        )
        .unwrap();
        let body = br#"{"model":"m","messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"what is "},
             {"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"this?"}]}]}"#;
        // transformers over [{system, "be brief"}, {user, "what is this?"}] with the
        // generation prompt: the `plain` template, by hand.
        let want = "SYSTEM: be brief</s>\nUSER: what is this?</s>\nASSISTANT (2 turns):";
        let t = tok.chat_template().unwrap();
        assert_eq!(t.render_request(EndpointKind::Chat, body).unwrap(), want);
        assert_eq!(
            tok.count_input(EndpointKind::Chat, body),
            Some(tok.count(want) as u64)
        );
        // `tools` schemas are not in the template's view: their tokens are added to its count
        // (AIPerf's rule), the parameters as compact JSON.
        let with_tools = br#"{"model":"m","messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"what is "},
             {"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"this?"}]}],
            "tools":[{"type":"function","function":{"name":"look","description":"Looks.",
             "parameters":{"type":"object"}}}]}"#;
        assert_eq!(
            t.render_request(EndpointKind::Chat, with_tools).unwrap(),
            want
        );
        assert_eq!(
            tok.count_input(EndpointKind::Chat, with_tools),
            Some((tok.count(want) + tok.count(r#"look Looks. {"type":"object"}"#)) as u64)
        );
        // A completions body is not chat-shaped: its prompt text is counted bare.
        let prompt = br#"{"model":"m","prompt":"hello how are you"}"#;
        assert_eq!(t.render_request(EndpointKind::Completions, prompt), None);
        assert_eq!(tok.count_input(EndpointKind::Completions, prompt), Some(4));
    }

    #[test]
    fn template_errors_name_the_template_and_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let tj = std::fs::read(fixture("chatml").join("tokenizer.json")).unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), tj).unwrap();
        let opts = LoadOptions {
            apply_chat_template: true,
            ..LoadOptions::default()
        };
        let load = || load_with(dir.path().to_str().unwrap(), &opts).map(|_| ());
        // No template at all.
        let msg = load().unwrap_err().to_string();
        assert!(msg.contains("has no chat template"), "{msg}");
        // A syntax error.
        let config = dir.path().join("tokenizer_config.json");
        std::fs::write(
            &config,
            r#"{"chat_template": "{% for m in messages %}{{ m"}"#,
        )
        .unwrap();
        let msg = load().unwrap_err().to_string();
        assert!(msg.contains("tokenizer_config.json"), "{msg}");
        assert!(msg.contains("syntax error"), "{msg}");
        // One that cannot render a single user message.
        std::fs::write(
            &config,
            r#"{"chat_template": "{{ raise_exception('only system messages') }}"}"#,
        )
        .unwrap();
        let msg = load().unwrap_err().to_string();
        assert!(msg.contains("only system messages"), "{msg}");
        // Named templates without a default, as transformers refuses them.
        std::fs::write(
            &config,
            r#"{"chat_template": [{"name": "a", "template": "x"}, {"name": "b", "template": "y"}]}"#,
        )
        .unwrap();
        let msg = load().unwrap_err().to_string();
        assert!(
            msg.contains("no default") && msg.contains(r#"["a", "b"]"#),
            "{msg}"
        );
        // Without the flag none of this is read.
        load_with(dir.path().to_str().unwrap(), &LoadOptions::default()).unwrap();
    }

    #[test]
    fn tojson_is_python_json_dumps() {
        let env = environment();
        let r = |src: &str| env.render_str(src, ()).unwrap();
        // CPython 3.11: json.dumps({"b": [1, 2.5, None], "a": "é<>&'\n"}) and friends.
        assert_eq!(
            r(r#"{{ {"b": [1, 2.5, none], "a": "é<>&'\n"} | tojson }}"#),
            r#"{"b": [1, 2.5, null], "a": "é<>&'\n"}"#
        );
        assert_eq!(
            r(r#"{{ {"b": 1, "a": [true]} | tojson(indent=2, sort_keys=true) }}"#),
            "{\n  \"a\": [\n    true\n  ],\n  \"b\": 1\n}"
        );
        assert_eq!(
            r(r#"{{ ["é", 1e100, 0.1] | tojson(ensure_ascii=true, separators=(",", ":")) }}"#),
            r#"["\u00e9",1e+100,0.1]"#
        );
        assert_eq!(r(r#"{{ [] | tojson }}{{ {} | tojson(indent=2) }}"#), "[]{}");
    }
}
