//! Tokenizer files from the Hugging Face Hub, fetched into the local hub cache as
//! `huggingface_hub` fetches them (AIPerf gets a tokenizer through transformers'
//! `AutoTokenizer.from_pretrained`, which downloads through `huggingface_hub`), so that a model
//! id whose tokenizer is not cached yet works as it does in AIPerf, and the files written are
//! the ones the Python tools find and reuse (docs/tokenizer.md, "Downloads").
//!
//! For each file: a `HEAD` of `{HF_ENDPOINT}/{repo}/resolve/{revision}/{file}` following
//! redirects that stay on the Hub (a renamed repo), whose answer carries the commit
//! (`X-Repo-Commit`), the blob's name (`X-Linked-Etag`, else `ETag`: the sha256 of an LFS file,
//! the git blob id of another), its size (`X-Linked-Size`) and, for a file kept off the Hub, its
//! CDN `Location`; then a `GET` of that location (without the token when it is not a Hub host),
//! written to `blobs/<etag>` and linked from `snapshots/<commit>/<file>` ([`cache`]). A file the
//! repo lacks (`404`, `X-Error-Code: EntryNotFound`) is marked in `.no_exist/<commit>/`.
//! The files after the first are fetched at the commit the first one resolved to, so the
//! snapshot is one commit's even when the branch moves meanwhile.
//!
//! The environment is huggingface_hub's ([`HubEnv::from_env`]). Runs once, before the run, on
//! the thread that loads the tokenizer; never on a worker.

pub mod cache;
pub mod http;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use http::{Client, Method, NetError, Reply};

/// huggingface_hub's default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Hosts huggingface_hub counts as the Hub's besides the endpoint's own: a redirect to one is
/// followed on a `HEAD` and keeps the token.
const HUB_HOSTS: [&str; 3] = ["hf.co", "huggingface.co", "hub-ci.huggingface.co"];

/// Redirects followed before giving up (httpx's bound, which huggingface_hub keeps).
const MAX_REDIRECTS: usize = 20;

/// huggingface_hub's default bound on each connect and read (`HF_HUB_ETAG_TIMEOUT`,
/// `HF_HUB_DOWNLOAD_TIMEOUT`), in seconds.
const DEFAULT_TIMEOUT_S: u64 = 10;

/// What huggingface_hub reads from the environment, as it reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubEnv {
    /// `HF_ENDPOINT` without its trailing `/`, else `https://huggingface.co`.
    pub endpoint: String,
    /// The hub cache: `HF_HUB_CACHE`, else `HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, with
    /// `HF_HOME` defaulting to `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`.
    /// `None` when none of them is set and there is no home directory.
    pub cache: Option<PathBuf>,
    /// `HF_TOKEN` (else `HUGGING_FACE_HUB_TOKEN`), else the token file (`HF_TOKEN_PATH`, else
    /// `$HF_HOME/token`), trimmed; none when empty or when `HF_HUB_DISABLE_IMPLICIT_TOKEN` is
    /// true.
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE` (else `TRANSFORMERS_OFFLINE`) is true (`1`, `ON`, `YES`, `TRUE`, any
    /// case): nothing is fetched.
    pub offline: bool,
    /// `HF_HUB_ETAG_TIMEOUT` (default 10 s): each connect and read of a metadata `HEAD`.
    pub etag_timeout: Duration,
    /// `HF_HUB_DOWNLOAD_TIMEOUT` (default 10 s): each connect and read of a file's `GET`.
    pub download_timeout: Duration,
    /// `HF_HUB_USER_AGENT_ORIGIN`, appended to the user agent as huggingface_hub appends it.
    pub origin: Option<String>,
    /// A proxy variable is set (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, any case): ringperf
    /// connects directly, which a network failure's message says.
    pub proxy_set: bool,
}

/// huggingface_hub's reading of a boolean variable.
fn is_true(v: Option<&str>) -> bool {
    v.is_some_and(|v| matches!(v.to_ascii_uppercase().as_str(), "1" | "ON" | "YES" | "TRUE"))
}

impl HubEnv {
    /// The process's environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The environment `get` gives (a variable set to the empty string counts as unset, except
    /// for the offline switches, where it is false either way).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let var = |k: &str| get(k).filter(|v| !v.is_empty());
        let home = var("HOME").map(PathBuf::from);
        let expand = |v: String| -> PathBuf {
            match (v.strip_prefix('~'), &home) {
                (Some(rest), Some(h)) if rest.is_empty() || rest.starts_with('/') => {
                    h.join(rest.trim_start_matches('/'))
                }
                _ => PathBuf::from(v),
            }
        };
        let hf_home = var("HF_HOME").map(expand).or_else(|| {
            var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".cache")))
                .map(|c| c.join("huggingface"))
        });
        let cache = var("HF_HUB_CACHE")
            .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
            .map(expand)
            .or_else(|| hf_home.as_ref().map(|h| h.join("hub")));
        let token = if is_true(var("HF_HUB_DISABLE_IMPLICIT_TOKEN").as_deref()) {
            None
        } else {
            var("HF_TOKEN")
                .or_else(|| var("HUGGING_FACE_HUB_TOKEN"))
                .or_else(|| {
                    let file = var("HF_TOKEN_PATH")
                        .map(expand)
                        .or_else(|| hf_home.as_ref().map(|h| h.join("token")))?;
                    std::fs::read_to_string(file).ok()
                })
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty())
        };
        let seconds = |k: &str| {
            let s = var(k)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|s| *s > 0)
                .unwrap_or(DEFAULT_TIMEOUT_S);
            Duration::from_secs(s)
        };
        let proxy_set = [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ]
        .iter()
        .any(|k| var(k).is_some());
        Self {
            endpoint: var("HF_ENDPOINT")
                .map(|e| e.trim_end_matches('/').to_owned())
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned()),
            cache,
            token,
            offline: is_true(
                var("HF_HUB_OFFLINE")
                    .or_else(|| var("TRANSFORMERS_OFFLINE"))
                    .as_deref(),
            ),
            etag_timeout: seconds("HF_HUB_ETAG_TIMEOUT"),
            download_timeout: seconds("HF_HUB_DOWNLOAD_TIMEOUT"),
            origin: var("HF_HUB_USER_AGENT_ORIGIN"),
            proxy_set,
        }
    }

    /// The `User-Agent`: ringperf's name and version where huggingface_hub puts the library's,
    /// with transformers' `file_type/tokenizer`.
    fn user_agent(&self) -> String {
        let mut ua = format!(
            "ringperf/{}; file_type/tokenizer",
            env!("CARGO_PKG_VERSION")
        );
        if let Some(o) = &self.origin {
            ua.push_str("; origin/");
            ua.push_str(o);
        }
        ua
    }

    /// Whether a request to `target` may follow from one to `from` on the Hub: the same host,
    /// or one of the Hub's (the endpoint's included).
    fn same_or_hub_host(&self, from: &str, target: &str) -> bool {
        let host = |u: &str| http::target(u).map(|t| t.host);
        let Some(to) = host(target) else {
            return false;
        };
        host(from).is_some_and(|f| f == to)
            || HUB_HOSTS.contains(&to.as_str())
            || host(&self.endpoint).is_some_and(|e| e == to)
    }
}

/// Whether `id` is a repo id huggingface_hub accepts (`validate_repo_id`): `NAME` or
/// `ORG/NAME`, each part of letters, digits, `-`, `_` and `.`, starting and ending with a letter,
/// digit or `_`, no `--` or `..`, at most 96 characters.
pub fn is_repo_id(id: &str) -> bool {
    let part_ok = |p: &str| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        !p.is_empty()
            && p.chars().all(|c| word(c) || c == '-' || c == '.')
            && p.starts_with(word)
            && p.ends_with(word)
    };
    let parts: Vec<&str> = id.split('/').collect();
    id.len() <= 96
        && !id.contains("--")
        && !id.contains("..")
        && (1..=2).contains(&parts.len())
        && parts.iter().all(|p| part_ok(p))
}

/// `s` percent-encoded as Python's `quote(s, safe=safe)`: letters, digits, `_.-~` and the
/// characters of `safe` kept.
fn quote(s: &str, safe: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"_.-~".contains(&b) || safe.as_bytes().contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Why the files could not be fetched.
#[derive(Debug)]
#[non_exhaustive]
pub enum HubError {
    /// Offline mode is on and the files are not cached.
    Offline,
    /// No cache directory: no `HF_HOME`, `HF_HUB_CACHE` or home directory.
    NoCache,
    /// 401 or 403, or 404 `RepoNotFound`: private, gated, or absent (the Hub answers alike).
    Denied {
        url: String,
        status: u16,
        gated: bool,
        token_sent: bool,
        message: Option<String>,
    },
    /// 404: the repo or the revision does not exist (`RepoNotFound`, `RevisionNotFound`, or no
    /// code).
    NotFound { url: String, what: NotFoundKind },
    /// Another error status.
    Status {
        url: String,
        status: u16,
        message: Option<String>,
    },
    /// The request got no answer.
    Network {
        url: String,
        error: NetError,
        proxy_set: bool,
    },
    /// The answer lacks what a Hub answer has (`X-Repo-Commit`, an `ETag`), or has it in a form
    /// that cannot name a file.
    NotAHub { url: String, missing: &'static str },
    /// More than [`MAX_REDIRECTS`] redirects.
    Redirects { url: String },
    /// The body's length is not the announced one.
    Size {
        url: String,
        expected: u64,
        got: u64,
    },
    /// A cache file could not be written.
    Cache {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// What a 404 says is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotFoundKind {
    Repo,
    Revision,
    /// No `X-Error-Code`: the repo, the revision or the file.
    Unknown,
}

impl fmt::Display for HubError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HubError::Offline => f.write_str(
                "offline mode is on (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE), so nothing is \
                 downloaded; unset it to fetch the tokenizer from the Hub, fill the cache where \
                 there is a network, or pass a local tokenizer.json, a directory holding one, \
                 or `builtin`",
            ),
            HubError::NoCache => f.write_str(
                "there is no Hugging Face cache directory to download into (set HF_HOME or \
                 HF_HUB_CACHE)",
            ),
            HubError::Denied {
                url,
                status,
                gated,
                token_sent,
                message,
            } => {
                write!(f, "{url} answered {status}")?;
                if let Some(m) = message {
                    write!(f, " ({m})")?;
                }
                let what = if *gated {
                    "the repository is gated"
                } else {
                    "the repository is gated or private (or does not exist)"
                };
                if *token_sent {
                    write!(
                        f,
                        ": {what} and the token sent (HF_TOKEN or the token file) has no access \
                         to it; use a token that does (for a gated model, accept its terms on the \
                         Hub with that account first)"
                    )
                } else {
                    write!(
                        f,
                        ": {what} and no token was sent; set HF_TOKEN to a Hugging Face access \
                         token that can read it (or log in with `hf auth login`, which writes \
                         $HF_HOME/token)"
                    )
                }
            }
            HubError::NotFound { url, what } => {
                let what = match what {
                    NotFoundKind::Repo => "the repository does not exist",
                    NotFoundKind::Revision => "the repository has no such revision",
                    NotFoundKind::Unknown => {
                        "the repository, the revision or the file does not exist"
                    }
                };
                write!(
                    f,
                    "{url} answered 404: {what} (check the model id and --tokenizer-revision)"
                )
            }
            HubError::Status {
                url,
                status,
                message,
            } => {
                write!(f, "{url} answered {status}")?;
                if let Some(m) = message {
                    write!(f, " ({m})")?;
                }
                Ok(())
            }
            HubError::Network {
                url,
                error,
                proxy_set,
            } => {
                write!(
                    f,
                    "cannot fetch {url}: {error}; check the network and HF_ENDPOINT, or set \
                     HF_HUB_OFFLINE=1 to use only the local cache, or pass a local \
                     tokenizer.json path or directory"
                )?;
                if *proxy_set {
                    f.write_str(" (a proxy variable is set: ringperf connects directly)")?;
                }
                Ok(())
            }
            HubError::NotAHub { url, missing } => write!(
                f,
                "{url} answered without {missing}, so it does not seem to be a Hugging Face Hub \
                 endpoint; if HF_ENDPOINT is set, check that it points to one"
            ),
            HubError::Redirects { url } => {
                write!(f, "{url}: more than {MAX_REDIRECTS} redirects")
            }
            HubError::Size { url, expected, got } => write!(
                f,
                "{url}: the file should be {expected} bytes but {got} arrived"
            ),
            HubError::Cache { path, error } => {
                write!(f, "cannot write the cache file {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for HubError {}

/// What a fetch left in the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// `snapshots/<commit>` of the model.
    pub snapshot: PathBuf,
    /// The commit the revision resolved to.
    pub commit: String,
    /// The files the repo has at that commit (now in the snapshot).
    pub present: Vec<String>,
    /// The files it lacks (marked in `.no_exist/<commit>/` when the Hub said so).
    pub absent: Vec<String>,
}

/// One file's fate.
enum Outcome {
    Present { commit: String },
    Absent { commit: Option<String> },
}

/// A file's metadata from its `HEAD`.
struct Meta {
    commit: String,
    etag: String,
    /// Where the bytes are: the resolve URL, or the CDN URL it redirected to.
    location: String,
    size: Option<u64>,
}

/// Fetches `files` of the model `repo_id` at `revision` into the hub cache `cache`, the first
/// one required (its absence is reported in [`Fetched::absent`], not as an error), the others
/// optional. Writes `refs/<revision>` with the commit.
///
/// # Errors
/// Offline mode, a refusal or error status from the Hub, a network failure, an answer that is
/// not the Hub's, or a cache file that cannot be written.
pub fn fetch(
    env: &HubEnv,
    cache: &Path,
    repo_id: &str,
    revision: &str,
    files: &[&str],
) -> Result<Fetched, HubError> {
    if env.offline {
        return Err(HubError::Offline);
    }
    let repo = cache.join(cache::folder_name(repo_id));
    let mut session = Session {
        client: Client::default(),
        env,
        cache,
        repo: &repo,
        repo_id,
    };
    let mut commit: Option<String> = None;
    let mut present = Vec::new();
    let mut absent = Vec::new();
    for file in files {
        // After the first answer, the files come from the commit it named.
        let at = commit.as_deref().unwrap_or(revision);
        match session.fetch_file(at, file, commit.is_some())? {
            Outcome::Present { commit: c } => {
                commit.get_or_insert(c);
                present.push((*file).to_owned());
            }
            Outcome::Absent { commit: c } => {
                if commit.is_none() {
                    commit = c;
                }
                absent.push((*file).to_owned());
            }
        }
    }
    let commit = commit.ok_or_else(|| HubError::NotAHub {
        url: resolve_url(env, repo_id, revision, files.first().copied().unwrap_or("")),
        missing: "the X-Repo-Commit header",
    })?;
    cache::write_ref(&repo, revision, &commit).map_err(|error| HubError::Cache {
        path: repo.join("refs").join(revision),
        error,
    })?;
    Ok(Fetched {
        snapshot: repo.join("snapshots").join(&commit),
        commit,
        present,
        absent,
    })
}

/// `{endpoint}/{repo}/resolve/{revision}/{file}`, the revision quoted whole and the file name
/// with its `/` kept, as huggingface_hub's `hf_hub_url` builds it.
pub fn resolve_url(env: &HubEnv, repo_id: &str, revision: &str, file: &str) -> String {
    format!(
        "{}/{repo_id}/resolve/{}/{}",
        env.endpoint,
        quote(revision, ""),
        quote(file, "/")
    )
}

/// The request headers: the user agent, no compression (the size must be the file's), and the
/// token when `with_token`.
fn headers(env: &HubEnv, with_token: bool) -> Vec<(String, String)> {
    let mut h = vec![
        ("User-Agent".to_owned(), env.user_agent()),
        ("Accept-Encoding".to_owned(), "identity".to_owned()),
        ("Connection".to_owned(), "close".to_owned()),
    ];
    if with_token && let Some(t) = &env.token {
        h.push(("Authorization".to_owned(), format!("Bearer {t}")));
    }
    h
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The error an error status of the Hub means, read as huggingface_hub reads it (the
/// `X-Error-Code` header first, then the status).
fn status_error(reply: &Reply, url: &str, token_sent: bool) -> HubError {
    let code = reply.header("X-Error-Code");
    let message = reply.header("X-Error-Message").map(str::to_owned);
    let url = url.to_owned();
    let status = reply.status;
    match (code, status) {
        (Some("RevisionNotFound"), _) => HubError::NotFound {
            url,
            what: NotFoundKind::Revision,
        },
        (Some("GatedRepo"), _) => HubError::Denied {
            url,
            status,
            gated: true,
            token_sent,
            message,
        },
        (Some("RepoNotFound"), 404) => HubError::NotFound {
            url,
            what: NotFoundKind::Repo,
        },
        (Some("RepoNotFound"), _) | (_, 401 | 403) => HubError::Denied {
            url,
            status,
            gated: false,
            token_sent,
            message,
        },
        (_, 404) => HubError::NotFound {
            url,
            what: NotFoundKind::Unknown,
        },
        _ => HubError::Status {
            url,
            status,
            message,
        },
    }
}

/// Sends one request, mapping a failure to [`HubError::Network`].
fn send(
    client: &mut Client,
    env: &HubEnv,
    method: Method,
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<Reply, HubError> {
    client
        .send(method, url, headers, timeout)
        .map_err(|error| HubError::Network {
            url: url.to_owned(),
            error,
            proxy_set: env.proxy_set,
        })
}

/// One fetch's state: the client, where it goes, where it writes.
struct Session<'a> {
    client: Client,
    env: &'a HubEnv,
    cache: &'a Path,
    repo: &'a Path,
    repo_id: &'a str,
}

impl Session<'_> {
    /// One file: its metadata, then its bytes unless the cache has them.
    fn fetch_file(
        &mut self,
        revision: &str,
        file: &str,
        optional: bool,
    ) -> Result<Outcome, HubError> {
        let (env, repo) = (self.env, self.repo);
        let client = &mut self.client;
        let url = resolve_url(env, self.repo_id, revision, file);
        let meta = match head(client, env, &url, optional)? {
            Ok(meta) => meta,
            Err(commit) => {
                // The repo has no such file: marked, as huggingface_hub marks it.
                if let Some(c) = &commit {
                    cache::mark_absent(repo, c, file).map_err(|error| HubError::Cache {
                        path: repo.join(".no_exist").join(c).join(file),
                        error,
                    })?;
                }
                return Ok(Outcome::Absent { commit });
            }
        };
        let pointer = repo.join("snapshots").join(&meta.commit).join(file);
        if pointer.is_file() {
            return Ok(Outcome::Present {
                commit: meta.commit,
            });
        }
        cache::tag(self.cache);
        if !cache::has_blob(repo, &meta.etag) {
            let bytes = get(client, env, &url, &meta)?;
            cache::store_blob(repo, &meta.etag, &bytes).map_err(|error| HubError::Cache {
                path: repo.join("blobs").join(&meta.etag),
                error,
            })?;
        }
        cache::link(repo, &meta.commit, file, &meta.etag).map_err(|error| HubError::Cache {
            path: pointer,
            error,
        })?;
        Ok(Outcome::Present {
            commit: meta.commit,
        })
    }
}

/// The file's metadata (`Ok`), or `Err(commit)` when the Hub says the repo has no such file
/// (`404` with `X-Error-Code: EntryNotFound`; with `optional`, a `404` without a code too: the
/// repo and the commit were found by an earlier file, so only the file can be missing).
fn head(
    client: &mut Client,
    env: &HubEnv,
    url: &str,
    optional: bool,
) -> Result<Result<Meta, Option<String>>, HubError> {
    let hdrs = headers(env, true);
    let token_sent = env.token.is_some();
    let mut at = url.to_owned();
    for _ in 0..MAX_REDIRECTS {
        let reply = send(client, env, Method::Head, &at, &hdrs, env.etag_timeout)?;
        if reply.status == 404 && reply.header("X-Error-Code") == Some("EntryNotFound") {
            let commit = reply
                .header("X-Repo-Commit")
                .filter(|c| cache::is_component(c))
                .map(str::to_owned);
            return Ok(Err(commit));
        }
        if optional && reply.status == 404 && reply.header("X-Error-Code").is_none() {
            return Ok(Err(None));
        }
        if reply.status >= 400 {
            return Err(status_error(&reply, &at, token_sent));
        }
        let location = reply
            .header("Location")
            .filter(|_| is_redirect(reply.status))
            .map(|l| http::join(&at, l));
        if let Some(next) = &location
            && env.same_or_hub_host(&at, next)
        {
            at.clone_from(next);
            continue;
        }
        let commit = reply
            .header("X-Repo-Commit")
            .filter(|c| !c.is_empty())
            .ok_or_else(|| HubError::NotAHub {
                url: at.clone(),
                missing: "the X-Repo-Commit header",
            })?;
        let etag = reply
            .header("X-Linked-Etag")
            .or_else(|| reply.header("ETag"))
            .map(|e| e.trim_start_matches(['W', '/']).trim_matches('"'))
            .filter(|e| !e.is_empty())
            .ok_or_else(|| HubError::NotAHub {
                url: at.clone(),
                missing: "an ETag",
            })?;
        if !cache::is_component(commit) || !cache::is_component(etag) {
            return Err(HubError::NotAHub {
                url: at,
                missing: "a commit and an ETag that can name files",
            });
        }
        let size = reply
            .header("X-Linked-Size")
            .or_else(|| {
                (!is_redirect(reply.status))
                    .then(|| reply.header("Content-Length"))
                    .flatten()
            })
            .and_then(|s| s.parse().ok());
        return Ok(Ok(Meta {
            commit: commit.to_owned(),
            etag: etag.to_owned(),
            location: location.unwrap_or(at),
            size,
        }));
    }
    Err(HubError::Redirects {
        url: url.to_owned(),
    })
}

/// The file's bytes from where its metadata says they are, following redirects; the token goes
/// only to Hub hosts.
fn get(client: &mut Client, env: &HubEnv, url: &str, meta: &Meta) -> Result<Vec<u8>, HubError> {
    let mut at = meta.location.clone();
    let mut with_token = env.same_or_hub_host(url, &at);
    for _ in 0..MAX_REDIRECTS {
        let hdrs = headers(env, with_token);
        let mut reply = send(client, env, Method::Get, &at, &hdrs, env.download_timeout)?;
        if is_redirect(reply.status)
            && let Some(l) = reply.header("Location")
        {
            let next = http::join(&at, l);
            with_token = with_token && env.same_or_hub_host(&at, &next);
            at = next;
            continue;
        }
        if !(200..300).contains(&reply.status) {
            return Err(if env.same_or_hub_host(url, &at) {
                status_error(&reply, &at, with_token && env.token.is_some())
            } else {
                HubError::Status {
                    url: at,
                    status: reply.status,
                    message: None,
                }
            });
        }
        let got = reply.body.len() as u64;
        if let Some(expected) = meta.size
            && expected != got
        {
            return Err(HubError::Size {
                url: at,
                expected,
                got,
            });
        }
        return Ok(std::mem::take(&mut reply.body));
    }
    Err(HubError::Redirects { url: at })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> HubEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        HubEnv::from_lookup(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn the_environment_as_huggingface_hub_reads_it() {
        let e = env_of(&[("HOME", "/h")]);
        assert_eq!(e.endpoint, "https://huggingface.co");
        assert_eq!(
            e.cache.as_deref(),
            Some(Path::new("/h/.cache/huggingface/hub"))
        );
        assert!(!e.offline && e.token.is_none());
        assert_eq!(e.etag_timeout, Duration::from_secs(10));
        let e = env_of(&[
            ("HOME", "/h"),
            ("XDG_CACHE_HOME", "/x"),
            ("HF_ENDPOINT", "http://mirror:8080/"),
            ("HF_HUB_OFFLINE", "yes"),
            ("HF_TOKEN", " hf_abc \n"),
            ("HF_HUB_ETAG_TIMEOUT", "3"),
        ]);
        assert_eq!(e.endpoint, "http://mirror:8080");
        assert_eq!(e.cache.as_deref(), Some(Path::new("/x/huggingface/hub")));
        assert!(e.offline);
        assert_eq!(e.token.as_deref(), Some("hf_abc"));
        assert_eq!(e.etag_timeout, Duration::from_secs(3));
        let e = env_of(&[
            ("HOME", "/h"),
            ("HF_HOME", "~/hf"),
            ("TRANSFORMERS_OFFLINE", "1"),
        ]);
        assert_eq!(e.cache.as_deref(), Some(Path::new("/h/hf/hub")));
        assert!(e.offline);
        let e = env_of(&[
            ("HF_HOME", "/a"),
            ("HUGGINGFACE_HUB_CACHE", "/b"),
            ("HF_HUB_OFFLINE", "0"),
        ]);
        assert_eq!(e.cache.as_deref(), Some(Path::new("/b")));
        assert!(!e.offline);
        let e = env_of(&[("HF_HUB_CACHE", "/c"), ("HUGGINGFACE_HUB_CACHE", "/b")]);
        assert_eq!(e.cache.as_deref(), Some(Path::new("/c")));
        assert_eq!(env_of(&[]).cache, None);
        // The token file under HF_HOME, and the switch that stops sending it.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "hf_file\n").unwrap();
        let home = dir.path().to_str().unwrap();
        assert_eq!(
            env_of(&[("HF_HOME", home)]).token.as_deref(),
            Some("hf_file")
        );
        let off = env_of(&[("HF_HOME", home), ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "true")]);
        assert_eq!(off.token, None);
    }

    #[test]
    fn repo_ids_as_huggingface_hub_validates_them() {
        for ok in [
            "gpt2",
            "meta-llama/Llama-3.1-8B-Instruct",
            "Qwen/Qwen3-0.6B",
            "a_b/c.d",
        ] {
            assert!(is_repo_id(ok), "{ok}");
        }
        for bad in [
            "",
            "/abs/path",
            "./dir",
            "a/b/c",
            "a--b/c",
            "a/..b",
            "a/b.",
            "-a/b",
            "a b/c",
            "dir/",
        ] {
            assert!(!is_repo_id(bad), "{bad}");
        }
        assert!(!is_repo_id(&"a".repeat(97)));
    }

    #[test]
    fn resolve_urls_quote_the_revision_whole() {
        let e = env_of(&[("HF_ENDPOINT", "http://h:1")]);
        assert_eq!(
            resolve_url(&e, "acme/tok", "refs/pr/1", "sub dir/t.json"),
            "http://h:1/acme/tok/resolve/refs%2Fpr%2F1/sub%20dir/t.json"
        );
    }

    #[test]
    fn redirects_stay_on_the_hub_to_keep_the_token() {
        let e = env_of(&[("HF_ENDPOINT", "http://mirror:1")]);
        let hub = "https://huggingface.co/a/b/resolve/main/t.json";
        assert!(e.same_or_hub_host(hub, "https://huggingface.co/c/d"));
        assert!(e.same_or_hub_host(hub, "https://hf.co/c/d"));
        assert!(e.same_or_hub_host(hub, "http://mirror:2/x"));
        assert!(!e.same_or_hub_host(hub, "https://cdn-lfs.hf.co/x"));
        assert!(!e.same_or_hub_host(hub, "not a url"));
    }

    #[test]
    fn error_statuses_read_as_huggingface_hub_reads_them() {
        let reply = |status, code: Option<&str>| Reply {
            status,
            headers: code
                .map(|c| vec![("X-Error-Code".to_owned(), c.to_owned())])
                .unwrap_or_default(),
            body: Vec::new(),
        };
        let e = status_error(&reply(401, Some("GatedRepo")), "u", false);
        assert!(matches!(e, HubError::Denied { gated: true, .. }), "{e:?}");
        assert!(e.to_string().contains("set HF_TOKEN"), "{e}");
        let e = status_error(&reply(401, None), "u", true);
        assert!(matches!(e, HubError::Denied { gated: false, .. }), "{e:?}");
        assert!(e.to_string().contains("has no access"), "{e}");
        let e = status_error(&reply(404, Some("RevisionNotFound")), "u", false);
        assert!(e.to_string().contains("no such revision"), "{e}");
        let e = status_error(&reply(404, Some("RepoNotFound")), "u", true);
        assert!(e.to_string().contains("repository does not exist"), "{e}");
        let e = status_error(&reply(401, Some("RepoNotFound")), "u", false);
        assert!(matches!(e, HubError::Denied { gated: false, .. }), "{e:?}");
        let e = status_error(&reply(404, None), "u", false);
        assert!(matches!(e, HubError::NotFound { .. }), "{e:?}");
        let e = status_error(&reply(503, None), "u", false);
        assert!(matches!(e, HubError::Status { status: 503, .. }), "{e:?}");
    }
}
