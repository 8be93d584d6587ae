//! Token counting and prompt synthesis tokenizers (`--tokenizer`, docs/flags.md "Tokenizer").
//!
//! - `builtin`: tiktoken `o200k_base` (AIPerf's zero-network tokenizer), on tables laid out
//!   when the crate is compiled and used in place ([`super::o200k`]), its pre-tokenizer a DFA
//!   determinized then too: nothing is built or deserialized at start-up (the DFA is checked
//!   once). Its token ids equal
//!   tiktoken-rs's `encode_with_special_tokens` (the oracle in this file's property tests); no
//!   files.
//! - a Hugging Face `tokenizer.json` (feature `hf-tokenizer`): a file path, a directory holding
//!   one, or a model id: read from the local Hugging Face cache, and when it is not there
//!   fetched from the Hub into that cache as `huggingface_hub` fetches it ([`super::hub`]),
//!   unless offline mode is on (`HF_HUB_OFFLINE`).
//!
//! Encoding never adds special tokens (AIPerf uses `add_special_tokens=False`), but special
//! tokens written in the text are each one token, as a server counts them: vLLM's HF tokenizer
//! matches added special tokens in the text, and AIPerf's builtin encodes with
//! `allowed_special="all"`. So `<|endoftext|>` in a prompt counts 1, not the 7 tokens of its
//! spelling (the `hash_ids` blocks' separator, docs/datasets.md). A [`Tokenizer`] is
//! `Send + Sync`; share it with `Arc`. Tokenization runs before the run and on the aggregator
//! thread, never on a worker.
//!
//! HF `tokenizers` parallelizes batch calls with rayon. ringperf only makes single-string calls
//! and the I/O cores must stay free, so loading an HF tokenizer turns that parallelism off
//! (`tokenizers::utils::parallelism::set_parallelism(false)`), which keeps every encode on the
//! calling thread and never starts rayon's pool.

use std::fmt;
use std::path::{Path, PathBuf};

use super::chat_template::{ChatTemplate, ChatTemplateError};
use super::hub::{self, HubEnv, HubError};
use ringperf_wire::endpoint::EndpointKind;

/// The `--tokenizer` value that selects tiktoken `o200k_base`.
pub const BUILTIN: &str = "builtin";

/// `<|endoftext|>` in o200k_base: its EOS token (it has no BOS).
const O200K_ENDOFTEXT: u32 = 199_999;

/// o200k_base's special tokens: ids outside the byte-pair vocabulary that decode to their text.
const O200K_SPECIALS: [(u32, &str); 2] = [
    (O200K_ENDOFTEXT, "<|endoftext|>"),
    (200_018, "<|endofprompt|>"),
];

/// The token ids of [`Tokenizer::vocab_pools`].
#[derive(Clone, Debug, PartialEq)]
pub struct VocabPools {
    /// Decodable ids that are not special tokens, ascending.
    pub valid: Vec<u32>,
    /// Every decodable id, ascending.
    pub all: Vec<u32>,
    /// The vocabulary's size (a bound on ids, which may leave gaps).
    pub vocab_size: usize,
}

/// A loaded tokenizer.
#[derive(Clone)]
pub enum Tokenizer {
    /// tiktoken `o200k_base`, its table built on first use ([`builtin_table`]).
    Builtin(LazyBuiltin),
    /// A Hugging Face `tokenizer.json`, with the path it was loaded from.
    #[cfg(feature = "hf-tokenizer")]
    Hf(Box<HfTokenizer>),
}

/// A loaded `tokenizer.json`, where it was read, and its chat template when
/// `--apply-chat-template` asked for it.
#[cfg(feature = "hf-tokenizer")]
#[derive(Clone)]
pub struct HfTokenizer {
    tok: tokenizers::Tokenizer,
    path: PathBuf,
    chat: Option<std::sync::Arc<ChatTemplate>>,
}

/// How `--tokenizer` is loaded: the Tokenizer group's other flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `--tokenizer-revision`: a branch or tag (`refs/<rev>`) or a commit (`snapshots/<rev>`)
    /// of a model id in the hub cache; `None` (or `main`) is `refs/main`, else any snapshot.
    pub revision: Option<String>,
    /// `--tokenizer-trust-remote-code`: accepted where a `tokenizer.json` makes it needless.
    pub trust_remote_code: bool,
    /// `--apply-chat-template`: load the chat template to count ISL with.
    pub apply_chat_template: bool,
}

impl fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tokenizer::Builtin(_) => f.write_str("Tokenizer::Builtin(o200k_base)"),
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => write!(f, "Tokenizer::Hf({})", h.path.display()),
        }
    }
}

/// Why a tokenizer could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum TokenizerError {
    /// No `tokenizer.json` was found; `tried` lists every path looked at, in order.
    NotFound { spec: String, tried: Vec<PathBuf> },
    /// A `tokenizer.json` was found but could not be loaded.
    Invalid { path: PathBuf, reason: String },
    /// The spec names a Hugging Face tokenizer but the `hf-tokenizer` feature is off.
    HfDisabled { spec: String },
    /// `--tokenizer-revision`: the model is in the cache, but not at that revision.
    RevisionNotFound {
        spec: String,
        revision: String,
        tried: Vec<PathBuf>,
    },
    /// The directory has no `tokenizer.json`, only a Python tokenizer class (`auto_map`).
    RemoteCode {
        dir: PathBuf,
        class: String,
        trusted: bool,
    },
    /// `--apply-chat-template` with a template that cannot be used.
    ChatTemplate(ChatTemplateError),
    /// The model id is not in the local cache and its files could not be fetched from the Hub.
    Hub {
        spec: String,
        revision: String,
        cache: Option<PathBuf>,
        error: Box<HubError>,
        /// The paths looked at in the cache.
        tried: Vec<PathBuf>,
    },
    /// The Hub's repo has no `tokenizer.json` at that revision.
    NoTokenizerJson {
        spec: String,
        revision: String,
        commit: String,
    },
}

impl fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenizerError::NotFound { spec, tried } => {
                write!(
                    f,
                    "tokenizer {spec:?} not found (pass a tokenizer.json path, a directory \
                     holding one, a Hugging Face model id `ORG/NAME`, read from the local cache \
                     or fetched from the Hub, or `builtin`); looked at:"
                )?;
                for p in tried {
                    write!(f, "\n  {}", p.display())?;
                }
                Ok(())
            }
            TokenizerError::Invalid { path, reason } => {
                write!(f, "cannot load tokenizer {}: {reason}", path.display())
            }
            TokenizerError::HfDisabled { spec } => write!(
                f,
                "tokenizer {spec:?} needs Hugging Face support, which this build lacks \
                 (feature `hf-tokenizer`); use `builtin`"
            ),
            TokenizerError::RevisionNotFound {
                spec,
                revision,
                tried,
            } => {
                write!(
                    f,
                    "tokenizer {spec:?} has no revision {revision:?} in the local Hugging Face \
                     cache (a branch or tag is read from refs/<rev>, a commit from \
                     snapshots/<rev>); looked at:"
                )?;
                for p in tried {
                    write!(f, "\n  {}", p.display())?;
                }
                Ok(())
            }
            TokenizerError::RemoteCode {
                dir,
                class,
                trusted: false,
            } => write!(
                f,
                "The repository {} contains custom code which must be executed to correctly \
                 load the model (tokenizer_config.json's auto_map names {class} and there is no \
                 tokenizer.json). Please pass the argument `trust_remote_code=True` to allow \
                 custom code to be run: in AIPerf --tokenizer-trust-remote-code; ringperf cannot \
                 run Python tokenizer code either way (save the tokenizer as tokenizer.json)",
                dir.display()
            ),
            TokenizerError::RemoteCode {
                dir,
                class,
                trusted: true,
            } => write!(
                f,
                "--tokenizer-trust-remote-code cannot apply: the tokenizer in {} is Python code \
                 ({class}, named by tokenizer_config.json's auto_map, and no tokenizer.json), \
                 which ringperf's Rust tokenizer cannot run; save it as tokenizer.json \
                 (`AutoTokenizer.from_pretrained(..., trust_remote_code=True).save_pretrained(dir)` \
                 writes one for a fast tokenizer) or use `builtin`",
                dir.display()
            ),
            TokenizerError::ChatTemplate(e) => e.fmt(f),
            TokenizerError::Hub {
                spec,
                revision,
                cache,
                error,
                tried,
            } => {
                write!(
                    f,
                    "tokenizer {spec:?} (revision {revision:?}) is not in the local Hugging Face cache"
                )?;
                if let Some(c) = cache {
                    write!(f, " ({})", c.display())?;
                }
                match **error {
                    HubError::Offline | HubError::NoCache => write!(f, " and {error}")?,
                    _ => write!(f, " and could not be fetched from the Hub: {error}")?,
                }
                if !tried.is_empty() {
                    f.write_str("; looked at:")?;
                    for p in tried {
                        write!(f, "\n  {}", p.display())?;
                    }
                }
                Ok(())
            }
            TokenizerError::NoTokenizerJson {
                spec,
                revision,
                commit,
            } => write!(
                f,
                "the Hub's {spec} has no tokenizer.json at revision {revision:?} (commit {commit}); \
                 ringperf reads a tokenizer.json (a fast tokenizer), which transformers can make \
                 from a slow one: `AutoTokenizer.from_pretrained(...).save_pretrained(dir)`, then \
                 pass that directory; or use `builtin`"
            ),
        }
    }
}

impl std::error::Error for TokenizerError {}

/// Loads the tokenizer `spec` names, resolving in order: `builtin`; a file path; a directory
/// containing `tokenizer.json`; a Hugging Face model id in the local cache
/// (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`, layout
/// `models--ORG--NAME/snapshots/<rev>/tokenizer.json`); a model id fetched from the Hub into
/// that cache ([`hub::fetch`]).
pub fn load(spec: &str) -> Result<Tokenizer, TokenizerError> {
    load_with(spec, &LoadOptions::default())
}

/// [`load`] with the Tokenizer group's other flags: the hub-cache revision, whether remote code
/// was trusted (a Python-only tokenizer is refused either way, saying why), and the chat
/// template. The builtin tokenizer has no template: with `apply_chat_template` it is returned
/// as is (AIPerf counts bare text then); a `tokenizer.json` without one is an error.
pub fn load_with(spec: &str, opts: &LoadOptions) -> Result<Tokenizer, TokenizerError> {
    if names_builtin(spec) {
        return Ok(Tokenizer::builtin());
    }
    let env = HubEnv::from_env();
    let roots: Vec<PathBuf> = env.cache.iter().cloned().collect();
    let path = match resolve_with(spec, &roots, opts) {
        Ok(path) => path,
        Err(e @ (TokenizerError::NotFound { .. } | TokenizerError::RevisionNotFound { .. })) => {
            from_hub(spec, &env, opts, e)?
        }
        Err(e) => return Err(e),
    };
    let tok = load_file(&path)?;
    if opts.apply_chat_template {
        return attach_chat_template(tok, &path);
    }
    Ok(tok)
}

#[cfg(feature = "hf-tokenizer")]
fn attach_chat_template(tok: Tokenizer, path: &Path) -> Result<Tokenizer, TokenizerError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let chat = ChatTemplate::load(dir).map_err(TokenizerError::ChatTemplate)?;
    Ok(match tok {
        Tokenizer::Hf(mut h) => {
            h.chat = Some(std::sync::Arc::new(chat));
            Tokenizer::Hf(h)
        }
        other => other,
    })
}

#[cfg(not(feature = "hf-tokenizer"))]
fn attach_chat_template(tok: Tokenizer, _path: &Path) -> Result<Tokenizer, TokenizerError> {
    Ok(tok)
}

/// Starts building the builtin tokenizer on a background thread when `spec` names it, so that
/// what runs before the first [`load`] overlaps the build; that [`load`] then waits for it (the
/// table is one `LazyLock`) instead of starting its own. Any other spec is left to [`load`],
/// which reads it and reports its errors as before. The thread inherits the caller's signal
/// mask: call this after SIGINT and SIGTERM are blocked.
pub fn preload(spec: &str) {
    if !names_builtin(spec) {
        return;
    }
    // A thread that cannot be started only loses the overlap: `load` builds the table.
    let _ = std::thread::Builder::new()
        .name("ringperf-tokenizer".into())
        .spawn(|| {
            builtin_table();
            super::o200k::warm();
        });
}

/// The builtin tokenizer before its table is needed: a run that never counts or synthesizes a
/// prompt (its prompts loaded from a file and its token counts taken from the server's `usage`,
/// `--use-server-token-count`) never builds it (perf/README, "Start-up").
#[derive(Clone, Copy, Debug)]
pub struct LazyBuiltin(());

/// Set once anything in this process asked for the builtin table.
static BUILTIN_TABLE_USED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Marks the builtin tokenizer as used. Its tables and its pre-tokenizer's DFA are compiled in
/// ([`super::o200k`]); the DFA is checked by its first user (~0.2 ms).
fn builtin_table() {
    BUILTIN_TABLE_USED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process has built (or started building) the builtin tokenizer's table: by
/// [`preload`] or by a first count, encode or decode (`ringperf.tokenizer_loaded`).
pub fn builtin_table_used() -> bool {
    BUILTIN_TABLE_USED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether `spec` selects the builtin tokenizer.
pub fn names_builtin(spec: &str) -> bool {
    spec.trim().eq_ignore_ascii_case(BUILTIN)
}

/// The files fetched for a tokenizer: the ones this loader and the chat template read
/// (`tokenizer.json` required, the others when the repo has them).
pub const HUB_FILES: [&str; 4] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
];

/// A model id that is not cached (`not_cached` says what was looked at): its tokenizer files
/// fetched from the Hub into the cache, as transformers would fetch them. A spec that is no repo
/// id (a path, a `.json` name), that names something on disk, or a build without
/// `hf-tokenizer` keeps `not_cached`.
fn from_hub(
    spec: &str,
    env: &HubEnv,
    opts: &LoadOptions,
    not_cached: TokenizerError,
) -> Result<PathBuf, TokenizerError> {
    let revision = opts.revision.as_deref().unwrap_or("main");
    if !cfg!(feature = "hf-tokenizer")
        || !hub::is_repo_id(spec)
        || spec.ends_with(".json")
        || Path::new(spec).exists()
        || !hub::cache::is_relative(revision)
    {
        return Err(not_cached);
    }
    let tried = match not_cached {
        TokenizerError::NotFound { tried, .. } | TokenizerError::RevisionNotFound { tried, .. } => {
            tried
        }
        _ => Vec::new(),
    };
    let hub_error = |error| TokenizerError::Hub {
        spec: spec.to_owned(),
        revision: revision.to_owned(),
        cache: env.cache.clone(),
        error: Box::new(error),
        tried: tried.clone(),
    };
    let Some(cache) = &env.cache else {
        return Err(hub_error(HubError::NoCache));
    };
    if env.offline {
        return Err(hub_error(HubError::Offline));
    }
    eprintln!(
        "ringperf: tokenizer {spec} (revision {revision}) is not in the local Hugging Face cache; \
         fetching its files from {} into {}",
        env.endpoint,
        cache.display()
    );
    let fetched = hub::fetch(env, cache, spec, revision, &HUB_FILES).map_err(hub_error)?;
    if fetched.present.iter().any(|f| f == "tokenizer.json") {
        return Ok(fetched.snapshot.join("tokenizer.json"));
    }
    if fetched.snapshot.is_dir() {
        check_remote_code(&fetched.snapshot, opts)?;
    }
    Err(TokenizerError::NoTokenizerJson {
        spec: spec.to_owned(),
        revision: revision.to_owned(),
        commit: fetched.commit,
    })
}

/// Finds the `tokenizer.json` that `spec` names, searching `cache_roots` for model ids.
#[cfg(test)]
fn resolve(spec: &str, cache_roots: &[PathBuf]) -> Result<PathBuf, TokenizerError> {
    resolve_with(spec, cache_roots, &LoadOptions::default())
}

/// The Python tokenizer class `dir`'s `tokenizer_config.json` names in `auto_map`, if any
/// (`AutoTokenizer`: a string, or `[slow, fast]` with either null).
fn remote_tokenizer_class(dir: &Path) -> Option<String> {
    let text = std::fs::read(dir.join("tokenizer_config.json")).ok()?;
    let config: serde_json::Value = serde_json::from_slice(&text).ok()?;
    let entry = config.get("auto_map")?.get("AutoTokenizer")?;
    match entry {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(a) => a.iter().rev().find_map(|v| v.as_str().map(str::to_owned)),
        _ => None,
    }
}

/// A directory with no `tokenizer.json` that names a Python tokenizer class: refused.
fn check_remote_code(dir: &Path, opts: &LoadOptions) -> Result<(), TokenizerError> {
    match remote_tokenizer_class(dir) {
        Some(class) => Err(TokenizerError::RemoteCode {
            dir: dir.to_owned(),
            class,
            trusted: opts.trust_remote_code,
        }),
        None => Ok(()),
    }
}

/// [`resolve`] at `opts.revision` (model ids only: a path has no revisions), refusing a
/// directory whose tokenizer is Python code.
fn resolve_with(
    spec: &str,
    cache_roots: &[PathBuf],
    opts: &LoadOptions,
) -> Result<PathBuf, TokenizerError> {
    let mut tried = Vec::new();
    let direct = PathBuf::from(spec);
    if direct.is_file() {
        return Ok(direct);
    }
    tried.push(direct.clone());
    let in_dir = direct.join("tokenizer.json");
    if in_dir.is_file() {
        return Ok(in_dir);
    }
    if direct.is_dir() {
        check_remote_code(&direct, opts)?;
    }
    tried.push(in_dir);
    let revision = opts.revision.as_deref().filter(|r| *r != "main");
    // A model id is `ORG/NAME` or `NAME`; the cache keeps it as `models--ORG--NAME`.
    let id = spec.trim_matches('/');
    let looks_like_id = !id.is_empty() && !id.contains("..") && id.split('/').count() <= 2;
    if looks_like_id {
        let folder = format!("models--{}", id.replace('/', "--"));
        for root in cache_roots {
            let model = root.join(&folder);
            if let Some(rev) = revision {
                if let Some(found) = at_revision(&model, rev, opts, &mut tried)? {
                    return Ok(found);
                }
                continue;
            }
            // `refs/main` names the snapshot the hub client considers current; prefer it.
            let main = std::fs::read_to_string(model.join("refs/main")).ok();
            let mut snapshots: Vec<PathBuf> = Vec::new();
            if let Some(rev) = main.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                snapshots.push(model.join("snapshots").join(rev));
            }
            if let Ok(entries) = std::fs::read_dir(model.join("snapshots")) {
                let mut others: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
                others.sort();
                others.retain(|p| !snapshots.contains(p));
                snapshots.extend(others);
            }
            if snapshots.is_empty() {
                tried.push(model.join("snapshots/<rev>/tokenizer.json"));
            }
            for snap in snapshots {
                let file = snap.join("tokenizer.json");
                if file.is_file() {
                    return Ok(file);
                }
                if snap.is_dir() {
                    check_remote_code(&snap, opts)?;
                }
                tried.push(file);
            }
        }
    }
    match revision {
        // The model is cached, but not at that revision.
        Some(rev)
            if cache_roots
                .iter()
                .any(|r| r.join(model_folder(spec)).is_dir()) =>
        {
            Err(TokenizerError::RevisionNotFound {
                spec: spec.to_owned(),
                revision: rev.to_owned(),
                tried,
            })
        }
        _ => Err(TokenizerError::NotFound {
            spec: spec.to_owned(),
            tried,
        }),
    }
}

/// The hub cache's folder for a model id: `models--ORG--NAME`.
fn model_folder(spec: &str) -> String {
    format!("models--{}", spec.trim_matches('/').replace('/', "--"))
}

/// The `tokenizer.json` of the cached `model` at revision `rev`, as huggingface_hub resolves a
/// revision offline: a branch or tag through `refs/<rev>` (the commit it names), else a commit
/// hash as a `snapshots/<rev>` directory. Everything looked at is added to `tried`.
fn at_revision(
    model: &Path,
    rev: &str,
    opts: &LoadOptions,
    tried: &mut Vec<PathBuf>,
) -> Result<Option<PathBuf>, TokenizerError> {
    // A revision is one path component of refs/ (a branch like `pr/1` may have two), never
    // a way out of the model's folder.
    if rev.is_empty()
        || rev
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Ok(None);
    }
    let reference = model.join("refs").join(rev);
    let commit = std::fs::read_to_string(&reference).ok();
    tried.push(reference);
    let commit = commit
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.contains(['/', '\\']) && *c != "..")
        .unwrap_or(rev);
    if commit.contains('/') {
        return Ok(None);
    }
    let snap = model.join("snapshots").join(commit);
    let file = snap.join("tokenizer.json");
    if file.is_file() {
        return Ok(Some(file));
    }
    if snap.is_dir() {
        check_remote_code(&snap, opts)?;
    }
    tried.push(file);
    Ok(None)
}

#[cfg(feature = "hf-tokenizer")]
fn load_file(path: &Path) -> Result<Tokenizer, TokenizerError> {
    tokenizers::utils::parallelism::set_parallelism(false);
    let tok = tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError::Invalid {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(Tokenizer::Hf(Box::new(HfTokenizer {
        tok,
        path: path.to_owned(),
        chat: None,
    })))
}

#[cfg(not(feature = "hf-tokenizer"))]
fn load_file(path: &Path) -> Result<Tokenizer, TokenizerError> {
    Err(TokenizerError::HfDisabled {
        spec: path.display().to_string(),
    })
}

impl Tokenizer {
    /// tiktoken `o200k_base`.
    pub fn builtin() -> Tokenizer {
        Tokenizer::Builtin(LazyBuiltin(()))
    }

    /// Whether the tokenizer is ready without more work: a file-backed one always (it is read
    /// when loaded), the builtin one once its table was asked for.
    pub fn loaded(&self) -> bool {
        match self {
            Tokenizer::Builtin(_) => builtin_table_used(),
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(..) => true,
        }
    }

    /// Whether this is the builtin o200k_base.
    pub fn is_builtin(&self) -> bool {
        matches!(self, Tokenizer::Builtin(_))
    }

    /// A short name for logs and exports: `builtin` or the `tokenizer.json` path.
    pub fn name(&self) -> String {
        match self {
            Tokenizer::Builtin(_) => BUILTIN.to_owned(),
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => h.path.display().to_string(),
        }
    }

    /// Token ids of `text`, adding no special tokens; special tokens spelled in the text are one
    /// id each. An HF encode error yields no tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match self {
            Tokenizer::Builtin(_) => {
                builtin_table();
                let mut ids = Vec::new();
                for piece in o200k_pieces(text) {
                    match piece {
                        Piece::Text(t) => super::o200k::encode(t, &mut ids),
                        Piece::Special(id) => ids.push(id),
                    }
                }
                ids
            }
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => h
                .tok
                .encode_fast(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default(),
        }
    }

    /// Number of tokens in `text` (the length of [`Tokenizer::encode`]).
    pub fn count(&self, text: &str) -> usize {
        match self {
            Tokenizer::Builtin(_) => {
                builtin_table();
                o200k_pieces(text)
                    .map(|piece| match piece {
                        Piece::Text(t) => super::o200k::count(t),
                        Piece::Special(_) => 1,
                    })
                    .sum()
            }
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => h.tok.encode_fast(text, false).map(|e| e.len()).unwrap_or(0),
        }
    }

    /// The chat template loaded with `--apply-chat-template`, if any.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        match self {
            Tokenizer::Builtin(_) => None,
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => h.chat.as_deref(),
        }
    }

    /// The ISL of a request `body` sent to a `kind` endpoint, as AIPerf's record processor
    /// counts it: with a chat template ([`Tokenizer::chat_template`]) and a chat-shaped body,
    /// the tokens of the rendered conversation; otherwise the tokens of the body's input texts
    /// joined by spaces. `None` when the body has nothing to count.
    pub fn count_input(&self, kind: EndpointKind, body: &[u8]) -> Option<u64> {
        if let Some(text) = self
            .chat_template()
            .and_then(|t| t.render_request(kind, body))
        {
            return Some(self.count(&text) as u64 + self.tool_schema_tokens(body));
        }
        ringperf_wire::endpoint::payload_input(kind, body).map(|text| self.count(&text) as u64)
    }

    /// The tokens of a body's `tools` schemas, which a templated count adds (AIPerf's rule: the
    /// template renders the messages, not the schemas).
    fn tool_schema_tokens(&self, body: &[u8]) -> u64 {
        ringperf_wire::endpoint::payload::payload_tool_schemas(body)
            .map_or(0, |t| self.count(&t) as u64)
    }

    /// [`Self::count_input`] for a body whose prompt text was already read out (`text`, from
    /// `payload_inputs`): the chat template's rendering of `body` when one is applied, else
    /// `text`.
    pub fn count_read_input(
        &self,
        kind: EndpointKind,
        body: &[u8],
        text: Option<&str>,
    ) -> Option<u64> {
        if let Some(rendered) = self
            .chat_template()
            .and_then(|t| t.render_request(kind, body))
        {
            return Some(self.count(&rendered) as u64 + self.tool_schema_tokens(body));
        }
        text.map(|t| self.count(t) as u64)
    }

    /// The token that starts each `hash_ids` block (AIPerf's `block_separation_token_id`):
    /// the BOS token, else the EOS token, else none. Builtin o200k has no BOS, so its EOS,
    /// `<|endoftext|>`. A `tokenizer.json` does not name its BOS / EOS (that is
    /// `tokenizer_config.json`'s business), so the first special token found among the usual
    /// BOS spellings, then the usual EOS spellings, is taken.
    pub fn block_separator(&self) -> Option<u32> {
        match self {
            Tokenizer::Builtin(_) => Some(O200K_ENDOFTEXT),
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => [
                "<|begin_of_text|>",
                "<s>",
                "<bos>",
                "<|startoftext|>",
                "<|endoftext|>",
                "<|end_of_text|>",
                "</s>",
                "<eos>",
                "<|im_end|>",
            ]
            .iter()
            .find_map(|t| h.tok.token_to_id(t)),
        }
    }

    /// The ids a random-vocabulary prompt (`--prompt-corpus random`) draws from, as AIPerf
    /// 0.13's tokenizer lists them: every decodable id but the special ones (`valid`), every
    /// decodable id (`all`), both ascending, and the vocabulary's size, which bounds a prompt's
    /// starting offset. o200k_base: its 199,998 ranks, then its two special tokens, size 200,019
    /// (tiktoken's `n_vocab`); a `tokenizer.json`: the ids below its base vocabulary's size, the
    /// special added tokens left out of `valid`.
    pub fn vocab_pools(&self) -> VocabPools {
        match self {
            Tokenizer::Builtin(_) => {
                builtin_table();
                let valid: Vec<u32> = (0..super::o200k::num_tokens() as u32).collect();
                let mut all = valid.clone();
                all.extend(O200K_SPECIALS.iter().map(|(id, _)| *id));
                all.sort_unstable();
                VocabPools {
                    valid,
                    all,
                    vocab_size: 200_019,
                }
            }
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => {
                let size = h.tok.get_vocab_size(false);
                let special: std::collections::HashSet<u32> = (h.tok.get_added_tokens_decoder())
                    .into_iter()
                    .filter(|(_, t)| t.special)
                    .map(|(id, _)| id)
                    .collect();
                let all: Vec<u32> = (0..size as u32).collect();
                let valid = all
                    .iter()
                    .copied()
                    .filter(|i| !special.contains(i))
                    .collect();
                VocabPools {
                    valid,
                    all,
                    vocab_size: size,
                }
            }
        }
    }

    /// Text of `ids`. Invalid UTF-8 (a multi-byte character split across ids) is replaced
    /// with U+FFFD; unknown ids are skipped (builtin) or yield `""` (HF).
    pub fn decode(&self, ids: &[u32]) -> String {
        match self {
            Tokenizer::Builtin(_) => {
                builtin_table();
                let mut bytes = Vec::with_capacity(ids.len() * 4);
                for &id in ids {
                    match O200K_SPECIALS.iter().find(|(s, _)| *s == id) {
                        // The special tokens decode to their text, as tiktoken's do.
                        Some((_, text)) => bytes.extend_from_slice(text.as_bytes()),
                        // Unknown ids are skipped.
                        None => {
                            bytes.extend_from_slice(super::o200k::token_bytes(id).unwrap_or(&[]));
                        }
                    }
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            #[cfg(feature = "hf-tokenizer")]
            Tokenizer::Hf(h) => h.tok.decode(ids, false).unwrap_or_default(),
        }
    }
}

/// A stretch of text between o200k special tokens, or one special token.
enum Piece<'a> {
    Text(&'a str),
    Special(u32),
}

/// `text` cut at every o200k special token it spells, in order (empty stretches left out), the
/// way tiktoken's `encode(allowed_special="all")` cuts it before its byte-pair encoding.
fn o200k_pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    let mut pending: Option<u32> = None;
    std::iter::from_fn(move || {
        loop {
            if let Some(id) = pending.take() {
                return Some(Piece::Special(id));
            }
            if rest.is_empty() {
                return None;
            }
            // The earliest special token in `rest`: each starts with `<|`, so only those
            // places are tried, and the text is read once.
            let mut next = None;
            let mut from = 0;
            while let Some(at) = rest[from..].find("<|").map(|i| from + i) {
                next = O200K_SPECIALS
                    .iter()
                    .find(|(_, s)| rest[at..].starts_with(s))
                    .map(|&(id, s)| (at, id, s.len()));
                if next.is_some() {
                    break;
                }
                from = at + 2;
            }
            let (head, tail) = match next {
                Some((at, id, len)) => {
                    pending = Some(id);
                    (&rest[..at], &rest[at + len..])
                }
                None => (rest, ""),
            };
            rest = tail;
            if !head.is_empty() {
                return Some(Piece::Text(head));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn tokenizer_is_send_and_sync() {
        assert_send_sync::<Tokenizer>();
    }

    #[test]
    fn preloaded_builtin_counts_as_loaded() {
        preload(" Builtin ");
        let t = load("builtin").unwrap();
        assert!(t.is_builtin());
        assert_eq!(t.encode("Hello world"), vec![13225, 2375]);
        assert_eq!(t.count("Shall I compare thee to a summer's day?"), 11);
    }

    #[test]
    fn preload_leaves_other_specs_to_load() {
        preload("/nonexistent/tokenizer.json");
        let e = load("/nonexistent/tokenizer.json").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/tokenizer.json"), "{e}");
    }

    #[test]
    fn builtin_counts_known_strings() {
        let t = load("builtin").unwrap();
        assert_eq!(t.name(), "builtin");
        // o200k: "Hello" and " world" are single tokens (ids 13225 and 2375).
        assert_eq!(t.encode("Hello world"), vec![13225, 2375]);
        assert_eq!(t.count("Hello world"), 2);
        assert_eq!(t.count(""), 0);
        // A special token spelled in the text is one token, as the server counts it.
        assert_eq!(t.encode("<|endoftext|>"), vec![O200K_ENDOFTEXT]);
        assert_eq!(t.count("<|endoftext|>"), 1);
        assert_eq!(
            t.encode("Hello<|endofprompt|> world<|endoftext|>"),
            vec![13225, 200_018, 2375, O200K_ENDOFTEXT]
        );
        // Python tiktoken, `encode(..., allowed_special="all")`: [199999, 199999, 2375, 464, 91,
        // 3819, 826] (a cut-off spelling is text).
        assert_eq!(
            t.count("<|endoftext|><|endoftext|> world <|endoft"),
            2 + 1 + 4
        );
        assert_eq!(t.decode(&[13225, 2375]), "Hello world");
        let text = "From fairest creatures we desire increase, ça va? 日本語";
        assert_eq!(t.decode(&t.encode(text)), text);
        assert!(load("BUILTIN").is_ok());
    }

    /// Pieces that exercise o200k's pre-tokenizer: contractions in both cases, digit runs,
    /// whitespace runs before words and at the end, newlines, punctuation runs, letters with
    /// marks, CJK, emoji and a 4-byte symbol.
    const PIECES: &[&str] = &[
        "Hello",
        " world",
        "'s",
        "'T",
        "'re",
        "'VE",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\r\n",
        "\n\n ",
        "12345",
        "7",
        " 3.14",
        "!!",
        "?!.",
        " ...",
        "//",
        "\u{a0}",
        "é",
        "e\u{301}",
        "ÇA",
        "日本語",
        "中文",
        "🙂",
        "👍🏽",
        "\u{1D518}",
        "<|endoftext|>",
        "<|endofprompt|>",
        "<|",
        "|>",
        "<|endof",
        "don't",
        "Don'T",
        "x",
        "ABC",
        "abcDEF",
        "  \n",
        "\n  x",
        "$",
        "€100",
        "-",
        "_",
        "#",
        "\"",
        "'",
    ];

    fn oracle() -> &'static tiktoken_rs::CoreBPE {
        tiktoken_rs::o200k_base_singleton()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Any text: the same ids as tiktoken-rs's `encode_with_special_tokens` (AIPerf's
        /// `allowed_special="all"`), and a count equal to their number.
        #[test]
        fn builtin_equals_tiktoken_on_any_text(s in "\\PC{0,80}") {
            let t = Tokenizer::builtin();
            let want = oracle().encode_with_special_tokens(&s);
            proptest::prop_assert_eq!(t.encode(&s), want.clone());
            proptest::prop_assert_eq!(t.count(&s), want.len());
        }

        /// Texts built from the pieces above, where the pre-tokenizer's look-ahead matters.
        #[test]
        fn builtin_equals_tiktoken_on_tricky_pieces(
            picks in proptest::collection::vec(0..PIECES.len(), 0..40)
        ) {
            let s: String = picks.iter().map(|&i| PIECES[i]).collect();
            let t = Tokenizer::builtin();
            let want = oracle().encode_with_special_tokens(&s);
            proptest::prop_assert_eq!(t.encode(&s), want.clone());
            proptest::prop_assert_eq!(t.count(&s), want.len());
        }

        /// Any ids of the vocabulary, the special tokens among them, decode to the same bytes.
        #[test]
        fn builtin_decodes_as_tiktoken(
            ids in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => 0u32..199_998,
                    1 => proptest::sample::select(vec![199_999u32, 200_018]),
                ],
                0..30,
            )
        ) {
            let t = Tokenizer::builtin();
            let want = oracle().decode_bytes(&ids).expect("known ids");
            proptest::prop_assert_eq!(t.decode(&ids), String::from_utf8_lossy(&want).into_owned());
        }
    }

    /// The prompt corpus and the real vLLM captures, cut into overlapping windows of lines.
    #[test]
    fn builtin_equals_tiktoken_on_the_corpus_and_captures() {
        let t = Tokenizer::builtin();
        let mut text = String::from(crate::workload::prompt::SHAKESPEARE);
        text.push_str(include_str!(
            "../../../../benches/data/vllm-cpu-chat-stream.sse.txt"
        ));
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut checked = 0;
        for start in (0..lines.len()).step_by(7) {
            let window: String = lines[start..(start + 12).min(lines.len())].concat();
            let want = oracle().encode_with_special_tokens(&window);
            assert_eq!(t.encode(&window), want, "{window:?}");
            assert_eq!(t.count(&window), want.len());
            checked += 1;
        }
        let whole = oracle().encode_with_special_tokens(&text);
        assert_eq!(t.encode(&text), whole);
        assert!(checked > 500, "{checked}");
    }

    #[test]
    fn builtin_decode_is_lossy_on_split_characters() {
        let t = Tokenizer::builtin();
        // A rare 4-byte character is split over byte-level tokens.
        let ids = t.encode("\u{1D518}");
        assert!(ids.len() > 1, "{ids:?}");
        assert!(t.decode(&ids[..1]).contains('\u{FFFD}'));
        assert_eq!(t.decode(&ids), "\u{1D518}");
        assert_eq!(t.decode(&[u32::MAX]), "");
    }

    #[test]
    fn missing_tokenizer_lists_every_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("hub");
        let err = resolve("acme/nope", std::slice::from_ref(&root)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("\"acme/nope\""), "{msg}");
        assert!(msg.contains("acme/nope/tokenizer.json"), "{msg}");
        assert!(
            msg.contains(&root.join("models--acme--nope").display().to_string()),
            "{msg}"
        );
        match err {
            TokenizerError::NotFound { tried, .. } => assert_eq!(tried.len(), 3),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn hub_cache_layout_resolution() {
        let dir = tempfile::tempdir().unwrap();
        let roots = [dir.path().join("empty"), dir.path().join("hub")];
        let model = roots[1].join("models--acme--tiny");
        let old = model.join("snapshots/aaa");
        let main = model.join("snapshots/bbb");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::create_dir_all(&main).unwrap();
        std::fs::create_dir_all(model.join("refs")).unwrap();
        std::fs::write(old.join("tokenizer.json"), "{}").unwrap();
        std::fs::write(main.join("tokenizer.json"), "{}").unwrap();
        // Without refs/main, the first snapshot in name order.
        assert_eq!(
            resolve("acme/tiny", &roots).unwrap(),
            old.join("tokenizer.json")
        );
        std::fs::write(model.join("refs/main"), "bbb\n").unwrap();
        assert_eq!(
            resolve("acme/tiny", &roots).unwrap(),
            main.join("tokenizer.json")
        );
        // Directories and files are taken before the cache.
        assert_eq!(
            resolve(main.to_str().unwrap(), &roots).unwrap(),
            main.join("tokenizer.json")
        );
        let file = old.join("tokenizer.json");
        assert_eq!(resolve(file.to_str().unwrap(), &roots).unwrap(), file);
    }

    #[test]
    fn revisions_resolve_through_refs_or_a_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let roots = [dir.path().join("hub")];
        let model = roots[0].join("models--acme--tiny");
        for snap in ["aaa", "bbb", "ccc"] {
            std::fs::create_dir_all(model.join("snapshots").join(snap)).unwrap();
            std::fs::write(
                model.join("snapshots").join(snap).join("tokenizer.json"),
                "{}",
            )
            .unwrap();
        }
        std::fs::create_dir_all(model.join("refs/pr")).unwrap();
        std::fs::write(model.join("refs/main"), "aaa").unwrap();
        std::fs::write(model.join("refs/v1"), "bbb\n").unwrap();
        std::fs::write(model.join("refs/pr/1"), "ccc").unwrap();
        let at = |rev: &str| {
            let opts = LoadOptions {
                revision: Some(rev.to_owned()),
                ..LoadOptions::default()
            };
            resolve_with("acme/tiny", &roots, &opts)
        };
        let snap = |s: &str| model.join("snapshots").join(s).join("tokenizer.json");
        assert_eq!(at("main").unwrap(), snap("aaa"));
        assert_eq!(at("v1").unwrap(), snap("bbb"));
        assert_eq!(at("pr/1").unwrap(), snap("ccc"));
        // A commit hash without a ref names its snapshot.
        assert_eq!(at("ccc").unwrap(), snap("ccc"));
        // Missing: every place looked at is named; nothing outside the model's folder is read.
        let err = at("v2").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("no revision \"v2\""), "{msg}");
        match err {
            TokenizerError::RevisionNotFound { tried, .. } => {
                assert_eq!(tried[2..], [model.join("refs/v2"), snap("v2")], "{msg}")
            }
            other => panic!("unexpected {other:?}"),
        }
        for bad in ["../models--acme--tiny/snapshots/aaa", "..", "", "a//b"] {
            assert!(
                matches!(at(bad), Err(TokenizerError::RevisionNotFound { .. })),
                "{bad:?}"
            );
        }
        // A ref whose content tries to leave snapshots/.
        std::fs::write(model.join("refs/evil"), "../../x").unwrap();
        assert!(at("evil").is_err());
        // A model that is not cached at all is NotFound, as without a revision.
        let opts = LoadOptions {
            revision: Some("v1".into()),
            ..LoadOptions::default()
        };
        assert!(matches!(
            resolve_with("acme/none", &roots, &opts),
            Err(TokenizerError::NotFound { .. })
        ));
    }

    #[test]
    fn python_only_tokenizers_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let config = r#"{"auto_map": {"AutoTokenizer": ["tok.SlowTok", "tok.FastTok"]}}"#;
        std::fs::write(dir.path().join("tokenizer_config.json"), config).unwrap();
        let spec = dir.path().to_str().unwrap();
        // Without the flag: transformers' refusal (AIPerf shows it), and why ringperf cannot
        // follow it either.
        let msg = resolve_with(spec, &[], &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("contains custom code"), "{msg}");
        assert!(msg.contains("`trust_remote_code=True`"), "{msg}");
        assert!(msg.contains("tok.FastTok"), "{msg}");
        // With it: refused, saying that a Rust tokenizer cannot run it.
        let trusted = LoadOptions {
            trust_remote_code: true,
            ..LoadOptions::default()
        };
        let msg = resolve_with(spec, &[], &trusted).unwrap_err().to_string();
        assert!(
            msg.contains("--tokenizer-trust-remote-code cannot apply"),
            "{msg}"
        );
        assert!(msg.contains("tok.FastTok"), "{msg}");
        // A tokenizer.json beside the auto_map needs no code: the flag changes nothing.
        std::fs::write(dir.path().join("tokenizer.json"), "{}").unwrap();
        let file = dir.path().join("tokenizer.json");
        assert_eq!(resolve_with(spec, &[], &trusted).unwrap(), file);
        assert_eq!(
            resolve_with(spec, &[], &LoadOptions::default()).unwrap(),
            file
        );
        // The same in a hub-cache snapshot.
        let roots = [dir.path().join("hub")];
        let snap = roots[0].join("models--acme--py/snapshots/abc");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(snap.join("tokenizer_config.json"), config).unwrap();
        assert!(matches!(
            resolve_with("acme/py", &roots, &trusted),
            Err(TokenizerError::RemoteCode { trusted: true, .. })
        ));
    }

    #[cfg(feature = "hf-tokenizer")]
    #[test]
    fn hf_word_level_tokenizer_json() {
        let dir = tempfile::tempdir().unwrap();
        let json = r#"{
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [
                {"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                 "rstrip": false, "normalized": false, "special": true}
            ],
            "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {"type": "Whitespace"},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[UNK]", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"[UNK]": {"id": "[UNK]", "ids": [0], "tokens": ["[UNK]"]}}
            },
            "decoder": null,
            "model": {
                "type": "WordLevel",
                "vocab": {"[UNK]": 0, "shall": 1, "i": 2, "compare": 3, "thee": 4, ",": 5},
                "unk_token": "[UNK]"
            }
        }"#;
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, json).unwrap();
        // Loaded through the directory form.
        let t = load(dir.path().to_str().unwrap()).unwrap();
        assert!(format!("{t:?}").contains("tokenizer.json"));
        // The post-processor would prepend [UNK] if special tokens were added; they are not.
        assert_eq!(
            t.encode("Shall I compare thee, Thee"),
            vec![1, 2, 3, 4, 5, 4]
        );
        assert_eq!(t.count("Shall I compare thee, Thee"), 6);
        assert_eq!(t.count("shall unknownword"), 2);
        assert_eq!(t.decode(&[1, 2, 3, 4]), "shall i compare thee");

        std::fs::write(&path, "{not json").unwrap();
        let err = load(path.to_str().unwrap()).unwrap_err();
        assert!(matches!(err, TokenizerError::Invalid { .. }), "{err}");
    }
}
